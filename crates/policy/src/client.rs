//! The client's address: the socket peer (or the PROXY protocol source,
//! which stands for it), unless the peer is a trusted proxy
//! (`[server] trusted_proxies`). From a trusted proxy only the one header
//! the operator names (`server.client_address_header`: `X-Forwarded-For`,
//! `Forwarded` of RFC 7239, or none when the PROXY protocol carries the
//! address) is believed, hop by hop from the right, up to the first address
//! that is not itself a trusted proxy. Proxies such as nginx
//! (`$proxy_add_x_forwarded_for`), HAProxy and AWS ALB write one of these
//! and pass the client's others through unchanged, so reading any other
//! would let a client choose the address it is verified as.
//!
//! What the origin is told follows the same rule: every client-supplied
//! address field ([`ADDRESS_FIELDS`]) is removed, and the chosen one is
//! extended for a trusted peer or replaced by the peer for anyone else
//! ([`origin_field`]).

use std::net::{IpAddr, SocketAddr};

use crate::verification::Cidr;

/// The one request header a trusted proxy writes the client address in
/// (`server.client_address_header`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddressHeader {
    /// `X-Forwarded-For` (nginx's `$proxy_add_x_forwarded_for`, HAProxy's
    /// `option forwardfor`, AWS ALB); the default.
    XForwardedFor,
    /// `Forwarded` (RFC 7239).
    Forwarded,
    /// None: the PROXY protocol header (`server.proxy_protocol`) carries it.
    ProxyProtocol,
}

impl AddressHeader {
    /// Every choice, in the order errors list them.
    pub const ALL: [AddressHeader; 3] =
        [AddressHeader::XForwardedFor, AddressHeader::Forwarded, AddressHeader::ProxyProtocol];

    /// Its name in the policy file.
    pub const fn as_str(self) -> &'static str {
        match self {
            AddressHeader::XForwardedFor => "x-forwarded-for",
            AddressHeader::Forwarded => "forwarded",
            AddressHeader::ProxyProtocol => "proxy-protocol",
        }
    }

    /// The choice named `name` in the policy file.
    pub fn from_name(name: &str) -> Option<AddressHeader> {
        AddressHeader::ALL.into_iter().find(|h| h.as_str() == name)
    }

    /// The field read from a trusted peer (lowercase), `None` when no
    /// field is read.
    pub const fn field(self) -> Option<&'static str> {
        match self {
            AddressHeader::XForwardedFor => Some("x-forwarded-for"),
            AddressHeader::Forwarded => Some("forwarded"),
            AddressHeader::ProxyProtocol => None,
        }
    }

    /// The field the origin is told the client address in: the chosen one,
    /// `X-Forwarded-For` when the PROXY protocol carried it.
    pub const fn origin_field(self) -> &'static str {
        match self {
            AddressHeader::Forwarded => "forwarded",
            AddressHeader::XForwardedFor | AddressHeader::ProxyProtocol => "x-forwarded-for",
        }
    }
}

/// `[server] trusted_proxies` and `client_address_header`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientAddressSettings {
    /// Peers whose address header (and PROXY protocol header) is believed;
    /// from anyone else the socket peer is the client.
    pub trusted_proxies: Vec<Cidr>,
    /// The header trusted peers write the client address in.
    pub header: AddressHeader,
}

impl Default for ClientAddressSettings {
    /// No trusted proxy; `X-Forwarded-For`.
    fn default() -> ClientAddressSettings {
        ClientAddressSettings { trusted_proxies: Vec::new(), header: AddressHeader::XForwardedFor }
    }
}

impl ClientAddressSettings {
    /// Whether `peer` is a trusted proxy.
    pub fn is_trusted_proxy(&self, peer: IpAddr) -> bool {
        self.trusted_proxies.iter().any(|c| c.contains(peer))
    }

    /// Whether a request from `peer` that carries `X-Forwarded-For` or
    /// `Forwarded` (`forwarded`) looks like it came through a proxy the
    /// policy does not trust: a private (RFC 1918, RFC 4193) or loopback
    /// peer, where load balancers and sidecars sit. Its claims are verified
    /// against the balancer's address, so real crawlers fail verification.
    pub fn untrusted_forwarder(&self, peer: IpAddr, forwarded: bool) -> bool {
        let internal = match unmap(peer) {
            IpAddr::V4(v4) => v4.is_private() || v4.is_loopback(),
            IpAddr::V6(v6) => v6.is_loopback() || v6.is_unique_local(),
        };
        forwarded && internal && !self.is_trusted_proxy(peer)
    }
}

/// Request fields that carry a client address and that origins (or their
/// frameworks) commonly read: `Forwarded` (RFC 7239), the de facto
/// `X-Forwarded-For` and `X-Real-IP`, and the CDN and balancer spellings
/// (Akamai and Cloudflare `True-Client-IP`, Cloudflare `CF-Connecting-IP`,
/// Fastly `Fastly-Client-IP`, `X-Client-IP`, `X-Cluster-Client-IP`). All
/// are removed before the origin; only the chosen one is written back
/// ([`origin_field`]). Lowercase.
pub const ADDRESS_FIELDS: [&str; 8] = [
    "forwarded",
    "x-forwarded-for",
    "x-real-ip",
    "true-client-ip",
    "cf-connecting-ip",
    "x-client-ip",
    "fastly-client-ip",
    "x-cluster-client-ip",
];

/// Whether `name` is one of [`ADDRESS_FIELDS`] (any case).
pub fn is_address_field(name: &str) -> bool {
    ADDRESS_FIELDS.iter().any(|f| f.eq_ignore_ascii_case(name))
}

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

/// Resolves the client address of a request from `peer` and the field
/// lines (in order) of the header `settings` names; the lines are not read
/// unless the peer is trusted and a header is named.
pub fn client_address(peer: IpAddr, lines: &[&[u8]], settings: &ClientAddressSettings) -> ClientAddr {
    let peer = unmap(peer);
    let direct = ClientAddr { ip: peer, peer, source: AddrSource::Peer, via: Vec::new() };
    if lines.is_empty() || !settings.is_trusted_proxy(peer) {
        return direct;
    }
    let (hops, source) = match settings.header {
        AddressHeader::Forwarded => (forwarded_hops(lines), AddrSource::Forwarded),
        AddressHeader::XForwardedFor => (xff_hops(lines), AddrSource::XForwardedFor),
        AddressHeader::ProxyProtocol => return direct,
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

/// The address field the origin gets, as `(name, value)`: for a trusted
/// `peer` the chosen header's `lines` joined and extended with the peer
/// (RFC 7239 section 7.4 for `Forwarded`), for anyone else (or when the
/// PROXY protocol carried the address) the peer alone. `peer_text` is the
/// peer as `Display` writes it (the caller has a faster writer). The caller
/// removes every one of [`ADDRESS_FIELDS`] first.
pub fn origin_field(
    peer: IpAddr,
    peer_text: &[u8],
    lines: &[&[u8]],
    settings: &ClientAddressSettings,
) -> (&'static str, Vec<u8>) {
    let header = settings.header;
    let chain = header != AddressHeader::ProxyProtocol && settings.is_trusted_proxy(peer);
    let lines = if chain { lines } else { &[] };
    let mut value = Vec::with_capacity(lines.iter().map(|l| l.len() + 2).sum::<usize>() + peer_text.len() + 8);
    for line in lines.iter().filter(|l| !l.is_empty()) {
        value.extend_from_slice(line);
        value.extend_from_slice(b", ");
    }
    match (header, peer) {
        (AddressHeader::Forwarded, IpAddr::V4(_)) => {
            value.extend_from_slice(b"for=");
            value.extend_from_slice(peer_text);
        }
        // An IPv6 node is bracketed and so quoted (RFC 7239 section 6).
        (AddressHeader::Forwarded, IpAddr::V6(_)) => {
            value.extend_from_slice(b"for=\"[");
            value.extend_from_slice(peer_text);
            value.extend_from_slice(b"]\"");
        }
        _ => value.extend_from_slice(peer_text),
    }
    (header.origin_field(), value)
}

/// An IPv4-mapped IPv6 address (`::ffff:192.0.2.1`) as the IPv4 address.
pub(crate) fn unmap(ip: IpAddr) -> IpAddr {
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

    fn settings(trusted: &[&str], header: AddressHeader) -> ClientAddressSettings {
        ClientAddressSettings {
            trusted_proxies: trusted.iter().map(|t| t.parse().unwrap_or_else(|e| panic!("{e}"))).collect(),
            header,
        }
    }

    fn resolve_with(
        peer: &str,
        lines: &[&str],
        trusted: &[&str],
        header: AddressHeader,
    ) -> (String, AddrSource, Vec<String>) {
        let lines: Vec<&[u8]> = lines.iter().map(|s| s.as_bytes()).collect();
        let c = client_address(ip(peer), &lines, &settings(trusted, header));
        assert_eq!(c.peer, unmap(ip(peer)));
        (c.ip.to_string(), c.source, c.via.iter().map(ToString::to_string).collect())
    }

    fn xff(peer: &str, lines: &[&str], trusted: &[&str]) -> (String, AddrSource, Vec<String>) {
        resolve_with(peer, lines, trusted, AddressHeader::XForwardedFor)
    }

    fn fwd(peer: &str, lines: &[&str], trusted: &[&str]) -> (String, AddrSource, Vec<String>) {
        resolve_with(peer, lines, trusted, AddressHeader::Forwarded)
    }

    /// What a request's headers come to: the client address and the
    /// address fields the origin gets, as the proxy applies them (the
    /// chosen field's lines read by name in any case, every address field
    /// removed, the origin field written).
    fn apply(
        peer: &str,
        headers: &[(&str, &str)],
        trusted: &[&str],
        header: AddressHeader,
    ) -> (String, Vec<(String, String)>) {
        let s = settings(trusted, header);
        let lines: Vec<&[u8]> = match header.field() {
            Some(f) => headers.iter().filter(|(n, _)| n.eq_ignore_ascii_case(f)).map(|(_, v)| v.as_bytes()).collect(),
            None => Vec::new(),
        };
        let client = client_address(ip(peer), &lines, &s);
        let mut origin: Vec<(String, String)> = headers
            .iter()
            .filter(|(n, _)| !is_address_field(n))
            .map(|(n, v)| (n.to_ascii_lowercase(), (*v).to_owned()))
            .collect();
        let (name, value) = origin_field(client.peer, client.peer.to_string().as_bytes(), &lines, &s);
        origin.push((name.to_owned(), String::from_utf8_lossy(&value).into_owned()));
        (client.ip.to_string(), origin)
    }

    fn owned(fields: &[(&str, &str)]) -> Vec<(String, String)> {
        fields.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect()
    }

    /// A field line, `(name, value)`.
    type Field = (&'static str, &'static str);

    /// A header choice, the peer, the forged field, the client address and
    /// the origin's address field.
    type Case = (AddressHeader, &'static str, Field, &'static str, Field);

    /// Every spelling of a client-forged address, under each header choice,
    /// from a trusted peer (10.0.0.1) and an untrusted one (203.0.113.5):
    /// only the chosen header from the trusted peer moves the address, and
    /// the origin gets only the chosen field (`X-Forwarded-For` under the
    /// PROXY protocol).
    #[test]
    fn only_the_chosen_header_from_a_trusted_peer_is_believed_or_forwarded() {
        use AddressHeader::{Forwarded as F, ProxyProtocol as P, XForwardedFor as X};
        let trusted = &["10.0.0.0/8"];
        let ua = ("User-Agent", "Googlebot/2.1");
        #[rustfmt::skip]
        let cases: &[Case] = &[
            // A forged Forwarded is ignored and dropped unless it is the chosen header.
            (X, "10.0.0.1", ("Forwarded", "for=66.249.66.1"), "10.0.0.1", ("x-forwarded-for", "10.0.0.1")),
            (X, "10.0.0.1", ("forwarded", "For=\"[2001:db8::1]\""), "10.0.0.1", ("x-forwarded-for", "10.0.0.1")),
            (X, "10.0.0.1", ("FORWARDED", "for=66.249.66.1;proto=https"), "10.0.0.1", ("x-forwarded-for", "10.0.0.1")),
            (X, "203.0.113.5", ("Forwarded", "for=66.249.66.1"), "203.0.113.5", ("x-forwarded-for", "203.0.113.5")),
            (F, "10.0.0.1", ("Forwarded", "for=66.249.66.1"), "66.249.66.1", ("forwarded", "for=66.249.66.1, for=10.0.0.1")),
            (F, "10.0.0.1", ("forwarded", "For=\"[2001:db8::1]\""), "2001:db8::1", ("forwarded", "For=\"[2001:db8::1]\", for=10.0.0.1")),
            (F, "203.0.113.5", ("Forwarded", "for=66.249.66.1"), "203.0.113.5", ("forwarded", "for=203.0.113.5")),
            (P, "10.0.0.1", ("Forwarded", "for=66.249.66.1"), "10.0.0.1", ("x-forwarded-for", "10.0.0.1")),
            (P, "203.0.113.5", ("Forwarded", "for=66.249.66.1"), "203.0.113.5", ("x-forwarded-for", "203.0.113.5")),
            // X-Forwarded-For, in any case.
            (X, "10.0.0.1", ("X-Forwarded-For", "66.249.66.1"), "66.249.66.1", ("x-forwarded-for", "66.249.66.1, 10.0.0.1")),
            (X, "10.0.0.1", ("x-FORWARDED-for", "2001:db8::1"), "2001:db8::1", ("x-forwarded-for", "2001:db8::1, 10.0.0.1")),
            (X, "203.0.113.5", ("X-Forwarded-For", "66.249.66.1"), "203.0.113.5", ("x-forwarded-for", "203.0.113.5")),
            (F, "10.0.0.1", ("X-Forwarded-For", "66.249.66.1"), "10.0.0.1", ("forwarded", "for=10.0.0.1")),
            (F, "203.0.113.5", ("X-Forwarded-For", "66.249.66.1"), "203.0.113.5", ("forwarded", "for=203.0.113.5")),
            (P, "10.0.0.1", ("X-Forwarded-For", "66.249.66.1"), "10.0.0.1", ("x-forwarded-for", "10.0.0.1")),
            (P, "203.0.113.5", ("x-forwarded-for", "66.249.66.1"), "203.0.113.5", ("x-forwarded-for", "203.0.113.5")),
        ];
        for &(header, peer, forged, client, field) in cases {
            let got = apply(peer, &[ua, forged], trusted, header);
            assert_eq!(got, (client.to_owned(), owned(&[("user-agent", ua.1), field])), "{header:?} {peer} {forged:?}");
        }
        // The other address fields are never believed and never forwarded.
        let others = [
            "X-Real-IP",
            "x-real-ip",
            "True-Client-IP",
            "CF-Connecting-IP",
            "X-Client-IP",
            "Fastly-Client-IP",
            "X-Cluster-Client-IP",
            "x-cluster-CLIENT-ip",
        ];
        for header in AddressHeader::ALL {
            for peer in ["10.0.0.1", "203.0.113.5", "2001:db8::9"] {
                for name in others {
                    let got = apply(peer, &[ua, (name, "66.249.66.1")], trusted, header);
                    let own = match (header, peer.parse::<IpAddr>()) {
                        (AddressHeader::Forwarded, Ok(IpAddr::V6(v6))) => format!("for=\"[{v6}]\""),
                        (AddressHeader::Forwarded, _) => format!("for={peer}"),
                        _ => peer.to_owned(),
                    };
                    let want = owned(&[("user-agent", ua.1), (header.origin_field(), &own)]);
                    assert_eq!(got, (peer.to_owned(), want), "{header:?} {peer} {name}");
                }
            }
        }
    }

    #[test]
    fn two_lines_of_the_chosen_header_are_one_chain() {
        let trusted = &["10.0.0.0/8"];
        let h = [("X-Forwarded-For", "66.249.66.1"), ("X-Forwarded-For", "198.51.100.7")];
        assert_eq!(
            apply("10.0.0.1", &h, trusted, AddressHeader::XForwardedFor),
            ("198.51.100.7".into(), owned(&[("x-forwarded-for", "66.249.66.1, 198.51.100.7, 10.0.0.1")]))
        );
        let h = [("Forwarded", "for=66.249.66.1"), ("Forwarded", "for=198.51.100.7;proto=https")];
        assert_eq!(
            apply("10.0.0.1", &h, trusted, AddressHeader::Forwarded),
            (
                "198.51.100.7".into(),
                owned(&[("forwarded", "for=66.249.66.1, for=198.51.100.7;proto=https, for=10.0.0.1")])
            )
        );
        // From an untrusted peer neither line survives.
        assert_eq!(
            apply("203.0.113.5", &h, trusted, AddressHeader::Forwarded),
            ("203.0.113.5".into(), owned(&[("forwarded", "for=203.0.113.5")]))
        );
    }

    #[test]
    fn header_names_round_trip() {
        for h in AddressHeader::ALL {
            assert_eq!(AddressHeader::from_name(h.as_str()), Some(h));
        }
        assert_eq!(AddressHeader::from_name("X-Forwarded-For"), None);
        assert_eq!(ClientAddressSettings::default().header, AddressHeader::XForwardedFor);
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_sends() {
        let r = xff("203.0.113.5", &["198.51.100.2"], &["10.0.0.0/8"]);
        assert_eq!(r, ("203.0.113.5".into(), AddrSource::Peer, vec![]));
        let r = fwd("203.0.113.5", &["for=198.51.100.1"], &["10.0.0.0/8"]);
        assert_eq!(r, ("203.0.113.5".into(), AddrSource::Peer, vec![]));
        let r = xff("203.0.113.5", &["66.249.66.1"], &[]);
        assert_eq!(r.0, "203.0.113.5");
    }

    #[test]
    fn a_trusted_peer_forwards_the_rightmost_untrusted_hop() {
        let trusted = &["10.0.0.0/8"];
        assert_eq!(
            xff("10.0.0.1", &["66.249.66.1"], trusted),
            ("66.249.66.1".into(), AddrSource::XForwardedFor, vec!["10.0.0.1".into()])
        );
        // A client-forged entry left of the real one is ignored.
        assert_eq!(xff("10.0.0.1", &["66.249.66.1, 203.0.113.9"], trusted).0, "203.0.113.9");
        // Trusted hops are skipped, across field lines.
        assert_eq!(
            xff("10.0.0.1", &["198.51.100.7, 10.2.3.4", "10.9.9.9"], trusted),
            (
                "198.51.100.7".into(),
                AddrSource::XForwardedFor,
                vec!["10.2.3.4".into(), "10.9.9.9".into(), "10.0.0.1".into()]
            )
        );
        // No header: the peer.
        assert_eq!(xff("10.0.0.1", &[], trusted), ("10.0.0.1".into(), AddrSource::Peer, vec![]));
        // The PROXY protocol choice reads no field.
        assert_eq!(
            resolve_with("10.0.0.1", &["66.249.66.1"], trusted, AddressHeader::ProxyProtocol),
            ("10.0.0.1".into(), AddrSource::Peer, vec![])
        );
    }

    #[test]
    fn forwarded_is_read_per_rfc_7239() {
        let trusted = &["10.0.0.0/8"];
        let r =
            fwd("10.0.0.1", &[r#"for=192.0.2.60;proto=http;by=203.0.113.43, For="[2001:db8:cafe::17]:4711""#], trusted);
        assert_eq!(r, ("2001:db8:cafe::17".into(), AddrSource::Forwarded, vec!["10.0.0.1".into()]));
        assert_eq!(fwd("10.0.0.1", &["for=\"192.0.2.43:47011\""], trusted).0, "192.0.2.43");
    }

    #[test]
    fn unreadable_hops_stop_the_walk_at_the_last_trusted_proxy() {
        let trusted = &["10.0.0.0/8"];
        assert_eq!(fwd("10.0.0.1", &["for=unknown"], trusted), ("10.0.0.1".into(), AddrSource::Peer, vec![]));
        assert_eq!(xff("10.0.0.1", &["66.249.66.1, _hidden, 10.1.1.1"], trusted).0, "10.1.1.1");
        assert_eq!(xff("10.0.0.1", &["not an address"], trusted).0, "10.0.0.1");
        let garbage: &[u8] = b"\xff\xfe, 1.2.3.4";
        let c = client_address(ip("10.0.0.1"), &[garbage], &settings(trusted, AddressHeader::XForwardedFor));
        assert_eq!(c.ip, ip("10.0.0.1"));
        // Only trusted hops: the leftmost is the client.
        assert_eq!(xff("10.0.0.1", &["10.5.5.5, 10.6.6.6"], trusted).0, "10.5.5.5");
    }

    #[test]
    fn mapped_addresses_compare_as_ipv4() {
        let r = xff("::ffff:10.0.0.1", &["::ffff:66.249.66.1"], &["10.0.0.0/8"]);
        assert_eq!(r.0, "66.249.66.1");
    }

    #[test]
    fn a_long_chain_is_cut_at_its_right_end() {
        let chain = vec!["10.1.1.1"; 100].join(", ");
        let r = xff("10.0.0.1", &[&format!("66.249.66.1, {chain}")], &["10.0.0.0/8"]);
        // 32 trusted hops read, none untrusted: the leftmost hop read.
        assert_eq!(r.0, "10.1.1.1");
        assert_eq!(r.2.len(), MAX_HOPS);
    }

    #[test]
    fn untrusted_forwarders_are_internal_peers_with_forwarded_headers() {
        let s = settings(&["10.0.0.1"], AddressHeader::XForwardedFor);
        let cases: &[(&str, bool, bool)] = &[
            ("127.0.0.1", true, true),
            ("10.0.0.2", true, true),
            ("172.16.5.5", true, true),
            ("192.168.1.1", true, true),
            ("::1", true, true),
            ("fd00::1", true, true),
            ("::ffff:192.168.1.1", true, true),
            // Trusted: its header is read, nothing to warn about.
            ("10.0.0.1", true, false),
            // No forwarded header: a direct client.
            ("10.0.0.2", false, false),
            // A public peer: a client on the internet, not a balancer.
            ("66.249.66.1", true, false),
            ("2001:db8::1", true, false),
        ];
        for &(peer, forwarded, want) in cases {
            assert_eq!(s.untrusted_forwarder(ip(peer), forwarded), want, "{peer} forwarded={forwarded}");
        }
    }
}
