//! crawlgate-proxy (being written; the real wiring lands with the policy API).
#![allow(missing_docs, unused_variables)]
use std::path::{Path, PathBuf};
pub fn run(path: &Path) -> anyhow::Result<()> { anyhow::bail!("not yet implemented") }
pub fn run_source(source: &str, file_name: &str, watch: Option<PathBuf>) -> anyhow::Result<()> { anyhow::bail!("not yet implemented") }
