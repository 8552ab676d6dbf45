//! robots-test and import (being written).
#![allow(unused_variables)]

use std::process::ExitCode;

use std::path::Path;
/// `crawlgate robots-test`.
pub fn robots_test(robots_file: &Path, user_agent: &str, url: &str) -> anyhow::Result<ExitCode> { anyhow::bail!("not yet implemented") }
/// `crawlgate import`.
pub fn import(robots_file: &Path) -> anyhow::Result<ExitCode> { anyhow::bail!("not yet implemented") }
