//! The SQLite ledger of one instance: its schema and migrations, the
//! writer's transaction, and the check that the file the writer holds is
//! still the one at the ledger's path. SQLite keeps writing into a file
//! that was deleted or replaced under it (the descriptor stays valid), so
//! without that check charges would be committed where nobody finds them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{params, Connection};

use super::writer::{Batch, Sink};
use super::{LedgerError, Record};

/// How long a write waits for a lock another process holds before it
/// fails (the charge then fails with it).
const BUSY_TIMEOUT: Duration = Duration::from_millis(500);

/// The charges table; columns after `void` were added later and are
/// added to older files by [`migrate`].
pub(crate) const SCHEMA: &str = "
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

/// Columns added since the first schema, with their SQL type.
const ADDED: &[(&str, &str)] = &[
    ("void", "TEXT"),
    ("charge_id", "TEXT"),
    ("host", "TEXT NOT NULL DEFAULT ''"),
    ("evidence", "TEXT"),
    ("voids", "TEXT"),
];

/// The columns of a [`Record`] in a `SELECT`, in [`from_row`]'s order.
pub(crate) const COLUMNS: &str = "charge_id, time_ms, request_id, host, agent, subject, path, amount_minor, currency, exponent, dialect, settlement, evidence, status, bytes, instance, voids, void";

/// A [`Record`] from a row selected with [`COLUMNS`].
pub(crate) fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Record> {
    Ok(Record {
        charge_id: r.get(0)?,
        time_ms: r.get(1)?,
        request_id: r.get(2)?,
        host: r.get(3)?,
        agent: r.get(4)?,
        subject: r.get(5)?,
        path: r.get(6)?,
        amount_minor: u64::try_from(r.get::<_, i64>(7)?).unwrap_or(0),
        currency: r.get(8)?,
        exponent: r.get(9)?,
        dialect: r.get(10)?,
        settlement: r.get(11)?,
        evidence: r.get(12)?,
        status: r.get(13)?,
        bytes: r.get::<_, Option<i64>>(14)?.and_then(|b| u64::try_from(b).ok()),
        instance: r.get(15)?,
        voids: r.get(16)?,
        void: r.get(17)?,
    })
}

/// The columns `table` has.
pub(crate) fn columns(conn: &Connection, table: &str) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare("SELECT name FROM pragma_table_info(?1)")?;
    let names = stmt.query_map([table], |r| r.get::<_, String>(0))?;
    names.collect()
}

/// Adds the columns a ledger written by an older crawlgate lacks, and
/// gives its rows a charge id (`<instance>:<row>`), unique in the file.
fn migrate(conn: &Connection, path: &Path) -> Result<(), LedgerError> {
    let have = columns(conn, "charges").map_err(sqlite(path))?;
    for (name, ty) in ADDED {
        if !have.iter().any(|c| c == name) {
            conn.execute_batch(&format!("ALTER TABLE charges ADD COLUMN {name} {ty};")).map_err(sqlite(path))?;
        }
    }
    conn.execute_batch(
        "UPDATE charges SET charge_id = instance || ':' || id WHERE charge_id IS NULL;
         CREATE UNIQUE INDEX IF NOT EXISTS charges_charge_id ON charges (charge_id);",
    )
    .map_err(sqlite(path))
}

pub(crate) fn sqlite(path: &Path) -> impl Fn(rusqlite::Error) -> LedgerError + '_ {
    move |source| LedgerError::Sqlite { path: path.display().to_string(), source }
}

/// Opens (creating) an SQLite file for writing: WAL journal, full sync.
pub(crate) fn open_file(path: &Path) -> Result<Connection, LedgerError> {
    let conn = Connection::open(path).map_err(sqlite(path))?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(sqlite(path))?;
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)).map_err(sqlite(path))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(LedgerError::Invalid(format!("ledger {}: journal mode {mode}, not wal", path.display())));
    }
    // FULL: a commit is on disk when it returns, a power loss included.
    conn.execute_batch("PRAGMA synchronous = FULL;").map_err(sqlite(path))?;
    Ok(conn)
}

/// Which file a path names: device and inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FileId(u64, u64);

impl FileId {
    pub(crate) fn of(path: &Path) -> std::io::Result<FileId> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path)?;
        Ok(FileId(m.dev(), m.ino()))
    }
}

/// Whether `path` still names the file opened as `opened`: `Err` says
/// what happened to it.
pub(crate) fn same_file(path: &Path, opened: FileId) -> Result<(), String> {
    match FileId::of(path) {
        Ok(id) if id == opened => Ok(()),
        Ok(_) => Err(format!(
            "ledger {}: the file was replaced under the running proxy; charging stops until crawlgate is restarted on the right file",
            path.display()
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!(
            "ledger {}: the file was removed under the running proxy; charging stops until crawlgate is restarted",
            path.display()
        )),
        Err(e) => Err(format!("ledger {}: {e}", path.display())),
    }
}

/// The SQLite ledger's writer side.
pub(crate) struct SqliteSink {
    conn: Connection,
    path: PathBuf,
    file: FileId,
    /// What happened to the file, once noticed: it stays refused.
    gone: Option<String>,
}

impl SqliteSink {
    /// Opens (creating) the ledger file with its schema, migrated.
    pub(crate) fn open(path: &Path) -> Result<SqliteSink, LedgerError> {
        let conn = open_file(path)?;
        conn.execute_batch(SCHEMA).map_err(sqlite(path))?;
        migrate(&conn, path)?;
        let file = FileId::of(path).map_err(|e| LedgerError::Invalid(format!("ledger {}: {e}", path.display())))?;
        Ok(SqliteSink { conn, path: path.to_path_buf(), file, gone: None })
    }

    /// Notices a file removed or replaced: an error in the log, once.
    fn check(&mut self) -> Result<(), LedgerError> {
        if self.gone.is_none() {
            if let Err(why) = same_file(&self.path, self.file) {
                tracing::error!(ledger = %self.path.display(), error = %why, "The ledger file is gone; charging stops");
                self.gone = Some(why);
            }
        }
        match &self.gone {
            Some(why) => Err(LedgerError::Unavailable(why.clone())),
            None => Ok(()),
        }
    }
}

impl Sink for SqliteSink {
    async fn write(&mut self, batch: &Batch) -> Result<(), LedgerError> {
        self.check()?;
        write_charges(&mut self.conn, batch).map_err(sqlite(&self.path))
    }

    async fn tick(&mut self) -> Result<(), LedgerError> {
        self.check()
    }
}

/// Writes a batch into the `charges` table of `conn` in one transaction.
fn write_charges(conn: &mut Connection, batch: &Batch) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    {
        let mut insert = tx.prepare_cached(
            "INSERT INTO charges (charge_id, time_ms, request_id, host, agent, subject, path, amount_minor, currency, exponent, dialect, settlement, evidence, status, bytes, instance, voids, void) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18) ON CONFLICT (charge_id) DO NOTHING",
        )?;
        for (r, _) in &batch.inserts {
            insert.execute(params![
                r.charge_id,
                r.time_ms,
                r.request_id,
                r.host,
                r.agent,
                r.subject,
                r.path,
                i64::try_from(r.amount_minor).unwrap_or(i64::MAX),
                r.currency,
                r.exponent,
                r.dialect,
                r.settlement,
                r.evidence,
                r.status,
                r.bytes.map(|b| i64::try_from(b).unwrap_or(i64::MAX)),
                r.instance,
                r.voids,
                r.void,
            ])?;
        }
        if !batch.bytes.is_empty() {
            let mut bytes = tx.prepare_cached("UPDATE charges SET bytes = ?2 WHERE charge_id = ?1")?;
            for (id, n) in &batch.bytes {
                bytes.execute(params![id, i64::try_from(*n).unwrap_or(i64::MAX)])?;
            }
        }
        if !batch.voids.is_empty() {
            let mut void = tx.prepare_cached(
                "INSERT INTO charges (charge_id, time_ms, request_id, host, agent, subject, path, amount_minor, currency, exponent, dialect, settlement, evidence, status, bytes, instance, voids, void) \
                 SELECT charge_id || ':void', ?2, request_id, host, agent, subject, path, amount_minor, currency, exponent, dialect, settlement, evidence, ?3, ?4, instance, charge_id, ?5 \
                 FROM charges WHERE charge_id = ?1 AND void IS NULL ON CONFLICT (charge_id) DO NOTHING",
            )?;
            for v in &batch.voids {
                let bytes = i64::try_from(v.bytes).unwrap_or(i64::MAX);
                void.execute(params![v.charge_id, v.time_ms, v.status, bytes, v.reason])?;
            }
        }
    }
    tx.commit()
}
