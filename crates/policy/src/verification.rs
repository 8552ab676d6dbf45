//! Verified crawler identity as policy data: the outcome of checking that a
//! request really comes from the crawler its `User-Agent` (or signature)
//! names, the per-group settings that act on it, and the built-in table of
//! where each operator publishes its evidence (`data/verification.json`,
//! see `data/README.md`).
//!
//! The checks themselves (published IP ranges, forward-confirmed reverse
//! DNS, Web Bot Auth signatures) do I/O and live in `crawlgate-identity`;
//! this module only names their results, so routing stays pure.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;
use std::sync::LazyLock;

/// An address prefix in CIDR notation (RFC 4632; RFC 4291 section 2.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Cidr {
    addr: IpAddr,
    len: u8,
}

impl Cidr {
    /// Whether `ip` is inside the prefix. An IPv4-mapped IPv6 address
    /// (`::ffff:192.0.2.1`) is compared as the IPv4 address it maps.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(a)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.len)).unwrap_or(0);
                u32::from(net) & mask == u32::from(a) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(a)) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(self.len)).unwrap_or(0);
                u128::from(net) & mask == u128::from(a) & mask
            }
            _ => false,
        }
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

impl FromStr for Cidr {
    type Err = String;

    /// `ADDR/LEN`, or a bare address (a /32 or /128).
    fn from_str(s: &str) -> Result<Cidr, String> {
        let (a, l) = s.split_once('/').map_or((s, None), |(a, l)| (a, Some(l)));
        let addr: IpAddr = a.parse().map_err(|_| format!("`{s}` is not an IP address or CIDR prefix"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let len = match l {
            None => max,
            Some(l) => match l.parse::<u8>() {
                Ok(n) if n <= max => n,
                _ => return Err(format!("`{s}`: the prefix length must be 0 to {max}")),
            },
        };
        Ok(Cidr { addr, len })
    }
}

/// The compiled `[verification]` table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VerificationSettings {
    /// Whether the table is present: without it nothing is verified and every
    /// group trusts the User-Agent.
    pub enabled: bool,
    /// Peers whose `X-Forwarded-For`, `Forwarded` and PROXY protocol header
    /// are believed for the client address; from anyone else the socket peer
    /// is the client.
    pub trusted_proxies: Vec<Cidr>,
}

impl VerificationSettings {
    /// Whether `peer` is a trusted proxy.
    pub fn is_trusted_proxy(&self, peer: IpAddr) -> bool {
        self.trusted_proxies.iter().any(|c| c.contains(peer))
    }
}

/// How a claim was proven (or disproven).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// The address is in the operator's published IP ranges.
    Ip,
    /// Forward-confirmed reverse DNS under one of the operator's domains.
    Rdns,
    /// A valid Web Bot Auth signature (RFC 9421 with the webbotauth profile).
    Signature,
}

impl Method {
    /// The label used in logs, metrics and `explain`.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Ip => "ip",
            Method::Rdns => "rdns",
            Method::Signature => "signature",
        }
    }
}

/// The outcome of verifying one request's claimed identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verification {
    /// Nothing to verify: the request names no token that the group's
    /// `verify` setting applies to (browsers, `verify = "none"`).
    NotApplicable,
    /// The claim is proven by this method.
    Verified(Method),
    /// Nothing could tell: no published source, a lookup timed out, a key
    /// directory could not be fetched.
    Unverified,
    /// The request claims the token and is proven not to be it (by this
    /// method: an address outside every published range, a PTR or forward
    /// name that does not confirm, an invalid signature).
    Spoofed(Method),
}

impl Verification {
    /// The bounded label used in logs and metrics: `none`, `verified`,
    /// `unverified` or `spoofed`.
    pub fn label(self) -> &'static str {
        match self {
            Verification::NotApplicable => "none",
            Verification::Verified(_) => "verified",
            Verification::Unverified => "unverified",
            Verification::Spoofed(_) => "spoofed",
        }
    }
}

/// A group's `verify` setting: which methods may prove its crawlers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum VerifyMode {
    /// Trust the User-Agent (no verification).
    #[default]
    None,
    /// Published IP ranges only.
    Ip,
    /// Forward-confirmed reverse DNS only.
    Rdns,
    /// Web Bot Auth signatures only.
    Signature,
    /// Whatever the operator publishes: any method that can prove it.
    Any,
}

/// What a group does with a request whose claim is spoofed or unverified.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnFailure {
    /// Answer with the group's `block_status`.
    Block,
    /// Apply the group as usual and log the outcome.
    Log,
    /// Treat the request like one with no token (the `*` group).
    Anonymous,
}

/// Where one operator publishes the evidence for some of its tokens.
#[derive(Debug, Clone, serde::Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// Who runs the crawlers.
    pub operator: String,
    /// The operator's documentation of how to verify them.
    pub source: String,
    /// The tokens these lists and domains prove (catalog spelling).
    pub tokens: Vec<String>,
    /// URLs of published IP range lists (`{"prefixes": [...]}` JSON).
    pub ip_lists: Vec<String>,
    /// Domain suffixes for forward-confirmed reverse DNS.
    pub rdns: Vec<String>,
    /// `Signature-Agent` hosts whose key directory proves these tokens.
    #[serde(default)]
    pub signature_agents: Vec<String>,
}

const EMBEDDED: &str = include_str!("../data/verification.json");

// Validated by the unit tests below, so the empty fallback is reached only
// by a build whose tests fail; it keeps a policy load from panicking.
static SOURCES: LazyLock<Vec<Source>> = LazyLock::new(|| serde_json::from_str(EMBEDDED).unwrap_or_default());

/// Every built-in verification source.
pub fn sources() -> &'static [Source] {
    &SOURCES
}

/// The built-in source for `token` (ASCII case-insensitive), if its operator
/// publishes one.
pub fn source_for(token: &str) -> Option<&'static Source> {
    SOURCES.iter().find(|s| s.tokens.iter().any(|t| t.eq_ignore_ascii_case(token)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_sources_parse_and_name_catalog_tokens() {
        let v: Vec<Source> = serde_json::from_str(EMBEDDED).unwrap_or_else(|e| panic!("verification.json: {e}"));
        assert_eq!(v.len(), sources().len());
        for s in &v {
            assert!(s.source.starts_with("https://"), "{}", s.source);
            assert!(!s.ip_lists.is_empty() || !s.rdns.is_empty() || !s.signature_agents.is_empty());
            for u in &s.ip_lists {
                assert!(u.starts_with("https://"), "{u}");
            }
            for t in &s.tokens {
                assert!(crate::catalog::lookup(t).is_some(), "{t} is not in the catalog");
            }
        }
    }

    #[test]
    fn cidr_parse_and_contains() {
        let c: Cidr = "10.0.0.0/8".parse().unwrap_or_else(|e| panic!("{e}"));
        assert!(c.contains("10.255.0.1".parse().unwrap_or_else(|e| panic!("{e}"))));
        assert!(c.contains("::ffff:10.1.2.3".parse().unwrap_or_else(|e| panic!("{e}"))));
        assert!(!c.contains("11.0.0.1".parse().unwrap_or_else(|e| panic!("{e}"))));
        let one: Cidr = "192.0.2.7".parse().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(one.to_string(), "192.0.2.7/32");
        let all: Cidr = "::/0".parse().unwrap_or_else(|e| panic!("{e}"));
        assert!(all.contains("2001:db8::1".parse().unwrap_or_else(|e| panic!("{e}"))));
        assert_eq!("10.0.0.0/33".parse::<Cidr>(), Err("`10.0.0.0/33`: the prefix length must be 0 to 32".into()));
        assert_eq!("ten/8".parse::<Cidr>(), Err("`ten/8` is not an IP address or CIDR prefix".into()));
    }

    #[test]
    fn lookup_is_case_insensitive() {
        assert_eq!(source_for("googlebot").map(|s| s.rdns.len()), Some(3));
        assert_eq!(source_for("GPTBot").map(|s| s.ip_lists[0].as_str()), Some("https://openai.com/gptbot.json"));
        assert!(source_for("ClaudeBot").is_none());
    }
}
