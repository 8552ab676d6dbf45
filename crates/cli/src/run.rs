//! `crawlgate run`: the proxy on a policy file, hot-reloaded.

use std::path::Path;
use std::process::ExitCode;

/// `crawlgate run`. Returns only when startup fails (exit 1 with every
/// policy error); a running proxy exits through Pingora's signal handling.
pub fn run(config: &Path) -> anyhow::Result<ExitCode> {
    let source = crate::config::read_policy_file(config)?;
    if let Err(errors) = crawlgate_policy::load(&source, &config.display().to_string()) {
        eprintln!("{errors}");
        eprintln!("crawlgate: {} is invalid; not starting", config.display());
        return Ok(ExitCode::from(1));
    }
    crawlgate_proxy::run(config)?;
    Ok(ExitCode::SUCCESS)
}
