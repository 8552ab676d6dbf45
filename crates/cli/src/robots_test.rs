//! `crawlgate robots-test`: evaluates any robots.txt file for one crawler
//! and one URL with RFC 9309 semantics.
//!
//! It reads the file with the policy crate's tolerant parser
//! ([`RobotsTxt`]), the one `import` uses, so the two agree with each other
//! and with the conformance suite. `--as google` reads it as Google's
//! open-source parser does instead; `--batch` answers many questions per
//! process.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use crawlgate_policy::canonical::canonicalize;
use crawlgate_policy::google::GoogleRobots;
use crawlgate_policy::pattern::{google_path, has_unreserved_escape, Pattern};
use crawlgate_policy::robotstxt::{google_token, path_of, RobotsTxt};
use crawlgate_policy::siteintent::{self, SiteIntent};

fn verdict(allowed: bool) -> &'static str {
    if allowed {
        "allowed"
    } else {
        "disallowed"
    }
}

/// Which of Google's behaviours can explain a difference from RFC 9309.
fn why(intent: &SiteIntent, user_agent: &str, url: &str) -> String {
    let path = path_of(url);
    if path == "/robots.txt" || path.starts_with("/robots.txt?") {
        return "Google decides /robots.txt like any path (RFC 9309 always allows it)".to_string();
    }
    let parsed = intent.parsed();
    let index = parsed.groups().iter().flat_map(|g| g.rules.iter()).find(|r| {
        r.allow && path.ends_with('/') && [format!("{path}index.html"), format!("{path}index.htm")].contains(&r.pattern)
    });
    if let Some(r) = index {
        return format!("Google reads `Allow: {}` (line {}) as allowing {path} too", r.pattern, r.line);
    }
    let mut reasons: Vec<String> = Vec::new();
    // Rules whose match differs only because Google keeps escapes.
    let escaped: Vec<_> = parsed
        .groups()
        .iter()
        .flat_map(|g| g.rules.iter())
        .filter(|r| {
            !r.pattern.is_empty()
                && Pattern::new_google(&r.pattern).matches(&google_path(&path))
                    != Pattern::new_lenient(&r.pattern).matches(&canonicalize(&path))
        })
        .collect();
    if has_unreserved_escape(&path) && !escaped.is_empty() {
        reasons.push(format!(
            "Google does not decode percent-escapes of unreserved characters in `{path}` (RFC 9309 section 2.2.2 decodes them)"
        ));
    }
    for r in escaped.iter().filter(|r| has_unreserved_escape(&r.pattern)) {
        reasons.push(format!(
            "Google does not decode percent-escapes of unreserved characters in line {} `{}` (RFC 9309 section 2.2.2 decodes them)",
            r.line, r.pattern
        ));
    }
    let token = google_token(user_agent);
    if token != user_agent.trim() {
        reasons.push(format!("Google reads the crawler as `{token}`"));
    }
    for r in &intent.repairs {
        reasons.push(format!("Google reads line {} `{}` as {}", r.line, r.written, r.read));
    }
    if reasons.is_empty() {
        reasons.push("Google's matcher reads the file otherwise".to_string());
    }
    reasons.join("; ")
}

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
///
/// With `google`, the verdict is Google's ([`GoogleRobots`], a port of
/// google/robotstxt's parser and matcher: the whole file read, the asker's
/// name compared as given); when RFC 9309 decides otherwise a second line
/// says so and why.
pub fn robots_test(robots_file: &Path, user_agent: &str, url: &str, google: bool) -> anyhow::Result<ExitCode> {
    let file =
        if google { crate::robots_file::read_whole(robots_file)? } else { crate::robots_file::read(robots_file)? };
    if let Some(note) = &file.truncated {
        eprintln!("note: {note}");
    }
    if google {
        let rfc = RobotsTxt::parse(&crate::robots_file::read(robots_file)?.bytes).is_allowed(user_agent, url);
        let intent = siteintent::read_google(&file.bytes);
        let g = GoogleRobots::parse(&file.bytes).is_allowed(user_agent, url);
        outln!("{}", verdict(g));
        if rfc != g {
            outln!("RFC 9309: {}; Google: {}, because {}", verdict(rfc), verdict(g), why(&intent, user_agent, url));
        }
        return Ok(if g { ExitCode::SUCCESS } else { ExitCode::from(1) });
    }
    if RobotsTxt::parse(&file.bytes).is_allowed(user_agent, url) {
        outln!("allowed");
        Ok(ExitCode::SUCCESS)
    } else {
        outln!("disallowed");
        Ok(ExitCode::from(1))
    }
}

/// `crawlgate robots-test --batch [ROBOTS_FILE]`: one question per stdin
/// line, one answer per stdout line, in the same order. A line is TSV
/// (`USER_AGENT<TAB>URL` with a `ROBOTS_FILE` argument, else
/// `FILE<TAB>USER_AGENT<TAB>URL`), answered `allowed` or `disallowed`
/// after the question's columns, or a JSON object (`{"file": ...,
/// "user_agent": ..., "url": ...}`, `file` optional with the argument),
/// answered as the object with `"allowed": true|false` added. Each file is
/// read and parsed once. A malformed line is answered `error<TAB>why` (or
/// `{"error": ...}`) and counted; exit 0 when every line was answered, 1
/// when some were errors, 2 when stdin cannot be read.
pub fn batch(robots_file: Option<&Path>, google: bool) -> anyhow::Result<ExitCode> {
    let mut files: HashMap<PathBuf, Parsed> = HashMap::new();
    let stdin = std::io::stdin().lock();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut errors = 0usize;
    for line in stdin.lines() {
        let line = line.context("cannot read stdin")?;
        let line = line.strip_suffix('\r').unwrap_or(&line);
        let answer = if line.trim_start().starts_with('{') {
            json_answer(line, robots_file, &mut files, google)
        } else {
            tsv_answer(line, robots_file, &mut files, google)
        };
        let answer = answer.unwrap_or_else(|(json, why)| {
            errors += 1;
            if json {
                serde_json::json!({ "error": why }).to_string()
            } else {
                format!("error\t{}", why.replace(['\t', '\n'], " "))
            }
        });
        writeln!(out, "{answer}").context("cannot write stdout")?;
    }
    out.flush().context("cannot write stdout")?;
    Ok(if errors == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// A file parsed for one mode.
enum Parsed {
    Rfc(Box<RobotsTxt>),
    Google(GoogleRobots),
}

impl Parsed {
    fn is_allowed(&self, user_agent: &str, url: &str) -> bool {
        match self {
            Parsed::Rfc(r) => r.is_allowed(user_agent, url),
            Parsed::Google(g) => g.is_allowed(user_agent, url),
        }
    }
}

/// The parsed file at `path`, read and parsed once (the whole file with
/// `google`, as Google's parser reads it).
fn file<'a>(files: &'a mut HashMap<PathBuf, Parsed>, path: &Path, google: bool) -> Result<&'a Parsed, String> {
    if !files.contains_key(path) {
        let parsed = if google {
            Parsed::Google(GoogleRobots::parse(
                &crate::robots_file::read_whole(path).map_err(|e| format!("{e:#}"))?.bytes,
            ))
        } else {
            Parsed::Rfc(Box::new(RobotsTxt::parse(
                &crate::robots_file::read(path).map_err(|e| format!("{e:#}"))?.bytes,
            )))
        };
        files.insert(path.to_path_buf(), parsed);
    }
    files.get(path).ok_or_else(|| format!("cannot read {}", path.display()))
}

fn tsv_answer(
    line: &str,
    default: Option<&Path>,
    files: &mut HashMap<PathBuf, Parsed>,
    google: bool,
) -> Result<String, (bool, String)> {
    let cols: Vec<&str> = line.split('\t').collect();
    let (path, ua, url) = match (cols.as_slice(), default) {
        ([ua, url], Some(d)) => (d.to_path_buf(), *ua, *url),
        ([f, ua, url], _) => (PathBuf::from(f), *ua, *url),
        _ => {
            return Err((
                false,
                format!("expected {} tab-separated columns", if default.is_some() { "2 or 3" } else { "3" }),
            ))
        }
    };
    let robots = file(files, &path, google).map_err(|e| (false, e))?;
    let allowed = robots.is_allowed(ua, url);
    Ok(format!("{line}\t{}", verdict(allowed)))
}

fn json_answer(
    line: &str,
    default: Option<&Path>,
    files: &mut HashMap<PathBuf, Parsed>,
    google: bool,
) -> Result<String, (bool, String)> {
    let mut v: serde_json::Value = serde_json::from_str(line).map_err(|e| (true, format!("not JSON: {e}")))?;
    let field = |k: &str| v.get(k).and_then(serde_json::Value::as_str).map(str::to_string);
    let path = match (field("file"), default) {
        (Some(f), _) => PathBuf::from(f),
        (None, Some(d)) => d.to_path_buf(),
        (None, None) => return Err((true, "no \"file\"".to_string())),
    };
    let ua = field("user_agent").ok_or((true, "no \"user_agent\" string".to_string()))?;
    let url = field("url").ok_or((true, "no \"url\" string".to_string()))?;
    let robots = file(files, &path, google).map_err(|e| (true, e))?;
    let allowed = robots.is_allowed(&ua, &url);
    if let Some(o) = v.as_object_mut() {
        o.insert("allowed".to_string(), serde_json::Value::Bool(allowed));
    }
    Ok(v.to_string())
}
