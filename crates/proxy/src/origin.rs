//! The origin's own robots.txt (`[robots_txt] origin = "merge"`): a
//! background service fetches `/robots.txt` through the upstream pool at
//! start and every `origin_refresh`, each fetch bounded by
//! `origin_timeout` and by the 500 KiB RFC 9309 section 2.5 asks parsers to
//! read. Each copy is merged into the running policy
//! (`Policy::merge_origin`, pure) and the result swapped in as a new
//! snapshot, so the file served and the rules enforced change together.
//!
//! A fetch that fails (timeout, refused connection, 3xx or 5xx, a body too
//! large) keeps the last good copy; while there is none, the next fetch
//! comes after 1 s, doubling up to `origin_refresh` ([`next_wait`]); a 4xx means the origin has no
//! robots.txt (RFC 9309 section 2.3.1.3), and the policy's file is served
//! alone. A policy reload merges the new policy with the last good copy
//! ([`install`]).

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use crawlgate_policy::{OriginRobotsMode, OriginRobotsSettings, MAX_ROBOTS_TXT};
use pingora::connectors::http::Connector;
use pingora::http::RequestHeader;
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;

use crate::state::{OriginCopy, OriginState, Shared, Snapshot};
use crawlgate_telemetry::metrics::{unix_seconds, OriginFetch};

/// Locks the origin state (poisoning is survivable: the data is plain).
fn lock(m: &Mutex<OriginState>) -> std::sync::MutexGuard<'_, OriginState> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// Stores `snap` as the current snapshot, merged with the last good origin
/// copy when its policy says `origin = "merge"`. Used by policy reloads;
/// the origin state's lock orders it with the fetcher's swaps, so neither
/// overwrites the other's newer snapshot.
pub fn install(shared: &Shared, snap: Snapshot) -> Arc<Snapshot> {
    let mut state = lock(&shared.origin);
    let snap = match (&state.copy, snap.policy.settings().origin_robots.mode) {
        (Some(copy), OriginRobotsMode::Merge) => {
            let copy = copy.clone();
            merged(&mut state, &snap, &copy).unwrap_or(snap)
        }
        _ => snap,
    };
    let snap = Arc::new(snap);
    shared.snapshot.store(snap.clone());
    shared.activity.bind(&snap.policy, snap.generation);
    snap
}

/// `snap` merged with `copy` as a new snapshot (same generation), with the
/// state's conflicts updated; `None` (logged) when the merge cannot be
/// used, and `snap` stays as it is.
fn merged(state: &mut OriginState, snap: &Snapshot, copy: &OriginCopy) -> Option<Snapshot> {
    let result =
        snap.policy.merge_origin_at(&copy.body, copy.base.as_deref()).map_err(|e| e.to_string()).and_then(|m| {
            let conflicts = m.conflicts.iter().map(ToString::to_string).collect();
            let taken = (m.origin_groups, m.origin_sitemaps);
            Snapshot::new(m.policy, snap.generation, Some(snap))
                .map(|s| (s, conflicts, taken))
                .map_err(|e| e.to_string())
        });
    match result {
        Ok((merged, conflicts, taken)) => {
            state.conflicts = conflicts;
            state.taken = taken;
            state.merge_error = None;
            Some(merged)
        }
        Err(e) => {
            tracing::error!(error = %e, "Cannot merge the origin's robots.txt; serving the policy's robots.txt as it was");
            state.merge_error = Some(e);
            None
        }
    }
}

/// The `origin_robots` object of `/status`.
pub fn status_json(shared: &Shared) -> serde_json::Value {
    let snap = shared.snapshot.load();
    let settings = &snap.policy.settings().origin_robots;
    let state = lock(&shared.origin).clone();
    if settings.mode == OriginRobotsMode::Ignore {
        return serde_json::json!({"mode": "ignore"});
    }
    serde_json::json!({
        "mode": "merge",
        "refresh_seconds": settings.refresh.as_secs_f64(),
        "copy": state.copy.as_ref().map(|c| serde_json::json!({
            "status": c.status,
            "bytes": c.body.len(),
            "fetched_at": unix_seconds(c.fetched_at),
        })),
        "last_fetch": state.last_fetch.map(|(r, _)| r.as_str()),
        "last_fetch_at": state.last_fetch.map(|(_, at)| unix_seconds(at)),
        "last_error": state.last_error,
        "merge_error": state.merge_error,
        "origin_groups": state.taken.0,
        "origin_sitemaps": state.taken.1,
        "conflicts": state.conflicts,
    })
}

/// Age of the copy merged into the current snapshot, `None` when none is.
pub fn copy_age(shared: &Shared) -> Option<Duration> {
    let snap = shared.snapshot.load();
    if snap.policy.settings().origin_robots.mode == OriginRobotsMode::Ignore {
        return None;
    }
    let state = lock(&shared.origin);
    state.copy.as_ref().map(|c| SystemTime::now().duration_since(c.fetched_at).unwrap_or_default())
}

/// The first retry after a failed fetch while there is no copy yet.
const FIRST_RETRY: Duration = Duration::from_secs(1);

/// The wait before the next fetch and the backoff after it. With a copy,
/// `refresh`. Without one (a proxy started before its origin, as under
/// systemd or in a pod), `backoff` (1 s, doubling, at most `refresh`), so
/// the origin's groups are served and enforced soon after it comes up.
fn next_wait(have_copy: bool, backoff: Duration, refresh: Duration) -> (Duration, Duration) {
    if have_copy {
        (refresh, FIRST_RETRY)
    } else {
        let wait = backoff.min(refresh);
        (wait, wait.saturating_mul(2).min(refresh))
    }
}

/// How one fetch ended.
enum Fetched {
    /// A good copy (2xx or 4xx).
    Copy(OriginCopy),
    /// A failure: the last good copy stays.
    Failed(OriginFetch, String),
}

/// The background service that fetches and merges the origin's robots.txt.
pub struct OriginFetcher {
    shared: Arc<Shared>,
    connector: Connector,
}

impl OriginFetcher {
    /// Fetches for `shared`'s current policy.
    pub fn new(shared: Arc<Shared>) -> OriginFetcher {
        OriginFetcher { shared, connector: Connector::new(None) }
    }

    /// One fetch of `/robots.txt` from the next healthy upstream server.
    async fn fetch(&self, snap: &Snapshot, settings: &OriginRobotsSettings) -> Fetched {
        let Some((peer, addr)) = snap.upstream.peer() else {
            return Fetched::Failed(OriginFetch::Error, "no healthy upstream server".into());
        };
        let upstream = &snap.policy.settings().upstream;
        let host = match &settings.host {
            Some(h) => h.clone(),
            None if upstream.tls && !upstream.sni.is_empty() => upstream.sni.clone(),
            None => snap
                .upstream
                .health()
                .into_iter()
                .find(|(_, a, _)| *a == addr)
                .map_or_else(|| addr.to_string(), |(name, _, _)| name),
        };
        let base = sitemap_base(settings.host.as_deref(), upstream);
        match tokio::time::timeout(settings.timeout, self.get(&peer, &host, base)).await {
            Err(_) => Fetched::Failed(
                OriginFetch::Timeout,
                format!("no complete answer from {addr} within {:?}", settings.timeout),
            ),
            Ok(Err((result, e))) => Fetched::Failed(result, format!("{addr}: {e}")),
            Ok(Ok(copy)) => Fetched::Copy(copy),
        }
    }

    /// `GET /robots.txt` on `peer`, the body read up to the limit.
    async fn get(
        &self,
        peer: &pingora::upstreams::peer::HttpPeer,
        host: &str,
        base: Option<String>,
    ) -> Result<OriginCopy, (OriginFetch, String)> {
        let error = |e: Box<pingora::Error>| (OriginFetch::Error, e.to_string());
        let mut req = RequestHeader::build("GET", b"/robots.txt", Some(4)).map_err(error)?;
        req.insert_header("host", host).map_err(error)?;
        req.insert_header("user-agent", concat!("crawlgate/", env!("CARGO_PKG_VERSION"))).map_err(error)?;
        req.insert_header("accept-encoding", "identity").map_err(error)?;
        req.insert_header("connection", "close").map_err(error)?;
        let (mut session, _) = self.connector.get_http_session(peer).await.map_err(error)?;
        session.write_request_header(Box::new(req)).await.map_err(error)?;
        session.finish_request_body().await.map_err(error)?;
        let status = loop {
            session.read_response_header().await.map_err(error)?;
            let status = session.response_header().map_or(0, |h| h.status.as_u16());
            if !(100..200).contains(&status) {
                break status;
            }
        };
        let fetched_at = SystemTime::now();
        match status {
            200..=299 => {}
            400..=499 => return Ok(OriginCopy { body: Arc::from(Vec::new()), status, fetched_at, base }),
            other => return Err((OriginFetch::Status, format!("status {other}"))),
        }
        let too_large = || (OriginFetch::TooLarge, format!("body over {MAX_ROBOTS_TXT} bytes (500 KiB)"));
        let declared = session
            .response_header()
            .and_then(|h| h.headers.get("content-length"))
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<usize>().ok());
        if declared.is_some_and(|n| n > MAX_ROBOTS_TXT) {
            return Err(too_large());
        }
        let mut body = Vec::new();
        while let Some(chunk) = session.read_response_body().await.map_err(error)? {
            if body.len() + chunk.len() > MAX_ROBOTS_TXT {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(OriginCopy { body: Arc::from(body), status, fetched_at: SystemTime::now(), base })
    }
}

/// Records a fetch and, after a good one, merges the copy into the current
/// snapshot and swaps it in when the served bytes change. Blocking (a merge
/// compiles and renders a whole policy): run it off the async workers.
fn apply(shared: &Shared, fetched: Fetched) {
    let mut state = lock(&shared.origin);
    let now = SystemTime::now();
    let copy = match fetched {
        Fetched::Failed(result, e) => {
            shared.metrics.origin_robots_fetch(result);
            state.last_fetch = Some((result, now));
            let kept = if state.copy.is_some() { "the last good copy stays in use" } else { "no copy yet" };
            tracing::warn!(result = result.as_str(), error = %e, "Cannot fetch the origin's robots.txt; {kept}");
            state.last_error = Some(e);
            return;
        }
        Fetched::Copy(copy) => copy,
    };
    let result = if (200..300).contains(&copy.status) { OriginFetch::Ok } else { OriginFetch::Absent };
    shared.metrics.origin_robots_fetch(result);
    state.last_fetch = Some((result, now));
    state.last_error = None;
    state.copy = Some(copy.clone());
    let current = shared.snapshot.load_full();
    if current.policy.settings().origin_robots.mode != OriginRobotsMode::Merge {
        return;
    }
    let Some(next) = merged(&mut state, &current, &copy) else { return };
    if next.robots.body != current.robots.body {
        tracing::info!(
            status = copy.status,
            bytes = copy.body.len(),
            etag = %next.robots.etag,
            conflicts = state.conflicts.len(),
            "Merged a new copy of the origin's robots.txt"
        );
        let next = Arc::new(next);
        shared.snapshot.store(next.clone());
        shared.activity.bind(&next.policy, next.generation);
        shared.metrics.snapshot_changed(&next.policy);
    }
}

#[async_trait]
impl BackgroundService for OriginFetcher {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        let mut backoff = FIRST_RETRY;
        loop {
            let snap = self.shared.snapshot.load_full();
            let settings = snap.policy.settings().origin_robots.clone();
            let wait = if settings.mode == OriginRobotsMode::Merge {
                let fetched = self.fetch(&snap, &settings).await;
                drop(snap);
                let shared = self.shared.clone();
                if let Err(e) = tokio::task::spawn_blocking(move || apply(&shared, fetched)).await {
                    tracing::error!(error = %e, "Origin robots.txt merge task failed");
                }
                let have_copy = lock(&self.shared.origin).copy.is_some();
                let (wait, next) = next_wait(have_copy, backoff, settings.refresh);
                backoff = next;
                wait
            } else {
                // Checked again each second: a reload may turn merging on.
                Duration::from_secs(1)
            };
            tokio::select! {
                _ = shutdown.changed() => break,
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }
}

/// The site a relative `Sitemap` in the origin's file is resolved against:
/// `origin_host`, else `upstream.sni` under TLS, the names the operator
/// gave for the public site. Never the upstream server address, which would
/// publish an internal address in the served robots.txt; without a name
/// such a line is left out and reported, as before.
fn sitemap_base(origin_host: Option<&str>, upstream: &crawlgate_policy::UpstreamSettings) -> Option<String> {
    let scheme = if upstream.tls { "https" } else { "http" };
    let host = origin_host.or((upstream.tls && !upstream.sni.is_empty()).then_some(upstream.sni.as_str()))?;
    Some(format!("{scheme}://{host}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_sitemaps_resolve_only_against_a_named_host() {
        let upstream = |tls: bool, sni: &str| {
            let src = format!("[upstream]\nservers = [\"10.0.0.5:8443\"]\ntls = {tls}\nsni = \"{sni}\"\n");
            crawlgate_policy::load(&src, "p.toml").unwrap_or_else(|e| panic!("{e}")).policy.settings().upstream.clone()
        };
        assert_eq!(sitemap_base(None, &upstream(false, "")), None);
        assert_eq!(sitemap_base(None, &upstream(true, "www.example.org")).as_deref(), Some("https://www.example.org"));
        assert_eq!(
            sitemap_base(Some("site.example:8080"), &upstream(false, "")).as_deref(),
            Some("http://site.example:8080")
        );
        assert_eq!(sitemap_base(Some("a.example"), &upstream(true, "b.example")).as_deref(), Some("https://a.example"));
    }

    #[test]
    fn without_a_copy_fetches_back_off_from_one_second_to_refresh() {
        let refresh = Duration::from_secs(10);
        let mut backoff = FIRST_RETRY;
        let mut waits = Vec::new();
        for _ in 0..6 {
            let (wait, next) = next_wait(false, backoff, refresh);
            waits.push(wait.as_secs());
            backoff = next;
        }
        assert_eq!(waits, [1, 2, 4, 8, 10, 10]);
        // A copy: the refresh interval, and the backoff starts over.
        assert_eq!(next_wait(true, backoff, refresh), (refresh, FIRST_RETRY));
        // A refresh under a second caps the first retry too.
        let short = Duration::from_millis(300);
        assert_eq!(next_wait(false, FIRST_RETRY, short), (short, short));
    }
}
