//! crawlgate-payment: paid and licensed access to a site behind crawlgate.
//!
//! Owns the I/O of the payment dialects that need outside services: RSL
//! license tokens verified against a license server's keys ([`rsl`]),
//! x402 payments verified and settled through a facilitator ([`x402`]),
//! the signing keys tokens are checked with ([`jwk`]), and the bounded,
//! SSRF-checked HTTP client both dialects use ([`outbound`]). It
//! does not decide which request is charged (the policy crate does) and
//! knows nothing of Pingora.

pub mod jwk;
pub mod outbound;
pub mod rsl;
pub mod x402;
