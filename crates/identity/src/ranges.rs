//! Published IP range lists: parsing (the `{"prefixes": [{"ipv4Prefix": ..},
//! {"ipv6Prefix": ..}]}` JSON that Google, Bing, OpenAI and others publish,
//! or one CIDR per line) and a prefix table for lookups.
//!
//! CONTRACT (owned by the `lists` helper; signatures are fixed, bodies are stubs).

use std::fmt;
use std::net::IpAddr;

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

/// Why a list was rejected, with the position of the bad entry.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ListError {
    /// Not parseable at all.
    #[error("{0}")]
    Syntax(String),
}

/// A set of prefixes with fast membership lookup.
#[derive(Clone, Debug, Default)]
pub struct RangeTable {
    prefixes: Vec<IpPrefix>,
}

impl RangeTable {
    /// Parses a list in either supported format.
    pub fn parse(text: &str) -> Result<RangeTable, ListError> {
        let _ = text;
        Err(ListError::Syntax("not implemented".into()))
    }

    /// The prefix containing `ip`, if any.
    pub fn lookup(&self, ip: IpAddr) -> Option<IpPrefix> {
        let _ = ip;
        None
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
