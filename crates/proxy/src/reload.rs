//! Hot reload: a background service that watches the policy file (through
//! its parent directory, following the file by name, so editors' rename
//! dance and Kubernetes' `..data` symlink swap are seen) and SIGHUP, and
//! swaps the snapshot with one `ArcSwap::store` after the whole policy has
//! compiled. A policy that fails changes nothing. A second background
//! service runs the upstream health checks.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use async_trait::async_trait;
use crawlgate_policy::ServerSettings;
use notify::{EventKind, RecursiveMode};
use notify_debouncer_full::{new_debouncer, DebounceEventResult};
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;
use sha2::{Digest, Sha256};

use crate::state::{LoadError, Shared, Snapshot};

/// How a reload attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A new snapshot is live.
    Success,
    /// The file's content did not change.
    Unchanged,
    /// The running policy stays.
    Failure,
}

/// Reloads the policy file into the shared state.
pub struct Reloader {
    shared: Arc<Shared>,
    path: PathBuf,
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
        ("server.threads", s.threads.to_string()),
        ("server.grace_period", format!("{:?}", s.grace_period)),
        ("server.client_idle_timeout", format!("{:?}", s.client_idle_timeout)),
        ("server.client_header_timeout", format!("{:?}", s.client_header_timeout)),
        ("server.client_body_timeout", format!("{:?}", s.client_body_timeout)),
        ("server.max_connections", s.max_connections.to_string()),
    ]
}

impl Reloader {
    /// A reloader for the policy at `path`.
    pub fn new(shared: Arc<Shared>, path: PathBuf) -> Reloader {
        Reloader { shared, path }
    }

    /// Reads, compiles and (if it changed and is valid) swaps in the policy.
    /// Blocking (file read, DNS): run it off the async workers.
    pub fn reload(&self, trigger: &str) -> Outcome {
        let started = Instant::now();
        let shared = &self.shared;
        let file = self.path.display().to_string();
        let source = match std::fs::read_to_string(&self.path) {
            Ok(s) => s,
            Err(source) => {
                let err = LoadError::Read { path: file.clone(), source };
                return self.fail(trigger, &err.to_string());
            }
        };
        let current = shared.snapshot.load_full();
        let hash = hex::encode(Sha256::digest(source.as_bytes()));
        if hash == current.policy.source_sha256() {
            shared.metrics.reload("unchanged");
            tracing::debug!(trigger, "Policy file unchanged; nothing to reload");
            return Outcome::Unchanged;
        }
        match Snapshot::build(&source, &file, current.generation + 1, Some(&current)) {
            Ok((snap, warnings)) => {
                for w in &warnings {
                    tracing::warn!(target: "crawlgate::policy", "{w}");
                }
                let old = restart_only(&current.policy.settings().server);
                let new = restart_only(&snap.policy.settings().server);
                let restart: Vec<String> =
                    old.iter().zip(new.iter()).filter(|(a, b)| a.1 != b.1).map(|(a, _)| a.0.to_string()).collect();
                if !restart.is_empty() {
                    tracing::warn!(keys = ?restart, "Policy changed settings that apply only after a restart; the rest of the change is live");
                }
                let generation = snap.generation;
                let snap = Arc::new(snap);
                shared.snapshot.store(snap.clone());
                shared.metrics.policy_loaded(&snap, Some(&current));
                shared.metrics.reload("success");
                shared.metrics.reload_duration(started.elapsed());
                shared.with_status(|s| {
                    s.last_error = None;
                    s.last_error_at = None;
                    s.restart_required = restart;
                });
                tracing::info!(trigger, generation, sha256 = %hash, elapsed_ms = started.elapsed().as_secs_f64() * 1000.0, "Policy reloaded");
                Outcome::Success
            }
            Err(err) => self.fail(trigger, &err.to_string()),
        }
    }

    fn fail(&self, trigger: &str, error: &str) -> Outcome {
        for line in error.lines() {
            tracing::error!(target: "crawlgate::policy", trigger, "{line}");
        }
        tracing::error!(trigger, "Policy reload failed; the running policy stays in force");
        self.shared.metrics.reload("failure");
        self.shared.with_status(|s| {
            s.last_error = Some(error.to_string());
            s.last_error_at = Some(SystemTime::now());
        });
        Outcome::Failure
    }
}

/// Whether a file-system event in the policy's directory may have changed
/// the policy. Reads (`Access(Open)`, `Access(Close(NoWrite))`) never do;
/// otherwise the event must name the file or a Kubernetes `..data` entry.
fn relevant(kind: &EventKind, paths: &[PathBuf], file_name: &OsStr) -> bool {
    use notify::event::{AccessKind, AccessMode};
    let kind_ok = match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        EventKind::Create(_) | EventKind::Modify(_) | EventKind::Remove(_) | EventKind::Any | EventKind::Other => true,
    };
    kind_ok
        && paths.iter().any(|p| p.file_name().is_some_and(|n| n == file_name || n.to_string_lossy().starts_with("..")))
}

/// The background service that watches the policy file and SIGHUP.
pub struct Watcher {
    reloader: Arc<Reloader>,
}

impl Watcher {
    /// Watches `reloader`'s file.
    pub fn new(reloader: Reloader) -> Watcher {
        Watcher { reloader: Arc::new(reloader) }
    }

    async fn reload(&self, trigger: &'static str) {
        let r = self.reloader.clone();
        if let Err(e) = tokio::task::spawn_blocking(move || r.reload(trigger)).await {
            tracing::error!(error = %e, "Policy reload task failed");
        }
    }
}

fn watch_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

#[async_trait]
impl BackgroundService for Watcher {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        let path = self.reloader.path.clone();
        let Some(file_name) = path.file_name().map(OsStr::to_os_string) else {
            tracing::error!(path = %path.display(), "Policy path names no file; hot reload is off");
            return;
        };
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<DebounceEventResult>();
        let debouncer = new_debouncer(Duration::from_millis(150), None, move |res: DebounceEventResult| {
            let _ = tx.send(res);
        });
        let mut debouncer = match debouncer {
            Ok(d) => Some(d),
            Err(e) => {
                tracing::error!(error = %e, "Cannot start the file watcher; reload with SIGHUP");
                None
            }
        };
        if let Some(d) = debouncer.as_mut() {
            let dir = watch_dir(&path);
            if let Err(e) = d.watch(&dir, RecursiveMode::NonRecursive) {
                tracing::error!(dir = %dir.display(), error = %e, "Cannot watch the policy directory; reload with SIGHUP");
            }
        }
        let mut hup = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::error!(error = %e, "Cannot listen for SIGHUP");
                None
            }
        };
        loop {
            tokio::select! {
                _ = shutdown.changed() => break,
                Some(res) = rx.recv() => match res {
                    Ok(events) => {
                        if events.iter().any(|e| relevant(&e.kind, &e.paths, &file_name)) {
                            self.reload("file").await;
                        }
                    }
                    Err(errors) => for e in errors {
                        tracing::warn!(error = %e, "File watcher error");
                    },
                },
                Some(()) = async { match hup.as_mut() { Some(h) => h.recv().await, None => std::future::pending().await } } => {
                    self.reload("sighup").await;
                }
            }
        }
        drop(debouncer);
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
    use notify::event::{AccessKind, AccessMode, CreateKind, ModifyKind};

    #[test]
    fn reads_are_not_changes() {
        let f = OsStr::new("crawlgate.toml");
        let p = vec![PathBuf::from("/etc/crawlgate/crawlgate.toml")];
        assert!(!relevant(&EventKind::Access(AccessKind::Open(notify::event::AccessMode::Any)), &p, f));
        assert!(!relevant(&EventKind::Access(AccessKind::Close(AccessMode::Read)), &p, f));
        assert!(relevant(&EventKind::Access(AccessKind::Close(AccessMode::Write)), &p, f));
        assert!(relevant(&EventKind::Modify(ModifyKind::Any), &p, f));
    }

    #[test]
    fn only_the_file_or_kubernetes_data_counts() {
        let f = OsStr::new("crawlgate.toml");
        let create = EventKind::Create(CreateKind::File);
        assert!(!relevant(&create, &[PathBuf::from("/etc/crawlgate/other.toml")], f));
        assert!(!relevant(&create, &[PathBuf::from("/etc/crawlgate/crawlgate.toml~")], f));
        assert!(relevant(&create, &[PathBuf::from("/etc/crawlgate/..data")], f));
        assert!(relevant(&create, &[PathBuf::from("/etc/crawlgate/..2026_11_22_10_00_00.123")], f));
    }
}
