//! The first step of `import`: reads the source robots.txt and plans the
//! policy. RFC 9309 gives a crawler the rules of every group naming it, so
//! each distinct set of source groups a crawler takes rules from becomes
//! one policy group; each value is checked with the policy's own
//! validators, and what a policy cannot hold is kept as a comment with the
//! reason. Nothing here writes TOML (that is [`super::emit`]).

use std::collections::{BTreeMap, HashMap, HashSet};

use crawlgate_policy::robotstxt::{product_token, source_lines, ParsedGroup, RobotsTxt};
use crawlgate_policy::siteintent::{self, Repair};
use crawlgate_policy::validate::{self, Seconds};
use crawlgate_policy::MAX_ROBOTS_TXT;

use super::{comment_text, Kept};

/// What the import writes: the output groups in output order and every
/// line kept aside, with the source they came from.
pub(super) struct Plan {
    /// The parsed source (the emitter names each group's first line).
    pub robots: RobotsTxt,
    /// Source text by line (index = line - 1), for `# kept from line N` comments.
    pub text: Vec<String>,
    /// Output groups in output order.
    pub groups: Vec<OutGroup>,
    /// Index of the first group placed last for having nothing to publish.
    pub empty_start: usize,
    /// Whether any group was placed last.
    pub moved: bool,
    /// Per source group: how many output groups it feeds.
    pub feeds: Vec<usize>,
    /// Source groups that feed none, with their kept lines.
    pub orphans: Vec<(usize, Vec<Kept>)>,
    /// Rejected User-agent values per source group.
    pub dead_values: BTreeMap<usize, Vec<Kept>>,
    pub sitemaps: Vec<String>,
    pub sitemap_kept: Vec<Kept>,
    /// Lines outside any group or without a colon.
    pub outside: Vec<Kept>,
    pub content_signal: Option<String>,
    /// `(line, message)` for stderr, sorted by line, no repeats.
    pub warnings: Vec<(usize, String)>,
    /// How many distinct source lines are kept as comments.
    pub kept_lines: usize,
    /// Crawlers whose decisions the policy would change (the import is not
    /// faithful for them): spelling and the source lines responsible, in
    /// order of first appearance.
    pub unfaithful: Vec<(String, Vec<usize>)>,
    /// Lines read for the site's intent (`Disalow`, `Googlebot/2.1`, ...),
    /// written as comments in the TOML.
    pub repairs: Vec<Repair>,
}

/// One `[[group]]` of the output.
#[derive(Default)]
pub(super) struct OutGroup {
    /// Source groups (indices) this output group takes its rules from.
    pub sources: Vec<usize>,
    pub tokens: Vec<String>,
    pub allow: Vec<String>,
    pub disallow: Vec<String>,
    pub crawl_delay: Option<String>,
    pub content_usage: Vec<String>,
    pub app_directives: Vec<String>,
    pub kept: Vec<Kept>,
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

/// Warnings and kept lines, collected while planning.
struct Notes<'a> {
    source_name: &'a str,
    /// `(line, message)` in the order found, and the set of them (no repeats).
    warnings: Vec<(usize, String)>,
    warned: HashSet<(usize, String)>,
    /// Lines kept as comments.
    kept_lines: HashSet<usize>,
    /// See [`Plan::unfaithful`].
    unfaithful: Vec<(String, Vec<usize>)>,
}

impl Notes<'_> {
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

    /// Records that the policy would decide differently from the source
    /// for the crawlers `tokens`, because of `line`.
    fn unfaithful<'t>(&mut self, tokens: impl IntoIterator<Item = &'t String>, line: usize) {
        for t in tokens {
            match self.unfaithful.iter_mut().find(|(u, _)| u.eq_ignore_ascii_case(t)) {
                Some((_, lines)) => {
                    if !lines.contains(&line) {
                        lines.push(line);
                    }
                }
                None => self.unfaithful.push((t.clone(), vec![line])),
            }
        }
    }
}

/// Parses `bytes` and plans the policy; `base` (`scheme://host`) resolves
/// a relative `Sitemap` value.
pub(super) fn plan(bytes: &[u8], source_name: &str, base: Option<&str>) -> Plan {
    // Read for the site's intent: a repaired line is imported in correct
    // form, reported, and counts as a change for the crawlers of its group
    // (RFC 9309 alone would drop it).
    let intent = siteintent::read(bytes, base);
    let robots = intent.parsed();
    let text = source_lines(bytes).into_iter().map(|(_, l)| l).collect();
    let mut notes = Notes {
        source_name,
        warnings: Vec::new(),
        warned: HashSet::new(),
        kept_lines: HashSet::new(),
        unfaithful: Vec::new(),
    };
    let groups = robots.groups();
    // A one-word value kept as written (`foo*bot`, `Go!Zilla`) names no
    // crawler in the site's reading and in the policy, but RFC 9309's
    // reading compares it whole with a crawler of that name: a change,
    // which needs `--force` like every change from that reading.
    for &line in &intent.kept {
        let value =
            intent.text.lines().nth(line.saturating_sub(1)).and_then(|l| l.split_once(':')).map(|(_, v)| v.trim());
        if let Some(v) = value.filter(|v| !v.is_empty() && !v.contains(|c: char| c.is_whitespace() || c == '/')) {
            notes.unfaithful([&v.to_string()], line);
        }
    }

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
                    Ok(warning) => {
                        if let Some(w) = warning {
                            notes.warn(line, &w);
                        }
                        Ok(())
                    }
                    // A value with whitespace or `/` names no crawler: a
                    // crawler's name is one word, and identification in a
                    // full header looks for product tokens only
                    // (RobotsTxt::crawler_token).
                    Err(e) if token.contains(|c: char| c.is_whitespace() || c == '/') => {
                        Err(format!("{e}; under RFC 9309 it names no crawler, so no decision changes"))
                    }
                    Err(e) => {
                        notes.unfaithful([&token.to_string()], line);
                        Err(format!("{e}; a crawler named `{token}` gets the `*` group instead"))
                    }
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
                    let kept = notes.keep(line, reason);
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
        fill(&mut notes, o, groups, &mut content_signal);
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
            kept.push(notes.keep(l, "in a group whose User-agent values the policy cannot express"));
        }
        orphans.push((gi, kept));
    }

    let mut sitemaps = Vec::new();
    let mut sitemap_kept = Vec::new();
    let sm: Vec<(String, usize)> =
        robots.sitemaps().iter().cloned().zip(robots.sitemap_lines().iter().copied()).collect();
    for (s, line) in sm {
        match fits(&s, validate::sitemap) {
            Ok(()) => sitemaps.push(s),
            Err(e) => sitemap_kept.push(notes.keep(line, e)),
        }
    }

    let mut outside = Vec::new();
    let unknown: Vec<(usize, String)> = robots.unknown_lines().to_vec();
    for (line, text) in unknown {
        let content = text.split('#').next().unwrap_or("");
        let has_colon = content.contains(':');
        let odd_space = content
            .split_once(':')
            .is_some_and(|(_, v)| v.trim_start_matches([' ', '\t']).starts_with(char::is_whitespace));
        let reason = if odd_space {
            "the value starts with a space character other than space or tab: RFC 9309 ignores the line"
        } else if has_colon {
            "before any User-agent line: RFC 9309 ignores it"
        } else {
            "no colon, so not a robots.txt field: RFC 9309 ignores it"
        };
        outside.push(notes.keep(line, reason));
    }

    let cs = content_signal.as_ref().map(|(v, _)| v.clone());
    // Groups that would render as bare User-agent lines go last, where
    // they cannot join a following group.
    let (mut ordered, empty): (Vec<OutGroup>, Vec<OutGroup>) =
        out_groups.into_iter().partition(|o| !o.renders_empty(cs.is_some()));
    let moved = !empty.is_empty() && !ordered.is_empty();
    let empty_start = ordered.len();
    ordered.extend(empty);

    for r in &intent.repairs {
        notes.warn(r.line, &format!("`{}` read as {}", r.written, r.read));
        let changes = !r.read.contains("names no crawler");
        if let Some(g) = groups
            .iter()
            .find(|g| g.user_agent_lines.contains(&r.line) || g.rules.iter().any(|rule| rule.line == r.line))
        {
            // A cut user-agent value changes its own crawler's decisions; a
            // repaired rule those of every crawler of its group.
            let tokens: Vec<String> = match g.user_agent_lines.iter().position(|&l| l == r.line) {
                Some(k) => g.user_agents.get(k).map(|v| product_token(v).to_string()).into_iter().collect(),
                None => g.user_agents.iter().map(|v| product_token(v).to_string()).collect(),
            };
            if changes {
                notes.unfaithful(&tokens, r.line);
            }
        }
    }
    let mut warnings = notes.warnings;
    warnings.sort_by_key(|(line, _)| *line);
    let mut unfaithful = notes.unfaithful;
    for (_, lines) in &mut unfaithful {
        lines.sort_unstable();
    }
    unfaithful.sort_by_key(|(_, lines)| lines.first().copied());
    Plan {
        robots,
        text,
        groups: ordered,
        empty_start,
        moved,
        feeds,
        orphans,
        dead_values,
        sitemaps,
        sitemap_kept,
        outside,
        content_signal: cs,
        warnings,
        kept_lines: notes.kept_lines.len(),
        unfaithful,
        repairs: intent.repairs,
    }
}

/// Fills an output group from its source groups.
fn fill(notes: &mut Notes<'_>, o: &mut OutGroup, groups: &[ParsedGroup], content_signal: &mut Option<(String, usize)>) {
    let star = o.is_star();
    let mut delays: Vec<(String, usize)> = Vec::new();
    for &gi in &o.sources.clone() {
        let Some(g) = groups.get(gi) else { continue };
        for r in &g.rules {
            if r.pattern.is_empty() {
                let field = if r.allow { "Allow" } else { "Disallow" };
                let k = notes.keep(r.line, format!("an empty {field} matches nothing (RFC 9309): nothing to import"));
                o.kept.push(k);
                continue;
            }
            match fits(&r.pattern, |p| validate::rule(r.allow, p)) {
                Ok(_) if r.allow => o.allow.push(r.pattern.clone()),
                Ok(_) => o.disallow.push(r.pattern.clone()),
                // Every path starts with `/`, so a pattern starting with
                // anything but `/` or `*` matches none (RFC 9309 section
                // 2.2.2): leaving it out changes no decision.
                Err(e) if !r.pattern.starts_with(['/', '*']) => {
                    let k = notes.keep(r.line, format!("{e}; it matches no path, so no decision changes"));
                    o.kept.push(k);
                }
                Err(e) => {
                    notes.unfaithful(&o.tokens, r.line);
                    let k = notes.keep(r.line, format!("{e}; decisions on paths it matches may differ"));
                    o.kept.push(k);
                }
            }
        }
        delays.extend(g.crawl_delays.iter().cloned());
        for (key, value, line) in &g.other {
            let spaced = tabs_as_spaces(value);
            let (line, value) = (*line, spaced.as_str());
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
                                notes.warn(line, &w);
                            }
                            into.push(value.to_string());
                        }
                        Err(e) => {
                            let k = notes.keep(line, e);
                            o.kept.push(k);
                        }
                    }
                }
                "content-signal" if star => {
                    if let Some((_, first)) = content_signal {
                        let k = notes.keep(line, format!("a second Content-Signal (the policy has one, robots_txt.content_signal, from line {first})"));
                        o.kept.push(k);
                        continue;
                    }
                    match fits(value, validate::content_signal) {
                        Ok(_) => *content_signal = Some((value.to_string(), line)),
                        Err(e) => {
                            let k = notes.keep(line, e);
                            o.kept.push(k);
                        }
                    }
                }
                "content-signal" => {
                    let k = notes
                        .keep(line, "Content-Signal is published in the `*` group only (robots_txt.content_signal)");
                    o.kept.push(k);
                }
                other => {
                    let k = notes.keep(line, format!("`{other}` has no policy key (crawlgate publishes Allow, Disallow, Crawl-delay, Content-Usage, App-Directives, Content-Signal and Sitemap)"));
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
                    let k = notes.keep(line, e);
                    o.kept.push(k);
                }
            },
            None => {
                let k = notes.keep(line, format!("Crawl-delay `{value}` is not a number of seconds"));
                o.kept.push(k);
            }
        }
    }
    if let Some(((v, line), earlier)) = valid.split_last() {
        for (_, l) in earlier {
            let k = notes.keep(*l, format!("Crawl-delay superseded by line {line}"));
            o.kept.push(k);
        }
        o.crawl_delay = Some(v.clone());
    }
    o.kept.sort_by_key(|k| k.line);
}

/// Checks a value that goes into robots.txt with `check`, after making
/// sure it does not alone take robots.txt past the size crawlers must
/// parse (`check` on the whole policy would refuse it; kept as a comment
/// instead, like any other value the policy cannot hold).
/// `value` with each tab outside a quoted string written as a space: a
/// tab between a path and a list, or around a list's commas, is whitespace
/// to robots.txt (RFC 9309) and to structured fields (RFC 9651 OWS), and
/// the policy refuses control characters. A tab inside a string is invalid
/// there and stays, so the line is kept as a comment.
fn tabs_as_spaces(value: &str) -> String {
    let (mut quoted, mut escaped) = (false, false);
    value
        .chars()
        .map(|c| {
            if quoted {
                match (escaped, c) {
                    (true, _) => escaped = false,
                    (false, '\\') => escaped = true,
                    (false, '"') => quoted = false,
                    _ => {}
                }
                c
            } else if c == '"' {
                quoted = true;
                c
            } else if c == '\t' {
                ' '
            } else {
                c
            }
        })
        .collect()
}

fn fits<T>(value: &str, check: impl FnOnce(&str) -> Result<T, String>) -> Result<T, String> {
    if value.len() >= MAX_ROBOTS_TXT {
        return Err(format!(
            "the value is {} bytes: alone it takes the generated robots.txt over the {MAX_ROBOTS_TXT} byte (500 KiB) limit crawlers must parse",
            value.len()
        ));
    }
    check(value)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crawl_delay_values() {
        assert_eq!(crawl_delay_value("10"), Some(("10".into(), Seconds::Integer(10))));
        assert_eq!(crawl_delay_value("0.5"), Some(("0.5".into(), Seconds::Float(0.5))));
        assert_eq!(crawl_delay_value("1e3"), Some(("1000.0".into(), Seconds::Float(1000.0))));
        assert_eq!(crawl_delay_value("inf"), None);
        assert_eq!(crawl_delay_value("5 seconds"), None);
    }
}
