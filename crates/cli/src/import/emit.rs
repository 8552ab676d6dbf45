//! The second step of `import`: writes a [`Plan`] out as policy TOML,
//! with a comment per output group naming its source lines and a
//! `# kept from line N` comment, with the reason, per line set aside.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use super::groups::Plan;
use super::{comment_text, Kept};

/// Stands in for the origin so the output passes `crawlgate check`.
const UPSTREAM_PLACEHOLDER: &str = "127.0.0.1:8000";

/// The admin listener of an imported policy: on loopback, where the
/// README's first hour opens the dashboard.
const ADMIN_LISTENER: &str = "127.0.0.1:9090";

/// The policy TOML for `plan`, imported from `source_name`.
pub(super) fn toml(plan: &Plan, source_name: &str) -> String {
    let Plan {
        robots,
        text,
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
        warnings: _,
        kept_lines: _,
        unfaithful: _,
        repairs,
    } = plan;
    let (empty_start, moved) = (*empty_start, *moved);
    let kept_comment = |out: &mut String, k: &Kept| kept_comment(out, text, k);
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
    let _ = writeln!(out, "# crawlgate policy imported from {} by `crawlgate import`.", comment_text(source_name));
    out.push_str(
        "# One [[group]] per robots.txt group; groups naming the same crawler are\n\
         # merged, as RFC 9309 merges them. Lines a policy cannot express are kept\n\
         # as `# kept from line N` comments with the reason; the original's own\n\
         # comments are not carried over.\n",
    );
    if !repairs.is_empty() {
        out.push_str("#\n# Lines read for the site's evident intent (RFC 9309 alone would drop them):\n");
        for r in repairs {
            let _ = writeln!(out, "#   {}", comment_text(&r.to_string()));
        }
    }
    out.push_str("\n[upstream]\n# The origin the proxy forwards to: set it before `crawlgate run`.\n");
    let _ = writeln!(out, "servers = [\"{UPSTREAM_PLACEHOLDER}\"]");
    out.push_str(
        "\n[server]\n\
         # The admin listener: the dashboard at http://127.0.0.1:9090/, /metrics,\n\
         # /healthz, /readyz. Loopback only: see admin_auth_file before any other address.\n",
    );
    let _ = writeln!(out, "admin = \"{ADMIN_LISTENER}\"");

    if !sitemaps.is_empty() || !sitemap_kept.is_empty() || content_signal.is_some() {
        out.push_str("\n[robots_txt]\n");
        if !sitemaps.is_empty() {
            out.push_str("sitemaps = [\n");
            for s in sitemaps {
                let _ = writeln!(out, "  {},", toml_str(s));
            }
            out.push_str("]\n");
        }
        if let Some(cs) = content_signal.as_deref() {
            let _ = writeln!(out, "content_signal = {}", toml_str(cs));
        }
        for k in sitemap_kept {
            kept_comment(&mut out, k);
        }
    }

    if !outside.is_empty() {
        out.push_str("\n# Lines RFC 9309 ignores (outside any group, or without a colon):\n");
        for k in outside {
            kept_comment(&mut out, k);
        }
    }

    for (i, o) in groups.iter().enumerate() {
        out.push_str("\n[[group]]\n");
        let lines: Vec<String> = o
            .sources
            .iter()
            .filter_map(|&gi| robots.groups().get(gi))
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
            kept_comment(&mut out, k);
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
            kept_comment(&mut out, k);
        }
    }

    for (gi, kept) in orphans {
        let line = robots.groups().get(*gi).and_then(|g| g.user_agent_lines.first().copied()).unwrap_or(0);
        let _ = writeln!(out, "\n# robots.txt group at line {line}: no User-agent value the policy can express");
        for k in dead_values.get(gi).into_iter().flatten() {
            kept_comment(&mut out, k);
        }
        for k in kept {
            kept_comment(&mut out, k);
        }
    }

    if groups.is_empty() && orphans.is_empty() {
        out.push_str("\n# The robots.txt has no groups: every crawler may fetch everything.\n");
    }
    out
}

/// `# kept from line N: <source line>` and `#   (<reason>)`.
fn kept_comment(out: &mut String, text: &[String], k: &Kept) {
    let line = text.get(k.line.wrapping_sub(1)).map_or("", String::as_str);
    let _ = writeln!(out, "# kept from line {}: {}", k.line, comment_text(line.trim()));
    let _ = writeln!(out, "#   ({})", comment_text(&k.reason));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_strings() {
        assert_eq!(toml_str("/a\"b\\c\u{0}d\u{7f}é"), "\"/a\\\"b\\\\c\\u0000d\\u007Fé\"");
    }
}
