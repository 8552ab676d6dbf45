//! Records the commit the binary is built from for `crawlgate_build_info`:
//! `CRAWLGATE_COMMIT` from the environment when set (a container build has
//! no .git), else `git rev-parse --short HEAD`, else `unknown`. Never fails
//! the build.

fn main() {
    // The environment wins: a container build has no .git
    // (deploy/docker/Dockerfile passes it as a build arg).
    let from_env = std::env::var("CRAWLGATE_COMMIT").ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
    let commit = from_env
        .or_else(|| {
            std::process::Command::new("git")
                .args(["rev-parse", "--short", "HEAD"])
                .output()
                .ok()
                .filter(|o| o.status.success())
                .and_then(|o| String::from_utf8(o.stdout).ok())
                .map(|s| s.trim().to_string())
        })
        .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric()))
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=CRAWLGATE_COMMIT={commit}");
    println!("cargo:rerun-if-env-changed=CRAWLGATE_COMMIT");
    // A new commit moves HEAD or the branch it points to.
    let git = |arg: &str| -> Option<String> {
        let o = std::process::Command::new("git").args(["rev-parse", arg]).output().ok()?;
        o.status.success().then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let paths =
        [git("--git-dir").map(|d| format!("{d}/HEAD")), git("--git-common-dir").map(|d| format!("{d}/refs/heads"))];
    for p in paths.into_iter().flatten() {
        if std::path::Path::new(&p).exists() {
            println!("cargo:rerun-if-changed={p}");
        }
    }
}
