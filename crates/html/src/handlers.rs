//! The lol_html element handler: tracks the head the way an HTML parser
//! does, places the insertion point and reads the page's robots metas.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use lol_html::html_content::ContentType;
use lol_html::send::Element;

use crate::plan::PlanInner;
use crate::rules::{bounded_rule, content_rules, covers_split, key_matches, rule_key, split_rule, RESTRICTIVE_RULES};
use crate::slots::{lock, Fill, Phase, State};
use crate::{FindingKind, Mode, KNOWLEDGE_WINDOW, MAX_FINDINGS};

/// Elements a parser puts in the head (anything else starts the body).
const HEAD_CONTENT: &[&str] =
    &["title", "meta", "link", "script", "style", "base", "noscript", "template", "basefont", "bgsound"];

/// The element handler: tracks the head, places the injection point and
/// reads the page's robots metas.
pub(crate) fn on_element(st: &mut State, plan: &Arc<PlanInner>, el: &mut Element<'_, '_>, this: &Arc<Mutex<State>>) {
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
                    let metas: String = plan.all_html().collect();
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
    if name == "link" {
        if st.phase != Phase::AfterHead && plan.inserts() && location.start < st.window_end {
            head_link(st, plan, el);
        }
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

fn open_head(
    st: &mut State,
    plan: &Arc<PlanInner>,
    el: &mut Element<'_, '_>,
    tag_end: usize,
    this: &Arc<Mutex<State>>,
) {
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

fn outside_head(st: &mut State, plan: &PlanInner, el: &Element<'_, '_>) {
    let Some(name) = el.get_attribute("name") else { return };
    let Some(token) = plan.token_of(&name) else { return };
    let content = el.get_attribute("content").unwrap_or_default();
    for rule in content_rules(&lowercase(&content)) {
        st.record(FindingKind::OutsideHead, &token, rule);
    }
}

/// `text` in ASCII lowercase, copied only when it has an uppercase letter.
fn lowercase(text: &str) -> Cow<'_, str> {
    if text.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(text.to_ascii_lowercase())
    } else {
        Cow::Borrowed(text)
    }
}

/// Remembers a page head element that makes a plan head element redundant.
fn see_head(st: &mut State, key: Option<&str>) {
    if let Some(key) = key {
        if !st.seen_head.iter().any(|k| k == key) {
            st.seen_head.push(key.to_owned());
        }
    }
}

/// A `<link>` in the head: each of its `rel` keywords that makes a head
/// element redundant is remembered.
fn head_link(st: &mut State, plan: &PlanInner, el: &Element<'_, '_>) {
    // Without head elements to insert no link can make one redundant.
    if plan.head.is_empty() {
        return;
    }
    let Some(rel) = el.get_attribute("rel") else { return };
    for kw in rel.split_ascii_whitespace() {
        see_head(st, plan.head_key("link", kw));
    }
}

/// A `<meta>` in the head.
fn head_meta(st: &mut State, plan: &PlanInner, el: &mut Element<'_, '_>, start: usize) {
    let Some(name) = el.get_attribute("name") else { return };
    if plan.inserts() && start < st.window_end && !plan.head.is_empty() {
        see_head(st, plan.head_key("meta", name.trim()));
    }
    let Some(token) = plan.token_of(&name) else { return };
    let content = el.get_attribute("content").unwrap_or_default();
    // ASCII lowercasing keeps every byte where it was: `lower` splits at
    // the same offsets as `content`.
    let lower = lowercase(&content);
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
            let split = split_rule(r);
            if !plan.could_match(&token, split) {
                return;
            }
            if !set.iter().any(|k| key_matches(k, split)) {
                set.push(rule_key(r));
            }
        }
        set.sort();
        st.seen.push((token.into_owned(), set));
    }
}

/// Keeps what [`crate::slots::State::close_head`] needs of a head meta's rules, bounded
/// whatever the number of metas: the keys that decide missing findings
/// (once each) and the extras (the first [`MAX_FINDINGS`] per token, then
/// a count).
fn remember_head_rules<'r>(
    st: &mut State,
    plan: &PlanInner,
    token: &str,
    rules: impl Iterator<Item = &'r str> + Clone,
) {
    if plan.mode == Mode::Audit {
        for r in rules.clone() {
            let split = split_rule(r);
            let Some(key) = plan.relevant.iter().find(|k| key_matches(k, split)) else { continue };
            let keys = match st.page_keys.get_mut(token) {
                Some(keys) => keys,
                None => st.page_keys.entry(token.to_owned()).or_default(),
            };
            if !keys.contains(key) {
                keys.push(key.clone());
            }
        }
    }
    for r in rules {
        let split = split_rule(r);
        if !RESTRICTIVE_RULES.contains(&split.0) || covers_split(plan.policy_keys(token), split) {
            continue;
        }
        let (list, more) = match st.extras.get_mut(token) {
            Some(entry) => entry,
            None => st.extras.entry(token.to_owned()).or_default(),
        };
        if list.len() < MAX_FINDINGS {
            list.push(bounded_rule(r).to_owned());
        } else {
            *more = more.saturating_add(1);
        }
    }
}

/// Raised by the element handler to stop lol_html once the head is over.
#[derive(Debug)]
pub(crate) struct HeadOver;

impl std::fmt::Display for HeadOver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the head is over")
    }
}

impl std::error::Error for HeadOver {}

pub(crate) fn is_head_over(e: &lol_html::errors::RewritingError) -> bool {
    matches!(e, lol_html::errors::RewritingError::ContentHandlerError(inner) if inner.is::<HeadOver>())
}
