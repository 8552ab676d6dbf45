//! crawlgate-outbound: the requests crawlgate makes to other services, and
//! the keys it reads from their answers.
//!
//! Owns the safe HTTP client ([`fetch`]: https only, no redirects, a
//! deadline over the whole exchange, a bounded body, and no private,
//! loopback or link-local address, checked on the resolved address by
//! [`address`]), the cache lifetime of what it fetches, and JWK parsing:
//! keys ([`jwk`]: Ed25519, P-256, RSA) and the members of a JWK Set
//! ([`key_set`]). Where a caller's job differs on purpose (IP lists follow
//! redirects, key directories use no proxy, a directory over its key cap is
//! refused while a license server's JWKS is cut), the difference is an
//! option of this API, not a copy of it.
//!
//! Used by crawlgate-identity (Web Bot Auth key directories, published IP
//! lists) and crawlgate-payment (a license server's JWKS, an x402
//! facilitator). What a fetched document means, how long its keys prove
//! anything and when to fetch it again is the caller's; this crate reads
//! no policy and knows nothing of Pingora.

pub mod address;
pub mod fetch;
pub mod jwk;
pub mod key_set;
