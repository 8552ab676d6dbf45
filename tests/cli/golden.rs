//! Golden files for every policy shipped in `conf/` and `tests/data/`.
//!
//! - Every `conf/**/*.toml` and `tests/data/*.toml` passes `crawlgate check`
//!   and renders byte for byte to the goldens next to it:
//!   `<name>.robots.txt` (`crawlgate render robots.txt`) and, when the policy
//!   enables agents.txt, `<name>.agents.txt` (`crawlgate render agents.txt`),
//!   which must also pass `crawlgate agents-txt verify`, and, when it has a
//!   `[tdmrep]` table, `<name>.tdmrep.json` (`crawlgate render tdmrep.json`).
//!   A golden without its policy, or an agents.txt or tdmrep.json golden for
//!   a policy that does not publish one, fails.
//! - Every `tests/data/invalid/*.toml` makes `crawlgate check` exit 1 with
//!   stdout exactly equal to `<name>.errors` (`FILE:LINE:COL: message`, the
//!   file as given on the command line: always the path relative to the
//!   workspace root, which is the binary's working directory here).
//! - Every `tests/data/warnings/*.toml` passes `crawlgate check` (exit 0)
//!   with stderr exactly equal to `<name>.warnings`, and `crawlgate check
//!   --json` prints exactly `<name>.json`.
//!
//! After an intended change to the policy crate or to a policy, regenerate
//! the goldens instead of comparing them, then read the diff before
//! committing it (a golden that enshrines a bug is worse than none):
//!
//! ```sh
//! cargo build -p crawlgate
//! UPDATE_GOLDEN=1 cargo test -p crawlgate-e2e --test cli golden::
//! git diff conf tests/data
//! ```
//!
//! (`golden::` keeps the run to this module: other modules honour
//! `UPDATE_GOLDEN` for their own goldens.) In that mode goldens are written
//! (and orphaned or stale ones deleted); a valid policy that fails `check`,
//! or an invalid one that passes, still fails the test.

// A test reports a failure by panicking.
#![allow(clippy::panic)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use crawlgate_e2e::{crawlgate, stderr, stdout, workspace_root};
use crawlgate_testkit::{golden, TempDir};

/// `path` relative to the workspace root, with `/` separators: what the
/// binary is given and prints back.
fn rel(path: &Path) -> String {
    let root = workspace_root();
    let p = path.strip_prefix(&root).unwrap_or(path);
    p.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect::<Vec<_>>().join("/")
}

/// Files under `dir` (into subdirectories when `recursive`) whose name
/// ends with `suffix`, sorted.
fn files(dir: &Path, recursive: bool, suffix: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let entries = fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display())).path();
        if path.is_dir() {
            if recursive {
                out.extend(files(&path, true, suffix));
            }
        } else if path.file_name().is_some_and(|n| n.to_string_lossy().ends_with(suffix)) {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// Directories holding valid policies and their goldens (recursive or not).
fn valid_dirs() -> [(PathBuf, bool); 2] {
    let root = workspace_root();
    [(root.join("conf"), true), (root.join("tests/data"), false)]
}

fn invalid_dir() -> PathBuf {
    workspace_root().join("tests/data/invalid")
}

fn warnings_dir() -> PathBuf {
    workspace_root().join("tests/data/warnings")
}

/// Every valid policy, relative to the workspace root.
fn valid_policies() -> Vec<String> {
    let list: Vec<String> = valid_dirs().iter().flat_map(|(d, r)| files(d, *r, ".toml")).map(|p| rel(&p)).collect();
    for must in ["conf/crawlgate.toml", "conf/demo.toml"] {
        assert!(list.iter().any(|p| p == must), "{must} not found among {list:?}");
    }
    assert!(list.iter().any(|p| p.starts_with("tests/data/")), "no policy found in tests/data/");
    list
}

/// Every invalid policy, relative to the workspace root.
fn invalid_policies() -> Vec<String> {
    let list: Vec<String> = files(&invalid_dir(), false, ".toml").iter().map(|p| rel(p)).collect();
    assert!(!list.is_empty(), "no policy found in tests/data/invalid/");
    list
}

/// `x/name.toml` -> `x/name<suffix>` (absolute).
fn sibling(policy: &str, suffix: &str) -> PathBuf {
    let stem = policy.strip_suffix(".toml").unwrap_or(policy);
    workspace_root().join(format!("{stem}{suffix}"))
}

/// Compares `actual` with the golden at `path`, or writes it when updating.
/// Returns a failure message.
fn check_golden(path: &Path, actual: &[u8], what: &str) -> Option<String> {
    golden::check(path, &rel(path), actual, what)
}

/// Deletes a golden that should not exist when updating; otherwise reports it.
fn unwanted_golden(path: &Path, why: &str) -> Option<String> {
    golden::unwanted(path, &rel(path), why)
}

fn describe(cmd: &str, out: &Output) -> String {
    format!(
        "`crawlgate {cmd}` exited with {:?}\n--- stdout\n{}--- stderr\n{}",
        out.status.code(),
        stdout(out),
        stderr(out)
    )
}

fn finish(failures: Vec<String>, checked: usize) {
    assert!(failures.is_empty(), "{} of {checked} failed:\n\n{}", failures.len(), failures.join("\n\n"));
}

#[test]
fn valid_policies_pass_check() {
    let policies = valid_policies();
    let mut failures = Vec::new();
    let state = TempDir::new("cli-golden-state");
    for p in &policies {
        let p = &on_this_host(p, &state);
        let out = crawlgate(&["check", "--config", p]);
        if !out.status.success() || !stdout(&out).starts_with(&format!("OK {p}: ")) {
            failures.push(describe(&format!("check --config {p}"), &out));
        }
    }
    finish(failures, policies.len());
}

/// The directory a shipped policy keeps its state in (the ledger, the IP
/// lists), which `check` requires to exist and this host lacks.
const STATE_DIR: &str = "/var/lib/crawlgate";

/// `policy` itself, or, when a line that is not a comment names
/// [`STATE_DIR`], a copy in `scratch`
/// naming `scratch` instead (as scripts/check-deploy does for the
/// ConfigMap's policy): every other error and warning still shows.
fn on_this_host(policy: &str, scratch: &TempDir) -> String {
    let text = fs::read_to_string(workspace_root().join(policy)).unwrap_or_else(|e| panic!("{policy}: {e}"));
    if !text.lines().any(|l| !l.trim_start().starts_with('#') && l.contains(STATE_DIR)) {
        return policy.to_string();
    }
    let name = policy.replace('/', "_");
    let copy = scratch.write(&name, text.replace(STATE_DIR, &scratch.path().display().to_string()));
    copy.display().to_string()
}

#[test]
fn robots_txt_matches_goldens() {
    let policies = valid_policies();
    let mut failures = Vec::new();
    for p in &policies {
        let out = crawlgate(&["render", "robots.txt", "--config", p]);
        if !out.status.success() {
            failures.push(describe(&format!("render robots.txt --config {p}"), &out));
            continue;
        }
        failures.extend(check_golden(&sibling(p, ".robots.txt"), &out.stdout, "`crawlgate render robots.txt`"));
    }
    finish(failures, policies.len());
}

#[test]
fn agents_txt_matches_goldens_and_verifies() {
    let policies = valid_policies();
    let mut failures = Vec::new();
    for p in &policies {
        let golden = sibling(p, ".agents.txt");
        let out = crawlgate(&["render", "agents.txt", "--config", p]);
        if out.status.success() {
            if let Some(f) = check_golden(&golden, &out.stdout, "`crawlgate render agents.txt`") {
                failures.push(f);
                continue;
            }
            let g = rel(&golden);
            let verify = crawlgate(&["agents-txt", "verify", &g]);
            if !verify.status.success() {
                failures.push(describe(&format!("agents-txt verify {g}"), &verify));
            }
        } else if out.status.code() == Some(1) && stderr(&out).contains("agents.txt is disabled") {
            if golden.exists() {
                failures.extend(unwanted_golden(&golden, "the policy publishes no agents.txt"));
            }
        } else {
            failures.push(describe(&format!("render agents.txt --config {p}"), &out));
        }
    }
    finish(failures, policies.len());
}

#[test]
fn tdmrep_json_matches_goldens() {
    let policies = valid_policies();
    let mut failures = Vec::new();
    for p in &policies {
        let golden = sibling(p, ".tdmrep.json");
        let out = crawlgate(&["render", "tdmrep.json", "--config", p]);
        if out.status.success() {
            failures.extend(check_golden(&golden, &out.stdout, "`crawlgate render tdmrep.json`"));
        } else if out.status.code() == Some(1) && stderr(&out).contains("tdmrep.json is not published") {
            if golden.exists() {
                failures.extend(unwanted_golden(&golden, "the policy publishes no tdmrep.json"));
            }
        } else {
            failures.push(describe(&format!("render tdmrep.json --config {p}"), &out));
        }
    }
    finish(failures, policies.len());
}

#[test]
fn no_orphaned_goldens() {
    let mut failures = Vec::new();
    let mut checked = 0;
    let mut orphans = |dir: &Path, recursive: bool, suffix: &str| {
        for golden in files(dir, recursive, suffix) {
            checked += 1;
            let name = golden.to_string_lossy();
            let policy = PathBuf::from(format!("{}.toml", &name[..name.len() - suffix.len()]));
            if !policy.exists() {
                failures.extend(unwanted_golden(&golden, &format!("no {} next to it", rel(&policy))));
            }
        }
    };
    for (dir, recursive) in valid_dirs() {
        orphans(&dir, recursive, ".robots.txt");
        orphans(&dir, recursive, ".agents.txt");
        orphans(&dir, recursive, ".tdmrep.json");
    }
    orphans(&invalid_dir(), false, ".errors");
    orphans(&warnings_dir(), false, ".warnings");
    orphans(&warnings_dir(), false, ".json");
    // Goldens of valid policies do not belong among the invalid ones.
    for suffix in [".robots.txt", ".agents.txt", ".tdmrep.json"] {
        for golden in files(&invalid_dir(), false, suffix) {
            checked += 1;
            failures.extend(unwanted_golden(&golden, "invalid policies render nothing"));
        }
    }
    finish(failures, checked);
}

#[test]
fn invalid_policies_report_every_error() {
    let policies = invalid_policies();
    let mut failures = Vec::new();
    for p in &policies {
        let out = crawlgate(&["check", "--config", p]);
        if out.status.code() != Some(1) {
            failures.push(format!(
                "{p}: expected exit 1 (an invalid policy)\n{}",
                describe(&format!("check --config {p}"), &out)
            ));
            continue;
        }
        let printed = stdout(&out);
        // stderr ends with the count of the errors on stdout.
        let n = printed.lines().count();
        let summary = format!("{p}: {n} error{}", if n == 1 { "" } else { "s" });
        if n == 0 || !printed.lines().all(|l| l.starts_with(&format!("{p}:"))) || !stderr(&out).contains(&summary) {
            failures.push(format!(
                "{p}: expected FILE:LINE:COL lines and `{summary}` on stderr\n{}",
                describe(&format!("check --config {p}"), &out)
            ));
            continue;
        }
        failures.extend(check_golden(&sibling(p, ".errors"), &out.stdout, "`crawlgate check` stdout"));
    }
    finish(failures, policies.len());
}

#[test]
fn several_errors_are_reported_at_once() {
    let p = "tests/data/invalid/several-errors.toml";
    let out = crawlgate(&["check", "--config", p]);
    let printed = stdout(&out);
    assert!(
        printed.lines().count() >= 10,
        "expected every error of {p} at once:\n{}",
        describe(&format!("check --config {p}"), &out)
    );
    let positions: Vec<(usize, usize)> = printed
        .lines()
        .filter_map(|l| {
            let mut it = l.strip_prefix(&format!("{p}:"))?.splitn(3, ':');
            Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
        })
        .collect();
    assert_eq!(positions.len(), printed.lines().count(), "every line is FILE:LINE:COL: message:\n{printed}");
    assert!(positions.windows(2).all(|w| w[0] <= w[1]), "errors are in file order:\n{printed}");
}

#[test]
fn warning_fixtures_print_exact_warnings() {
    let policies: Vec<String> = files(&warnings_dir(), false, ".toml").iter().map(|p| rel(p)).collect();
    assert!(policies.len() >= 4, "expected the warning fixtures in tests/data/warnings/, found {policies:?}");
    let mut failures = Vec::new();
    for p in &policies {
        let out = crawlgate(&["check", "--config", p]);
        if !out.status.success() || !stdout(&out).starts_with(&format!("OK {p}: ")) {
            failures.push(describe(&format!("check --config {p}"), &out));
            continue;
        }
        // Errors and warnings on one stream: stdout, after the summary
        // line (and its `verify` lines); nothing on stderr.
        if !out.stderr.is_empty() {
            failures
                .push(format!("{p}: expected nothing on stderr\n{}", describe(&format!("check --config {p}"), &out)));
            continue;
        }
        let warnings: String =
            stdout(&out).lines().filter(|l| l.starts_with(&format!("{p}:"))).map(|l| format!("{l}\n")).collect();
        failures.extend(check_golden(&sibling(p, ".warnings"), warnings.as_bytes(), "`crawlgate check` warnings"));
        let json = crawlgate(&["check", "--json", "--config", p]);
        if json.status.code() != Some(0) || !json.stderr.is_empty() {
            failures.push(describe(&format!("check --json --config {p}"), &json));
            continue;
        }
        failures.extend(check_golden(&sibling(p, ".json"), &json.stdout, "`crawlgate check --json` stdout"));
    }
    finish(failures, policies.len());
}
