//! crawlgate-watch: when to reload a file that the process keeps loaded
//! (the policy, the TLS certificate and key).
//!
//! A file is watched through its directory and matched by name, so an
//! editor's save-by-rename, certbot's `live/` symlink swap and a
//! Kubernetes ConfigMap's `..data` swap are all seen; a burst of events
//! (write, rename, chmod) reloads once, 150 ms after the last event and at
//! most 1 s after the first; SIGHUP reloads at once. The events of other
//! files in the directory are dropped on the watcher's own thread and never
//! wake the runtime. What a reload does is the caller's.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use notify::{EventKind, RecursiveMode, Watcher as _};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio::sync::watch;
use tokio::time::Instant;

/// What asked for a reload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// A watched file changed on disk.
    File,
    /// SIGHUP.
    Sighup,
}

impl Trigger {
    /// Its name in log lines.
    pub const fn as_str(self) -> &'static str {
        match self {
            Trigger::File => "file",
            Trigger::Sighup => "sighup",
        }
    }
}

/// Catches SIGHUP from the start of the process: until a [`FileWatch`]
/// listens for it, a SIGHUP (a reload sent right after start, e.g. by a
/// service manager) would otherwise terminate the process, which is
/// SIGHUP's default action. The flag is set by any it caught; the handler
/// is registered once, however often this is called.
pub fn early_sighup() -> Arc<AtomicBool> {
    static FLAG: std::sync::OnceLock<Arc<AtomicBool>> = std::sync::OnceLock::new();
    FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        if let Err(e) = signal_hook::flag::register(signal_hook::consts::SIGHUP, flag.clone()) {
            eprintln!("crawlgate: cannot catch SIGHUP during startup: {e}");
        }
        flag
    })
    .clone()
}

type Events = notify::Result<notify::Event>;

/// A watch of some files and of SIGHUP, ready to run.
pub struct FileWatch {
    rx: UnboundedReceiver<Events>,
    watcher: Option<notify::RecommendedWatcher>,
    hup: Option<tokio::signal::unix::Signal>,
    debounce: Debounce,
}

impl FileWatch {
    /// Watches `files` (through their directories) and SIGHUP. A watch or
    /// signal that cannot be set up is logged, naming `what` (e.g. "the
    /// policy file"), and the rest still works. Call it inside the runtime.
    pub fn new(files: &[&Path], what: &str) -> FileWatch {
        let names: Vec<OsString> = files.iter().filter_map(|p| p.file_name().map(OsStr::to_os_string)).collect();
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Events>();
        let mut watcher = match notify::recommended_watcher(forward(names, tx)) {
            Ok(w) => Some(w),
            Err(e) => {
                tracing::error!(error = %e, "Cannot watch {what}; reload with SIGHUP");
                None
            }
        };
        if let Some(w) = watcher.as_mut() {
            let mut dirs: Vec<PathBuf> = files.iter().map(|p| watch_dir(p)).collect();
            dirs.dedup();
            for dir in dirs {
                if let Err(e) = w.watch(&dir, RecursiveMode::NonRecursive) {
                    tracing::error!(dir = %dir.display(), error = %e, "Cannot watch the directory of {what}; reload with SIGHUP");
                }
            }
        }
        let hup = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::error!(error = %e, "Cannot listen for SIGHUP (reload of {what})");
                None
            }
        };
        FileWatch { rx, watcher, hup, debounce: Debounce::default() }
    }

    /// Counts a change seen before the watch started (one made between the
    /// first load and now), so that it reloads without waiting for the next.
    pub fn changed_before_start(&mut self) {
        self.debounce.event(Instant::now());
    }

    /// Calls `reload` on each burst of file events (debounced) and on each
    /// SIGHUP, until `shutdown` changes.
    pub async fn run<F, Fut>(mut self, shutdown: &mut watch::Receiver<bool>, mut reload: F)
    where
        F: FnMut(Trigger) -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        let (rx, hup) = (&mut self.rx, &mut self.hup);
        let mut debounce = std::mem::take(&mut self.debounce);
        loop {
            tokio::select! {
                _ = shutdown.changed() => break,
                Some(res) = rx.recv() => match res {
                    Ok(_) => debounce.event(Instant::now()),
                    Err(e) => tracing::warn!(error = %e, "File watcher error"),
                },
                () = async { match debounce.due() { Some(at) => tokio::time::sleep_until(at).await, None => std::future::pending().await } } => {
                    debounce = Debounce::default();
                    reload(Trigger::File).await;
                }
                Some(()) = async { match hup.as_mut() { Some(h) => h.recv().await, None => std::future::pending().await } } => {
                    reload(Trigger::Sighup).await;
                }
            }
        }
        drop(self.watcher.take());
    }
}

/// The directory watched for `path`.
fn watch_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The watcher's event handler: passes on to `tx` the events that may
/// have changed one of the files `names` (see [`relevant`]) and errors.
/// It runs on the watcher's own thread, so the events of other files in
/// the directory (a ledger or state files written beside the policy)
/// never wake the runtime.
fn forward(names: Vec<OsString>, tx: UnboundedSender<Events>) -> impl notify::EventHandler {
    move |res: Events| {
        if let Ok(event) = &res {
            if !names.iter().any(|n| relevant(&event.kind, &event.paths, n)) {
                return;
            }
        }
        let _ = tx.send(res);
    }
}

/// Whether a file-system event in a watched directory may have changed the
/// file `file_name`. Reads (`Access(Open)`, `Access(Close(NoWrite))`) never
/// do; otherwise the event must name the file or a Kubernetes `..data`
/// entry.
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

/// Quiet time after the last file event before a reload: an editor's save
/// (write, rename, chmod) arrives as a burst of events.
const QUIET: Duration = Duration::from_millis(150);

/// The longest a change waits, however often the file keeps changing: a
/// file rewritten faster than [`QUIET`] still reloads this often.
const MAX_DELAY: Duration = Duration::from_secs(1);

/// Coalesces a burst of file events into one reload: due [`QUIET`] after
/// the last event, and no later than [`MAX_DELAY`] after the first.
#[derive(Debug, Default)]
struct Debounce {
    first: Option<Instant>,
    last: Option<Instant>,
}

impl Debounce {
    fn event(&mut self, now: Instant) {
        self.first.get_or_insert(now);
        self.last = Some(now);
    }

    /// When the pending reload is due, `None` when nothing is pending.
    fn due(&self) -> Option<Instant> {
        Some((self.last? + QUIET).min(self.first? + MAX_DELAY))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::{AccessKind, AccessMode, CreateKind, ModifyKind};

    #[test]
    fn a_burst_reloads_after_quiet_or_at_most_max_delay() {
        let t0 = Instant::now();
        let mut d = Debounce::default();
        assert_eq!(d.due(), None);
        d.event(t0);
        assert_eq!(d.due(), Some(t0 + QUIET));
        d.event(t0 + Duration::from_millis(100));
        assert_eq!(d.due(), Some(t0 + Duration::from_millis(250)));
        // Events every 100 ms forever: due at MAX_DELAY after the first.
        for i in 2..30 {
            d.event(t0 + Duration::from_millis(100 * i));
        }
        assert_eq!(d.due(), Some(t0 + MAX_DELAY));
    }

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

    #[test]
    fn a_file_in_the_current_directory_is_watched_there() {
        assert_eq!(watch_dir(Path::new("crawlgate.toml")), PathBuf::from("."));
        assert_eq!(watch_dir(Path::new("/etc/crawlgate/crawlgate.toml")), PathBuf::from("/etc/crawlgate"));
    }

    #[test]
    fn only_the_watched_files_events_and_errors_reach_the_runtime() {
        use notify::EventHandler as _;
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut handler = forward(vec!["cert.pem".into(), "key.pem".into()], tx);
        let modify = |path: &str| notify::Event::new(EventKind::Modify(ModifyKind::Any)).add_path(PathBuf::from(path));
        handler.handle_event(Ok(modify("/etc/crawlgate/ledger.sqlite-wal")));
        handler.handle_event(Ok(modify("/etc/crawlgate/key.pem")));
        handler.handle_event(Ok(notify::Event::new(EventKind::Access(AccessKind::Open(AccessMode::Any)))
            .add_path(PathBuf::from("/etc/crawlgate/cert.pem"))));
        handler.handle_event(Err(notify::Error::generic("queue overflow")));
        drop(handler);
        let got: Vec<String> = std::iter::from_fn(|| rx.try_recv().ok())
            .map(|r| match r {
                Ok(e) => format!("{:?}", e.paths),
                Err(e) => e.to_string(),
            })
            .collect();
        assert_eq!(got, ["[\"/etc/crawlgate/key.pem\"]", "queue overflow"]);
    }
}
