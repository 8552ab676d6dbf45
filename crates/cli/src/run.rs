//! `crawlgate run` (being written).
#![allow(unused_variables)]
use std::path::Path;
use std::process::ExitCode;
/// `crawlgate run`.
pub fn run(config: &Path) -> anyhow::Result<ExitCode> { anyhow::bail!("not yet implemented") }
