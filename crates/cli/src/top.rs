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

/// The widest line `top` prints when the terminal's width is not known.
pub const WIDTH: usize = 100;

/// The narrowest the agent column is cut to before the counts are
/// abbreviated (`12.3M`) to make room.
const MIN_AGENT: usize = 8;

/// The terminal's width: `COLUMNS` when it holds a number of at least 40
/// (shells set it; `COLUMNS=120 crawlgate top`), else [`WIDTH`].
fn terminal_width() -> usize {
    std::env::var("COLUMNS").ok().and_then(|c| c.trim().parse::<usize>().ok()).filter(|w| *w >= 40).unwrap_or(WIDTH)
}

/// A column: header, JSON key (`None` for a rate), right-aligned.
struct Column {
    header: &'static str,
    key: &'static str,
    /// A per-second rate of this key rather than its count.
    rate: bool,
    /// Shown only when some agent's count is not 0: what a policy without
    /// `[verification]`, rate limits or charges never counts.
    optional: bool,
}

const fn col(header: &'static str, key: &'static str, rate: bool) -> Column {
    Column { header, key, rate, optional: false }
}

const fn opt(header: &'static str, key: &'static str) -> Column {
    Column { header, key, rate: false, optional: true }
}

/// The columns: the page's vocabulary, with requests per second beside
/// the requests.
const COLUMNS: &[Column] = &[
    col("AGENT", "agent", false),
    col("REQUESTS", "requests", false),
    col("REQ/S", "requests", true),
    col("ALLOWED", "allowed", false),
    col("VIOLATIONS", "violations", false),
    col("BLOCKED", "blocked", false),
    opt("LIMITED", "limited"),
    opt("PAID", "paid"),
    opt("SPOOFED", "spoofed"),
    opt("VERIFIED", "verified"),
    col("ROBOTS.TXT", "robots_txt", false),
    col("BYTES", "bytes_sent", false),
];

/// Where the admin listener is: `ADDR` (`host:port` or
/// `http://host:port[/prefix]`), else `server.admin` of the policy file.
pub fn admin_address(admin: Option<&str>, config: &Path) -> anyhow::Result<(String, Option<String>)> {
    if let Some(a) = admin {
        return Ok((a.to_string(), None));
    }
    let source = crate::config::read_policy_file(config)
        .context("no admin address given, so top reads server.admin from the policy file")?;
    let loaded = crawlgate_policy::load(&source, &config.display().to_string()).map_err(|d| {
        anyhow::anyhow!("{} has errors (see `crawlgate check --config {}`): {d}", config.display(), config.display())
    })?;
    let server = &loaded.policy.settings().server;
    let Some(admin) = server.admin.clone() else {
        bail!("{} sets no server.admin: pass the admin listener's address (host:port)", config.display());
    };
    Ok((admin, server.admin_auth_file.clone()))
}

/// Runs the command. `--once` takes two samples `interval` apart to
/// measure the rates.
pub fn top(admin: &str, token_file: Option<&Path>, interval: f64, once: bool) -> anyhow::Result<ExitCode> {
    let authorization = match token_file {
        Some(f) => {
            let text = std::fs::read_to_string(f).with_context(|| format!("cannot read {}", f.display()))?;
            Some(crawlgate_admin::authorization(text.lines().next().unwrap_or("").trim()))
        }
        None => None,
    };
    if !(interval.is_finite() && interval >= 0.1) {
        bail!("--interval must be at least 0.1 seconds");
    }
    let target = Target::parse(admin)?;
    let auth = authorization.as_deref();
    let mut previous = target.get("/api/agents", auth)?;
    if once {
        std::thread::sleep(Duration::from_secs_f64(interval));
        let agents = target.get("/api/agents", auth)?;
        let referrals = target.get("/api/referrals", auth)?;
        let width = terminal_width();
        out!("{}\n{}", table(&agents, Some(&previous), width), field(&referrals, width));
        return Ok(ExitCode::SUCCESS);
    }
    let mut first = true;
    loop {
        let width = terminal_width();
        let screen = if first {
            first = false;
            table(&previous, None, width)
        } else {
            match target.get("/api/agents", auth) {
                Ok(agents) => {
                    let t = table(&agents, Some(&previous), width);
                    previous = agents;
                    t
                }
                Err(e) => fit_lines(&format!("{e:#}"), width),
            }
        };
        let screen = match target.get("/api/referrals", auth) {
            Ok(referrals) => format!("{screen}\n{}", field(&referrals, width)),
            Err(e) => format!("{screen}\n{}", fit_lines(&format!("{e:#}"), width)),
        };
        // Home, clear screen (ECMA-48 CUP and ED).
        out!("\x1b[H\x1b[2J{}\n{screen}", fit_lines(&title(&target.authority, interval), width));
        std::thread::sleep(Duration::from_secs_f64(interval));
    }
}

/// The live screen's title line.
fn title(authority: &str, interval: f64) -> String {
    format!("crawlgate top: {authority}, every {interval}s (Ctrl-C quits); counts since the proxy started")
}

/// Each line of `text` cut to `width` characters, each ending in a newline.
fn fit_lines(text: &str, width: usize) -> String {
    text.lines().map(|l| fit(l, width) + "\n").collect()
}

/// The table for an `/api/agents` document, with a total line; rates
/// per second against `previous` (by the documents' `now_ms`), `-`
/// without one. No line is wider than `width`: a long agent name is cut,
/// then the counts are abbreviated (`12.3M`), then the lines are cut.
/// LIMITED, PAID, SPOOFED and VERIFIED appear when some agent has one.
pub fn table(agents: &Value, previous: Option<&Value>, width: usize) -> String {
    let list = agents["agents"].as_array().map_or(&[][..], Vec::as_slice);
    let columns: Vec<&Column> =
        COLUMNS.iter().filter(|c| !c.optional || list.iter().any(|a| a[c.key].as_u64().unwrap_or(0) > 0)).collect();
    let elapsed_ms = previous.and_then(|p| agents["now_ms"].as_u64()?.checked_sub(p["now_ms"].as_u64()?));
    let rate = |now: &Value, before: Option<&Value>, key: &str| -> String {
        match elapsed_ms.filter(|ms| *ms > 0) {
            Some(ms) => {
                let delta =
                    now[key].as_u64().unwrap_or(0).saturating_sub(before.and_then(|b| b[key].as_u64()).unwrap_or(0));
                format!("{:.1}", delta as f64 * 1000.0 / ms as f64)
            }
            None => "-".to_string(),
        }
    };
    let before_row = |name: &Value| previous.and_then(|p| p["agents"].as_array()?.iter().find(|r| r["agent"] == *name));
    let mut rows: Vec<Vec<String>> = vec![columns.iter().map(|c| c.header.to_string()).collect()];
    for a in list {
        let before = before_row(&a["agent"]);
        rows.push(
            columns
                .iter()
                .map(|c| match (c.rate, c.key) {
                    (true, key) => rate(a, before, key),
                    (false, "bytes_sent") => crawlgate_admin::human_bytes(&a["bytes_sent"]),
                    (false, key) => cell(&a[key]),
                })
                .collect(),
        );
    }
    let total = &agents["total"];
    let before_total = previous.map(|p| &p["total"]);
    rows.push(
        columns
            .iter()
            .map(|c| match (c.rate, c.key) {
                (_, "agent") => "TOTAL".to_string(),
                (true, key) => rate(total, before_total, key),
                (false, "bytes_sent") => crawlgate_admin::human_bytes(&total["bytes_sent"]),
                (false, key) => cell(&total[key]),
            })
            .collect(),
    );
    let widths_of = |rows: &[Vec<String>]| -> (Vec<usize>, usize) {
        let w: Vec<usize> =
            (0..columns.len()).map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0)).collect();
        let rest = w[1..].iter().sum::<usize>() + 2 * (columns.len() - 1);
        (w, rest)
    };
    let (mut widths, mut rest) = widths_of(&rows);
    if rest + MIN_AGENT > width {
        for r in rows.iter_mut().skip(1) {
            for v in r.iter_mut().skip(1) {
                *v = compact(v);
            }
        }
        (widths, rest) = widths_of(&rows);
    }
    widths[0] = widths[0].min(width.saturating_sub(rest).max(MIN_AGENT));
    let mut out = String::new();
    for r in &rows {
        let cells: Vec<String> = r
            .iter()
            .zip(&columns)
            .zip(&widths)
            .enumerate()
            .map(|(i, ((v, _), w))| if i == 0 { format!("{:<w$}", fit(v, *w)) } else { format!("{v:>w$}") })
            .collect();
        out.push_str(&fit(cells.join("  ").trim_end(), width));
        out.push('\n');
    }
    out
}

/// The windows of the crawl-to-referral ratio (`/api/referrals`).
const WINDOWS: [(&str, &str); 3] = [("24h", "24H"), ("7d", "7D"), ("30d", "30D")];

/// The field's numbers under the table, from `/api/referrals`: per crawler
/// operator its crawl-to-referral ratio and bytes over 24 hours, 7 days
/// and 30 days, then Markdown requested against served. No line is wider
/// than `width`.
pub fn field(referrals: &Value, width: usize) -> String {
    let mut rows: Vec<Vec<String>> = vec![std::iter::once("OPERATOR".to_string())
        .chain(WINDOWS.iter().map(|(_, h)| format!("CRAWL:REF {h}")))
        .chain(WINDOWS.iter().map(|(_, h)| format!("BYTES {h}")))
        .collect()];
    for o in referrals["operators"].as_array().map_or(&[][..], Vec::as_slice) {
        let w = &o["windows"];
        rows.push(
            std::iter::once(cell(&o["operator"]))
                .chain(WINDOWS.iter().map(|(k, _)| crawlgate_admin::ratio(&w[*k])))
                .chain(WINDOWS.iter().map(|(k, _)| crawlgate_admin::human_bytes(&w[*k]["bytes_sent"])))
                .collect(),
        );
    }
    let mut out = String::new();
    if rows.len() == 1 {
        out.push_str(&fit("No crawls or referrals by the operators of AI products yet.", width));
        out.push('\n');
    } else {
        let widths: Vec<usize> =
            (0..rows[0].len()).map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0)).collect();
        for r in &rows {
            let cells: Vec<String> = r
                .iter()
                .zip(&widths)
                .enumerate()
                .map(|(i, (v, w))| if i == 0 { format!("{v:<w$}") } else { format!("{v:>w$}") })
                .collect();
            out.push_str(&fit(cells.join("  ").trim_end(), width));
            out.push('\n');
        }
    }
    let md = &referrals["markdown"];
    let line = format!("MARKDOWN  requested {}, served {}", cell(&md["requested"]), cell(&md["served"]));
    out.push_str(&fit(&line, width));
    out.push('\n');
    out
}

/// A count or rate of more than six characters in at most six: `12.3M`
/// (SI prefixes, powers of 1000); anything else as it is.
fn compact(v: &str) -> String {
    let Ok(n) = v.parse::<f64>() else { return v.to_string() };
    if v.len() <= 6 || !n.is_finite() {
        return v.to_string();
    }
    let mut n = n;
    for unit in ["k", "M", "G", "T", "P", "E", "Z", "Y"] {
        n /= 1000.0;
        if n < 999.95 {
            return if n < 99.95 { format!("{n:.1}{unit}") } else { format!("{n:.0}{unit}") };
        }
    }
    format!("{n:.0}Y")
}

/// `s` cut to `width` characters, its last one `…` when cut.
fn fit(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    let mut cut: String = s.chars().take(width.saturating_sub(1)).collect();
    cut.push('…');
    cut
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

/// An admin address: `host:port` or `http://host:port[/prefix]`.
struct Target {
    authority: String,
    prefix: String,
}

impl Target {
    fn parse(url: &str) -> anyhow::Result<Target> {
        let rest = match url.split_once("://") {
            Some(("http", rest)) => rest,
            Some(_) => bail!("the admin address must be host:port or an http:// URL (the admin listener speaks plain HTTP), found {url}"),
            None => url,
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
        // A listener on every address (server.admin = "0.0.0.0:9090") is
        // reached on loopback.
        let authority = match authority.rsplit_once(':') {
            Some(("0.0.0.0", port)) => format!("127.0.0.1:{port}"),
            Some(("[::]", port)) => format!("[::1]:{port}"),
            _ => authority,
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
    fn table_aligns_totals_rates_and_fits_100_columns() {
        let before = json!({
            "now_ms": 1_000_000,
            "agents": [
                {"agent": "GPTBot", "requests": 2, "blocked": 0},
            ],
            "total": {"requests": 2, "blocked": 0}
        });
        let v = json!({
            "now_ms": 1_002_000,
            "agents": [
                {"agent": "GPTBot", "category": "ai-training", "operator": "OpenAI", "requests": 12, "allowed": 9,
                 "violations": 1, "blocked": 0, "spoofed": 1, "verified": 10, "robots_txt": 1, "bytes_sent": 5120},
                {"agent": "meta-externalagent-with-a-very-long-name\u{1b}[2J", "requests": 3, "allowed": 0,
                 "violations": 0, "blocked": 3, "spoofed": 3, "verified": 0, "robots_txt": 0, "bytes_sent": 123_456_789}
            ],
            "total": {"requests": 15, "allowed": 9, "violations": 1, "blocked": 3, "spoofed": 4, "verified": 10,
                      "robots_txt": 1, "bytes_sent": 123_461_909}
        });
        let t = table(&v, Some(&before), WIDTH);
        assert_eq!(
            t,
            "AGENT           REQUESTS  REQ/S  ALLOWED  VIOLATIONS  BLOCKED  SPOOFED  VERIFIED  ROBOTS.TXT   BYTES\n\
             GPTBot                12    5.0        9           1        0        1        10           1    5120\n\
             meta-external…         3    1.5        0           0        3        3         0           0  117.7M\n\
             TOTAL                 15    6.5        9           1        3        4        10           1  117.7M\n"
        );
        assert_eq!(t.lines().map(|l| l.chars().count()).max(), Some(WIDTH));
        // Without a previous sample there is no rate.
        let first = table(&v, None, WIDTH);
        assert!(first.contains("\nGPTBot                12      -        9"), "{first}");
    }

    /// Counts too wide for the terminal are abbreviated, the agent name is
    /// cut, and no line (the live title included) passes the width.
    #[test]
    fn huge_counts_and_a_long_title_fit_the_width() {
        let max = u64::MAX;
        let row = |agent: &str| {
            json!({"agent": agent, "requests": max, "allowed": max, "violations": max, "blocked": max,
                   "spoofed": max, "verified": max, "robots_txt": max, "bytes_sent": max})
        };
        let before = json!({"now_ms": 1_000, "agents": [row("GPTBot")], "total": row("")});
        let mut v = json!({"now_ms": 2_000, "agents": [row("GPTBot"), row(&"x".repeat(300))], "total": row("")});
        v["agents"][0]["requests"] = json!(0);
        let t = table(&v, Some(&before), WIDTH);
        assert_eq!(
            t,
            "AGENT            REQUESTS  REQ/S  ALLOWED  VIOLATIONS  BLOCKED  SPOOFED  VERIFIED  ROBOTS.TXT  BYTES\n\
             GPTBot                  0    0.0    18.4E       18.4E    18.4E    18.4E     18.4E       18.4E  16.0E\n\
             xxxxxxxxxxxxxx…     18.4E  18.4E    18.4E       18.4E    18.4E    18.4E     18.4E       18.4E  16.0E\n\
             TOTAL               18.4E    0.0    18.4E       18.4E    18.4E    18.4E     18.4E       18.4E  16.0E\n"
        );
        for width in [40, 60, 80, WIDTH, 132] {
            let t = table(&v, Some(&before), width);
            let widest = t.lines().map(|l| l.chars().count()).max();
            assert!(widest <= Some(width), "{width}: {t}");
        }
        let long = format!("{}:9090", "admin.".repeat(30));
        let line = fit_lines(&title(&long, 2.0), WIDTH);
        assert_eq!(line.chars().count(), WIDTH + 1, "{line}");
        assert!(line.starts_with("crawlgate top: admin.admin.") && line.ends_with("…\n"), "{line}");
        assert_eq!(fit_lines("short\nline two", 5), "short\nline…\n");
        assert_eq!(
            ["999999", "1000000", "123456789", "99999999999", "18446744073709551615", "-", "12.5"].map(compact),
            ["999999", "1.0M", "123M", "100G", "18.4E", "-", "12.5"].map(String::from)
        );
    }

    /// LIMITED and PAID appear once some agent has a 429 or a charge; a
    /// 402 is neither blocked nor paid.
    #[test]
    fn limited_and_paid_columns_appear_when_counted() {
        let v = json!({
            "agents": [{"agent": "GPTBot", "requests": 9, "allowed": 4, "violations": 0, "blocked": 1, "limited": 2,
                        "paid": 3, "payment_required": 1, "spoofed": 0, "verified": 0, "robots_txt": 1, "bytes_sent": 10}],
            "total": {"requests": 9, "allowed": 4, "violations": 0, "blocked": 1, "limited": 2, "paid": 3,
                      "spoofed": 0, "verified": 0, "robots_txt": 1, "bytes_sent": 10}
        });
        assert_eq!(
            table(&v, None, WIDTH),
            "AGENT   REQUESTS  REQ/S  ALLOWED  VIOLATIONS  BLOCKED  LIMITED  PAID  ROBOTS.TXT  BYTES\n\
             GPTBot         9      -        4           0        1        2     3           1     10\n\
             TOTAL          9      -        4           0        1        2     3           1     10\n"
        );
    }

    #[test]
    fn field_numbers_under_the_table() {
        let w = |c: u64, r: u64, b: u64| json!({"crawl_requests": c, "referrals": r, "crawls_per_referral": (r > 0).then(|| c as f64 / r as f64), "bytes_sent": b});
        let r = json!({"operators": [{"operator": "OpenAI", "windows": {"24h": w(100, 2, 10), "7d": w(5, 0, 0), "30d": w(0, 0, 0)}}],
                       "markdown": {"requested": 3, "served": 1}});
        assert_eq!(
            field(&r, WIDTH),
            "OPERATOR  CRAWL:REF 24H  CRAWL:REF 7D  CRAWL:REF 30D  BYTES 24H  BYTES 7D  BYTES 30D\n\
             OpenAI             50:1           5:0              –         10         0          0\n\
             MARKDOWN  requested 3, served 1\n"
        );
        assert_eq!(
            field(&json!({}), 40),
            "No crawls or referrals by the operators…\nMARKDOWN  requested -, served -\n"
        );
    }

    #[test]
    fn targets() {
        let t = Target::parse("http://127.0.0.1:9090/").unwrap();
        assert_eq!((t.authority.as_str(), t.prefix.as_str()), ("127.0.0.1:9090", ""));
        let t = Target::parse("http://admin.internal/crawlgate").unwrap();
        assert_eq!((t.authority.as_str(), t.prefix.as_str()), ("admin.internal:80", "crawlgate"));
        assert!(Target::parse("https://x").is_err());
        let t = Target::parse("127.0.0.1:9090").unwrap();
        assert_eq!((t.authority.as_str(), t.prefix.as_str()), ("127.0.0.1:9090", ""));
        let t = Target::parse("0.0.0.0:9090").unwrap();
        assert_eq!(t.authority, "127.0.0.1:9090");
        let t = Target::parse("[::]:9090").unwrap();
        assert_eq!(t.authority, "[::1]:9090");
        let t = Target::parse("[::1]:9091").unwrap();
        assert_eq!(t.authority, "[::1]:9091");
    }
}
