//! The shared store of a crawlgate fleet: one async Redis (or Valkey)
//! client per process, used for what several instances must agree on.
//!
//! It owns the connections (one multiplexed connection kept by
//! [`Store::maintain`] and replaced with backoff when it fails, plus one
//! per tokio runtime that calls the store, see [`Store::connect`]), the
//! per-call time budget, the up/down state with one log line per change,
//! and three uses of Redis:
//! - the GCRA step of a rate limit, as one server-side Lua script run with
//!   EVALSHA and timed by the server's own clock ([`Store::gcra`]);
//! - a set-once key with a time to live, for a replay cache shared across
//!   instances ([`Store::seen_once`]);
//! - per-minute fleet counters that every instance adds to and any
//!   instance reads back ([`Store::fleet_publish`], [`Store::fleet_read`]).
//!
//! It does not decide anything: which key a request is limited by, what to
//! do when the store fails (the caller falls back to its in-process store)
//! and which metrics to register belong to the caller, which reads
//! [`Store::is_up`] and [`Store::errors_total`].

mod fleet;
mod gcra;

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::{ArcSwap, ArcSwapOption};
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Client, ErrorKind, RedisError};
use tokio::runtime::{Handle, Id as RuntimeId};
use tokio::sync::Notify;

pub use fleet::{FleetCount, FleetView, MinuteCounts, FLEET_TTL_SECS, REPORTING_SECS};
pub use gcra::{Gcra, GcraAnswer, GCRA_SCRIPT, MAX_BATCH};

/// The per-call time budget when the configuration names none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(5);
/// The key prefix when the configuration names none.
pub const DEFAULT_PREFIX: &str = "crawlgate:";
/// How long one connection attempt may take (TCP, TLS, AUTH, SELECT and
/// the script load).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// The budget of calls off the request path (fleet counters).
const BACKGROUND_TIMEOUT: Duration = Duration::from_secs(2);
/// The first and the longest wait between reconnection attempts.
const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);
/// The first and the longest wait before a runtime whose own connection
/// failed to open tries again (meanwhile it uses the maintained one).
const RUNTIME_RETRY_MIN: Duration = Duration::from_secs(1);
const RUNTIME_RETRY_MAX: Duration = Duration::from_secs(60);
/// Calls in a row past their budget before the store counts as down: one
/// slow answer under load is that request's alone.
const TIMEOUTS_BEFORE_DOWN: u32 = 3;
/// How many times a call whose budget ran out yields to its runtime's other
/// tasks, polling its answer after each, before it counts as late.
const YIELDS_PAST_BUDGET: u32 = 2;

/// Runs `fut` until `deadline`; `None` past it.
///
/// A runtime that was busy or not scheduled handles an expired timer and
/// the socket's answer in the same turn, and may run the timer's task
/// first: the answer is then read, but by a task that has not run yet (the
/// connection's driver, a batch's caller). So when the timer fires, the
/// future is polled again after yielding to those tasks, a bounded number
/// of times, and only then counts as late: a check is decided locally
/// because Redis or the network was slow, not because this process was.
pub(crate) async fn within<F: std::future::Future>(deadline: tokio::time::Instant, fut: F) -> Option<F::Output> {
    let mut fut = std::pin::pin!(fut);
    if let Ok(out) = tokio::time::timeout_at(deadline, fut.as_mut()).await {
        return Some(out);
    }
    for _ in 0..YIELDS_PAST_BUDGET {
        tokio::task::yield_now().await;
        if let std::task::Poll::Ready(out) =
            std::future::poll_fn(|cx| std::task::Poll::Ready(fut.as_mut().poll(cx))).await
        {
            return Some(out);
        }
    }
    None
}

/// The store's state as `/status` reports it ([`Store::health`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Health {
    /// `host:port` of the server (no credentials).
    pub target: String,
    /// The last connection attempt or call succeeded.
    pub up: bool,
    /// When it last went up or down (Unix seconds); `None` before the
    /// first connection attempt finished.
    pub since: Option<u64>,
    /// The error that last took it down, kept after it came back.
    pub last_error: Option<String>,
}

/// What a store is built from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreConfig {
    /// `redis://[[user]:password@]host[:port][/db]`, `rediss://` for TLS
    /// (`#insecure` skips certificate checks), `valkey://`/`valkeys://`
    /// alike, or `redis+unix:///path?db=N`.
    pub url: String,
    /// Put before every key, so several programs can share one Redis.
    pub key_prefix: String,
    /// The longest a request-path call ([`Store::gcra`],
    /// [`Store::seen_once`]) may take before it counts as failed.
    pub timeout: Duration,
}

impl StoreConfig {
    /// A configuration with the default prefix and budget.
    pub fn new(url: impl Into<String>) -> StoreConfig {
        StoreConfig { url: url.into(), key_prefix: DEFAULT_PREFIX.to_string(), timeout: DEFAULT_TIMEOUT }
    }
}

/// Why a store call failed. Every one means "answer locally".
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The URL does not parse or names something the client cannot do.
    #[error("invalid shared store URL {url:?}: {reason}")]
    Url {
        /// The URL, password removed.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The server refused the credentials in the URL.
    #[error(
        "Redis at {target} refused the password in the store URL (AUTH failed); \
         set the right one as redis://:PASSWORD@host:port/db"
    )]
    Auth {
        /// `host:port` of the server.
        target: String,
    },
    /// No answer within the budget.
    #[error("Redis at {target} did not answer within {budget:?}")]
    Timeout {
        /// `host:port` of the server.
        target: String,
        /// The budget that ran out.
        budget: Duration,
    },
    /// The store is down and being reconnected; the call was not tried.
    #[error("Redis at {target} is down (reconnecting)")]
    Down {
        /// `host:port` of the server.
        target: String,
    },
    /// Anything else the client or the server reported.
    #[error("Redis at {target}: {source}")]
    Redis {
        /// `host:port` of the server.
        target: String,
        /// The client's error.
        #[source]
        source: RedisError,
    },
}

/// The connection state, for the gauge and the once-per-change log line.
const UNKNOWN: u8 = 0;
const UP: u8 = 1;
const DOWN: u8 = 2;

/// A connection and the generation of the store's connection it belongs
/// to: every new maintained connection starts a generation, and the
/// runtimes' connections of an older one are no longer used.
struct Conn {
    conn: MultiplexedConnection,
    generation: u64,
    /// The runtime its driver task runs on (none outside a runtime).
    runtime: Option<RuntimeId>,
}

/// A runtime's own connection for one generation: `None` while it is
/// being opened, and after opening it failed; that runtime's calls then use
/// the maintained connection, and the first call past `retry_at` tries
/// again (backoff from [`RUNTIME_RETRY_MIN`] to [`RUNTIME_RETRY_MAX`]).
#[derive(Clone)]
struct RuntimeSlot {
    runtime: RuntimeId,
    generation: u64,
    conn: Option<Arc<Conn>>,
    /// Failed attempts so far.
    failures: u32,
    /// Set after a failed attempt: when the next may start.
    retry_at: Option<Instant>,
}

impl RuntimeSlot {
    fn is(&self, runtime: RuntimeId, generation: u64) -> bool {
        self.runtime == runtime && self.generation == generation
    }

    /// Whether a call may start an attempt now.
    fn due(&self) -> bool {
        self.conn.is_none() && self.retry_at.is_some_and(|at| Instant::now() >= at)
    }
}

struct Inner {
    client: Client,
    /// `host:port` (or the socket path), never the password.
    target: String,
    prefix: String,
    timeout: Duration,
    /// The connection [`Store::maintain`] (or [`Store::connect`]) made;
    /// its generation is the store's.
    conn: ArcSwapOption<Conn>,
    /// A slot per other runtime that called the store, of the current
    /// generation, so each runtime makes at most one attempt per
    /// generation (a new generation drops the older slots).
    runtime_conns: ArcSwap<Vec<RuntimeSlot>>,
    state: AtomicU8,
    /// When `state` last changed (Unix seconds; 0 before the first change).
    changed_at: AtomicU64,
    /// The error that last marked the store down, for `/status`.
    last_error: std::sync::Mutex<Option<String>>,
    errors: AtomicU64,
    /// Timeouts in a row on the current connection (any answer resets it).
    timeouts: AtomicU32,
    /// Woken when a call finds the connection broken.
    broken: Notify,
    gcra: redis::Script,
    /// The keys with a GCRA call in flight and the checks waiting for it.
    batches: gcra::Batches,
}

/// A handle on the shared store; cheap to clone, usable from any task.
///
/// A new store is not connected: [`Store::connect`] makes the first
/// connection and [`Store::maintain`] keeps one (and makes the first one
/// too), so calls before then fail with [`StoreError::Down`].
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("target", &self.inner.target).field("up", &self.is_up()).finish()
    }
}

impl Store {
    /// Checks the URL; no I/O.
    pub fn new(config: StoreConfig) -> Result<Store, StoreError> {
        let StoreConfig { url, key_prefix, timeout } = config;
        let client =
            Client::open(url.as_str()).map_err(|e| StoreError::Url { url: redact(&url), reason: e.to_string() })?;
        let target = client.get_connection_info().addr().to_string();
        Ok(Store {
            inner: Arc::new(Inner {
                client,
                target,
                prefix: key_prefix,
                timeout,
                conn: ArcSwapOption::empty(),
                runtime_conns: ArcSwap::from_pointee(Vec::new()),
                state: AtomicU8::new(UNKNOWN),
                changed_at: AtomicU64::new(0),
                last_error: std::sync::Mutex::new(None),
                errors: AtomicU64::new(0),
                timeouts: AtomicU32::new(0),
                broken: Notify::new(),
                gcra: redis::Script::new(GCRA_SCRIPT),
                batches: Default::default(),
            }),
        })
    }

    /// `host:port` of the server (no credentials), for messages.
    pub fn target(&self) -> &str {
        &self.inner.target
    }

    /// The key prefix.
    pub fn prefix(&self) -> &str {
        &self.inner.prefix
    }

    /// Whether the last connection attempt or call succeeded: the value of
    /// the `crawlgate_limits_store_up` gauge.
    pub fn is_up(&self) -> bool {
        self.inner.state.load(Ordering::Relaxed) == UP
    }

    /// The store's state for `/status`: up or not, since when, and the
    /// error that last took it down (kept after it came back).
    pub fn health(&self) -> Health {
        let since = self.inner.changed_at.load(Ordering::Relaxed);
        Health {
            target: self.inner.target.clone(),
            up: self.is_up(),
            since: (since > 0).then_some(since),
            last_error: self.inner.last_error.lock().unwrap_or_else(|e| e.into_inner()).clone(),
        }
    }

    /// Calls that failed or were not tried because the store was down:
    /// the value of `crawlgate_limits_store_errors_total`.
    pub fn errors_total(&self) -> u64 {
        self.inner.errors.load(Ordering::Relaxed)
    }

    /// One connection attempt: connect (with the URL's credentials and
    /// database), load the GCRA script, and make the result the store's
    /// connection. On failure the store is down and the error says why (a
    /// refused password is [`StoreError::Auth`]).
    ///
    /// The connection's driver task runs on the calling runtime. A call
    /// made on another runtime (Pingora runs each service on its own)
    /// would cross to that runtime's thread and back for every command, so
    /// the first call from another runtime opens a connection there in the
    /// background (and uses this one until it is ready); every new
    /// connection made here replaces those too.
    pub async fn connect(&self) -> Result<(), StoreError> {
        match self.try_connect().await {
            Ok(conn) => {
                let generation = self.generation() + 1;
                let runtime = Handle::try_current().ok().map(|h| h.id());
                self.inner.conn.store(Some(Arc::new(Conn { conn, generation, runtime })));
                // The older generations' connections closed; a slot the
                // new one has opened already kept.
                self.inner
                    .runtime_conns
                    .rcu(|slots| slots.iter().filter(|s| s.generation == generation).cloned().collect::<Vec<_>>());
                self.inner.timeouts.store(0, Ordering::Relaxed);
                self.set_state(UP, None);
                Ok(())
            }
            Err(e) => {
                self.set_state(DOWN, Some(&e));
                Err(e)
            }
        }
    }

    /// The generation of the maintained connection (0 before the first).
    fn generation(&self) -> u64 {
        self.inner.conn.load().as_ref().map_or(0, |c| c.generation)
    }

    async fn try_connect(&self) -> Result<MultiplexedConnection, StoreError> {
        // No response timeout of the client's own: every call has its
        // budget here (one timer per call, not two), and the whole attempt
        // is bounded below.
        let config =
            AsyncConnectionConfig::new().set_connection_timeout(Some(CONNECT_TIMEOUT)).set_response_timeout(None);
        let attempt = async {
            let mut conn = self.inner.client.get_multiplexed_async_connection_with_config(&config).await?;
            self.inner.gcra.prepare_invoke().load_async(&mut conn).await?;
            Ok::<_, RedisError>(conn)
        };
        match tokio::time::timeout(CONNECT_TIMEOUT, attempt).await {
            Ok(Ok(conn)) => Ok(conn),
            Ok(Err(e)) => Err(self.error(e)),
            Err(_) => Err(StoreError::Timeout { target: self.inner.target.clone(), budget: CONNECT_TIMEOUT }),
        }
    }

    /// Keeps the store connected until the future is dropped: connects
    /// now if not up, and again with exponential backoff (100 ms to 5 s)
    /// whenever a call finds the connection broken. Run it on a runtime
    /// that lives as long as the store is used: the connection's driver
    /// task runs there.
    pub async fn maintain(&self) {
        let mut backoff = BACKOFF_MIN;
        loop {
            if self.is_up() {
                self.inner.broken.notified().await;
                if self.is_up() {
                    continue;
                }
                backoff = BACKOFF_MIN;
            }
            if self.connect().await.is_ok() {
                backoff = BACKOFF_MIN;
                continue;
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(BACKOFF_MAX);
        }
    }

    /// Records a state, logging once per change.
    fn set_state(&self, new: u8, why: Option<&StoreError>) {
        if let Some(why) = why {
            *self.inner.last_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(why.to_string());
        }
        let old = self.inner.state.swap(new, Ordering::Relaxed);
        if old == new {
            return;
        }
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        self.inner.changed_at.store(now, Ordering::Relaxed);
        let target = self.inner.target.as_str();
        match (new, why) {
            (UP, _) => tracing::info!(store = target, "Shared store is up; rate limits are shared"),
            (_, Some(StoreError::Auth { .. })) => tracing::error!(
                store = target,
                error = %why.map(ToString::to_string).unwrap_or_default(),
                "Shared store refused the password; rate limits are per instance until it is fixed"
            ),
            _ => tracing::warn!(
                store = target,
                error = %why.map(ToString::to_string).unwrap_or_default(),
                "Shared store is down; rate limits are per instance until it is back"
            ),
        }
    }

    /// Marks the connection `used` broken: down, logged once, and the
    /// maintaining task woken to reconnect (which replaces every runtime's
    /// connection too). A call that failed on a connection already
    /// replaced changes nothing.
    fn broken(&self, used: &Conn, why: &StoreError) {
        if used.generation != self.generation() {
            return;
        }
        self.set_state(DOWN, Some(why));
        self.inner.broken.notify_one();
    }

    /// Counts a call that ran past its budget: the store is marked down
    /// only after [`TIMEOUTS_BEFORE_DOWN`] in a row, so one slow answer
    /// under load (that request is decided locally) does not send every
    /// following request to the local store and log a state change.
    fn timed_out(&self, used: &Conn, why: &StoreError) {
        if self.inner.timeouts.fetch_add(1, Ordering::Relaxed) + 1 >= TIMEOUTS_BEFORE_DOWN {
            self.broken(used, why);
        }
    }

    fn error(&self, source: RedisError) -> StoreError {
        let target = self.inner.target.clone();
        if source.kind() == ErrorKind::AuthenticationFailed
            || source.code().is_some_and(|c| c == "WRONGPASS" || c == "NOAUTH")
        {
            StoreError::Auth { target }
        } else {
            StoreError::Redis { target, source }
        }
    }

    /// Runs one call on the current connection within `budget`; a timeout
    /// or a connection-level error marks the store down. A failure counts
    /// in [`Store::errors_total`].
    async fn call<T, F, Fut>(&self, budget: Duration, f: F) -> Result<T, StoreError>
    where
        F: FnOnce(MultiplexedConnection) -> Fut,
        Fut: std::future::Future<Output = Result<T, RedisError>>,
    {
        let result = self.attempt(budget, f).await;
        if result.is_err() {
            self.inner.errors.fetch_add(1, Ordering::Relaxed);
        }
        result
    }

    /// [`Store::call`] without counting the failure: for a call made on
    /// behalf of several checks, whose caller counts the checks it failed.
    async fn attempt<T, F, Fut>(&self, budget: Duration, f: F) -> Result<T, StoreError>
    where
        F: FnOnce(MultiplexedConnection) -> Fut,
        Fut: std::future::Future<Output = Result<T, RedisError>>,
    {
        let Some(used) = self.connection() else {
            return Err(StoreError::Down { target: self.inner.target.clone() });
        };
        // A caller may bound the call with its own timeout of the same
        // length and drop it first: the guard still counts the timeout.
        let conn = used.conn.clone();
        let mut guard = InFlight { store: self, used: &used, start: Instant::now(), budget, done: false };
        let result = within(tokio::time::Instant::now() + budget, f(conn)).await;
        guard.done = true;
        match result {
            Some(Ok(v)) => {
                self.inner.timeouts.store(0, Ordering::Relaxed);
                Ok(v)
            }
            Some(Err(e)) => {
                let connection_lost = e.is_io_error()
                    || e.is_connection_dropped()
                    || e.is_connection_refusal()
                    || e.is_timeout()
                    || e.is_unrecoverable_error();
                let err = self.error(e);
                if connection_lost || matches!(err, StoreError::Auth { .. }) {
                    self.broken(&used, &err);
                }
                Err(err)
            }
            None => {
                let err = StoreError::Timeout { target: self.inner.target.clone(), budget };
                self.timed_out(&used, &err);
                Err(err)
            }
        }
    }

    /// The connection for a call made now: this runtime's own when it has
    /// one of the current generation, else the maintained one (and this
    /// runtime's is opened in the background: once, and again with
    /// backoff after a failure); `None` while down. Takes no lock.
    fn connection(&self) -> Option<Arc<Conn>> {
        if !self.is_up() {
            return None;
        }
        let guard = self.inner.conn.load();
        let primary = guard.as_ref()?;
        let Ok(here) = Handle::try_current() else { return Some(Arc::clone(primary)) };
        let id = here.id();
        if primary.runtime != Some(id) {
            let slots = self.inner.runtime_conns.load();
            match slots.iter().find(|s| s.is(id, primary.generation)) {
                Some(RuntimeSlot { conn: Some(own), .. }) => return Some(Arc::clone(own)),
                Some(slot) if !slot.due() => {}
                _ => self.open_on(&here, id, primary.generation),
            }
        }
        Some(Arc::clone(primary))
    }

    /// Opens a connection for runtime `id` in a task there, unless the
    /// slot for (`id`, `generation`) is taken (another call claimed it
    /// first, or its retry is not due) or `generation` is no longer the
    /// store's; until it is ready, or if it fails, that runtime's calls use
    /// the maintained connection.
    fn open_on(&self, here: &Handle, id: RuntimeId, generation: u64) {
        // A generation read before a reconnection is stale: no slot for
        // it (it would drop the new generation's), and no attempt.
        // The closure may run more than once; the last run's is stored.
        let claimed = std::cell::Cell::new(false);
        self.inner.runtime_conns.rcu(|slots| {
            claimed.set(false);
            let own = slots.iter().find(|s| s.is(id, generation));
            if own.is_some_and(|s| !s.due()) || self.generation() != generation {
                return Vec::clone(slots);
            }
            let failures = own.map_or(0, |s| s.failures);
            let mut kept: Vec<RuntimeSlot> =
                slots.iter().filter(|s| s.generation == generation && s.runtime != id).cloned().collect();
            kept.push(RuntimeSlot { runtime: id, generation, conn: None, failures, retry_at: None });
            claimed.set(true);
            kept
        });
        if !claimed.get() {
            return;
        }
        let store = self.clone();
        here.spawn(async move {
            match store.try_connect().await {
                Ok(conn) => {
                    let conn = Arc::new(Conn { conn, generation, runtime: Some(id) });
                    // Into its slot; a slot gone (the store reconnected
                    // meanwhile) drops it.
                    store.update_slot(id, generation, |s| s.conn = Some(Arc::clone(&conn)));
                }
                Err(e) => {
                    tracing::debug!(
                        store = store.inner.target.as_str(),
                        error = %e,
                        "Shared store: no connection of this runtime's own; the maintained one is used"
                    );
                    store.update_slot(id, generation, |s| {
                        let wait = RUNTIME_RETRY_MIN.saturating_mul(1 << s.failures.min(16)).min(RUNTIME_RETRY_MAX);
                        s.failures = s.failures.saturating_add(1);
                        s.retry_at = Some(Instant::now() + wait);
                    });
                }
            }
        });
    }

    /// Applies `change` to the slot of (`id`, `generation`); a slot gone
    /// (the store reconnected meanwhile) is left gone.
    fn update_slot(&self, id: RuntimeId, generation: u64, change: impl Fn(&mut RuntimeSlot)) {
        self.inner.runtime_conns.rcu(|slots| {
            slots
                .iter()
                .map(|s| {
                    let mut s = s.clone();
                    if s.is(id, generation) {
                        change(&mut s);
                    }
                    s
                })
                .collect::<Vec<_>>()
        });
    }

    /// Records `key` (under `<prefix>replay:`) for `ttl` unless it is
    /// recorded already, in one atomic `SET NX PX`: `Ok(true)` when it was
    /// already there (seen before: a replay), `Ok(false)` when this call
    /// recorded it.
    pub async fn seen_once(&self, key: &str, ttl: Duration) -> Result<bool, StoreError> {
        let full = format!("{}replay:{key}", self.inner.prefix);
        let millis = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        let set: Option<String> = self
            .call(self.inner.timeout, |mut conn| async move {
                redis::cmd("SET").arg(&full).arg(1).arg("NX").arg("PX").arg(millis).query_async(&mut conn).await
            })
            .await?;
        Ok(set.is_none())
    }
}

/// A call under way: dropped unfinished once its budget has passed, it
/// counts as timed out.
struct InFlight<'a> {
    store: &'a Store,
    used: &'a Conn,
    start: Instant,
    budget: Duration,
    done: bool,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if !self.done && self.start.elapsed() >= self.budget {
            self.store.inner.errors.fetch_add(1, Ordering::Relaxed);
            let err = StoreError::Timeout { target: self.store.inner.target.clone(), budget: self.budget };
            self.store.timed_out(self.used, &err);
        }
    }
}

/// The URL with any password replaced by `***`, for messages.
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    match rest.rsplit_once('@') {
        Some((_, host)) => format!("{scheme}://***@{host}"),
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_hides_credentials() {
        assert_eq!(redact("redis://:pw@h:1/0"), "redis://***@h:1/0");
        assert_eq!(redact("redis://u:p@w@h:1"), "redis://***@h:1");
        assert_eq!(redact("redis://h:1"), "redis://h:1");
    }

    #[test]
    fn bad_urls_are_errors_that_hide_the_password() {
        let err = Store::new(StoreConfig::new("http://:secret@h:1/")).unwrap_err().to_string();
        assert!(err.starts_with("invalid shared store URL \"http://***@h:1/\": "), "{err}");
        assert!(!err.contains("secret"), "{err}");
        let err = Store::new(StoreConfig::new("redis://h:1/notanumber")).unwrap_err().to_string();
        assert!(err.starts_with("invalid shared store URL \"redis://h:1/notanumber\": "), "{err}");
    }

    #[test]
    fn a_new_store_is_down_and_answers_down_without_io() {
        let store = Store::new(StoreConfig::new("redis://127.0.0.1:1/")).unwrap();
        assert!(!store.is_up());
        assert_eq!(store.target(), "127.0.0.1:1");
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let err = rt.block_on(store.seen_once("k", Duration::from_secs(1))).unwrap_err();
        assert_eq!(err.to_string(), "Redis at 127.0.0.1:1 is down (reconnecting)");
        assert_eq!(store.errors_total(), 1);
        assert_eq!(store.health(), Health { target: "127.0.0.1:1".into(), up: false, since: None, last_error: None });
    }

    #[test]
    fn a_failed_connection_is_down_since_then_with_its_error() {
        let store = Store::new(StoreConfig::new("redis://127.0.0.1:1/")).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        assert!(rt.block_on(store.connect()).is_err());
        let health = store.health();
        assert!(!health.up);
        assert!(health.since.is_some_and(|s| s > 1_700_000_000), "{health:?}");
        let error = health.last_error.unwrap_or_default();
        assert!(error.starts_with("Redis at 127.0.0.1:1: "), "{error}");
    }
}
