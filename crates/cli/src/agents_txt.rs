//! `crawlgate agents-txt verify`: the strict agents.txt verifier run on a file.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;

/// `crawlgate agents-txt verify FILE`: prints `valid: N directives` (exit
/// 0) or `invalid: <reason>` naming the line (exit 1), on stdout. A file
/// that cannot be read exits 2; one that is not UTF-8 is invalid.
pub fn verify(file: &Path) -> anyhow::Result<ExitCode> {
    let bytes = std::fs::read(file).with_context(|| format!("cannot read agents.txt file {}", file.display()))?;
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            outln!("invalid: not UTF-8 text (invalid byte at offset {})", e.utf8_error().valid_up_to());
            return Ok(ExitCode::from(1));
        }
    };
    match crawlgate_policy::agents_txt::verify(&text) {
        // The wording is fixed (scripts match `valid: N directives`),
        // even for one directive.
        Ok(n) => {
            outln!("valid: {n} directives");
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            outln!("invalid: {e}");
            Ok(ExitCode::from(1))
        }
    }
}
