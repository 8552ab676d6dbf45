//! [`RewritePlan`]: the policy's side of a rewriter, built once per HTML
//! plan of the policy and shared by every response that uses it.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;

use crawlgate_policy::{catalog, robots_tag, HeadElement};

use crate::rules::{contradicts_split, key_matches, rule_key, rule_set, split_rule};
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
        // The policy rule names a page meta is checked against, per token
        // (distinct, in the order `for_token` gives them): a `robots` meta
        // against every token's, a crawler meta against its own and `*`'s.
        let mut names: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut keys: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let star: Vec<String> = rules.get("*").cloned().unwrap_or_default();
        let distinct_names = |list: &mut Vec<String>, rs: &[String]| {
            for r in rs {
                let name = split_rule(r).0;
                if !list.iter().any(|n| n == name) {
                    list.push(name.to_string());
                }
            }
        };
        let mut everyone = Vec::new();
        for (token, rs) in &rules {
            let mut own = Vec::new();
            distinct_names(&mut own, &star);
            let mut all: Vec<String> = star.iter().map(|r| rule_key(r)).collect();
            if token != "*" {
                distinct_names(&mut own, rs);
                all.extend(rs.iter().map(|r| rule_key(r)));
            }
            distinct_names(&mut everyone, &star);
            if token != "*" {
                distinct_names(&mut everyone, rs);
            }
            names.insert(token.clone(), own);
            keys.insert(token.clone(), all);
        }
        let mut default_names = Vec::new();
        distinct_names(&mut default_names, &star);
        let default_keys: Vec<String> = star.iter().map(|r| rule_key(r)).collect();
        names.insert("*".to_string(), everyone);
        RewritePlan(Arc::new(PlanInner {
            mode: config.mode,
            names,
            default_names,
            keys,
            default_keys,
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
    /// token -> the distinct names of the policy rules a page meta for it
    /// contradicts ([`PlanInner::conflicts`]); `*` has every token's.
    names: BTreeMap<String, Vec<String>>,
    /// The names for a crawler meta of a token the policy does not name:
    /// `*`'s.
    default_names: Vec<String>,
    /// token -> [`rule_key`]s of [`PlanInner::for_token`].
    keys: BTreeMap<String, Vec<String>>,
    /// The keys for a token the policy does not name: `*`'s.
    default_keys: Vec<String>,
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
    /// The [`rule_key`]s of the rules that apply to `token` (its own plus
    /// `*`'s), built with the plan.
    pub(crate) fn policy_keys(&self, token: &str) -> &[String] {
        self.keys.get(token).unwrap_or(&self.default_keys)
    }

    /// The page rules of a meta for `token` that contradict the policy,
    /// once each, policy rule by policy rule and then in page order, and
    /// the same as a set. `rules` walks the meta's rules; it is called once
    /// per policy rule name instead of collecting them. A `robots` meta
    /// speaks for every crawler: it is checked against every token's rules.
    pub(crate) fn conflicts<'r, I: Iterator<Item = &'r str>>(
        &self,
        token: &str,
        rules: impl Fn() -> I,
    ) -> (Vec<&'r str>, HashSet<&'r str>) {
        // The set keeps a `content` of many distinct rules from costing
        // quadratic time.
        let mut out: Vec<&str> = Vec::new();
        let mut known: HashSet<&str> = HashSet::new();
        for p in self.names.get(token).unwrap_or(&self.default_names) {
            for r in rules() {
                if contradicts_split(p, crawlgate_policy::robots_tag::split_rule(r)) && known.insert(r) {
                    out.push(r);
                }
            }
        }
        (out, known)
    }

    /// Whether `rule` has the key of a rule of one of the policy's metas
    /// for `token`: a page meta with any other key is identical to none of
    /// them (see [`crate::slots::State::decide`]).
    pub(crate) fn could_match(&self, token: &str, rule: (&str, &str)) -> bool {
        self.metas.iter().any(|(t, set, _)| t == token && set.iter().any(|k| key_matches(k, rule)))
    }

    /// `*` for `robots`, the lowercase name for a policy token or a known
    /// crawler, `None` for every other meta. Borrowed from the plan but for
    /// a crawler the policy does not name.
    pub(crate) fn token_of(&self, name: &str) -> Option<Cow<'_, str>> {
        let name = name.trim();
        if name.eq_ignore_ascii_case("robots") {
            return Some(Cow::Borrowed("*"));
        }
        if let Some(token) = self.rules.keys().find(|t| t.eq_ignore_ascii_case(name)) {
            return Some(Cow::Borrowed(token));
        }
        catalog::is_crawler_meta_name(name).then(|| Cow::Owned(name.to_ascii_lowercase()))
    }

    pub(crate) fn inserts(&self) -> bool {
        self.mode != Mode::Audit && (!self.metas.is_empty() || !self.head.is_empty())
    }

    /// The key (`meta:<name>`, `link:<rel>`) of a page head element of
    /// `kind` (`meta`, `link`) named `name` (any case), when it makes one of
    /// the head elements redundant.
    pub(crate) fn head_key(&self, kind: &str, name: &str) -> Option<&str> {
        let is = |u: &&String| {
            u.strip_prefix(kind).and_then(|rest| rest.strip_prefix(':')).is_some_and(|n| n.eq_ignore_ascii_case(name))
        };
        self.head.iter().find_map(|(unless, _)| unless.iter().find(is)).map(String::as_str)
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
