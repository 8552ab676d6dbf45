//! Reading a ledger back (`crawlgate ledger export` and `summary`): rows
//! streamed from one or several SQLite files or from PostgreSQL, written
//! as CSV or JSON lines one at a time (an export of millions of rows is
//! never held in memory), and summaries grouped by host, agent, payer,
//! day or month.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, NaiveDate, NaiveTime, SecondsFormat, Utc};
use rusqlite::{Connection, OpenFlags};

use super::sqlite::{columns, from_row, sqlite, COLUMNS};
use super::{LedgerError, Record};

/// Which rows: `since <= time_ms < until`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Filter {
    /// First time included, Unix milliseconds.
    pub since_ms: i64,
    /// First time excluded, Unix milliseconds.
    pub until_ms: i64,
}

impl Default for Filter {
    fn default() -> Filter {
        Filter { since_ms: i64::MIN, until_ms: i64::MAX }
    }
}

/// A ledger opened for reading.
pub enum Reader {
    /// An SQLite file, read-only.
    Sqlite {
        /// The connection.
        conn: Connection,
        /// The file.
        path: PathBuf,
    },
    /// A PostgreSQL database.
    Postgres(super::postgres::PgReader),
}

impl Reader {
    /// Opens the SQLite ledger at `path` read-only.
    pub fn open(path: &Path) -> Result<Reader, LedgerError> {
        let conn =
            Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
                .map_err(sqlite(path))?;
        conn.busy_timeout(Duration::from_secs(5)).map_err(sqlite(path))?;
        Ok(Reader::Sqlite { conn, path: path.to_path_buf() })
    }

    /// Opens `source`: a `postgres://` URL, else an SQLite file.
    pub fn open_source(source: &str, password_file: Option<&Path>) -> Result<Reader, LedgerError> {
        if super::postgres::is_url(source) {
            super::postgres::PgReader::connect(source, password_file).map(Reader::Postgres)
        } else {
            Reader::open(Path::new(source))
        }
    }

    /// Calls `each` with every row in `filter`, oldest first; stops at the
    /// first error `each` returns.
    pub fn each(&self, filter: Filter, each: &mut dyn FnMut(Record) -> std::io::Result<()>) -> Result<(), LedgerError> {
        match self {
            Reader::Sqlite { conn, path } => {
                let have = columns(conn, "charges").map_err(sqlite(path))?;
                // A file of an older crawlgate, read-only, is not migrated:
                // what it lacks reads as empty.
                let select: Vec<String> = COLUMNS
                    .split(", ")
                    .map(|c| match c {
                        _ if have.iter().any(|h| h == c) && c != "charge_id" => c.to_string(),
                        "charge_id" if have.iter().any(|h| h == c) => {
                            "coalesce(charge_id, instance || ':' || id)".to_string()
                        }
                        "charge_id" => "instance || ':' || id".to_string(),
                        "host" => "''".to_string(),
                        _ => "NULL".to_string(),
                    })
                    .collect();
                let sql = format!(
                    "SELECT {} FROM charges WHERE time_ms >= ?1 AND time_ms < ?2 ORDER BY time_ms, id",
                    select.join(", ")
                );
                let mut stmt = conn.prepare(&sql).map_err(sqlite(path))?;
                let mut rows = stmt.query([filter.since_ms, filter.until_ms]).map_err(sqlite(path))?;
                while let Some(row) = rows.next().map_err(sqlite(path))? {
                    let r = from_row(row).map_err(sqlite(path))?;
                    each(r).map_err(|e| LedgerError::Invalid(format!("cannot write: {e}")))?;
                }
                Ok(())
            }
            Reader::Postgres(pg) => pg.each(filter, each),
        }
    }

    /// Every charge from `since_ms` (Unix milliseconds) on, oldest first,
    /// in memory (tests and small ledgers; exports stream with
    /// [`Reader::each`]).
    pub fn export(&self, since_ms: i64) -> Result<Vec<Record>, LedgerError> {
        let mut out = Vec::new();
        self.each(Filter { since_ms, ..Filter::default() }, &mut |r| {
            out.push(r);
            Ok(())
        })?;
        Ok(out)
    }

    /// Charges and amounts per UTC day and agent (and currency), from
    /// `since_ms` on, net of void rows.
    pub fn summary(&self, since_ms: i64) -> Result<Vec<Summary>, LedgerError> {
        let mut s = Summarizer::new(&[GroupBy::Day, GroupBy::Agent]);
        self.each(Filter { since_ms, ..Filter::default() }, &mut |r| {
            s.add(&r);
            Ok(())
        })?;
        Ok(s.finish())
    }
}

/// A dimension of a summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum GroupBy {
    /// The site's host.
    Host,
    /// The agent's token.
    Agent,
    /// The payer: key id or license subject.
    Payer,
    /// The UTC day.
    Day,
    /// The UTC month.
    Month,
}

impl GroupBy {
    /// Its name in `--group-by` and in a summary's header.
    pub fn name(self) -> &'static str {
        match self {
            GroupBy::Host => "host",
            GroupBy::Agent => "agent",
            GroupBy::Payer => "payer",
            GroupBy::Day => "day",
            GroupBy::Month => "month",
        }
    }

    /// Parses `--group-by host,agent,...`.
    pub fn parse_list(s: &str) -> Result<Vec<GroupBy>, LedgerError> {
        let mut out = Vec::new();
        for name in s.split(',').map(str::trim) {
            let g = match name {
                "host" => GroupBy::Host,
                "agent" => GroupBy::Agent,
                "payer" => GroupBy::Payer,
                "day" => GroupBy::Day,
                "month" => GroupBy::Month,
                _ => {
                    return Err(LedgerError::Invalid(format!(
                        "--group-by: `{name}` is not one of host, agent, payer, day, month"
                    )))
                }
            };
            if out.contains(&g) {
                return Err(LedgerError::Invalid(format!("--group-by: `{name}` is listed twice")));
            }
            out.push(g);
        }
        Ok(out)
    }

    fn key(self, r: &Record) -> String {
        match self {
            GroupBy::Host => r.host.clone(),
            GroupBy::Agent => r.agent.clone(),
            GroupBy::Payer => r.subject.clone(),
            GroupBy::Day => rfc3339(r.time_ms)[..10].to_string(),
            GroupBy::Month => rfc3339(r.time_ms)[..7].to_string(),
        }
    }

    fn width(self) -> usize {
        match self {
            GroupBy::Host | GroupBy::Agent => 24,
            GroupBy::Payer => 43,
            GroupBy::Day => 10,
            GroupBy::Month => 7,
        }
    }
}

/// One line of a summary.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Summary {
    /// The values of the group-by dimensions, in their order.
    pub keys: Vec<(GroupBy, String)>,
    /// ISO 4217 code.
    pub currency: String,
    /// Digits of its minor unit.
    pub exponent: u8,
    /// How many charges, net of voids.
    pub charges: i64,
    /// Their sum in minor units, net of voids.
    pub amount_minor: i64,
}

impl serde::Serialize for GroupBy {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// Sums rows as they stream by.
pub struct Summarizer {
    by: Vec<GroupBy>,
    lines: BTreeMap<(Vec<String>, String), (u8, i64, i64)>,
}

impl Summarizer {
    /// A summary grouped by `by` (and always by currency).
    pub fn new(by: &[GroupBy]) -> Summarizer {
        Summarizer { by: by.to_vec(), lines: BTreeMap::new() }
    }

    /// Adds a row: a charge counts once, a void row takes one away.
    pub fn add(&mut self, r: &Record) {
        let keys = self.by.iter().map(|g| g.key(r)).collect();
        let e = self.lines.entry((keys, r.currency.clone())).or_insert((r.exponent, 0, 0));
        let sign = if r.void.is_some() { -1 } else { 1 };
        let amount = i64::try_from(r.amount_minor).unwrap_or(i64::MAX);
        e.0 = e.0.max(r.exponent);
        e.1 += sign;
        e.2 = e.2.saturating_add(sign * amount);
    }

    /// The lines, by their keys.
    pub fn finish(self) -> Vec<Summary> {
        let by = self.by;
        self.lines
            .into_iter()
            .map(|((keys, currency), (exponent, charges, amount_minor))| Summary {
                keys: by.iter().copied().zip(keys).collect(),
                currency,
                exponent,
                charges,
                amount_minor,
            })
            .collect()
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

fn signed_decimal(amount_minor: i64, exponent: u8) -> String {
    let d = decimal(amount_minor.unsigned_abs(), exponent);
    if amount_minor < 0 {
        format!("-{d}")
    } else {
        d
    }
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
    parse_time("--since", s)
}

/// Parses `--until` (the first time excluded), as [`parse_since`]: `--until
/// 2026-12-01` ends with the last moment of November.
pub fn parse_until(s: &str) -> Result<i64, LedgerError> {
    parse_time("--until", s)
}

fn parse_time(flag: &str, s: &str) -> Result<i64, LedgerError> {
    let bad = || LedgerError::Invalid(format!("{flag}: `{s}` is not YYYY-MM-DD, YYYY-MM-DDTHH:MM:SSZ or Unix seconds"));
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

/// The CSV header of [`to_csv`] and [`CsvWriter`].
pub const CSV_HEADER: &str = "time,charge_id,request_id,instance,host,agent,payer,dialect,path,currency,amount,amount_minor,status,bytes,settlement,evidence,voids,void";

/// Writes records as CSV one at a time (RFC 4180: lines end in `\n`,
/// fields with a comma, quote or line break quoted), after a header line.
/// A field that a spreadsheet would read as a formula (it begins with
/// `=`, `+`, `-`, `@`, a tab or a carriage return) gets a `'` in front,
/// as OWASP's "CSV Injection" advice says: a payer name or path comes from
/// outside and must not run in an accountant's spreadsheet.
pub struct CsvWriter<W: std::io::Write> {
    out: W,
}

impl<W: std::io::Write> CsvWriter<W> {
    /// Writes the header line.
    pub fn new(mut out: W) -> std::io::Result<CsvWriter<W>> {
        out.write_all(CSV_HEADER.as_bytes())?;
        out.write_all(b"\n")?;
        Ok(CsvWriter { out })
    }

    /// Writes one record.
    pub fn write(&mut self, r: &Record) -> std::io::Result<()> {
        let fields = [
            rfc3339(r.time_ms),
            r.charge_id.clone(),
            r.request_id.clone(),
            r.instance.clone(),
            r.host.clone(),
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
            r.evidence.clone().unwrap_or_default(),
            r.voids.clone().unwrap_or_default(),
            r.void.clone().unwrap_or_default(),
        ];
        let line: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
        self.out.write_all(line.join(",").as_bytes())?;
        self.out.write_all(b"\n")
    }

    /// The writer back.
    pub fn into_inner(self) -> W {
        self.out
    }
}

/// Records as CSV, with a header line ([`CsvWriter`] into a string).
pub fn to_csv(records: &[Record]) -> String {
    let mut w = match CsvWriter::new(Vec::new()) {
        Ok(w) => w,
        Err(_) => return String::new(),
    };
    for r in records {
        if w.write(r).is_err() {
            break;
        }
    }
    String::from_utf8_lossy(&w.into_inner()).into_owned()
}

/// One CSV field: neutralised when it would start a formula, then quoted
/// when it holds a comma, quote or line break.
fn csv_field(f: &str) -> String {
    let f: std::borrow::Cow<'_, str> =
        if f.starts_with(['=', '+', '-', '@', '\t', '\r']) { format!("'{f}").into() } else { f.into() };
    if f.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", f.replace('"', "\"\""))
    } else {
        f.into_owned()
    }
}

/// One record as a JSON object: `time` in RFC 3339 and `amount` as a
/// decimal string beside `amount_minor`.
pub fn json_line(r: &Record) -> String {
    let evidence: Option<serde_json::Value> = r
        .evidence
        .as_deref()
        .map(|e| serde_json::from_str(e).unwrap_or_else(|_| serde_json::Value::String(e.to_string())));
    serde_json::json!({
        "time": rfc3339(r.time_ms),
        "charge_id": r.charge_id,
        "request_id": r.request_id,
        "instance": r.instance,
        "host": r.host,
        "agent": r.agent,
        "payer": r.subject,
        "dialect": r.dialect,
        "path": r.path,
        "currency": r.currency,
        "amount": decimal(r.amount_minor, r.exponent),
        "amount_minor": r.amount_minor,
        "status": r.status,
        "bytes": r.bytes,
        "settlement": r.settlement,
        "evidence": evidence,
        "voids": r.voids,
        "void": r.void,
    })
    .to_string()
}

/// Records as JSON Lines: one object per charge ([`json_line`]).
pub fn to_json_lines(records: &[Record]) -> String {
    let mut out = String::new();
    for r in records {
        out.push_str(&json_line(r));
        out.push('\n');
    }
    out
}

/// A summary as an aligned text table: the group-by columns, currency,
/// charges and amount.
pub fn summary_table(rows: &[Summary]) -> String {
    let by: Vec<GroupBy> = rows.first().map(|s| s.keys.iter().map(|(g, _)| *g).collect()).unwrap_or_default();
    summary_table_by(&by, rows)
}

/// [`summary_table`] with the columns named even when there is no row.
pub fn summary_table_by(by: &[GroupBy], rows: &[Summary]) -> String {
    let mut out = String::new();
    for g in by {
        out += &format!("{:<w$}  ", g.name(), w = g.width());
    }
    out += &format!("{:<8}  {:>8}  {:>14}\n", "currency", "charges", "amount");
    for s in rows {
        for (g, v) in &s.keys {
            out += &format!("{:<w$}  ", v, w = g.width());
        }
        out += &format!("{:<8}  {:>8}  {:>14}\n", s.currency, s.charges, signed_decimal(s.amount_minor, s.exponent));
    }
    out
}

/// A summary as JSON lines: the group-by keys, currency, charges, amount.
pub fn summary_json(rows: &[Summary]) -> String {
    let mut out = String::new();
    for s in rows {
        let mut m = serde_json::Map::new();
        for (g, v) in &s.keys {
            m.insert(g.name().into(), v.clone().into());
        }
        m.insert("currency".into(), s.currency.clone().into());
        m.insert("charges".into(), s.charges.into());
        m.insert("amount".into(), signed_decimal(s.amount_minor, s.exponent).into());
        m.insert("amount_minor".into(), s.amount_minor.into());
        out.push_str(&serde_json::Value::Object(m).to_string());
        out.push('\n');
    }
    out
}

/// A summary as CSV: the group-by columns, currency, charges, amount,
/// amount_minor (neutralised as exports are).
pub fn summary_csv(by: &[GroupBy], rows: &[Summary]) -> String {
    let mut head: Vec<&str> = by.iter().map(|g| g.name()).collect();
    head.extend(["currency", "charges", "amount", "amount_minor"]);
    let mut out = head.join(",");
    out.push('\n');
    for s in rows {
        let mut f: Vec<String> = s.keys.iter().map(|(_, v)| csv_field(v)).collect();
        f.push(csv_field(&s.currency));
        f.push(s.charges.to_string());
        f.push(signed_decimal(s.amount_minor, s.exponent));
        f.push(s.amount_minor.to_string());
        out.push_str(&f.join(","));
        out.push('\n');
    }
    out
}
