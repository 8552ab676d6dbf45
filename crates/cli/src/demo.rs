//! crawlgate demo (being written).
#![allow(unused_variables)]

use std::process::ExitCode;

/// Options of `crawlgate demo`.
#[derive(Debug, clap::Args)]
pub struct DemoArgs {}
/// `crawlgate demo`.
pub fn demo(args: DemoArgs) -> anyhow::Result<ExitCode> { anyhow::bail!("not yet implemented") }
