//! `crawlgate ledger export` and `crawlgate ledger summary`: what an
//! operator bills from, read from an instance's ledger file.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use crawlgate_payment::ledger::{parse_since, summary_table, to_csv, to_json_lines, Reader};

/// The ledger file: `--file`, else the policy's `[payment] ledger`.
fn ledger_path(file: Option<&Path>, config: &Path) -> anyhow::Result<PathBuf> {
    if let Some(f) = file {
        return Ok(f.to_path_buf());
    }
    let source = crate::config::read_policy_file(config)?;
    let loaded = crawlgate_policy::load(&source, &config.display().to_string())
        .map_err(|d| anyhow::anyhow!("the policy has errors:\n{d}"))?;
    loaded
        .policy
        .payment()
        .ledger
        .clone()
        .map(PathBuf::from)
        .with_context(|| format!("{} names no ledger (no charge group); pass --file", config.display()))
}

fn since(s: Option<&str>) -> anyhow::Result<i64> {
    s.map_or(Ok(0), |s| parse_since(s).map_err(|e| anyhow::anyhow!("{e}")))
}

/// Prints every charge since `since` as CSV or JSON lines.
pub fn export(file: Option<&Path>, config: &Path, since_arg: Option<&str>, format: &str) -> anyhow::Result<ExitCode> {
    let since = since(since_arg)?;
    let path = ledger_path(file, config)?;
    let rows = Reader::open(&path).and_then(|r| r.export(since)).map_err(|e| anyhow::anyhow!("{e}"))?;
    let text = if format == "json" { to_json_lines(&rows) } else { to_csv(&rows) };
    crate::write_stdout(format_args!("{text}"), false);
    Ok(ExitCode::SUCCESS)
}

/// Prints charges and amounts per UTC day, agent and currency.
pub fn summary(file: Option<&Path>, config: &Path, since_arg: Option<&str>) -> anyhow::Result<ExitCode> {
    let since = since(since_arg)?;
    let path = ledger_path(file, config)?;
    let rows = Reader::open(&path).and_then(|r| r.summary(since)).map_err(|e| anyhow::anyhow!("{e}"))?;
    crate::write_stdout(format_args!("{}", summary_table(&rows)), false);
    Ok(ExitCode::SUCCESS)
}
