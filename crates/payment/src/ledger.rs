//! The ledger: every charge as one durable row in a SQLite file (WAL
//! journal, `synchronous = FULL`), written by one writer thread that
//! commits whatever requests are waiting as one transaction, so that one
//! fsync serves many concurrent charges.
//!
//! Durability rule: [`Ledger::record`] returns only after the row's
//! transaction committed; the proxy sends `crawler-charged` only after it
//! returned `Ok`. A crash loses no charge a crawler was told about; a
//! charge whose commit did not finish was never announced (the crawler
//! got a 500 `InternalError`, or its connection died with the process).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, NaiveDate, NaiveTime, SecondsFormat, Utc};
use rusqlite::{params, Connection, OpenFlags};
use tokio::sync::{mpsc, oneshot};

/// Most records committed in one transaction.
const MAX_BATCH: usize = 512;

/// Charges waiting for the writer; past this a charge waits to be queued.
const QUEUE: usize = 4096;

/// Under load, how long the writer waits for more charges to share a
/// commit (its fsync) with the first one waiting: measured with
/// `bench/charge-compare`, 1 ms cut the writer's CPU per charge by a
/// third; 4 ms cost throughput (docs/performance.md).
const GROUP_WINDOW: Duration = Duration::from_millis(1);

/// How long byte counts wait for charges to commit with before they are
/// committed alone.
const BYTES_DELAY: Duration = Duration::from_secs(1);

/// How long a write waits for a lock another process holds before it
/// fails (the charge then fails with it).
const BUSY_TIMEOUT: Duration = Duration::from_millis(500);

/// One charge.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Record {
    /// When the charge was made, Unix milliseconds.
    pub time_ms: i64,
    /// The request's id (the access log's `id`).
    pub request_id: String,
    /// The agent's policy token.
    pub agent: String,
    /// Who paid: the verified key id (RFC 7638 thumbprint) or the license
    /// subject.
    pub subject: String,
    /// The canonical path and query charged.
    pub path: String,
    /// The amount in minor units of `currency`.
    pub amount_minor: u64,
    /// ISO 4217 code.
    pub currency: String,
    /// Digits of the currency's minor unit (2 for USD).
    pub exponent: u8,
    /// The dialect (`crawler-price`, `license`, `x402`).
    pub dialect: String,
    /// The settlement's reference (x402 transaction, RSL token id), if
    /// any.
    pub settlement: Option<String>,
    /// The response status.
    pub status: u16,
    /// Body bytes: the origin's Content-Length when the row is written,
    /// replaced by the bytes sent once the response ends.
    pub bytes: Option<u64>,
    /// The instance that charged.
    pub instance: String,
    /// Why the charge is void, on a void row: the response failed after
    /// its charge was committed (the origin stopped mid-body, the body
    /// could not be converted), so the row of the same `request_id` and
    /// `instance` is cancelled. Summaries net it out; exports show both.
    /// `None` on a charge.
    pub void: Option<String>,
}

/// Why the ledger failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LedgerError {
    /// SQLite refused (disk full, locked, read-only, corrupt).
    #[error("ledger {path}: {source}")]
    Sqlite {
        /// The file.
        path: String,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// The writer thread is gone.
    #[error("ledger writer stopped")]
    Stopped,
    /// Not a ledger, or a bad argument.
    #[error("{0}")]
    Invalid(String),
}

/// Where a charge waits for its row id (or why it was not recorded).
type Done = oneshot::Sender<Result<i64, String>>;

enum Msg {
    Insert(Box<Record>, Done),
    Bytes(i64, u64),
    Void(Box<Void>),
    /// Commit what is waiting now, byte counts included, then answer.
    Flush(oneshot::Sender<()>),
}

/// A void row to write: it copies the charge of row `id`, with the status
/// and bytes the failed response had, and the reason.
struct Void {
    id: i64,
    time_ms: i64,
    status: u16,
    bytes: u64,
    reason: String,
}

/// The ledger of one instance: cheap to clone, shared by every request.
#[derive(Clone)]
pub struct Ledger {
    tx: mpsc::Sender<Msg>,
    healthy: Arc<AtomicBool>,
    path: Arc<Path>,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS charges (
    id INTEGER PRIMARY KEY,
    time_ms INTEGER NOT NULL,
    request_id TEXT NOT NULL,
    agent TEXT NOT NULL,
    subject TEXT NOT NULL,
    path TEXT NOT NULL,
    amount_minor INTEGER NOT NULL,
    currency TEXT NOT NULL,
    exponent INTEGER NOT NULL,
    dialect TEXT NOT NULL,
    settlement TEXT,
    status INTEGER NOT NULL,
    bytes INTEGER,
    instance TEXT NOT NULL,
    void TEXT
);
CREATE INDEX IF NOT EXISTS charges_time ON charges (time_ms);
";

/// Adds the `void` column to a ledger written before void rows existed.
fn migrate(conn: &Connection, path: &Path) -> Result<(), LedgerError> {
    let has_void: bool = conn
        .query_row("SELECT count(*) FROM pragma_table_info('charges') WHERE name = 'void'", [], |r| r.get::<_, i64>(0))
        .map(|n| n > 0)
        .map_err(sqlite(path))?;
    if !has_void {
        conn.execute_batch("ALTER TABLE charges ADD COLUMN void TEXT;").map_err(sqlite(path))?;
    }
    Ok(())
}

fn sqlite(path: &Path) -> impl Fn(rusqlite::Error) -> LedgerError + '_ {
    move |source| LedgerError::Sqlite { path: path.display().to_string(), source }
}

/// Opens (creating) the ledger file for writing: WAL journal, full sync,
/// the schema.
fn open_writer(path: &Path) -> Result<Connection, LedgerError> {
    let conn = Connection::open(path).map_err(sqlite(path))?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(sqlite(path))?;
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)).map_err(sqlite(path))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(LedgerError::Invalid(format!("ledger {}: journal mode {mode}, not wal", path.display())));
    }
    // FULL: a commit is on disk when it returns, a power loss included.
    conn.execute_batch("PRAGMA synchronous = FULL;").map_err(sqlite(path))?;
    conn.execute_batch(SCHEMA).map_err(sqlite(path))?;
    migrate(&conn, path)?;
    Ok(conn)
}

impl Ledger {
    /// Opens the ledger at `path` (created if missing) and starts its
    /// writer thread. Fails when the file cannot be opened for writing.
    pub fn open(path: &Path) -> Result<Ledger, LedgerError> {
        let conn = open_writer(path)?;
        let (tx, rx) = mpsc::channel(QUEUE);
        let healthy = Arc::new(AtomicBool::new(true));
        let path: Arc<Path> = Arc::from(path);
        let writer = Writer { conn, rx, healthy: healthy.clone(), path: path.to_path_buf() };
        std::thread::Builder::new()
            .name("crawlgate-ledger".into())
            .spawn(move || writer.run())
            .map_err(|e| LedgerError::Invalid(format!("ledger writer thread: {e}")))?;
        Ok(Ledger { tx, healthy, path })
    }

    /// Records a charge and returns its row id once its transaction has
    /// committed; an error means it is not recorded and must not be
    /// announced.
    pub async fn record(&self, record: Record) -> Result<i64, LedgerError> {
        let (done, wait) = oneshot::channel();
        self.tx.send(Msg::Insert(Box::new(record), done)).await.map_err(|_| LedgerError::Stopped)?;
        match wait.await {
            Ok(Ok(id)) => Ok(id),
            Ok(Err(reason)) => Err(LedgerError::Invalid(format!("ledger {}: {reason}", self.path.display()))),
            Err(_) => Err(LedgerError::Stopped),
        }
    }

    /// Sets a recorded row's bytes to the body bytes actually sent, when
    /// the response has ended. Best effort: dropped when the queue is
    /// full; committed with the next charges, or alone a second later
    /// (never an fsync of its own per response).
    pub fn set_bytes(&self, id: i64, bytes: u64) {
        let _ = self.tx.try_send(Msg::Bytes(id, bytes));
    }

    /// Voids the charge of row `id` (as [`Ledger::record`] returned it):
    /// its response failed after the charge was committed, with `status`
    /// and `bytes` sent. The void row is committed at once, not awaited;
    /// a ledger that cannot write it logs the failure (the charge then
    /// stands: reconcile from the log).
    pub async fn void(&self, id: i64, status: u16, bytes: u64, reason: String) {
        let time_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(0));
        let void = Box::new(Void { id, time_ms, status, bytes, reason });
        if self.tx.send(Msg::Void(void)).await.is_err() {
            tracing::error!(ledger = %self.path.display(), row = id, "A failed response's charge could not be voided: the ledger writer stopped");
        }
    }

    /// Commits every byte count still waiting (they otherwise wait up to
    /// [`BYTES_DELAY`]) and returns when it is done: for a clean shutdown.
    pub async fn flush(&self) {
        let (done, wait) = oneshot::channel();
        if self.tx.send(Msg::Flush(done)).await.is_ok() {
            let _ = wait.await;
        }
    }

    /// Whether the last commit succeeded.
    pub fn healthy(&self) -> bool {
        self.healthy.load(Ordering::Relaxed)
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

struct Writer {
    conn: Connection,
    rx: mpsc::Receiver<Msg>,
    healthy: Arc<AtomicBool>,
    path: PathBuf,
}

/// What the writer has taken from the queue and not committed yet.
#[derive(Default)]
struct Batch {
    /// Charges, each with its waiting request.
    inserts: Vec<(Box<Record>, Done)>,
    /// Body byte counts of rows already committed: `(row, bytes)`.
    bytes: Vec<(i64, u64)>,
    /// Void rows.
    voids: Vec<Void>,
    /// Flushes answered once this batch is committed.
    flushes: Vec<oneshot::Sender<()>>,
}

impl Batch {
    fn take(&mut self, m: Msg) {
        match m {
            Msg::Insert(r, done) => self.inserts.push((r, done)),
            Msg::Bytes(id, n) => self.bytes.push((id, n)),
            Msg::Void(v) => self.voids.push(*v),
            Msg::Flush(done) => self.flushes.push(done),
        }
    }

    fn len(&self) -> usize {
        self.inserts.len() + self.bytes.len() + self.voids.len()
    }
}

impl Writer {
    fn run(mut self) {
        // A runtime of this thread alone, for a receive that can time out.
        let rt = match tokio::runtime::Builder::new_current_thread().enable_time().build() {
            Ok(rt) => rt,
            Err(e) => {
                tracing::error!(ledger = %self.path.display(), error = %e, "The ledger writer could not start; charging stops");
                self.healthy.store(false, Ordering::Relaxed);
                return;
            }
        };
        rt.block_on(self.serve());
    }

    /// Commits what is waiting, as soon as a charge waits: every charge
    /// that queued while the last commit ran goes into the next one, and
    /// under load those that come within [`GROUP_WINDOW`] after. Byte
    /// counts alone do not commit (each would cost an fsync): they ride
    /// with the next charges, or go in [`BYTES_DELAY`] after the oldest of them came.
    async fn serve(&mut self) {
        let mut batch = Batch::default();
        // When the oldest byte count waiting is due, whatever came after it.
        let mut bytes_due: Option<tokio::time::Instant> = None;
        // Charges in the last commit.
        let mut last_inserts = 0;
        loop {
            bytes_due = match bytes_due {
                _ if batch.bytes.is_empty() => None,
                None => Some(tokio::time::Instant::now() + BYTES_DELAY),
                due => due,
            };
            let next = match bytes_due {
                None => self.rx.recv().await,
                Some(due) => match tokio::time::timeout_at(due, self.rx.recv()).await {
                    Ok(m) => m,
                    Err(_) => {
                        self.commit(&mut batch);
                        continue;
                    }
                },
            };
            let Some(first) = next else { break };
            batch.take(first);
            self.drain(&mut batch);
            if last_inserts >= 2 && !batch.inserts.is_empty() && batch.len() < MAX_BATCH {
                // Under load (the last commit carried several charges)
                // more are on their way: they share this commit's fsync.
                // A lone charge does not wait.
                std::thread::sleep(GROUP_WINDOW);
                self.drain(&mut batch);
            }
            if !batch.inserts.is_empty()
                || !batch.voids.is_empty()
                || batch.len() >= MAX_BATCH
                || !batch.flushes.is_empty()
            {
                last_inserts = batch.inserts.len();
                self.commit(&mut batch);
            }
        }
        if batch.len() > 0 {
            self.commit(&mut batch);
        }
    }

    /// Takes what is queued into `batch`, up to [`MAX_BATCH`].
    fn drain(&mut self, batch: &mut Batch) {
        while batch.len() < MAX_BATCH {
            match self.rx.try_recv() {
                Ok(m) => batch.take(m),
                Err(_) => break,
            }
        }
    }

    /// Writes `batch` in one transaction (none when only flushes wait),
    /// answers every waiting charge with the outcome of its commit, then
    /// the flushes.
    fn commit(&mut self, batch: &mut Batch) {
        if batch.len() > 0 {
            self.write(batch);
        }
        for done in batch.flushes.drain(..) {
            let _ = done.send(());
        }
    }

    /// The transaction of [`Writer::commit`]; answers the charges.
    fn write(&mut self, batch: &mut Batch) {
        let result = (|| -> rusqlite::Result<Vec<i64>> {
            let tx = self.conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let mut ids = Vec::with_capacity(batch.inserts.len());
            {
                let mut insert = tx.prepare_cached(
                    "INSERT INTO charges (time_ms, request_id, agent, subject, path, amount_minor, currency, exponent, dialect, settlement, status, bytes, instance, void) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
                )?;
                for (r, _) in &batch.inserts {
                    insert.execute(params![
                        r.time_ms,
                        r.request_id,
                        r.agent,
                        r.subject,
                        r.path,
                        i64::try_from(r.amount_minor).unwrap_or(i64::MAX),
                        r.currency,
                        r.exponent,
                        r.dialect,
                        r.settlement,
                        r.status,
                        r.bytes.map(|b| i64::try_from(b).unwrap_or(i64::MAX)),
                        r.instance,
                        r.void,
                    ])?;
                    ids.push(tx.last_insert_rowid());
                }
                if !batch.bytes.is_empty() {
                    let mut bytes = tx.prepare_cached("UPDATE charges SET bytes = ?2 WHERE id = ?1")?;
                    for (id, n) in &batch.bytes {
                        bytes.execute(params![id, i64::try_from(*n).unwrap_or(i64::MAX)])?;
                    }
                }
                if !batch.voids.is_empty() {
                    let mut void = tx.prepare_cached(
                        "INSERT INTO charges (time_ms, request_id, agent, subject, path, amount_minor, currency, exponent, dialect, settlement, status, bytes, instance, void) \
                         SELECT ?2, request_id, agent, subject, path, amount_minor, currency, exponent, dialect, settlement, ?3, ?4, instance, ?5 FROM charges WHERE id = ?1 AND void IS NULL",
                    )?;
                    for v in &batch.voids {
                        let bytes = i64::try_from(v.bytes).unwrap_or(i64::MAX);
                        void.execute(params![v.id, v.time_ms, v.status, bytes, v.reason])?;
                    }
                }
            }
            tx.commit()?;
            Ok(ids)
        })();
        self.healthy.store(result.is_ok(), Ordering::Relaxed);
        let mut ids = match result {
            Ok(ids) => Ok(ids.into_iter()),
            Err(e) => {
                tracing::error!(ledger = %self.path.display(), error = %e, "The ledger could not commit; charging stops until it can");
                Err(e.to_string())
            }
        };
        batch.bytes.clear();
        batch.voids.clear();
        for (_, done) in batch.inserts.drain(..) {
            let answer = match &mut ids {
                Ok(it) => it.next().ok_or_else(|| "no row id".to_string()),
                Err(e) => Err(e.clone()),
            };
            let _ = done.send(answer);
        }
    }
}

/// A ledger opened for reading (`crawlgate ledger export` and `summary`).
pub struct Reader {
    conn: Connection,
}

/// One line of [`Reader::summary`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Summary {
    /// The UTC day, `YYYY-MM-DD`.
    pub day: String,
    /// The agent.
    pub agent: String,
    /// ISO 4217 code.
    pub currency: String,
    /// Digits of its minor unit.
    pub exponent: u8,
    /// How many charges.
    pub charges: u64,
    /// Their sum in minor units.
    pub amount_minor: u64,
}

impl Reader {
    /// Opens the ledger at `path` read-only.
    pub fn open(path: &Path) -> Result<Reader, LedgerError> {
        let conn =
            Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
                .map_err(sqlite(path))?;
        conn.busy_timeout(Duration::from_secs(5)).map_err(sqlite(path))?;
        Ok(Reader { conn })
    }

    /// Every charge from `since_ms` (Unix milliseconds) on, oldest first.
    pub fn export(&self, since_ms: i64) -> Result<Vec<Record>, LedgerError> {
        let mut stmt = self
            .conn
            .prepare(&format!("SELECT time_ms, request_id, agent, subject, path, amount_minor, currency, exponent, dialect, settlement, status, bytes, instance, {} FROM charges WHERE time_ms >= ?1 ORDER BY time_ms, id", self.void_column()))
            .map_err(|e| LedgerError::Invalid(e.to_string()))?;
        let rows = stmt
            .query_map([since_ms], |r| {
                Ok(Record {
                    time_ms: r.get(0)?,
                    request_id: r.get(1)?,
                    agent: r.get(2)?,
                    subject: r.get(3)?,
                    path: r.get(4)?,
                    amount_minor: u64::try_from(r.get::<_, i64>(5)?).unwrap_or(0),
                    currency: r.get(6)?,
                    exponent: r.get(7)?,
                    dialect: r.get(8)?,
                    settlement: r.get(9)?,
                    status: r.get(10)?,
                    bytes: r.get::<_, Option<i64>>(11)?.and_then(|b| u64::try_from(b).ok()),
                    instance: r.get(12)?,
                    void: r.get(13)?,
                })
            })
            .map_err(|e| LedgerError::Invalid(e.to_string()))?;
        rows.collect::<Result<_, _>>().map_err(|e| LedgerError::Invalid(e.to_string()))
    }

    /// The `void` column, or `NULL` for a ledger written before void rows
    /// existed (opened read-only, it is not migrated).
    fn void_column(&self) -> &'static str {
        let has = self
            .conn
            .query_row("SELECT count(*) FROM pragma_table_info('charges') WHERE name = 'void'", [], |r| {
                r.get::<_, i64>(0)
            })
            .is_ok_and(|n| n > 0);
        if has {
            "void"
        } else {
            "NULL"
        }
    }

    /// Charges and amounts per UTC day, agent and currency, from
    /// `since_ms` on, net of void rows (each cancels one charge).
    pub fn summary(&self, since_ms: i64) -> Result<Vec<Summary>, LedgerError> {
        let void = self.void_column();
        let mut stmt = self
            .conn
            .prepare(&format!("SELECT date(time_ms / 1000, 'unixepoch') AS day, agent, currency, max(exponent), sum(CASE WHEN {void} IS NULL THEN 1 ELSE -1 END), sum(CASE WHEN {void} IS NULL THEN amount_minor ELSE -amount_minor END) FROM charges WHERE time_ms >= ?1 GROUP BY day, agent, currency ORDER BY day, agent, currency"))
            .map_err(|e| LedgerError::Invalid(e.to_string()))?;
        let rows = stmt
            .query_map([since_ms], |r| {
                Ok(Summary {
                    day: r.get(0)?,
                    agent: r.get(1)?,
                    currency: r.get(2)?,
                    exponent: r.get(3)?,
                    charges: u64::try_from(r.get::<_, i64>(4)?).unwrap_or(0),
                    amount_minor: u64::try_from(r.get::<_, i64>(5)?).unwrap_or(0),
                })
            })
            .map_err(|e| LedgerError::Invalid(e.to_string()))?;
        rows.collect::<Result<_, _>>().map_err(|e| LedgerError::Invalid(e.to_string()))
    }
}

/// `amount_minor` as a decimal with `exponent` digits (`1` and 2: `0.01`).
pub fn decimal(amount_minor: u64, exponent: u8) -> String {
    if exponent == 0 {
        return amount_minor.to_string();
    }
    let div = 10u64.saturating_pow(u32::from(exponent));
    format!("{}.{:0w$}", amount_minor / div, amount_minor % div, w = usize::from(exponent))
}

/// Unix milliseconds as RFC 3339 UTC (`2026-11-25T18:04:05.120Z`); a
/// time past chrono's range (some 262,000 years) shows as its bound.
pub fn rfc3339(ms: i64) -> String {
    let t = DateTime::from_timestamp_millis(ms).unwrap_or(if ms < 0 {
        DateTime::<Utc>::MIN_UTC
    } else {
        DateTime::<Utc>::MAX_UTC
    });
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Parses `--since`: `YYYY-MM-DD`, `YYYY-MM-DDTHH:MM:SSZ` (UTC), or Unix
/// seconds; to Unix milliseconds.
pub fn parse_since(s: &str) -> Result<i64, LedgerError> {
    let bad =
        || LedgerError::Invalid(format!("--since: `{s}` is not YYYY-MM-DD, YYYY-MM-DDTHH:MM:SSZ or Unix seconds"));
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s.parse::<i64>().ok().and_then(|v| v.checked_mul(1000)).ok_or_else(bad);
    }
    let (date, time) = match s.split_once('T') {
        Some((d, t)) => (d, Some(t.strip_suffix('Z').ok_or_else(bad)?)),
        None => (s, None),
    };
    let num = |v: &str, len: usize| {
        if v.len() == len && v.bytes().all(|b| b.is_ascii_digit()) {
            v.parse::<u32>().ok()
        } else {
            None
        }
    };
    let mut d = date.split('-');
    let (y, m, day) = match (d.next(), d.next(), d.next(), d.next()) {
        (Some(y), Some(m), Some(dd), None) => {
            (num(y, 4).ok_or_else(bad)?, num(m, 2).ok_or_else(bad)?, num(dd, 2).ok_or_else(bad)?)
        }
        _ => return Err(bad()),
    };
    let date = i32::try_from(y).ok().and_then(|y| NaiveDate::from_ymd_opt(y, m, day)).ok_or_else(bad)?;
    let mut secs = date.and_time(NaiveTime::MIN).and_utc().timestamp();
    if let Some(t) = time {
        let mut p = t.split(':');
        let (h, mi, se) = match (p.next(), p.next(), p.next(), p.next()) {
            (Some(h), Some(mi), Some(se), None) => {
                (num(h, 2).ok_or_else(bad)?, num(mi, 2).ok_or_else(bad)?, num(se, 2).ok_or_else(bad)?)
            }
            _ => return Err(bad()),
        };
        // 60 is a leap second (RFC 3339 section 5.6), read as the next
        // minute's first.
        if h > 23 || mi > 59 || se > 60 {
            return Err(bad());
        }
        secs += i64::from(h * 3600 + mi * 60 + se);
    }
    Ok(secs * 1000)
}

/// The CSV header of [`to_csv`].
pub const CSV_HEADER: &str =
    "time,request_id,instance,agent,subject,dialect,path,currency,amount,amount_minor,status,bytes,settlement,void";

/// Records as CSV (RFC 4180: CRLF-free lines ending in `\n`, fields
/// with a comma, quote or line break quoted), with a header line.
pub fn to_csv(records: &[Record]) -> String {
    let mut out = String::from(CSV_HEADER);
    out.push('\n');
    for r in records {
        let fields = [
            rfc3339(r.time_ms),
            r.request_id.clone(),
            r.instance.clone(),
            r.agent.clone(),
            r.subject.clone(),
            r.dialect.clone(),
            r.path.clone(),
            r.currency.clone(),
            decimal(r.amount_minor, r.exponent),
            r.amount_minor.to_string(),
            r.status.to_string(),
            r.bytes.map(|b| b.to_string()).unwrap_or_default(),
            r.settlement.clone().unwrap_or_default(),
            r.void.clone().unwrap_or_default(),
        ];
        let line: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
        out.push_str(&line.join(","));
        out.push('\n');
    }
    out
}

fn csv_field(f: &str) -> String {
    if f.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", f.replace('"', "\"\""))
    } else {
        f.to_string()
    }
}

/// Records as JSON Lines: one object per charge, `time` in RFC 3339 and
/// `amount` as a decimal string beside `amount_minor`.
pub fn to_json_lines(records: &[Record]) -> String {
    let mut out = String::new();
    for r in records {
        let v = serde_json::json!({
            "time": rfc3339(r.time_ms),
            "request_id": r.request_id,
            "instance": r.instance,
            "agent": r.agent,
            "subject": r.subject,
            "dialect": r.dialect,
            "path": r.path,
            "currency": r.currency,
            "amount": decimal(r.amount_minor, r.exponent),
            "amount_minor": r.amount_minor,
            "status": r.status,
            "bytes": r.bytes,
            "settlement": r.settlement,
            "void": r.void,
        });
        out.push_str(&v.to_string());
        out.push('\n');
    }
    out
}

/// A summary as an aligned text table.
pub fn summary_table(rows: &[Summary]) -> String {
    let mut out = format!("{:<10}  {:<24}  {:<8}  {:>8}  {:>14}\n", "day", "agent", "currency", "charges", "amount");
    for s in rows {
        out += &format!(
            "{:<10}  {:<24}  {:<8}  {:>8}  {:>14}\n",
            s.day,
            s.agent,
            s.currency,
            s.charges,
            decimal(s.amount_minor, s.exponent)
        );
    }
    out
}

#[cfg(test)]
mod tests;
