//! Where a request header ends, found as its bytes arrive (a header deadline applies until then).

/// Finds the empty line that ends an HTTP/1 header (RFC 9112 section 2.1),
/// accepting a bare LF as a line end (section 2.2). Empty lines before the
/// request line are not an end.
#[derive(Clone, Copy, Debug, Default)]
pub struct HeaderEnd {
    /// A byte other than CR or LF was seen.
    started: bool,
    /// 0: inside a line, 1: after LF, 2: after LF CR.
    state: u8,
}

impl HeaderEnd {
    /// Feeds `data`; the offset just past the header's end once it is in it.
    /// Jumps from line end to line end (`memchr`): only the bytes before
    /// each LF decide anything, and a header is mostly line contents.
    pub fn feed(&mut self, data: &[u8]) -> Option<usize> {
        let mut from = 0;
        for lf in memchr::memchr_iter(b'\n', data) {
            self.line(&data[from..lf]);
            if self.state != 0 {
                return Some(lf + 1);
            }
            self.state = u8::from(self.started);
            from = lf + 1;
        }
        self.line(&data[from..]);
        None
    }

    /// Bytes of a line without its LF: the state they leave, as
    /// [`HeaderEnd::feed_bytes`] would.
    pub fn line(&mut self, seg: &[u8]) {
        match seg {
            [] => {}
            [b'\r'] => self.state = if self.state == 1 { 2 } else { 0 },
            _ => {
                self.started |= seg.iter().any(|&b| b != b'\r');
                self.state = 0;
            }
        }
    }

    /// The byte-at-a-time definition [`HeaderEnd::feed`] follows.
    #[cfg(test)]
    pub fn feed_bytes(&mut self, data: &[u8]) -> Option<usize> {
        for (i, &b) in data.iter().enumerate() {
            match (b, self.state) {
                (b'\n', 1 | 2) => return Some(i + 1),
                (b'\n', _) => self.state = u8::from(self.started),
                (b'\r', 1) => self.state = 2,
                (b'\r', _) => self.state = 0,
                _ => {
                    self.started = true;
                    self.state = 0;
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_end() {
        let ends = |parts: &[&[u8]]| {
            let mut h = HeaderEnd::default();
            parts.iter().any(|p| h.feed(p).is_some())
        };
        assert!(ends(&[b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"]));
        assert!(ends(&[b"GET / HTTP/1.1\r\nHost: a\r", b"\n", b"\r", b"\n"]));
        assert!(ends(&[b"GET / HTTP/1.1\nHost: a\n\n"]));
        assert!(ends(&[b"GET / HTTP/1.1\r\n\r\nbody"]));
        assert!(!ends(&[b"GET / HTTP/1.1\r\nHost: a\r\n"]));
        assert!(!ends(&[b"\r\n\r\n", b"\r\n"]));
        assert!(ends(&[b"\r\n\r\nGET / HTTP/1.1\r\n", b"\r\n"]));
        assert!(!ends(&[b"GET / HTTP/1.1\r\nX: a\r\r\n"]));
    }

    /// The line-at-a-time search agrees with the byte-at-a-time definition
    /// on every split of every short input over the bytes that matter.
    #[test]
    fn header_end_agrees_with_the_byte_definition() {
        let alphabet: &[u8] = b"\r\nG ";
        let mut inputs: Vec<Vec<u8>> = vec![Vec::new()];
        for _ in 0..7 {
            let next: Vec<Vec<u8>> =
                inputs.iter().flat_map(|i| alphabet.iter().map(move |&b| [i.as_slice(), &[b]].concat())).collect();
            inputs.extend(next);
        }
        for input in &inputs {
            for cut in 0..=input.len() {
                let (a, b) = input.split_at(cut);
                let (mut fast, mut slow) = (HeaderEnd::default(), HeaderEnd::default());
                let f = fast.feed(a).map(|e| e as isize).or_else(|| fast.feed(b).map(|e| (e + cut) as isize));
                let s =
                    slow.feed_bytes(a).map(|e| e as isize).or_else(|| slow.feed_bytes(b).map(|e| (e + cut) as isize));
                assert_eq!(f, s, "{input:?} cut at {cut}");
            }
        }
    }
}
