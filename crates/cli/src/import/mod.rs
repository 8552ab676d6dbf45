//! `crawlgate import`: an existing robots.txt turned into a policy whose
//! rendered robots.txt makes the same decisions.
//!
//! Two steps: [`groups`] reads the source robots.txt (the policy crate's
//! tolerant parser, the one `robots-test` uses) and decides what goes
//! where: which crawlers share a policy group, which values a policy can
//! hold, which lines are kept as comments and why. [`emit`] only writes
//! that plan out as TOML.

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

mod emit;
#[cfg(test)]
mod faithful;
mod groups;

/// `crawlgate import ROBOTS_FILE`: prints a policy whose rendered robots.txt
/// decides as the file does for every crawler and path; what a policy
/// cannot express and does not change a decision is kept as a
/// `# kept from line N: ...` comment and reported on stderr. Only the first
/// 500 KiB of the file are imported, the part crawlers apply (a warning
/// says so when the file is longer). Exit 0; 1, with nothing on stdout,
/// when the policy would decide differently for some crawler (each is
/// named, with the lines responsible) or would not pass `crawlgate check`
/// (such as a rendered robots.txt over the 500 KiB limit, when merging
/// groups repeats their rules); 2 when the file cannot be read. With
/// `force`, a policy that decides differently is printed anyway, the
/// changed crawlers listed in a comment on top. `base`, the site's URL,
/// resolves a relative `Sitemap` value (an `http(s)` URL other than that is
/// an argument error, exit 2).
pub fn import(robots_file: &Path, force: bool, base: Option<&str>) -> anyhow::Result<ExitCode> {
    let base = base.map(site_root).transpose()?;
    let file = crate::robots_file::read(robots_file)?;
    let source_name = robots_file.display().to_string();
    let plan = groups::plan(&file.bytes, &source_name, base.as_deref());
    let toml = emit::toml(&plan, &source_name);
    if let Some(note) = &file.truncated {
        eprintln!("warning: {note}; later lines are not imported");
    }
    for (_, w) in &plan.warnings {
        eprintln!("warning: {w}");
    }
    let checked = crawlgate_policy::load(&toml, "imported policy");
    let faithful = plan.unfaithful.is_empty();
    if checked.is_ok() && faithful {
        out!("{toml}");
    } else if checked.is_ok() && force {
        out!("{}{toml}", forced_comment(&plan.unfaithful, &source_name));
    }
    eprintln!("{}", summary(&plan, &source_name));
    if !faithful && checked.is_ok() && force {
        return Ok(ExitCode::SUCCESS);
    }
    if !faithful {
        eprintln!("{}", unfaithful_error(&plan, &source_name));
        return Ok(ExitCode::from(1));
    }
    let Err(errors) = checked else { return Ok(ExitCode::SUCCESS) };
    match errors.0.iter().find(|d| d.message.starts_with("generated robots.txt is ")) {
        Some(too_big) => eprintln!(
            "crawlgate: error: the imported policy is not printed: its {} (the policy writes every line in full, and \
             repeats a group's rules for each set of crawlers that shares it); import a shorter robots.txt",
            too_big.message
        ),
        None => eprintln!(
            "crawlgate: error: the imported policy does not pass `crawlgate check` (please report this):\n{errors}"
        ),
    }
    Ok(ExitCode::from(1))
}

/// `scheme://host[:port]` of the site URL `url` (its path dropped): what a
/// relative `Sitemap` value is resolved against.
fn site_root(url: &str) -> anyhow::Result<String> {
    let rest = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://"));
    let host = rest.map(|r| r.split(['/', '?', '#']).next().unwrap_or(""));
    match host {
        Some(h) if !h.is_empty() && !h.contains(|c: char| c.is_whitespace() || c.is_control() || c == '@') => {
            Ok(format!("{}{h}", &url[..url.len() - rest.map_or(0, str::len)]))
        }
        _ => anyhow::bail!("--base must be an http:// or https:// URL with a host, found `{}`", url.escape_debug()),
    }
}

/// The error naming every crawler whose decisions the imported policy
/// would change, with the source lines responsible (their warnings above
/// say why), then what `--force` would print: the repaired lines as read,
/// and the other lines responsible (kept as comments).
fn unfaithful_error(plan: &groups::Plan, source_name: &str) -> String {
    let unfaithful = &plan.unfaithful;
    let n = unfaithful.len();
    let mut out = format!(
        "crawlgate: error: the imported policy is not printed: its robots.txt would not decide as {} does for {n} \
         crawler{}:",
        comment_text(source_name),
        plural(n)
    );
    for (token, lines) in unfaithful {
        let who = if token == "*" {
            "`*` (every crawler without a group of its own)".to_string()
        } else {
            format!("`{}`", comment_text(token))
        };
        let lines: Vec<String> = lines.iter().map(usize::to_string).collect();
        let _ = write!(out, "\n  {who}: line{} {}", plural(lines.len()), lines.join(", "));
    }
    let _ = write!(
        out,
        "\n`crawlgate import --force {}` prints it anyway, these crawlers listed in a comment on top",
        comment_text(source_name)
    );
    let repaired: Vec<usize> = plan.repairs.iter().map(|r| r.line).collect();
    if !plan.repairs.is_empty() {
        out.push_str(", with these lines read as the site meant them (RFC 9309 alone ignores them):");
        for r in &plan.repairs {
            let _ = write!(out, "\n  {}", comment_text(&r.to_string()));
        }
    }
    let mut others: Vec<usize> =
        unfaithful.iter().flat_map(|(_, lines)| lines.iter().copied()).filter(|l| !repaired.contains(l)).collect();
    others.sort_unstable();
    others.dedup();
    if !others.is_empty() {
        let lines: Vec<String> = others.iter().map(usize::to_string).collect();
        let _ = write!(
            out,
            "{} line{} {} kept as comment{} (the warnings above say what changes)",
            if plan.repairs.is_empty() { ", with" } else { "\nand with" },
            plural(others.len()),
            lines.join(", "),
            plural(others.len())
        );
    }
    out
}

/// The comment on top of a policy printed with `--force` although it
/// decides differently from the source for some crawlers.
fn forced_comment(unfaithful: &[(String, Vec<usize>)], source_name: &str) -> String {
    let mut out = format!(
        "# Written with --force: this policy does not decide as {} read by RFC 9309 does for:\n",
        comment_text(source_name)
    );
    for (token, lines) in unfaithful {
        let lines: Vec<String> = lines.iter().map(usize::to_string).collect();
        let _ = writeln!(out, "#   {} (line{} {})", comment_text(token), plural(lines.len()), lines.join(", "));
    }
    out.push_str("#\n");
    out
}

/// The last stderr line: what was imported and how much was kept aside.
fn summary(plan: &groups::Plan, source_name: &str) -> String {
    let n = plan.groups.len();
    let rules: usize = plan.groups.iter().map(|o| o.allow.len() + o.disallow.len()).sum();
    let sitemaps = plan.sitemaps.len();
    format!(
        "imported {source_name}: {n} group{}, {rules} rule{}, {sitemaps} sitemap{}; {} line{} kept as comments",
        plural(n),
        plural(rules),
        plural(sitemaps),
        plan.kept_lines,
        plural(plan.kept_lines),
    )
}

/// One robots.txt line that becomes a comment, and why.
#[derive(Debug, Clone)]
struct Kept {
    line: usize,
    reason: String,
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Text safe in a TOML comment and on a terminal (control characters but
/// tab written as `\uXXXX`).
fn comment_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c != '\t' && (c <= '\u{1f}' || c == '\u{7f}') {
            let _ = write!(out, "\\u{:04X}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_escape_control_characters() {
        assert_eq!(comment_text("a\u{0}b\tc"), "a\\u0000b\tc");
    }

    #[test]
    fn import_base_is_the_sites_root() {
        let ok = |u: &str| site_root(u).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ok("https://www.example.org"), "https://www.example.org");
        assert_eq!(ok("http://e.org:8080/a/b?q"), "http://e.org:8080");
        for bad in ["www.example.org", "ftp://e.org", "https://", "https:///x", "https://a b"] {
            assert_eq!(
                site_root(bad).map_err(|e| e.to_string()),
                Err(format!("--base must be an http:// or https:// URL with a host, found `{bad}`")),
                "{bad}"
            );
        }
    }
}
