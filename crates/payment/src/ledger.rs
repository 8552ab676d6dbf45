//! The ledger: every charge as one durable row, in a SQLite file of this
//! instance ([`sqlite`]: WAL journal, `synchronous = FULL`) or in a
//! PostgreSQL database the fleet shares ([`postgres`], with a local SQLite
//! [`spool`] for when PostgreSQL does not answer). One writer thread per
//! ledger commits whatever charges are waiting as one transaction, so that
//! one fsync serves many concurrent charges.
//!
//! Durability rule: [`Ledger::record`] returns only after the row's
//! transaction committed (in SQLite, in PostgreSQL, or in the spool that
//! drains into PostgreSQL); the proxy sends `crawler-charged` only after
//! it returned `Ok`. A crash loses no charge a crawler was told about; a
//! charge whose commit did not finish was never announced (the crawler
//! got a 500 `InternalError` or a 503, or its connection died with the
//! process).
//!
//! Every charge has a charge id, made when it is recorded and unique
//! across the fleet: inserts are idempotent by it (`ON CONFLICT
//! (charge_id) DO NOTHING`), so the spool drains into PostgreSQL exactly
//! once even when a drain is cut short after PostgreSQL committed.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

mod export;
mod postgres;
mod spool;
mod sqlite;
mod writer;

pub use export::{
    decimal, json_line, parse_since, parse_until, rfc3339, summary_csv, summary_json, summary_table, summary_table_by,
    to_csv, to_json_lines, CsvWriter, Filter, GroupBy, Reader, Summarizer, Summary, CSV_HEADER,
};
pub use postgres::PgReader;

/// Whether the PostgreSQL client reads `url` (what `crawlgate check`
/// reports, as `run` would meet it); the error never shows the password.
pub fn check_url(url: &str) -> Result<(), String> {
    postgres::config(url, None).map(|_| ()).map_err(|e| match e {
        LedgerError::Postgres { reason, .. } => reason,
        other => other.to_string(),
    })
}
pub use postgres::{mask_url, migrate_postgres, SCHEMA_VERSION};

use writer::{Msg, Void};

/// Charges waiting for the writer; past this a charge waits to be queued.
const QUEUE: usize = 4096;

/// One charge (or, with `void` set, the row that cancels one).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Record {
    /// The charge's id, unique across the fleet ([`new_charge_id`]); a
    /// void row's is its charge's with `:void` appended.
    pub charge_id: String,
    /// When the charge was made, Unix milliseconds.
    pub time_ms: i64,
    /// The request's id (the access log's `id`).
    pub request_id: String,
    /// The site's host the request named (its `Host`), lowercase.
    pub host: String,
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
    /// The crawler's consent, as JSON: the Web Bot Auth signature's
    /// covered components and value (RFC 9421 `Signature-Input`,
    /// `Signature`), or the license token's id and issuer. What a
    /// disputed charge is answered with.
    pub evidence: Option<String>,
    /// The response status.
    pub status: u16,
    /// Body bytes: the origin's Content-Length when the row is written,
    /// replaced by the bytes sent once the response ends.
    pub bytes: Option<u64>,
    /// The instance that charged.
    pub instance: String,
    /// On a void row, the charge id it cancels.
    pub voids: Option<String>,
    /// Why the charge is void, on a void row: the response failed after
    /// its charge was committed (the origin stopped mid-body, the body
    /// could not be converted). Summaries net it out; exports show both.
    /// `None` on a charge.
    pub void: Option<String>,
}

/// A new charge id: 128 random bits in hex, unique across a fleet
/// without coordination.
pub fn new_charge_id() -> String {
    format!("{:032x}", rand::random::<u128>())
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
    /// PostgreSQL refused or did not answer.
    #[error("ledger {target}: {reason}")]
    Postgres {
        /// The database, its URL with the password masked.
        target: String,
        /// What happened.
        reason: String,
    },
    /// The writer thread is gone.
    #[error("ledger writer stopped")]
    Stopped,
    /// The charge was not recorded; the ledger may take it again later
    /// (a 503 with Retry-After: the file was removed or replaced under
    /// the running proxy, the spool is past its bound).
    #[error("{0}")]
    Unavailable(String),
    /// The charge was not recorded (the commit failed).
    #[error("{0}")]
    Failed(String),
    /// Not a ledger, or a bad argument.
    #[error("{0}")]
    Invalid(String),
}

impl LedgerError {
    /// Whether a retry later may succeed without anyone acting: the answer
    /// is then a 503 with Retry-After rather than a 500.
    pub fn unavailable(&self) -> bool {
        matches!(self, LedgerError::Unavailable(_))
    }
}

/// Where the ledger is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// An SQLite file of this instance.
    Sqlite(PathBuf),
    /// A PostgreSQL database (`postgres://` URL), with the local spool
    /// file that holds charges while it does not answer.
    Postgres {
        /// The URL as configured (may hold a password: never logged).
        url: String,
        /// The spool's SQLite file.
        spool: PathBuf,
        /// A file whose first line is the password (else the URL's, else
        /// the `PGPASSWORD` environment variable).
        password_file: Option<PathBuf>,
    },
}

impl Target {
    /// The target as shown in logs and `/status`: the file, or the URL
    /// with its password masked.
    pub fn display(&self) -> String {
        match self {
            Target::Sqlite(p) => p.display().to_string(),
            Target::Postgres { url, .. } => mask_url(url),
        }
    }
}

/// What the ledger reports of itself (metrics and `/status`).
#[derive(Debug, Default)]
pub(crate) struct State {
    /// Whether the last commit succeeded and charges are taken.
    healthy: AtomicBool,
    /// 1 PostgreSQL answers, 0 it does not, -1 no PostgreSQL.
    postgres_up: AtomicI64,
    /// Rows waiting in the spool.
    spool_rows: AtomicU64,
    /// The last error, for `/status`.
    error: Mutex<Option<String>>,
}

impl State {
    pub(crate) fn set_healthy(&self, ok: bool) {
        self.healthy.store(ok, Ordering::Relaxed);
    }

    pub(crate) fn set_postgres_up(&self, up: bool) {
        self.postgres_up.store(i64::from(up), Ordering::Relaxed);
    }

    pub(crate) fn set_spool_rows(&self, n: u64) {
        self.spool_rows.store(n, Ordering::Relaxed);
    }

    pub(crate) fn set_error(&self, e: Option<String>) {
        *self.error.lock().unwrap_or_else(PoisonError::into_inner) = e;
    }
}

/// A snapshot of the ledger's state.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Status {
    /// `sqlite` or `postgres`.
    pub backend: &'static str,
    /// The file, or the URL with its password masked.
    pub target: String,
    /// Whether charges are taken and the last commit succeeded.
    pub healthy: bool,
    /// Whether PostgreSQL answers (`None` for SQLite).
    pub postgres_up: Option<bool>,
    /// Rows waiting in the spool (0 for SQLite).
    pub spool_rows: u64,
    /// The last error, while unhealthy or PostgreSQL is down.
    pub error: Option<String>,
}

/// The ledger of one instance: cheap to clone, shared by every request.
#[derive(Clone)]
pub struct Ledger {
    tx: mpsc::Sender<Msg>,
    state: Arc<State>,
    target: Arc<Target>,
}

impl Ledger {
    /// Opens the SQLite ledger at `path` (created if missing) and starts
    /// its writer thread. Fails when the file cannot be opened for
    /// writing.
    pub fn open(path: &Path) -> Result<Ledger, LedgerError> {
        Ledger::open_target(&Target::Sqlite(path.to_path_buf()))
    }

    /// Opens the ledger at `target` and starts its writer thread. An
    /// SQLite file that cannot be opened for writing fails; so does a
    /// PostgreSQL spool that cannot, or a database whose schema is newer
    /// than this crawlgate. A PostgreSQL server that does not answer does
    /// not: charges go to the spool until it does.
    pub fn open_target(target: &Target) -> Result<Ledger, LedgerError> {
        let (tx, rx) = mpsc::channel(QUEUE);
        let state = Arc::new(State::default());
        state.set_healthy(true);
        match target {
            Target::Sqlite(path) => {
                state.postgres_up.store(-1, Ordering::Relaxed);
                let sink = sqlite::SqliteSink::open(path)?;
                writer::start(sink, rx, state.clone(), target.display())?;
            }
            Target::Postgres { url, spool, password_file } => {
                let sink = postgres::PgSink::open(url, spool, password_file.as_deref(), state.clone())?;
                #[cfg(test)]
                let sink = sink.with_spool_max(tests_pg::SPOOL_MAX.with(std::cell::Cell::get));
                writer::start(sink, rx, state.clone(), target.display())?;
            }
        }
        Ok(Ledger { tx, state, target: Arc::new(target.clone()) })
    }

    /// Records a charge and returns its charge id once its transaction has
    /// committed; an error means it is not recorded and must not be
    /// announced. A record without a charge id gets a new one.
    pub async fn record(&self, mut record: Record) -> Result<String, LedgerError> {
        if record.charge_id.is_empty() {
            record.charge_id = new_charge_id();
        }
        let id = record.charge_id.clone();
        let (done, wait) = oneshot::channel();
        self.tx.send(Msg::Insert(Box::new(record), done)).await.map_err(|_| LedgerError::Stopped)?;
        match wait.await {
            Ok(Ok(())) => Ok(id),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(LedgerError::Stopped),
        }
    }

    /// Sets a recorded charge's bytes to the body bytes actually sent,
    /// when the response has ended. Best effort: dropped when the queue is
    /// full; committed with the next charges, or alone a second later
    /// (never an fsync of its own per response).
    pub fn set_bytes(&self, charge_id: &str, bytes: u64) {
        let _ = self.tx.try_send(Msg::Bytes(charge_id.to_string(), bytes));
    }

    /// Voids the charge `charge_id` (as [`Ledger::record`] returned it):
    /// its response failed after the charge was committed, with `status`
    /// and `bytes` sent. The void row is committed at once, not awaited;
    /// a ledger that cannot write it logs the failure (the charge then
    /// stands: reconcile from the log).
    pub async fn void(&self, charge_id: &str, status: u16, bytes: u64, reason: String) {
        let time_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(0));
        let void = Box::new(Void { charge_id: charge_id.to_string(), time_ms, status, bytes, reason });
        if self.tx.send(Msg::Void(void)).await.is_err() {
            tracing::error!(ledger = %self.target.display(), charge = charge_id, "A failed response's charge could not be voided: the ledger writer stopped");
        }
    }

    /// Commits every byte count still waiting (they otherwise wait up to a
    /// second) and returns when it is done: for a clean shutdown.
    pub async fn flush(&self) {
        let (done, wait) = oneshot::channel();
        if self.tx.send(Msg::Flush(done)).await.is_ok() {
            let _ = wait.await;
        }
    }

    /// Whether charges are taken and the last commit succeeded.
    pub fn healthy(&self) -> bool {
        self.state.healthy.load(Ordering::Relaxed)
    }

    /// The ledger's state now, for metrics and `/status`.
    pub fn status(&self) -> Status {
        let up = self.state.postgres_up.load(Ordering::Relaxed);
        Status {
            backend: match *self.target {
                Target::Sqlite(_) => "sqlite",
                Target::Postgres { .. } => "postgres",
            },
            target: self.target.display(),
            healthy: self.healthy(),
            postgres_up: (up >= 0).then_some(up == 1),
            spool_rows: self.state.spool_rows.load(Ordering::Relaxed),
            error: self.state.error.lock().unwrap_or_else(PoisonError::into_inner).clone(),
        }
    }

    /// Where the ledger is.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// The SQLite file, for an SQLite ledger.
    pub fn path(&self) -> Option<&Path> {
        match &*self.target {
            Target::Sqlite(p) => Some(p),
            Target::Postgres { .. } => None,
        }
    }
}

/// How long an idle writer waits before it looks at its file or database
/// again (a removed file, PostgreSQL back, the spool to drain).
pub(crate) const TICK: Duration = Duration::from_millis(500);

#[cfg(test)]
mod tests;

#[cfg(test)]
mod tests_pg;
