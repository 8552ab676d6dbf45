//! The local spool of a PostgreSQL ledger: an SQLite file (WAL, `synchronous
//! = FULL`, as the SQLite ledger) holding, in order, what could not be
//! written to PostgreSQL: charges, byte counts and voids, each as one row
//! of JSON. A charge committed here is durable and may be announced; the
//! PostgreSQL sink drains the spool in order and deletes what PostgreSQL
//! committed.

use std::path::{Path, PathBuf};

use rusqlite::{params, Connection};

use super::sqlite::{open_file, same_file, sqlite, FileId};
use super::writer::{Batch, Void};
use super::{LedgerError, Record};

const SCHEMA: &str =
    "CREATE TABLE IF NOT EXISTS spool (seq INTEGER PRIMARY KEY, op TEXT NOT NULL, body TEXT NOT NULL);";

/// One spooled operation.
pub(crate) enum Op {
    Charge(Box<Record>),
    Bytes(String, u64),
    Void(Void),
}

/// The spool file.
pub(crate) struct Spool {
    conn: Connection,
    path: PathBuf,
    file: FileId,
    rows: u64,
}

impl Spool {
    /// Opens (creating) the spool at `path`; rows left by a previous run
    /// are kept, to be drained.
    pub(crate) fn open(path: &Path) -> Result<Spool, LedgerError> {
        let conn = open_file(path)?;
        conn.execute_batch(SCHEMA).map_err(sqlite(path))?;
        let rows: i64 = conn.query_row("SELECT count(*) FROM spool", [], |r| r.get(0)).map_err(sqlite(path))?;
        let file =
            FileId::of(path).map_err(|e| LedgerError::Invalid(format!("ledger spool {}: {e}", path.display())))?;
        Ok(Spool { conn, path: path.to_path_buf(), file, rows: u64::try_from(rows).unwrap_or(0) })
    }

    /// Rows waiting.
    pub(crate) fn rows(&self) -> u64 {
        self.rows
    }

    /// Whether the file is still the one opened (not removed or replaced).
    pub(crate) fn check(&self) -> Result<(), LedgerError> {
        same_file(&self.path, self.file).map_err(LedgerError::Unavailable)
    }

    /// Appends a batch in one transaction.
    pub(crate) fn append(&mut self, batch: &Batch) -> Result<(), LedgerError> {
        let json = |e: serde_json::Error| LedgerError::Invalid(format!("ledger spool: {e}"));
        let mut ops: Vec<(&str, String)> = Vec::with_capacity(batch.len());
        for (r, _) in &batch.inserts {
            ops.push(("charge", serde_json::to_string(r).map_err(json)?));
        }
        for (id, n) in &batch.bytes {
            ops.push(("bytes", serde_json::to_string(&(id, n)).map_err(json)?));
        }
        for v in &batch.voids {
            ops.push(("void", serde_json::to_string(v).map_err(json)?));
        }
        let path = self.path.clone();
        let tx =
            self.conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(sqlite(&path))?;
        {
            let mut insert =
                tx.prepare_cached("INSERT INTO spool (op, body) VALUES (?1, ?2)").map_err(sqlite(&path))?;
            for (op, body) in &ops {
                insert.execute(params![op, body]).map_err(sqlite(&path))?;
            }
        }
        tx.commit().map_err(sqlite(&path))?;
        self.rows += ops.len() as u64;
        Ok(())
    }

    /// The oldest `n` operations, with their sequence numbers.
    pub(crate) fn read(&self, n: usize) -> Result<Vec<(i64, Op)>, LedgerError> {
        let path = &self.path;
        let mut stmt =
            self.conn.prepare_cached("SELECT seq, op, body FROM spool ORDER BY seq LIMIT ?1").map_err(sqlite(path))?;
        let rows = stmt
            .query_map([i64::try_from(n).unwrap_or(i64::MAX)], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?))
            })
            .map_err(sqlite(path))?;
        let mut out = Vec::new();
        for row in rows {
            let (seq, op, body) = row.map_err(sqlite(path))?;
            let bad = |e: serde_json::Error| {
                LedgerError::Invalid(format!("ledger spool {}: row {seq} ({op}): {e}", path.display()))
            };
            let op = match op.as_str() {
                "charge" => Op::Charge(serde_json::from_str(&body).map_err(bad)?),
                "bytes" => {
                    let (id, n): (String, u64) = serde_json::from_str(&body).map_err(bad)?;
                    Op::Bytes(id, n)
                }
                "void" => Op::Void(serde_json::from_str(&body).map_err(bad)?),
                other => {
                    return Err(LedgerError::Invalid(format!(
                        "ledger spool {}: row {seq}: unknown operation `{other}`",
                        path.display()
                    )))
                }
            };
            out.push((seq, op));
        }
        Ok(out)
    }

    /// Deletes every operation through `seq` (PostgreSQL committed them).
    pub(crate) fn delete_through(&mut self, seq: i64) -> Result<(), LedgerError> {
        let n = self.conn.execute("DELETE FROM spool WHERE seq <= ?1", [seq]).map_err(sqlite(&self.path))?;
        self.rows = self.rows.saturating_sub(n as u64);
        Ok(())
    }
}
