//! Reading and loading the policy file from disk (the only place the CLI
//! touches it).

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use crawlgate_policy::{load, Loaded};

/// Reads a policy file, with an error that names the path.
pub fn read_policy_file(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read policy file {}", path.display()))
}

/// Loads a policy; on errors prints them (stdout) and returns exit 1.
pub(crate) fn load_or_report(config: &Path) -> anyhow::Result<Result<Loaded, ExitCode>> {
    let source = read_policy_file(config)?;
    match load(&source, &config.display().to_string()) {
        Ok(loaded) => {
            for w in &loaded.warnings {
                eprintln!("{w}");
            }
            Ok(Ok(loaded))
        }
        Err(errors) => {
            outln!("{errors}");
            eprintln!("{}: {} error{}", config.display(), errors.0.len(), if errors.0.len() == 1 { "" } else { "s" });
            Ok(Err(ExitCode::from(1)))
        }
    }
}
