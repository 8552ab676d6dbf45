//! The PROXY protocol header (HAProxy's "PROXY protocol" specification,
//! versions 1 and 2) that a load balancer sends before the client's bytes,
//! read only from peers in `server.trusted_proxies` on listeners with
//! `server.proxy_protocol = true`. The header is read exactly: not one byte
//! of the request after it is consumed.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use tokio::io::{AsyncRead, AsyncReadExt};

/// The version 2 signature.
const V2_SIGNATURE: &[u8; 12] = b"\r\n\r\n\0\r\nQUIT\n";
/// A version 1 line is at most 107 bytes, CRLF included.
const V1_MAX: usize = 107;
/// The largest version 2 payload accepted (addresses and TLVs).
const V2_MAX: usize = 1024;

/// What a header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Header {
    /// The original client's address.
    Proxied(SocketAddr),
    /// `LOCAL` (v2) or `UNKNOWN` (v1): the balancer speaks for itself (a
    /// health check); the socket peer stays the client.
    Local,
}

fn bad(why: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("PROXY protocol: {}", why.into()))
}

/// Reads one header from the start of `stream`.
pub async fn read<S: AsyncRead + Unpin>(stream: &mut S) -> io::Result<Header> {
    let mut first = [0u8; 12];
    // The shortest header (`PROXY UNKNOWN\r\n`) is 15 bytes, so 12 are
    // always part of it.
    stream.read_exact(&mut first).await?;
    if &first == V2_SIGNATURE {
        let mut fixed = [0u8; 4];
        stream.read_exact(&mut fixed).await?;
        let len = usize::from(u16::from_be_bytes([fixed[2], fixed[3]]));
        if len > V2_MAX {
            return Err(bad(format!("v2 payload of {len} bytes (the limit is {V2_MAX})")));
        }
        let mut payload = vec![0u8; len];
        stream.read_exact(&mut payload).await?;
        return parse_v2(fixed[0], fixed[1], &payload);
    }
    if !first.starts_with(b"PROXY ") {
        return Err(bad("the connection does not start with a PROXY protocol header"));
    }
    let mut line = first.to_vec();
    while !line.ends_with(b"\r\n") {
        if line.len() >= V1_MAX {
            return Err(bad(format!("v1 line longer than {V1_MAX} bytes")));
        }
        let mut b = [0u8; 1];
        stream.read_exact(&mut b).await?;
        line.push(b[0]);
    }
    parse_v1(&line[..line.len() - 2])
}

/// `PROXY TCP4 src dst sport dport` (without CRLF).
fn parse_v1(line: &[u8]) -> io::Result<Header> {
    let line = std::str::from_utf8(line).map_err(|_| bad("v1 line is not ASCII"))?;
    let parts: Vec<&str> = line.split(' ').collect();
    match parts.as_slice() {
        ["PROXY", "UNKNOWN", ..] => Ok(Header::Local),
        ["PROXY", family @ ("TCP4" | "TCP6"), src, _dst, sport, _dport] => {
            let ip: IpAddr = src.parse().map_err(|_| bad(format!("v1 source `{src}` is not an address")))?;
            if ip.is_ipv4() != (*family == "TCP4") {
                return Err(bad(format!("v1 source `{src}` is not a {family} address")));
            }
            let port: u16 = sport.parse().map_err(|_| bad(format!("v1 source port `{sport}` is not a port")))?;
            Ok(Header::Proxied(SocketAddr::new(ip, port)))
        }
        _ => Err(bad(format!("malformed v1 line `{}`", line.escape_debug()))),
    }
}

/// The version 2 binary header after its signature.
fn parse_v2(ver_cmd: u8, family: u8, payload: &[u8]) -> io::Result<Header> {
    if ver_cmd >> 4 != 2 {
        return Err(bad(format!("version {} (only 1 and 2 exist)", ver_cmd >> 4)));
    }
    match ver_cmd & 0x0f {
        0 => return Ok(Header::Local),
        1 => {}
        c => return Err(bad(format!("v2 command {c}"))),
    }
    match family {
        // TCP or UDP over IPv4: src, dst, sport, dport.
        0x11 | 0x12 => {
            let a: &[u8; 12] =
                payload.get(..12).and_then(|s| s.try_into().ok()).ok_or_else(|| bad("short v2 IPv4 block"))?;
            let ip = Ipv4Addr::new(a[0], a[1], a[2], a[3]);
            Ok(Header::Proxied(SocketAddr::new(ip.into(), u16::from_be_bytes([a[8], a[9]]))))
        }
        0x21 | 0x22 => {
            let a: &[u8; 36] =
                payload.get(..36).and_then(|s| s.try_into().ok()).ok_or_else(|| bad("short v2 IPv6 block"))?;
            let mut src = [0u8; 16];
            src.copy_from_slice(&a[..16]);
            let ip = Ipv6Addr::from(src);
            Ok(Header::Proxied(SocketAddr::new(ip.into(), u16::from_be_bytes([a[32], a[33]]))))
        }
        // UNSPEC, or UNIX sockets: no address to speak of.
        0x00 | 0x31 | 0x32 => Ok(Header::Local),
        f => Err(bad(format!("v2 address family 0x{f:02x}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(bytes: &[u8]) -> (io::Result<Header>, Vec<u8>) {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap_or_else(|e| panic!("{e}"));
        rt.block_on(async {
            let mut r = bytes;
            let h = read(&mut r).await;
            (h, r.to_vec())
        })
    }

    fn sa(s: &str) -> SocketAddr {
        s.parse().unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn v1_is_read_exactly() {
        let (h, rest) = read_all(b"PROXY TCP4 192.0.2.1 198.51.100.2 56324 443\r\nGET / HTTP/1.1\r\n");
        assert_eq!(h.ok(), Some(Header::Proxied(sa("192.0.2.1:56324"))));
        assert_eq!(rest, b"GET / HTTP/1.1\r\n");
        let (h, _) = read_all(b"PROXY TCP6 2001:db8::1 2001:db8::2 1 2\r\n");
        assert_eq!(h.ok(), Some(Header::Proxied(sa("[2001:db8::1]:1"))));
        let (h, rest) = read_all(b"PROXY UNKNOWN\r\nX");
        assert_eq!(h.ok(), Some(Header::Local));
        assert_eq!(rest, b"X");
    }

    #[test]
    fn v2_is_read_exactly() {
        let mut b = V2_SIGNATURE.to_vec();
        b.extend([0x21, 0x11, 0, 12, 192, 0, 2, 1, 198, 51, 100, 2, 0x1f, 0x90, 0, 80]);
        b.extend(b"GET");
        let (h, rest) = read_all(&b);
        assert_eq!(h.ok(), Some(Header::Proxied(sa("192.0.2.1:8080"))));
        assert_eq!(rest, b"GET");
        let mut b = V2_SIGNATURE.to_vec();
        b.extend([0x21, 0x21, 0, 36 + 3]);
        let mut src = [0u8; 16];
        src[0] = 0x20;
        src[1] = 0x01;
        src[15] = 7;
        b.extend(src);
        b.extend([0u8; 16]);
        b.extend([0, 9, 0, 80, 0xEE, 0, 0]);
        let (h, rest) = read_all(&b);
        assert_eq!(h.ok(), Some(Header::Proxied(sa("[2001::7]:9"))));
        assert!(rest.is_empty());
        let mut b = V2_SIGNATURE.to_vec();
        b.extend([0x20, 0x00, 0, 0]);
        assert_eq!(read_all(&b).0.ok(), Some(Header::Local));
    }

    #[test]
    fn bad_headers_are_errors_naming_the_problem() {
        let err = |b: &[u8]| read_all(b).0.err().map(|e| e.to_string()).unwrap_or_default();
        assert_eq!(
            err(b"GET / HTTP/1.1\r\n\r\n"),
            "PROXY protocol: the connection does not start with a PROXY protocol header"
        );
        assert_eq!(err(b"PROXY TCP4 nope 1.2.3.4 1 2\r\n"), "PROXY protocol: v1 source `nope` is not an address");
        assert_eq!(err(b"PROXY TCP4 ::1 ::1 1 2\r\n"), "PROXY protocol: v1 source `::1` is not a TCP4 address");
        assert_eq!(
            err(b"PROXY TCP4 1.2.3.4 1.2.3.4 99999 2\r\n"),
            "PROXY protocol: v1 source port `99999` is not a port"
        );
        assert_eq!(err(b"PROXY TCP4 1.2.3.4\r\n"), "PROXY protocol: malformed v1 line `PROXY TCP4 1.2.3.4`");
        let long = [b"PROXY ".as_slice(), &[b'A'; 200]].concat();
        assert_eq!(err(&long), "PROXY protocol: v1 line longer than 107 bytes");
        let mut b = V2_SIGNATURE.to_vec();
        b.extend([0x21, 0x11, 0xff, 0xff]);
        assert_eq!(err(&b), "PROXY protocol: v2 payload of 65535 bytes (the limit is 1024)");
        let mut b = V2_SIGNATURE.to_vec();
        b.extend([0x21, 0x11, 0, 4, 1, 2, 3, 4]);
        assert_eq!(err(&b), "PROXY protocol: short v2 IPv4 block");
        let mut b = V2_SIGNATURE.to_vec();
        b.extend([0x31, 0x11, 0, 0]);
        assert_eq!(err(&b), "PROXY protocol: version 3 (only 1 and 2 exist)");
        // Cut short: an I/O error, not a panic.
        assert!(read_all(b"PROXY TCP4 1.2").0.is_err());
    }
}
