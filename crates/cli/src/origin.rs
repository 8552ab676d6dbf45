//! The origin's robots.txt in the offline commands. `crawlgate check
//! --origin URL` fetches it (blocking, bounded like the proxy's fetch) and
//! prints what merging it into the policy keeps and which of its lines
//! conflict; `render` and `explain` with `--origin URL` or `--origin-file
//! PATH` show the policy merged with it, as the proxy serves and enforces
//! it.

use std::io::Read;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context};
use crawlgate_policy::{ConflictKind, OriginRobotsMode, Policy, MAX_ROBOTS_TXT};

/// The robots.txt URL of `origin`: as given when it names `/robots.txt`,
/// else `/robots.txt` at its root.
fn robots_url(origin: &str) -> String {
    if origin.ends_with("/robots.txt") {
        return origin.to_string();
    }
    let after_scheme = origin.find("://").map_or(0, |i| i + 3);
    let root = match origin[after_scheme..].find('/') {
        Some(i) => &origin[..after_scheme + i],
        None => origin,
    };
    format!("{root}/robots.txt")
}

/// Fetches `url` as the proxy does: `(status, body)`, the body empty for a
/// 4xx (no robots.txt, RFC 9309 section 2.3.1.3); another status, or a body
/// over 500 KiB, is an error (the proxy would not use it).
fn fetch(policy: &Policy, url: &str) -> anyhow::Result<(u16, Vec<u8>)> {
    let settings = &policy.settings().origin_robots;
    let client = reqwest::blocking::Client::builder()
        .timeout(settings.timeout.max(Duration::from_secs(1)))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .context("cannot build the HTTP client")?;
    let resp = client.get(url).send().with_context(|| format!("cannot fetch {url}"))?;
    let status = resp.status().as_u16();
    if (400..500).contains(&status) {
        return Ok((status, Vec::new()));
    }
    if !(200..300).contains(&status) {
        bail!("cannot fetch {url}: status {status} (the proxy keeps its last good copy on such answers)");
    }
    let mut body = Vec::new();
    let limit = u64::try_from(MAX_ROBOTS_TXT).unwrap_or(u64::MAX) + 1;
    resp.take(limit).read_to_end(&mut body).with_context(|| format!("cannot read {url}"))?;
    if body.len() > MAX_ROBOTS_TXT {
        bail!("{url} is over {MAX_ROBOTS_TXT} bytes (500 KiB); the proxy does not use it");
    }
    Ok((status, body))
}

/// Where `render` and `explain` take the origin's robots.txt from.
pub enum OriginSource<'a> {
    /// Fetched from this origin (`--origin URL`).
    Url(&'a str),
    /// Read from this file (`--origin-file PATH`).
    File(&'a Path),
}

/// `policy` as the proxy runs it: merged with the origin's robots.txt
/// (`Policy::merge_origin`, as the proxy merges each copy) when `source`
/// is given. Without one, under `origin = "merge"`, stderr says that the
/// origin's groups are not included.
pub fn as_served(policy: Policy, source: Option<OriginSource<'_>>) -> anyhow::Result<Policy> {
    let merge = policy.settings().origin_robots.mode == OriginRobotsMode::Merge;
    let (what, body, base) = match source {
        None => {
            if merge {
                eprintln!(
                    "note: robots_txt.origin is \"merge\": the origin's robots.txt groups are not included (the proxy serves and enforces them too); pass --origin URL or --origin-file PATH to include them"
                );
            }
            return Ok(policy);
        }
        Some(OriginSource::Url(origin)) => {
            let url = robots_url(origin);
            let base = url.trim_end_matches("/robots.txt").to_string();
            (url.clone(), fetch(&policy, &url)?.1, Some(base))
        }
        Some(OriginSource::File(path)) => {
            let file = crate::robots_file::read(path)?;
            if let Some(t) = &file.truncated {
                eprintln!("note: {t}");
            }
            (path.display().to_string(), file.bytes, None)
        }
    };
    if !merge {
        eprintln!("note: robots_txt.origin is \"ignore\": the proxy does not merge the origin's robots.txt; shown merged as asked");
    }
    Ok(policy.merge_origin_at(&body, base.as_deref()).with_context(|| format!("cannot merge {what}"))?.policy)
}

/// Fetches the origin's robots.txt and prints the merge's summary and
/// conflicts. A fetch that fails is an error (exit 2).
pub fn check_origin(policy: &Policy, origin: &str) -> anyhow::Result<ExitCode> {
    let url = robots_url(origin);
    let settings = &policy.settings().origin_robots;
    if settings.mode == OriginRobotsMode::Ignore {
        eprintln!("note: robots_txt.origin is \"ignore\": the proxy does not merge the origin's robots.txt");
    }
    let (status, body) = fetch(policy, &url)?;
    if (400..500).contains(&status) {
        outln!("origin {url}: {status}, no robots.txt (the policy's robots.txt is served alone)");
        return Ok(ExitCode::SUCCESS);
    }
    let base = url.trim_end_matches("/robots.txt");
    let merged = policy.merge_origin_at(&body, Some(base)).with_context(|| format!("cannot merge {url}"))?;
    let n = merged.conflicts.len();
    outln!(
        "origin {url}: {status}, {} bytes: {}, {} origin sitemap{} kept, {n} conflict{}",
        body.len(),
        merged.policy.stats().groups_text(true),
        merged.origin_sitemaps,
        if merged.origin_sitemaps == 1 { "" } else { "s" },
        if n == 1 { "" } else { "s" },
    );
    let parsed = crawlgate_policy::siteintent::read(&body, Some(base)).parsed();
    for c in &merged.conflicts {
        outln!("{url}: {c}");
        if let ConflictKind::PolicyToken { token, .. } = &c.kind {
            if let Some(dropped) = dropped_rules(&parsed, c.line) {
                outln!("{url}: line {}: the origin's rules for `{token}` are dropped: {dropped}", c.line);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The rule and crawl-delay lines of the origin group whose user-agent
/// line is `line` (`line 2 `Disallow: /x`, ...`): what a crawler the
/// policy names no longer gets from it. `None` when the group has none.
fn dropped_rules(parsed: &crawlgate_policy::robotstxt::RobotsTxt, line: usize) -> Option<String> {
    let g = parsed.groups().iter().find(|g| g.user_agent_lines.contains(&line))?;
    let mut lines: Vec<(usize, String)> = g
        .rules
        .iter()
        .map(|r| (r.line, format!("{}: {}", if r.allow { "Allow" } else { "Disallow" }, r.pattern)))
        .chain(g.crawl_delays.iter().map(|(v, l)| (*l, format!("Crawl-delay: {v}"))))
        .collect();
    if lines.is_empty() {
        return None;
    }
    lines.sort();
    let shown: Vec<String> = lines.iter().map(|(l, t)| format!("line {l} `{}`", t.escape_debug())).collect();
    Some(shown.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn robots_url_at_the_root() {
        assert_eq!(robots_url("http://e.com"), "http://e.com/robots.txt");
        assert_eq!(robots_url("http://e.com/"), "http://e.com/robots.txt");
        assert_eq!(robots_url("http://e.com/a/b"), "http://e.com/robots.txt");
        assert_eq!(robots_url("http://e.com/robots.txt"), "http://e.com/robots.txt");
    }
}
