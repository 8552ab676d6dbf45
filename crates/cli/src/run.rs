//! crawlgate run (being written).
#![allow(unused_variables)]

use std::process::ExitCode;

use std::path::Path;
/// `crawlgate run`.
pub fn run(config: &Path) -> anyhow::Result<ExitCode> { anyhow::bail!("not yet implemented") }
