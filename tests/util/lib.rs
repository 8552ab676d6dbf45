//! Shared helpers for the end-to-end suite: locating the built binary,
//! running it, a real origin server and a running proxy process. Helpers
//! that are not about crawlgate (temporary directories, raw HTTP/1.1,
//! golden files, the conformance suite) live in `crawlgate-testkit`.

pub mod nginx;
pub mod origin;
pub mod proxy;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The workspace root (where `conf/` and `tests/data/` live).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."))
}

/// Path of the `crawlgate` binary in the test executable's profile
/// directory (`target/<profile>/deps/<test>` -> `target/<profile>/crawlgate`).
///
/// `cargo test` does not build another package's binary for this suite, so
/// `scripts/test` runs `cargo build -p crawlgate` first.
pub fn crawlgate_bin() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    let profile_dir = exe.parent().and_then(Path::parent).map(Path::to_path_buf).unwrap_or_default();
    let bin = profile_dir.join(format!("crawlgate{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.exists(),
        "crawlgate binary not found at {}: build it first: `cargo build -p crawlgate` (scripts/test does)",
        bin.display()
    );
    bin
}

/// Runs `crawlgate` with `args` from the workspace root, without
/// `CRAWLGATE_CONFIG` in its environment.
pub fn crawlgate(args: &[&str]) -> Output {
    Command::new(crawlgate_bin())
        .args(args)
        .current_dir(workspace_root())
        .env_remove("CRAWLGATE_CONFIG")
        .output()
        .expect("cannot run crawlgate")
}

/// Stdout of an output as UTF-8 text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Stderr of an output as UTF-8 text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Exit code of an output (-1 when killed by a signal).
pub fn code(out: &Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

/// A path as a `&str` argument.
pub fn arg(p: &Path) -> &str {
    p.to_str().unwrap_or_else(|| panic!("non-UTF-8 path {}", p.display()))
}
