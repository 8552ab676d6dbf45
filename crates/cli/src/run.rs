//! `crawlgate run`: the proxy on a policy file, hot-reloaded.

use std::path::Path;
use std::process::ExitCode;

/// `crawlgate run`. Returns only when startup fails (exit 1 with every
/// policy error); a running proxy exits through Pingora's signal handling.
pub fn run(config: &Path) -> anyhow::Result<ExitCode> {
    // A reload signal sent while the policy compiles must not end the
    // process (SIGHUP's default action).
    crawlgate_proxy::early_sighup();
    let source = crate::config::read_policy_file(config)?;
    let name = config.display().to_string();
    let loaded = match crawlgate_policy::load(&source, &name) {
        Ok(l) => l,
        Err(errors) => {
            eprintln!("{errors}");
            eprintln!("crawlgate: {} is invalid; not starting", config.display());
            return Ok(ExitCode::from(1));
        }
    };
    let errors = crate::config::host_errors(&loaded.policy, &source, &name);
    if !errors.is_empty() {
        for e in &errors {
            eprintln!("{e}");
        }
        eprintln!("crawlgate: {} is invalid; not starting", config.display());
        return Ok(ExitCode::from(1));
    }
    // The proxy runs on this compilation: the file is not read again (a
    // change made since is picked up by the watcher).
    crawlgate_proxy::run(loaded, &name, Some(config.to_path_buf()))?;
    Ok(ExitCode::SUCCESS)
}
