//! A group's tokens: its `user_agents`, and the catalog tokens its
//! `categories` bring, each token in one group only.

use std::collections::{HashMap, HashSet};

use toml::Spanned;

use super::ctx::Ctx;
use crate::catalog;
use crate::diag::Warning;
use crate::raw::RawGroup;
use crate::validate;

/// `` `a`, `b`, `c` `` with at most `max` items, then `and N more`.
pub(super) fn quoted_list<S: AsRef<str>>(items: &[S], max: usize) -> String {
    let mut out = items.iter().take(max).map(|t| format!("`{}`", t.as_ref())).collect::<Vec<_>>().join(", ");
    if items.len() > max {
        out.push_str(&format!(" and {} more", items.len() - max));
    }
    out
}

/// Every token (lower-cased, `*` left out) named in some group's
/// `user_agents`. An explicit name wins over a category's expansion
/// wherever the two groups are in the file: `user_agents = ["GPTBot"]` next
/// to `categories = ["ai-training"]` is the natural way to treat one crawler
/// of a category differently, so the category group just leaves that token
/// out instead of reporting a duplicate.
pub(super) fn explicit_tokens(raw: &[Spanned<RawGroup>]) -> HashMap<String, Explicit> {
    let mut out = HashMap::new();
    for g in raw {
        let uas = g.get_ref().user_agents.iter().flatten();
        let name = g.get_ref().name.as_ref().map(|n| n.get_ref().clone());
        let first = g.get_ref().user_agents.iter().flatten().next().map(|t| t.get_ref().clone());
        let rules = RulesWritten::of(g.get_ref());
        for t in uas {
            let lower = t.get_ref().to_ascii_lowercase();
            if lower != "*" {
                let group = name.clone().or_else(|| first.clone()).unwrap_or_default();
                out.entry(lower).or_insert(Explicit { group, at: g.span().start, rules: rules.clone() });
            }
        }
    }
    out
}

/// The group that names a token explicitly in `user_agents`.
pub(super) struct Explicit {
    /// Its name (`name`, else its first user agent).
    group: String,
    /// The offset of its `[[group]]` header.
    at: usize,
    /// Its rules as written.
    rules: RulesWritten,
}

/// A group's `allow` and `disallow` patterns as written.
#[derive(Clone, Default)]
pub(super) struct RulesWritten {
    allow: Vec<String>,
    disallow: Vec<String>,
}

impl RulesWritten {
    /// The patterns of group `g` as written.
    pub(super) fn of(g: &RawGroup) -> RulesWritten {
        let list = |v: &Option<Vec<Spanned<String>>>| v.iter().flatten().map(|p| p.get_ref().clone()).collect();
        RulesWritten { allow: list(&g.allow), disallow: list(&g.disallow) }
    }

    /// Whether these rules keep a crawler out of at least everything
    /// `other` keeps it out of, judged from the patterns as written: a
    /// disallow of everything with no allow, or every disallow of `other`
    /// and no allow `other` lacks.
    fn same_or_stricter_than(&self, other: &RulesWritten) -> bool {
        let all = self.allow.is_empty() && self.disallow.iter().any(|d| d == "/" || d == "/*");
        all || (other.disallow.iter().all(|d| self.disallow.contains(d))
            && self.allow.iter().all(|a| other.allow.contains(a)))
    }
}

/// The tokens one group has taken so far.
#[derive(Default)]
pub(super) struct GroupTokens {
    /// As written, in the order they were taken.
    pub(super) tokens: Vec<String>,
    /// Lower-cased `tokens`, for the checks that run once per token.
    pub(super) in_group: HashSet<String>,
}

impl GroupTokens {
    /// Takes token `t` (named at `at`) for this group, or reports a
    /// duplicate group when an earlier group has taken it (a token belongs
    /// to one group, matched case-insensitively).
    fn add(&mut self, cx: &mut Ctx<'_>, seen: &mut HashMap<String, usize>, t: &str, at: usize) {
        let lower = t.to_ascii_lowercase();
        if let Some(first) = seen.get(&lower) {
            let first = cx.loc.at(*first, "");
            cx.err_at(
                at,
                format!(
                    "group.user_agents: duplicate group for token `{t}` (first at {}:{}:{})",
                    first.file, first.line, first.col
                ),
            );
        } else {
            seen.insert(lower.clone(), at);
            self.in_group.insert(lower);
            self.tokens.push(t.to_string());
        }
    }
}

/// Takes the group's `user_agents`: each must be a product token (or `*`),
/// one with digits or dots with a warning; a repeat within the group is a
/// warning, not a duplicate group.
pub(super) fn add_user_agents(
    cx: &mut Ctx<'_>,
    seen: &mut HashMap<String, usize>,
    tokens: &mut GroupTokens,
    user_agents: &[Spanned<String>],
) {
    for ua in user_agents {
        let t = ua.get_ref();
        match validate::user_agent(t) {
            Ok(None) => {}
            Ok(Some(w)) => cx.warn(ua, Warning::NonRfcToken, w),
            Err(e) => {
                cx.err(ua, e);
                continue;
            }
        }
        if t != "*" && catalog::lookup(t).is_none() {
            // Short tokens are a few edits from many others (`foobot`,
            // `DotBot`): two edits only from eight characters on.
            let max = if t.len() >= 8 { 2 } else { 1 };
            if let Some(near) = validate::closest(t, catalog::entries().iter().map(|e| e.token.as_str()), max) {
                cx.warn(ua, Warning::TokenTypo, format!("group.user_agents: `{t}` is not in the crawler catalog; did you mean `{near}`? (a misspelt token matches no crawler)"));
            }
        }
        if tokens.in_group.contains(&t.to_ascii_lowercase()) {
            cx.warn(ua, Warning::RepeatedToken, format!("group.user_agents: `{t}` is listed twice in this group (tokens are case-insensitive); the repeat is ignored"));
            continue;
        }
        tokens.add(cx, seen, t, ua.span().start);
    }
}

/// Expands the group's `categories` into catalog tokens. A token named
/// explicitly in some group's `user_agents` is left out (see
/// [`explicit_tokens`]), with one warning per category and group it joins;
/// a token another group already has is reported once per category and
/// earlier group. Returns how many tokens were left out for explicit names.
pub(super) fn expand_categories(
    cx: &mut Ctx<'_>,
    seen: &mut HashMap<String, usize>,
    explicit: &HashMap<String, Explicit>,
    tokens: &mut GroupTokens,
    categories: &[Spanned<String>],
    group_name: Option<&str>,
    own: &RulesWritten,
) -> usize {
    let mut overridden = 0;
    for cat in categories {
        let Some(list) = catalog::tokens_in_category(cat.get_ref()) else {
            cx.err(
                cat,
                format!(
                    "group.categories: unknown category `{}` (known: {})",
                    cat.get_ref(),
                    catalog::CATEGORIES.join(", ")
                ),
            );
            continue;
        };
        // Tokens another group already got from a category: one error
        // per category and earlier group, not one per token.
        let mut clashes: Vec<(usize, Vec<&str>)> = Vec::new();
        // Tokens leaving for a group naming them: (that group, tokens).
        let mut leaving: Vec<(&Explicit, Vec<&str>)> = Vec::new();
        for t in list {
            let lower = t.to_ascii_lowercase();
            if tokens.in_group.contains(&lower) {
                continue;
            }
            if let Some(e) = explicit.get(&lower) {
                overridden += 1;
                match leaving.iter_mut().find(|(x, _)| x.at == e.at) {
                    Some((_, v)) => v.push(t),
                    None => leaving.push((e, vec![t])),
                }
                continue;
            }
            match seen.get(&lower).copied() {
                Some(first) => match clashes.iter_mut().find(|(f, _)| *f == first) {
                    Some((_, v)) => v.push(t),
                    None => clashes.push((first, vec![t])),
                },
                None => tokens.add(cx, seen, t, cat.span().start),
            }
        }
        for (joins, list) in leaving {
            // Moving to a group at least as strict loses no restriction.
            if joins.rules.same_or_stricter_than(own) {
                continue;
            }
            let at = cx.loc.at(joins.at, "");
            let this = group_name.map_or("this group".to_string(), |n| format!("this group (`{n}`)"));
            let (leave, follow) = if list.len() == 1 { ("leaves", "follows") } else { ("leave", "follow") };
            cx.warn(
                cat,
                Warning::TokenLeavesCategory,
                format!(
                    "group.categories: `{}` brings {}, named in user_agents of the group `{}` at {}:{}:{}: {} {leave} {this} and {follow} that group's rules only",
                    cat.get_ref(),
                    quoted_list(&list, list.len()),
                    joins.group,
                    at.file,
                    at.line,
                    at.col,
                    if list.len() == 1 { "it" } else { "they" },
                ),
            );
        }
        for (first, list) in clashes {
            let first = cx.loc.at(first, "");
            let names = list.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>().join(", ");
            cx.err(
                cat,
                format!(
                    "group.categories: `{}` brings {names}, already in the group at {}:{}:{} (a token belongs to one group; name it in user_agents to pick its group)",
                    cat.get_ref(),
                    first.file,
                    first.line,
                    first.col
                ),
            );
        }
    }
    overridden
}
