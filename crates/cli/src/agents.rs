//! `crawlgate agents list`: the built-in catalog of known crawlers and agents.

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::ExitCode;

use crawlgate_policy::catalog::{self, Entry};

/// `crawlgate agents list [--category C] [--json]`: the catalog sorted by
/// token, as an aligned table ending with a count line, or with `--json` as
/// a JSON array of entries with the fields of `catalog.json`. An unknown
/// category exits 2 naming the known ones.
pub fn list(category: Option<&str>, json: bool) -> anyhow::Result<ExitCode> {
    let entries: Vec<&Entry> = match category {
        None => catalog::entries().iter().collect(),
        Some(c) => match catalog::entries_in_category(c) {
            Some(v) => v,
            None => anyhow::bail!("unknown category `{c}` (known: {})", catalog::CATEGORIES.join(", ")),
        },
    };
    let out = if json { format!("{}\n", serde_json::to_string_pretty(&entries)?) } else { table(&entries, category) };
    // `crawlgate agents list | head` closes the pipe early: not an error.
    match std::io::stdout().lock().write_all(out.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(ExitCode::SUCCESS),
    }
}

const HEADER: [&str; 4] = ["TOKEN", "CATEGORIES", "SEEN IN UA", "OPERATOR"];

fn table(entries: &[&Entry], category: Option<&str>) -> String {
    let rows: Vec<[String; 4]> = entries
        .iter()
        .map(|e| {
            let seen = if e.ua_visible { "yes" } else { "robots.txt only" };
            [e.token.clone(), e.categories.join(","), seen.to_string(), e.operator.clone()]
        })
        .collect();
    let mut widths = HEADER.map(|h| h.chars().count());
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: [&str; 4]| {
        // The last column is not padded: no trailing spaces.
        let _ = writeln!(
            out,
            "{:<w0$}  {:<w1$}  {:<w2$}  {}",
            cells[0],
            cells[1],
            cells[2],
            cells[3],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2]
        );
    };
    line(HEADER);
    for r in &rows {
        line([&r[0], &r[1], &r[2], &r[3]]);
    }
    let robots_only = entries.iter().filter(|e| !e.ua_visible).count();
    let n = entries.len();
    let _ = write!(out, "{n} agent{}", if n == 1 { "" } else { "s" });
    if let Some(c) = category {
        let _ = write!(out, " in category {c}");
    }
    let _ = writeln!(out, " ({robots_only} robots.txt only)");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_aligned_with_a_count_line() {
        let entries: Vec<&Entry> = ["Google-Extended", "GPTBot"].iter().filter_map(|t| catalog::lookup(t)).collect();
        let t = table(&entries, None);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 4, "{t}");
        assert_eq!(lines[0], "TOKEN            CATEGORIES   SEEN IN UA       OPERATOR");
        assert_eq!(lines[1], "Google-Extended  ai-training  robots.txt only  Google");
        assert_eq!(lines[2], "GPTBot           ai-training  yes              OpenAI");
        assert_eq!(lines[3], "2 agents (1 robots.txt only)");
        assert!(lines.iter().all(|l| !l.ends_with(' ')));
    }
}
