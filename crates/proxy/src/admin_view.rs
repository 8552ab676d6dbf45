//! The running state as the admin listener reads it: the proxy's side of
//! [`AdminState`], so that `crawlgate-admin` never sees the proxy's types.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crawlgate_admin::{AdminState, Status};
use crawlgate_certs::CertStore;
use crawlgate_policy::OriginRobotsMode;
use crawlgate_telemetry::activity::Activity;
use crawlgate_telemetry::fleet::Fleet;
use crawlgate_telemetry::metrics::Metrics;

use crate::state::Shared;

/// The shared state and the TLS listeners' certificate (for `/status`).
pub struct AdminView {
    shared: Arc<Shared>,
    tls: Option<Arc<CertStore>>,
}

impl AdminView {
    /// Reads `shared`; `tls` is the TLS listeners' certificate, if any.
    pub fn new(shared: Arc<Shared>, tls: Option<Arc<CertStore>>) -> AdminView {
        AdminView { shared, tls }
    }
}

impl AdminState for AdminView {
    fn metrics(&self) -> &Metrics {
        &self.shared.metrics
    }

    fn activity(&self) -> &Activity {
        &self.shared.activity
    }

    fn fleet(&self) -> Option<Arc<Fleet>> {
        self.shared.snapshot.load().handles.fleet.clone()
    }

    fn charging(&self) -> bool {
        self.shared.snapshot.load().policy.payment().charging
    }

    fn status(&self) -> Status {
        let shared = &self.shared;
        let snap = shared.snapshot.load();
        let load = shared.load_status();
        Status {
            policy_file: shared.config_path.as_ref().map(|p| p.display().to_string()),
            content_sha256: snap.policy.source_sha256().to_string(),
            generation: snap.generation,
            loaded_at: snap.loaded_at,
            last_error: load.last_error,
            last_error_at: load.last_error_at,
            restart_required: load.restart_required,
            stats: snap.policy.stats(),
            origin_merged: snap.policy.settings().origin_robots.mode == OriginRobotsMode::Merge,
            agents_txt: snap.agents.is_some(),
            robots_txt_etag: snap.robots.etag.clone(),
            upstreams: snap.upstream.health(),
            origin_robots: crate::origin::status_json(shared),
            verification_lists: snap.handles.verifier.as_ref().map(|v| v.lists().status()),
            tls: self.tls.as_ref().map(|t| t.status_json()),
            limits_store: snap.handles.store.as_ref().map(|s| s.health()),
            ledger: snap.handles.charging.as_ref().and_then(|c| serde_json::to_value(c.ledger.status()).ok()),
        }
    }

    fn before_scrape(&self) {
        let (shared, snap) = (&self.shared, self.shared.snapshot.load());
        shared.metrics.upstream_health(&snap.upstream.health());
        shared.metrics.origin_robots_age(crate::origin::copy_age(shared));
        shared.metrics.limits_store(snap.handles.store.as_ref().map(|s| (s.is_up(), s.errors_total())));
        if snap.handles.store.is_some() {
            shared.metrics.limits_fallbacks(snap.handles.limiter.fallbacks());
        }
        if let Some(c) = snap.handles.charging.as_ref() {
            let s = c.ledger.status();
            shared.metrics.payment().ledger_state(s.healthy, s.postgres_up, s.spool_rows);
        }
    }

    fn listeners_bound(&self) -> bool {
        self.shared.listeners_bound.load(Ordering::Acquire)
    }

    fn ready_requires_upstream(&self) -> bool {
        self.shared.snapshot.load().policy.settings().server.ready_requires_upstream
    }

    fn any_upstream_healthy(&self) -> bool {
        self.shared.snapshot.load().upstream.any_healthy()
    }
}
