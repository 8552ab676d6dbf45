//! Reading the policy file from disk (the only place the CLI touches it).

use std::path::Path;

use anyhow::Context;

/// Reads a policy file, with an error that names the path.
pub fn read_policy_file(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read policy file {}", path.display()))
}
