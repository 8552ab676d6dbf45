//! Forward-confirmed reverse DNS: resolve the PTR of the address, match the
//! name against the operator's domains, resolve the name forward and
//! confirm the address is among its A/AAAA records. Lookups are cached
//! (positive and negative, honouring TTLs, bounded) and coalesced per
//! address.
//!
//! CONTRACT (owned by the `rdns` helper; signatures are fixed, bodies are stubs).

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// Resolver settings (from the policy's `[verification]` table).
#[derive(Clone, Debug)]
pub struct RdnsConfig {
    /// Nameservers (UDP, then TCP); empty means the system's resolv.conf.
    pub nameservers: Vec<SocketAddr>,
    /// Budget of one whole check (PTR plus forward), default 500 ms.
    pub timeout: Duration,
    /// Maximum cached addresses.
    pub cache_size: usize,
}

/// The outcome of one check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RdnsCheck {
    /// The PTR name is under one of the domains and resolves back to the address.
    Confirmed {
        /// The PTR name.
        ptr: String,
    },
    /// Proven not to be the operator: no PTR name under its domains, or the
    /// name does not resolve back to the address.
    Mismatch {
        /// The PTR name(s), if any, and what failed.
        detail: String,
    },
    /// Nothing could tell (timeout, SERVFAIL, garbage answer).
    Failed {
        /// Why.
        reason: String,
    },
}

/// Why the resolver could not be built.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{0}")]
pub struct RdnsError(pub String);

/// The forward-confirmed reverse DNS checker; cheap to clone.
#[derive(Clone, Debug)]
pub struct Fcrdns {}

impl Fcrdns {
    /// Builds the resolver.
    pub fn new(config: RdnsConfig) -> Result<Fcrdns, RdnsError> {
        let _ = config;
        Ok(Fcrdns {})
    }

    /// The cached outcome for `ip` against `suffixes`, without any I/O.
    pub fn cached(&self, ip: IpAddr, suffixes: &[String]) -> Option<RdnsCheck> {
        let _ = (ip, suffixes);
        None
    }

    /// Checks `ip` against `suffixes`, within the configured timeout.
    pub async fn check(&self, ip: IpAddr, suffixes: &[String]) -> RdnsCheck {
        let _ = (ip, suffixes);
        RdnsCheck::Failed { reason: "not implemented".into() }
    }

    /// The number of cached addresses.
    pub fn cache_len(&self) -> usize {
        0
    }
}
