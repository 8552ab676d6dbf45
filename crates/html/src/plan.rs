//! [`RewritePlan`]: the policy's side of a rewriter, built once per HTML
//! plan of the policy and shared by every response that uses it.

use std::collections::{BTreeMap, HashSet};
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;

use crawlgate_policy::{catalog, robots_tag, HeadElement};

use crate::rules::{contradicts, rule_key, rule_set};
use crate::{Config, Mode};

/// The policy's side of a rewriter (the rule table, the meta elements to
/// insert), built once per plan and shared by every rewriter that uses it:
/// the proxy keeps one per HTML plan of the policy instead of rebuilding it
/// for every response. Cheap to clone.
#[derive(Clone)]
pub struct RewritePlan(pub(crate) Arc<PlanInner>);

impl RewritePlan {
    /// Builds the plan for `config`.
    pub fn new(config: &Config) -> RewritePlan {
        RewritePlan::with_head(config, &[])
    }

    /// Builds the plan for `config` that also adds `head` (TDMRep metas,
    /// the RSL license link) after the robots metas, each unless the page's
    /// head already has an element it names in `unless`. Audit mode adds
    /// nothing.
    pub fn with_head(config: &Config, head: &[HeadElement]) -> RewritePlan {
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
            // The policy's builder, which the CLI's `explain` uses too: one
            // escaping for every robots meta crawlgate writes.
            let html = robots_tag::meta_element(name, &rs.join(", "));
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
        let head: Vec<(Vec<String>, String)> = head.iter().map(|h| (h.unless.clone(), h.html.clone())).collect();
        let inserted =
            metas.iter().map(|(_, _, html)| html.as_str()).chain(head.iter().map(|(_, html)| html.as_str())).collect();
        RewritePlan(Arc::new(PlanInner {
            mode: config.mode,
            rules,
            metas,
            head,
            inserted,
            nonce,
            max_memory: config.max_memory,
            markers,
            relevant,
        }))
    }
}

/// What a [`RewritePlan`] shares: the policy as the handlers need it.
pub(crate) struct PlanInner {
    pub(crate) mode: Mode,
    /// token (lowercase, `*`) -> rules.
    pub(crate) rules: BTreeMap<String, Vec<String>>,
    /// The metas to insert, `robots` first: `(token, rule_set, html)`.
    pub(crate) metas: Vec<(String, Vec<String>, String)>,
    /// Other head elements to insert after the metas: `(unless, html)`,
    /// `unless` naming the page elements (`meta:<name>`, `link:<rel>`)
    /// that make it redundant.
    pub(crate) head: Vec<(Vec<String>, String)>,
    /// Everything the plan inserts into a head that has none of it: the
    /// metas, then the head elements ([`PlanInner::all_html`] joined).
    pub(crate) inserted: String,
    /// Random per plan; see [`crate::slots::Slot`]. Markers never leave the rewriter, so
    /// a page cannot learn it.
    pub(crate) nonce: u64,
    /// lol_html memory limit in bytes.
    pub(crate) max_memory: usize,
    /// The markers of the first slots, built with the plan (a page has at
    /// most two: after `<html>` and in `<head>`).
    pub(crate) markers: Vec<Arc<Marker>>,
    /// The page rule keys that can decide a missing finding ([`crate::rules::covers`]):
    /// the policy's own and `none`, `noindex`, `nofollow`. A page's other
    /// rules need not be kept.
    pub(crate) relevant: Vec<String>,
}

impl PlanInner {
    /// Rules that apply to `token` (its own plus `*`'s).
    pub(crate) fn for_token(&self, token: &str) -> Vec<&str> {
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
    pub(crate) fn conflicts<'r, I: Iterator<Item = &'r str>>(
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
    /// them (see [`crate::slots::State::decide`]).
    pub(crate) fn could_match(&self, token: &str, key: &str) -> bool {
        self.metas.iter().any(|(t, set, _)| t == token && set.iter().any(|k| k == key))
    }

    /// `*` for `robots`, the lowercase name for a policy token or a known
    /// crawler, `None` for every other meta.
    pub(crate) fn token_of(&self, name: &str) -> Option<String> {
        let name = name.trim().to_ascii_lowercase();
        if name == "robots" {
            Some("*".to_string())
        } else if self.rules.contains_key(&name) || catalog::is_crawler_meta_name(&name) {
            Some(name)
        } else {
            None
        }
    }

    pub(crate) fn inserts(&self) -> bool {
        self.mode != Mode::Audit && (!self.metas.is_empty() || !self.head.is_empty())
    }

    /// Whether a page head element with key `key` (`meta:<name>`,
    /// `link:<rel>`) makes one of the head elements redundant.
    pub(crate) fn head_key_matters(&self, key: &str) -> bool {
        self.head.iter().any(|(unless, _)| unless.iter().any(|u| u == key))
    }

    /// Every byte the plan can insert: the metas and the head elements.
    pub(crate) fn all_html(&self) -> impl Iterator<Item = &str> {
        self.metas.iter().map(|(_, _, html)| html.as_str()).chain(self.head.iter().map(|(_, html)| html.as_str()))
    }
}

/// A slot's marker and the searcher that finds it in the output (building
/// a searcher costs more than a short page's search).
pub(crate) struct Marker {
    pub(crate) text: String,
    pub(crate) finder: memchr::memmem::Finder<'static>,
}

impl Marker {
    pub(crate) fn new(nonce: u64, index: usize) -> Marker {
        let text = format!("<!--crawlgate-{nonce:016x}-{index}-->");
        let finder = memchr::memmem::Finder::new(text.as_bytes()).into_owned();
        Marker { text, finder }
    }
}
