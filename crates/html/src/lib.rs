//! crawlgate-html: the streaming robots `<meta>` rewriter.
//!
//! Bytes in, bytes out, through lol_html: `inject` adds the policy's robots
//! metas as the first children of `<head>`, `audit` changes nothing and
//! reports how the page's own robots metas compare with the policy,
//! `enforce` strips the rules that contradict the policy from the page's
//! metas and injects the policy's. The rewriter never fails a response: on
//! a lol_html error (memory limit) the rest of the body passes through
//! unchanged. It knows nothing of HTTP or of the policy file: the proxy
//! hands it a [`Config`].
//!
//! Where the head is, is decided the way an HTML parser decides it: an
//! explicit `<head>`, else the implicit head that `<html>` or the first
//! head-only element (`<title>`, `<meta>`, ...) opens. The head ends at the
//! first element that belongs in `<body>`, not at `</head>`: a `<meta>`
//! between `</head>` and `<body>` still lands in the head. Elements inside
//! `<template>` are inert and never count.
//!
//! Streaming and duplicates: when `<head>` starts the rewriter cannot yet
//! know which metas follow. It inserts a private marker instead and holds
//! the output back until `</head>` or the first body element, or until twice
//! [`KNOWLEDGE_WINDOW`] bytes have followed the insertion point. A policy
//! meta the page already has (same name, same set of rules) starting
//! within the window is then left out. Which page metas count depends only
//! on the document, never on how it was split into chunks, so the output
//! is the same for every chunking. In inject and enforce mode parsing
//! stops once the head is over; the rest of the body is copied.
//!
//! Bounds: what a response keeps does not grow with its head. At most
//! [`MAX_FINDINGS`] findings are recorded, the rest only counted by kind
//! ([`Rewriter::dropped_findings`]); a finding keeps at most
//! [`MAX_RULE_LEN`] bytes of its rule; the page's head rules are reduced
//! as they are read to what the missing and extra findings need.
//!
//! Not handled: text directly inside `<head>` (a parser would end the head
//! there; here only elements do), character references inside `content`
//! (read as written), documents without any element (nothing to anchor the
//! metas to; the proxy's `X-Robots-Tag` header still applies).

use std::collections::{BTreeMap, HashSet};
use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use lol_html::html_content::ContentType;
use lol_html::send::{Element, HtmlRewriter, Settings};
use lol_html::{element, AsciiCompatibleEncoding, MemorySettings, OutputSink};

/// What the rewriter does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Add the policy's metas.
    Inject,
    /// Report only; output equals input.
    Audit,
    /// Strip contradicting rules from the page's metas, add the policy's.
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
    /// The policy requires a rule the page's head lacks (audit only).
    Missing,
    /// The page allows what the policy forbids, e.g. `index` or `all`
    /// against `noindex` (stripped in enforce mode).
    Conflict,
    /// The page restricts more than the policy asks.
    Extra,
    /// A robots meta crawlers ignore because it is not in the head: in
    /// `<body>` or inside a `<template>` (audit only).
    OutsideHead,
}

impl FindingKind {
    /// Every kind.
    pub const ALL: [FindingKind; 4] =
        [FindingKind::Missing, FindingKind::Conflict, FindingKind::Extra, FindingKind::OutsideHead];

    fn index(self) -> usize {
        match self {
            FindingKind::Missing => 0,
            FindingKind::Conflict => 1,
            FindingKind::Extra => 2,
            FindingKind::OutsideHead => 3,
        }
    }

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

/// One finding. `audit` reports all kinds; `enforce` reports the conflicts
/// it stripped and the extras; `inject` reports nothing.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct Finding {
    /// What kind.
    pub kind: FindingKind,
    /// `*` for `name="robots"`, else the lowercase meta name.
    pub token: String,
    /// The rule concerned (lowercase).
    pub rule: String,
}

/// Findings recorded in detail per response. A page decides how many
/// robots metas it carries, and in audit and enforce mode each one can give
/// several findings: past this many they are only counted, by kind
/// ([`Rewriter::dropped_findings`]), so that what one response keeps does
/// not grow with its head.
pub const MAX_FINDINGS: usize = 64;

/// Longest rule text a finding keeps, in bytes (cut at a character
/// boundary): a `content` attribute can be as long as lol_html's memory
/// limit allows, and a finding should not copy it.
pub const MAX_RULE_LEN: usize = 128;

/// Findings counted but not recorded in detail (past [`MAX_FINDINGS`]),
/// by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DroppedFindings([u64; 4]);

impl DroppedFindings {
    /// How many of `kind`.
    pub fn get(&self, kind: FindingKind) -> u64 {
        self.0[kind.index()]
    }

    /// How many of every kind.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// `(kind, count)` of the kinds with a count.
    pub fn iter(&self) -> impl Iterator<Item = (FindingKind, u64)> + '_ {
        FindingKind::ALL.into_iter().map(|k| (k, self.get(k))).filter(|(_, n)| *n > 0)
    }

    fn add(&mut self, kind: FindingKind, n: u64) {
        let c = &mut self.0[kind.index()];
        *c = c.saturating_add(n);
    }
}

/// `rule`, cut to at most [`MAX_RULE_LEN`] bytes at a character boundary.
fn bounded_rule(rule: &str) -> &str {
    if rule.len() <= MAX_RULE_LEN {
        return rule;
    }
    let mut end = MAX_RULE_LEN;
    while !rule.is_char_boundary(end) {
        end -= 1;
    }
    &rule[..end]
}

/// The charset cannot be rewritten (UTF-16, unknown labels).
#[derive(Debug, Clone, thiserror::Error)]
#[error("charset `{0}` cannot be rewritten (not a known ASCII-compatible encoding)")]
pub struct Unsupported(pub String);

/// Page metas that start within this many input bytes after the insertion
/// point are known when the inserted metas are decided. The output held
/// back meanwhile is at most twice this.
pub const KNOWLEDGE_WINDOW: usize = 32 * 1024;

/// Held output beyond which the decision is taken without waiting for the
/// head to end. Twice the window, so that by then every element starting
/// inside the window has been seen even when enforce rewrites grew a few
/// tags (lol_html quotes the attributes of a tag it rewrites).
const HOLD_CAP: usize = 2 * KNOWLEDGE_WINDOW;

/// Restrictive rules a page may carry beyond the policy.
const RESTRICTIVE: &[&str] =
    &["noindex", "nofollow", "none", "noarchive", "nosnippet", "noimageindex", "notranslate", "noai", "noimageai"];

/// Meta names of well-known crawlers, read as robots metas even when the
/// policy has no rules of its own for them: the policy's `*` rules apply
/// to them, so `<meta name="googlebot" content="index">` contradicts a
/// `*: noindex` policy.
const KNOWN_CRAWLERS: &[&str] = &[
    "googlebot",
    "googlebot-news",
    "bingbot",
    "msnbot",
    "yandex",
    "baiduspider",
    "slurp",
    "duckduckbot",
    "applebot",
    "gptbot",
    "ccbot",
    "claudebot",
    "perplexitybot",
    "bytespider",
    "amazonbot",
];

/// Bytes fed to lol_html at a time while the head is open (inject,
/// enforce).
const HEAD_SLICE: usize = 1024;

/// Elements a parser puts in the head (anything else starts the body).
const HEAD_CONTENT: &[&str] =
    &["title", "meta", "link", "script", "style", "base", "noscript", "template", "basefont", "bgsound"];

/// `("noindex", "")`, `("max-snippet", "50")`.
fn split_rule(rule: &str) -> (&str, &str) {
    match rule.split_once([':', '=']) {
        Some((name, value)) => (name.trim(), value.trim()),
        None => (rule.trim(), ""),
    }
}

fn rule_name(rule: &str) -> &str {
    split_rule(rule).0
}

/// The rule as compared: `max-snippet : 50` and `max-snippet:50` agree.
fn rule_key(rule: &str) -> String {
    match split_rule(rule) {
        (name, "") => name.to_string(),
        (name, value) => format!("{name}:{value}"),
    }
}

/// Whether the page rule `page` allows what the policy rule `policy`
/// forbids.
fn contradicts(policy: &str, page: &str) -> bool {
    let p = rule_name(policy);
    let (q, value) = split_rule(page);
    if q == "all" {
        // `all` means "no restrictions".
        return RESTRICTIVE.contains(&p);
    }
    match p {
        "noindex" => q == "index",
        "nofollow" => q == "follow",
        "none" => q == "index" || q == "follow",
        "nosnippet" => q == "snippet" || (q == "max-snippet" && value != "0"),
        "noarchive" => q == "archive",
        "noimageindex" => q == "imageindex",
        "noai" => q == "ai",
        "noimageai" => q == "imageai",
        _ => false,
    }
}

/// Whether a set of rules (as [`rule_key`]s) includes `rule`; `none` stands
/// for `noindex, nofollow` and the other way round.
fn covers(keys: &[String], rule: &str) -> bool {
    let key = rule_key(rule);
    let has = |r: &str| keys.iter().any(|k| k == r);
    has(&key)
        || (matches!(key.as_str(), "noindex" | "nofollow") && has("none"))
        || (key == "none" && has("noindex") && has("nofollow"))
}

/// The rules of a `content` attribute already lowercased, in order. An
/// iterator, not a list: a `content` can hold millions of rules, and a
/// `String` for each would cost many times the attribute's size.
fn content_rules(lower: &str) -> impl Iterator<Item = &str> + Clone {
    lower.split(',').map(str::trim).filter(|r| !r.is_empty())
}

/// The rules of a `content` attribute, lowercase, in order.
#[cfg(test)]
fn parse_content(content: &str) -> Vec<String> {
    content_rules(&content.to_ascii_lowercase()).map(str::to_owned).collect()
}

/// A set of rules in a form that compares equal regardless of order, case,
/// spacing and repetition.
fn rule_set(rules: &[String]) -> Vec<String> {
    let mut v: Vec<String> = rules.iter().map(|r| rule_key(r)).collect();
    v.sort();
    v.dedup();
    v
}

fn escape_attr(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '<' => out.push_str("&lt;"),
            // The metas are spliced into the output as bytes, which may be
            // in any ASCII-compatible charset: keep them ASCII.
            c if !c.is_ascii() => out.push_str(&format!("&#x{:x};", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// The policy as the handlers need it.
struct Plan {
    mode: Mode,
    /// token (lowercase, `*`) -> rules.
    rules: BTreeMap<String, Vec<String>>,
    /// The metas to insert, `robots` first: `(token, rule_set, html)`.
    metas: Vec<(String, Vec<String>, String)>,
    /// Random per plan; see [`Slot`]. Markers never leave the rewriter, so
    /// a page cannot learn it.
    nonce: u64,
    /// lol_html memory limit in bytes.
    max_memory: usize,
    /// The markers of the first slots, built with the plan (a page has at
    /// most two: after `<html>` and in `<head>`).
    markers: Vec<Arc<Marker>>,
    /// The page rule keys that can decide a missing finding ([`covers`]):
    /// the policy's own and `none`, `noindex`, `nofollow`. A page's other
    /// rules need not be kept.
    relevant: Vec<String>,
}

/// A slot's marker and the searcher that finds it in the output (building
/// a searcher costs more than a short page's search).
struct Marker {
    text: String,
    finder: memchr::memmem::Finder<'static>,
}

impl Marker {
    fn new(nonce: u64, index: usize) -> Marker {
        let text = format!("<!--crawlgate-{nonce:016x}-{index}-->");
        let finder = memchr::memmem::Finder::new(text.as_bytes()).into_owned();
        Marker { text, finder }
    }
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

    /// The page rules of a meta for `token` that contradict the policy,
    /// once each, policy rule by policy rule and then in page order, and
    /// the same as a set. `rules` walks the meta's rules; it is called once
    /// per policy rule instead of collecting them.
    fn conflicts<'r, I: Iterator<Item = &'r str>>(
        &self,
        token: &str,
        rules: impl Fn() -> I,
    ) -> (Vec<&'r str>, HashSet<&'r str>) {
        // A `robots` meta speaks for every crawler: check every token.
        let tokens: Vec<&str> =
            if token == "*" { self.rules.keys().map(String::as_str).collect() } else { vec![token] };
        // The set keeps a `content` of many distinct rules from costing
        // quadratic time.
        let mut out: Vec<&str> = Vec::new();
        let mut known: HashSet<&str> = HashSet::new();
        for t in tokens {
            for p in self.for_token(t) {
                for r in rules() {
                    if contradicts(p, r) && known.insert(r) {
                        out.push(r);
                    }
                }
            }
        }
        (out, known)
    }

    /// Whether `key` is a rule key of one of the policy's metas for
    /// `token`: a page meta with any other key is identical to none of
    /// them (see [`State::decide`]).
    fn could_match(&self, token: &str, key: &str) -> bool {
        self.metas.iter().any(|(t, set, _)| t == token && set.iter().any(|k| k == key))
    }

    /// `*` for `robots`, the lowercase name for a policy token or a known
    /// crawler, `None` for every other meta.
    fn token_of(&self, name: &str) -> Option<String> {
        let name = name.trim().to_ascii_lowercase();
        if name == "robots" {
            Some("*".to_string())
        } else if self.rules.contains_key(&name) || KNOWN_CRAWLERS.contains(&name.as_str()) {
            Some(name)
        } else {
            None
        }
    }

    fn inserts(&self) -> bool {
        self.mode != Mode::Audit && !self.metas.is_empty()
    }
}

/// Where the parser is, as far as the head is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// No element yet.
    BeforeHtml,
    /// `<html>` seen, nothing after it yet.
    BeforeHead,
    /// In the head, explicit or implicit.
    InHead,
    /// The body (or the end) has started.
    AfterHead,
}

/// What a marker turns into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fill {
    /// Right after `<html>`, not yet known whether a `<head>` follows.
    Undecided,
    /// A `<head>` followed the `<html>`; the metas go into it instead.
    Nothing,
    /// The metas.
    Metas,
    /// `<head>` and the metas; an implicit head follows, the parser closes it.
    OpenHead,
    /// `<head>`, the metas, `</head>`.
    ClosedHead,
}

/// An insertion point whose content is decided later. lol_html writes the
/// marker (an HTML comment with the rewriter's nonce) into the output; the
/// output from the marker on is held back and the marker is replaced once
/// the page's head metas are known.
struct Slot {
    marker: Arc<Marker>,
    fill: Fill,
    /// Offset of the marker in `State::out`, once seen.
    at: Option<usize>,
}

struct State {
    phase: Phase,
    /// Open `<template>` elements (their content is inert).
    templates: usize,
    /// The injection point is chosen.
    placed: bool,
    slots: Vec<Slot>,
    /// Fills and `seen` are final.
    decided: bool,
    /// Page metas starting before this input offset are known in time.
    window_end: usize,
    /// The page's head metas within the window: `(token, rule_set)`.
    seen: Vec<(String, Vec<String>)>,
    /// The page's head rules that can decide a missing finding: token ->
    /// distinct [`rule_key`]s among [`Plan::relevant`] (audit).
    page_keys: BTreeMap<String, Vec<String>>,
    /// The page's head rules that restrict more than the policy, reported
    /// as extras when the head ends: token -> the first [`MAX_FINDINGS`]
    /// in page order (no more can be recorded) and how many followed.
    extras: BTreeMap<String, (Vec<String>, u64)>,
    /// Recorded findings not yet taken.
    findings: Vec<Finding>,
    /// Findings recorded so far, taken or not (at most [`MAX_FINDINGS`]).
    recorded: usize,
    /// Findings counted past [`MAX_FINDINGS`], over the whole response.
    dropped: DroppedFindings,
    /// The part of `dropped` not yet taken.
    dropped_untaken: DroppedFindings,
    /// The metas replacing the markers, once decided.
    metas_html: String,
    /// Output not yet handed out; from the first slot's marker on it is held.
    out: Vec<u8>,
    /// Where to resume searching `out` for markers.
    scan_from: usize,
    /// Bytes inserted into the output so far (metas, `<head>`, `</head>`).
    grown: usize,
}

impl State {
    fn new() -> State {
        State {
            phase: Phase::BeforeHtml,
            templates: 0,
            placed: false,
            slots: Vec::new(),
            decided: false,
            window_end: usize::MAX,
            seen: Vec::new(),
            page_keys: BTreeMap::new(),
            extras: BTreeMap::new(),
            findings: Vec::new(),
            recorded: 0,
            dropped: DroppedFindings::default(),
            dropped_untaken: DroppedFindings::default(),
            metas_html: String::new(),
            out: Vec::new(),
            scan_from: 0,
            grown: 0,
        }
    }

    /// Records a finding, or only counts it past [`MAX_FINDINGS`].
    fn record(&mut self, kind: FindingKind, token: &str, rule: &str) {
        if self.recorded < MAX_FINDINGS {
            self.recorded += 1;
            self.findings.push(Finding { kind, token: token.to_owned(), rule: bounded_rule(rule).to_owned() });
        } else {
            self.drop_findings(kind, 1);
        }
    }

    fn drop_findings(&mut self, kind: FindingKind, n: u64) {
        self.dropped.add(kind, n);
        self.dropped_untaken.add(kind, n);
    }

    fn add_slot(&mut self, plan: &Plan, fill: Fill) -> String {
        let i = self.slots.len();
        let marker = plan.markers.get(i).cloned().unwrap_or_else(|| Arc::new(Marker::new(plan.nonce, i)));
        let text = marker.text.clone();
        self.slots.push(Slot { marker, fill, at: None });
        text
    }

    /// Sets the fill of the `<html>` slot while that can still depend on
    /// what follows it.
    fn decide_html_slot(&mut self, fill: Fill, start: usize) {
        if self.decided || start >= self.window_end {
            return;
        }
        if let Some(slot) = self.slots.first_mut() {
            if slot.fill == Fill::Undecided {
                slot.fill = fill;
            }
        }
    }

    /// Fixes what the markers become.
    fn decide(&mut self, plan: &Plan) {
        if self.decided {
            return;
        }
        self.decided = true;
        for slot in &mut self.slots {
            if slot.fill == Fill::Undecided {
                slot.fill = Fill::ClosedHead;
            }
        }
        let seen = &self.seen;
        self.metas_html = plan
            .metas
            .iter()
            .filter(|(token, set, _)| !seen.iter().any(|(t, s)| t == token && s == set))
            .map(|(_, _, html)| html.as_str())
            .collect();
    }

    /// The head ended: report what the head lacked or added, decide the
    /// markers.
    fn close_head(&mut self, plan: &Plan) {
        if self.phase == Phase::AfterHead {
            return;
        }
        self.phase = Phase::AfterHead;
        self.decide(plan);
        if plan.mode == Mode::Inject {
            return;
        }
        // Missing: only audit; enforce has injected the policy's metas.
        if plan.mode == Mode::Audit {
            for (token, rules) in &plan.rules {
                let mut page: Vec<String> = self.page_keys.get("*").cloned().unwrap_or_default();
                if token != "*" {
                    page.extend(self.page_keys.get(token).into_iter().flatten().cloned());
                }
                for r in rules {
                    if !covers(&page, r) {
                        self.record(FindingKind::Missing, token, r);
                    }
                }
            }
        }
        // Extra: restrictions the policy does not ask for.
        for (token, (rules, more)) in std::mem::take(&mut self.extras) {
            for r in &rules {
                self.record(FindingKind::Extra, &token, r);
            }
            self.drop_findings(FindingKind::Extra, more);
        }
    }

    /// Hands out the output that is ready: everything, or, while a marker
    /// is undecided, what precedes the first marker. `force` decides and
    /// releases everything (end of input, bail-out).
    fn take_output(&mut self, plan: &Plan, force: bool) -> Vec<u8> {
        if self.slots.is_empty() {
            return std::mem::take(&mut self.out);
        }
        let from = self.scan_from.min(self.out.len());
        for slot in self.slots.iter_mut().filter(|s| s.at.is_none()) {
            slot.at = slot.marker.finder.find(&self.out[from..]).map(|p| from + p);
        }
        self.scan_from = self.out.len().saturating_sub(self.slots[0].marker.text.len() + 8);
        if !self.decided {
            // Measured from the last marker: the window starts there.
            let last = &self.slots[self.slots.len() - 1];
            let held_past_marker = last.at.map(|at| self.out.len().saturating_sub(at + last.marker.text.len()));
            if force || held_past_marker.is_some_and(|n| n > HOLD_CAP) {
                self.decide(plan);
            }
        }
        if self.decided && (force || self.slots.iter().all(|s| s.at.is_some())) {
            let mut slots = std::mem::take(&mut self.slots);
            slots.sort_by_key(|s| s.at);
            let out = std::mem::take(&mut self.out);
            let mut result = Vec::with_capacity(out.len() + self.metas_html.len() + 16);
            let mut pos = 0;
            for slot in slots {
                let Some(at) = slot.at else { continue };
                result.extend_from_slice(&out[pos..at]);
                let before = result.len();
                if !self.metas_html.is_empty() {
                    match slot.fill {
                        Fill::Nothing | Fill::Undecided => {}
                        Fill::Metas => result.extend_from_slice(self.metas_html.as_bytes()),
                        Fill::OpenHead => {
                            result.extend_from_slice(b"<head>");
                            result.extend_from_slice(self.metas_html.as_bytes());
                        }
                        Fill::ClosedHead => {
                            result.extend_from_slice(b"<head>");
                            result.extend_from_slice(self.metas_html.as_bytes());
                            result.extend_from_slice(b"</head>");
                        }
                    }
                }
                self.grown += result.len() - before;
                pos = at + slot.marker.text.len();
            }
            result.extend_from_slice(&out[pos..]);
            self.scan_from = 0;
            return result;
        }
        // Still holding: release what precedes the first marker.
        match self.slots[0].at {
            Some(first) if first > 0 => {
                let held = self.out.split_off(first);
                for slot in &mut self.slots {
                    slot.at = slot.at.map(|a| a - first);
                }
                self.scan_from = self.scan_from.saturating_sub(first);
                std::mem::replace(&mut self.out, held)
            }
            _ => Vec::new(),
        }
    }
}

#[derive(Clone)]
struct Sink(Arc<Mutex<State>>);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

impl OutputSink for Sink {
    fn handle_chunk(&mut self, chunk: &[u8]) {
        lock(&self.0).out.extend_from_slice(chunk);
    }
}

/// The element handler: tracks the head, places the injection point and
/// reads the page's robots metas.
fn on_element(st: &mut State, plan: &Arc<Plan>, el: &mut Element<'_, '_>, this: &Arc<Mutex<State>>) {
    if st.phase == Phase::AfterHead && plan.mode != Mode::Audit {
        return;
    }
    let name = el.tag_name();
    let name = name.as_str();
    let location = el.source_location().bytes();
    if st.templates > 0 {
        // Template content is inert: it is in no head and starts no body.
        if name == "template" {
            open_template(st, el, this);
        } else if name == "meta" && plan.mode == Mode::Audit {
            outside_head(st, plan, el);
        }
        return;
    }
    let head_content = HEAD_CONTENT.contains(&name);
    match st.phase {
        Phase::BeforeHtml => {
            if name == "html" {
                st.phase = Phase::BeforeHead;
                if plan.inserts() && !st.placed {
                    st.placed = true;
                    st.window_end = location.end.saturating_add(KNOWLEDGE_WINDOW);
                    let marker = st.add_slot(plan, Fill::Undecided);
                    el.prepend(&marker, ContentType::Html);
                }
            } else if name == "head" {
                open_head(st, plan, el, location.end, this);
            } else if head_content {
                st.phase = Phase::InHead;
                if plan.inserts() && !st.placed {
                    st.placed = true;
                    st.window_end = location.start.saturating_add(KNOWLEDGE_WINDOW);
                    let marker = st.add_slot(plan, Fill::Metas);
                    el.before(&marker, ContentType::Html);
                }
            } else {
                // A fragment that starts with body content: nothing to wait for.
                if plan.inserts() && !st.placed {
                    st.placed = true;
                    let metas: String = plan.metas.iter().map(|(_, _, html)| html.as_str()).collect();
                    st.grown += metas.len();
                    el.before(&metas, ContentType::Html);
                }
                st.close_head(plan);
            }
        }
        Phase::BeforeHead => {
            if name == "html" {
                // A second `<html>` is merged into the first by parsers.
            } else if name == "head" {
                st.decide_html_slot(Fill::Nothing, location.start);
                if st.slots.first().is_some_and(|s| s.fill == Fill::Nothing) {
                    st.placed = false;
                }
                open_head(st, plan, el, location.end, this);
            } else if head_content {
                st.decide_html_slot(Fill::OpenHead, location.start);
                st.phase = Phase::InHead;
            } else {
                st.decide_html_slot(Fill::ClosedHead, location.start);
                st.close_head(plan);
            }
        }
        Phase::InHead => {
            if !head_content && name != "head" && name != "html" {
                st.close_head(plan);
            }
        }
        Phase::AfterHead => {}
    }
    if name == "template" && st.phase != Phase::AfterHead {
        open_template(st, el, this);
        return;
    }
    if name != "meta" {
        return;
    }
    if st.phase == Phase::AfterHead {
        if plan.mode == Mode::Audit {
            outside_head(st, plan, el);
        }
        return;
    }
    head_meta(st, plan, el, location.start);
}

fn open_template(st: &mut State, el: &mut Element<'_, '_>, this: &Arc<Mutex<State>>) {
    st.templates += 1;
    if let Some(handlers) = el.end_tag_handlers() {
        let s = this.clone();
        let handler: lol_html::send::EndTagHandler<'static> = Box::new(move |_end| {
            let mut st = lock(&s);
            st.templates = st.templates.saturating_sub(1);
            Ok(())
        });
        handlers.push(handler);
    }
}

fn open_head(st: &mut State, plan: &Arc<Plan>, el: &mut Element<'_, '_>, tag_end: usize, this: &Arc<Mutex<State>>) {
    st.phase = Phase::InHead;
    if plan.inserts() && !st.placed {
        st.placed = true;
        st.window_end = tag_end.saturating_add(KNOWLEDGE_WINDOW);
        let marker = st.add_slot(plan, Fill::Metas);
        el.prepend(&marker, ContentType::Html);
        // Decide at `</head>` already, not only at the first body element:
        // a page that flushes its head early (so that browsers fetch its
        // styles) should not have it held back until the body comes. A
        // meta between `</head>` and `<body>` is then not known in time.
        if let Some(handlers) = el.end_tag_handlers() {
            let (s, p) = (this.clone(), plan.clone());
            let handler: lol_html::send::EndTagHandler<'static> = Box::new(move |_end| {
                lock(&s).decide(&p);
                Ok(())
            });
            handlers.push(handler);
        }
    }
}

fn outside_head(st: &mut State, plan: &Plan, el: &Element<'_, '_>) {
    let Some(token) = el.get_attribute("name").and_then(|n| plan.token_of(&n)) else { return };
    let lower = el.get_attribute("content").unwrap_or_default().to_ascii_lowercase();
    for rule in content_rules(&lower) {
        st.record(FindingKind::OutsideHead, &token, rule);
    }
}

/// A `<meta>` in the head.
fn head_meta(st: &mut State, plan: &Plan, el: &mut Element<'_, '_>, start: usize) {
    let Some(token) = el.get_attribute("name").and_then(|n| plan.token_of(&n)) else { return };
    let content = el.get_attribute("content").unwrap_or_default();
    // ASCII lowercasing keeps every byte where it was: `lower` splits at
    // the same offsets as `content`.
    let lower = content.to_ascii_lowercase();
    let mut stripped: HashSet<&str> = HashSet::new();
    if plan.mode != Mode::Inject {
        let (conflicts, set) = plan.conflicts(&token, || content_rules(&lower));
        for r in conflicts {
            st.record(FindingKind::Conflict, &token, r);
        }
        if plan.mode == Mode::Enforce && !set.is_empty() {
            // Strip the contradicting rules; keep the page's own others
            // (as written), drop the meta when nothing is left.
            let mut kept = String::new();
            for (r, l) in content.split(',').zip(lower.split(',')) {
                let (r, l) = (r.trim(), l.trim());
                if !r.is_empty() && !set.contains(l) {
                    if !kept.is_empty() {
                        kept.push_str(", ");
                    }
                    kept.push_str(r);
                }
            }
            if kept.is_empty() {
                el.remove();
                return;
            }
            // `content` is a valid attribute name: this cannot fail.
            let _ = el.set_attribute("content", &kept);
            stripped = set;
        }
    }
    let rules = || content_rules(&lower).filter(|r| !stripped.contains(r));
    if plan.mode != Mode::Inject {
        remember_head_rules(st, plan, &token, rules());
    }
    // Only the insertion needs `seen`, only within the window, and only
    // metas that could equal one of the policy's: their keys are the
    // policy's, so the set stays small however many rules the page lists.
    if plan.inserts() && start < st.window_end {
        let mut set: Vec<String> = Vec::new();
        for r in rules() {
            let key = rule_key(r);
            if !plan.could_match(&token, &key) {
                return;
            }
            if !set.contains(&key) {
                set.push(key);
            }
        }
        set.sort();
        st.seen.push((token, set));
    }
}

/// Keeps what [`State::close_head`] needs of a head meta's rules, bounded
/// whatever the number of metas: the keys that decide missing findings
/// (once each) and the extras (the first [`MAX_FINDINGS`] per token, then
/// a count).
fn remember_head_rules<'r>(st: &mut State, plan: &Plan, token: &str, rules: impl Iterator<Item = &'r str> + Clone) {
    if plan.mode == Mode::Audit {
        for r in rules.clone() {
            let key = rule_key(r);
            if plan.relevant.contains(&key) {
                let keys = st.page_keys.entry(token.to_owned()).or_default();
                if !keys.contains(&key) {
                    keys.push(key);
                }
            }
        }
    }
    let mut policy: Option<Vec<String>> = None;
    for r in rules {
        if !RESTRICTIVE.contains(&rule_name(r)) {
            continue;
        }
        let policy = policy.get_or_insert_with(|| plan.for_token(token).into_iter().map(rule_key).collect());
        if covers(policy, r) {
            continue;
        }
        let (list, more) = st.extras.entry(token.to_owned()).or_default();
        if list.len() < MAX_FINDINGS {
            list.push(bounded_rule(r).to_owned());
        } else {
            *more = more.saturating_add(1);
        }
    }
}

/// Raised by the element handler to stop lol_html once the head is over.
#[derive(Debug)]
struct HeadOver;

impl std::fmt::Display for HeadOver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the head is over")
    }
}

impl std::error::Error for HeadOver {}

fn is_head_over(e: &lol_html::errors::RewritingError) -> bool {
    matches!(e, lol_html::errors::RewritingError::ContentHandlerError(inner) if inner.is::<HeadOver>())
}

/// The policy's side of a rewriter (the rule table, the meta elements to
/// insert), built once per plan and shared by every rewriter that uses it:
/// the proxy keeps one per HTML plan of the policy instead of rebuilding it
/// for every response. Cheap to clone.
#[derive(Clone)]
pub struct Prepared(Arc<Plan>);

impl Prepared {
    /// Builds the plan for `config`.
    pub fn new(config: &Config) -> Prepared {
        let mut rules: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (token, rs) in &config.directives {
            let key = if token == "*" { "*".to_string() } else { token.trim().to_ascii_lowercase() };
            let entry = rules.entry(key).or_default();
            for r in rs {
                let r = r.trim().to_ascii_lowercase();
                if !r.is_empty() && !entry.contains(&r) {
                    entry.push(r);
                }
            }
        }
        let mut metas = Vec::new();
        // `robots` first, then tokens in order.
        for (token, rs) in rules.iter().filter(|(t, _)| *t == "*").chain(rules.iter().filter(|(t, _)| *t != "*")) {
            if rs.is_empty() {
                continue;
            }
            let name = if token == "*" { "robots" } else { token.as_str() };
            let html = format!("<meta name=\"{}\" content=\"{}\">", escape_attr(name), escape_attr(&rs.join(", ")));
            metas.push((token.clone(), rule_set(rs), html));
        }
        let nonce = {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_usize(std::ptr::addr_of!(rules) as usize);
            h.finish()
        };
        let markers = (0..2).map(|i| Arc::new(Marker::new(nonce, i))).collect();
        let mut relevant: Vec<String> = ["none", "noindex", "nofollow"].map(String::from).into();
        for r in rules.values().flatten() {
            let key = rule_key(r);
            if !relevant.contains(&key) {
                relevant.push(key);
            }
        }
        Prepared(Arc::new(Plan {
            mode: config.mode,
            rules,
            metas,
            nonce,
            max_memory: config.max_memory,
            markers,
            relevant,
        }))
    }
}

/// A streaming rewriter for one response. `Send`, not `Sync`.
pub struct Rewriter {
    inner: Option<HtmlRewriter<'static, Sink>>,
    state: Arc<Mutex<State>>,
    plan: Arc<Plan>,
    bail: Option<String>,
    /// Set by [`Rewriter::fix_growth`]: the output is exactly this many
    /// bytes longer than the input.
    growth: Option<usize>,
}

impl Rewriter {
    /// A rewriter for a body in `charset` (the Content-Type label, if any;
    /// without one, a `<meta charset>` in the page is honoured).
    pub fn new(config: &Config, charset: Option<&str>) -> Result<Rewriter, Unsupported> {
        Rewriter::prepared(&Prepared::new(config), charset)
    }

    /// A rewriter on a plan built beforehand: what the proxy does for every
    /// response, with one [`Prepared`] per policy plan.
    pub fn prepared(prepared: &Prepared, charset: Option<&str>) -> Result<Rewriter, Unsupported> {
        let plan = prepared.0.clone();
        let max_memory = plan.max_memory;
        let encoding = match charset.map(str::trim).filter(|l| !l.is_empty()) {
            None => None,
            Some(label) => {
                let enc =
                    encoding_rs::Encoding::for_label(label.as_bytes()).ok_or_else(|| Unsupported(label.to_string()))?;
                Some(AsciiCompatibleEncoding::new(enc).ok_or_else(|| Unsupported(label.to_string()))?)
            }
        };
        let state = Arc::new(Mutex::new(State::new()));
        let (s, p) = (state.clone(), plan.clone());
        let handler = element!("*", move |el: &mut Element<'_, '_>| {
            let mut st = lock(&s);
            let (phase, placed) = (st.phase, st.placed);
            on_element(&mut st, &p, el, &s);
            // Inject and enforce change nothing after the head. When this
            // element ended it (and did not get the metas itself), stop
            // lol_html right here: it passes this tag and the rest of the
            // input through as they are, and `write` copies the rest.
            if p.mode != Mode::Audit && phase != Phase::AfterHead && st.phase == Phase::AfterHead && st.placed == placed
            {
                return Err(Box::new(HeadOver));
            }
            Ok(())
        });
        let mut settings = Settings::new_send()
            .with_strict(false)
            .with_memory_settings(
                MemorySettings::new()
                    .with_max_allowed_memory_usage(max_memory)
                    .with_preallocated_parsing_buffer_size(1024.min(max_memory))
                    .with_graceful_bail_out_on_memory_limit_exceeded(true),
            )
            .with_graceful_bail_out_on_content_handler_error(true)
            .append_element_content_handler(handler);
        settings = match encoding {
            Some(e) => settings.with_encoding(e),
            None => settings.with_adjust_charset_on_meta_tag(true),
        };
        let inner = HtmlRewriter::new(settings, Sink(state.clone()));
        Ok(Rewriter { inner: Some(inner), state, plan, bail: None, growth: None })
    }

    /// Makes the output exactly `n` bytes longer than the input, whatever
    /// the page turns out to hold, and returns `n`; `None` in enforce mode
    /// (it removes bytes) and in audit mode (it changes none). Call it
    /// before the first [`Rewriter::write`].
    ///
    /// `n` is the most inject can insert: `<head>`, every policy meta and
    /// `</head>`. When less goes in (the page has its own `<head>`, already
    /// carries a policy meta, or the rewriter gave up before the insertion
    /// point) [`Rewriter::finish`] appends the difference as spaces after
    /// the last byte of the page, where HTML ignores them. The proxy uses
    /// this to keep a `Content-Length` response a `Content-Length`
    /// response: no chunked framing and one write instead of three for a
    /// small page.
    pub fn fix_growth(&mut self) -> Option<usize> {
        if self.plan.mode != Mode::Inject {
            return None;
        }
        let metas: usize = self.plan.metas.iter().map(|(_, _, html)| html.len()).sum();
        let n = if metas == 0 { 0 } else { "<head>".len() + metas + "</head>".len() };
        self.growth = Some(n);
        Some(n)
    }

    /// Gives up parsing: the rest passes through. The head was not seen
    /// to its end, so what it lacks is not reported.
    fn give_up(&mut self, reason: String) {
        self.inner = None;
        self.bail = Some(reason);
        lock(&self.state).phase = Phase::AfterHead;
    }

    /// Feeds a chunk; returns what is ready. Never fails: after a lol_html
    /// error the rest passes through unchanged.
    pub fn write(&mut self, chunk: &[u8]) -> Bytes {
        // Nothing after the head is rewritten in inject and enforce mode.
        // The element that ends the head usually stops lol_html on the spot
        // (`HeadOver`); when that element itself got the metas (a fragment)
        // it cannot, and the slices bound how far parsing runs on past it
        // (lol_html with a `*` handler is several times slower than a copy).
        let step = if self.plan.mode == Mode::Audit { chunk.len() } else { HEAD_SLICE };
        let mut pos = 0;
        while pos < chunk.len() {
            let Some(rw) = self.inner.as_mut() else { break };
            let end = pos.saturating_add(step).min(chunk.len());
            let result = rw.write(&chunk[pos..end]);
            pos = end;
            if let Err(e) = result {
                // Graceful bail-out flushed the unparsed input already.
                if is_head_over(&e) {
                    self.inner = None;
                } else {
                    self.give_up(e.to_string());
                }
                break;
            }
            let head_over = self.plan.mode != Mode::Audit && lock(&self.state).phase == Phase::AfterHead;
            if head_over {
                // Stop parsing. `end` flushes a partial tag lol_html still
                // buffers, unchanged.
                if let Some(rw) = self.inner.take() {
                    if let Err(e) = rw.end() {
                        self.give_up(e.to_string());
                    }
                }
            }
        }
        let mut out = lock(&self.state).take_output(&self.plan, self.inner.is_none());
        out.extend_from_slice(&chunk[pos..]);
        Bytes::from(out)
    }

    /// [`Rewriter::write`] for a chunk the caller owns: once parsing is over
    /// (the head ended in inject or enforce mode, or the rewriter gave up)
    /// the chunk comes back as it is, without a copy.
    pub fn write_bytes(&mut self, chunk: Bytes) -> Bytes {
        if self.inner.is_some() {
            return self.write(&chunk);
        }
        let mut held = lock(&self.state).take_output(&self.plan, true);
        if held.is_empty() {
            return chunk;
        }
        held.extend_from_slice(&chunk);
        Bytes::from(held)
    }

    /// End of input; returns the rest.
    pub fn finish(&mut self) -> Bytes {
        if let Some(rw) = self.inner.take() {
            if let Err(e) = rw.end() {
                self.give_up(e.to_string());
            }
        }
        let mut st = lock(&self.state);
        st.close_head(&self.plan);
        let mut out = st.take_output(&self.plan, true);
        if let Some(n) = self.growth {
            // At most `n` went in: one insertion point gets the metas.
            debug_assert!(st.grown <= n, "inserted {} bytes, promised {n}", st.grown);
            out.resize(out.len() + n.saturating_sub(st.grown), b' ');
            st.grown = n;
        }
        Bytes::from(out)
    }

    /// Findings recorded so far (drained): at most [`MAX_FINDINGS`] over
    /// the whole response.
    pub fn take_findings(&mut self) -> Vec<Finding> {
        std::mem::take(&mut lock(&self.state).findings)
    }

    /// Findings past [`MAX_FINDINGS`], counted but not recorded, over the
    /// whole response so far.
    pub fn dropped_findings(&self) -> DroppedFindings {
        lock(&self.state).dropped
    }

    /// The part of [`Rewriter::dropped_findings`] not taken yet (drained),
    /// for a caller that counts findings as they come.
    pub fn take_dropped_findings(&mut self) -> DroppedFindings {
        std::mem::take(&mut lock(&self.state).dropped_untaken)
    }

    /// Why the rewriter gave up, if it did.
    pub fn bail_reason(&self) -> Option<&str> {
        self.bail.as_deref()
    }
}

/// Rewrites a whole document at once (tests, benchmarks, `explain`).
pub fn rewrite_all(
    config: &Config,
    charset: Option<&str>,
    input: &[u8],
) -> Result<(Vec<u8>, Vec<Finding>), Unsupported> {
    let mut rw = Rewriter::new(config, charset)?;
    let mut out = rw.write(input).to_vec();
    out.extend_from_slice(&rw.finish());
    Ok((out, rw.take_findings()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::panic)]
    use super::*;

    const fn assert_send<T: Send>() {}
    const _: () = assert_send::<Rewriter>();

    fn cfg(mode: Mode) -> Config {
        Config {
            mode,
            directives: vec![
                ("*".into(), vec!["noindex".into(), "nosnippet".into()]),
                ("GPTBot".into(), vec!["noai".into()]),
            ],
            max_memory: 1 << 20,
        }
    }

    fn run(mode: Mode, html: &str) -> (String, Vec<Finding>) {
        let (out, f) = rewrite_all(&cfg(mode), None, html.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        (String::from_utf8_lossy(&out).into_owned(), f)
    }

    const METAS: &str = "<meta name=\"robots\" content=\"noindex, nosnippet\"><meta name=\"gptbot\" content=\"noai\">";

    #[test]
    fn inject_into_head_or_create_one() {
        assert_eq!(
            run(Mode::Inject, "<html><head><title>t</title></head><body>x</body></html>").0,
            format!("<html><head>{METAS}<title>t</title></head><body>x</body></html>")
        );
        assert_eq!(
            run(Mode::Inject, "<html><body>x</body></html>").0,
            format!("<html><head>{METAS}</head><body>x</body></html>")
        );
        assert_eq!(
            run(Mode::Inject, "<html><title>t</title><body>x</body></html>").0,
            format!("<html><head>{METAS}<title>t</title><body>x</body></html>")
        );
        assert_eq!(
            run(Mode::Inject, "<html>Hi <b>x</b></html>").0,
            format!("<html><head>{METAS}</head>Hi <b>x</b></html>")
        );
        assert_eq!(run(Mode::Inject, "<p>x</p>").0, format!("{METAS}<p>x</p>"));
        assert_eq!(run(Mode::Inject, "<!doctype html><HEAD></HEAD>").0, format!("<!doctype html><HEAD>{METAS}</HEAD>"));
    }

    #[test]
    fn inject_leaves_out_a_meta_the_head_already_has() {
        let page = "<html><head><title>t</title><meta name=ROBOTS content=\"NoSnippet , noindex\"></head><body>x</body></html>";
        assert_eq!(run(Mode::Inject, page).0, page.replace("<head>", "<head><meta name=\"gptbot\" content=\"noai\">"));
        // In the body it does not count.
        let page = "<html><head></head><body><meta name=robots content=\"noindex, nosnippet\"></body></html>";
        assert_eq!(run(Mode::Inject, page).0, page.replace("<head>", &format!("<head>{METAS}")));
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
    fn enforce_strips_conflicts_and_injects() {
        let (out, f) =
            run(Mode::Enforce, "<html><head><meta name=\"ROBOTS\" content=\"INDEX\"><title>t</title></head></html>");
        assert_eq!(out, format!("<html><head>{METAS}<title>t</title></head></html>"));
        assert_eq!(f, vec![Finding { kind: FindingKind::Conflict, token: "*".into(), rule: "index".into() }]);
        let (out, _) = run(Mode::Enforce, "<html><head><meta name=robots content=\"Index, NoArchive\"></head></html>");
        assert_eq!(out, format!("<html><head>{METAS}<meta name=robots content=\"NoArchive\"></head></html>"));
    }

    #[test]
    fn rules_compare_loosely() {
        assert!(contradicts("noindex", "all"));
        assert!(contradicts("nosnippet", "max-snippet:-1"));
        assert!(!contradicts("nosnippet", "max-snippet : 0"));
        assert!(covers(&["none".into()], "nofollow"));
        assert!(covers(&["noindex".into(), "nofollow".into()], "none"));
        assert_eq!(
            rule_set(&parse_content(" NoIndex ,  NOFOLLOW,noindex")),
            vec!["nofollow".to_string(), "noindex".to_string()]
        );
        assert_eq!(escape_attr("a\"<&é"), "a&quot;&lt;&amp;&#xe9;");
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
        assert!(Rewriter::new(&cfg(Mode::Inject), Some(" ")).is_ok());
        let (out, _) = rewrite_all(&cfg(Mode::Inject), Some("windows-1252"), b"<head></head><p>caf\xe9</p>")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(out, [b"<head>".as_slice(), METAS.as_bytes(), b"</head><p>caf\xe9</p>"].concat());
    }
}
