//! crawlgate-html: the streaming robots `<meta>` rewriter.
//!
//! Bytes in, bytes out, through lol_html: `inject` adds the policy's robots
//! metas to `<head>`, `audit` changes nothing and reports how the page's
//! own robots metas compare with the policy, `enforce` removes conflicting
//! metas and injects the policy's. The rewriter never fails a response: on
//! a lol_html error (memory limit) the rest of the body passes through
//! unchanged. It knows nothing of HTTP or of the policy file: the proxy
//! hands it a [`Config`].
//!
//! Streaming limits, by design: when `<head>` starts the rewriter cannot
//! know which metas follow, so `inject` always adds the policy's metas
//! (crawlers combine robots metas restrictively, so a duplicate is
//! harmless); `missing` findings are known when the head ends.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use lol_html::html_content::{ContentType, Element};
use lol_html::send::{HtmlRewriter, Settings};
use lol_html::{element, AsciiCompatibleEncoding, MemorySettings, OutputSink};

/// What the rewriter does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Add the policy's metas.
    Inject,
    /// Report only; output equals input.
    Audit,
    /// Remove conflicting metas, add the policy's.
    Enforce,
}

/// The policy's rules for one response.
#[derive(Clone, Debug)]
pub struct Config {
    /// Mode.
    pub mode: Mode,
    /// `("*" or product token, lowercase rules)`.
    pub directives: Vec<(String, Vec<String>)>,
    /// lol_html memory limit in bytes.
    pub max_memory: usize,
}

/// Kinds of findings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FindingKind {
    /// The policy requires a rule the page lacks.
    Missing,
    /// The page allows what the policy forbids (removed in enforce mode).
    Conflict,
    /// The page restricts more than the policy asks.
    Extra,
    /// A robots meta outside `<head>` (ignored by crawlers).
    OutsideHead,
}

impl FindingKind {
    /// `missing`, `conflict`, `extra`, `outside-head`.
    pub fn as_str(&self) -> &'static str {
        match self {
            FindingKind::Missing => "missing",
            FindingKind::Conflict => "conflict",
            FindingKind::Extra => "extra",
            FindingKind::OutsideHead => "outside-head",
        }
    }
}

/// One finding.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct Finding {
    /// What kind.
    pub kind: FindingKind,
    /// `*` for `name="robots"`, else the lowercase meta name.
    pub token: String,
    /// The rule concerned (lowercase).
    pub rule: String,
}

/// The charset cannot be rewritten (UTF-16, unknown labels).
#[derive(Debug, Clone, thiserror::Error)]
#[error("charset `{0}` cannot be rewritten (not a known ASCII-compatible encoding)")]
pub struct Unsupported(pub String);

/// Restrictive rules a page may carry beyond the policy.
const RESTRICTIVE: &[&str] = &["noindex", "nofollow", "none", "noarchive", "nosnippet", "noimageindex", "notranslate", "noai", "noimageai"];

/// Rules of the page that allow what `rule` forbids.
fn contradicts(rule: &str) -> &'static [&'static str] {
    match rule {
        "noindex" => &["index", "all"],
        "nofollow" => &["follow", "all"],
        "none" => &["index", "follow", "all"],
        "nosnippet" => &["snippet"],
        "noarchive" => &["archive"],
        "noai" => &["ai"],
        "noimageai" => &["imageai"],
        _ => &[],
    }
}

fn rule_name(rule: &str) -> &str {
    rule.split([':', '=']).next().unwrap_or(rule).trim()
}

fn parse_content(content: &str) -> Vec<String> {
    content.split(',').map(|r| r.trim().to_ascii_lowercase()).filter(|r| !r.is_empty()).collect()
}

#[derive(Default)]
struct State {
    head_open: bool,
    head_done: bool,
    html_seen: bool,
    injected: bool,
    /// The page's robots metas in head: token -> rules.
    page: BTreeMap<String, Vec<String>>,
    findings: Vec<Finding>,
    audited: bool,
}

#[derive(Clone, Default)]
struct Sink(Arc<Mutex<Vec<u8>>>);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

impl OutputSink for Sink {
    fn handle_chunk(&mut self, chunk: &[u8]) {
        lock(&self.0).extend_from_slice(chunk);
    }
}

/// The policy as the handlers need it.
struct Plan {
    mode: Mode,
    /// token (lowercase, `*`) -> rules.
    rules: BTreeMap<String, Vec<String>>,
    metas_html: String,
}

impl Plan {
    /// Rules that apply to `token` (its own plus `*`'s).
    fn for_token(&self, token: &str) -> Vec<&str> {
        let mut v: Vec<&str> = self.rules.get("*").into_iter().flatten().map(String::as_str).collect();
        if token != "*" {
            v.extend(self.rules.get(token).into_iter().flatten().map(String::as_str));
        }
        v
    }

    /// Whether a page meta for `token` with `rules` conflicts with the policy.
    fn conflicts(&self, token: &str, rules: &[String]) -> Vec<String> {
        let policy = self.for_token(token);
        let mut out = Vec::new();
        // A `robots` meta speaks for every crawler: check every token.
        let tokens: Vec<&str> = if token == "*" { self.rules.keys().map(String::as_str).collect() } else { vec![token] };
        for t in tokens {
            let policy_t = if token == "*" { self.for_token(t) } else { policy.clone() };
            for p in &policy_t {
                for r in rules {
                    if contradicts(rule_name(p)).contains(&rule_name(r)) && !out.contains(r) {
                        out.push(r.clone());
                    }
                }
            }
        }
        out
    }
}

fn escape_attr(s: &str) -> String {
    s.replace('&', "&amp;").replace('"', "&quot;").replace('<', "&lt;")
}

fn head_closed(state: &mut State, plan: &Plan) {
    if state.head_done {
        return;
    }
    state.head_open = false;
    state.head_done = true;
    if plan.mode == Mode::Inject || state.audited {
        return;
    }
    state.audited = true;
    // Missing: policy rules the page's head lacks (enforce injected them,
    // so only audit reports missing).
    if plan.mode == Mode::Audit {
        for (token, rules) in &plan.rules {
            let mut page: Vec<&str> = state.page.get("*").into_iter().flatten().map(|r| rule_name(r)).collect();
            if token != "*" {
                page.extend(state.page.get(token).into_iter().flatten().map(|r| rule_name(r)));
            }
            for r in rules {
                let covered = page.contains(&rule_name(r)) || (page.contains(&"none") && ["noindex", "nofollow"].contains(&rule_name(r)));
                if !covered {
                    state.findings.push(Finding { kind: FindingKind::Missing, token: token.clone(), rule: r.clone() });
                }
            }
        }
    }
    // Extra: restrictions the policy does not ask for.
    let page = std::mem::take(&mut state.page);
    for (token, rules) in &page {
        let policy: Vec<&str> = plan.for_token(token).into_iter().map(rule_name).collect();
        for r in rules {
            let name = rule_name(r);
            if RESTRICTIVE.contains(&name) && !policy.contains(&name) {
                state.findings.push(Finding { kind: FindingKind::Extra, token: token.clone(), rule: r.clone() });
            }
        }
    }
    state.page = page;
}

/// A streaming rewriter for one response. `Send`, not `Sync`.
pub struct Rewriter {
    inner: Option<HtmlRewriter<'static, Sink>>,
    sink: Sink,
    state: Arc<Mutex<State>>,
    plan: Arc<Plan>,
    bail: Option<String>,
}

const HEAD_CONTENT: &[&str] = &["title", "meta", "link", "script", "style", "base", "noscript", "template"];

impl Rewriter {
    /// A rewriter for a body in `charset` (the Content-Type label, if any).
    pub fn new(config: &Config, charset: Option<&str>) -> Result<Rewriter, Unsupported> {
        let mut rules: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (token, rs) in &config.directives {
            let key = if token == "*" { "*".to_string() } else { token.to_ascii_lowercase() };
            let entry = rules.entry(key).or_default();
            for r in rs {
                let r = r.trim().to_ascii_lowercase();
                if !entry.contains(&r) {
                    entry.push(r);
                }
            }
        }
        let mut metas_html = String::new();
        // `robots` first, then tokens in order.
        for (token, rs) in rules.iter().filter(|(t, _)| *t == "*").chain(rules.iter().filter(|(t, _)| *t != "*")) {
            if rs.is_empty() {
                continue;
            }
            let name = if token == "*" { "robots" } else { token.as_str() };
            metas_html.push_str(&format!("<meta name=\"{}\" content=\"{}\">", escape_attr(name), escape_attr(&rs.join(", "))));
        }
        let plan = Arc::new(Plan { mode: config.mode, rules, metas_html });
        let encoding = match charset {
            None => None,
            Some(label) => {
                let enc = encoding_rs::Encoding::for_label(label.trim().as_bytes()).ok_or_else(|| Unsupported(label.to_string()))?;
                Some(AsciiCompatibleEncoding::new(enc).ok_or_else(|| Unsupported(label.to_string()))?)
            }
        };
        let state = Arc::new(Mutex::new(State::default()));
        let sink = Sink::default();

        let (s1, p1) = (state.clone(), plan.clone());
        let head = element!("head", move |el: &mut Element<'_, '_, _>| {
            let mut st = lock(&s1);
            if st.head_done || st.head_open {
                return Ok(());
            }
            st.head_open = true;
            if p1.mode != Mode::Audit && !st.injected {
                el.prepend(&p1.metas_html, ContentType::Html);
                st.injected = true;
            }
            drop(st);
            let (s, p) = (s1.clone(), p1.clone());
            if let Some(handlers) = el.end_tag_handlers() {
                let handler: lol_html::send::EndTagHandler<'static> = Box::new(move |_end| {
                    head_closed(&mut lock(&s), &p);
                    Ok(())
                });
                handlers.push(handler);
            }
            Ok(())
        });
        let (s2, p2) = (state.clone(), plan.clone());
        let any = element!("*", move |el: &mut Element<'_, '_, _>| {
            let name = el.tag_name();
            let mut st = lock(&s2);
            if name == "html" {
                st.html_seen = true;
                return Ok(());
            }
            if name == "head" || (st.head_open && HEAD_CONTENT.contains(&name.as_str())) {
                return Ok(());
            }
            if !st.head_done && !HEAD_CONTENT.contains(&name.as_str()) {
                // The first body element: the head (explicit or implicit) is over.
                if !st.injected && p2.mode != Mode::Audit {
                    if st.html_seen && !st.head_open {
                        el.before(&format!("<head>{}</head>", p2.metas_html), ContentType::Html);
                    } else {
                        el.before(&p2.metas_html, ContentType::Html);
                    }
                    st.injected = true;
                }
                head_closed(&mut st, &p2);
            }
            Ok(())
        });
        let (s3, p3) = (state.clone(), plan.clone());
        let meta = element!("meta[name]", move |el: &mut Element<'_, '_, _>| {
            let name = el.get_attribute("name").unwrap_or_default().trim().to_ascii_lowercase();
            let token = if name == "robots" { "*".to_string() } else { name };
            if token != "*" && !p3.rules.contains_key(&token) {
                return Ok(());
            }
            let content = parse_content(&el.get_attribute("content").unwrap_or_default());
            let mut st = lock(&s3);
            let in_head = st.head_open || (!st.head_done && !st.injected);
            if !in_head {
                for r in content {
                    st.findings.push(Finding { kind: FindingKind::OutsideHead, token: token.clone(), rule: r });
                }
                return Ok(());
            }
            if p3.mode == Mode::Inject {
                return Ok(());
            }
            let conflicts = p3.conflicts(&token, &content);
            for r in &conflicts {
                st.findings.push(Finding { kind: FindingKind::Conflict, token: token.clone(), rule: r.clone() });
            }
            if p3.mode == Mode::Enforce && !conflicts.is_empty() {
                el.remove();
                return Ok(());
            }
            st.page.entry(token).or_default().extend(content);
            Ok(())
        });
        let mut settings = Settings::new_send()
            .with_strict(false)
            .with_memory_settings(
                MemorySettings::new()
                    .with_max_allowed_memory_usage(config.max_memory)
                    .with_preallocated_parsing_buffer_size(1024.min(config.max_memory))
                    .with_graceful_bail_out_on_memory_limit_exceeded(true),
            )
            .with_graceful_bail_out_on_content_handler_error(true)
            .append_element_content_handler(head)
            .append_element_content_handler(meta)
            .append_element_content_handler(any);
        settings = match encoding {
            Some(e) => settings.with_encoding(e),
            None => settings.with_adjust_charset_on_meta_tag(true),
        };
        let inner = HtmlRewriter::new(settings, sink.clone());
        Ok(Rewriter { inner: Some(inner), sink, state, plan, bail: None })
    }

    fn take_output(&self) -> Vec<u8> {
        std::mem::take(&mut *lock(&self.sink.0))
    }

    /// Feeds a chunk; returns what is ready. Never fails: after a lol_html
    /// error the rest passes through unchanged.
    pub fn write(&mut self, chunk: &[u8]) -> Bytes {
        match self.inner.as_mut() {
            None => Bytes::copy_from_slice(chunk),
            Some(rw) => match rw.write(chunk) {
                Ok(()) => Bytes::from(self.take_output()),
                Err(e) => {
                    // Graceful bail-out flushed the unparsed input already.
                    self.inner = None;
                    self.bail = Some(e.to_string());
                    Bytes::from(self.take_output())
                }
            },
        }
    }

    /// End of input; returns the rest.
    pub fn finish(&mut self) -> Bytes {
        if let Some(rw) = self.inner.take() {
            if let Err(e) = rw.end() {
                self.bail = Some(e.to_string());
            }
        }
        head_closed(&mut lock(&self.state), &self.plan);
        Bytes::from(self.take_output())
    }

    /// Findings so far (drained).
    pub fn take_findings(&mut self) -> Vec<Finding> {
        std::mem::take(&mut lock(&self.state).findings)
    }

    /// Why the rewriter gave up, if it did.
    pub fn bail_reason(&self) -> Option<&str> {
        self.bail.as_deref()
    }
}

/// Rewrites a whole document at once (tests, benchmarks, `explain`).
pub fn rewrite_all(config: &Config, charset: Option<&str>, input: &[u8]) -> Result<(Vec<u8>, Vec<Finding>), Unsupported> {
    let mut rw = Rewriter::new(config, charset)?;
    let mut out = rw.write(input).to_vec();
    out.extend_from_slice(&rw.finish());
    Ok((out, rw.take_findings()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn assert_send<T: Send>() {}
    const _: () = assert_send::<Rewriter>();

    fn cfg(mode: Mode) -> Config {
        Config { mode, directives: vec![("*".into(), vec!["noindex".into(), "nosnippet".into()]), ("GPTBot".into(), vec!["noai".into()])], max_memory: 1 << 20 }
    }

    fn run(mode: Mode, html: &str) -> (String, Vec<Finding>) {
        let (out, f) = rewrite_all(&cfg(mode), None, html.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        (String::from_utf8_lossy(&out).into_owned(), f)
    }

    const METAS: &str = "<meta name=\"robots\" content=\"noindex, nosnippet\"><meta name=\"gptbot\" content=\"noai\">";

    #[test]
    fn inject_into_head_or_create_one() {
        assert_eq!(run(Mode::Inject, "<html><head><title>t</title></head><body>x</body></html>").0, format!("<html><head>{METAS}<title>t</title></head><body>x</body></html>"));
        assert_eq!(run(Mode::Inject, "<html><body>x</body></html>").0, format!("<html><head>{METAS}</head><body>x</body></html>"));
        assert_eq!(run(Mode::Inject, "<p>x</p>").0, format!("{METAS}<p>x</p>"));
        assert_eq!(run(Mode::Inject, "<!doctype html><HEAD></HEAD>").0, format!("<!doctype html><HEAD>{METAS}</HEAD>"));
    }

    #[test]
    fn audit_reports_without_changing() {
        let page = "<html><head><meta name=\"robots\" content=\"index, follow, noarchive\"></head><body><meta name=\"robots\" content=\"noindex\"></body></html>";
        let (out, mut f) = run(Mode::Audit, page);
        assert_eq!(out, page);
        f.sort();
        let k = |kind, token: &str, rule: &str| Finding { kind, token: token.into(), rule: rule.into() };
        assert_eq!(
            f,
            vec![
                k(FindingKind::Missing, "*", "noindex"),
                k(FindingKind::Missing, "*", "nosnippet"),
                k(FindingKind::Missing, "gptbot", "noai"),
                k(FindingKind::Conflict, "*", "index"),
                k(FindingKind::Extra, "*", "noarchive"),
                k(FindingKind::OutsideHead, "*", "noindex"),
            ]
        );
    }

    #[test]
    fn enforce_removes_conflicts_and_injects() {
        let (out, f) = run(Mode::Enforce, "<html><head><meta name=\"ROBOTS\" content=\"INDEX\"><title>t</title></head></html>");
        assert_eq!(out, format!("<html><head>{METAS}<title>t</title></head></html>"));
        assert_eq!(f, vec![Finding { kind: FindingKind::Conflict, token: "*".into(), rule: "index".into() }]);
    }

    #[test]
    fn memory_bail_out_passes_everything_through() {
        let mut c = cfg(Mode::Inject);
        c.max_memory = 64;
        let page = format!("<html><head><title>{}</title></head></html>", "x".repeat(10_000));
        let mut rw = Rewriter::new(&c, None).unwrap_or_else(|e| panic!("{e}"));
        let mut out = Vec::new();
        for chunk in page.as_bytes().chunks(100) {
            out.extend_from_slice(&rw.write(chunk));
        }
        out.extend_from_slice(&rw.finish());
        assert!(rw.bail_reason().is_some());
        assert_eq!(String::from_utf8_lossy(&out).replace(METAS, ""), page);
    }

    #[test]
    fn charsets() {
        assert!(Rewriter::new(&cfg(Mode::Inject), Some("utf-16")).is_err());
        assert!(Rewriter::new(&cfg(Mode::Inject), Some("no-such-charset")).is_err());
        let (out, _) = rewrite_all(&cfg(Mode::Inject), Some("windows-1252"), b"<head></head><p>caf\xe9</p>").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(out, [b"<head>".as_slice(), METAS.as_bytes(), b"</head><p>caf\xe9</p>"].concat());
    }
}
