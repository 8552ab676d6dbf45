//! `robots-test` (any robots.txt, RFC 9309 semantics) and `import` (an
//! existing robots.txt turned into a policy).
//!
//! Both read the file with the policy crate's tolerant parser
//! ([`RobotsTxt`]), so they agree with each other and with the
//! conformance suite.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use crawlgate_policy::robotstxt::{product_token, source_lines, ParsedGroup, RobotsTxt};
use crawlgate_policy::validate::{self, Seconds};
use crawlgate_policy::MAX_ROBOTS_TXT;

/// `crawlgate robots-test ROBOTS_FILE USER_AGENT URL`: prints `allowed`
/// (exit 0) or `disallowed` (exit 1); a usage or read error exits 2.
///
/// `USER_AGENT` is normally a product token (`Googlebot`). A full
/// User-Agent string is named by its first product, the text before the
/// first space or `/` (`Googlebot/2.1 (+http://www.google.com/bot.html)`
/// is `Googlebot`, `FigTree Robot libwww-perl/5.04` is `FigTree`). So a
/// browser-style string (`Mozilla/5.0 (compatible; Googlebot/2.1)`) is
/// `Mozilla`: pass the crawler's token for those. The name is compared
/// with each `user-agent:` value as a whole, case-insensitively; a value
/// that is not a bare token (`Googlebot/2.1`, `foo bar`) names no crawler
/// (RFC 9309; Google's parser would cut it at the first non-token
/// character). `URL` may be absolute (`https://example.com/a?b`) or a path
/// (`/a?b`); the fragment is ignored and `/robots.txt` is always allowed.
pub fn robots_test(robots_file: &Path, user_agent: &str, url: &str) -> anyhow::Result<ExitCode> {
    if user_agent.trim().is_empty() {
        anyhow::bail!("robots-test: USER_AGENT is empty (give a product token such as Googlebot)");
    }
    if url.is_empty() {
        anyhow::bail!("robots-test: URL is empty (give a URL or a path such as /index.html)");
    }
    let bytes =
        std::fs::read(robots_file).with_context(|| format!("cannot read robots.txt file {}", robots_file.display()))?;
    let robots = RobotsTxt::parse(&bytes);
    if robots.is_allowed(user_agent, url) {
        println!("allowed");
        Ok(ExitCode::SUCCESS)
    } else {
        println!("disallowed");
        Ok(ExitCode::from(1))
    }
}

/// `crawlgate import ROBOTS_FILE`: prints a policy whose rendered robots.txt
/// makes the same decisions; what a policy cannot express is kept as a
/// `# kept from line N: ...` comment and reported on stderr. Exit 0, or 1
/// when the result still fails validation (printed anyway, to be fixed by
/// hand), 2 when the file cannot be read.
pub fn import(robots_file: &Path) -> anyhow::Result<ExitCode> {
    let bytes =
        std::fs::read(robots_file).with_context(|| format!("cannot read robots.txt file {}", robots_file.display()))?;
    let source_name = robots_file.display().to_string();
    let imported = Importer::new(&bytes, &source_name).run();
    for w in &imported.warnings {
        eprintln!("warning: {w}");
    }
    print!("{}", imported.toml);
    eprintln!("{}", imported.summary);
    match crawlgate_policy::load(&imported.toml, "imported policy") {
        Ok(_) => Ok(ExitCode::SUCCESS),
        Err(errors) => {
            eprintln!(
                "crawlgate: error: the imported policy does not pass `crawlgate check` (please report this):\n{errors}"
            );
            Ok(ExitCode::from(1))
        }
    }
}

/// The result of an import.
struct Imported {
    toml: String,
    warnings: Vec<String>,
    summary: String,
}

/// One robots.txt line that becomes a comment, and why.
#[derive(Debug, Clone)]
struct Kept {
    line: usize,
    reason: String,
}

/// One `[[group]]` of the output.
#[derive(Default)]
struct OutGroup {
    /// Source groups (indices) this output group takes its rules from.
    sources: Vec<usize>,
    tokens: Vec<String>,
    allow: Vec<String>,
    disallow: Vec<String>,
    crawl_delay: Option<String>,
    content_usage: Vec<String>,
    app_directives: Vec<String>,
    kept: Vec<Kept>,
}

impl OutGroup {
    fn is_star(&self) -> bool {
        self.tokens.iter().any(|t| t == "*")
    }

    /// Whether the group renders as `User-agent:` lines only: such a group
    /// joins the next group in the rendered robots.txt (RFC 9309: user-agent
    /// lines separated only by blank lines are one group).
    fn renders_empty(&self, content_signal: bool) -> bool {
        self.allow.is_empty()
            && self.disallow.is_empty()
            && self.crawl_delay.is_none()
            && self.content_usage.is_empty()
            && self.app_directives.is_empty()
            && !(content_signal && self.is_star())
    }
}

/// What [`Importer::write`] puts together.
#[derive(Clone, Copy)]
struct Parts<'p> {
    /// Output groups in output order.
    groups: &'p [OutGroup],
    /// Index of the first group placed last for having nothing to publish.
    empty_start: usize,
    /// Whether any group was placed last.
    moved: bool,
    /// Per source group: how many output groups it feeds.
    feeds: &'p [usize],
    /// Source groups that feed none, with their kept lines.
    orphans: &'p [(usize, Vec<Kept>)],
    /// Rejected User-agent values per source group.
    dead_values: &'p BTreeMap<usize, Vec<Kept>>,
    sitemaps: &'p [String],
    sitemap_kept: &'p [Kept],
    /// Lines outside any group or without a colon.
    outside: &'p [Kept],
    content_signal: Option<&'p str>,
}

struct Importer<'a> {
    robots: RobotsTxt,
    /// Source text by line (index = line - 1).
    text: Vec<String>,
    source_name: &'a str,
    /// `(line, message)` in the order found, and the set of them (no repeats).
    warnings: Vec<(usize, String)>,
    warned: HashSet<(usize, String)>,
    /// Lines kept as comments.
    kept_lines: HashSet<usize>,
}

/// Stands in for the origin so the output passes `crawlgate check`.
const UPSTREAM_PLACEHOLDER: &str = "127.0.0.1:8000";

impl<'a> Importer<'a> {
    fn new(bytes: &[u8], source_name: &'a str) -> Self {
        let text = source_lines(bytes).into_iter().map(|(_, l)| l).collect();
        Importer {
            robots: RobotsTxt::parse(bytes),
            text,
            source_name,
            warnings: Vec::new(),
            warned: HashSet::new(),
            kept_lines: HashSet::new(),
        }
    }

    fn warn(&mut self, line: usize, message: &str) {
        // Control characters from the file must not reach the terminal.
        let w = (line, comment_text(&format!("{}:{line}: {message}", self.source_name)));
        if self.warned.insert(w.clone()) {
            self.warnings.push(w);
        }
    }

    /// Reports a kept line on stderr (once per reason: a source group can
    /// feed several output groups) and returns it for a comment.
    fn keep(&mut self, line: usize, reason: impl Into<String>) -> Kept {
        let reason = reason.into();
        self.kept_lines.insert(line);
        self.warn(line, &format!("{reason}; kept as a comment"));
        Kept { line, reason }
    }

    fn line_text(&self, line: usize) -> &str {
        self.text.get(line.wrapping_sub(1)).map_or("", String::as_str)
    }

    fn kept_comment(&self, out: &mut String, k: &Kept) {
        let _ = writeln!(out, "# kept from line {}: {}", k.line, comment_text(self.line_text(k.line).trim()));
        let _ = writeln!(out, "#   ({})", comment_text(&k.reason));
    }

    fn run(mut self) -> Imported {
        let groups: Vec<ParsedGroup> = self.robots.groups().to_vec();

        // Tokens (lowercase key) with their spelling and the groups naming
        // them, in order of first appearance. RFC 9309 gives a crawler the
        // rules of every group naming it, so each distinct set of groups
        // becomes one policy group.
        let mut tokens: Vec<(String, Vec<usize>)> = Vec::new();
        let mut token_index: HashMap<String, usize> = HashMap::new();
        let mut dead_values: BTreeMap<usize, Vec<Kept>> = BTreeMap::new();
        for (gi, g) in groups.iter().enumerate() {
            for (k, ua) in g.user_agents.iter().enumerate() {
                let line = g.user_agent_lines.get(k).copied().unwrap_or(0);
                let token = product_token(ua);
                let accepted = if token == "*" {
                    Ok(())
                } else if token.is_empty() {
                    Err("an empty User-agent value names no crawler".to_string())
                } else {
                    match fits(token, validate::user_agent) {
                        Ok(()) => Ok(()),
                        Err(e) if token.contains(|c: char| c.is_whitespace() || c == '/') => {
                            Err(format!("{e}; under RFC 9309 it names no crawler, so no decision changes"))
                        }
                        Err(e) => Err(format!("{e}; a crawler named `{token}` gets the `*` group instead")),
                    }
                };
                match accepted {
                    Ok(()) => {
                        let key = token.to_ascii_lowercase();
                        match token_index.get(&key) {
                            Some(&t) => {
                                let gs = &mut tokens[t].1;
                                if gs.last() != Some(&gi) {
                                    gs.push(gi);
                                }
                            }
                            None => {
                                token_index.insert(key, tokens.len());
                                tokens.push((token.to_string(), vec![gi]));
                            }
                        }
                    }
                    Err(reason) => {
                        let kept = self.keep(line, reason);
                        dead_values.entry(gi).or_default().push(kept);
                    }
                }
            }
        }
        let mut out_groups: Vec<OutGroup> = Vec::new();
        let mut by_sources: HashMap<Vec<usize>, usize> = HashMap::new();
        for (spelling, gs) in tokens {
            match by_sources.get(&gs) {
                Some(&o) => out_groups[o].tokens.push(spelling),
                None => {
                    by_sources.insert(gs.clone(), out_groups.len());
                    out_groups.push(OutGroup { sources: gs, tokens: vec![spelling], ..OutGroup::default() });
                }
            }
        }
        // How many output groups each source group feeds.
        let mut feeds = vec![0usize; groups.len()];
        for o in &out_groups {
            for &s in &o.sources {
                feeds[s] += 1;
            }
        }

        // Content-Signal is one robots_txt key, published in the `*` group.
        let mut content_signal: Option<(String, usize)> = None;
        for o in &mut out_groups {
            self.fill(o, &groups, &mut content_signal);
        }

        // Source groups that feed no output group: every value was rejected.
        let mut orphans: Vec<(usize, Vec<Kept>)> = Vec::new();
        for (gi, g) in groups.iter().enumerate() {
            if feeds[gi] > 0 {
                continue;
            }
            let mut kept = Vec::new();
            let mut lines: Vec<usize> = g.rules.iter().map(|r| r.line).collect();
            lines.extend(g.crawl_delays.iter().map(|(_, l)| *l));
            lines.extend(g.other.iter().map(|(_, _, l)| *l));
            lines.sort_unstable();
            for l in lines {
                kept.push(self.keep(l, "in a group whose User-agent values the policy cannot express"));
            }
            orphans.push((gi, kept));
        }

        let mut sitemaps = Vec::new();
        let mut sitemap_kept = Vec::new();
        let sm: Vec<(String, usize)> =
            self.robots.sitemaps().iter().cloned().zip(self.robots.sitemap_lines().iter().copied()).collect();
        for (s, line) in sm {
            match fits(&s, validate::sitemap) {
                Ok(()) => sitemaps.push(s),
                Err(e) => sitemap_kept.push(self.keep(line, e)),
            }
        }

        let mut outside = Vec::new();
        let unknown: Vec<(usize, String)> = self.robots.unknown_lines().to_vec();
        for (line, text) in unknown {
            let has_colon = text.split('#').next().unwrap_or("").contains(':');
            let reason = if has_colon {
                "before any User-agent line: RFC 9309 ignores it"
            } else {
                "no colon, so not a robots.txt field: RFC 9309 ignores it"
            };
            outside.push(self.keep(line, reason));
        }

        let cs = content_signal.as_ref().map(|(v, _)| v.clone());
        // Groups that would render as bare User-agent lines go last, where
        // they cannot join a following group.
        let (mut ordered, empty): (Vec<OutGroup>, Vec<OutGroup>) =
            out_groups.into_iter().partition(|o| !o.renders_empty(cs.is_some()));
        let moved = !empty.is_empty() && !ordered.is_empty();
        let empty_start = ordered.len();
        ordered.extend(empty);

        let parts = Parts {
            groups: &ordered,
            empty_start,
            moved,
            feeds: &feeds,
            orphans: &orphans,
            dead_values: &dead_values,
            sitemaps: &sitemaps,
            sitemap_kept: &sitemap_kept,
            outside: &outside,
            content_signal: cs.as_deref(),
        };
        let toml = self.write(&parts);
        let rules: usize = ordered.iter().map(|o| o.allow.len() + o.disallow.len()).sum();
        let summary = format!(
            "imported {}: {} group{}, {} rule{}, {} sitemap{}; {} line{} kept as comments",
            self.source_name,
            ordered.len(),
            plural(ordered.len()),
            rules,
            plural(rules),
            sitemaps.len(),
            plural(sitemaps.len()),
            self.kept_lines.len(),
            plural(self.kept_lines.len()),
        );
        let mut warnings = self.warnings;
        warnings.sort_by_key(|(line, _)| *line);
        Imported { toml, warnings: warnings.into_iter().map(|(_, w)| w).collect(), summary }
    }

    /// Fills an output group from its source groups.
    fn fill(&mut self, o: &mut OutGroup, groups: &[ParsedGroup], content_signal: &mut Option<(String, usize)>) {
        let star = o.is_star();
        let mut delays: Vec<(String, usize)> = Vec::new();
        for &gi in &o.sources.clone() {
            let Some(g) = groups.get(gi) else { continue };
            for r in &g.rules {
                if r.pattern.is_empty() {
                    let field = if r.allow { "Allow" } else { "Disallow" };
                    let k =
                        self.keep(r.line, format!("an empty {field} matches nothing (RFC 9309): nothing to import"));
                    o.kept.push(k);
                    continue;
                }
                match fits(&r.pattern, |p| validate::rule(r.allow, p)) {
                    Ok(_) if r.allow => o.allow.push(r.pattern.clone()),
                    Ok(_) => o.disallow.push(r.pattern.clone()),
                    Err(e) => {
                        let k = self.keep(r.line, format!("{e}; decisions on paths it matches may differ"));
                        o.kept.push(k);
                    }
                }
            }
            delays.extend(g.crawl_delays.iter().cloned());
            for (key, value, line) in &g.other {
                let (line, value) = (*line, value.as_str());
                match key.as_str() {
                    "content-usage" | "app-directives" => {
                        let (checked, into) = if key == "content-usage" {
                            (fits(value, validate::content_usage), &mut o.content_usage)
                        } else {
                            (fits(value, |v| validate::app_directives(v, star)), &mut o.app_directives)
                        };
                        match checked {
                            Ok(valid) => {
                                for w in valid.warnings {
                                    self.warn(line, &w);
                                }
                                into.push(value.to_string());
                            }
                            Err(e) => {
                                let k = self.keep(line, e);
                                o.kept.push(k);
                            }
                        }
                    }
                    "content-signal" if star => {
                        if let Some((_, first)) = content_signal {
                            let k = self.keep(line, format!("a second Content-Signal (the policy has one, robots_txt.content_signal, from line {first})"));
                            o.kept.push(k);
                            continue;
                        }
                        match fits(value, validate::content_signal) {
                            Ok(_) => *content_signal = Some((value.to_string(), line)),
                            Err(e) => {
                                let k = self.keep(line, e);
                                o.kept.push(k);
                            }
                        }
                    }
                    "content-signal" => {
                        let k = self.keep(
                            line,
                            "Content-Signal is published in the `*` group only (robots_txt.content_signal)",
                        );
                        o.kept.push(k);
                    }
                    other => {
                        let k = self.keep(line, format!("`{other}` has no policy key (crawlgate publishes Allow, Disallow, Crawl-delay, Content-Usage, App-Directives, Content-Signal and Sitemap)"));
                        o.kept.push(k);
                    }
                }
            }
        }
        // The last valid Crawl-delay wins, as the parser keeps the last one
        // of a group.
        let mut valid: Vec<(String, usize)> = Vec::new();
        for (value, line) in delays {
            match crawl_delay_value(&value) {
                Some((v, seconds)) => match validate::crawl_delay(seconds) {
                    Ok(_) => valid.push((v, line)),
                    Err(e) => {
                        let k = self.keep(line, e);
                        o.kept.push(k);
                    }
                },
                None => {
                    let k = self.keep(line, format!("Crawl-delay `{value}` is not a number of seconds"));
                    o.kept.push(k);
                }
            }
        }
        if let Some(((v, line), earlier)) = valid.split_last() {
            for (_, l) in earlier {
                let k = self.keep(*l, format!("Crawl-delay superseded by line {line}"));
                o.kept.push(k);
            }
            o.crawl_delay = Some(v.clone());
        }
        o.kept.sort_by_key(|k| k.line);
    }

    fn write(&self, parts: &Parts<'_>) -> String {
        let Parts {
            groups,
            empty_start,
            moved,
            feeds,
            orphans,
            dead_values,
            sitemaps,
            sitemap_kept,
            outside,
            content_signal,
        } = *parts;
        let mut out = String::new();
        // A rejected User-agent value is shown in the first output group its
        // source group feeds.
        let mut dead_in: HashMap<usize, Vec<&Kept>> = HashMap::new();
        let mut placed: HashSet<usize> = HashSet::new();
        for (i, o) in groups.iter().enumerate() {
            for s in &o.sources {
                if let Some(kept) = dead_values.get(s) {
                    if placed.insert(*s) {
                        dead_in.entry(i).or_default().extend(kept.iter());
                    }
                }
            }
        }
        let _ =
            writeln!(out, "# crawlgate policy imported from {} by `crawlgate import`.", comment_text(self.source_name));
        out.push_str(
            "# One [[group]] per robots.txt group; groups naming the same crawler are\n\
             # merged, as RFC 9309 merges them. Lines a policy cannot express are kept\n\
             # as `# kept from line N` comments with the reason; the original's own\n\
             # comments are not carried over.\n",
        );
        out.push_str("\n[upstream]\n# The origin the proxy forwards to: set it before `crawlgate run`.\n");
        let _ = writeln!(out, "servers = [\"{UPSTREAM_PLACEHOLDER}\"]");

        if !sitemaps.is_empty() || !sitemap_kept.is_empty() || content_signal.is_some() {
            out.push_str("\n[robots_txt]\n");
            if !sitemaps.is_empty() {
                out.push_str("sitemaps = [\n");
                for s in sitemaps {
                    let _ = writeln!(out, "  {},", toml_str(s));
                }
                out.push_str("]\n");
            }
            if let Some(cs) = content_signal {
                let _ = writeln!(out, "content_signal = {}", toml_str(cs));
            }
            for k in sitemap_kept {
                self.kept_comment(&mut out, k);
            }
        }

        if !outside.is_empty() {
            out.push_str("\n# Lines RFC 9309 ignores (outside any group, or without a colon):\n");
            for k in outside {
                self.kept_comment(&mut out, k);
            }
        }

        for (i, o) in groups.iter().enumerate() {
            out.push_str("\n[[group]]\n");
            let lines: Vec<String> = o
                .sources
                .iter()
                .filter_map(|&gi| self.robots.groups().get(gi))
                .map(|g| g.user_agent_lines.first().map_or("?".to_string(), usize::to_string))
                .collect();
            let split = o.sources.iter().any(|&s| feeds.get(s).is_some_and(|&n| n > 1));
            let split = if split { " (split: its other crawlers also take rules from other groups)" } else { "" };
            if lines.len() == 1 {
                let _ = writeln!(out, "# robots.txt group at line {}{split}", lines.join(""));
            } else {
                let _ = writeln!(
                    out,
                    "# robots.txt groups at lines {} (merged: they name the same crawlers)",
                    lines.join(", ")
                );
            }
            if moved && i == empty_start {
                out.push_str(
                    "# From here on, groups with nothing to publish but their User-agent lines,\n\
                     # placed last so that they cannot take the rules of a following group\n\
                     # (RFC 9309: User-agent lines with only blank lines between are one group).\n",
                );
            }
            for k in dead_in.get(&i).into_iter().flatten() {
                self.kept_comment(&mut out, k);
            }
            out.push_str("user_agents = [");
            for (j, t) in o.tokens.iter().enumerate() {
                if j > 0 {
                    out.push_str(", ");
                }
                out.push_str(&toml_str(t));
            }
            out.push_str("]\n");
            for (key, list) in [
                ("allow", &o.allow),
                ("disallow", &o.disallow),
                ("content_usage", &o.content_usage),
                ("app_directives", &o.app_directives),
            ] {
                if list.is_empty() {
                    continue;
                }
                let _ = writeln!(out, "{key} = [");
                for v in list {
                    let _ = writeln!(out, "  {},", toml_str(v));
                }
                out.push_str("]\n");
            }
            if let Some(d) = &o.crawl_delay {
                let _ = writeln!(out, "crawl_delay = {d}");
            }
            for k in &o.kept {
                self.kept_comment(&mut out, k);
            }
        }

        for (gi, kept) in orphans {
            let line = self.robots.groups().get(*gi).and_then(|g| g.user_agent_lines.first().copied()).unwrap_or(0);
            let _ = writeln!(out, "\n# robots.txt group at line {line}: no User-agent value the policy can express");
            for k in dead_values.get(gi).into_iter().flatten() {
                self.kept_comment(&mut out, k);
            }
            for k in kept {
                self.kept_comment(&mut out, k);
            }
        }

        if groups.is_empty() && orphans.is_empty() {
            out.push_str("\n# The robots.txt has no groups: every crawler may fetch everything.\n");
        }
        out
    }
}

/// Checks a value that goes into robots.txt with `check`, after making
/// sure it does not alone take robots.txt past the size crawlers must
/// parse (`check` on the whole policy would refuse it; kept as a comment
/// instead, like any other value the policy cannot hold).
fn fits<T>(value: &str, check: impl FnOnce(&str) -> Result<T, String>) -> Result<T, String> {
    if value.len() >= MAX_ROBOTS_TXT {
        return Err(format!(
            "the value is {} bytes: alone it takes the generated robots.txt over the {MAX_ROBOTS_TXT} byte (500 KiB) limit crawlers must parse",
            value.len()
        ));
    }
    check(value)
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// A Crawl-delay value as a TOML number (an integer when it is one, else
/// a float) and as that number; `None` when it is not a finite number.
fn crawl_delay_value(v: &str) -> Option<(String, Seconds)> {
    if let Ok(i) = v.parse::<i64>() {
        return Some((i.to_string(), Seconds::Integer(i)));
    }
    match v.parse::<f64>() {
        // `{:?}` always writes a decimal point or an exponent: a TOML float,
        // and it reads back as the same f64.
        Ok(f) if f.is_finite() => Some((format!("{f:?}"), Seconds::Float(f))),
        _ => None,
    }
}

/// A TOML basic string.
fn toml_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c <= '\u{1f}' || c == '\u{7f}' => {
                let _ = write!(out, "\\u{:04X}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
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
    fn toml_strings_and_comments() {
        assert_eq!(toml_str("/a\"b\\c\u{0}d\u{7f}é"), "\"/a\\\"b\\\\c\\u0000d\\u007Fé\"");
        assert_eq!(comment_text("a\u{0}b\tc"), "a\\u0000b\tc");
        assert_eq!(crawl_delay_value("10"), Some(("10".into(), Seconds::Integer(10))));
        assert_eq!(crawl_delay_value("0.5"), Some(("0.5".into(), Seconds::Float(0.5))));
        assert_eq!(crawl_delay_value("1e3"), Some(("1000.0".into(), Seconds::Float(1000.0))));
        assert_eq!(crawl_delay_value("inf"), None);
        assert_eq!(crawl_delay_value("5 seconds"), None);
    }
}
