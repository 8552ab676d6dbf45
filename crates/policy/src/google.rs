//! robots.txt read and decided exactly as Google's open-source parser and
//! matcher do (github.com/google/robotstxt, `robots.cc`), for
//! `robots-test --as google`. Parsed once per file into its records;
//! each question replays them with no allocation (a URL whose path needs a
//! leading `/` prepended is the one exception).
//!
//! What `robots.cc` does, and so does this:
//! - bytes, not text: a UTF-8 byte order mark (or a prefix of one) at the
//!   start is skipped; `\n`, `\r` and `\r\n` end a line; a line keeps its
//!   first 16,663 bytes (`kMaxLineLen` 2083 * 8, less the terminator) and
//!   ends at a NUL byte; no limit on the file's size;
//! - `#` starts a comment anywhere; keys and values are trimmed of ASCII
//!   whitespace; the separator is the line's first `:`, or, without one, a
//!   run of spaces or tabs when the line has exactly two words;
//! - a key is read by its prefix, case-insensitively (`KeyIsUserAgent`
//!   and the others): `user-agent`, `useragent`, `user agent`; `allow`;
//!   `disallow`, `dissallow`, `dissalow`, `disalow`, `diasllow`,
//!   `disallaw` (so `User-agents` and `Disallowed` are keys too);
//! - a user-agent value is `*` (alone or followed by whitespace) or cut at
//!   its first character outside `[A-Za-z_-]` (`MJ12bot` is `MJ`), then
//!   compared with the asker's name as given, ASCII case-insensitively;
//! - rule values are percent-escaped (`%xx` upper-cased, bytes >= 0x80
//!   encoded); the URL's path, parameters and query are matched as given;
//! - the longest matching pattern wins, `allow` on a tie; `Allow: /x/index.htm`
//!   also allows `/x/`; a group naming the asker (even an empty one) hides `*`.

use std::borrow::Cow;

/// Bytes a line keeps (`kMaxLineLen - 1`).
pub const MAX_LINE: usize = 2083 * 8 - 1;

/// One record that decides something.
#[derive(Debug, Clone)]
enum Record {
    /// A `user-agent` line: global (`*`) or the cut token.
    Agent { global: bool, token: Box<[u8]> },
    /// An `allow` or `disallow` line with its escaped pattern; an allow
    /// pattern ending in `/index.htm...` carries its directory form
    /// (`/x/$`), tried when the pattern does not match.
    Rule { allow: bool, pattern: Box<[u8]>, index_dir: Option<Box<[u8]>> },
}

/// A robots.txt as Google reads it.
#[derive(Debug, Clone, Default)]
pub struct GoogleRobots {
    records: Vec<Record>,
}

/// ASCII whitespace as `absl::ascii_isspace` reads it.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn trim(mut s: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = s {
        if !is_space(*first) {
            break;
        }
        s = rest;
    }
    while let [rest @ .., last] = s {
        if !is_space(*last) {
            break;
        }
        s = rest;
    }
    s
}

fn starts_with_ignore_case(s: &[u8], prefix: &str) -> bool {
    s.len() >= prefix.len() && s[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Key {
    UserAgent,
    Allow,
    Disallow,
    Other,
}

/// `GetKeyType`: the first of user-agent, allow, disallow whose spellings
/// start the key (sitemap and unknown keys decide nothing).
fn key_type(key: &[u8]) -> Key {
    let any = |spellings: &[&str]| spellings.iter().any(|p| starts_with_ignore_case(key, p));
    if any(&["user-agent", "useragent", "user agent"]) {
        Key::UserAgent
    } else if any(&["allow"]) {
        Key::Allow
    } else if any(&["disallow", "dissallow", "dissalow", "disalow", "diasllow", "disallaw"]) {
        Key::Disallow
    } else {
        Key::Other
    }
}

/// `MaybeEscapePattern`: `%xx` upper-cased, bytes >= 0x80 `%XX`-encoded.
fn escape(src: &[u8]) -> Vec<u8> {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = Vec::with_capacity(src.len());
    let mut i = 0;
    while i < src.len() {
        let c = src[i];
        let hex_at = |j: usize| src.get(j).is_some_and(u8::is_ascii_hexdigit);
        if c == b'%' && hex_at(i + 1) && hex_at(i + 2) {
            out.extend_from_slice(&[b'%', src[i + 1].to_ascii_uppercase(), src[i + 2].to_ascii_uppercase()]);
            i += 3;
        } else {
            if c & 0x80 != 0 {
                out.extend_from_slice(&[b'%', HEX[usize::from(c >> 4)], HEX[usize::from(c & 0xf)]]);
            } else {
                out.push(c);
            }
            i += 1;
        }
    }
    out
}

/// `ExtractUserAgent`: the value up to its first character outside
/// `[A-Za-z_-]`.
fn extract_user_agent(value: &[u8]) -> &[u8] {
    let end = value.iter().position(|&b| !(b.is_ascii_alphabetic() || b == b'-' || b == b'_')).unwrap_or(value.len());
    &value[..end]
}

impl GoogleRobots {
    /// Parses `body` as `RobotsTxtParser::Parse` does.
    pub fn parse(body: &[u8]) -> GoogleRobots {
        const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];
        let mut robots = GoogleRobots::default();
        let mut line: Vec<u8> = Vec::with_capacity(256);
        let mut bom_pos = 0usize;
        let mut last_was_cr = false;
        for &ch in body {
            if bom_pos < BOM.len() {
                let skip = ch == BOM[bom_pos];
                bom_pos += 1;
                if skip {
                    continue;
                }
            }
            bom_pos = BOM.len();
            if ch != b'\n' && ch != b'\r' {
                if line.len() < MAX_LINE {
                    line.push(ch);
                }
            } else {
                let crlf_continuation = line.is_empty() && last_was_cr && ch == b'\n';
                if !crlf_continuation {
                    robots.line(&line);
                }
                line.clear();
                last_was_cr = ch == b'\r';
            }
        }
        robots.line(&line);
        robots
    }

    /// `GetKeyAndValueFrom` and `ParseAndEmitLine` for one line.
    fn line(&mut self, line: &[u8]) {
        // A C string: it ends at a NUL byte.
        let line = line.split(|&b| b == 0).next().unwrap_or(&[]);
        let line = line.split(|&b| b == b'#').next().unwrap_or(&[]);
        let line = trim(line);
        if line.is_empty() {
            return;
        }
        let sep = match line.iter().position(|&b| b == b':') {
            Some(i) => i,
            None => {
                let Some(i) = line.iter().position(|&b| b == b' ' || b == b'\t') else { return };
                let value = &line[i..];
                let start = value.iter().position(|&b| b != b' ' && b != b'\t').unwrap_or(value.len());
                if value[start..].iter().any(|&b| b == b' ' || b == b'\t') {
                    return;
                }
                i
            }
        };
        let key = trim(&line[..sep]);
        if key.is_empty() {
            return;
        }
        let value = trim(&line[sep + 1..]);
        match key_type(key) {
            Key::UserAgent => {
                let global = value.first() == Some(&b'*') && value.get(1).is_none_or(|&b| is_space(b));
                let token = if global { Box::default() } else { extract_user_agent(value).into() };
                self.records.push(Record::Agent { global, token });
            }
            k @ (Key::Allow | Key::Disallow) => {
                let pattern = escape(value);
                let index_dir = (k == Key::Allow)
                    .then(|| pattern.iter().rposition(|&b| b == b'/'))
                    .flatten()
                    .filter(|&slash| pattern[slash..].starts_with(b"/index.htm"))
                    .map(|slash| {
                        let mut dir = pattern[..=slash].to_vec();
                        dir.push(b'$');
                        dir.into_boxed_slice()
                    });
                self.records.push(Record::Rule { allow: k == Key::Allow, pattern: pattern.into(), index_dir });
            }
            Key::Other => {}
        }
    }

    /// Whether `user_agent` (compared as given) may fetch `url`, as
    /// `RobotsMatcher::OneAgentAllowedByRobots` answers.
    pub fn is_allowed(&self, user_agent: &str, url: &str) -> bool {
        let path = path_params_query(url.as_bytes());
        let agent = user_agent.as_bytes();
        let mut m = Matcher::default();
        for r in &self.records {
            match r {
                Record::Agent { global, token } => {
                    if m.seen_separator {
                        m.seen_specific = false;
                        m.seen_global = false;
                        m.seen_separator = false;
                    }
                    if *global {
                        m.seen_global = true;
                    } else if token.eq_ignore_ascii_case(agent) {
                        m.seen_specific = true;
                        m.ever_seen_specific = true;
                    }
                }
                Record::Rule { allow, pattern, index_dir } => {
                    if !(m.seen_global || m.seen_specific) {
                        continue;
                    }
                    m.seen_separator = true;
                    if matches(&path, pattern) {
                        m.record(*allow, pattern.len());
                    } else if let Some(dir) = index_dir.as_deref().filter(|d| matches(&path, d)) {
                        m.record(true, dir.len());
                    }
                }
            }
        }
        !m.disallow()
    }
}

/// The matcher's state while the records are replayed; priorities are
/// pattern lengths, -1 for none.
struct Matcher {
    seen_global: bool,
    seen_specific: bool,
    ever_seen_specific: bool,
    seen_separator: bool,
    allow_specific: i64,
    disallow_specific: i64,
    allow_global: i64,
    disallow_global: i64,
}

impl Default for Matcher {
    fn default() -> Self {
        Matcher {
            seen_global: false,
            seen_specific: false,
            ever_seen_specific: false,
            seen_separator: false,
            allow_specific: -1,
            disallow_specific: -1,
            allow_global: -1,
            disallow_global: -1,
        }
    }
}

impl Matcher {
    fn record(&mut self, allow: bool, len: usize) {
        let priority = i64::try_from(len).unwrap_or(i64::MAX);
        let slot = match (self.seen_specific, allow) {
            (true, true) => &mut self.allow_specific,
            (true, false) => &mut self.disallow_specific,
            (false, true) => &mut self.allow_global,
            (false, false) => &mut self.disallow_global,
        };
        *slot = (*slot).max(priority);
    }

    /// `RobotsMatcher::disallow`.
    fn disallow(&self) -> bool {
        if self.allow_specific > 0 || self.disallow_specific > 0 {
            return self.disallow_specific > self.allow_specific;
        }
        if self.ever_seen_specific {
            return false;
        }
        if self.allow_global > 0 || self.disallow_global > 0 {
            return self.disallow_global > self.allow_global;
        }
        false
    }
}

/// `RobotsMatchStrategy::Matches`: `pattern` anchored at the start of
/// `path`, `*` any run of bytes, `$` special only at the end.
fn matches(path: &[u8], pattern: &[u8]) -> bool {
    let (pattern, anchored) = match pattern.split_last() {
        Some((b'$', rest)) => (rest, true),
        _ => (pattern, false),
    };
    let (mut p, mut s) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    loop {
        if p == pattern.len() {
            if !anchored || s == path.len() {
                return true;
            }
        } else if pattern[p] == b'*' {
            star = Some((p, s));
            p += 1;
            continue;
        } else if s < path.len() && pattern[p] == path[s] {
            p += 1;
            s += 1;
            continue;
        }
        match star {
            Some((sp, ss)) if ss < path.len() => {
                star = Some((sp, ss + 1));
                p = sp + 1;
                s = ss + 1;
            }
            _ => return false,
        }
    }
}

/// `GetPathParamsQuery`: the URL's path, parameters and query (no
/// fragment), always starting with `/`; `/` when it has none.
pub fn path_params_query(url: &[u8]) -> Cow<'_, [u8]> {
    let find_any = |from: usize, set: &[u8]| {
        url.get(from..).and_then(|s| s.iter().position(|b| set.contains(b))).map(|i| i + from)
    };
    let search_start = if url.starts_with(b"//") { 2 } else { 0 };
    let early_path = find_any(search_start, b"/?;").unwrap_or(usize::MAX);
    let mut protocol_end = url
        .get(search_start..)
        .and_then(|s| s.windows(3).position(|w| w == b"://"))
        .map_or(usize::MAX, |i| i + search_start);
    if early_path < protocol_end {
        protocol_end = usize::MAX;
    }
    protocol_end = if protocol_end == usize::MAX { search_start } else { protocol_end + 3 };
    let Some(path_start) = find_any(protocol_end, b"/?;") else { return Cow::Borrowed(b"/") };
    let hash = find_any(search_start, b"#");
    if hash.is_some_and(|h| h < path_start) {
        return Cow::Borrowed(b"/");
    }
    let path = &url[path_start..hash.unwrap_or(url.len())];
    if path.first() == Some(&b'/') {
        Cow::Borrowed(path)
    } else {
        let mut p = Vec::with_capacity(path.len() + 1);
        p.push(b'/');
        p.extend_from_slice(path);
        Cow::Owned(p)
    }
}

#[cfg(test)]
#[path = "google_tests.rs"]
mod tests;
