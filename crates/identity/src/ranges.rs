//! Published IP range lists: parsing (the `{"prefixes": [{"ipv4Prefix": ..},
//! {"ipv6Prefix": ..}]}` JSON that Google, Bing, OpenAI and others publish,
//! or one CIDR per line) and a prefix table for lookups.
//!
//! A list is all or nothing: one bad entry rejects the whole list with the
//! entry's position, so a broken or truncated publication never replaces a
//! good copy. A prefix whose address has bits set past its length
//! (`66.249.66.1/24`) is rejected rather than masked: the operators' lists
//! are clean, and such an entry means the list is not what it claims to be.
//!
//! The table keeps, per address family, the listed prefixes that no other
//! listed prefix contains, as sorted disjoint `[start, end]` ranges (CIDR
//! blocks are either nested or disjoint, so the outermost ones cover the
//! list exactly). A lookup is one binary search and allocates nothing, and
//! the range it finds is itself a listed prefix, which is the evidence.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// One CIDR prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IpPrefix {
    /// The network address.
    pub addr: IpAddr,
    /// The prefix length in bits.
    pub len: u8,
}

impl fmt::Display for IpPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

impl IpPrefix {
    /// Parses `addr/len` or a bare address (a /32 or /128). The address must
    /// be the network address: no bits set past `len`.
    pub fn parse(text: &str) -> Result<IpPrefix, CidrError> {
        let (addr_text, len_text) = match text.split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (text, None),
        };
        let addr: IpAddr = addr_text.parse().map_err(|_| CidrError::Address)?;
        let max = max_len(addr);
        let len = match len_text {
            None => max,
            Some(l) => {
                // Digits only: `u8::from_str` would also take `+24`.
                if l.is_empty() || l.len() > 3 || !l.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(CidrError::Length);
                }
                match l.parse::<u8>() {
                    Ok(n) if n <= max => n,
                    _ => return Err(CidrError::Length),
                }
            }
        };
        let prefix = IpPrefix { addr, len };
        let network = prefix.network();
        if network != addr {
            return Err(CidrError::HostBits(IpPrefix { addr: network, len }));
        }
        Ok(prefix)
    }

    /// Whether `ip` is in the prefix (an IPv4-mapped IPv6 address counts as
    /// its IPv4 address, and a mapped prefix as an IPv4 prefix).
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.range(), ip.to_canonical()) {
            (Range::V4(s, e), IpAddr::V4(a)) => (s..=e).contains(&u32::from(a)),
            (Range::V6(s, e), IpAddr::V6(a)) => (s..=e).contains(&u128::from(a)),
            _ => false,
        }
    }

    /// The first and last address, as IPv4 when the prefix is IPv4 or an
    /// IPv4-mapped IPv6 prefix (`::ffff:1.2.3.0/120`) of at least 96 bits.
    fn range(&self) -> Range {
        match (self.addr, self.addr.to_canonical()) {
            (IpAddr::V4(a), _) => {
                let (s, e) = v4_range(u32::from(a), self.len);
                Range::V4(s, e)
            }
            (IpAddr::V6(_), IpAddr::V4(a)) if self.len >= 96 => {
                let (s, e) = v4_range(u32::from(a), self.len - 96);
                Range::V4(s, e)
            }
            (IpAddr::V6(a), _) => {
                let (s, e) = v6_range(u128::from(a), self.len);
                Range::V6(s, e)
            }
        }
    }

    /// The address with every bit past `len` cleared.
    fn network(&self) -> IpAddr {
        match self.addr {
            IpAddr::V4(a) => IpAddr::V4(Ipv4Addr::from(v4_range(u32::from(a), self.len).0)),
            IpAddr::V6(a) => IpAddr::V6(Ipv6Addr::from(v6_range(u128::from(a), self.len).0)),
        }
    }
}

/// A prefix's first and last address in its family.
enum Range {
    V4(u32, u32),
    V6(u128, u128),
}

fn max_len(addr: IpAddr) -> u8 {
    match addr {
        IpAddr::V4(_) => 32,
        IpAddr::V6(_) => 128,
    }
}

/// First and last address of `addr/len` (`len` at most 32).
fn v4_range(addr: u32, len: u8) -> (u32, u32) {
    let host = u32::MAX.checked_shr(u32::from(len)).unwrap_or(0);
    (addr & !host, addr | host)
}

/// First and last address of `addr/len` (`len` at most 128).
fn v6_range(addr: u128, len: u8) -> (u128, u128) {
    let host = u128::MAX.checked_shr(u32::from(len)).unwrap_or(0);
    (addr & !host, addr | host)
}

/// What is wrong with one prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CidrError {
    /// The part before `/` is not an IPv4 or IPv6 address.
    #[error("not an IP address")]
    Address,
    /// The part after `/` is not a number up to 32 (IPv4) or 128 (IPv6).
    #[error("bad prefix length")]
    Length,
    /// Bits are set past the prefix length; the network is the one given.
    #[error("host bits set (the network is {0})")]
    HostBits(IpPrefix),
    /// An `ipv4Prefix` holds an IPv6 prefix or the other way round.
    #[error("wrong address family for the key")]
    Family,
    /// A JSON entry with neither `ipv4Prefix` nor `ipv6Prefix` (or both).
    #[error("expected exactly one of ipv4Prefix and ipv6Prefix")]
    Key,
}

/// Why a list was rejected, with the position of the bad entry.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ListError {
    /// Not parseable at all (JSON that does not have the list's shape).
    #[error("{0}")]
    Syntax(String),
    /// Entry `index` (from 0) of the JSON `prefixes` array is bad.
    #[error("prefixes[{index}]: {text:?}: {error}")]
    Entry {
        /// The position in the `prefixes` array, from 0.
        index: usize,
        /// The entry's prefix text (the whole entry when it has none).
        text: String,
        /// What is wrong with it.
        error: CidrError,
    },
    /// Line `line` (from 1) of a one-CIDR-per-line list is bad.
    #[error("line {line}: {text:?}: {error}")]
    Line {
        /// The line number, from 1.
        line: usize,
        /// The line without its comment and surrounding whitespace.
        text: String,
        /// What is wrong with it.
        error: CidrError,
    },
    /// The list holds no prefix. A list that empties itself is far more
    /// likely a broken publication than an operator retiring its crawler.
    #[error("the list has no prefixes")]
    Empty,
}

/// One listed prefix as a range of integers, with its index in `prefixes`.
#[derive(Clone, Copy, Debug)]
struct Span<T> {
    start: T,
    end: T,
    index: u32,
}

/// A set of prefixes with fast membership lookup.
#[derive(Clone, Debug, Default)]
pub struct RangeTable {
    /// Every listed prefix, in list order (duplicates kept).
    prefixes: Vec<IpPrefix>,
    /// The outermost IPv4 prefixes, sorted and disjoint.
    v4: Vec<Span<u32>>,
    /// The outermost IPv6 prefixes, sorted and disjoint.
    v6: Vec<Span<u128>>,
}

/// The JSON format's shape; unknown keys (`creationTime`, `syncToken`,
/// `service`, `scope`, ...) are ignored.
#[derive(serde::Deserialize)]
struct JsonList {
    prefixes: Vec<serde_json::Map<String, serde_json::Value>>,
}

impl RangeTable {
    /// Parses a list in either supported format: JSON when the text starts
    /// with `{`, otherwise one CIDR (or bare address) per line, with `#`
    /// comments and blank lines ignored.
    pub fn parse(text: &str) -> Result<RangeTable, ListError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let prefixes = if text.trim_start().starts_with('{') { parse_json(text)? } else { parse_lines(text)? };
        RangeTable::from_prefixes(prefixes)
    }

    /// A table of `prefixes`; an empty set is [`ListError::Empty`].
    pub fn from_prefixes(prefixes: Vec<IpPrefix>) -> Result<RangeTable, ListError> {
        if prefixes.is_empty() {
            return Err(ListError::Empty);
        }
        let mut v4 = Vec::new();
        let mut v6 = Vec::new();
        for (i, p) in prefixes.iter().enumerate() {
            let index = u32::try_from(i).map_err(|_| ListError::Syntax("too many prefixes".into()))?;
            // Lookups see mapped addresses as IPv4, so mapped prefixes go
            // with the IPv4 ones.
            match p.range() {
                Range::V4(start, end) => v4.push(Span { start, end, index }),
                Range::V6(start, end) => v6.push(Span { start, end, index }),
            }
        }
        Ok(RangeTable { prefixes, v4: outermost(v4), v6: outermost(v6) })
    }

    /// The prefix containing `ip`, if any: the listed prefix itself, the
    /// outermost one when listed prefixes nest. An IPv4-mapped IPv6 address
    /// (`::ffff:a.b.c.d`) is looked up as IPv4.
    pub fn lookup(&self, ip: IpAddr) -> Option<IpPrefix> {
        let index = match ip.to_canonical() {
            IpAddr::V4(a) => find(&self.v4, u32::from(a))?,
            IpAddr::V6(a) => find(&self.v6, u128::from(a))?,
        };
        self.prefixes.get(index as usize).copied()
    }

    /// The listed prefixes, in list order.
    pub fn prefixes(&self) -> &[IpPrefix] {
        &self.prefixes
    }

    /// The number of prefixes.
    pub fn len(&self) -> usize {
        self.prefixes.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.prefixes.is_empty()
    }
}

fn parse_json(text: &str) -> Result<Vec<IpPrefix>, ListError> {
    let list: JsonList =
        serde_json::from_str(text).map_err(|e| ListError::Syntax(format!("invalid JSON list: {e}")))?;
    let mut out = Vec::with_capacity(list.prefixes.len());
    for (index, entry) in list.prefixes.iter().enumerate() {
        let bad = |text: String, error| ListError::Entry { index, text, error };
        let (key, value) = match (entry.get("ipv4Prefix"), entry.get("ipv6Prefix")) {
            (Some(v), None) => ("ipv4Prefix", v),
            (None, Some(v)) => ("ipv6Prefix", v),
            _ => return Err(bad(serde_json::Value::Object(entry.clone()).to_string(), CidrError::Key)),
        };
        let Some(s) = value.as_str() else {
            return Err(bad(value.to_string(), CidrError::Address));
        };
        let p = IpPrefix::parse(s.trim()).map_err(|e| bad(s.to_string(), e))?;
        if p.addr.is_ipv4() != (key == "ipv4Prefix") {
            return Err(bad(s.to_string(), CidrError::Family));
        }
        out.push(p);
    }
    Ok(out)
}

fn parse_lines(text: &str) -> Result<Vec<IpPrefix>, ListError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let entry = raw.split_once('#').map_or(raw, |(before, _)| before).trim();
        if entry.is_empty() {
            continue;
        }
        let p =
            IpPrefix::parse(entry).map_err(|error| ListError::Line { line: i + 1, text: entry.to_string(), error })?;
        out.push(p);
    }
    Ok(out)
}

/// Sorts the spans and drops every one inside another (CIDR blocks never
/// overlap partially), leaving disjoint spans in order.
fn outermost<T: Ord + Copy>(mut spans: Vec<Span<T>>) -> Vec<Span<T>> {
    // Same start: the larger (outer) block first; then list order.
    spans.sort_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)).then(a.index.cmp(&b.index)));
    let mut out: Vec<Span<T>> = Vec::with_capacity(spans.len());
    for s in spans {
        match out.last() {
            Some(last) if s.start <= last.end => {}
            _ => out.push(s),
        }
    }
    out.shrink_to_fit();
    out
}

/// The index of the span containing `x`.
fn find<T: Ord + Copy>(spans: &[Span<T>], x: T) -> Option<u32> {
    let after = spans.partition_point(|s| s.start <= x);
    let s = spans.get(after.checked_sub(1)?)?;
    (x <= s.end).then_some(s.index)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> IpPrefix {
        IpPrefix::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn prefix_parse() {
        assert_eq!(p("66.249.64.0/27").to_string(), "66.249.64.0/27");
        assert_eq!(p("2001:4860:4801:10::/64").to_string(), "2001:4860:4801:10::/64");
        assert_eq!(p("1.2.3.4"), IpPrefix { addr: ip("1.2.3.4"), len: 32 });
        assert_eq!(p("::1"), IpPrefix { addr: ip("::1"), len: 128 });
        assert_eq!(p("0.0.0.0/0").len, 0);
        assert_eq!(p("::/0").len, 0);
        assert_eq!(IpPrefix::parse("1.2.3.0/33"), Err(CidrError::Length));
        assert_eq!(IpPrefix::parse("::/129"), Err(CidrError::Length));
        assert_eq!(IpPrefix::parse("1.2.3.0/"), Err(CidrError::Length));
        assert_eq!(IpPrefix::parse("1.2.3.0/+24"), Err(CidrError::Length));
        assert_eq!(IpPrefix::parse("1.2.3.0/0024"), Err(CidrError::Length));
        assert_eq!(IpPrefix::parse("1.2.3.0/24/1"), Err(CidrError::Length));
        assert_eq!(IpPrefix::parse("1.2.3/24"), Err(CidrError::Address));
        assert_eq!(IpPrefix::parse("256.0.0.0/8"), Err(CidrError::Address));
        assert_eq!(IpPrefix::parse("fe80::1%eth0"), Err(CidrError::Address));
        assert_eq!(IpPrefix::parse(""), Err(CidrError::Address));
        assert_eq!(IpPrefix::parse("1.2.3.4/24"), Err(CidrError::HostBits(p("1.2.3.0/24"))));
        assert_eq!(IpPrefix::parse("2001:db8::1/64"), Err(CidrError::HostBits(p("2001:db8::/64"))));
    }

    #[test]
    fn nested_and_duplicate_prefixes_report_the_outer_one() {
        let t = RangeTable::parse("10.0.0.0/24\n10.0.0.128/25\n10.0.0.0/8\n10.0.0.0/8\n11.0.0.0/8\n").unwrap();
        assert_eq!(t.len(), 5);
        assert_eq!(t.v4.len(), 2);
        assert_eq!(t.lookup(ip("10.0.0.200")), Some(p("10.0.0.0/8")));
        assert_eq!(t.lookup(ip("11.255.255.255")), Some(p("11.0.0.0/8")));
        assert_eq!(t.lookup(ip("12.0.0.0")), None);
        assert_eq!(t.lookup(ip("9.255.255.255")), None);
    }

    #[test]
    fn mapped_prefix_is_ipv4() {
        let t = RangeTable::parse("::ffff:1.2.3.0/120\n").unwrap();
        assert_eq!(t.lookup(ip("1.2.3.9")), Some(p("::ffff:1.2.3.0/120")));
        assert_eq!(t.lookup(ip("::ffff:1.2.3.9")), Some(p("::ffff:1.2.3.0/120")));
        assert_eq!(t.lookup(ip("1.2.4.0")), None);
    }

    #[test]
    fn whole_address_space() {
        let t = RangeTable::parse("0.0.0.0/0\n::/0\n").unwrap();
        assert_eq!(t.lookup(ip("255.255.255.255")), Some(p("0.0.0.0/0")));
        assert_eq!(t.lookup(ip("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")), Some(p("::/0")));
    }

    #[test]
    fn contains_matches_lookup() {
        let q = p("192.0.2.0/24");
        assert!(q.contains(ip("192.0.2.255")));
        assert!(q.contains(ip("::ffff:192.0.2.1")));
        assert!(!q.contains(ip("192.0.3.0")));
        assert!(!q.contains(ip("::")));
    }
}
