//! The client-address walk on any peer, header lines and settings:
//! `client::client_address` (which address a request is decided, verified
//! and logged as) and `client::origin_field` (what the origin is told).
//!
//! Input: byte 0 chooses the header (`x-forwarded-for`, `forwarded`,
//! `proxy-protocol`) and which of four prefixes are trusted; byte 1 the
//! peer's kind (IPv4, IPv6, IPv4-mapped IPv6) and bytes 2-5 (or 2-17) its
//! address; the rest is the chosen header's field lines, split at `\n`.
//!
//! What must hold:
//! - nothing panics, and the result is the same twice;
//! - the peer is kept (IPv4-mapped compared as IPv4);
//! - an untrusted peer, a `proxy-protocol` choice or no line: the client is
//!   the peer, from the peer, through no proxy;
//! - otherwise every hop in `via` is trusted, the nearest is the peer,
//!   there are at most 33, and a client other than the peer was read from
//!   the chosen header;
//! - the origin field is the chosen one (`X-Forwarded-For` for the PROXY
//!   protocol), ends with the peer's node, and carries the lines only from
//!   a trusted peer; lines that are valid field values make a valid one.

#![no_main]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crawlgate_policy::client::{
    client_address, is_address_field, origin_field, AddrSource, AddressHeader, ClientAddressSettings,
};
use libfuzzer_sys::fuzz_target;

const PREFIXES: [&str; 4] = ["10.0.0.0/8", "127.0.0.1", "2001:db8::/32", "0.0.0.0/0"];

fn unmap(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// A valid field value: visible ASCII, obs-text, space and tab (RFC 9110
/// section 5.5), as `http::HeaderValue` accepts.
fn valid_value(v: &[u8]) -> bool {
    v.iter().all(|&b| b == b'\t' || (b >= 0x20 && b != 0x7f))
}

fuzz_target!(|data: &[u8]| {
    let &[choice, kind, ref rest @ ..] = data else { return };
    let header = AddressHeader::ALL[usize::from(choice & 3) % 3];
    let trusted_proxies = PREFIXES
        .iter()
        .enumerate()
        .filter(|(i, _)| choice & (4 << i) != 0)
        .map(|(_, p)| p.parse().unwrap_or_else(|e| panic!("{p}: {e}")))
        .collect();
    let settings = ClientAddressSettings { trusted_proxies, header };
    let (peer, rest): (IpAddr, &[u8]) = match kind % 3 {
        0 if rest.len() >= 4 => {
            let (a, r) = rest.split_at(4);
            (Ipv4Addr::new(a[0], a[1], a[2], a[3]).into(), r)
        }
        1 if rest.len() >= 16 => {
            let (a, r) = rest.split_at(16);
            let mut o = [0u8; 16];
            o.copy_from_slice(a);
            (Ipv6Addr::from(o).into(), r)
        }
        2 if rest.len() >= 4 => {
            let (a, r) = rest.split_at(4);
            (Ipv4Addr::new(a[0], a[1], a[2], a[3]).to_ipv6_mapped().into(), r)
        }
        _ => return,
    };
    let lines: Vec<&[u8]> = if rest.is_empty() { Vec::new() } else { rest.split(|&b| b == b'\n').collect() };

    let c = client_address(peer, &lines, &settings);
    assert_eq!(c, client_address(peer, &lines, &settings), "not deterministic");
    let p = unmap(peer);
    assert_eq!(c.peer, p, "peer changed");
    let trusted = settings.is_trusted_proxy(p);
    if !trusted || header == AddressHeader::ProxyProtocol || lines.is_empty() {
        assert_eq!((c.ip, c.source, c.via.len()), (p, AddrSource::Peer, 0), "{header:?} trusted={trusted}");
    } else if c.source == AddrSource::Peer {
        assert_eq!((c.ip, c.via.len()), (p, 0));
    } else {
        let want = if header == AddressHeader::Forwarded { AddrSource::Forwarded } else { AddrSource::XForwardedFor };
        assert_eq!(c.source, want);
        assert!(c.via.len() <= 33, "{} hops", c.via.len());
        assert_eq!(c.via.last(), Some(&p), "the nearest hop is not the peer");
        assert!(c.via.iter().all(|h| settings.is_trusted_proxy(*h)), "an untrusted hop in via: {:?}", c.via);
    }

    let text = p.to_string();
    let (name, value) = origin_field(p, text.as_bytes(), &lines, &settings);
    assert!(is_address_field(name));
    assert_eq!(name, header.origin_field());
    let node = match (header, p) {
        (AddressHeader::Forwarded, IpAddr::V4(_)) => format!("for={text}"),
        (AddressHeader::Forwarded, IpAddr::V6(_)) => format!("for=\"[{text}]\""),
        _ => text.clone(),
    };
    assert!(value.ends_with(node.as_bytes()), "{:?} does not end with {node}", String::from_utf8_lossy(&value));
    let chain = trusted && header != AddressHeader::ProxyProtocol;
    if !chain {
        assert_eq!(value, node.as_bytes(), "an untrusted peer's lines were kept");
    } else {
        let mut want: Vec<u8> = Vec::new();
        for l in lines.iter().filter(|l| !l.is_empty()) {
            want.extend_from_slice(l);
            want.extend_from_slice(b", ");
        }
        want.extend_from_slice(node.as_bytes());
        assert_eq!(value, want);
    }
    if lines.iter().all(|l| valid_value(l)) {
        assert!(http::HeaderValue::from_bytes(&value).is_ok(), "invalid field value {value:?}");
    }
});
