//! Who may open a connection: the per-client cap and the probe slots kept for `/healthz` and `/readyz`.

use super::*;

/// Slots beyond the cap that only health probes may use, so that clients
/// holding every connection (a flood of half-sent requests) cannot make a
/// liveness probe fail and restart a healthy process. A connection over a
/// cap (the listener's or its client's) first has its request line read
/// under one of `reading`; only a line naming a probe takes a slot, so
/// silent connections cannot hold the slots from the probes.
pub(super) struct Probes {
    pub(super) slots: Arc<Semaphore>,
    /// Connections over a cap whose request line is being read.
    pub(super) reading: Arc<Semaphore>,
    /// `GET` or `HEAD` of one of these paths is a probe.
    pub(super) paths: &'static [&'static str],
}

/// Open connections per client: an IPv4 address, or an IPv6 /64 (one
/// host is usually given a whole /64, RFC 7934 section 6, so counting its
/// addresses one by one would let it open 2^64 times the limit).
pub(super) struct PerClient {
    pub(super) limit: usize,
    pub(super) open: std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, usize>>,
}

impl PerClient {
    /// Counts a connection from `ip`, or `None` when its client
    /// ([`client_key`]) already has `limit` open.
    pub(super) fn admit(self: &Arc<Self>, ip: std::net::IpAddr) -> Option<ClientSlot> {
        let ip = client_key(ip);
        let mut open = self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let n = open.entry(ip).or_insert(0);
        if *n >= self.limit {
            return None;
        }
        *n += 1;
        Some(ClientSlot { ip, table: self.clone() })
    }
}

/// The client a connection from `ip` counts against: an IPv4 address as it
/// is (an IPv4-mapped IPv6 address as its IPv4 address), an IPv6 address
/// as its /64 prefix.
pub(super) fn client_key(ip: std::net::IpAddr) -> std::net::IpAddr {
    match ip {
        std::net::IpAddr::V4(_) => ip,
        std::net::IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => std::net::IpAddr::V4(v4),
            None => std::net::IpAddr::V6(std::net::Ipv6Addr::from(u128::from(v6) & !u128::from(u64::MAX))),
        },
    }
}

/// One connection's count under [`PerClient`], given back on drop.
pub(super) struct ClientSlot {
    pub(super) ip: std::net::IpAddr,
    pub(super) table: Arc<PerClient>,
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        let mut open = self.table.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(n) = open.get_mut(&self.ip) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

/// What the first bytes of a connection in a probe slot say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ProbeLine {
    /// No whole request line yet.
    Partial,
    /// `GET` or `HEAD` of a probe path over HTTP/1.x.
    Probe,
    /// Anything else.
    Other,
}

/// Reads the request line at the start of `head` (RFC 9112 section 3;
/// empty lines before it are skipped, section 2.2): a probe is `GET` or
/// `HEAD` of one of `paths`, with or without a query.
pub(super) fn probe_line(head: &[u8], paths: &[&str]) -> ProbeLine {
    let start = head.iter().position(|&b| b != b'\r' && b != b'\n').unwrap_or(head.len());
    // Empty lines count against the bound too: a client sending nothing
    // but CRLF would otherwise grow the buffer until the deadline.
    if start > PROBE_LINE_MAX {
        return ProbeLine::Other;
    }
    let head = &head[start..];
    let Some(lf) = memchr::memchr(b'\n', head) else {
        return if head.len() > PROBE_LINE_MAX { ProbeLine::Other } else { ProbeLine::Partial };
    };
    let line = head[..lf].strip_suffix(b"\r").unwrap_or(&head[..lf]);
    let mut parts = line.split(|&b| b == b' ');
    let (Some(method), Some(target), Some(version), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return ProbeLine::Other;
    };
    let path = target.split(|&b| b == b'?').next().unwrap_or(target);
    let probe = matches!(method, b"GET" | b"HEAD")
        && paths.iter().any(|p| p.as_bytes() == path)
        && matches!(version, b"HTTP/1.0" | b"HTTP/1.1");
    if probe {
        ProbeLine::Probe
    } else {
        ProbeLine::Other
    }
}

/// Whether a socket peer is a trusted proxy (read from the current policy).
pub type TrustedPeer = Arc<dyn Fn(std::net::IpAddr) -> bool + Send + Sync>;

#[cfg(test)]
mod tests {
    use super::*;

    /// The admin listener's per-client limit counts IPv4 addresses one by
    /// one and IPv6 addresses by their /64; an IPv4-mapped address is its
    /// IPv4 address.
    #[test]
    fn per_client_limit_groups_ipv6_by_64() {
        let ip = |s: &str| -> std::net::IpAddr { s.parse().unwrap_or_else(|e| panic!("{s}: {e}")) };
        let table = Arc::new(PerClient { limit: 2, open: Default::default() });
        let a = table.admit(ip("2001:db8:1:2::1"));
        let b = table.admit(ip("2001:db8:1:2:ffff:ffff:ffff:ffff"));
        assert!(a.is_some() && b.is_some());
        assert!(table.admit(ip("2001:db8:1:2:abcd::9")).is_none(), "a third address of the same /64");
        let other = table.admit(ip("2001:db8:1:3::1"));
        assert!(other.is_some(), "the next /64 is another client");
        let v4 = [table.admit(ip("192.0.2.1")), table.admit(ip("::ffff:192.0.2.1"))];
        assert!(v4.iter().all(Option::is_some));
        assert!(table.admit(ip("192.0.2.1")).is_none(), "the mapped address counted as the IPv4 one");
        assert!(table.admit(ip("192.0.2.2")).is_some(), "IPv4 addresses are counted one by one");
        drop(a);
        assert!(table.admit(ip("2001:db8:1:2::7")).is_some(), "a closed connection gives its slot back");
        assert_eq!(
            ["2001:db8:1:2:3:4:5:6", "::ffff:10.0.0.1", "10.0.0.1", "::1"].map(|s| client_key(ip(s)).to_string()),
            ["2001:db8:1:2::", "10.0.0.1", "10.0.0.1", "::"]
        );
    }

    #[test]
    fn probe_lines() {
        let paths = &["/healthz", "/readyz"];
        let cases: &[(&[u8], ProbeLine)] = &[
            (b"GET /healthz HTTP/1.1\r\n", ProbeLine::Probe),
            (b"HEAD /readyz HTTP/1.0\r\nHost: a\r\n\r\n", ProbeLine::Probe),
            (b"GET /readyz?verbose=1 HTTP/1.1\n", ProbeLine::Probe),
            (b"\r\nGET /healthz HTTP/1.1\r\n", ProbeLine::Probe),
            (b"GET /healthz HTTP/1.1", ProbeLine::Partial),
            (b"", ProbeLine::Partial),
            (b"\r\n", ProbeLine::Partial),
            (b"GET /metrics HTTP/1.1\r\n", ProbeLine::Other),
            (b"POST /healthz HTTP/1.1\r\n", ProbeLine::Other),
            (b"GET /healthzz HTTP/1.1\r\n", ProbeLine::Other),
            (b"GET /healthz/x HTTP/1.1\r\n", ProbeLine::Other),
            (b"GET  /healthz HTTP/1.1\r\n", ProbeLine::Other),
            (b"GET /healthz HTTP/2.0\r\n", ProbeLine::Other),
            (b"GET /healthz\r\n", ProbeLine::Other),
            (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", ProbeLine::Other),
        ];
        for (head, want) in cases {
            assert_eq!(probe_line(head, paths), *want, "{}", String::from_utf8_lossy(head));
        }
        let long = [b"GET /".as_slice(), &[b'a'; PROBE_LINE_MAX]].concat();
        assert_eq!(probe_line(&long, paths), ProbeLine::Other);
        let blank = b"\r\n".repeat(PROBE_LINE_MAX);
        assert_eq!(probe_line(&blank, paths), ProbeLine::Other);
    }
}
