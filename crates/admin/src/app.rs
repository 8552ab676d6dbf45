//! The admin listener: `/metrics` (Prometheus text), `/healthz`, `/readyz`,
//! `/status` (JSON), the dashboard at `/` and its JSON documents under
//! `/api/`. With `server.admin_auth_file`, everything but `/healthz` and
//! `/readyz` (probes) needs the credentials.

use std::sync::Arc;

use async_trait::async_trait;
use http::{Response, StatusCode};
use pingora::apps::http_app::ServeHttp;
use pingora::protocols::http::ServerSession;

use crawlgate_identity::lists::ListStatus;
use crawlgate_telemetry::activity::Window;
use crawlgate_telemetry::metrics::unix_seconds;

use crate::auth::AdminAuth;
use crate::dashboard;
use crate::view::AdminState;

/// The health probes: open without credentials, and answered over the
/// listener's connection cap (the proxy keeps connection slots for them).
pub const PROBES: &[&str] = &["/healthz", "/readyz"];

/// The admin HTTP app.
pub struct Admin {
    state: Arc<dyn AdminState>,
    auth: Option<AdminAuth>,
}

impl Admin {
    /// Serves from `state`; `auth`, when set, protects all but the probes.
    pub fn new(state: Arc<dyn AdminState>, auth: Option<AdminAuth>) -> Admin {
        Admin { state, auth }
    }

    /// The dashboard's JSON documents (`/api/...`, without the prefix),
    /// `None` for an unknown name.
    fn api(&self, name: &str, query: Option<&str>) -> Option<serde_json::Value> {
        let activity = self.state.activity();
        Some(match name {
            "agents" => self.agents_json(query_window(query).unwrap_or(Window::All)),
            "timeline" => activity.timeline_json(query_usize(query, "minutes").unwrap_or(dashboard::CHART_MINUTES)),
            "violations" => activity.violations_json(query_usize(query, "limit").unwrap_or(50)),
            "compliance" => activity.compliance_json(query_usize(query, "limit").unwrap_or(50)),
            "referrals" => activity.referrals_json(),
            "charges" => self.state.metrics().payment().charges_json(self.state.charging()),
            _ => return None,
        })
    }

    /// The dashboard page over `window`.
    fn page(&self, window: Window) -> String {
        let api = |name| self.api(name, None).unwrap_or_default();
        let activity = self.state.activity();
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
        let mut v = self.state.activity().agents_json(window);
        crawlgate_telemetry::fleet::add_to(self.state.fleet().as_deref(), &mut v, window);
        v
    }

    /// The `/status` document.
    pub fn status_json(&self) -> serde_json::Value {
        let status = self.state.status();
        let stats = &status.stats;
        let upstreams: Vec<serde_json::Value> = status
            .upstreams
            .iter()
            .map(|(name, addr, healthy)| serde_json::json!({"server": name, "address": addr.to_string(), "healthy": healthy}))
            .collect();
        serde_json::json!({
            "policy_file": status.policy_file,
            "content_sha256": status.content_sha256,
            "generation": status.generation,
            "loaded_at": unix_seconds(status.loaded_at),
            "last_error": status.last_error,
            "last_error_at": status.last_error_at.map(unix_seconds),
            "restart_required": status.restart_required,
            "groups": stats.groups,
            "origin_groups": stats.origin_groups,
            "groups_text": stats.groups_text(status.origin_merged),
            "rules": stats.rules,
            "robots_tags": stats.robots_tags,
            "agents_txt_rules": stats.agents_rules,
            "agents_txt": status.agents_txt,
            "robots_txt_etag": status.robots_txt_etag,
            "upstreams": upstreams,
            "origin_robots": status.origin_robots,
            "verification_lists": verification_lists(status.verification_lists.as_deref()),
            "tls": status.tls,
            "limits": limits_json(status.limits_store.as_ref()),
            "ledger": status.ledger,
            "signatures": self.signatures(status.verification_lists.is_some()),
        })
    }

    /// The Web Bot Auth signature outcomes counted since the start (`null`
    /// without verification).
    fn signatures(&self, verifying: bool) -> Option<serde_json::Value> {
        if !verifying {
            return None;
        }
        let counts = self.state.metrics().verification().signature_counts();
        let outcomes = crawlgate_policy::verification::SignatureOutcome::ALL;
        Some(outcomes.iter().zip(counts).map(|(o, n)| (o.as_str().to_owned(), serde_json::Value::from(n))).collect())
    }
}

/// The `limits` member: whether a shared store is configured and, with
/// one, its server, whether it answers, since when and the error that last
/// took it down (rate limits are per instance while it is down).
fn limits_json(store: Option<&crawlgate_store::Health>) -> serde_json::Value {
    let Some(h) = store else {
        return serde_json::json!({"store": {"configured": false}});
    };
    serde_json::json!({"store": {
        "configured": true,
        "target": h.target,
        "up": h.up,
        "since": h.since,
        "last_error": h.last_error,
    }})
}

/// Each IP list's source, age, size and last error (empty without
/// verification).
fn verification_lists(lists: Option<&[ListStatus]>) -> Vec<serde_json::Value> {
    lists
        .unwrap_or_default()
        .iter()
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
                self.state.before_scrape();
                let (body, ct) = self.state.metrics().encode();
                text(StatusCode::OK, &ct, body)
            }
            "/healthz" => text(StatusCode::OK, "text/plain; charset=utf-8", b"ok\n".to_vec()),
            "/readyz" => {
                let bound = self.state.listeners_bound();
                let requires_upstream = self.state.ready_requires_upstream();
                match not_ready(bound, requires_upstream, || self.state.any_upstream_healthy()) {
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
    use std::sync::Arc;
    use std::time::{Duration, UNIX_EPOCH};

    use crawlgate_identity::lists::ListStatus;
    use crawlgate_policy::Stats;
    use crawlgate_telemetry::activity::Activity;
    use crawlgate_telemetry::fleet::Fleet;
    use crawlgate_telemetry::metrics::Metrics;
    use serde_json::json;

    use super::{not_ready, Admin};
    use crate::view::{AdminState, Status};

    /// A running proxy as far as the admin app can tell: fixed facts.
    struct Fixed {
        metrics: Metrics,
        activity: Activity,
        lists: Option<Vec<ListStatus>>,
    }

    impl AdminState for Fixed {
        fn metrics(&self) -> &Metrics {
            &self.metrics
        }
        fn activity(&self) -> &Activity {
            &self.activity
        }
        fn fleet(&self) -> Option<Arc<Fleet>> {
            None
        }
        fn charging(&self) -> bool {
            false
        }
        fn status(&self) -> Status {
            let at = |secs| UNIX_EPOCH + Duration::from_secs(secs);
            Status {
                policy_file: Some("/etc/crawlgate/crawlgate.toml".into()),
                content_sha256: "ab12".into(),
                generation: 3,
                loaded_at: at(1_700_000_000),
                last_error: Some("crawlgate.toml:4:1: unknown key".into()),
                last_error_at: Some(at(1_700_000_060)),
                restart_required: vec!["server.listen".into()],
                stats: Stats { groups: 2, origin_groups: 1, rules: 5, robots_tags: 1, agents_rules: 0 },
                origin_merged: true,
                agents_txt: false,
                robots_txt_etag: "\"e1\"".into(),
                upstreams: vec![("origin:80".into(), "127.0.0.1:80".parse().unwrap(), true)],
                origin_robots: json!({"mode": "merge"}),
                verification_lists: self.lists.clone(),
                tls: None,
                limits_store: None,
                ledger: None,
            }
        }
        fn before_scrape(&self) {}
        fn listeners_bound(&self) -> bool {
            true
        }
        fn ready_requires_upstream(&self) -> bool {
            false
        }
        fn any_upstream_healthy(&self) -> bool {
            true
        }
    }

    fn admin(lists: Option<Vec<ListStatus>>) -> Admin {
        let policy = crawlgate_policy::load("[upstream]\nservers = [\"127.0.0.1:1\"]\n", "t.toml").unwrap().policy;
        let metrics = Metrics::with_verification(lists.is_some()).unwrap();
        Admin::new(Arc::new(Fixed { metrics, activity: Activity::new(&policy, 1), lists }), None)
    }

    #[test]
    fn status_is_laid_out_from_the_facts_the_proxy_gathers() {
        let mut want = json!({
            "policy_file": "/etc/crawlgate/crawlgate.toml",
            "content_sha256": "ab12",
            "generation": 3,
            "loaded_at": 1_700_000_000,
            "last_error": "crawlgate.toml:4:1: unknown key",
            "last_error_at": 1_700_000_060,
            "restart_required": ["server.listen"],
            "groups": 2,
            "origin_groups": 1,
            "groups_text": "2 policy groups + 1 origin group",
            "rules": 5,
            "robots_tags": 1,
            "agents_txt_rules": 0,
            "agents_txt": false,
            "robots_txt_etag": "\"e1\"",
            "upstreams": [{"server": "origin:80", "address": "127.0.0.1:80", "healthy": true}],
            "origin_robots": {"mode": "merge"},
            "verification_lists": [],
            "tls": null,
            "limits": {"store": {"configured": false}},
            "ledger": null,
            "signatures": null,
        });
        assert_eq!(admin(None).status_json(), want);
        // With verification: each list, and the signature counts.
        let list = ListStatus {
            source: "https://example.com/ranges.json".into(),
            prefixes: 12,
            age_secs: Some(30),
            last_error: None,
            failures: 1,
            refreshes: 4,
        };
        want["verification_lists"] = json!([{
            "source": "https://example.com/ranges.json",
            "age_seconds": 30,
            "prefixes": 12,
            "last_error": null,
            "refresh_failures": 1,
        }]);
        want["signatures"] =
            json!({"verified": 0, "legacy": 0, "invalid": 0, "expired": 0, "unknown_bot": 0, "replayed": 0});
        assert_eq!(admin(Some(vec![list])).status_json(), want);
    }

    #[test]
    fn the_limits_member_reports_the_store() {
        let health = crawlgate_store::Health {
            target: "10.0.0.5:6379".into(),
            up: false,
            since: Some(1_795_000_000),
            last_error: Some("Redis at 10.0.0.5:6379: connection refused".into()),
        };
        assert_eq!(
            super::limits_json(Some(&health)),
            json!({"store": {"configured": true, "target": "10.0.0.5:6379", "up": false, "since": 1_795_000_000u64,
                             "last_error": "Redis at 10.0.0.5:6379: connection refused"}})
        );
    }

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
