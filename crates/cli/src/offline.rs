//! check, render and explain (being written).
#![allow(unused_variables)]

use std::process::ExitCode;

use std::path::Path;
/// `crawlgate check`.
pub fn check(config: &Path) -> anyhow::Result<ExitCode> { anyhow::bail!("not yet implemented") }
/// `crawlgate render`.
pub fn render(what: &str, config: &Path) -> anyhow::Result<ExitCode> { anyhow::bail!("not yet implemented") }
/// `crawlgate explain`.
pub fn explain(config: &Path, json: bool, user_agent: &str, urls: &[String]) -> anyhow::Result<ExitCode> { anyhow::bail!("not yet implemented") }
