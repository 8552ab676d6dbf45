//! crawlgate-payment: the I/O of charging crawlers.
//!
//! Owns the durable ledger of charges ([`ledger`]: SQLite, one writer
//! thread, batched commits) and the payment dialects that talk to outside
//! services. What a request is charged, and which answer a crawler gets,
//! is decided in `crawlgate_policy::payment`; this crate only records and
//! settles. It knows nothing of Pingora.

pub mod ledger;
