//! Reading and loading the policy file from disk (the only place the CLI
//! touches it).

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use crawlgate_policy::{error_at_key, load, Diagnostic, Loaded, Policy};

/// Reads a policy file, with an error that names the path.
pub fn read_policy_file(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read policy file {}", path.display()))
}

/// What the policy names on this host that must exist before the proxy
/// starts: `verification.state_dir`, a writable directory (the IP lists'
/// cached copies are written there, and a proxy that cannot keep them
/// starts without lists after each restart).
pub fn host_errors(policy: &Policy, source: &str, file: &str) -> Vec<Diagnostic> {
    let mut out = state_dir_errors(policy, source, file);
    out.extend(payment_errors(policy, source, file));
    out
}

/// Whether a file can be created in `dir`: `None`, or what is wrong.
fn writable_dir(dir: &Path) -> Option<String> {
    let shown = dir.display();
    match std::fs::metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Some(format!("the directory `{shown}` does not exist (create it, writable by the user crawlgate runs as)"))
        }
        Err(e) => Some(format!("`{shown}`: {e}")),
        Ok(m) if !m.is_dir() => Some(format!("`{shown}` is not a directory")),
        Ok(_) => {
            let probe = dir.join(format!(".crawlgate-check-{}", std::process::id()));
            match std::fs::File::create(&probe) {
                Ok(_) => {
                    let _ = std::fs::remove_file(&probe);
                    None
                }
                Err(e) => Some(format!("the directory `{shown}` is not writable by this user: {e}")),
            }
        }
    }
}

/// What `run` meets at start from `[payment]` alone, found without
/// starting: the ledger's (or spool's) directory, a PostgreSQL URL the
/// client cannot read, a password file, and the license server's JWKS
/// or x402 facilitator URL that the outbound client refuses (not https,
/// not public without `allow_private_addresses`). Each at its key.
fn payment_errors(policy: &Policy, source: &str, file: &str) -> Vec<Diagnostic> {
    let pay = policy.payment();
    let mut out = Vec::new();
    if !pay.charging {
        return out;
    }
    let written = |key: &str| crawlgate_policy::key_written(source, &["payment", key]);
    let mut at = |key: &[&str], msg: String| out.push(error_at_key(source, file, key, msg));
    if let Some(ledger) = pay.ledger.as_deref() {
        if pay.ledger_is_postgres() {
            if let Err(e) = crawlgate_payment::ledger::check_url(ledger) {
                at(&["payment", "ledger"], format!("payment.ledger: {e}"));
            }
            if let Some(spool) = pay.ledger_spool.as_deref().filter(|_| written("ledger_spool")) {
                if let Some(e) = Path::new(spool).parent().and_then(writable_dir) {
                    at(&["payment", "ledger_spool"], format!("payment.ledger_spool: {e}"));
                }
            }
            if let Some(pw) = pay.ledger_password_file.as_deref() {
                if let Err(e) = std::fs::File::open(pw) {
                    at(&["payment", "ledger_password_file"], format!("payment.ledger_password_file: `{pw}`: {e}"));
                }
            }
        } else if written("ledger") {
            if let Some(e) = Path::new(ledger).parent().and_then(writable_dir) {
                at(&["payment", "ledger"], format!("payment.ledger: {e}"));
            }
        }
    }
    if let Some(rsl) = &pay.rsl {
        if let Err(e) = crawlgate_payment::rsl::LicenseVerifier::new(rsl.clone()) {
            let key: &[&str] = if rsl.jwks.is_some() { &["payment", "rsl", "jwks"] } else { &["payment", "rsl"] };
            at(key, format!("payment.rsl: {e}"));
        }
    }
    if let Some(x) = &pay.x402 {
        if let Err(e) = crawlgate_payment::x402::Facilitator::new(x) {
            at(&["payment", "x402", "facilitator"], format!("payment.x402.facilitator: {e}"));
        }
    }
    out
}

/// `verification.state_dir`: a writable directory.
fn state_dir_errors(policy: &Policy, source: &str, file: &str) -> Vec<Diagnostic> {
    let Some(dir) = &policy.settings().verification.state_dir else { return Vec::new() };
    let key = ["verification", "state_dir"];
    let problem = match std::fs::metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Some(format!("`{dir}` does not exist (create it, writable by the user crawlgate runs as)"))
        }
        Err(e) => Some(format!("`{dir}`: {e}")),
        Ok(m) if !m.is_dir() => Some(format!("`{dir}` is not a directory")),
        Ok(_) => {
            let probe = Path::new(dir).join(format!(".crawlgate-check-{}", std::process::id()));
            match std::fs::File::create(&probe) {
                Ok(_) => {
                    let _ = std::fs::remove_file(&probe);
                    None
                }
                Err(e) => Some(format!("`{dir}` is not writable by this user: {e}")),
            }
        }
    };
    problem.map(|p| error_at_key(source, file, &key, format!("verification.state_dir: {p}"))).into_iter().collect()
}

/// Loads a policy; on errors prints them (stdout) and returns exit 1.
/// Warnings are counted on stderr, out of the way of what the command
/// prints (`check` lists them).
pub(crate) fn load_or_report(config: &Path) -> anyhow::Result<Result<Loaded, ExitCode>> {
    load_or_report_to(config, true)
}

/// [`load_or_report`], leaving the warnings to the caller unless
/// `print_warnings` (then one stderr line counts them): `check` prints
/// them on stdout with its errors.
pub(crate) fn load_or_report_to(config: &Path, print_warnings: bool) -> anyhow::Result<Result<Loaded, ExitCode>> {
    let source = read_policy_file(config)?;
    let file = config.display().to_string();
    match load(&source, &file) {
        Ok(loaded) => {
            // `check` lists the warnings; a command that only uses the
            // policy says they exist, once, instead of repeating them all
            // on every call.
            let n = loaded.warnings.len();
            if print_warnings && n > 0 {
                eprintln!(
                    "{file}: {n} warning{} (`crawlgate check --config {file}` lists {})",
                    if n == 1 { "" } else { "s" },
                    if n == 1 { "it" } else { "them" }
                );
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
