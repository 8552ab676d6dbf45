//! The fleet's ledger in PostgreSQL, through `tokio-postgres` (a small
//! client on our tokio runtime, no compile-time database; see
//! docs/payment.md). Every instance inserts its charges into one table,
//! `crawlgate_charges`, idempotently by charge id; the schema is versioned
//! in `crawlgate_schema_version` and migrated by the first instance that
//! connects (or `crawlgate ledger migrate`), under an advisory lock so
//! that several instances starting together do not race.
//!
//! When PostgreSQL does not answer within [`BOUND`], a batch is committed
//! to the local [`Spool`] instead (durable, so the charges may be
//! announced), and later batches follow it there, keeping their order,
//! until the spool has drained into PostgreSQL: each chunk in one
//! transaction (`ON CONFLICT (charge_id) DO NOTHING`), deleted from the
//! spool after PostgreSQL committed it. A chunk applied twice (PostgreSQL
//! committed, the answer was lost) changes nothing the second time. Past
//! [`SPOOL_MAX`] rows waiting, charges are refused (503, Retry-After)
//! rather than served free or lost.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::{timeout, Instant};
use tokio_postgres::{Client, Config, NoTls, Statement};

use super::spool::{Op, Spool};
use super::writer::{Batch, Sink, Void, MAX_BATCH};
use super::{Filter, LedgerError, Record, State};

/// How long a commit in PostgreSQL may take before the batch goes to the
/// spool instead: a charged response waits for it.
pub(crate) const BOUND: Duration = Duration::from_secs(1);

/// How long a PostgreSQL found down is left alone before the next try.
const RETRY: Duration = Duration::from_secs(1);

/// How often an idle, healthy connection is probed.
const PROBE: Duration = Duration::from_secs(5);

/// How long one tick may spend draining the spool before the writer goes
/// back to its queue.
const DRAIN_BUDGET: Duration = Duration::from_millis(250);

/// Rows the spool may hold before charges are refused.
pub(crate) const SPOOL_MAX: u64 = 100_000;

/// The schema, one migration per version (version = index + 1). Never
/// edit one that shipped: add the next.
const MIGRATIONS: &[&str] = &["CREATE TABLE crawlgate_charges (
        id BIGSERIAL PRIMARY KEY,
        charge_id TEXT NOT NULL UNIQUE,
        time_ms BIGINT NOT NULL,
        request_id TEXT NOT NULL,
        host TEXT NOT NULL,
        agent TEXT NOT NULL,
        subject TEXT NOT NULL,
        path TEXT NOT NULL,
        amount_minor BIGINT NOT NULL,
        currency TEXT NOT NULL,
        exponent SMALLINT NOT NULL,
        dialect TEXT NOT NULL,
        settlement TEXT,
        evidence TEXT,
        status INTEGER NOT NULL,
        bytes BIGINT,
        instance TEXT NOT NULL,
        voids TEXT,
        void TEXT
    );
    CREATE INDEX crawlgate_charges_time ON crawlgate_charges (time_ms);"];

/// The schema version this crawlgate writes.
pub const SCHEMA_VERSION: i32 = MIGRATIONS.len() as i32;

/// The advisory lock that serialises migrations (any constant; "crawlgate"
/// in ASCII, folded to 63 bits).
const MIGRATION_LOCK: i64 = 0x6372_6177_6c67_6174;

/// Whether `s` is a PostgreSQL URL rather than a file.
pub(crate) fn is_url(s: &str) -> bool {
    s.starts_with("postgres://") || s.starts_with("postgresql://")
}

/// `url` with the password (in the user info, or a `password=` query
/// parameter) replaced by `***`: what logs and `/status` show.
pub fn mask_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let authority = match authority.rsplit_once('@') {
        Some((user, host)) => match user.split_once(':') {
            Some((name, _)) => format!("{name}:***@{host}"),
            None => format!("{user}@{host}"),
        },
        None => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let q: Vec<String> = query
                .split('&')
                .map(|kv| match kv.split_once('=') {
                    Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                    _ => kv.to_string(),
                })
                .collect();
            format!("{path}?{}", q.join("&"))
        }
        None => tail.to_string(),
    };
    format!("{scheme}://{authority}{tail}")
}

/// The client configuration of `url`: the password from the URL, else
/// the first line of `password_file`, else `PGPASSWORD`.
pub(crate) fn config(url: &str, password_file: Option<&Path>) -> Result<Config, LedgerError> {
    let masked = mask_url(url);
    let bad = |reason: String| LedgerError::Postgres { target: masked.clone(), reason };
    let mut config: Config = url.parse().map_err(|e| bad(format!("not a PostgreSQL URL: {e}")))?;
    if config.get_password().is_none() {
        if let Some(file) = password_file {
            let text =
                std::fs::read_to_string(file).map_err(|e| bad(format!("password file {}: {e}", file.display())))?;
            config.password(text.lines().next().unwrap_or_default());
        } else if let Ok(p) = std::env::var("PGPASSWORD") {
            config.password(p);
        }
    }
    if config.get_application_name().is_none() {
        config.application_name("crawlgate");
    }
    config.connect_timeout(BOUND);
    Ok(config)
}

/// Applies the migrations this database lacks; returns the versions
/// before and after. A database newer than this crawlgate is an error.
async fn migrate(client: &mut Client) -> Result<(i32, i32), String> {
    let tx = client.transaction().await.map_err(|e| pg_error(&e))?;
    tx.batch_execute(&format!(
        "SELECT pg_advisory_xact_lock({MIGRATION_LOCK});
         CREATE TABLE IF NOT EXISTS crawlgate_schema_version (version INTEGER PRIMARY KEY, applied_ms BIGINT NOT NULL);"
    ))
    .await
    .map_err(|e| pg_error(&e))?;
    let have: i32 = tx
        .query_one("SELECT coalesce(max(version), 0) FROM crawlgate_schema_version", &[])
        .await
        .map_err(|e| pg_error(&e))?
        .get(0);
    if have > SCHEMA_VERSION {
        return Err(format!(
            "the database's ledger schema is version {have}, newer than this crawlgate's ({SCHEMA_VERSION}): run a newer crawlgate"
        ));
    }
    let now = now_ms();
    for (i, m) in MIGRATIONS.iter().enumerate().skip(usize::try_from(have).unwrap_or(0)) {
        tx.batch_execute(m).await.map_err(|e| format!("migration {}: {e}", i + 1))?;
        let v = i32::try_from(i + 1).unwrap_or(i32::MAX);
        tx.execute("INSERT INTO crawlgate_schema_version (version, applied_ms) VALUES ($1, $2)", &[&v, &now])
            .await
            .map_err(|e| pg_error(&e))?;
    }
    tx.commit().await.map_err(|e| pg_error(&e))?;
    Ok((have, SCHEMA_VERSION))
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(0))
}

/// `crawlgate ledger migrate`: brings the database at `url` to this
/// crawlgate's schema; returns the versions before and after.
pub fn migrate_postgres(url: &str, password_file: Option<&Path>) -> Result<(i32, i32), LedgerError> {
    let config = config(url, password_file)?;
    let target = mask_url(url);
    let err = |reason: String| LedgerError::Postgres { target: target.clone(), reason };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| err(e.to_string()))?;
    rt.block_on(async {
        let (mut client, conn) = config.connect(NoTls).await.map_err(|e| err(pg_error(&e)))?;
        tokio::spawn(conn);
        migrate(&mut client).await.map_err(err)
    })
}

/// A client error with what the server said (its Display alone is "db
/// error"), never the password (the server does not echo it).
pub(crate) fn pg_error(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {} (SQLSTATE {})", db.severity(), db.message(), db.code().code()),
        None => match std::error::Error::source(e) {
            Some(source) => format!("{e}: {source}"),
            None => e.to_string(),
        },
    }
}

/// PostgreSQL text cannot hold NUL: a value with one (from a token or a
/// payer name) would fail its batch, and then every drain after it.
fn text(s: &str) -> String {
    s.replace('\0', "\u{FFFD}")
}

fn opt(s: &Option<String>) -> Option<String> {
    s.as_deref().map(text)
}

/// The statements of one connection.
struct Statements {
    insert: Statement,
    bytes: Statement,
    void: Statement,
}

async fn prepare(client: &Client) -> Result<Statements, tokio_postgres::Error> {
    let insert = client
        .prepare(
            "INSERT INTO crawlgate_charges (charge_id, time_ms, request_id, host, agent, subject, path, amount_minor, currency, exponent, dialect, settlement, evidence, status, bytes, instance, voids, void) \
             SELECT * FROM unnest($1::text[], $2::int8[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int8[], $9::text[], $10::int2[], $11::text[], $12::text[], $13::text[], $14::int4[], $15::int8[], $16::text[], $17::text[], $18::text[]) \
             ON CONFLICT (charge_id) DO NOTHING",
        )
        .await?;
    let bytes = client
        .prepare("UPDATE crawlgate_charges c SET bytes = u.b FROM unnest($1::text[], $2::int8[]) AS u(id, b) WHERE c.charge_id = u.id")
        .await?;
    let void = client
        .prepare(
            "INSERT INTO crawlgate_charges (charge_id, time_ms, request_id, host, agent, subject, path, amount_minor, currency, exponent, dialect, settlement, evidence, status, bytes, instance, voids, void) \
             SELECT charge_id || ':void', $2, request_id, host, agent, subject, path, amount_minor, currency, exponent, dialect, settlement, evidence, $3, $4, instance, charge_id, $5 \
             FROM crawlgate_charges WHERE charge_id = $1 AND void IS NULL ON CONFLICT (charge_id) DO NOTHING",
        )
        .await?;
    Ok(Statements { insert, bytes, void })
}

/// Writes charges, byte counts and voids in one transaction.
async fn write_pg(
    client: &mut Client,
    st: &Statements,
    inserts: &[&Record],
    bytes: &[(String, u64)],
    voids: &[Void],
) -> Result<(), tokio_postgres::Error> {
    let tx = client.transaction().await?;
    if !inserts.is_empty() {
        let col = |f: &dyn Fn(&Record) -> String| inserts.iter().map(|r| f(r)).collect::<Vec<String>>();
        let ocol = |f: &dyn Fn(&Record) -> Option<String>| inserts.iter().map(|r| f(r)).collect::<Vec<_>>();
        let big = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        let ids = col(&|r| text(&r.charge_id));
        let times: Vec<i64> = inserts.iter().map(|r| r.time_ms).collect();
        let request = col(&|r| text(&r.request_id));
        let host = col(&|r| text(&r.host));
        let agent = col(&|r| text(&r.agent));
        let subject = col(&|r| text(&r.subject));
        let path = col(&|r| text(&r.path));
        let amount: Vec<i64> = inserts.iter().map(|r| big(r.amount_minor)).collect();
        let currency = col(&|r| text(&r.currency));
        let exponent: Vec<i16> = inserts.iter().map(|r| i16::from(r.exponent)).collect();
        let dialect = col(&|r| text(&r.dialect));
        let settlement = ocol(&|r| opt(&r.settlement));
        let evidence = ocol(&|r| opt(&r.evidence));
        let status: Vec<i32> = inserts.iter().map(|r| i32::from(r.status)).collect();
        let nbytes: Vec<Option<i64>> = inserts.iter().map(|r| r.bytes.map(big)).collect();
        let instance = col(&|r| text(&r.instance));
        let voids_col = ocol(&|r| opt(&r.voids));
        let void = ocol(&|r| opt(&r.void));
        tx.execute(
            &st.insert,
            &[
                &ids,
                &times,
                &request,
                &host,
                &agent,
                &subject,
                &path,
                &amount,
                &currency,
                &exponent,
                &dialect,
                &settlement,
                &evidence,
                &status,
                &nbytes,
                &instance,
                &voids_col,
                &void,
            ],
        )
        .await?;
    }
    if !bytes.is_empty() {
        let ids: Vec<String> = bytes.iter().map(|(id, _)| text(id)).collect();
        let n: Vec<i64> = bytes.iter().map(|(_, n)| i64::try_from(*n).unwrap_or(i64::MAX)).collect();
        tx.execute(&st.bytes, &[&ids, &n]).await?;
    }
    for v in voids {
        let b = i64::try_from(v.bytes).unwrap_or(i64::MAX);
        let status = i32::from(v.status);
        tx.execute(&st.void, &[&text(&v.charge_id), &v.time_ms, &status, &b, &text(&v.reason)]).await?;
    }
    tx.commit().await
}

/// Connects, migrates (unless done on an earlier connection) and
/// prepares the statements.
async fn connect(config: Config, target: String, migrated: bool) -> Result<(Client, Statements), String> {
    let (mut client, conn) = config.connect(NoTls).await.map_err(|e| pg_error(&e))?;
    tokio::spawn(async move {
        if let Err(e) = conn.await {
            tracing::debug!(error = %e, "The ledger's PostgreSQL connection ended");
        }
    });
    if !migrated {
        let (from, to) = migrate(&mut client).await?;
        if from != to {
            tracing::info!(ledger = %target, from, to, "Ledger schema migrated");
        }
    }
    let st = prepare(&client).await.map_err(|e| pg_error(&e))?;
    Ok((client, st))
}

type Connecting = tokio::sync::oneshot::Receiver<Result<(Client, Statements), String>>;

/// The PostgreSQL ledger's writer side.
pub(crate) struct PgSink {
    config: Config,
    target: String,
    conn: Option<(Client, Statements)>,
    /// A connection attempt under way.
    connecting: Option<Connecting>,
    spool: Spool,
    state: Arc<State>,
    /// When to try connecting again, while PostgreSQL is down.
    retry_at: Instant,
    /// When to probe the idle connection next.
    probe_at: Instant,
    spool_max: u64,
    /// Whether the schema was checked (and migrated) on some connection.
    migrated: bool,
}

impl PgSink {
    /// Reads the URL and opens the spool; the database is reached from
    /// the writer thread (at its first tick).
    pub(crate) fn open(
        url: &str,
        spool: &Path,
        password_file: Option<&Path>,
        state: Arc<State>,
    ) -> Result<PgSink, LedgerError> {
        let config = config(url, password_file)?;
        let spool = Spool::open(spool)?;
        let rows = spool.rows();
        state.set_spool_rows(rows);
        state.set_postgres_up(false);
        let now = Instant::now();
        Ok(PgSink {
            config,
            target: mask_url(url),
            conn: None,
            connecting: None,
            spool,
            state,
            retry_at: now,
            probe_at: now + PROBE,
            spool_max: SPOOL_MAX,
            migrated: false,
        })
    }

    #[cfg(test)]
    pub(crate) fn with_spool_max(mut self, n: u64) -> PgSink {
        self.spool_max = n;
        self
    }

    /// Whether a connection is up; when none is and a try is due, starts
    /// one in a task of its own (connect, migrate on the first, prepare),
    /// so that the writer never waits for a connection: charges go to the
    /// spool meanwhile.
    fn connected(&mut self) -> bool {
        if self.conn.as_ref().is_some_and(|(c, _)| c.is_closed()) {
            self.down("the connection closed".into());
        }
        if self.conn.is_some() {
            return true;
        }
        if let Some(rx) = self.connecting.as_mut() {
            match rx.try_recv() {
                Ok(Ok(conn)) => {
                    self.connecting = None;
                    self.migrated = true;
                    self.conn = Some(conn);
                    self.state.set_postgres_up(true);
                    self.probe_at = Instant::now() + PROBE;
                    if self.spool.rows() == 0 {
                        self.state.set_error(None);
                    }
                    tracing::info!(ledger = %self.target, spool = self.spool.rows(), "Ledger: PostgreSQL answers");
                    return true;
                }
                Ok(Err(e)) => {
                    self.connecting = None;
                    self.down(e);
                }
                Err(tokio::sync::oneshot::error::TryRecvError::Empty) => return false,
                Err(tokio::sync::oneshot::error::TryRecvError::Closed) => {
                    self.connecting = None;
                    self.down("the connection attempt ended".into());
                }
            }
        }
        if self.connecting.is_none() && Instant::now() >= self.retry_at {
            let (tx, rx) = tokio::sync::oneshot::channel();
            let (config, target, migrated) = (self.config.clone(), self.target.clone(), self.migrated);
            tokio::spawn(async move {
                let attempt = timeout(BOUND * 5, connect(config, target, migrated)).await;
                let _ = tx.send(attempt.unwrap_or_else(|_| Err("no answer within 5 s".into())));
            });
            self.connecting = Some(rx);
        }
        false
    }

    /// PostgreSQL failed: drop the connection, try again after [`RETRY`].
    fn down(&mut self, why: String) {
        if self.conn.take().is_some() || self.state.error.lock().unwrap_or_else(PoisonError::into_inner).is_none() {
            tracing::warn!(ledger = %self.target, error = %why, "Ledger: PostgreSQL does not answer; charges go to the local spool");
        }
        self.state.set_postgres_up(false);
        self.state.set_error(Some(format!("PostgreSQL: {why}")));
        self.retry_at = Instant::now() + RETRY;
    }

    /// Drains the spool into PostgreSQL, a chunk per transaction, for up
    /// to [`DRAIN_BUDGET`].
    async fn drain(&mut self) {
        let started = Instant::now();
        while self.spool.rows() > 0 && started.elapsed() < DRAIN_BUDGET {
            if !self.connected() {
                return;
            }
            let chunk = match self.spool.read(MAX_BATCH) {
                Ok(c) => c,
                Err(e) => {
                    tracing::error!(ledger = %self.target, error = %e, "The ledger's spool cannot be read");
                    self.state.set_error(Some(e.to_string()));
                    return;
                }
            };
            let Some(last) = chunk.last().map(|(seq, _)| *seq) else { return };
            let mut inserts = Vec::new();
            let mut bytes = Vec::new();
            let mut voids = Vec::new();
            for (_, op) in chunk {
                match op {
                    Op::Charge(r) => inserts.push(*r),
                    Op::Bytes(id, n) => bytes.push((id, n)),
                    Op::Void(v) => voids.push(v),
                }
            }
            let refs: Vec<&Record> = inserts.iter().collect();
            let Some((client, st)) = self.conn.as_mut() else { return };
            match timeout(BOUND * 5, write_pg(client, st, &refs, &bytes, &voids)).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return self.down(pg_error(&e)),
                Err(_) => return self.down("a drain did not commit within 5 s".into()),
            }
            // Committed in PostgreSQL: off the spool. A crash before this
            // delete drains the chunk again, which inserts nothing twice.
            if let Err(e) = self.spool.delete_through(last) {
                tracing::error!(ledger = %self.target, error = %e, "The ledger's spool cannot be trimmed");
                self.state.set_error(Some(e.to_string()));
                return;
            }
            self.state.set_spool_rows(self.spool.rows());
            if self.spool.rows() == 0 {
                tracing::info!(ledger = %self.target, "Ledger: the spool has drained into PostgreSQL");
                self.state.set_error(None);
            }
        }
    }
}

impl Sink for PgSink {
    async fn write(&mut self, batch: &Batch) -> Result<(), LedgerError> {
        self.spool.check()?;
        if self.spool.rows() == 0 && self.connected() {
            let refs: Vec<&Record> = batch.inserts.iter().map(|(r, _)| r.as_ref()).collect();
            if let Some((client, st)) = self.conn.as_mut() {
                match timeout(BOUND, write_pg(client, st, &refs, &batch.bytes, &batch.voids)).await {
                    Ok(Ok(())) => return Ok(()),
                    Ok(Err(e)) => self.down(pg_error(&e)),
                    Err(_) => self.down(format!("no commit within {} ms", BOUND.as_millis())),
                }
            }
        }
        // PostgreSQL is down, slow, or has rows before these to take
        // first: the spool, unless it is past its bound.
        if !batch.inserts.is_empty() && self.spool.rows() >= self.spool_max {
            return Err(LedgerError::Unavailable(format!(
                "ledger {}: PostgreSQL does not answer and the spool holds {} rows, its bound; charging resumes as it drains",
                self.target,
                self.spool.rows()
            )));
        }
        self.spool.append(batch)?;
        self.state.set_spool_rows(self.spool.rows());
        Ok(())
    }

    async fn tick(&mut self) -> Result<(), LedgerError> {
        self.spool.check()?;
        if self.spool.rows() > 0 {
            self.drain().await;
            return Ok(());
        }
        if !self.connected() {
            return Ok(());
        }
        if Instant::now() >= self.probe_at {
            self.probe_at = Instant::now() + PROBE;
            if let Some((client, _)) = self.conn.as_ref() {
                match timeout(BOUND, client.simple_query("SELECT 1")).await {
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => self.down(pg_error(&e)),
                    Err(_) => self.down(format!("no answer to a probe within {} ms", BOUND.as_millis())),
                }
            }
        }
        Ok(())
    }
}

/// A PostgreSQL ledger opened for reading.
pub struct PgReader {
    rt: tokio::runtime::Runtime,
    client: Mutex<Client>,
    target: String,
}

impl PgReader {
    /// Connects to `url` (password as for the proxy).
    pub(crate) fn connect(url: &str, password_file: Option<&Path>) -> Result<PgReader, LedgerError> {
        let config = config(url, password_file)?;
        let target = mask_url(url);
        let err = |reason: String| LedgerError::Postgres { target: target.clone(), reason };
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| err(e.to_string()))?;
        let client = rt.block_on(async {
            let (client, conn) = config.connect(NoTls).await.map_err(|e| err(pg_error(&e)))?;
            tokio::spawn(conn);
            Ok::<_, LedgerError>(client)
        })?;
        Ok(PgReader { rt, client: Mutex::new(client), target })
    }

    /// Streams the rows of `filter`, oldest first, through a cursor
    /// (portal) in chunks: an export never holds the table.
    pub(crate) fn each(
        &self,
        filter: Filter,
        each: &mut dyn FnMut(Record) -> std::io::Result<()>,
    ) -> Result<(), LedgerError> {
        let err = |reason: String| LedgerError::Postgres { target: self.target.clone(), reason };
        let mut client = self.client.lock().unwrap_or_else(PoisonError::into_inner);
        self.rt.block_on(async {
            let tx = client.transaction().await.map_err(|e| err(pg_error(&e)))?;
            let stmt = tx
                .prepare(&format!(
                    "SELECT {} FROM crawlgate_charges WHERE time_ms >= $1 AND time_ms < $2 ORDER BY time_ms, id",
                    super::sqlite::COLUMNS
                ))
                .await
                .map_err(|e| err(pg_error(&e)))?;
            let portal = tx.bind(&stmt, &[&filter.since_ms, &filter.until_ms]).await.map_err(|e| err(pg_error(&e)))?;
            loop {
                let rows = tx.query_portal(&portal, 5000).await.map_err(|e| err(pg_error(&e)))?;
                if rows.is_empty() {
                    break;
                }
                for row in rows {
                    let r = from_pg(&row).map_err(|e| err(pg_error(&e)))?;
                    each(r).map_err(|e| LedgerError::Invalid(format!("cannot write: {e}")))?;
                }
            }
            Ok(())
        })
    }
}

fn from_pg(r: &tokio_postgres::Row) -> Result<Record, tokio_postgres::Error> {
    Ok(Record {
        charge_id: r.try_get(0)?,
        time_ms: r.try_get(1)?,
        request_id: r.try_get(2)?,
        host: r.try_get(3)?,
        agent: r.try_get(4)?,
        subject: r.try_get(5)?,
        path: r.try_get(6)?,
        amount_minor: u64::try_from(r.try_get::<_, i64>(7)?).unwrap_or(0),
        currency: r.try_get(8)?,
        exponent: u8::try_from(r.try_get::<_, i16>(9)?).unwrap_or(0),
        dialect: r.try_get(10)?,
        settlement: r.try_get(11)?,
        evidence: r.try_get(12)?,
        status: u16::try_from(r.try_get::<_, i32>(13)?).unwrap_or(0),
        bytes: r.try_get::<_, Option<i64>>(14)?.and_then(|b| u64::try_from(b).ok()),
        instance: r.try_get(15)?,
        voids: r.try_get(16)?,
        void: r.try_get(17)?,
    })
}
