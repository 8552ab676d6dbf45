//! Markdown for agents: the `[markdown]` table and the pure decisions of
//! whether a response is converted to Markdown.
//!
//! A request gets Markdown when all of these hold: `[markdown]` is enabled
//! and one of its `paths` patterns matches the path; the method is GET or
//! HEAD; its `Accept` header prefers `text/markdown` over `text/html` by
//! their q-values (RFC 9110 section 12.5.1; equal preference, the HTML
//! wins); and the AI-use guard does not refuse it. The guard: for an agent
//! the policy treats as AI ([`AiAgents`]), a page whose robots rules in
//! force (the policy's and the origin's `X-Robots-Tag`, for `*` or the
//! agent's token) say `noai`, or whose Content-Usage says `ai-use=n`, is
//! served as HTML, and the response says why in `x-markdown-refused`.
//! The proxy also needs the response to be a 2xx `text/html`; that part
//! is not here.

use crate::pattern::Pattern;
use crate::verification::Verification;

/// The elements dropped with their content when `drop` is not written.
pub const DEFAULT_DROP: &[&str] =
    &["aside", "footer", "form", "iframe", "nav", "noscript", "script", "style", "svg", "template"];

/// `max_table_bytes` when not written, and its bounds.
pub const DEFAULT_MAX_TABLE_BYTES: usize = 64 * 1024;
const MIN_TABLE_BYTES: i64 = 1024;
const MAX_TABLE_BYTES: i64 = 16 << 20;

/// `cache_bytes` when not written (32 MiB), and its bound (4 GiB).
pub const DEFAULT_CACHE_BYTES: usize = 32 << 20;
const MAX_CACHE_BYTES: i64 = 4 << 30;

/// Which agents the AI-use guard protects pages from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AiAgents {
    /// Agents whose product token the crawler catalog lists with an AI
    /// primary category (`ai-training`, `ai-search`, `ai-assistant`; a
    /// search engine whose crawl also trains models is not one), and requests
    /// naming no policy token: a client that asks for Markdown without
    /// saying who it is is most likely an AI agent.
    Catalog,
    /// Every request.
    All,
}

/// The compiled `[markdown]` table.
#[derive(Clone, Debug)]
pub struct MarkdownSettings {
    /// Whether conversion is on.
    pub enabled: bool,
    /// The path patterns conversion applies to, as written.
    pub paths_src: Vec<String>,
    pub(crate) paths: Vec<Pattern>,
    /// Lowercase element names dropped with their content.
    pub drop: Vec<String>,
    /// Markdown of one table held to align its columns, in bytes.
    pub max_table_bytes: usize,
    /// Who the AI-use guard applies to.
    pub ai_agents: AiAgents,
    /// Bytes of converted Markdown the cache keeps (0: no cache).
    pub cache_bytes: usize,
}

impl PartialEq for MarkdownSettings {
    /// The patterns compare as written.
    fn eq(&self, other: &MarkdownSettings) -> bool {
        let MarkdownSettings { enabled, paths_src, paths: _, drop, max_table_bytes, ai_agents, cache_bytes } = self;
        *enabled == other.enabled
            && *paths_src == other.paths_src
            && *drop == other.drop
            && *max_table_bytes == other.max_table_bytes
            && *ai_agents == other.ai_agents
            && *cache_bytes == other.cache_bytes
    }
}

impl MarkdownSettings {
    /// Whether a path (canonical, with its query) is one conversion
    /// applies to.
    pub fn covers(&self, path: &str) -> bool {
        self.enabled && self.paths.iter().any(|p| p.matches(path))
    }
}

/// What the request side says, before the response is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Negotiation {
    /// The path is not converted (no `[markdown]`, disabled, no pattern
    /// matches, or not a GET or HEAD): no `Vary` is added either.
    NotCovered,
    /// Converted paths, but this request prefers HTML: the HTML response
    /// says `Vary: Accept`.
    Html,
    /// The request prefers Markdown.
    Markdown,
}

/// Why a page that negotiated Markdown is served as HTML.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Its robots rules say `noai`.
    NoAi,
    /// Its Content-Usage says `ai-use=n`.
    AiUseN,
}

impl Refusal {
    /// The `x-markdown-refused` value: the rule that refused it.
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::NoAi => "noai",
            Refusal::AiUseN => "ai-use=n",
        }
    }
}

/// The request side: whether a request negotiates Markdown on a path.
pub fn negotiate(settings: Option<&MarkdownSettings>, method: &str, path: &str, accept: Option<&str>) -> Negotiation {
    let Some(s) = settings else { return Negotiation::NotCovered };
    if !(method == "GET" || method == "HEAD") || !s.covers(path) {
        return Negotiation::NotCovered;
    }
    if prefers_markdown(accept.unwrap_or("")) {
        Negotiation::Markdown
    } else {
        Negotiation::Html
    }
}

/// Whether an `Accept` value asks for `text/markdown` over `text/html`:
/// each gets the quality of the most specific range that matches it
/// (`type/subtype` over `type/*` over `*/*`, RFC 9110 section 12.5.1), a
/// type no range matches gets 0. Markdown must be named by its own range,
/// acceptable (q > 0) and at least as preferred as HTML: an agent sending
/// `text/markdown, text/html` asks for Markdown (as Cloudflare reads it,
/// where naming `text/markdown` is the trigger), while `*/*` or `text/*`
/// alone, which every browser sends, never does.
pub fn prefers_markdown(accept: &str) -> bool {
    let (md, named) = quality(accept, "text", "markdown");
    named && md > 0 && md >= quality(accept, "text", "html").0
}

/// The quality (in thousandths) `accept` gives `kind/sub`, and whether a
/// range names `kind/sub` itself.
fn quality(accept: &str, kind: &str, sub: &str) -> (u16, bool) {
    let mut best: Option<(u8, u16)> = None;
    for range in accept.split(',') {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or("").trim();
        let Some((t, s)) = media.split_once('/') else { continue };
        let (t, s) = (t.trim(), s.trim());
        let specificity = if t.eq_ignore_ascii_case(kind) && s.eq_ignore_ascii_case(sub) {
            2
        } else if t.eq_ignore_ascii_case(kind) && s == "*" {
            1
        } else if t == "*" && s == "*" {
            0
        } else {
            continue;
        };
        let mut q = 1000;
        for p in parts {
            if let Some((k, v)) = p.split_once('=') {
                if k.trim().eq_ignore_ascii_case("q") {
                    q = parse_qvalue(v.trim()).unwrap_or(0);
                }
            }
        }
        if best.is_none_or(|(spec, _)| specificity > spec) {
            best = Some((specificity, q));
        }
    }
    best.map_or((0, false), |(spec, q)| (q, spec == 2))
}

/// An RFC 9110 `qvalue` (`0`, `0.5`, `1.000`) in thousandths.
fn parse_qvalue(v: &str) -> Option<u16> {
    let (int, frac) = v.split_once('.').unwrap_or((v, ""));
    if frac.len() > 3 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let thousandths = format!("{frac:0<3}").parse::<u16>().ok()?;
    match int {
        "0" => Some(thousandths),
        "1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

/// Whether the guard protects pages from this agent (`agent`: the policy
/// token the request named, if any), taking the token at its word.
pub fn is_ai(ai_agents: AiAgents, agent: Option<&str>) -> bool {
    match (ai_agents, agent) {
        (AiAgents::All, _) | (AiAgents::Catalog, None) => true,
        (AiAgents::Catalog, Some(token)) => {
            crate::catalog::lookup(token).is_some_and(|e| e.primary_category().starts_with("ai-"))
        }
    }
}

/// Whether the guard protects pages from a request: [`is_ai`] of the
/// token it names, where only a verified identity earns the exemption. A
/// User-Agent costs nothing to forge, so a token that is not an AI agent's
/// (`Googlebot`) counts only when the policy verified it
/// (`[verification]`, the group's `verify`); unverified, spoofed or never
/// checked (no `[verification]`), the request is guarded as one naming no
/// token. A claimed AI token is guarded either way.
pub fn guards(ai_agents: AiAgents, agent: Option<&str>, verification: Verification) -> bool {
    is_ai(ai_agents, agent) || !matches!(verification, Verification::Verified(_))
}

/// The robots and Content-Usage fields of a response the guard reads:
/// each a list of field lines, as the response carries them (the
/// policy's merged with the origin's).
#[derive(Clone, Copy, Debug, Default)]
pub struct Fields<'a, S: AsRef<str>> {
    /// `Robots-Tag` lines (RFC 9651 Lists, draft-illyes-repext; a line that
    /// is not one is read as an `X-Robots-Tag` line).
    pub robots_tag: &'a [S],
    /// `X-Robots-Tag` lines (`noai`, `gptbot: noai`).
    pub x_robots_tag: &'a [S],
    /// `Content-Usage` lines (draft-ietf-aipref-attach).
    pub content_usage: &'a [S],
}

/// What the response side makes of a page negotiated as Markdown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Converted.
    Convert {
        /// `false` when the robots rules say `noimageai` to the agent: the
        /// Markdown leaves the page's images out.
        images: bool,
    },
    /// Served as HTML, saying why in `x-markdown-refused`, with one answer
    /// in its headers.
    Refuse {
        /// The rule that refused it.
        why: Refusal,
        /// Its `Content-Usage` made to agree ([`refused_content_usage`]).
        content_usage: UsageFix,
    },
}

/// How a refused page's `Content-Usage` is made to agree with the refusal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UsageFix {
    /// It already agrees (says `ai-use=n`, or nothing about `ai-use`).
    Keep,
    /// Send this one line instead: every `ai-use=y` made `ai-use=n`.
    Replace(String),
}

/// The response side of the guard: `guarded` is [`guards`] of the
/// request, `agent` the token it names (rules scoped to another agent do
/// not apply; rules scoped to the claimed token do, verified or not:
/// a restriction is never lifted by a claim).
pub fn answer<S: AsRef<str>>(guarded: bool, agent: Option<&str>, fields: Fields<'_, S>) -> Answer {
    let Fields { robots_tag, x_robots_tag, content_usage } = fields;
    if guarded {
        if let Some(why) = guard(true, agent, robots_tag, x_robots_tag, content_usage) {
            return Answer::Refuse { why, content_usage: refused_content_usage(content_usage) };
        }
    }
    let says = |rule: &str| {
        robots_tag.iter().any(|l| robots_tag_says(l.as_ref(), agent, rule))
            || x_robots_tag.iter().any(|l| x_robots_tag_says(l.as_ref(), agent, rule))
    };
    Answer::Convert { images: !(guarded && says("noimageai")) }
}

/// The `Content-Usage` of a page the guard refused: one that says
/// `ai-use=y` next to the `noai` that refused it would give the client two
/// answers, so its `ai-use=y` members become `ai-use=n` (the refusal is
/// what this response means); the other members are kept.
pub fn refused_content_usage<S: AsRef<str>>(lines: &[S]) -> UsageFix {
    let says_y = lines.iter().any(|l| {
        l.as_ref().split(',').any(|m| {
            let m = m.split(';').next().unwrap_or("");
            m.split_once('=').is_some_and(|(k, v)| k.trim() == "ai-use" && v.trim() == "y")
        })
    });
    if !says_y {
        return UsageFix::Keep;
    }
    let members: Vec<String> = lines
        .iter()
        .flat_map(|l| l.as_ref().split(','))
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .map(|m| {
            let (head, params) = m.split_once(';').map_or((m, None), |(h, p)| (h, Some(p)));
            match head.split_once('=') {
                Some((k, v)) if k.trim() == "ai-use" && v.trim() == "y" => match params {
                    Some(p) => format!("ai-use=n;{p}"),
                    None => "ai-use=n".to_string(),
                },
                _ => m.to_string(),
            }
        })
        .collect();
    UsageFix::Replace(members.join(", "))
}

/// The AI-use guard, on the response side: `robots_tag` are the
/// `Robots-Tag` lines in force, `x_robots_tag` the `X-Robots-Tag` lines
/// (the policy's and the origin's), `content_usage` the Content-Usage
/// values (the same). Rules scoped to another agent (`otherbot: noai`,
/// `OtherBot;noai`) do not apply.
pub fn guard<S: AsRef<str>>(
    ai: bool,
    agent: Option<&str>,
    robots_tag: &[S],
    x_robots_tag: &[S],
    content_usage: &[S],
) -> Option<Refusal> {
    if !ai {
        return None;
    }
    if robots_tag.iter().any(|l| robots_tag_says(l.as_ref(), agent, "noai"))
        || x_robots_tag.iter().any(|l| x_robots_tag_says(l.as_ref(), agent, "noai"))
    {
        return Some(Refusal::NoAi);
    }
    if content_usage.iter().any(|v| says_ai_use_n(v.as_ref())) {
        return Some(Refusal::AiUseN);
    }
    None
}

/// Whether one `Robots-Tag` line gives `rule` to `agent` (or to all): an
/// RFC 9651 List whose members are Tokens (`*` or a product token, matched
/// without regard to case) with the rules as Parameters
/// (draft-illyes-repext). A line that is not one, or whose members carry
/// no Parameters at all, is the legacy syntax (`Robots-Tag: noai,
/// noindex`), read as an `X-Robots-Tag` line.
fn robots_tag_says(line: &str, agent: Option<&str>, rule: &str) -> bool {
    let list = sfv::Parser::new(line)
        .parse::<sfv::List>()
        .ok()
        .filter(|l| l.iter().any(|e| matches!(e, sfv::ListEntry::Item(item) if !item.params.is_empty())));
    let Some(list) = list else { return x_robots_tag_says(line, agent, rule) };
    list.iter().any(|entry| match entry {
        sfv::ListEntry::Item(item) => {
            let applies = match &item.bare_item {
                sfv::BareItem::Token(t) => {
                    t.as_str() == "*" || agent.is_some_and(|a| a.eq_ignore_ascii_case(t.as_str()))
                }
                _ => false,
            };
            applies && item.params.keys().any(|k| k.as_str().eq_ignore_ascii_case(rule))
        }
        sfv::ListEntry::InnerList(_) => false,
    })
}

/// Rules whose value follows a colon (Google's robots meta rules): a line
/// starting with one of these is not scoped to an agent.
const VALUED_RULES: &[&str] = &["max-snippet", "max-image-preview", "max-video-preview", "unavailable_after"];

/// Whether one `X-Robots-Tag` line gives `rule` to `agent` (or to all).
fn x_robots_tag_says(line: &str, agent: Option<&str>, rule: &str) -> bool {
    let mut rules = line;
    if let Some((scope, rest)) = line.split_once(':') {
        let scope = scope.trim();
        let is_token = !scope.is_empty()
            && !scope.contains(',')
            && !scope.contains(char::is_whitespace)
            && !VALUED_RULES.iter().any(|r| r.eq_ignore_ascii_case(scope));
        if is_token {
            if !agent.is_some_and(|a| a.eq_ignore_ascii_case(scope)) {
                return false;
            }
            rules = rest;
        }
    }
    rules.split(',').any(|r| r.trim().eq_ignore_ascii_case(rule))
}

/// Whether a Content-Usage value says `ai-use=n` (a Structured Fields
/// Dictionary; the last value of a repeated key wins, RFC 9651 section
/// 4.2.2).
fn says_ai_use_n(value: &str) -> bool {
    let mut answer = false;
    for member in value.split(',') {
        let member = member.split(';').next().unwrap_or("").trim();
        if let Some((k, v)) = member.split_once('=') {
            if k.trim() == "ai-use" {
                answer = v.trim() == "n";
            }
        }
    }
    answer
}

/// What `explain` says for a GET of `path` that prefers Markdown, from the
/// policy alone (`agent`: the policy token the User-Agent names;
/// `controls`: the path's URL controls). The origin's own `X-Robots-Tag`
/// and Content-Usage, and whether the response is a 2xx HTML page, are
/// known only when the response comes.
pub fn explain(
    settings: Option<&MarkdownSettings>,
    path: &str,
    agent: Option<&str>,
    controls: &crate::UrlControls,
) -> (bool, String) {
    match negotiate(settings, "GET", path, Some("text/markdown")) {
        Negotiation::Markdown => {}
        _ => {
            let why = match settings {
                None => "no [markdown] table",
                Some(s) if !s.enabled => "[markdown] enabled = false",
                Some(_) => "no markdown.paths pattern matches",
            };
            return (false, why.to_string());
        }
    }
    let ai = settings.is_some_and(|s| is_ai(s.ai_agents, agent));
    let robots_tag: Vec<&str> = controls.robots_tag.iter().map(String::as_str).collect();
    let x_robots_tag: Vec<&str> = controls.x_robots_tag.iter().map(String::as_str).collect();
    let usage: Vec<&str> = controls.content_usage.iter().map(String::as_str).collect();
    match guard(ai, agent, &robots_tag, &x_robots_tag, &usage) {
        Some(r) => (false, format!("refused for an AI agent: the policy says {}", r.as_str())),
        None => (true, "when Accept prefers text/markdown and the origin answers 2xx text/html".to_string()),
    }
}

/// The `Content-Signal` header of a Markdown response on a path: what the
/// path's Content-Usage says in Content-Signal terms
/// (`sf::content_signal_from_usage`), else the site's
/// `robots_txt.content_signal` line, else none.
pub fn content_signal(policy: &crate::Policy, controls: &crate::UrlControls) -> Option<String> {
    controls
        .content_usage
        .as_deref()
        .and_then(crate::sf::content_signal_from_usage)
        .or_else(|| policy.content_signal().map(str::to_string))
}

/// The suffix that marks the Markdown representation's entity-tag.
const MARKDOWN_TAG_SUFFIX: &str = "-md";

/// One entity-tag (RFC 9110 section 8.8.3): `W/` or not, and its opaque
/// part without the quotes.
fn entity_tags(value: &str) -> Option<Vec<(bool, &str)>> {
    let mut out = Vec::new();
    let mut rest = value;
    loop {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        if rest.is_empty() {
            return Some(out);
        }
        let weak = rest.starts_with("W/");
        let quoted = rest.strip_prefix("W/").unwrap_or(rest).strip_prefix('"')?;
        let end = quoted.find('"')?;
        let opaque = &quoted[..end];
        // etagc: %x21 / %x23-7E / obs-text.
        if opaque.bytes().any(|b| b < 0x21 || b == 0x7f) {
            return None;
        }
        out.push((weak, opaque));
        rest = &quoted[end + 1..];
        if !(rest.is_empty() || rest.starts_with([' ', '\t', ','])) {
            return None;
        }
    }
}

/// The entity-tag of the Markdown made from a page whose `ETag` is `etag`:
/// the page's opaque tag with `-md` appended, weak (RFC 9110 section
/// 8.8.3: a representation of its own needs a validator of its own, and a
/// converted body is not byte-identical to anything the origin stored).
/// `None` for a value that is not one entity-tag.
pub fn markdown_etag(etag: &str) -> Option<String> {
    match entity_tags(etag)?.as_slice() {
        [(_, opaque)] => Some(format!("W/\"{opaque}{MARKDOWN_TAG_SUFFIX}\"")),
        _ => None,
    }
}

/// What a 304 answering a request that negotiated Markdown says: the
/// origin matched the page's tag the client's Markdown tag was mapped to
/// (or a date), so the 304 stands for the page; whether it may stand for
/// the Markdown is the AI-use guard's, as for a 200.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotModified {
    /// The page may still be converted for this agent: the 304 validates the
    /// client's Markdown copy and names its tag ([`markdown_etag`] of the
    /// origin's; `None`: the origin's `ETag` is absent or not one
    /// entity-tag, and the 304 carries none).
    Markdown(Option<String>),
    /// The guard now refuses the conversion (a reload added `noai`, the
    /// origin's `X-Robots-Tag` says it): the representation a GET would
    /// select is the HTML, whose tag the client's Markdown tag does not
    /// match (RFC 9110 section 13.1.2), so the 304 must not validate the
    /// Markdown copy. It keeps the page's `ETag`, the one a 200 would send
    /// (RFC 9110 section 15.4.5), and drops `Last-Modified`, which both
    /// copies share: a cache updates only the stored responses whose
    /// validator the 304 names (RFC 9111 section 4.3.4), so the Markdown
    /// copy is not refreshed and the client fetches the page again, getting
    /// the HTML with `x-markdown-refused`.
    Refused(Refusal),
}

/// The 304 of a request that negotiated Markdown: the same guard a 200
/// runs ([`guard`], with the 304's `X-Robots-Tag` and Content-Usage in
/// force), then the validator; `etag` is the origin's `ETag` value.
pub fn not_modified<S: AsRef<str>>(
    guarded: bool,
    agent: Option<&str>,
    fields: Fields<'_, S>,
    etag: Option<&str>,
) -> NotModified {
    match answer(guarded, agent, fields) {
        Answer::Refuse { why, .. } => NotModified::Refused(why),
        Answer::Convert { .. } => NotModified::Markdown(etag.and_then(markdown_etag)),
    }
}

/// What to send the origin for a precondition field of a request that
/// negotiated Markdown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Precondition {
    /// Leave the field as it is (`*`, or a value that does not parse: the
    /// origin judges it).
    Keep,
    /// Send this value instead.
    Replace(String),
    /// Remove the field.
    Remove,
}

/// Maps an `If-None-Match` (`if_match` false) or `If-Match` (`if_match`
/// true) of a request that negotiated Markdown onto the origin's
/// validators: an entity-tag of the Markdown ([`markdown_etag`]) becomes
/// the page's, so the origin can answer 304 (or 412) for it. Any other
/// entity-tag names another representation (the HTML): If-None-Match drops
/// it, since the HTML being current says nothing of a Markdown copy the
/// client holds; If-Match keeps it (it never matches a weak Markdown tag,
/// RFC 9110 section 13.1.1, and must fail as it would have).
pub fn origin_precondition(value: &str, if_match: bool) -> Precondition {
    if value.trim() == "*" {
        return Precondition::Keep;
    }
    let Some(tags) = entity_tags(value) else { return Precondition::Keep };
    let mapped: Vec<String> = tags
        .iter()
        .filter_map(|(weak, opaque)| {
            let w = if *weak { "W/" } else { "" };
            // Only a weak tag can be the Markdown's: a strong `"v-md"` is
            // the origin's own and passes as any other tag.
            match opaque.strip_suffix(MARKDOWN_TAG_SUFFIX).filter(|_| *weak) {
                Some(page) => Some(format!("W/\"{page}\"")),
                None if if_match => Some(format!("{w}\"{opaque}\"")),
                None => None,
            }
        })
        .collect();
    if mapped.is_empty() {
        return Precondition::Remove;
    }
    let joined = mapped.join(", ");
    if joined == value {
        Precondition::Keep
    } else {
        Precondition::Replace(joined)
    }
}

/// The `[markdown]` table as written.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMarkdown {
    pub enabled: Option<bool>,
    pub paths: Option<Vec<toml::Spanned<String>>>,
    pub drop: Option<Vec<toml::Spanned<String>>>,
    pub max_table_bytes: Option<toml::Spanned<i64>>,
    pub ai_agents: Option<toml::Spanned<String>>,
    pub cache_bytes: Option<toml::Spanned<i64>>,
}

/// Compiles `[markdown]`; errors as `(offset, message)`.
pub(crate) fn compile(raw: &RawMarkdown) -> (MarkdownSettings, Vec<(usize, String)>) {
    let RawMarkdown { enabled, paths, drop, max_table_bytes, ai_agents, cache_bytes } = raw;
    let mut errors = Vec::new();
    let mut settings = MarkdownSettings {
        enabled: enabled.unwrap_or(true),
        paths_src: Vec::new(),
        paths: Vec::new(),
        drop: DEFAULT_DROP.iter().map(|s| s.to_string()).collect(),
        max_table_bytes: DEFAULT_MAX_TABLE_BYTES,
        ai_agents: AiAgents::Catalog,
        cache_bytes: DEFAULT_CACHE_BYTES,
    };
    match paths {
        None => {
            settings.paths_src.push("/".to_string());
            settings.paths.push(Pattern::new_lenient("/"));
        }
        Some(list) => {
            for p in list {
                match Pattern::new(p.get_ref()) {
                    Ok(pattern) => {
                        settings.paths_src.push(p.get_ref().clone());
                        settings.paths.push(pattern);
                    }
                    Err(e) => errors.push((p.span().start, format!("markdown.paths: {e}"))),
                }
            }
        }
    }
    if let Some(list) = drop {
        settings.drop.clear();
        for d in list {
            let name = d.get_ref().to_ascii_lowercase();
            let valid = name.bytes().next().is_some_and(|b| b.is_ascii_lowercase())
                && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
            if valid {
                if !settings.drop.contains(&name) {
                    settings.drop.push(name);
                }
            } else {
                errors.push((
                    d.span().start,
                    format!("markdown.drop: `{}` is not an element name (letters, digits, `-`)", d.get_ref()),
                ));
            }
        }
    }
    if let Some(m) = max_table_bytes {
        let v = *m.get_ref();
        if (MIN_TABLE_BYTES..=MAX_TABLE_BYTES).contains(&v) {
            settings.max_table_bytes = v as usize;
        } else {
            errors.push((
                m.span().start,
                format!("markdown.max_table_bytes must be between {MIN_TABLE_BYTES} and {MAX_TABLE_BYTES}, found {v}"),
            ));
        }
    }
    if let Some(a) = ai_agents {
        match a.get_ref().as_str() {
            "catalog" => settings.ai_agents = AiAgents::Catalog,
            "all" => settings.ai_agents = AiAgents::All,
            other => {
                errors.push((a.span().start, format!("markdown.ai_agents must be catalog or all, found `{other}`")))
            }
        }
    }
    if let Some(c) = cache_bytes {
        let v = *c.get_ref();
        match usize::try_from(v) {
            Ok(n) if v <= MAX_CACHE_BYTES => settings.cache_bytes = n,
            _ => errors.push((
                c.span().start,
                format!("markdown.cache_bytes must be between 0 and {MAX_CACHE_BYTES}, found {v}"),
            )),
        }
    }
    (settings, errors)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn markdown_entity_tags_are_their_own() {
        let rows = [
            ("\"p1\"", Some("W/\"p1-md\"")),
            ("W/\"p1\"", Some("W/\"p1-md\"")),
            ("W/\"\"", Some("W/\"-md\"")),
            ("\"a\", \"b\"", None),
            ("p1", None),
            ("\"p1", None),
            ("\"p 1\"", None),
            ("", None),
        ];
        for (etag, want) in rows {
            assert_eq!(markdown_etag(etag).as_deref(), want, "{etag:?}");
        }
    }

    #[test]
    fn preconditions_map_markdown_tags_to_the_page() {
        use Precondition::{Keep, Remove, Replace};
        let r = |s: &str| Replace(s.to_string());
        let rows: &[(&str, bool, Precondition)] = &[
            ("W/\"p1-md\"", false, r("W/\"p1\"")),
            // A strong tag is never the Markdown's (markdown_etag is weak).
            ("\"p1-md\"", false, Remove),
            ("W/\"p1\"", false, Remove),
            ("\"p1\", W/\"p2-md\"", false, r("W/\"p2\"")),
            ("W/\"a-md\",W/\"b-md\"", false, r("W/\"a\", W/\"b\"")),
            ("*", false, Keep),
            ("garbage", false, Keep),
            ("W/\"p1-md\"", true, r("W/\"p1\"")),
            ("\"p1\"", true, Keep),
            ("\"p1\", \"p2-md\"", true, Keep),
            ("\"p1\", W/\"p2-md\"", true, r("\"p1\", W/\"p2\"")),
            ("*", true, Keep),
        ];
        for (value, if_match, want) in rows {
            assert_eq!(origin_precondition(value, *if_match), *want, "{value:?} {if_match}");
        }
        // What the origin gets back is what it sent, for a tag that went
        // through markdown_etag.
        for etag in ["\"p1\"", "W/\"x-y\""] {
            let md = markdown_etag(etag).unwrap_or_default();
            let back = origin_precondition(&md, false);
            assert_eq!(back, r(&format!("W/{}", etag.trim_start_matches("W/"))), "{etag}");
        }
    }

    fn settings(toml: &str) -> Result<MarkdownSettings, Vec<(usize, String)>> {
        let raw: RawMarkdown = toml::from_str(toml).unwrap();
        let (s, errors) = compile(&raw);
        if errors.is_empty() {
            Ok(s)
        } else {
            Err(errors)
        }
    }

    #[test]
    fn accept_negotiation() {
        let table: &[(&str, bool)] = &[
            ("text/markdown", true),
            ("text/markdown, text/html", true),
            ("text/html, text/markdown", true),
            ("text/markdown, text/html;q=0.9", true),
            ("text/html;q=0.9, text/markdown", true),
            ("text/markdown;q=0.5, text/html;q=0.4", true),
            ("text/markdown;q=0.5, text/html;q=0.5", true),
            ("text/markdown;q=0, text/html;q=0", false),
            ("text/markdown;q=0", false),
            ("text/html", false),
            ("*/*", false),
            ("", false),
            ("text/*", false),
            ("text/markdown, */*;q=0.8", true),
            ("text/*;q=0.5, text/markdown;q=0.6", true),
            ("text/*;q=0.5, text/html;q=0.6, text/markdown;q=0.7", true),
            ("text/markdown;q=0.9, text/*", false),
            ("TEXT/Markdown; charset=utf-8", true),
            ("text/markdown;q=1.0, text/html;q=0.999", true),
            ("text/markdown;q=1.5", false),
            ("text/markdown;q=abc, text/html;q=0.1", false),
            ("text/markdown;q=0.001, text/html;q=0", true),
            ("text/markdown ; q = 0.8 , text/html ; q = 0.7", true),
            ("application/json, text/markdown;q=0.1", true),
        ];
        for (accept, want) in table {
            assert_eq!(prefers_markdown(accept), *want, "{accept:?}");
        }
    }

    #[test]
    fn negotiation_needs_table_path_and_method() {
        let s = settings("paths = [\"/docs/\", \"/blog/*.html\"]").unwrap();
        let md = Some("text/markdown");
        assert_eq!(negotiate(None, "GET", "/docs/a", md), Negotiation::NotCovered);
        assert_eq!(negotiate(Some(&s), "GET", "/docs/a", md), Negotiation::Markdown);
        assert_eq!(negotiate(Some(&s), "HEAD", "/docs/a", md), Negotiation::Markdown);
        assert_eq!(negotiate(Some(&s), "POST", "/docs/a", md), Negotiation::NotCovered);
        assert_eq!(negotiate(Some(&s), "GET", "/blog/x.html", md), Negotiation::Markdown);
        assert_eq!(negotiate(Some(&s), "GET", "/shop/", md), Negotiation::NotCovered);
        assert_eq!(negotiate(Some(&s), "GET", "/docs/a", Some("text/html")), Negotiation::Html);
        assert_eq!(negotiate(Some(&s), "GET", "/docs/a", None), Negotiation::Html);
        let off = settings("enabled = false").unwrap();
        assert_eq!(negotiate(Some(&off), "GET", "/", md), Negotiation::NotCovered);
        let all = settings("").unwrap();
        assert_eq!(all.paths_src, vec!["/"]);
        assert_eq!(negotiate(Some(&all), "GET", "/anything?q=1", md), Negotiation::Markdown);
    }

    #[test]
    fn ai_guard() {
        type Case<'a> = (bool, Option<&'a str>, &'a [&'a str], &'a [&'a str], Option<Refusal>);
        let cases: &[Case<'_>] = &[
            (true, None, &["noai"], &[], Some(Refusal::NoAi)),
            (true, None, &["noindex, NoAI"], &[], Some(Refusal::NoAi)),
            (false, None, &["noai"], &["ai-use=n"], None),
            (true, Some("GPTBot"), &["gptbot: noai"], &[], Some(Refusal::NoAi)),
            (true, Some("ClaudeBot"), &["gptbot: noai"], &[], None),
            (true, None, &["gptbot: noai"], &[], None),
            (true, None, &["max-snippet:20, noai"], &[], Some(Refusal::NoAi)),
            (true, None, &["unavailable_after: 25 Jun 2010 15:00:00 PST"], &[], None),
            (true, None, &["noimageai"], &[], None),
            (true, None, &[], &["train-ai=n, ai-use=n"], Some(Refusal::AiUseN)),
            (true, None, &[], &["ai-use=y"], None),
            (true, None, &[], &["ai-use=n, ai-use=y"], None),
            (true, None, &[], &["train-ai=n"], None),
            (true, None, &[], &["ai-use=n;x=1"], Some(Refusal::AiUseN)),
            (true, None, &["noai"], &["ai-use=n"], Some(Refusal::NoAi)),
        ];
        for (ai, agent, robots, cu, want) in cases {
            let none: &[&str] = &[];
            assert_eq!(guard(*ai, *agent, none, robots, cu), *want, "{ai} {agent:?} {robots:?} {cu:?}");
        }
    }

    /// The origin's `Robots-Tag` (the field crawlgate itself sends) counts
    /// as its `X-Robots-Tag` does, for `*` or the agent's own token.
    #[test]
    fn robots_tag_lines_refuse_too() {
        type Case<'a> = (Option<&'a str>, &'a str, Option<Refusal>);
        let cases: &[Case<'_>] = &[
            (None, "*;noai", Some(Refusal::NoAi)),
            (Some("GPTBot"), "*;nosnippet;noai", Some(Refusal::NoAi)),
            (Some("GPTBot"), "GPTBot;noai", Some(Refusal::NoAi)),
            (Some("GPTBot"), "gptbot;NOAI", None),
            (Some("GPTBot"), "gptbot;noai", Some(Refusal::NoAi)),
            (Some("ClaudeBot"), "GPTBot;noai", None),
            (None, "GPTBot;noai", None),
            (Some("GPTBot"), "*;nosnippet, GPTBot;noindex", None),
            (None, "*;noimageai", None),
            // Not a structured List: read as an X-Robots-Tag line.
            (None, "noai, noindex", Some(Refusal::NoAi)),
            (Some("GPTBot"), "gptbot: noai", Some(Refusal::NoAi)),
            (None, "(a b);noai", None),
            (None, "\"*\";noai", None),
        ];
        for (agent, line, want) in cases {
            let none: &[&str] = &[];
            assert_eq!(guard(true, *agent, &[*line], none, none), *want, "{agent:?} {line:?}");
        }
    }

    /// Only a verified identity earns a token's exemption from the guard.
    #[test]
    fn the_guard_believes_only_verified_tokens() {
        use crate::verification::Method;
        let verified = Verification::Verified(Method::Ip);
        let cases = [
            (AiAgents::Catalog, Some("Googlebot"), verified, false),
            (AiAgents::Catalog, Some("Googlebot"), Verification::NotApplicable, true),
            (AiAgents::Catalog, Some("Googlebot"), Verification::Unverified, true),
            (AiAgents::Catalog, Some("Googlebot"), Verification::Spoofed(Method::Ip), true),
            (AiAgents::Catalog, Some("GPTBot"), verified, true),
            (AiAgents::Catalog, Some("GPTBot"), Verification::NotApplicable, true),
            (AiAgents::Catalog, None, Verification::NotApplicable, true),
            (AiAgents::All, Some("Googlebot"), verified, true),
        ];
        for (ai_agents, agent, verification, want) in cases {
            assert_eq!(guards(ai_agents, agent, verification), want, "{ai_agents:?} {agent:?} {verification:?}");
        }
    }

    /// A refused page's headers give one answer; `noimageai` keeps the
    /// text and leaves the images out.
    #[test]
    fn answers_of_the_response_side() {
        let f = |rt: &'static [&'static str], xrt: &'static [&'static str], cu: &'static [&'static str]| Fields {
            robots_tag: rt,
            x_robots_tag: xrt,
            content_usage: cu,
        };
        let refuse = |why, fix: Option<&str>| Answer::Refuse {
            why,
            content_usage: fix.map_or(UsageFix::Keep, |v| UsageFix::Replace(v.to_string())),
        };
        type Case = (bool, Option<&'static str>, Fields<'static, &'static str>, Answer);
        let cases: Vec<Case> = vec![
            (
                true,
                None,
                f(&["*;noai"], &["noai"], &["train-ai=n, ai-use=y"]),
                refuse(Refusal::NoAi, Some("train-ai=n, ai-use=n")),
            ),
            (
                true,
                None,
                f(&[], &["noai"], &["ai-use=y;src=site", "search=y"]),
                refuse(Refusal::NoAi, Some("ai-use=n;src=site, search=y")),
            ),
            (true, None, f(&[], &["noai"], &["train-ai=n"]), refuse(Refusal::NoAi, None)),
            (true, None, f(&[], &["noai"], &[]), refuse(Refusal::NoAi, None)),
            (true, None, f(&[], &[], &["ai-use=n"]), refuse(Refusal::AiUseN, None)),
            (true, None, f(&[], &[], &["ai-use=y"]), Answer::Convert { images: true }),
            (true, None, f(&["*;noimageai"], &[], &[]), Answer::Convert { images: false }),
            (true, Some("GPTBot"), f(&[], &["gptbot: noimageai"], &[]), Answer::Convert { images: false }),
            (true, Some("ClaudeBot"), f(&[], &["gptbot: noimageai"], &[]), Answer::Convert { images: true }),
            (false, Some("Googlebot"), f(&["*;noai"], &["noimageai"], &["ai-use=n"]), Answer::Convert { images: true }),
        ];
        for (guarded, agent, fields, want) in cases {
            assert_eq!(answer(guarded, agent, fields), want, "{guarded} {agent:?} {fields:?}");
        }
    }

    /// A 304 validates the Markdown copy only when a 200 would convert.
    #[test]
    fn a_304_runs_the_guard_before_naming_the_markdown() {
        type Case<'a> = (bool, Option<&'a str>, &'a [&'a str], &'a [&'a str], Option<&'a str>, NotModified);
        let md = |t: &str| NotModified::Markdown(Some(t.to_string()));
        let cases: &[Case<'_>] = &[
            (true, None, &[], &[], Some("\"p1\""), md("W/\"p1-md\"")),
            (true, Some("GPTBot"), &["nosnippet"], &["train-ai=n"], Some("W/\"p1\""), md("W/\"p1-md\"")),
            (true, None, &["noai"], &[], Some("\"p1\""), NotModified::Refused(Refusal::NoAi)),
            (true, Some("GPTBot"), &["gptbot: noai"], &[], Some("\"p1\""), NotModified::Refused(Refusal::NoAi)),
            (true, Some("ClaudeBot"), &["gptbot: noai"], &[], Some("\"p1\""), md("W/\"p1-md\"")),
            (true, None, &[], &["ai-use=n"], None, NotModified::Refused(Refusal::AiUseN)),
            // Not an AI agent: the guard does not apply.
            (false, Some("Googlebot"), &["noai"], &["ai-use=n"], Some("\"p1\""), md("W/\"p1-md\"")),
            (true, None, &[], &[], None, NotModified::Markdown(None)),
            (true, None, &[], &[], Some("\"a\", \"b\""), NotModified::Markdown(None)),
        ];
        for (ai, agent, robots, cu, etag, want) in cases {
            let fields = Fields { robots_tag: &[], x_robots_tag: robots, content_usage: cu };
            assert_eq!(not_modified(*ai, *agent, fields, *etag), *want, "{ai} {agent:?} {robots:?} {cu:?} {etag:?}");
        }
    }

    #[test]
    fn who_counts_as_ai() {
        assert!(is_ai(AiAgents::Catalog, Some("GPTBot")));
        assert!(is_ai(AiAgents::Catalog, Some("gptbot")));
        assert!(is_ai(AiAgents::Catalog, Some("PerplexityBot")));
        assert!(!is_ai(AiAgents::Catalog, Some("Googlebot")));
        assert!(!is_ai(AiAgents::Catalog, Some("NotInTheCatalog")));
        assert!(is_ai(AiAgents::Catalog, None));
        assert!(is_ai(AiAgents::All, Some("Googlebot")));
    }

    #[test]
    fn explain_lines() {
        let s = settings("paths = [\"/docs/\"]").unwrap();
        let plain = crate::UrlControls::default();
        let noai = crate::UrlControls { x_robots_tag: vec!["noai".into()], ..Default::default() };
        assert_eq!(explain(None, "/docs/", None, &plain), (false, "no [markdown] table".into()));
        assert_eq!(explain(Some(&s), "/x", None, &plain), (false, "no markdown.paths pattern matches".into()));
        assert!(explain(Some(&s), "/docs/a", None, &plain).0);
        assert_eq!(
            explain(Some(&s), "/docs/a", Some("GPTBot"), &noai),
            (false, "refused for an AI agent: the policy says noai".into())
        );
        assert!(explain(Some(&s), "/docs/a", Some("Googlebot"), &noai).0);
    }

    #[test]
    fn content_signal_prefers_the_paths_content_usage() {
        let src = "[upstream]\nservers = [\"127.0.0.1:8000\"]\n\n[robots_txt]\ncontent_signal = \"search=yes\"\n\n\
                   [[group]]\nuser_agents = [\"*\"]\nallow = [\"/\"]\ncontent_usage = [\"/ai/ train-ai=n, ai-use=y\"]\n";
        let p = crate::load(src, "p.toml").unwrap().policy;
        assert_eq!(content_signal(&p, &p.url_controls("/ai/x")).as_deref(), Some("ai-input=yes, ai-train=no"));
        assert_eq!(content_signal(&p, &p.url_controls("/other")).as_deref(), Some("search=yes"));
        assert!(p.settings().markdown.is_none());
    }

    #[test]
    fn table_keys() {
        let s = settings(
            "drop = [\"Script\", \"header\", \"script\"]\nmax_table_bytes = 2048\nai_agents = \"all\"\ncache_bytes = 0",
        )
        .unwrap();
        assert_eq!(s.cache_bytes, 0);
        assert_eq!(s.drop, vec!["script", "header"]);
        assert_eq!(s.max_table_bytes, 2048);
        assert_eq!(s.ai_agents, AiAgents::All);
        let d = settings("").unwrap();
        assert_eq!(d.drop, DEFAULT_DROP);
        assert_eq!(d.max_table_bytes, 65536);
        assert_eq!(d.ai_agents, AiAgents::Catalog);
        assert_eq!(d.cache_bytes, 32 << 20);
        assert!(d.enabled);
        let e = settings(
            "drop = [\"a b\"]\nmax_table_bytes = 10\nai_agents = \"some\"\npaths = [\"no-slash\"]\ncache_bytes = -1",
        )
        .unwrap_err();
        let messages: Vec<&str> = e.iter().map(|(_, m)| m.as_str()).collect();
        assert_eq!(
            messages,
            vec![
                "markdown.paths: pattern `no-slash` must start with '/' or '*'",
                "markdown.drop: `a b` is not an element name (letters, digits, `-`)",
                "markdown.max_table_bytes must be between 1024 and 16777216, found 10",
                "markdown.ai_agents must be catalog or all, found `some`",
                "markdown.cache_bytes must be between 0 and 4294967296, found -1",
            ]
        );
    }
}
