//! Which addresses an outbound request may reach: never a private,
//! loopback or link-local one unless the caller allows it. A literal
//! address in a URL is checked by [`crate::fetch::Reach::check`]; a host
//! name is checked after resolution by [`PublicOnly`], so a name that
//! resolves to 127.0.0.1 is refused like the literal address.

use std::net::{IpAddr, SocketAddr};

/// Whether `ip` may be fetched from: not loopback, private (RFC 1918,
/// RFC 4193), link-local, shared (RFC 6598), unspecified, multicast,
/// broadcast, documentation or benchmarking (RFC 2544) space; an
/// IPv4-mapped, NAT64 or 6to4 IPv6 address is judged as the IPv4 one.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_multicast()
                || v4.is_broadcast()
                || v4.is_documentation()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
                || (a == 192 && b == 0 && v4.octets()[2] == 0)
                || (a == 198 && (18..20).contains(&b))
                || a >= 240)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let seg = v6.segments();
            let [.., x, y, z, w] = v6.octets();
            // NAT64 (RFC 6052 64:ff9b::/96) and 6to4 (RFC 3056 2002::/16)
            // reach the IPv4 address they embed.
            if seg[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
                return is_public(IpAddr::V4([x, y, z, w].into()));
            }
            if seg[0] == 0x2002 {
                let [a, b] = seg[1].to_be_bytes();
                let [c, d] = seg[2].to_be_bytes();
                return is_public(IpAddr::V4([a, b, c, d].into()));
            }
            let first = seg[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                || (first & 0xffc0) == 0xfec0
                || first == 0x2001 && v6.segments()[1] == 0x0db8)
        }
    }
}

/// A resolver that drops every address [`is_public`] refuses and fails
/// when none is left, so the connection is made only to an address that
/// was checked (a name cannot resolve to a public address for the check
/// and a private one for the connection).
#[derive(Debug, Default)]
pub struct PublicOnly;

impl reqwest::dns::Resolve for PublicOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let public: Vec<SocketAddr> = addrs.iter().copied().filter(|a| is_public(a.ip())).collect();
            if public.is_empty() {
                let err: Box<dyn std::error::Error + Send + Sync> = if addrs.is_empty() {
                    format!("{host} has no address").into()
                } else {
                    format!("{host} resolves only to addresses that are not public ({}); refused", addrs[0].ip()).into()
                };
                return Err(err);
            }
            let addrs: reqwest::dns::Addrs = Box::new(public.into_iter());
            Ok(addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_addresses() {
        let rows = [
            ("127.0.0.1", false),
            ("10.1.2.3", false),
            ("172.16.0.1", false),
            ("192.168.1.1", false),
            ("169.254.169.254", false),
            ("100.64.0.1", false),
            ("0.0.0.0", false),
            ("255.255.255.255", false),
            ("224.0.0.1", false),
            ("::1", false),
            ("::", false),
            ("fe80::1", false),
            ("fd00::1", false),
            ("::ffff:127.0.0.1", false),
            ("::ffff:10.0.0.1", false),
            ("8.8.8.8", true),
            ("172.32.0.1", true),
            ("2606:4700::1111", true),
            ("::ffff:1.1.1.1", true),
            ("64:ff9b::a9fe:a9fe", false),
            ("64:ff9b::7f00:1", false),
            ("64:ff9b::808:808", true),
            ("2002:7f00:1::", false),
            ("2002:a00:1::1", false),
            ("2002:808:808::1", true),
            ("fec0::1", false),
        ];
        for (ip, want) in rows {
            let parsed: IpAddr = ip.parse().unwrap_or_else(|e| panic!("{ip}: {e}"));
            assert_eq!(is_public(parsed), want, "{ip}");
        }
    }

    #[test]
    fn only_global_addresses_are_public() {
        for ip in [
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "127.0.0.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "198.18.0.1",
            "192.0.0.8",
            "240.0.0.1",
            "::1",
            "::",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "ff02::1",
            "2001:db8::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a00:1",
        ] {
            let ip: IpAddr = ip.parse().unwrap_or_else(|e| panic!("{ip}: {e}"));
            assert!(!is_public(ip), "{ip} counted as public");
        }
        for ip in ["93.184.216.34", "1.1.1.1", "2606:4700::1111", "::ffff:8.8.8.8"] {
            let ip: IpAddr = ip.parse().unwrap_or_else(|e| panic!("{ip}: {e}"));
            assert!(is_public(ip), "{ip} counted as private");
        }
    }
}
