//! crawlgate-telemetry: what crawlgate reports about itself.
//!
//! Owns the Prometheus registry and its metric families (`metrics`), the
//! typed events of the request path with their access log line (`events`;
//! `events::rewrite`: what an HTML body transform reports), the activity
//! model behind the admin dashboard (`activity`) and the fleet counters a
//! shared store adds up across instances (`fleet`), and installs the log
//! subscriber (`logging`). It does not serve them (the admin listener is
//! `crawlgate-admin`), decide anything (`crawlgate-policy`) or know the
//! proxy: the proxy fills in plain values (of Pingora it knows only the
//! error type, for the access line).

pub mod activity;
pub mod events;
pub mod fleet;
pub mod logging;
pub mod metrics;
