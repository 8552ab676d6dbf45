//! Test support shared by crawlgate's test suites (the policy crate's
//! integration tests and the end-to-end crate): the public robots.txt
//! conformance suite read with serde, bodies split at random chunk
//! boundaries, temporary directories removed on drop,
//! raw HTTP/1.1 over TCP, a small HTTP server with routes
//! a test changes as it runs, golden files, a real `redis-server` and a
//! real PostgreSQL on a loopback port, and test doubles of outside services that speak their
//! documented protocols (a DNS server, a Web Bot Auth key directory, an RSL
//! license server, an x402 facilitator).
//!
//! It owns no crawlgate logic and depends on no crawlgate crate, so every
//! test crate can use it without a dependency cycle.

pub mod chunks;
pub mod conformance;
pub mod dns;
pub mod facilitator;
pub mod golden;
pub mod http;
pub mod license_server;
pub mod postgres;
pub mod redis;
pub mod serve;
pub mod stub;
pub mod temp;
pub mod wba;

pub use conformance::{ConformanceCase, RfcStatus};
pub use temp::TempDir;
