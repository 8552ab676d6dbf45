//! The admin listener: `/metrics` (Prometheus text), `/healthz`, `/readyz`,
//! `/status` (JSON), the dashboard at `/` and its JSON documents under
//! `/api/`. With `server.admin_auth_file`, everything but `/healthz` and
//! `/readyz` (probes) needs the credentials.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use async_trait::async_trait;
use http::{Response, StatusCode};
use pingora::apps::http_app::ServeHttp;
use pingora::protocols::http::ServerSession;

use crate::admin_auth::AdminAuth;
use crate::dashboard;
use crate::state::Shared;
use crawlgate_telemetry::activity::Window;
use crawlgate_telemetry::metrics::unix_seconds;

/// The health probes: open without credentials, and answered over the
/// listener's connection cap (see [`crate::conn::ConnApp::with_probe_slots`]).
pub const PROBES: &[&str] = &["/healthz", "/readyz"];

/// The admin HTTP app.
pub struct Admin {
    shared: Arc<Shared>,
    auth: Option<AdminAuth>,
    /// The TLS listeners' certificate, for `/status`.
    tls: Option<Arc<crawlgate_certs::CertStore>>,
}

impl Admin {
    /// Serves from `shared`; `auth`, when set, protects all but the probes;
    /// `tls` is the TLS listeners' certificate.
    pub fn new(shared: Arc<Shared>, auth: Option<AdminAuth>, tls: Option<Arc<crawlgate_certs::CertStore>>) -> Admin {
        Admin { shared, auth, tls }
    }

    /// The dashboard's JSON documents (`/api/...`, without the prefix),
    /// `None` for an unknown name.
    fn api(&self, name: &str, query: Option<&str>) -> Option<serde_json::Value> {
        let activity = &self.shared.activity;
        Some(match name {
            "agents" => self.agents_json(query_window(query).unwrap_or(Window::All)),
            "timeline" => activity.timeline_json(query_usize(query, "minutes").unwrap_or(dashboard::CHART_MINUTES)),
            "violations" => activity.violations_json(query_usize(query, "limit").unwrap_or(50)),
            "compliance" => activity.compliance_json(query_usize(query, "limit").unwrap_or(50)),
            "referrals" => activity.referrals_json(),
            "charges" => {
                self.shared.metrics.payment().charges_json(self.shared.snapshot.load().policy.payment().charging)
            }
            _ => return None,
        })
    }

    /// The dashboard page over `window`.
    fn page(&self, window: Window) -> String {
        let api = |name| self.api(name, None).unwrap_or_default();
        let activity = &self.shared.activity;
        dashboard::page(&dashboard::Data {
            status: &self.status_json(),
            agents: &self.agents_json(window),
            timeline: &activity.timeline_json(dashboard::chart_minutes(window)),
            violations: &api("violations"),
            compliance: &api("compliance"),
            referrals: &api("referrals"),
            charges: &api("charges"),
        })
    }

    /// `/api/agents` with the fleet's counts beside this instance's.
    fn agents_json(&self, window: Window) -> serde_json::Value {
        let mut v = self.shared.activity.agents_json(window);
        crawlgate_telemetry::fleet::add_to(self.shared.snapshot.load().handles.fleet.as_deref(), &mut v, window);
        v
    }

    /// The `/status` document.
    pub fn status_json(&self) -> serde_json::Value {
        let snap = self.shared.snapshot.load();
        let status = self.shared.load_status();
        let stats = snap.policy.stats();
        let upstreams: Vec<serde_json::Value> = snap
            .upstream
            .health()
            .into_iter()
            .map(|(name, addr, healthy)| serde_json::json!({"server": name, "address": addr.to_string(), "healthy": healthy}))
            .collect();
        serde_json::json!({
            "policy_file": self.shared.config_path.as_ref().map(|p| p.display().to_string()),
            "content_sha256": snap.policy.source_sha256(),
            "generation": snap.generation,
            "loaded_at": unix_seconds(snap.loaded_at),
            "last_error": status.last_error,
            "last_error_at": status.last_error_at.map(unix_seconds),
            "restart_required": status.restart_required,
            "groups": stats.groups,
            "origin_groups": stats.origin_groups,
            "groups_text": stats.groups_text(snap.policy.settings().origin_robots.mode == crawlgate_policy::OriginRobotsMode::Merge),
            "rules": stats.rules,
            "robots_tags": stats.robots_tags,
            "agents_txt_rules": stats.agents_rules,
            "agents_txt": snap.agents.is_some(),
            "robots_txt_etag": snap.robots.etag,
            "upstreams": upstreams,
            "origin_robots": crate::origin::status_json(&self.shared),
            "verification_lists": self.verification_lists(),
            "tls": self.tls.as_ref().map(|t| t.status_json()),
            "signatures": self.signatures(),
        })
    }

    /// The Web Bot Auth signature outcomes counted since the start (`null`
    /// without verification).
    fn signatures(&self) -> Option<serde_json::Value> {
        self.shared.snapshot.load().handles.verifier.as_ref()?;
        let [verified, invalid, unverified] = self.shared.metrics.verification().signature_counts();
        Some(serde_json::json!({"verified": verified, "invalid": invalid, "unverified": unverified}))
    }

    /// Each IP list's source, age, size and last error (empty without
    /// verification).
    fn verification_lists(&self) -> Vec<serde_json::Value> {
        let Some(v) = self.shared.snapshot.load().handles.verifier.clone() else { return Vec::new() };
        v.lists()
            .status()
            .into_iter()
            .map(|s| {
                serde_json::json!({
                    "source": s.source,
                    "age_seconds": s.age_secs,
                    "prefixes": s.prefixes,
                    "last_error": s.last_error,
                    "refresh_failures": s.failures,
                })
            })
            .collect()
    }
}

/// The `window=` query parameter: `Some(Ok(_))` for a known window,
/// `Some(Err(()))` for an unknown one, `None` without one.
fn window_param(query: Option<&str>) -> Option<Result<Window, ()>> {
    let value = query?.split('&').find_map(|kv| kv.strip_prefix("window="))?;
    Some(Window::parse(value).ok_or(()))
}

/// The window a query asks for (unknown values were refused before).
fn query_window(query: Option<&str>) -> Option<Window> {
    window_param(query).and_then(Result::ok)
}

/// A `name=<number>` query parameter.
fn query_usize(query: Option<&str>, name: &str) -> Option<usize> {
    query?.split('&').find_map(|kv| kv.strip_prefix(name)?.strip_prefix('=')?.parse().ok())
}

fn json(value: &serde_json::Value) -> Response<Vec<u8>> {
    let mut body = serde_json::to_vec_pretty(value).unwrap_or_default();
    body.push(b'\n');
    text(StatusCode::OK, "application/json", body)
}

/// Why `/readyz` answers 503, `None` when ready: every proxy listener
/// bound (and no shutdown begun), and a healthy upstream only when the
/// policy asks for it (`server.ready_requires_upstream`).
fn not_ready(bound: bool, requires_upstream: bool, healthy: impl FnOnce() -> bool) -> Option<&'static [u8]> {
    if !bound {
        Some(b"not ready: the proxy listeners are not all bound\n")
    } else if requires_upstream && !healthy() {
        Some(b"not ready: no healthy upstream (server.ready_requires_upstream)\n")
    } else {
        None
    }
}

fn text(status: StatusCode, content_type: &str, body: Vec<u8>) -> Response<Vec<u8>> {
    let mut resp = Response::new(body);
    *resp.status_mut() = status;
    if let Ok(v) = http::HeaderValue::from_str(content_type) {
        resp.headers_mut().insert(http::header::CONTENT_TYPE, v);
    }
    if let Ok(v) = http::HeaderValue::from_str(&resp.body().len().to_string()) {
        resp.headers_mut().insert(http::header::CONTENT_LENGTH, v);
    }
    resp.headers_mut().insert(http::header::CACHE_CONTROL, http::HeaderValue::from_static("no-store"));
    resp
}

#[async_trait]
impl ServeHttp for Admin {
    async fn response(&self, session: &mut ServerSession) -> Response<Vec<u8>> {
        let method = &session.req_header().method;
        if method != http::Method::GET && method != http::Method::HEAD {
            let mut resp = text(
                StatusCode::METHOD_NOT_ALLOWED,
                "text/plain; charset=utf-8",
                b"method not allowed: the admin endpoints answer GET and HEAD\n".to_vec(),
            );
            resp.headers_mut().insert(http::header::ALLOW, http::HeaderValue::from_static("GET, HEAD"));
            return resp;
        }
        let path = session.req_header().uri.path().to_owned();
        if let Some(auth) = &self.auth {
            let probe = PROBES.contains(&path.as_str());
            let given = session.req_header().headers.get(http::header::AUTHORIZATION).map(|v| v.as_bytes());
            if !probe && !auth.accepts(given) {
                let mut resp = text(
                    StatusCode::UNAUTHORIZED,
                    "text/plain; charset=utf-8",
                    b"unauthorized: this admin listener needs the credentials of server.admin_auth_file\n".to_vec(),
                );
                resp.headers_mut()
                    .insert(http::header::WWW_AUTHENTICATE, http::HeaderValue::from_static(auth.challenge()));
                return resp;
            }
        }
        let query = session.req_header().uri.query();
        if let Some(Err(())) = window_param(query) {
            return text(
                StatusCode::BAD_REQUEST,
                "text/plain; charset=utf-8",
                b"bad request: window= takes all, 1h, 6h or 24h\n".to_vec(),
            );
        }
        if let Some(name) = path.strip_prefix("/api/") {
            return match self.api(name, query) {
                Some(v) => json(&v),
                None => text(
                    StatusCode::NOT_FOUND,
                    "text/plain; charset=utf-8",
                    b"not found: try /api/agents, /api/timeline, /api/violations, /api/compliance, /api/referrals\n"
                        .to_vec(),
                ),
            };
        }
        match path.as_str() {
            "/" => text(
                StatusCode::OK,
                "text/html; charset=utf-8",
                self.page(query_window(query).unwrap_or(Window::All)).into_bytes(),
            ),
            "/metrics" => {
                let snap = self.shared.snapshot.load();
                self.shared.metrics.upstream_health(&snap.upstream.health());
                self.shared.metrics.origin_robots_age(crate::origin::copy_age(&self.shared));
                if let Some(store) = &snap.handles.store {
                    self.shared.metrics.limits_store(store.is_up(), store.errors_total());
                    self.shared.metrics.limits_fallbacks(snap.handles.limiter.fallbacks());
                }
                let (body, ct) = self.shared.metrics.encode();
                text(StatusCode::OK, &ct, body)
            }
            "/healthz" => text(StatusCode::OK, "text/plain; charset=utf-8", b"ok\n".to_vec()),
            "/readyz" => {
                let snap = self.shared.snapshot.load();
                let bound = self.shared.listeners_bound.load(Ordering::Acquire);
                let requires_upstream = snap.policy.settings().server.ready_requires_upstream;
                match not_ready(bound, requires_upstream, || snap.upstream.any_healthy()) {
                    None => text(StatusCode::OK, "text/plain; charset=utf-8", b"ready\n".to_vec()),
                    Some(why) => text(StatusCode::SERVICE_UNAVAILABLE, "text/plain; charset=utf-8", why.to_vec()),
                }
            }
            "/status" => {
                let mut body = serde_json::to_vec_pretty(&self.status_json()).unwrap_or_default();
                body.push(b'\n');
                text(StatusCode::OK, "application/json", body)
            }
            _ => text(
                StatusCode::NOT_FOUND,
                "text/plain; charset=utf-8",
                b"not found: try /, /metrics, /healthz, /readyz, /status, /api/agents\n".to_vec(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::not_ready;

    #[test]
    fn ready_once_bound_and_on_the_origin_only_when_asked() {
        let unbound = Some(&b"not ready: the proxy listeners are not all bound\n"[..]);
        assert_eq!(not_ready(false, false, || true), unbound);
        assert_eq!(not_ready(false, true, || true), unbound);
        assert_eq!(not_ready(true, false, || false), None);
        assert_eq!(not_ready(true, true, || true), None);
        assert_eq!(
            not_ready(true, true, || false),
            Some(&b"not ready: no healthy upstream (server.ready_requires_upstream)\n"[..])
        );
    }
}
