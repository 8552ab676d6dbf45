//! Hot reload: a background service that watches the policy file (through
//! its parent directory, following the file by name, so editors' rename
//! dance and Kubernetes' `..data` symlink swap are seen) and SIGHUP, and
//! swaps the snapshot with one `ArcSwap::store` after the whole policy has
//! compiled. A policy that fails changes nothing. A second background
//! service runs the upstream health checks.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use async_trait::async_trait;
use crawlgate_policy::ServerSettings;
use crawlgate_watch::{FileWatch, Trigger};
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;
use sha2::{Digest, Sha256};

use crate::state::{LoadError, Shared, Snapshot};
use crawlgate_telemetry::metrics::ReloadOutcome as Outcome;

/// Reloads the policy file into the shared state.
pub struct Reloader {
    shared: Arc<Shared>,
    path: PathBuf,
    /// The restart-only settings the process started with: what a reload
    /// compares with, so changing one and changing it back needs no restart.
    /// The payment ones change once, when a reload opens the ledger.
    started: std::sync::Mutex<Vec<(&'static str, String)>>,
}

/// Every restart-only setting of `policy`: the server's and verification's.
fn restart_settings(policy: &crawlgate_policy::Policy) -> Vec<(&'static str, String)> {
    let mut all = restart_only(&policy.settings().server);
    all.push(crate::verify::restart_only(policy));
    all.extend(crate::limits::restart_only(policy.limit_settings()));
    all.push(crate::payment::restart_only(policy));
    all
}

/// `started` with the payment settings of `policy`, whose ledger a
/// reload has just opened.
fn restart_settings_with_payment(
    started: &[(&'static str, String)],
    policy: &crawlgate_policy::Policy,
) -> Vec<(&'static str, String)> {
    let payment = [crate::payment::restart_only(policy)];
    started
        .iter()
        .map(|(k, v)| payment.iter().find(|(pk, _)| pk == k).cloned().unwrap_or_else(|| (*k, v.clone())))
        .collect()
}

/// The keys whose value in `file` differs from the value the process
/// `started` with.
fn restart_required(started: &[(&'static str, String)], file: &[(&'static str, String)]) -> Vec<String> {
    started.iter().zip(file).filter(|(a, b)| a.1 != b.1).map(|(a, _)| a.0.to_string()).collect()
}

/// Settings that only a restart applies, as `(key, value)` for comparison.
fn restart_only(s: &ServerSettings) -> Vec<(&'static str, String)> {
    vec![
        ("server.listen", format!("{:?}", s.listen)),
        ("server.h2c", s.h2c.to_string()),
        ("server.tls_listen", format!("{:?}", s.tls_listen)),
        ("server.tls_cert", format!("{:?}", s.tls_cert)),
        ("server.tls_key", format!("{:?}", s.tls_key)),
        ("server.admin", format!("{:?}", s.admin)),
        ("server.admin_auth_file", format!("{:?}", s.admin_auth_file)),
        ("server.threads", s.threads.to_string()),
        ("server.grace_period", format!("{:?}", s.grace_period)),
        ("server.client_idle_timeout", format!("{:?}", s.client_idle_timeout)),
        ("server.client_header_timeout", format!("{:?}", s.client_header_timeout)),
        ("server.client_body_timeout", format!("{:?}", s.client_body_timeout)),
        ("server.max_connections", s.max_connections.to_string()),
        ("server.proxy_protocol", s.proxy_protocol.to_string()),
        ("server.admin_header_timeout", format!("{:?}", s.admin_header_timeout)),
        ("server.admin_idle_timeout", format!("{:?}", s.admin_idle_timeout)),
        ("server.admin_connections_per_client", s.admin_connections_per_client.to_string()),
    ]
}

impl Reloader {
    /// A reloader for the policy at `path`.
    /// Call at start: the running policy's restart-only settings are those
    /// the process applied.
    pub fn new(shared: Arc<Shared>, path: PathBuf) -> Reloader {
        let started = restart_settings(&shared.snapshot.load().policy);
        Reloader { shared, path, started: std::sync::Mutex::new(started) }
    }

    /// Reads, compiles and (if it changed and is valid) swaps in the policy.
    /// Blocking (file read, DNS): run it off the async workers.
    pub fn reload(&self, trigger: Trigger) -> Outcome {
        let trigger = trigger.as_str();
        let started = Instant::now();
        let shared = &self.shared;
        let file = self.path.display().to_string();
        let source = match std::fs::read_to_string(&self.path) {
            Ok(s) => s,
            Err(source) => {
                let err = LoadError::Read { path: file.clone(), source };
                return self.fail(trigger, &err);
            }
        };
        let current = shared.snapshot.load_full();
        let hash = hex::encode(Sha256::digest(source.as_bytes()));
        if hash == current.policy.source_sha256() {
            shared.metrics.reload(Outcome::Unchanged);
            // The file is the running policy again (a bad edit was
            // reverted): an earlier failure no longer describes it.
            shared.with_status(|s| {
                s.last_error = None;
                s.last_error_at = None;
            });
            tracing::info!(
                trigger,
                outcome = Outcome::Unchanged.as_str(),
                generation = current.generation,
                sha256 = sha_prefix(&hash),
                "Policy file matches the running policy; nothing to reload"
            );
            return Outcome::Unchanged;
        }
        match Snapshot::build(&source, &file, current.generation + 1, Some(&current)) {
            Ok((snap, warnings)) => {
                for w in &warnings {
                    tracing::warn!(target: "crawlgate::policy", "{w}");
                }
                // The first policy that charges opened the ledger with its
                // snapshot (one that could not was refused above).
                if snap.handles.opened_ledger(&current.handles) {
                    shared.metrics.payment().init(&snap.policy);
                    let mut settings = self.started.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    *settings = restart_settings_with_payment(&settings, &snap.policy);
                }
                let restart = {
                    let settings = self.started.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    restart_required(&settings, &restart_settings(&snap.policy))
                };
                let generation = snap.generation;
                // Merged with the last good copy of the origin's robots.txt
                // when the policy asks for it.
                let snap = crate::origin::install(shared, snap);
                shared.metrics.policy_loaded(snap.generation, snap.loaded_at, &snap.policy, Some(&current.policy));
                shared.metrics.reload(Outcome::Success);
                shared.metrics.reload_duration(started.elapsed());
                let elapsed_ms = format!("{:.3}", started.elapsed().as_secs_f64() * 1000.0);
                if restart.is_empty() {
                    tracing::info!(trigger, outcome = Outcome::Success.as_str(), generation, sha256 = sha_prefix(&hash), elapsed_ms = %elapsed_ms, "Policy reloaded");
                } else {
                    tracing::warn!(
                        trigger,
                        outcome = Outcome::Success.as_str(),
                        generation,
                        sha256 = sha_prefix(&hash),
                        elapsed_ms = %elapsed_ms,
                        restart_required = %restart.join(", "),
                        "Policy reloaded; settings that apply only after a restart were changed, the rest of the change is live"
                    );
                }
                shared.with_status(|s| {
                    s.last_error = None;
                    s.last_error_at = None;
                    s.restart_required = restart;
                });
                Outcome::Success
            }
            Err(err) => self.fail(trigger, &err),
        }
    }

    /// Whether the file's content differs from the running policy's (an
    /// unreadable file counts as changed, so that its error is reported).
    fn file_changed(&self) -> bool {
        match std::fs::read(&self.path) {
            Ok(bytes) => hex::encode(Sha256::digest(&bytes)) != self.shared.snapshot.load().policy.source_sha256(),
            Err(_) => true,
        }
    }

    /// Reports a failed reload: each error on its own line (the
    /// diagnostics, with their positions), then one outcome line with
    /// their count.
    fn fail(&self, trigger: &str, err: &LoadError) -> Outcome {
        let error = err.to_string();
        for line in error.lines() {
            tracing::error!(target: "crawlgate::policy", trigger, "{line}");
        }
        let errors = match err {
            LoadError::Invalid(d) => d.0.len(),
            _ => 1,
        };
        tracing::error!(
            trigger,
            outcome = Outcome::Failure.as_str(),
            errors,
            generation = self.shared.snapshot.load().generation,
            "Policy reload failed; the running policy stays in force"
        );
        let error = error.as_str();
        self.shared.metrics.reload(Outcome::Failure);
        let shown = bounded_error(error);
        self.shared.with_status(|s| {
            s.last_error = Some(shown);
            s.last_error_at = Some(SystemTime::now());
        });
        Outcome::Failure
    }
}

/// The first 12 hex digits of a SHA-256, enough to tell policies apart
/// in a log line (`/status` has the whole hash).
fn sha_prefix(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

/// How much of a failed load's error text `/status` keeps: a policy with
/// thousands of errors would otherwise make every `/status` answer
/// megabytes long. The log has every line.
const STATUS_ERROR_LINES: usize = 50;
const STATUS_ERROR_BYTES: usize = 16 * 1024;

/// The first lines of `error` that fit the bounds above, followed by a
/// count of the lines left out.
fn bounded_error(error: &str) -> String {
    let total = error.lines().count();
    let mut out = String::new();
    let mut kept = 0;
    for line in error.lines().take(STATUS_ERROR_LINES) {
        if out.len() + line.len() + 1 > STATUS_ERROR_BYTES {
            break;
        }
        if kept > 0 {
            out.push('\n');
        }
        out.push_str(line);
        kept += 1;
    }
    if kept < total {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&format!("({} more lines in the log)", total - kept));
    }
    out
}

/// The background service that watches the policy file and SIGHUP.
pub struct Watcher {
    reloader: Arc<Reloader>,
    /// Set by a SIGHUP that arrived before this service listened for it
    /// ([`early_sighup`]).
    early_hup: Arc<AtomicBool>,
}

impl Watcher {
    /// Watches `reloader`'s file; `early_hup` is [`early_sighup`]'s flag.
    pub fn new(reloader: Reloader, early_hup: Arc<AtomicBool>) -> Watcher {
        Watcher { reloader: Arc::new(reloader), early_hup }
    }

    async fn reload(&self, trigger: Trigger) {
        let r = self.reloader.clone();
        if let Err(e) = tokio::task::spawn_blocking(move || r.reload(trigger)).await {
            tracing::error!(error = %e, "Policy reload task failed");
        }
    }
}

#[async_trait]
impl BackgroundService for Watcher {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        let mut watch = FileWatch::new(&[&self.reloader.path], "the policy file");
        // A change made between the first load and the start of the watch
        // would otherwise wait for the next one.
        if self.reloader.file_changed() {
            watch.changed_before_start();
        }
        // A SIGHUP before the watch listened was caught by the early
        // handler only (one after it reaches both, and costs an
        // `unchanged` reload).
        if self.early_hup.swap(false, Ordering::Relaxed) {
            self.reload(Trigger::Sighup).await;
        }
        watch.run(&mut shutdown, |t| self.reload(t)).await;
    }
}

/// The background service that health-checks the current upstream pool.
pub struct HealthChecker {
    shared: Arc<Shared>,
}

impl HealthChecker {
    /// Checks `shared`'s current pool.
    pub fn new(shared: Arc<Shared>) -> HealthChecker {
        HealthChecker { shared }
    }
}

#[async_trait]
impl BackgroundService for HealthChecker {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        loop {
            let snap = self.shared.snapshot.load_full();
            let interval = snap.policy.settings().upstream.health_check_interval;
            if !interval.is_zero() {
                snap.upstream.check_health().await;
                self.shared.metrics.upstream_health(&snap.upstream.health());
            }
            let wait = if interval.is_zero() { Duration::from_secs(1) } else { interval };
            drop(snap);
            tokio::select! {
                _ = shutdown.changed() => break,
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restart_is_required_for_what_differs_from_the_start() {
        let started = vec![("server.listen", "a".to_string()), ("server.threads", "2".to_string())];
        assert!(restart_required(&started, &started).is_empty());
        let changed = vec![("server.listen", "a".to_string()), ("server.threads", "4".to_string())];
        assert_eq!(restart_required(&started, &changed), ["server.threads"]);
    }

    #[test]
    fn status_errors_are_bounded() {
        assert_eq!(bounded_error("a\nb"), "a\nb");
        let many: Vec<String> = (0..120).map(|i| format!("f.toml:{i}:1: bad")).collect();
        let shown = bounded_error(&many.join("\n"));
        assert_eq!(shown.lines().count(), STATUS_ERROR_LINES + 1);
        assert!(shown.ends_with("\nf.toml:49:1: bad\n(70 more lines in the log)"), "{shown}");
        let long = "x".repeat(STATUS_ERROR_BYTES * 2);
        assert_eq!(bounded_error(&long), "(1 more lines in the log)");
    }
}
