//! `crawlgate ledger export|summary|migrate`: what an operator bills from,
//! read from one or several instances' SQLite files or from the fleet's
//! PostgreSQL database, and the PostgreSQL schema brought up to date.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use crawlgate_payment::ledger::{
    json_line, parse_since, parse_until, summary_csv, summary_json, summary_table_by, CsvWriter, Filter, GroupBy,
    Reader, Summarizer,
};

use crate::LedgerSource;

/// The ledgers to read and the password file: `--file` (repeated), else
/// the policy's `[payment] ledger` and `ledger_password_file`.
fn sources(s: &LedgerSource) -> anyhow::Result<(Vec<String>, Option<PathBuf>)> {
    if !s.files.is_empty() {
        return Ok((s.files.clone(), s.password_file.clone()));
    }
    let pay = policy_payment(&s.config.config)?;
    let ledger = pay
        .ledger
        .clone()
        .with_context(|| format!("{} names no ledger (no charge group); pass --file", s.config.config.display()))?;
    let password = s.password_file.clone().or(pay.ledger_password_file.map(PathBuf::from));
    Ok((vec![ledger], password))
}

fn policy_payment(config: &Path) -> anyhow::Result<crawlgate_policy::payment::PaymentSettings> {
    let source = crate::config::read_policy_file(config)?;
    let loaded = crawlgate_policy::load(&source, &config.display().to_string())
        .map_err(|d| anyhow::anyhow!("the policy has errors:\n{d}"))?;
    Ok(loaded.policy.payment().clone())
}

fn filter(s: &LedgerSource) -> anyhow::Result<Filter> {
    let mut f = Filter::default();
    if let Some(since) = &s.since {
        f.since_ms = parse_since(since).map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    if let Some(until) = &s.until {
        f.until_ms = parse_until(until).map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    Ok(f)
}

/// Calls `each` with every row of every source in the filter: one
/// source after the other, each oldest first.
fn each_row(
    s: &LedgerSource,
    each: &mut dyn FnMut(crawlgate_payment::ledger::Record) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    let f = filter(s)?;
    let (list, password) = sources(s)?;
    for source in &list {
        let reader = Reader::open_source(source, password.as_deref()).map_err(|e| anyhow::anyhow!("{e}"))?;
        reader.each(f, each).map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    Ok(())
}

/// Streams every row in the filter to stdout as CSV or JSON lines.
pub fn export(s: &LedgerSource, format: &str) -> anyhow::Result<ExitCode> {
    let out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let result = if format == "json" {
        let mut out = out;
        let r = each_row(s, &mut |r| {
            out.write_all(json_line(&r).as_bytes())?;
            out.write_all(b"\n")
        });
        r.and_then(|()| out.flush().map_err(Into::into))
    } else {
        let mut csv = CsvWriter::new(out)?;
        let r = each_row(s, &mut |r| csv.write(&r));
        r.and_then(|()| csv.into_inner().flush().map_err(Into::into))
    };
    match result {
        // A reader that stopped early (`| head`) is not an error.
        Err(e) if e.to_string().contains("Broken pipe") => Ok(ExitCode::SUCCESS),
        Err(e) => Err(e),
        Ok(()) => Ok(ExitCode::SUCCESS),
    }
}

/// Prints charges and amounts per currency and the `--group-by` columns.
pub fn summary(s: &LedgerSource, group_by: &str, format: &str) -> anyhow::Result<ExitCode> {
    let by = GroupBy::parse_list(group_by).map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut sum = Summarizer::new(&by);
    each_row(s, &mut |r| {
        sum.add(&r);
        Ok(())
    })?;
    let rows = sum.finish();
    let text = match format {
        "json" => summary_json(&rows),
        "csv" => summary_csv(&by, &rows),
        _ => summary_table_by(&by, &rows),
    };
    crate::write_stdout(format_args!("{text}"), false);
    Ok(ExitCode::SUCCESS)
}

/// Creates or migrates the PostgreSQL ledger's schema.
pub fn migrate(config: &Path, url: Option<&str>, password_file: Option<&Path>) -> anyhow::Result<ExitCode> {
    let (url, password) = match url {
        Some(u) => (u.to_string(), password_file.map(Path::to_path_buf)),
        None => {
            let pay = policy_payment(config)?;
            let url = pay
                .ledger
                .clone()
                .filter(|l| crawlgate_policy::payment::is_postgres_url(l))
                .with_context(|| format!("{} names no PostgreSQL ledger; pass --ledger", config.display()))?;
            (url, password_file.map(Path::to_path_buf).or(pay.ledger_password_file.map(PathBuf::from)))
        }
    };
    let (from, to) =
        crawlgate_payment::ledger::migrate_postgres(&url, password.as_deref()).map_err(|e| anyhow::anyhow!("{e}"))?;
    let target = crawlgate_payment::ledger::mask_url(&url);
    if from == to {
        crate::write_stdout(format_args!("{target}: ledger schema version {to}, current\n"), false);
    } else {
        crate::write_stdout(format_args!("{target}: ledger schema migrated from version {from} to {to}\n"), false);
    }
    Ok(ExitCode::SUCCESS)
}
