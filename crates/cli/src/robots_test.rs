//! `crawlgate robots-test`: evaluates any robots.txt file for one crawler
//! and one URL with RFC 9309 semantics.
//!
//! It reads the file with the policy crate's tolerant parser
//! ([`RobotsTxt`]), the one `import` uses, so the two agree with each other
//! and with the conformance suite.

use std::path::Path;
use std::process::ExitCode;

use crawlgate_policy::robotstxt::RobotsTxt;

/// `crawlgate robots-test ROBOTS_FILE USER_AGENT URL`: prints `allowed`
/// (exit 0) or `disallowed` (exit 1); a usage or read error exits 2. Only
/// the first 500 KiB are applied, as a crawler applies them (a note on
/// stderr says so when the file is longer).
///
/// `USER_AGENT` is a product token (`Googlebot`, `AI2Bot`), compared with
/// each `user-agent:` value as a whole, case-insensitively, or a full
/// User-Agent header (`Mozilla/5.0 (compatible; GPTBot/1.2)`), in which
/// the file's tokens are looked for the way the proxy and `explain`
/// identify a request: as whole words, the longest found winning. A value
/// that is not a bare token (`Googlebot/2.1`, `foo bar`) names no crawler
/// (RFC 9309; Google's parser would cut it at the first non-token
/// character). `URL` may be absolute (`https://example.com/a?b`) or a path
/// (`/a?b`); the fragment is ignored and `/robots.txt` is always allowed.
/// Empty arguments are questions too, as in Google's reference tool
/// (robots_main): an empty `USER_AGENT` is a crawler that only `*` groups
/// apply to, an empty `URL` is the path `/`.
pub fn robots_test(robots_file: &Path, user_agent: &str, url: &str) -> anyhow::Result<ExitCode> {
    let file = crate::robots_file::read(robots_file)?;
    if let Some(note) = &file.truncated {
        eprintln!("note: {note}");
    }
    let robots = RobotsTxt::parse(&file.bytes);
    if robots.is_allowed(user_agent, url) {
        outln!("allowed");
        Ok(ExitCode::SUCCESS)
    } else {
        outln!("disallowed");
        Ok(ExitCode::from(1))
    }
}
