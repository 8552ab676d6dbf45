//! `crawlgate top`: the dashboard's per-agent table in a terminal, read
//! from a running proxy's admin listener (`/api/agents`) and redrawn like
//! `top`, for operators on SSH. `--once` prints the table once, for
//! scripts.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context};
use serde_json::Value;

/// The columns: header, JSON key, right-aligned.
const COLUMNS: &[(&str, &str, bool)] = &[
    ("AGENT", "agent", false),
    ("CATEGORY", "category", false),
    ("OPERATOR", "operator", false),
    ("REQUESTS", "requests", true),
    ("ALLOWED", "allowed", true),
    ("VIOLATIONS", "violations", true),
    ("BLOCKED", "blocked", true),
    ("ROBOTS.TXT", "robots_txt", true),
    ("NO-ROBOTS", "without_robots", true),
    ("BYTES", "bytes_sent", true),
];

/// Runs the command.
pub fn top(admin: &str, token_file: Option<&Path>, interval: f64, once: bool) -> anyhow::Result<ExitCode> {
    let authorization = match token_file {
        Some(f) => {
            let text = std::fs::read_to_string(f).with_context(|| format!("cannot read {}", f.display()))?;
            Some(crawlgate_proxy::admin_authorization(text.lines().next().unwrap_or("").trim()))
        }
        None => None,
    };
    let target = Target::parse(admin)?;
    if once {
        let agents = target.get("/api/agents", authorization.as_deref())?;
        out!("{}", table(&agents));
        return Ok(ExitCode::SUCCESS);
    }
    if !(interval.is_finite() && interval >= 0.1) {
        bail!("--interval must be at least 0.1 seconds");
    }
    loop {
        let screen = match target.get("/api/agents", authorization.as_deref()) {
            Ok(agents) => table(&agents),
            Err(e) => format!("{e:#}\n"),
        };
        // Home, clear screen (ECMA-48 CUP and ED).
        out!(
            "\x1b[H\x1b[2Jcrawlgate top: {admin}, every {interval}s (Ctrl-C quits); counts since the proxy started\n\n{screen}"
        );
        std::thread::sleep(Duration::from_secs_f64(interval));
    }
}

/// The table for an `/api/agents` document, with a total line.
pub fn table(agents: &Value) -> String {
    let mut rows: Vec<Vec<String>> = vec![COLUMNS.iter().map(|c| c.0.to_string()).collect()];
    let list = agents["agents"].as_array().map_or(&[][..], Vec::as_slice);
    for a in list {
        rows.push(COLUMNS.iter().map(|(_, key, _)| cell(&a[*key])).collect());
    }
    let total = &agents["total"];
    let mut last = vec!["TOTAL".to_string(), String::new(), String::new()];
    last.extend(COLUMNS[3..].iter().map(|(_, key, _)| match *key {
        "without_robots" => list.iter().filter_map(|a| a[*key].as_u64()).sum::<u64>().to_string(),
        k => cell(&total[k]),
    }));
    rows.push(last);
    let widths: Vec<usize> =
        (0..COLUMNS.len()).map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for r in &rows {
        let cells: Vec<String> = r
            .iter()
            .zip(COLUMNS)
            .zip(&widths)
            .map(|((v, c), w)| if c.2 { format!("{v:>w$}") } else { format!("{v:<w$}") })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// A value as terminal-safe text (control characters replaced).
fn cell(v: &Value) -> String {
    let s = match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".to_string(),
        other => other.to_string(),
    };
    s.chars().map(|c| if c.is_control() { '?' } else { c }).collect()
}

/// An `http://host:port[/prefix]` admin address.
struct Target {
    authority: String,
    prefix: String,
}

impl Target {
    fn parse(url: &str) -> anyhow::Result<Target> {
        let Some(rest) = url.strip_prefix("http://") else {
            bail!("--admin must be an http:// URL (the admin listener speaks plain HTTP), found {url}");
        };
        let (authority, prefix) = rest.split_once('/').map_or((rest, ""), |(a, p)| (a, p));
        if authority.is_empty() {
            bail!("--admin {url}: no host");
        }
        let authority = if authority.rsplit_once(':').is_some_and(|(_, p)| p.parse::<u16>().is_ok() && !p.contains(']'))
        {
            authority.to_string()
        } else {
            format!("{authority}:80")
        };
        Ok(Target { authority, prefix: prefix.trim_end_matches('/').to_string() })
    }

    /// GETs `path` and parses its JSON body.
    fn get(&self, path: &str, authorization: Option<&str>) -> anyhow::Result<Value> {
        let full = if self.prefix.is_empty() { path.to_string() } else { format!("/{}{path}", self.prefix) };
        let mut stream =
            TcpStream::connect(&self.authority).with_context(|| format!("cannot connect to {}", self.authority))?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        stream.set_write_timeout(Some(Duration::from_secs(10)))?;
        let auth = authorization.map(|a| format!("Authorization: {a}\r\n")).unwrap_or_default();
        write!(
            stream,
            "GET {full} HTTP/1.1\r\nHost: {}\r\nAccept: application/json\r\nConnection: close\r\n{auth}\r\n",
            self.authority
        )?;
        let mut response = Vec::new();
        stream.read_to_end(&mut response).with_context(|| format!("reading from {}", self.authority))?;
        let split = response.windows(4).position(|w| w == b"\r\n\r\n").context("malformed response")?;
        let head = String::from_utf8_lossy(&response[..split]);
        let status = head.split_whitespace().nth(1).and_then(|s| s.parse::<u16>().ok()).unwrap_or(0);
        match status {
            200 => {}
            401 => bail!("{} answered 401 Unauthorized: pass --token-file with the admin credentials", self.authority),
            s => bail!("GET {full} on {} answered {s}", self.authority),
        }
        serde_json::from_slice(&response[split + 4..]).context("the admin listener's answer is not JSON")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn table_aligns_and_totals() {
        let v = json!({
            "agents": [
                {"agent": "GPTBot", "category": "ai-training", "operator": "OpenAI", "requests": 12, "allowed": 11,
                 "violations": 1, "blocked": 0, "robots_txt": 1, "without_robots": 0, "bytes_sent": 5120},
                {"agent": "other\u{1b}[2J", "category": null, "operator": null, "requests": 3, "allowed": 3,
                 "violations": 0, "blocked": 0, "robots_txt": 0, "without_robots": 3, "bytes_sent": 10}
            ],
            "total": {"requests": 15, "allowed": 14, "violations": 1, "blocked": 0, "robots_txt": 1, "bytes_sent": 5130}
        });
        assert_eq!(
            table(&v),
            "AGENT      CATEGORY     OPERATOR  REQUESTS  ALLOWED  VIOLATIONS  BLOCKED  ROBOTS.TXT  NO-ROBOTS  BYTES\n\
             GPTBot     ai-training  OpenAI          12       11           1        0           1          0   5120\n\
             other?[2J  -            -                3        3           0        0           0          3     10\n\
             TOTAL                                   15       14           1        0           1          3   5130\n"
        );
    }

    #[test]
    fn targets() {
        let t = Target::parse("http://127.0.0.1:9090/").unwrap();
        assert_eq!((t.authority.as_str(), t.prefix.as_str()), ("127.0.0.1:9090", ""));
        let t = Target::parse("http://admin.internal/crawlgate").unwrap();
        assert_eq!((t.authority.as_str(), t.prefix.as_str()), ("admin.internal:80", "crawlgate"));
        assert!(Target::parse("https://x").is_err());
    }
}
