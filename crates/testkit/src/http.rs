//! Raw HTTP/1.1 over TCP, for tests that must see the exact bytes a server
//! writes: send bytes, read one response (Content-Length, chunked or
//! close-delimited, RFC 9112 section 6.3), or read until the server closes.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// How long [`Conn::open`] waits for data before a read fails.
pub const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// A new connection whose reads give up after `timeout` without data.
pub fn connect(addr: SocketAddr, timeout: Duration) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    s.set_read_timeout(Some(timeout)).unwrap();
    s
}

/// Sends `request` on a new connection and reads until the peer closes it,
/// fails, or `timeout` passes without data: everything the server wrote,
/// however it ended.
pub fn exchange(addr: SocketAddr, request: &[u8], timeout: Duration) -> Vec<u8> {
    let mut s = connect(addr, timeout);
    s.write_all(request).expect("write");
    let mut out = Vec::new();
    let mut buf = [0u8; 16384];
    while let Ok(n @ 1..) = s.read(&mut buf) {
        out.extend_from_slice(&buf[..n]);
    }
    out
}

/// Reads until the peer closes the connection (a reset counts as closed);
/// panics if a read fails otherwise, e.g. the read timeout passes while the
/// connection stays open.
pub fn read_to_close(s: &mut impl Read) -> Vec<u8> {
    let mut out = Vec::new();
    match s.read_to_end(&mut out) {
        Ok(_) => out,
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => out,
        Err(e) => panic!("the peer kept the connection open ({e}); read so far: {:?}", String::from_utf8_lossy(&out)),
    }
}

/// One HTTP/1.1 response as read off a connection.
#[derive(Debug, Clone)]
pub struct RawResponse {
    /// Status code.
    pub status: u16,
    /// Header fields in order, names lowercased, values trimmed.
    pub headers: Vec<(String, String)>,
    /// The body, chunked framing removed.
    pub body: Vec<u8>,
    /// The body ended as its framing says: Content-Length reached, the last
    /// chunk received, or no body expected (HEAD, 1xx, 204, 304). A
    /// close-delimited body is never complete: its end cannot be told from
    /// a cut.
    pub complete: bool,
    /// The exact bytes read for this response.
    pub raw: Vec<u8>,
}

impl RawResponse {
    /// First value of a header (`name` lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// Every value of a header (`name` lowercase), in order.
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.headers.iter().filter(|(k, _)| k == name).map(|(_, v)| v.as_str()).collect()
    }

    /// The raw response as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.raw).into_owned()
    }

    /// Parses a whole response read to the end of its connection (for a
    /// response to HEAD pass `no_body`); `None` without a complete head.
    /// Bytes past a Content-Length stay in the body.
    pub fn parse(raw: &[u8], no_body: bool) -> Option<RawResponse> {
        let head = Head::parse(raw)?;
        let mut rest = &raw[head.len..];
        let framing = head.framing(no_body);
        let mut r = RawResponse {
            status: head.status,
            headers: head.headers,
            body: Vec::new(),
            complete: false,
            raw: raw.to_vec(),
        };
        match framing {
            Framing::None => r.complete = true,
            Framing::Length(len) => {
                r.body = rest.to_vec();
                r.complete = len == rest.len();
            }
            Framing::Close => r.body = rest.to_vec(),
            Framing::Chunked => {
                while let Some(eol) = find(rest, b"\r\n") {
                    let Some(size) = chunk_size(&rest[..eol]) else { break };
                    rest = &rest[eol + 2..];
                    if size == 0 {
                        r.complete = rest.starts_with(b"\r\n") || find(rest, b"\r\n\r\n").is_some();
                        break;
                    }
                    if rest.len() < size + 2 {
                        r.body.extend_from_slice(&rest[..size.min(rest.len())]);
                        break;
                    }
                    r.body.extend_from_slice(&rest[..size]);
                    rest = &rest[size + 2..];
                }
            }
        }
        Some(r)
    }
}

/// A keep-alive connection read one response at a time; bytes of a later
/// response that arrive with an earlier one are kept for the next read.
pub struct Conn {
    stream: TcpStream,
    pending: Vec<u8>,
}

impl Conn {
    /// Connects, with reads giving up after [`READ_TIMEOUT`].
    pub fn open(addr: SocketAddr) -> Conn {
        Self::with_timeout(addr, READ_TIMEOUT)
    }

    /// Connects, with reads giving up after `timeout` without data.
    pub fn with_timeout(addr: SocketAddr, timeout: Duration) -> Conn {
        Conn { stream: connect(addr, timeout), pending: Vec::new() }
    }

    /// Connects from the local address `source` (any of 127.0.0.0/8 is a
    /// loopback address a test can bind), as a client at that address.
    pub fn from_source(source: std::net::IpAddr, addr: SocketAddr) -> Conn {
        let socket =
            socket2::Socket::new(socket2::Domain::for_address(addr), socket2::Type::STREAM, None).expect("socket");
        socket.bind(&SocketAddr::new(source, 0).into()).unwrap_or_else(|e| panic!("bind {source}: {e}"));
        socket.connect_timeout(&addr.into(), Duration::from_secs(5)).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
        let stream: TcpStream = socket.into();
        stream.set_read_timeout(Some(READ_TIMEOUT)).expect("timeout");
        Conn { stream, pending: Vec::new() }
    }

    /// The socket, for tests that read or write it themselves.
    pub fn stream(&mut self) -> &mut TcpStream {
        &mut self.stream
    }

    /// Writes raw bytes.
    pub fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("write");
    }

    /// Sends `method path` with `Host: test.example` and `headers`, and
    /// reads its response.
    pub fn request(&mut self, method: &str, path: &str, headers: &[(&str, &str)]) -> RawResponse {
        let mut req = format!("{method} {path} HTTP/1.1\r\nHost: test.example\r\n");
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str("\r\n");
        self.send(req.as_bytes());
        self.read_response(method == "HEAD")
    }

    /// Reads one response (`no_body`: it answers a HEAD request); panics if
    /// the connection closes or a read fails before it is complete.
    pub fn read_response(&mut self, no_body: bool) -> RawResponse {
        loop {
            if let Some(head) = Head::parse(&self.pending) {
                if let Some(len) = head.framing(no_body).total(&self.pending, head.len) {
                    let raw: Vec<u8> = self.pending.drain(..len).collect();
                    return RawResponse::parse(&raw, no_body)
                        .unwrap_or_else(|| panic!("unparsable response {:?}", String::from_utf8_lossy(&raw)));
                }
            }
            if self.fill() == 0 {
                let head = Head::parse(&self.pending);
                if head.is_some_and(|h| matches!(h.framing(no_body), Framing::Close)) {
                    let raw = std::mem::take(&mut self.pending);
                    return RawResponse::parse(&raw, no_body)
                        .unwrap_or_else(|| panic!("unparsable response {:?}", String::from_utf8_lossy(&raw)));
                }
                panic!("closed before a full response: {:?}", String::from_utf8_lossy(&self.pending));
            }
        }
    }

    /// Everything left until the peer closes the connection (see
    /// [`read_to_close`]).
    pub fn read_to_close(&mut self) -> Vec<u8> {
        let mut out = std::mem::take(&mut self.pending);
        out.extend(read_to_close(&mut self.stream));
        out
    }

    /// Reads more into `pending`; 0 when the peer closed.
    fn fill(&mut self) -> usize {
        let mut buf = [0u8; 16384];
        match self.stream.read(&mut buf) {
            Ok(n) => {
                self.pending.extend_from_slice(&buf[..n]);
                n
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => 0,
            Err(e) => panic!("read response: {e}; read so far: {:?}", String::from_utf8_lossy(&self.pending)),
        }
    }
}

/// A parsed response head.
struct Head {
    status: u16,
    headers: Vec<(String, String)>,
    /// Bytes up to and including the empty line.
    len: usize,
}

/// How a response body is delimited (RFC 9112 section 6.3).
enum Framing {
    None,
    Length(usize),
    Chunked,
    Close,
}

impl Head {
    fn parse(raw: &[u8]) -> Option<Head> {
        let end = find(raw, b"\r\n\r\n")?;
        let text = String::from_utf8_lossy(&raw[..end]).into_owned();
        let mut lines = text.split("\r\n");
        let status = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        Some(Head { status, headers, len: end + 4 })
    }

    fn framing(&self, no_body: bool) -> Framing {
        let value = |name: &str| self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
        if no_body || self.status / 100 == 1 || self.status == 204 || self.status == 304 {
            Framing::None
        } else if value("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
            Framing::Chunked
        } else if let Some(len) = value("content-length").and_then(|v| v.parse().ok()) {
            Framing::Length(len)
        } else {
            Framing::Close
        }
    }
}

impl Framing {
    /// Length of the whole response at the start of `buf` whose head is
    /// `head_len` bytes, once `buf` holds all of it.
    fn total(&self, buf: &[u8], head_len: usize) -> Option<usize> {
        match *self {
            Framing::None => Some(head_len),
            Framing::Length(len) => (buf.len() >= head_len + len).then_some(head_len + len),
            Framing::Close => None,
            Framing::Chunked => {
                let mut at = head_len;
                loop {
                    let eol = at + find(&buf[at..], b"\r\n")?;
                    let size = chunk_size(&buf[at..eol])
                        .unwrap_or_else(|| panic!("bad chunk size line {:?}", String::from_utf8_lossy(&buf[at..eol])));
                    at = eol + 2;
                    if size == 0 {
                        // Trailer fields, then an empty line.
                        loop {
                            let eol = at + find(&buf[at..], b"\r\n")?;
                            let empty = eol == at;
                            at = eol + 2;
                            if empty {
                                return Some(at);
                            }
                        }
                    }
                    if buf.len() < at + size + 2 {
                        return None;
                    }
                    at += size + 2;
                }
            }
        }
    }
}

/// The size of a chunk-size line (extensions ignored).
fn chunk_size(line: &[u8]) -> Option<usize> {
    let text = String::from_utf8_lossy(line);
    usize::from_str_radix(text.split(';').next().unwrap_or_default().trim(), 16).ok()
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A server that writes `bytes` to its first connection after reading
    /// a request head, then closes.
    fn serve(bytes: &'static [u8]) -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            if let Ok((mut s, _)) = l.accept() {
                let mut buf = [0u8; 1024];
                let _ = s.read(&mut buf);
                let _ = s.write_all(bytes);
            }
        });
        addr
    }

    #[test]
    fn responses_are_split_by_their_framing() {
        let addr = serve(
            b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nde\r\n1;x=y\r\nf\r\n0\r\nT: v\r\n\r\nHTTP/1.1 304 Not Modified\r\nETag: \"e\"\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nHTTP/1.1 200 OK\r\n\r\nto close",
        );
        let mut c = Conn::open(addr);
        c.send(b"GET / HTTP/1.1\r\n\r\n");
        let r = c.read_response(false);
        assert_eq!((r.status, r.body.as_slice(), r.complete), (200, &b"abc"[..], true));
        assert_eq!(r.raw, b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc");
        let r = c.read_response(false);
        assert_eq!((r.body.as_slice(), r.complete), (&b"def"[..], true));
        assert!(r.raw.ends_with(b"0\r\nT: v\r\n\r\n"));
        let r = c.read_response(false);
        assert_eq!((r.status, r.header("etag"), r.body.len()), (304, Some("\"e\""), 0));
        let r = c.read_response(true);
        assert_eq!((r.status, r.header("content-length"), r.complete), (200, Some("5"), true));
        let r = c.read_response(false);
        assert_eq!((r.body.as_slice(), r.complete), (&b"to close"[..], false));
        assert_eq!(c.read_to_close(), b"");
    }

    #[test]
    fn a_cut_chunked_body_is_incomplete() {
        let r = RawResponse::parse(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nab", false);
        let r = r.unwrap_or_else(|| panic!("no head"));
        assert_eq!((r.body.as_slice(), r.complete), (&b"ab"[..], false));
        assert!(RawResponse::parse(b"HTTP/1.1 200 OK\r\n", false).is_none());
    }

    #[test]
    fn exchange_reads_to_close() {
        let addr = serve(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
        let raw = exchange(addr, b"GET / HTTP/1.1\r\n\r\n", Duration::from_secs(10));
        assert_eq!(raw, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    }
}
