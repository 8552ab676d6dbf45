//! agents list (being written).
#![allow(unused_variables)]

use std::process::ExitCode;

/// `crawlgate agents list`.
pub fn list(category: Option<&str>, json: bool) -> anyhow::Result<ExitCode> { anyhow::bail!("not yet implemented") }
