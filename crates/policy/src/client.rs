//! The client's address: the socket peer, unless the peer is a trusted
//! proxy (`[verification] trusted_proxies`), in which case the address it
//! forwarded in `Forwarded` (RFC 7239) or `X-Forwarded-For` is believed, hop
//! by hop from the right, up to the first address that is not itself a
//! trusted proxy. Nothing a client sends is believed unless every hop after
//! it is trusted, so a client cannot choose the address it is verified as.

use std::net::{IpAddr, SocketAddr};

use crate::verification::VerificationSettings;

/// Where the client address was taken from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddrSource {
    /// The socket peer (or the PROXY protocol source, which stands for it).
    Peer,
    /// The `Forwarded` field of a trusted proxy.
    Forwarded,
    /// The `X-Forwarded-For` field of a trusted proxy.
    XForwardedFor,
}

impl AddrSource {
    /// The label used in logs.
    pub fn as_str(self) -> &'static str {
        match self {
            AddrSource::Peer => "peer",
            AddrSource::Forwarded => "forwarded",
            AddrSource::XForwardedFor => "x-forwarded-for",
        }
    }
}

/// The client of one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientAddr {
    /// The address decisions and logs use.
    pub ip: IpAddr,
    /// The socket peer (or PROXY protocol source).
    pub peer: IpAddr,
    /// Where `ip` came from.
    pub source: AddrSource,
    /// The trusted proxies the request passed through, nearest last (empty
    /// when `source` is `Peer`).
    pub via: Vec<IpAddr>,
}

/// The most forwarded hops read from one request; a longer chain is cut
/// at its right end (the hops nearest the proxy are the ones that matter).
const MAX_HOPS: usize = 32;

/// Resolves the client address of a request from `peer` and its
/// `Forwarded` and `X-Forwarded-For` field lines (in order). `Forwarded`
/// wins when a trusted peer sent both, as the standard form.
pub fn client_address(
    peer: IpAddr,
    forwarded: &[&[u8]],
    x_forwarded_for: &[&[u8]],
    settings: &VerificationSettings,
) -> ClientAddr {
    let peer = unmap(peer);
    let direct = ClientAddr { ip: peer, peer, source: AddrSource::Peer, via: Vec::new() };
    if !settings.is_trusted_proxy(peer) {
        return direct;
    }
    let (hops, source) = if !forwarded.is_empty() {
        (forwarded_hops(forwarded), AddrSource::Forwarded)
    } else if !x_forwarded_for.is_empty() {
        (xff_hops(x_forwarded_for), AddrSource::XForwardedFor)
    } else {
        return direct;
    };
    let mut via = vec![peer];
    // From the right: each hop was written by the (trusted) proxy after it.
    for hop in hops.iter().rev().take(MAX_HOPS) {
        match hop {
            Some(ip) if settings.is_trusted_proxy(*ip) => via.push(*ip),
            Some(ip) => {
                via.reverse();
                return ClientAddr { ip: *ip, peer, source, via };
            }
            // `unknown`, an obfuscated name or garbage: nothing before it
            // can be attributed, so the last trusted hop is the client.
            None => break,
        }
    }
    // Every readable hop is a trusted proxy: the leftmost one is the client.
    let ip = via.pop().unwrap_or(peer);
    via.reverse();
    if via.is_empty() {
        return direct;
    }
    ClientAddr { ip, peer, source, via }
}

/// An IPv4-mapped IPv6 address (`::ffff:192.0.2.1`) as the IPv4 address.
fn unmap(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The `for=` node of every element of `Forwarded` (RFC 7239 section 4),
/// `None` where it is missing or not an address.
fn forwarded_hops(lines: &[&[u8]]) -> Vec<Option<IpAddr>> {
    let mut hops = Vec::new();
    for line in lines {
        let Ok(line) = std::str::from_utf8(line) else {
            hops.push(None);
            continue;
        };
        for element in line.split(',') {
            let node = element.split(';').find_map(|pair| {
                let (k, v) = pair.split_once('=')?;
                k.trim().eq_ignore_ascii_case("for").then(|| v.trim())
            });
            hops.push(node.and_then(|n| node_ip(n.trim_matches('"'))));
        }
    }
    hops
}

/// Every entry of `X-Forwarded-For`, `None` where it is not an address.
fn xff_hops(lines: &[&[u8]]) -> Vec<Option<IpAddr>> {
    let mut hops = Vec::new();
    for line in lines {
        match std::str::from_utf8(line) {
            Ok(line) => hops.extend(line.split(',').map(|e| node_ip(e.trim()))),
            Err(_) => hops.push(None),
        }
    }
    hops
}

/// A node: `192.0.2.1`, `192.0.2.1:4711`, `[2001:db8::1]`,
/// `[2001:db8::1]:4711` or a bare IPv6 address (X-Forwarded-For writers).
fn node_ip(node: &str) -> Option<IpAddr> {
    let ip = if let Ok(ip) = node.parse::<IpAddr>() {
        ip
    } else if let Ok(sa) = node.parse::<SocketAddr>() {
        sa.ip()
    } else {
        node.strip_prefix('[')?.strip_suffix(']')?.parse::<IpAddr>().ok()?
    };
    Some(unmap(ip))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn settings(trusted: &[&str]) -> VerificationSettings {
        VerificationSettings {
            enabled: true,
            trusted_proxies: trusted.iter().map(|t| t.parse().unwrap_or_else(|e| panic!("{e}"))).collect(),
            ..VerificationSettings::default()
        }
    }

    fn resolve(peer: &str, fwd: &[&str], xff: &[&str], trusted: &[&str]) -> (String, AddrSource, Vec<String>) {
        let fwd: Vec<&[u8]> = fwd.iter().map(|s| s.as_bytes()).collect();
        let xff: Vec<&[u8]> = xff.iter().map(|s| s.as_bytes()).collect();
        let c = client_address(ip(peer), &fwd, &xff, &settings(trusted));
        assert_eq!(c.peer, unmap(ip(peer)));
        (c.ip.to_string(), c.source, c.via.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_sends() {
        let r = resolve("203.0.113.5", &["for=198.51.100.1"], &["198.51.100.2"], &["10.0.0.0/8"]);
        assert_eq!(r, ("203.0.113.5".into(), AddrSource::Peer, vec![]));
        let r = resolve("203.0.113.5", &[], &["66.249.66.1"], &[]);
        assert_eq!(r.0, "203.0.113.5");
    }

    #[test]
    fn a_trusted_peer_forwards_the_rightmost_untrusted_hop() {
        let trusted = &["10.0.0.0/8"];
        assert_eq!(
            resolve("10.0.0.1", &[], &["66.249.66.1"], trusted),
            ("66.249.66.1".into(), AddrSource::XForwardedFor, vec!["10.0.0.1".into()])
        );
        // A client-forged entry left of the real one is ignored.
        assert_eq!(resolve("10.0.0.1", &[], &["66.249.66.1, 203.0.113.9"], trusted).0, "203.0.113.9");
        // Trusted hops are skipped, across field lines.
        assert_eq!(
            resolve("10.0.0.1", &[], &["198.51.100.7, 10.2.3.4", "10.9.9.9"], trusted),
            (
                "198.51.100.7".into(),
                AddrSource::XForwardedFor,
                vec!["10.2.3.4".into(), "10.9.9.9".into(), "10.0.0.1".into()]
            )
        );
        // No header: the peer.
        assert_eq!(resolve("10.0.0.1", &[], &[], trusted), ("10.0.0.1".into(), AddrSource::Peer, vec![]));
    }

    #[test]
    fn forwarded_is_read_per_rfc_7239_and_wins() {
        let trusted = &["10.0.0.0/8"];
        let r = resolve(
            "10.0.0.1",
            &[r#"for=192.0.2.60;proto=http;by=203.0.113.43, For="[2001:db8:cafe::17]:4711""#],
            &["198.51.100.1"],
            trusted,
        );
        assert_eq!(r, ("2001:db8:cafe::17".into(), AddrSource::Forwarded, vec!["10.0.0.1".into()]));
        assert_eq!(resolve("10.0.0.1", &["for=\"192.0.2.43:47011\""], &[], trusted).0, "192.0.2.43");
    }

    #[test]
    fn unreadable_hops_stop_the_walk_at_the_last_trusted_proxy() {
        let trusted = &["10.0.0.0/8"];
        assert_eq!(resolve("10.0.0.1", &["for=unknown"], &[], trusted), ("10.0.0.1".into(), AddrSource::Peer, vec![]));
        assert_eq!(resolve("10.0.0.1", &[], &["66.249.66.1, _hidden, 10.1.1.1"], trusted).0, "10.1.1.1");
        assert_eq!(resolve("10.0.0.1", &[], &["not an address"], trusted).0, "10.0.0.1");
        let garbage: &[u8] = b"\xff\xfe, 1.2.3.4";
        let c = client_address(ip("10.0.0.1"), &[], &[garbage], &settings(trusted));
        assert_eq!(c.ip, ip("10.0.0.1"));
        // Only trusted hops: the leftmost is the client.
        assert_eq!(resolve("10.0.0.1", &[], &["10.5.5.5, 10.6.6.6"], trusted).0, "10.5.5.5");
    }

    #[test]
    fn mapped_addresses_compare_as_ipv4() {
        let r = resolve("::ffff:10.0.0.1", &[], &["::ffff:66.249.66.1"], &["10.0.0.0/8"]);
        assert_eq!(r.0, "66.249.66.1");
    }

    #[test]
    fn a_long_chain_is_cut_at_its_right_end() {
        let chain = vec!["10.1.1.1"; 100].join(", ");
        let r = resolve("10.0.0.1", &[], &[&format!("66.249.66.1, {chain}")], &["10.0.0.0/8"]);
        // 32 trusted hops read, none untrusted: the leftmost hop read.
        assert_eq!(r.0, "10.1.1.1");
        assert_eq!(r.2.len(), MAX_HOPS);
    }
}
