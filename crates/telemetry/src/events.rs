//! Typed events of the request path: each knows its metrics and its log
//! line, so labels come from enums and the hooks never format free
//! strings for them.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use chrono::{DateTime, SecondsFormat, Utc};
use crawlgate_policy::client::ClientAddr;
use crawlgate_policy::verification::Verification;
use crawlgate_policy::{AccessLogFormat, Action, AgentId, BlockReason, LocalFile};

use crate::activity::{Activity, Hit};

use crate::metrics::{Metrics, OTHER_AGENT};

pub mod rewrite;

/// What the proxy answered itself, without contacting the origin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Local {
    /// A locally served file (or its 404 when the policy publishes none).
    File(LocalFile),
    /// An enforcement block.
    Blocked,
    /// A request refused with 400.
    BadRequest,
    /// A request that came back to this proxy (508).
    LoopDetected,
    /// A replayed Web Bot Auth signature (429).
    Replayed,
    /// A request over its rate limit (429).
    RateLimited,
}

impl Local {
    /// Its name in the access log.
    pub const fn as_str(self) -> &'static str {
        match self {
            Local::File(f) => f.as_str(),
            Local::Blocked => "blocked",
            Local::BadRequest => "bad-request",
            Local::LoopDetected => "loop-detected",
            Local::Replayed => "replayed",
            Local::RateLimited => "rate-limited",
        }
    }
}

/// A request for a path robots.txt disallows to its agent. Its log
/// record is the request's access log line (`violation=true`, with the
/// deciding rule); this event counts it.
pub struct Violation<'a> {
    /// The identified token, or [`OTHER_AGENT`].
    pub agent: &'a str,
    /// The group applied.
    pub group: &'a str,
}

impl Violation<'_> {
    /// Counts it.
    pub fn emit(&self, metrics: &Metrics) {
        metrics.violation(self.agent, self.group);
    }
}

/// A locally served file was fetched.
pub struct FileFetched<'a> {
    /// Who fetched it.
    pub agent: Option<&'a str>,
    /// Which file.
    pub file: LocalFile,
}

impl FileFetched<'_> {
    /// Counts it.
    pub fn emit(&self, metrics: &Metrics) {
        metrics.robots_fetch(self.agent.unwrap_or(OTHER_AGENT), self.file.as_str());
    }
}

/// The longest User-Agent kept in an access log line, in bytes.
pub const MAX_USER_AGENT: usize = 256;
/// The longest path (and query) kept in an access log line, in bytes.
pub const MAX_PATH: usize = 2048;
/// The longest Host kept in an access log line, in bytes.
pub const MAX_HOST: usize = 256;
/// The longest error text kept in an access log line, in bytes.
pub const MAX_ERROR: usize = 512;

/// A request's id in the access log: a random prefix drawn once per
/// process and a counter, so ids are unique within the process and
/// (almost surely) across restarts and replicas.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestId {
    /// Drawn at start.
    pub prefix: u32,
    /// The request's number in this process.
    pub n: u64,
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut text = IdText::new();
        // Only ASCII digits and a dash.
        f.write_str(std::str::from_utf8(text.write(*self)).unwrap_or_default())
    }
}

/// A request id as text (`{prefix:08x}-{n}`), written without the
/// formatting machinery: it is sent upstream with every proxied request.
pub struct IdText([u8; 8 + 1 + 20]);

impl Default for IdText {
    fn default() -> IdText {
        IdText::new()
    }
}

impl IdText {
    /// An empty buffer.
    pub fn new() -> IdText {
        IdText([0; 8 + 1 + 20])
    }

    /// Writes `id` and returns its bytes.
    pub fn write(&mut self, id: RequestId) -> &[u8] {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let b = &mut self.0;
        for (i, shift) in (0..8).rev().enumerate() {
            b[i] = HEX[(id.prefix >> (shift * 4)) as usize & 0xf];
        }
        b[8] = b'-';
        let len = 9 + decimal(id.n, &mut b[9..]);
        &b[..len]
    }
}

/// Writes `n` in decimal at the start of `out` (20 bytes hold any u64) and
/// returns the length.
fn decimal(mut n: u64, out: &mut [u8]) -> usize {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let len = digits.len() - i;
    out[..len].copy_from_slice(&digits[i..]);
    len
}

/// An IP address as text: IPv4 written by hand (`Ipv4Addr`'s `Display`
/// goes through the formatter's padding path, a measurable part of every
/// proxied request), IPv6 by `Display`.
pub struct IpText {
    buf: [u8; 45],
}

impl Default for IpText {
    fn default() -> IpText {
        IpText::new()
    }
}

impl IpText {
    /// An empty buffer.
    pub fn new() -> IpText {
        IpText { buf: [0; 45] }
    }

    /// Writes `ip` and returns its bytes (as `Display` writes them).
    pub fn write(&mut self, ip: std::net::IpAddr) -> &[u8] {
        match ip {
            std::net::IpAddr::V4(v4) => {
                let mut len = 0;
                for (i, octet) in v4.octets().into_iter().enumerate() {
                    if i > 0 {
                        self.buf[len] = b'.';
                        len += 1;
                    }
                    len += decimal(u64::from(octet), &mut self.buf[len..]);
                }
                &self.buf[..len]
            }
            std::net::IpAddr::V6(v6) => {
                use std::io::Write;
                let mut cursor = std::io::Cursor::new(&mut self.buf[..]);
                // 45 bytes hold the longest IPv6 text (an IPv4-mapped one).
                let _ = write!(cursor, "{v6}");
                let len = usize::try_from(cursor.position()).unwrap_or(0);
                &self.buf[..len]
            }
        }
    }
}

/// One finished request: the request metrics and the access log line.
pub struct RequestDone<'a> {
    /// When the request's header arrived.
    pub time: SystemTime,
    /// This request's id.
    pub id: RequestId,
    /// The client (`None` on a Unix socket).
    pub client: Option<&'a ClientAddr>,
    /// Method.
    pub method: &'a str,
    /// The Host field (or the HTTP/2 `:authority`).
    pub host: Option<&'a str>,
    /// Canonical path and query (the raw target of a 400).
    pub path: &'a str,
    /// `HTTP/1.1`, `HTTP/2`.
    pub protocol: &'static str,
    /// Status sent to the client (0: none).
    pub status: u16,
    /// Body bytes sent to the client.
    pub bytes_sent: usize,
    /// The User-Agent field (only decoded for a request that is logged).
    pub user_agent: Option<&'a str>,
    /// The User-Agent looks like a browser's (for the activity model).
    pub browser: bool,
    /// The identified token, or the observed catalog crawler.
    pub agent: Option<&'a str>,
    /// The catalog crawler a request naming no policy token names
    /// (already in `agent`; kept apart for the activity model's slot).
    pub observed: Option<&'static str>,
    /// The token a spoofed or unverified claim named when its group sent it
    /// to `*` (already in `agent`; the dashboard gives it a row of its own).
    pub claimed: Option<&'a str>,
    /// The group applied.
    pub group: Option<&'a str>,
    /// The outcome.
    pub outcome: Action,
    /// Set when the proxy answered itself.
    pub local: Option<Local>,
    /// The deciding rule's pattern and line.
    pub rule: Option<(&'a str, usize)>,
    /// The origin server contacted.
    pub upstream: Option<SocketAddr>,
    /// The origin's status (0: no response).
    pub upstream_status: Option<u16>,
    /// Time since the request's header arrived.
    pub elapsed: Duration,
    /// The error that ended it, if any.
    pub error: Option<&'a pingora_error::Error>,
    /// The snapshot generation it was decided on.
    pub generation: u64,
    /// The identified token's id.
    pub agent_id: Option<AgentId>,
    /// The Referer field.
    pub referer: Option<&'a str>,
    /// The verification outcome of the request's claim.
    pub verification: Verification,
    /// What showed it, if anything was checked.
    pub evidence: Option<&'a crawlgate_identity::Evidence>,
    /// It broke a robots.txt rule (`violation=true` in the access line).
    pub violation: bool,
    /// Why the proxy refused it (`reason=` in the access line).
    pub reason: Option<BlockReason>,
    /// The rule is a line of the origin's robots.txt (`rule_source=origin`).
    pub origin_rule: bool,
    /// The rate limit a refused request is over (`limit=` in the access
    /// line).
    pub limit: Option<crawlgate_policy::limits::GroupLimit>,
    /// A request over its rate that passed (`over_rate=` in the access
    /// line): `would_limit` or `delayed`, and the limit's group.
    pub over_rate: Option<(&'static str, &'a str)>,
    /// What the request's Web Bot Auth signature showed (`signature=`).
    pub signature: Option<crawlgate_policy::verification::SignatureOutcome>,
    /// A charge for it was recorded and stands (the activity model's Paid).
    pub paid: bool,
    /// It negotiated Markdown, and whether it was served Markdown (the
    /// activity model's requested and served).
    pub markdown: Option<bool>,
}

/// A value of an access log field.
enum Value<'a> {
    Str(&'a str),
    Num(u64),
    /// A number already formatted (`duration_ms`).
    Raw(&'a str),
    Bool(bool),
}

/// Writes one line's fields in one format.
struct Line {
    format: AccessLogFormat,
    out: String,
}

impl Line {
    fn new(format: AccessLogFormat) -> Line {
        let mut out = String::with_capacity(384);
        if format == AccessLogFormat::Json {
            out.push('{');
        }
        Line { format, out }
    }

    fn field(&mut self, key: &str, value: Value<'_>) {
        let first = self.out.is_empty() || self.out == "{";
        let json = self.format == AccessLogFormat::Json;
        if !first {
            self.out.push(if json { ',' } else { ' ' });
        }
        if json {
            self.out.push('"');
            self.out.push_str(key);
            self.out.push_str("\":");
        } else {
            self.out.push_str(key);
            self.out.push('=');
        }
        match value {
            Value::Str(s) if json => json_string(&mut self.out, s),
            Value::Str(s) => logfmt_value(&mut self.out, s),
            Value::Num(n) => {
                let _ = write!(self.out, "{n}");
            }
            Value::Raw(s) => self.out.push_str(s),
            Value::Bool(b) => self.out.push_str(if b { "true" } else { "false" }),
        }
    }

    fn str(&mut self, key: &str, value: Option<&str>) {
        if let Some(v) = value.filter(|v| !v.is_empty()) {
            self.field(key, Value::Str(v));
        }
    }

    fn finish(mut self) -> String {
        if self.format == AccessLogFormat::Json {
            self.out.push('}');
        }
        self.out
    }
}

/// A JSON string literal (RFC 8259 section 7).
fn json_string(out: &mut String, s: &str) {
    match serde_json::to_string(s) {
        Ok(quoted) => out.push_str(&quoted),
        Err(_) => out.push_str("\"\""),
    }
}

/// A logfmt value: bare when it has no space, quote, `=`, backslash or
/// control character, otherwise a quoted string with JSON escapes.
fn logfmt_value(out: &mut String, s: &str) {
    let bare = !s.is_empty() && !s.chars().any(|c| c == ' ' || c == '"' || c == '=' || c == '\\' || c.is_control());
    if bare {
        out.push_str(s);
    } else {
        json_string(out, s);
    }
}

/// An error as its kind and innermost cause (`ConnectRefused: Connection
/// refused (os error 111)`), without Pingora's chain of contexts.
fn error_text(e: &pingora_error::Error) -> String {
    let kind = e.etype().as_str();
    let root = e.root_cause();
    let detail = match root.downcast_ref::<pingora_error::Error>() {
        Some(inner) => inner.context.as_ref().map(|c| c.as_str().to_owned()),
        None => Some(root.to_string()),
    };
    match detail {
        Some(d) if !d.is_empty() => format!("{kind}: {d}"),
        _ => kind.to_owned(),
    }
}

/// `s` cut to at most `max` bytes on a character boundary.
pub fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// RFC 3339 UTC time with milliseconds: `2026-11-23T17:42:17.123Z`
/// (a time before 1970 shows as 1970-01-01, one past chrono's range as
/// its bound).
pub fn rfc3339_millis(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let t = i64::try_from(d.as_secs())
        .ok()
        .and_then(|secs| DateTime::from_timestamp(secs, d.subsec_nanos()))
        .unwrap_or(DateTime::<Utc>::MAX_UTC);
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

impl RequestDone<'_> {
    /// Counts the request.
    pub fn count(&self, metrics: &Metrics) {
        metrics.request(self.agent.unwrap_or(OTHER_AGENT), self.outcome, self.verification.label(), self.elapsed);
        metrics.response(self.status);
        if let Some(reason) = self.reason {
            metrics.block(self.agent.unwrap_or(OTHER_AGENT), reason);
        }
        if let (Some(BlockReason::Rate), Some(group)) = (self.reason, self.group) {
            metrics.rate_limited(self.agent.unwrap_or(OTHER_AGENT), group);
        }
        if let Some((action, group)) = self.over_rate {
            metrics.rate_exceeded(self.agent.unwrap_or(OTHER_AGENT), group, action);
        }
        if let Some(s) = self.signature {
            metrics.verification().signature(s);
        }
    }

    /// Adds the request to the activity model (the admin dashboard).
    pub fn record(&self, activity: &Activity) {
        activity.hit(&Hit {
            generation: self.generation,
            agent: self.agent_id.zip(self.agent),
            browser: self.browser,
            outcome: self.outcome,
            file: match self.local {
                Some(Local::File(f)) => Some(f),
                _ => None,
            },
            bytes: u64::try_from(self.bytes_sent).unwrap_or(u64::MAX),
            path: self.path,
            rule: self.rule,
            referer: self.referer,
            client: self.client.map(|c| c.ip),
            verification: self.verification,
            reason: self.reason,
            violation: self.violation,
            observed: self.observed,
            claimed: self.claimed,
            paid: self.paid,
            markdown: self.markdown,
            now: crate::activity::unix_now(),
        });
    }

    /// The access log's `decision`: what the proxy did with the request.
    pub fn decision(&self) -> &'static str {
        match (self.local, self.outcome) {
            (Some(Local::File(_)), _) => "local",
            (Some(Local::BadRequest | Local::LoopDetected), _) => "reject",
            (_, Action::Block) => "block",
            (_, Action::LogViolation) => "log",
            (_, Action::Pass) => "allow",
        }
    }

    /// The access log line, without its newline. Fields come in a fixed
    /// order and absent ones are left out (README, "Access log").
    pub fn line(&self, format: AccessLogFormat) -> String {
        let mut l = Line::new(format);
        l.field("time", Value::Str(&rfc3339_millis(self.time)));
        l.field("request_id", Value::Str(&self.id.to_string()));
        if let Some(c) = self.client {
            l.field("client_ip", Value::Str(&c.ip.to_string()));
            if !c.via.is_empty() {
                let chain: Vec<String> = c.via.iter().map(ToString::to_string).collect();
                l.field("forwarded_for", Value::Str(&chain.join(", ")));
            }
        }
        l.str("method", Some(self.method));
        l.str("host", self.host.map(|h| truncate(h, MAX_HOST)));
        l.str("path", Some(truncate(self.path, MAX_PATH)));
        l.field("protocol", Value::Str(self.protocol));
        if self.status > 0 {
            l.field("status", Value::Num(u64::from(self.status)));
        }
        l.field("bytes_sent", Value::Num(u64::try_from(self.bytes_sent).unwrap_or(u64::MAX)));
        l.str("user_agent", self.user_agent.map(|u| truncate(u, MAX_USER_AGENT)));
        l.str("agent", self.agent);
        if self.verification != Verification::NotApplicable {
            l.field("verification", Value::Str(&self.verification.to_string()));
        }
        if let Some(e) = self.evidence {
            l.field("evidence", Value::Str(&e.to_string()));
        }
        l.str("group", self.group);
        l.field("decision", Value::Str(self.decision()));
        if let Some(reason) = self.reason {
            l.field("reason", Value::Str(reason.as_str()));
        }
        if let Some(local) = self.local.filter(|l| *l != Local::Blocked) {
            l.field("local", Value::Str(local.as_str()));
        }
        if self.violation {
            l.field("violation", Value::Bool(true));
        }
        if let Some((pattern, line)) = self.rule {
            l.field("rule", Value::Str(pattern));
            l.field("line", Value::Num(u64::try_from(line).unwrap_or(u64::MAX)));
            if self.origin_rule {
                l.field("rule_source", Value::Str("origin"));
            }
        }
        if let Some(u) = self.upstream {
            l.field("upstream", Value::Str(&u.to_string()));
        }
        if let Some(s) = self.upstream_status.filter(|s| *s > 0) {
            l.field("upstream_status", Value::Num(u64::from(s)));
        }
        l.field("duration_ms", Value::Raw(&format!("{:.3}", self.elapsed.as_secs_f64() * 1000.0)));
        if let Some(e) = self.error {
            l.field("error", Value::Str(truncate(&error_text(e), MAX_ERROR)));
        }
        if let Some(limit) = self.limit {
            l.field("limit", Value::Str(&limit.to_string()));
        }
        if let Some((action, _)) = self.over_rate {
            l.field("over_rate", Value::Str(action));
        }
        if let Some(s) = self.signature {
            l.field("signature", Value::Str(s.as_str()));
        }
        l.finish()
    }

    /// Writes the access log line to standard output in one write.
    pub fn log(&self, format: AccessLogFormat) {
        use std::io::Write as _;
        let mut line = self.line(format);
        line.push('\n');
        let _ = std::io::stdout().lock().write_all(line.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crawlgate_policy::client::AddrSource;
    use std::net::IpAddr;

    fn client(ip: &str, via: &[&str]) -> ClientAddr {
        let ip: IpAddr = ip.parse().unwrap_or_else(|e| panic!("{e}"));
        ClientAddr {
            ip,
            peer: ip,
            source: if via.is_empty() { AddrSource::Peer } else { AddrSource::XForwardedFor },
            via: via.iter().map(|v| v.parse().unwrap_or_else(|e| panic!("{e}"))).collect(),
        }
    }

    /// A finished request with the time, id and duration fixed.
    fn done<'a>(c: &'a ClientAddr) -> RequestDone<'a> {
        RequestDone {
            observed: None,
            claimed: None,
            time: UNIX_EPOCH + Duration::from_millis(1_795_973_337_123),
            id: RequestId { prefix: 0x5f3a_9c1e, n: 42 },
            client: Some(c),
            method: "GET",
            host: Some("example.com"),
            path: "/page?q=1",
            protocol: "HTTP/1.1",
            status: 200,
            bytes_sent: 5120,
            user_agent: Some("Mozilla/5.0 (X11; Linux x86_64)"),
            browser: true,
            agent: None,
            group: Some("*"),
            outcome: Action::Pass,
            local: None,
            rule: None,
            upstream: Some(SocketAddr::from(([127, 0, 0, 1], 8081))),
            upstream_status: Some(200),
            elapsed: Duration::from_micros(97_906),
            error: None,
            generation: 1,
            agent_id: None,
            referer: None,
            verification: Verification::NotApplicable,
            evidence: None,
            violation: false,
            reason: None,
            origin_rule: false,
            limit: None,
            over_rate: None,
            signature: None,
            paid: false,
            markdown: None,
        }
    }

    const PREFIX: &str = "time=2026-11-29T17:28:57.123Z request_id=5f3a9c1e-42 client_ip=203.0.113.7";

    /// The hand-written texts are exactly what `Display` writes.
    #[test]
    fn id_and_address_texts_match_display() {
        for (prefix, n) in [(0, 0), (0xdead_beef, 1), (u32::MAX, u64::MAX), (0x0012_00ab, 1_000_000), (7, 9)] {
            let id = RequestId { prefix, n };
            let mut text = IdText::new();
            assert_eq!(text.write(id), format!("{prefix:08x}-{n}").as_bytes());
            assert_eq!(id.to_string(), format!("{prefix:08x}-{n}"));
        }
        let addrs = [
            "0.0.0.0",
            "127.0.0.1",
            "10.200.3.45",
            "255.255.255.255",
            "::1",
            "2001:db8::7",
            "::ffff:192.0.2.128",
            "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
        ];
        for a in addrs {
            let ip: std::net::IpAddr = a.parse().unwrap();
            let mut text = IpText::new();
            assert_eq!(text.write(ip), ip.to_string().as_bytes(), "{a}");
        }
        for octet in 0..=255u8 {
            let ip = std::net::IpAddr::from([octet, 255 - octet, octet / 3, 9]);
            assert_eq!(IpText::new().write(ip), ip.to_string().as_bytes());
        }
    }

    #[test]
    fn allow() {
        let c = client("203.0.113.7", &[]);
        assert_eq!(
            done(&c).line(AccessLogFormat::Logfmt),
            format!(
                "{PREFIX} method=GET host=example.com path=\"/page?q=1\" protocol=HTTP/1.1 status=200 bytes_sent=5120 \
                 user_agent=\"Mozilla/5.0 (X11; Linux x86_64)\" group=* decision=allow upstream=127.0.0.1:8081 \
                 upstream_status=200 duration_ms=97.906"
            )
        );
        assert_eq!(
            done(&c).line(AccessLogFormat::Json),
            "{\"time\":\"2026-11-29T17:28:57.123Z\",\"request_id\":\"5f3a9c1e-42\",\"client_ip\":\"203.0.113.7\",\
             \"method\":\"GET\",\"host\":\"example.com\",\"path\":\"/page?q=1\",\"protocol\":\"HTTP/1.1\",\
             \"status\":200,\"bytes_sent\":5120,\"user_agent\":\"Mozilla/5.0 (X11; Linux x86_64)\",\"group\":\"*\",\
             \"decision\":\"allow\",\"upstream\":\"127.0.0.1:8081\",\"upstream_status\":200,\"duration_ms\":97.906}"
        );
    }

    #[test]
    fn logged_violation_is_one_line_with_its_rule() {
        let c = client("203.0.113.7", &["10.0.0.1", "10.0.0.2"]);
        let mut d = done(&c);
        d.user_agent = Some("ExampleBot/1.0");
        d.agent = Some("ExampleBot");
        d.group = Some("crawlers");
        d.outcome = Action::LogViolation;
        d.violation = true;
        d.rule = Some(("/private/", 12));
        d.path = "/private/x";
        assert_eq!(
            d.line(AccessLogFormat::Logfmt),
            format!(
                "{PREFIX} forwarded_for=\"10.0.0.1, 10.0.0.2\" method=GET host=example.com path=/private/x \
                 protocol=HTTP/1.1 status=200 bytes_sent=5120 user_agent=ExampleBot/1.0 agent=ExampleBot \
                 group=crawlers decision=log violation=true rule=/private/ line=12 upstream=127.0.0.1:8081 \
                 upstream_status=200 duration_ms=97.906"
            )
        );
        let json: serde_json::Value =
            serde_json::from_str(&d.line(AccessLogFormat::Json)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(json["violation"], true);
        assert_eq!(json["line"], 12);
        assert_eq!(json["forwarded_for"], "10.0.0.1, 10.0.0.2");
    }

    #[test]
    fn block() {
        let c = client("203.0.113.7", &[]);
        let mut d = done(&c);
        d.user_agent = Some("GPTBot/1.2");
        d.agent = Some("GPTBot");
        d.group = Some("ai");
        d.outcome = Action::Block;
        d.violation = true;
        d.local = Some(Local::Blocked);
        d.rule = Some(("/", 30));
        d.reason = Some(BlockReason::Robots);
        d.status = 403;
        d.bytes_sent = 61;
        d.upstream = None;
        d.upstream_status = None;
        d.elapsed = Duration::from_nanos(42_000);
        assert_eq!(
            d.line(AccessLogFormat::Logfmt),
            format!(
                "{PREFIX} method=GET host=example.com path=\"/page?q=1\" protocol=HTTP/1.1 status=403 bytes_sent=61 \
                 user_agent=GPTBot/1.2 agent=GPTBot group=ai decision=block reason=robots violation=true rule=/ \
                 line=30 duration_ms=0.042"
            )
        );
    }

    #[test]
    fn spoofed_block_names_its_reason_and_no_rule() {
        let c = client("203.0.113.7", &[]);
        let mut d = done(&c);
        d.user_agent = Some("bingbot/2.0");
        d.agent = Some("bingbot");
        d.group = Some("search");
        d.outcome = Action::Block;
        d.local = Some(Local::Blocked);
        d.verification = Verification::Spoofed(crawlgate_policy::verification::Method::Ip);
        d.reason = Some(BlockReason::Spoofed);
        d.status = 403;
        d.bytes_sent = 61;
        d.upstream = None;
        d.upstream_status = None;
        d.elapsed = Duration::from_nanos(42_000);
        assert_eq!(
            d.line(AccessLogFormat::Logfmt),
            format!(
                "{PREFIX} method=GET host=example.com path=\"/page?q=1\" protocol=HTTP/1.1 status=403 bytes_sent=61 \
                 user_agent=bingbot/2.0 agent=bingbot verification=spoofed(ip) group=search decision=block \
                 reason=spoofed duration_ms=0.042"
            )
        );
        let json: serde_json::Value =
            serde_json::from_str(&d.line(AccessLogFormat::Json)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(json["reason"], "spoofed");
        assert!(json.get("violation").is_none() && json.get("rule").is_none());
    }

    #[test]
    fn local_robots_txt() {
        let c = client("2001:db8::7", &[]);
        let mut d = done(&c);
        d.path = "/robots.txt";
        d.protocol = "HTTP/2";
        d.local = Some(Local::File(LocalFile::RobotsTxt));
        d.bytes_sent = 310;
        d.upstream = None;
        d.upstream_status = None;
        d.elapsed = Duration::from_micros(150);
        assert_eq!(
            d.line(AccessLogFormat::Logfmt),
            "time=2026-11-29T17:28:57.123Z request_id=5f3a9c1e-42 client_ip=2001:db8::7 method=GET \
             host=example.com path=/robots.txt protocol=HTTP/2 status=200 bytes_sent=310 \
             user_agent=\"Mozilla/5.0 (X11; Linux x86_64)\" group=* decision=local local=robots.txt \
             duration_ms=0.150"
        );
    }

    #[test]
    fn bad_request_escapes_what_the_client_sent() {
        let c = client("203.0.113.7", &[]);
        let mut d = done(&c);
        d.path = "http://x y/\"a\"\\b";
        d.host = None;
        d.user_agent = None;
        d.group = None;
        d.local = Some(Local::BadRequest);
        d.reason = Some(BlockReason::BadRequest);
        d.status = 400;
        d.bytes_sent = 40;
        d.upstream = None;
        d.upstream_status = None;
        d.elapsed = Duration::from_micros(80);
        assert_eq!(
            d.line(AccessLogFormat::Logfmt),
            format!(
                "{PREFIX} method=GET path=\"http://x y/\\\"a\\\"\\\\b\" protocol=HTTP/1.1 status=400 bytes_sent=40 \
                 decision=reject reason=bad-request local=bad-request duration_ms=0.080"
            )
        );
        let json: serde_json::Value =
            serde_json::from_str(&d.line(AccessLogFormat::Json)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(json["path"], "http://x y/\"a\"\\b");
        assert!(json.get("host").is_none() && json.get("user_agent").is_none());
    }

    #[test]
    fn origin_failure_carries_its_error() {
        let c = client("203.0.113.7", &[]);
        let mut d = done(&c);
        let e = pingora_error::Error::explain(pingora_error::ErrorType::ConnectRefused, "origin down");
        d.error = Some(&e);
        d.status = 502;
        d.bytes_sent = 55;
        d.upstream_status = Some(0);
        d.elapsed = Duration::from_millis(3);
        assert_eq!(
            d.line(AccessLogFormat::Logfmt),
            format!(
                "{PREFIX} method=GET host=example.com path=\"/page?q=1\" protocol=HTTP/1.1 status=502 bytes_sent=55 \
                 user_agent=\"Mozilla/5.0 (X11; Linux x86_64)\" group=* decision=allow upstream=127.0.0.1:8081 \
                 duration_ms=3.000 error=\"ConnectRefused: origin down\""
            )
        );
    }

    #[test]
    fn user_agent_is_cut_on_a_char_boundary_and_controls_are_escaped() {
        let ua = format!("{}é", "a".repeat(MAX_USER_AGENT - 1));
        assert_eq!(truncate(&ua, MAX_USER_AGENT), "a".repeat(MAX_USER_AGENT - 1));
        let mut out = String::new();
        logfmt_value(&mut out, "a\nb\u{1b}");
        assert_eq!(out, "\"a\\nb\\u001b\"");
    }

    #[test]
    fn times_are_rfc3339_utc_with_millis() {
        assert_eq!(rfc3339_millis(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_millis(UNIX_EPOCH + Duration::from_millis(951_782_400_999)), "2000-02-29T00:00:00.999Z");
        assert_eq!(rfc3339_millis(UNIX_EPOCH + Duration::from_secs(4_102_444_799)), "2099-12-31T23:59:59.000Z");
    }
}
