//! crawlgate-payment: the I/O of charging crawlers.
//!
//! Owns the durable ledger of charges ([`ledger`]: SQLite, one writer
//! thread, batched commits) and the payment dialects that talk to outside
//! services: RSL license tokens verified against a license server's keys
//! ([`rsl`]) and x402 payments verified and settled through a facilitator
//! ([`x402`]). Both reach those services through the bounded, SSRF-checked
//! client of `crawlgate_outbound`, which also reads the license server's
//! keys. What a request is charged, and which answer a crawler gets, is
//! decided in `crawlgate_policy::payment`; this crate only records,
//! verifies and settles: [`charging`] holds the open ledger, [`clients`]
//! the dialects' clients of one policy. It knows nothing of Pingora.

pub mod charging;
pub mod clients;
pub mod ledger;
pub mod rsl;
pub mod x402;
