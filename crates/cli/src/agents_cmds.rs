//! agents-txt verify (being written).
#![allow(unused_variables)]

use std::process::ExitCode;

use std::path::Path;
/// `crawlgate agents-txt verify`.
pub fn verify(file: &Path) -> anyhow::Result<ExitCode> { anyhow::bail!("not yet implemented") }
