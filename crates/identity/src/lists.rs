//! The published lists in use: loaded from the state directory at start,
//! refreshed in the background, swapped in atomically; a failed refresh
//! keeps the previous copy.
//!
//! Each distinct source (URL or file) is one list, shared by every token it
//! proves. The lists in use are one immutable snapshot behind an
//! [`ArcSwap`], so [`Lists::check`] takes no lock; a refresh builds a new
//! snapshot and swaps it in. A fetched list is persisted in the state
//! directory (one JSON file per URL holding the body and the time it was
//! fetched, written to a temporary file and renamed), so a restart without
//! network still verifies.
//!
//! Lists are fetched with `crawlgate_outbound`'s client, bounded in time
//! and size like every outbound request, but with two differences the
//! operator's own URLs ask for: plain http and any address are allowed,
//! and redirects are followed.

use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use arc_swap::ArcSwap;
use crawlgate_outbound::fetch::{FetchError, Options, Outbound, Reach, Refusal};
use sha2::{Digest, Sha256};

use crate::ranges::{IpPrefix, RangeTable};

/// The largest list body accepted (after content decoding).
pub const MAX_BODY: usize = 8 << 20;

/// How soon a source whose last refresh failed is tried again (or the
/// refresh interval, when that is shorter).
pub const RETRY_AFTER: Duration = Duration::from_secs(300);

/// Where one list comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListSource {
    /// Fetched over HTTP(S).
    Url(String),
    /// Read from a local file.
    File(PathBuf),
}

impl ListSource {
    /// The URL or the path, as shown in `/status` and evidence.
    pub fn name(&self) -> String {
        match self {
            ListSource::Url(u) => u.clone(),
            ListSource::File(p) => p.display().to_string(),
        }
    }
}

/// The lists' configuration (from the policy's `[verification]` table).
#[derive(Clone, Debug)]
pub struct ListsConfig {
    /// How often to refresh (default daily).
    pub refresh: Duration,
    /// Timeout of one fetch.
    pub fetch_timeout: Duration,
    /// Where fetched lists are persisted; `None` keeps them in memory only.
    pub state_dir: Option<PathBuf>,
    /// For each token (catalog spelling), the lists that prove it.
    pub agents: Vec<(String, Vec<ListSource>)>,
}

impl Default for ListsConfig {
    /// Daily refresh, a 10 s fetch timeout, no state directory, no agents.
    fn default() -> ListsConfig {
        ListsConfig {
            refresh: Duration::from_secs(24 * 60 * 60),
            fetch_timeout: Duration::from_secs(10),
            state_dir: None,
            agents: Vec::new(),
        }
    }
}

/// What the lists say about one address claiming one token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IpCheck {
    /// No list is configured for the token.
    NoSource,
    /// Lists are configured, none of the loaded ones contains the address,
    /// and at least one has not been loaded yet (so the address may still
    /// be listed).
    NotLoaded,
    /// The address is in this list's prefix.
    Match {
        /// The list (URL or path).
        source: Arc<str>,
        /// The prefix that contains the address.
        prefix: IpPrefix,
    },
    /// Every list of the token is loaded and none contains the address.
    NoMatch,
}

/// One list's state, for `/status` and metrics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListStatus {
    /// URL or path.
    pub source: String,
    /// Number of prefixes in use.
    pub prefixes: usize,
    /// Seconds since the copy in use was fetched (`None`: never loaded).
    pub age_secs: Option<u64>,
    /// The last refresh error, if the last attempt failed.
    pub last_error: Option<String>,
    /// Refresh attempts that failed (the previous copy was kept).
    pub failures: u64,
    /// Refreshes that swapped in a new copy.
    pub refreshes: u64,
}

/// The lists in use; cheap to clone and to query from any thread.
#[derive(Clone, Default)]
pub struct Lists {
    inner: Arc<Inner>,
}

/// One distinct source.
struct Entry {
    source: ListSource,
    /// `source.name()`, shared with every [`IpCheck::Match`].
    name: Arc<str>,
}

/// One source's state in a snapshot.
#[derive(Clone, Default)]
struct Slot {
    table: Option<Arc<RangeTable>>,
    fetched_at: Option<SystemTime>,
    last_error: Option<String>,
    /// When the last attempt failed; cleared by a success.
    failed_at: Option<Instant>,
    failures: u64,
    refreshes: u64,
}

#[derive(Default)]
struct Inner {
    refresh: Duration,
    state_dir: Option<PathBuf>,
    entries: Vec<Entry>,
    /// Token (ASCII lowercase) -> indexes into `entries`.
    tokens: HashMap<String, Vec<usize>>,
    /// One slot per entry, swapped whole.
    state: ArcSwap<Vec<Slot>>,
    /// Built only when some source is a URL; a build error is reported by
    /// every refresh of a URL.
    client: Option<Result<Outbound, String>>,
    /// Serializes refreshes, so a snapshot is never built from a stale one.
    refreshing: tokio::sync::Mutex<()>,
}

impl fmt::Debug for Lists {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.inner.entries.iter().map(|e| &*e.name).collect();
        f.debug_struct("Lists").field("sources", &names).finish_non_exhaustive()
    }
}

/// A persisted copy: the body as fetched and when.
#[derive(serde::Serialize, serde::Deserialize)]
struct Persisted {
    source: String,
    /// Seconds since the Unix epoch.
    fetched_at: u64,
    body: String,
}

impl Lists {
    /// Creates the lists and loads persisted copies from the state directory.
    pub fn new(config: ListsConfig) -> Lists {
        let ListsConfig { refresh, fetch_timeout, state_dir, agents } = config;
        let mut entries: Vec<Entry> = Vec::new();
        let mut tokens: HashMap<String, Vec<usize>> = HashMap::new();
        for (token, sources) in agents {
            let ids = tokens.entry(token.to_ascii_lowercase()).or_default();
            for source in sources {
                let id = match entries.iter().position(|e| e.source == source) {
                    Some(id) => id,
                    None => {
                        entries.push(Entry { name: source.name().into(), source });
                        entries.len() - 1
                    }
                };
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
        }
        let client = entries.iter().any(|e| matches!(e.source, ListSource::Url(_))).then(|| {
            let reach = Reach { allow_http: true, allow_private: true };
            let options = Options { follow_redirects: true, purpose: Some("IP list refresh"), ..Options::default() };
            Outbound::with_options(reach, fetch_timeout, options).map_err(|e| e.to_string())
        });
        let slots = entries.iter().map(|e| initial_slot(e, state_dir.as_deref())).collect();
        Lists {
            inner: Arc::new(Inner {
                refresh,
                state_dir,
                entries,
                tokens,
                state: ArcSwap::from_pointee(slots),
                client,
                refreshing: tokio::sync::Mutex::new(()),
            }),
        }
    }

    /// What the lists say about `ip` claiming `token` (ASCII
    /// case-insensitive). Lock-free and allocation-free.
    pub fn check(&self, token: &str, ip: IpAddr) -> IpCheck {
        // Lowercased on the stack: no allocation per request. Tokens are
        // short (RFC 9309 product tokens); a longer one is in no list.
        let mut buf = [0u8; 64];
        let Some(lower) = buf.get_mut(..token.len()) else { return IpCheck::NoSource };
        lower.copy_from_slice(token.as_bytes());
        lower.make_ascii_lowercase();
        let Some(ids) = std::str::from_utf8(lower).ok().and_then(|t| self.inner.tokens.get(t)) else {
            return IpCheck::NoSource;
        };
        if ids.is_empty() {
            return IpCheck::NoSource;
        }
        let state = self.inner.state.load();
        let mut all_loaded = true;
        for &id in ids {
            let Some(table) = state.get(id).and_then(|s| s.table.as_ref()) else {
                all_loaded = false;
                continue;
            };
            if let (Some(prefix), Some(entry)) = (table.lookup(ip), self.inner.entries.get(id)) {
                return IpCheck::Match { source: entry.name.clone(), prefix };
            }
        }
        // The address may be in a list not loaded yet: no proof either way.
        if all_loaded {
            IpCheck::NoMatch
        } else {
            IpCheck::NotLoaded
        }
    }

    /// Refreshes every list once (fetch, validate, persist, swap).
    pub async fn refresh_all(&self) {
        self.refresh_where(|_| true).await;
    }

    /// Refreshes every `refresh` interval until the task is dropped: at once
    /// for lists that are missing or older than the interval, then each list
    /// when its copy is `refresh` old; a list whose refresh failed is tried
    /// again after [`RETRY_AFTER`] (or `refresh`, if shorter).
    pub async fn run(self) {
        if self.inner.entries.is_empty() {
            return std::future::pending().await;
        }
        loop {
            let wait = {
                let state = self.inner.state.load();
                state.iter().map(|s| self.wait(s)).min().unwrap_or(self.inner.refresh)
            };
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
            self.refresh_where(|s| self.wait(s).is_zero()).await;
        }
    }

    /// Every list's state.
    pub fn status(&self) -> Vec<ListStatus> {
        let state = self.inner.state.load();
        let now = SystemTime::now();
        self.inner
            .entries
            .iter()
            .zip(state.iter())
            .map(|(e, s)| ListStatus {
                source: e.name.to_string(),
                prefixes: s.table.as_ref().map_or(0, |t| t.len()),
                age_secs: s.fetched_at.map(|t| now.duration_since(t).unwrap_or_default().as_secs()),
                last_error: s.last_error.clone(),
                failures: s.failures,
                refreshes: s.refreshes,
            })
            .collect()
    }

    /// How long until `slot` is due for a refresh.
    fn wait(&self, slot: &Slot) -> Duration {
        let refresh = self.inner.refresh;
        if let Some(failed) = slot.failed_at {
            return refresh.min(RETRY_AFTER).saturating_sub(failed.elapsed());
        }
        match slot.fetched_at {
            Some(t) => refresh.saturating_sub(SystemTime::now().duration_since(t).unwrap_or_default()),
            None => Duration::ZERO,
        }
    }

    /// Refreshes the lists whose slot passes `due`, all at once, and swaps
    /// the results in as one new snapshot.
    async fn refresh_where(&self, due: impl Fn(&Slot) -> bool) {
        let _one_at_a_time = self.inner.refreshing.lock().await;
        let current = self.inner.state.load_full();
        let mut tasks = tokio::task::JoinSet::new();
        for (id, slot) in current.iter().enumerate() {
            if due(slot) {
                let inner = self.inner.clone();
                tasks.spawn(async move { (id, inner.obtain(id).await) });
            }
        }
        if tasks.is_empty() {
            return;
        }
        let mut next: Vec<Slot> = current.as_ref().clone();
        // Lists that failed with no copy to keep: one line for all of them.
        let mut no_copy: Vec<String> = Vec::new();
        while let Some(joined) = tasks.join_next().await {
            let Ok((id, result)) = joined else { continue };
            let (Some(slot), Some(entry)) = (next.get_mut(id), self.inner.entries.get(id)) else { continue };
            match result {
                Ok(fresh) => {
                    tracing::info!(source = %entry.name, prefixes = fresh.table.len(), "IP list refreshed");
                    slot.table = Some(Arc::new(fresh.table));
                    slot.fetched_at = Some(fresh.fetched_at);
                    slot.failed_at = None;
                    slot.refreshes += 1;
                    slot.last_error = fresh.persist_error;
                    if let Some(e) = &slot.last_error {
                        tracing::warn!(source = %entry.name, error = %e, "IP list in use but not persisted");
                    }
                }
                Err(e) => {
                    if slot.table.is_some() {
                        tracing::warn!(source = %entry.name, error = %e, "IP list refresh failed; keeping the previous copy");
                    } else {
                        no_copy.push(format!("{}: {e}", entry.name));
                    }
                    slot.last_error = Some(e);
                    slot.failed_at = Some(Instant::now());
                    slot.failures += 1;
                }
            }
        }
        self.inner.state.store(Arc::new(next));
        if !no_copy.is_empty() {
            no_copy.sort();
            tracing::warn!(
                lists = no_copy.len(),
                errors = %no_copy.join("; "),
                retry_in_secs = self.inner.refresh.min(RETRY_AFTER).as_secs(),
                "IP lists could not be obtained and there is no copy of them yet: until one is, an address check against them proves nothing either way (/status shows each list)"
            );
        }
    }
}

/// A list obtained by a refresh.
struct Fresh {
    table: RangeTable,
    fetched_at: SystemTime,
    persist_error: Option<String>,
}

impl Inner {
    /// Fetches or reads source `id`, parses it and persists a fetched copy.
    async fn obtain(self: Arc<Self>, id: usize) -> Result<Fresh, String> {
        let entry = self.entries.get(id).ok_or_else(|| "no such source".to_string())?;
        match &entry.source {
            ListSource::File(path) => {
                let text = tokio::fs::read_to_string(path).await.map_err(|e| format!("cannot read the file: {e}"))?;
                let table = RangeTable::parse(&text).map_err(|e| format!("invalid list: {e}"))?;
                Ok(Fresh { table, fetched_at: SystemTime::now(), persist_error: None })
            }
            ListSource::Url(url) => {
                let client = match &self.client {
                    Some(Ok(c)) => c,
                    Some(Err(e)) => return Err(e.clone()),
                    None => return Err("no HTTP client".into()),
                };
                let body = fetch(client, url).await?;
                let table = RangeTable::parse(&body).map_err(|e| format!("invalid list: {e}"))?;
                let fetched_at = SystemTime::now();
                let persist_error = match &self.state_dir {
                    None => None,
                    Some(dir) => {
                        let path = dir.join(persisted_name(url));
                        let copy = Persisted { source: url.clone(), fetched_at: unix_secs(fetched_at), body };
                        let dir = dir.clone();
                        let written = tokio::task::spawn_blocking(move || write_atomically(&dir, &path, &copy)).await;
                        match written {
                            Ok(Ok(())) => None,
                            Ok(Err(e)) => Some(e),
                            Err(e) => Some(format!("cannot persist the list: {e}")),
                        }
                    }
                };
                Ok(Fresh { table, fetched_at, persist_error })
            }
        }
    }
}

/// GETs `url` with `outbound` (its scheme and address checked by its
/// [`Reach`]): only a 200, at most [`MAX_BODY`] bytes, UTF-8.
pub(crate) async fn fetch(outbound: &Outbound, url: &str) -> Result<String, String> {
    let response = outbound.get(url, "*/*", MAX_BODY).await.map_err(|e| match e {
        FetchError::Refused { why: Refusal::Scheme(_), .. } => "unsupported URL scheme (http or https only)".into(),
        FetchError::Refused { why, .. } => why.to_string(),
        FetchError::TooLarge { .. } => format!("body larger than {MAX_BODY} bytes"),
        FetchError::Failed { detail, .. } => format!("fetch failed: {detail}"),
        other => format!("fetch failed: {other}"),
    })?;
    if response.status != 200 {
        let status = http::StatusCode::from_u16(response.status).map_or(response.status.to_string(), |s| s.to_string());
        return Err(format!("unexpected HTTP status {status}"));
    }
    String::from_utf8(response.body).map_err(|_| "body is not UTF-8".to_string())
}

/// A source's state at start: a local file is read, a URL's persisted
/// copy is loaded from the state directory.
fn initial_slot(entry: &Entry, state_dir: Option<&Path>) -> Slot {
    let loaded = match &entry.source {
        ListSource::File(path) => std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the file: {e}"))
            .and_then(|text| RangeTable::parse(&text).map_err(|e| format!("invalid list: {e}")))
            .map(|table| Some((table, SystemTime::now()))),
        ListSource::Url(url) => match state_dir {
            None => Ok(None),
            Some(dir) => load_persisted(&dir.join(persisted_name(url)), url),
        },
    };
    match loaded {
        Ok(Some((table, fetched_at))) => {
            Slot { table: Some(Arc::new(table)), fetched_at: Some(fetched_at), ..Slot::default() }
        }
        Ok(None) => Slot::default(),
        Err(e) => {
            tracing::warn!(source = %entry.name, error = %e, "IP list not loaded at start");
            Slot { last_error: Some(e), ..Slot::default() }
        }
    }
}

/// The persisted copy of `url` at `path`: `Ok(None)` when there is none.
fn load_persisted(path: &Path, url: &str) -> Result<Option<(RangeTable, SystemTime)>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read the persisted copy {}: {e}", path.display())),
    };
    let bad = |what: String| format!("persisted copy {}: {what}", path.display());
    let copy: Persisted = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    if copy.source != url {
        return Err(bad(format!("holds {}", copy.source)));
    }
    let table = RangeTable::parse(&copy.body).map_err(|e| bad(format!("invalid list: {e}")))?;
    Ok(Some((table, UNIX_EPOCH + Duration::from_secs(copy.fetched_at))))
}

/// The state directory's file name for `url`: readable (the URL without
/// its scheme, other characters than `[A-Za-z0-9.-]` as `_`, at most 64)
/// and unique (the first 12 hex digits of the URL's SHA-256).
pub fn persisted_name(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let readable: String = rest
        .chars()
        .take(64)
        .map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c } else { '_' })
        .collect();
    let digest = Sha256::digest(url.as_bytes());
    let short: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
    format!("iplist-{readable}-{short}.json")
}

/// Writes `copy` to `path` through a temporary file in `dir` and a rename,
/// so a reader (or a crash) never sees half a file.
fn write_atomically(dir: &Path, path: &Path, copy: &Persisted) -> Result<(), String> {
    use std::io::Write;
    let fail = |what: &str, e: std::io::Error| format!("cannot persist the list to {}: {what}: {e}", path.display());
    std::fs::create_dir_all(dir).map_err(|e| fail("create the directory", e))?;
    let json = serde_json::to_vec(copy).map_err(|e| format!("cannot serialize the list: {e}"))?;
    let file_name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    // Unique per write, so two writers of one list never share a temporary.
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".{file_name}.{}-{n}.tmp", std::process::id()));
    let written = std::fs::File::create(&tmp)
        .and_then(|mut f| f.write_all(&json).and_then(|()| f.sync_all()))
        .map_err(|e| fail("write", e))
        .and_then(|()| std::fs::rename(&tmp, path).map_err(|e| fail("rename", e)));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

fn unix_secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn persisted_names_are_readable_and_distinct() {
        assert_eq!(
            persisted_name("https://developers.google.com/static/search/apis/ipranges/googlebot.json"),
            format!(
                "iplist-developers.google.com_static_search_apis_ipranges_googlebot.json-{}.json",
                &sha_hex("https://developers.google.com/static/search/apis/ipranges/googlebot.json")[..12]
            )
        );
        assert_ne!(persisted_name("http://a/b?x=1"), persisted_name("http://a/b?x=2"));
        let long = format!("https://example.com/{}", "x".repeat(500));
        assert!(persisted_name(&long).len() < 100);
    }

    fn sha_hex(s: &str) -> String {
        Sha256::digest(s.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn tokens_share_one_entry_per_source() {
        let a = ListSource::Url("https://example.com/a.json".into());
        let b = ListSource::Url("https://example.com/b.json".into());
        let lists = Lists::new(ListsConfig {
            agents: vec![
                ("One".into(), vec![a.clone(), b.clone()]),
                ("Two".into(), vec![b.clone(), b.clone()]),
                ("Three".into(), vec![]),
            ],
            ..ListsConfig::default()
        });
        assert_eq!(lists.inner.entries.len(), 2);
        assert_eq!(lists.inner.tokens["two"], vec![1]);
        let ip: IpAddr = "192.0.2.1".parse().unwrap();
        assert_eq!(lists.check("one", ip), IpCheck::NotLoaded);
        assert_eq!(lists.check("Three", ip), IpCheck::NoSource);
        assert_eq!(lists.check("Four", ip), IpCheck::NoSource);
        assert_eq!(lists.check("ONE", ip), IpCheck::NotLoaded);
        assert_eq!(lists.check(&"x".repeat(65), ip), IpCheck::NoSource);
        assert_eq!(lists.check("Dé", ip), IpCheck::NoSource);
        let status = lists.status();
        assert_eq!(status.len(), 2);
        assert_eq!(
            status[0],
            ListStatus {
                source: "https://example.com/a.json".into(),
                prefixes: 0,
                age_secs: None,
                last_error: None,
                failures: 0,
                refreshes: 0,
            }
        );
    }

    #[test]
    fn due_times() {
        let lists = Lists::new(ListsConfig { refresh: Duration::from_secs(3600), ..ListsConfig::default() });
        assert_eq!(lists.wait(&Slot::default()), Duration::ZERO);
        let fresh = Slot { fetched_at: Some(SystemTime::now()), ..Slot::default() };
        assert!(lists.wait(&fresh) > Duration::from_secs(3500));
        let old = Slot { fetched_at: Some(SystemTime::now() - Duration::from_secs(7200)), ..Slot::default() };
        assert_eq!(lists.wait(&old), Duration::ZERO);
        let failed = Slot { failed_at: Some(Instant::now()), ..fresh };
        let w = lists.wait(&failed);
        assert!(w <= RETRY_AFTER && w > RETRY_AFTER - Duration::from_secs(60), "{w:?}");
    }
}
