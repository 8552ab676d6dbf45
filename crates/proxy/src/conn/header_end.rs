//! Where a request header ends, found as its bytes arrive (the header deadline applies until then).

/// Finds the empty line that ends an HTTP/1 header (RFC 9112 section 2.1),
/// accepting a bare LF as a line end (section 2.2). Empty lines before the
/// request line are not an end.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct HeaderEnd {
    /// A byte other than CR or LF was seen.
    pub(super) started: bool,
    /// 0: inside a line, 1: after LF, 2: after LF CR.
    pub(super) state: u8,
}

impl HeaderEnd {
    /// Feeds `data`; the offset just past the header's end once it is in it.
    /// Jumps from line end to line end (`memchr`): only the bytes before
    /// each LF decide anything, and a header is mostly line contents.
    pub(super) fn feed(&mut self, data: &[u8]) -> Option<usize> {
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
    pub(super) fn line(&mut self, seg: &[u8]) {
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
    pub(super) fn feed_bytes(&mut self, data: &[u8]) -> Option<usize> {
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
