//! What the admin listener reads of the running proxy: a trait the proxy
//! implements, so the dependency runs from the proxy to this crate only.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::SystemTime;

use crawlgate_identity::lists::ListStatus;
use crawlgate_policy::Stats;
use crawlgate_telemetry::activity::Activity;
use crawlgate_telemetry::fleet::Fleet;
use crawlgate_telemetry::metrics::Metrics;

/// The running proxy as the admin endpoints see it.
pub trait AdminState: Send + Sync {
    /// The metrics registry.
    fn metrics(&self) -> &Metrics;

    /// The activity model behind the dashboard.
    fn activity(&self) -> &Activity;

    /// The fleet counters, with a shared store (`[limits] store`).
    fn fleet(&self) -> Option<Arc<Fleet>>;

    /// Whether the running policy charges (`/api/charges`).
    fn charging(&self) -> bool;

    /// What `/status` reports, read now.
    fn status(&self) -> Status;

    /// Brings the gauges read when `/metrics` is scraped up to date
    /// (upstream health, the origin copy's age, the shared store's state).
    fn before_scrape(&self);

    /// Every proxy listener accepts connections and shutdown has not
    /// begun: the first condition of `/readyz`.
    fn listeners_bound(&self) -> bool;

    /// The running policy makes `/readyz` wait for a healthy upstream
    /// (`server.ready_requires_upstream`).
    fn ready_requires_upstream(&self) -> bool;

    /// At least one upstream server passes its health check.
    fn any_upstream_healthy(&self) -> bool;
}

/// The facts of `/status`, gathered by the proxy from its snapshot, its
/// load status and its background services; the document's layout is
/// [`crate::Admin`]'s.
pub struct Status {
    /// The policy file (`None` when the policy came from memory).
    pub policy_file: Option<String>,
    /// The SHA-256 of the running policy's source.
    pub content_sha256: String,
    /// The snapshot generation.
    pub generation: u64,
    /// When the snapshot was built.
    pub loaded_at: SystemTime,
    /// The last failed load's error text.
    pub last_error: Option<String>,
    /// When the last failure happened.
    pub last_error_at: Option<SystemTime>,
    /// Settings changed by a reload that only a restart applies.
    pub restart_required: Vec<String>,
    /// The running policy's counts.
    pub stats: Stats,
    /// The origin's robots.txt is merged into the policy
    /// (`origin_robots.mode = "merge"`).
    pub origin_merged: bool,
    /// `/agents.txt` is served.
    pub agents_txt: bool,
    /// The ETag of `/robots.txt`.
    pub robots_txt_etag: String,
    /// Each upstream server: name, address, healthy.
    pub upstreams: Vec<(String, SocketAddr, bool)>,
    /// The origin's robots.txt copy, as the proxy reports it.
    pub origin_robots: serde_json::Value,
    /// Each IP list's state; `None` without verification.
    pub verification_lists: Option<Vec<ListStatus>>,
    /// The TLS certificate in use; `None` without TLS listeners.
    pub tls: Option<serde_json::Value>,
    /// The shared store of `[limits] store`; `None` without one.
    pub limits_store: Option<crawlgate_store::Health>,
    /// The ledger's state (`backend`, `target` with its password masked,
    /// `healthy`, `postgres_up`, `spool_rows`, `error`); `None` when the
    /// policy charges nothing.
    pub ledger: Option<serde_json::Value>,
}
