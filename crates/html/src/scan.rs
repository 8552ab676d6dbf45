//! [`HeadScan`]: a byte scanner over the start of a document that finds
//! the insertion point of the policy's metas without lol_html, for the
//! common page whose head the rewriter has nothing to read in: an explicit
//! `<head>`, then only `<meta>`s that speak to no crawler, `<link>`s,
//! `<base>`, and `<title>`, `<script>`, `<style>` without a `<` in their
//! text, up to `</head>` or the first body element. Inject mode only:
//! enforce reads the robots metas between `</head>` and the body too, and
//! audit every robots meta of the page.
//!
//! The scanner accepts only markup whose tokenization it is sure of (the
//! WHATWG HTML tokenizer's start tag, attribute and raw text states, on
//! the subset without parse errors, and comments) and answers
//! [`Verdict::Unsure`] on anything else: a `<!` other than a comment or a
//! leading doctype, a
//! `<noscript>` or `<template>`, a raw text element holding a `<`, a
//! character reference or an odd byte in an attribute name or in an
//! attribute it reads, a robots or crawler `<meta>`, a `<meta>` or
//! `<link>` that makes a plan head element redundant, a `<meta charset>`
//! that is not UTF-8 or a single-byte encoding, any `http-equiv`, text
//! before `<head>` other than whitespace (a byte order mark included), a
//! head longer than [`MAX_HELD`] bytes. The rewriter then feeds what the
//! scanner held to lol_html: the output is always what lol_html gives.

use memchr::memchr;

use crate::plan::PlanInner;

/// Bytes the scanner holds back before it leaves the page to lol_html.
/// Below [`crate::KNOWLEDGE_WINDOW`]: every page meta it reads is one
/// lol_html would have known in time.
pub(crate) const MAX_HELD: usize = 8 * 1024;

/// Chunks the scanner waits for before it leaves the page to lol_html (a
/// tag split over many small chunks is scanned again from its `<` each
/// time).
const MAX_PUSHES: u32 = 32;

/// What the scanner found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// More input is needed.
    More,
    /// The metas go at this offset of the held input; nothing else
    /// changes.
    Insert(usize),
    /// Leave the page to lol_html.
    Unsure,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    BeforeHtml,
    BeforeHead,
    /// In the head; the metas go at `at`.
    InHead(usize),
}

/// The scanner of one response.
pub(crate) struct HeadScan {
    /// The input so far, while it is more than one chunk.
    pub(crate) held: Vec<u8>,
    /// Where the next token starts.
    pos: usize,
    phase: Phase,
    pushes: u32,
}

/// A tag of the input.
enum Tag<'a> {
    Incomplete,
    Unsure,
    /// A start tag: its lowercase-comparable name and the offset after
    /// its `>`.
    Start(&'a [u8], usize),
}

/// The longest tag name the scanner tells apart (`noscript`, `template`,
/// `basefont`); a longer one is some other element.
const NAME_MAX: usize = 8;

/// `name` in lowercase, written into `buf` (no allocation per tag); empty,
/// which no tag name is, for a name longer than [`NAME_MAX`].
fn lowercase_name<'b>(name: &[u8], buf: &'b mut [u8; NAME_MAX]) -> &'b [u8] {
    let Some(out) = buf.get_mut(..name.len()) else { return &[] };
    for (o, c) in out.iter_mut().zip(name) {
        *o = c.to_ascii_lowercase();
    }
    out
}

fn is_ws(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | b'\x0C' | b'\r' | b' ')
}

/// Whether the encoding `label` names tokenizes like UTF-8: UTF-8 itself
/// or an ASCII-compatible single-byte encoding.
pub(crate) fn plain_encoding(label: &[u8]) -> bool {
    encoding_rs::Encoding::for_label(label)
        .is_some_and(|e| e == encoding_rs::UTF_8 || (e.is_single_byte() && e.is_ascii_compatible()))
}

/// Reads the start tag whose `<` is at `lt` (followed by an ASCII letter),
/// calling `attr(name, value)` for each attribute whose value is complete;
/// `attr` answers false to give up.
fn start_tag<'a>(doc: &'a [u8], lt: usize, attr: &mut dyn FnMut(&[u8], &[u8]) -> bool) -> Tag<'a> {
    let len = doc.len();
    let mut i = lt + 1;
    while i < len && !is_ws(doc[i]) && doc[i] != b'/' && doc[i] != b'>' {
        if !doc[i].is_ascii_alphanumeric() && doc[i] != b'-' {
            return Tag::Unsure;
        }
        i += 1;
    }
    let name = &doc[lt + 1..i];
    loop {
        // Before attribute name.
        while i < len && is_ws(doc[i]) {
            i += 1;
        }
        let Some(&b) = doc.get(i) else { return Tag::Incomplete };
        match b {
            b'>' => return Tag::Start(name, i + 1),
            b'/' => {
                // Self-closing start tag: `/>` ends it, another byte is
                // read again as the start of an attribute.
                match doc.get(i + 1) {
                    None => return Tag::Incomplete,
                    Some(b'>') => return Tag::Start(name, i + 2),
                    Some(_) => {
                        i += 1;
                        continue;
                    }
                }
            }
            b'=' | b'"' | b'\'' | b'<' => return Tag::Unsure,
            _ => {}
        }
        // Attribute name.
        let start = i;
        while i < len && !is_ws(doc[i]) && !matches!(doc[i], b'/' | b'>' | b'=') {
            if matches!(doc[i], b'"' | b'\'' | b'<' | 0) || !doc[i].is_ascii() {
                return Tag::Unsure;
            }
            i += 1;
        }
        let attr_name = &doc[start..i];
        // After attribute name.
        while i < len && is_ws(doc[i]) {
            i += 1;
        }
        let Some(&b) = doc.get(i) else { return Tag::Incomplete };
        if b != b'=' {
            if !attr(attr_name, b"") {
                return Tag::Unsure;
            }
            continue;
        }
        i += 1;
        // Before attribute value.
        while i < len && is_ws(doc[i]) {
            i += 1;
        }
        let Some(&b) = doc.get(i) else { return Tag::Incomplete };
        let value = match b {
            b'>' => {
                // A missing value: the tag ends.
                if !attr(attr_name, b"") {
                    return Tag::Unsure;
                }
                return Tag::Start(name, i + 1);
            }
            b'"' | b'\'' => {
                let Some(n) = memchr(b, &doc[i + 1..]) else { return Tag::Incomplete };
                let value = &doc[i + 1..i + 1 + n];
                i += n + 2;
                // After a quoted value: whitespace, `/` or `>`.
                match doc.get(i) {
                    None => return Tag::Incomplete,
                    Some(&c) if is_ws(c) || c == b'/' || c == b'>' => {}
                    Some(_) => return Tag::Unsure,
                }
                value
            }
            _ => {
                let start = i;
                while i < len && !is_ws(doc[i]) && doc[i] != b'>' {
                    if matches!(doc[i], b'"' | b'\'' | b'<' | b'=' | b'`') {
                        return Tag::Unsure;
                    }
                    i += 1;
                }
                if i == len {
                    return Tag::Incomplete;
                }
                &doc[start..i]
            }
        };
        if value.contains(&0) || !attr(attr_name, value) {
            return Tag::Unsure;
        }
    }
}

/// Whether `doc[at..]` starts with `</name>` (ASCII case-insensitive):
/// `Some(false)` when it does not, `None` when `doc` ends before it can
/// tell.
fn end_tag_at(doc: &[u8], at: usize, name: &[u8]) -> Option<bool> {
    let want = 2 + name.len() + 1;
    let have = &doc[at..doc.len().min(at + want)];
    let matches = have.iter().enumerate().all(|(k, &c)| match k {
        0 => c == b'<',
        1 => c == b'/',
        k if k == want - 1 => c == b'>',
        k => c.eq_ignore_ascii_case(&name[k - 2]),
    });
    match (matches, have.len() == want) {
        (false, _) => Some(false),
        (true, true) => Some(true),
        (true, false) => None,
    }
}

/// The offset after the comment whose `<!--` is at `lt`, `None` when
/// `doc` ends before it: the WHATWG comment states end one at `-->` or
/// `--!>`, and at once for `<!-->` and `<!--->` (abrupt closing of empty
/// comment); nothing else ends it.
fn comment_end(doc: &[u8], lt: usize) -> Option<usize> {
    let body = lt + 4;
    match doc.get(body..) {
        Some([b'>', ..]) => return Some(body + 1),
        Some([b'-', b'>', ..]) => return Some(body + 2),
        Some([] | [b'-']) | None => return None,
        _ => {}
    }
    let text = &doc[body..];
    let close = memchr::memmem::find(text, b"-->").map(|n| n + 3);
    let bang = memchr::memmem::find(text, b"--!>").map(|n| n + 4);
    let end = match (close, bang) {
        (Some(c), Some(b)) => c.min(b),
        (c, b) => c.or(b)?,
    };
    Some(body + end)
}

/// The value of an attribute the scanner reads: its text, unless it holds
/// a character reference (`&`), which only lol_html decodes.
fn plain(value: &[u8]) -> Option<&str> {
    if value.contains(&b'&') {
        return None;
    }
    std::str::from_utf8(value).ok()
}

/// Whether a `<meta>` attribute leaves the page to the fast path.
fn meta_attr_is_plain(plan: &PlanInner, name: &[u8], value: &[u8]) -> bool {
    if name.eq_ignore_ascii_case(b"name") {
        let Some(v) = plain(value) else { return false };
        plan.token_of(v).is_none() && plan.head_key("meta", v.trim()).is_none()
    } else if name.eq_ignore_ascii_case(b"charset") {
        plain(value).is_some_and(|v| plain_encoding(v.as_bytes()))
    } else {
        !name.eq_ignore_ascii_case(b"http-equiv")
    }
}

/// Whether a `<link>` attribute leaves the page to the fast path.
fn link_attr_is_plain(plan: &PlanInner, name: &[u8], value: &[u8]) -> bool {
    if plan.head.is_empty() || !name.eq_ignore_ascii_case(b"rel") {
        return true;
    }
    let Some(v) = plain(value) else { return false };
    v.split_ascii_whitespace().all(|kw| plan.head_key("link", kw).is_none())
}

impl HeadScan {
    pub(crate) fn new() -> HeadScan {
        HeadScan { held: Vec::new(), pos: 0, phase: Phase::BeforeHtml, pushes: 0 }
    }

    /// Takes the next chunk. When it returns [`Verdict::Insert`] or
    /// [`Verdict::Unsure`], the input is [`HeadScan::held`], or `chunk`
    /// alone when nothing was held.
    pub(crate) fn push(&mut self, chunk: &[u8], plan: &PlanInner) -> Verdict {
        self.pushes += 1;
        if self.held.len().saturating_add(chunk.len()) > MAX_HELD || self.pushes > MAX_PUSHES {
            self.held.extend_from_slice(chunk);
            return Verdict::Unsure;
        }
        let verdict = if self.held.is_empty() {
            self.scan(chunk, plan)
        } else {
            self.held.extend_from_slice(chunk);
            let held = std::mem::take(&mut self.held);
            let verdict = self.scan(&held, plan);
            self.held = held;
            verdict
        };
        if verdict == Verdict::More && self.held.is_empty() {
            self.held.extend_from_slice(chunk);
        }
        verdict
    }

    /// Scans `doc` (the whole input so far) on from `self.pos`.
    fn scan(&mut self, doc: &[u8], plan: &PlanInner) -> Verdict {
        loop {
            // Text up to the next tag: only whitespace before the head;
            // the rewriter reads no text in it.
            let Some(n) = memchr(b'<', &doc[self.pos..]) else {
                if self.phase_allows_text(&doc[self.pos..]) {
                    self.pos = doc.len();
                    return Verdict::More;
                }
                return Verdict::Unsure;
            };
            if !self.phase_allows_text(&doc[self.pos..self.pos + n]) {
                return Verdict::Unsure;
            }
            let lt = self.pos + n;
            self.pos = lt;
            let Some(&next) = doc.get(lt + 1) else { return Verdict::More };
            if doc[lt..].starts_with(b"<!--") {
                // A comment: the rewriter reads none.
                match comment_end(doc, lt) {
                    Some(end) => {
                        self.pos = end;
                        continue;
                    }
                    None => return Verdict::More,
                }
            }
            if next == b'!' && doc.len() < lt + 4 && b"<!--".starts_with(&doc[lt..]) {
                return Verdict::More;
            }
            if next == b'!' && self.phase == Phase::BeforeHtml {
                // A leading doctype; it ends at its first `>`.
                let Some(head) = doc.get(lt..lt + 9) else {
                    return if b"<!doctype".starts_with(&doc[lt..].to_ascii_lowercase()) {
                        Verdict::More
                    } else {
                        Verdict::Unsure
                    };
                };
                if !head.eq_ignore_ascii_case(b"<!doctype") {
                    return Verdict::Unsure;
                }
                let Some(end) = memchr(b'>', &doc[lt..]) else { return Verdict::More };
                self.pos = lt + end + 1;
                continue;
            }
            if next == b'/' {
                // Inject decides at `</head>`: what follows it is copied.
                let Phase::InHead(at) = self.phase else { return Verdict::Unsure };
                return match end_tag_at(doc, lt, b"head") {
                    None => Verdict::More,
                    Some(false) => Verdict::Unsure,
                    Some(true) => Verdict::Insert(at),
                };
            }
            if !next.is_ascii_alphabetic() {
                return Verdict::Unsure;
            }
            let in_head = matches!(self.phase, Phase::InHead(_));
            // The tag's name, when it is `meta` or `link` (the attributes
            // come before the tag is complete).
            let tag = &doc[lt + 1..];
            let named = |want: &[u8]| {
                tag.len() > 4 && tag[..4].eq_ignore_ascii_case(want) && (is_ws(tag[4]) || matches!(tag[4], b'/' | b'>'))
            };
            let (meta, link) = (in_head && named(b"meta"), in_head && named(b"link"));
            let mut attr = |name: &[u8], value: &[u8]| -> bool {
                if meta {
                    meta_attr_is_plain(plan, name, value)
                } else if link {
                    link_attr_is_plain(plan, name, value)
                } else {
                    true
                }
            };
            let mut lower = [0u8; NAME_MAX];
            let (name, end) = match start_tag(doc, lt, &mut attr) {
                Tag::Incomplete => return Verdict::More,
                Tag::Unsure => return Verdict::Unsure,
                Tag::Start(name, end) => (lowercase_name(name, &mut lower), end),
            };
            match (self.phase, name) {
                (Phase::BeforeHtml, b"html") => self.phase = Phase::BeforeHead,
                (Phase::BeforeHtml | Phase::BeforeHead, b"head") => self.phase = Phase::InHead(end),
                (Phase::BeforeHtml | Phase::BeforeHead, _) => return Verdict::Unsure,
                (Phase::InHead(_), b"meta" | b"link" | b"base") => {}
                (Phase::InHead(_), b"title" | b"script" | b"style") => {
                    // Raw text: the first `<` must open the end tag.
                    let Some(n) = memchr(b'<', &doc[end..]) else { return Verdict::More };
                    match end_tag_at(doc, end + n, name) {
                        None => return Verdict::More,
                        Some(false) => return Verdict::Unsure,
                        Some(true) => {
                            self.pos = end + n + name.len() + 3;
                            continue;
                        }
                    }
                }
                (Phase::InHead(_), b"html" | b"head" | b"noscript" | b"template" | b"basefont" | b"bgsound") => {
                    return Verdict::Unsure
                }
                // An element of the body ends the head.
                (Phase::InHead(at), _) => return Verdict::Insert(at),
            }
            self.pos = end;
        }
    }

    /// Whether the text `text` may stand where the scanner is: anything
    /// without a `<` in the head, whitespace before it.
    fn phase_allows_text(&self, text: &[u8]) -> bool {
        matches!(self.phase, Phase::InHead(_)) || text.iter().all(|&b| is_ws(b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Config, Mode, RewritePlan};

    #[test]
    fn tag_names_are_lowercased_without_allocating() {
        let mut buf = [0u8; NAME_MAX];
        assert_eq!(lowercase_name(b"NoScript", &mut buf), b"noscript");
        assert_eq!(lowercase_name(b"TITLE", &mut buf), b"title");
        assert_eq!(lowercase_name(b"h1", &mut buf), b"h1");
        // Longer than any name the scanner tells apart: some other element.
        assert_eq!(lowercase_name(b"blockquote", &mut buf), b"");
    }

    /// Tag names in any case, and an element whose name is longer than
    /// [`NAME_MAX`], which ends the head like any body element.
    #[test]
    fn names_in_any_case_and_long_names() {
        let config =
            Config { mode: Mode::Inject, directives: vec![("*".into(), vec!["noindex".into()])], max_memory: 1 << 20 };
        let plan = RewritePlan::new(&config);
        let cases: &[(&[u8], Verdict)] = &[
            (b"<HTML><HEAD><TITLE>t</Title><BlockQuote>", Verdict::Insert(12)),
            (b"<html><head><script>x</SCRIPT></HEAD>", Verdict::Insert(12)),
            (b"<html><head><NOSCRIPT>", Verdict::Unsure),
            (b"<html><head><Template>", Verdict::Unsure),
            (b"<html><blockquote>", Verdict::Unsure),
            (b"<html><head><title>t</titles>", Verdict::Unsure),
            // Special names with a letter more are other elements: a name
            // cut to its first bytes would read as `template`/`noscript`.
            (b"<html><head><templates>", Verdict::Insert(12)),
            (b"<html><head><noscripts>", Verdict::Insert(12)),
        ];
        for (doc, want) in cases {
            let got = HeadScan::new().push(doc, &plan.0);
            assert_eq!(&got, want, "{}", String::from_utf8_lossy(doc));
        }
    }
}
