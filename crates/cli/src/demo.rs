//! `crawlgate demo` (being written).
#![allow(unused_variables)]
use std::process::ExitCode;
/// Options of `crawlgate demo`.
#[derive(Debug, clap::Args)]
pub struct DemoArgs {}
/// `crawlgate demo`.
pub fn demo(args: DemoArgs) -> anyhow::Result<ExitCode> { crate::sample_origin::start("127.0.0.1:0")?; anyhow::bail!("not yet implemented") }
