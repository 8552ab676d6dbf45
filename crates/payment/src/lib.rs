//! crawlgate-payment: the I/O of charging crawlers.
//!
//! Owns the durable ledger of charges ([`ledger`]: SQLite, one writer
//! thread, batched commits) and the payment dialects that talk to outside
//! services: RSL license tokens verified against a license server's keys
//! ([`rsl`], with the key types of [`jwk`]), x402 payments verified and
//! settled through a facilitator ([`x402`]), and the bounded, SSRF-checked
//! HTTP client both use ([`outbound`]). What a request is charged, and
//! which answer a crawler gets, is decided in `crawlgate_policy::payment`;
//! this crate only records, verifies and settles. It knows nothing of
//! Pingora.

pub mod jwk;
pub mod ledger;
pub mod outbound;
pub mod rsl;
pub mod x402;
