//! crawlgate-html: the streaming robots `<meta>` rewriter.
//!
//! Bytes in, bytes out, through lol_html: `inject` adds the policy's robots
//! metas as the first children of `<head>`, `audit` changes nothing and
//! reports how the page's own robots metas compare with the policy,
//! `enforce` strips the rules that contradict the policy from the page's
//! metas and injects the policy's. The rewriter never fails a response: on
//! a lol_html error (memory limit) the rest of the body passes through
//! unchanged. A body that starts with a UTF-16 byte order mark passes
//! through whole: browsers decode it as UTF-16 whatever its Content-Type
//! says (WHATWG Encoding, "BOM sniff"), and lol_html rewrites only
//! ASCII-compatible encodings.
//!
//! What it owns: finding the head, placing the metas, comparing the page's
//! robots metas with the policy's. What it does not: HTTP (the proxy
//! decides which responses are rewritten and hands it a [`Config`] per
//! policy plan), the policy file, and the robots vocabulary: the rule
//! names, the `<meta>` element builder and the crawler meta names come from
//! `crawlgate_policy` (`robots_tag`, `catalog`), so that the headers and
//! the metas of one response speak the same language.
//!
//! Modules: `plan` ([`RewritePlan`], the policy's side, built once per
//! plan), `rewriter` ([`Rewriter`], one response), `handlers` (the lol_html
//! element handler), `slots` (the per-response state and the held-back
//! output), `rules` (comparing rules), `scan` (the byte scanner that
//! places inject's metas without lol_html in a plain head, and hands any
//! other head to lol_html). Beside the rewriter: `markdown` (HTML to
//! Markdown for agents that ask for it) and `decode` (bounded streaming
//! decoding of a gzip, deflate or br body about to be rewritten or
//! converted).
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

pub mod decode;
mod handlers;
pub mod markdown;
mod plan;
mod rewriter;
mod rules;
mod scan;
mod slots;

pub use plan::RewritePlan;
pub use rewriter::{rewrite_all, Bail, Rewriter};

/// What the rewriter does: the policy's `html` mode of a `[[robots_tag]]`
/// entry. `Inject` adds the policy's metas; `Audit` reports only, the
/// output equals the input; `Enforce` strips contradicting rules from the
/// page's metas and adds the policy's.
pub use crawlgate_policy::HtmlMode as Mode;

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

    pub(crate) fn index(self) -> usize {
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

    pub(crate) fn add(&mut self, kind: FindingKind, n: u64) {
        let c = &mut self.0[kind.index()];
        *c = c.saturating_add(n);
    }
}

/// The charset cannot be rewritten (UTF-16, unknown labels).
#[derive(Debug, Clone, thiserror::Error)]
#[error("charset `{0}` cannot be rewritten (not a known ASCII-compatible encoding)")]
pub struct Unsupported(pub String);

/// Page metas that start within this many input bytes after the insertion
/// point are known when the inserted metas are decided. The output held
/// back meanwhile is at most twice this.
pub const KNOWLEDGE_WINDOW: usize = 32 * 1024;
