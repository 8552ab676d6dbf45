//! `[[group]]`: each group's tokens, rules and per-group keys, the checks
//! across groups, and the token index the policy identifies agents by.

use std::collections::HashMap;

use toml::Spanned;

use super::ctx::Ctx;
use super::limits;
use super::tokens::{
    add_user_agents, expand_categories, explicit_tokens, quoted_list, Explicit, GroupTokens, RulesWritten,
};
use super::verification::{compile_on_failure, compile_verify};
use crate::catalog;
use crate::decision::Enforce;
use crate::diag::Warning;
use crate::pattern::Pattern;
use crate::policy::Group;
use crate::raw::RawGroup;
use crate::ruleset::RuleSet;
use crate::sf;
use crate::validate;
use crate::verification::{Method, OnFailure, VerifyMode};

/// The identification tokens (without `*`) with their group indices, and
/// the `*` group, in group order.
pub(crate) fn token_index(groups: &[Group]) -> (Vec<String>, Vec<usize>, Option<usize>) {
    let mut tokens = Vec::new();
    let mut token_group = Vec::new();
    let mut star_group = None;
    for (gi, g) in groups.iter().enumerate() {
        for t in &g.tokens {
            if t == "*" {
                star_group = Some(gi);
            } else {
                tokens.push(t.clone());
                token_group.push(gi);
            }
        }
    }
    (tokens, token_group, star_group)
}

/// Compiles the `[[group]]` tables in file order. A group whose every
/// category token is named explicitly in another group is checked but left
/// out (with a warning).
pub(super) fn compile_groups(cx: &mut Ctx<'_>, raw: &[Spanned<RawGroup>]) -> Vec<Group> {
    let explicit = explicit_tokens(raw);
    // token (lowercase) -> offset of its first group
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut groups = Vec::new();
    let mut offsets = Vec::new();
    for g in raw {
        if let Some(group) = compile_group(cx, g, &explicit, &mut seen) {
            groups.push(group);
            offsets.push(g.span().start);
        }
    }
    weaker_than_star(cx, &groups, &offsets);
    groups
}

/// Warns about each group that leaves its crawlers less restricted than
/// `*`. A crawler obeys only the group naming it (RFC 9309 section 2.2.1),
/// so a path `*` disallows and the group has no rule for is open to the
/// group's crawlers while closed to unnamed ones. Each `*` disallow pattern
/// is tried on one path it matches (its `*` wildcards matching nothing),
/// where `*` must decide disallow and the group must have no matching rule;
/// an explicit allow in the group is a choice and is not reported.
fn weaker_than_star(cx: &mut Ctx<'_>, groups: &[Group], offsets: &[usize]) {
    let Some(star) = groups.iter().find(|g| g.tokens.iter().any(|t| t == "*")) else { return };
    let samples: Vec<(&str, String)> = star
        .rules_src
        .iter()
        .filter(|(p, allow, _)| !allow && !p.is_empty())
        .map(|(p, _, _)| {
            let sample = p.replace('*', "");
            let sample = sample.strip_suffix('$').unwrap_or(&sample);
            let sample = if sample.starts_with('/') { sample.to_string() } else { format!("/{sample}") };
            (p.as_str(), crate::canonical::canonicalize(&sample).into_owned())
        })
        .filter(|(_, path)| star.rules.evaluate(path).is_some_and(|i| !star.rules.is_allow(i)))
        .collect();
    for (g, &at) in groups.iter().zip(offsets) {
        if g.tokens.iter().any(|t| t == "*") {
            continue;
        }
        let open: Vec<&str> =
            samples.iter().filter(|(_, path)| g.rules.evaluate(path).is_none()).map(|(p, _)| *p).collect();
        if open.is_empty() {
            continue;
        }
        let crawlers = quoted_list(&g.tokens, 5);
        let paths = quoted_list(&open, 3);
        let (these, may) =
            if g.tokens.len() == 1 { ("this crawler", "it may") } else { ("these crawlers", "they may") };
        cx.warn_at(
            at,
            Warning::WeakerThanStar,
            format!(
                "group `{}` ({crawlers}) has no rule for {paths}, which `*` disallows: a crawler obeys only the group naming it (RFC 9309 section 2.2.1), so {these} may fetch what unnamed crawlers may not; copy the disallow rules into this group, or allow the paths explicitly if {may} fetch them",
                g.name
            ),
        );
    }
}

/// Compiles one group, reporting its errors and warnings in the order of
/// its keys' checks; `None` when the group is left out because category
/// overrides emptied it. `seen` maps each token (lower-cased) to the offset
/// of the first group that took it.
pub(super) fn compile_group(
    cx: &mut Ctx<'_>,
    g: &Spanned<RawGroup>,
    explicit: &HashMap<String, Explicit>,
    seen: &mut HashMap<String, usize>,
) -> Option<Group> {
    let RawGroup {
        name,
        user_agents,
        categories,
        allow,
        disallow,
        crawl_delay,
        content_usage,
        app_directives,
        enforce,
        block_status,
        verify,
        on_spoofed,
        on_unverified,
        rate,
        burst,
        enforce_crawl_delay,
        rate_mode,
        rate_max_delay,
        price,
        prices,
        rates,
    } = g.get_ref();
    // The name is published as written: in the body of a 429, the
    // metrics' group label, the access log.
    if let Some(n) = name {
        if let Err(e) = validate::no_control("group.name", n.get_ref()) {
            cx.err(n, e);
        }
    }
    let mut tokens = GroupTokens::default();
    add_user_agents(cx, seen, &mut tokens, user_agents.as_deref().unwrap_or_default());
    let warned = cx.warnings.len();
    let overridden = expand_categories(
        cx,
        seen,
        explicit,
        &mut tokens,
        categories.as_deref().unwrap_or_default(),
        name.as_ref().map(|n| n.get_ref().as_str()),
        &RulesWritten::of(g.get_ref()),
    );
    let GroupTokens { tokens, in_group: _ } = tokens;
    if user_agents.as_ref().is_none_or(Vec::is_empty) && categories.as_ref().is_none_or(Vec::is_empty) {
        cx.err(g, "group: needs user_agents or categories");
    }
    // Every token of the categories is named explicitly elsewhere: a
    // group with no User-agent line cannot be published (its rules
    // would join the group above it in robots.txt).
    let empty_after_overrides = tokens.is_empty() && overridden > 0;
    if empty_after_overrides {
        // One warning says it all: the group is left out.
        let mut i = 0;
        cx.warnings.retain(|d| {
            i += 1;
            i <= warned || d.warning != Some(Warning::TokenLeavesCategory)
        });
        cx.warn(g, Warning::EmptyCategoryGroup, "group: every token of its categories is named in user_agents of another group, so this group is empty and left out of robots.txt");
    }
    let (rules_src, compiled) =
        compile_rules(cx, allow.as_deref().unwrap_or_default(), disallow.as_deref().unwrap_or_default());
    let written_delay = crawl_delay;
    let crawl_delay = compile_crawl_delay(cx, crawl_delay.as_ref());
    let limit = limits::compile_group_limit(
        cx,
        limits::GroupLimitKeys { rate, burst, enforce_crawl_delay, crawl_delay: written_delay.as_ref() },
        crawl_delay.as_deref(),
    );
    let path_limits = limits::compile_path_rates(cx, rates.as_deref().unwrap_or_default());
    let has_limit = limit.is_some() || !path_limits.is_empty();
    let rate_mode = limits::compile_rate_mode(cx, rate_mode.as_ref(), rate_max_delay.as_ref(), has_limit);
    let (cu, cu_set) = compile_content_usage(cx, content_usage.as_deref().unwrap_or_default());
    let cu_combined = cu
        .iter()
        .map(|(path, value)| {
            // An entry without a path applies to `/`: the same path.
            let key = path.as_deref().unwrap_or("/");
            let same = cu.iter().filter(|(p, _)| p.as_deref().unwrap_or("/") == key).map(|(_, v)| v.as_str());
            sf::combine_content_usage(same).unwrap_or_else(|| value.clone())
        })
        .collect();
    let is_star = tokens.iter().any(|t| t == "*");
    let ad = compile_app_directives(cx, app_directives.as_deref().unwrap_or_default(), is_star);
    let can_disallow = rules_src.iter().any(|(p, allow, _)| !allow && !p.is_empty());
    let enforce_mode = compile_enforce(cx, enforce.as_ref(), is_star, can_disallow, &tokens);
    let block_status = compile_block_status(cx, block_status.as_ref());
    let charge_at = enforce.as_ref().filter(|_| mode_is_charge(enforce_mode)).map(|e| e.span().start);
    let charge =
        crate::payment::compile::group_charge(cx, charge_at, price.as_ref(), prices.as_deref().unwrap_or_default());
    let verify_written = compile_verify(cx, verify.as_ref());
    // A charge group answers a bad or missing signature itself (400
    // InvalidSignature, StrongAuthRequired) and forwards only what a valid
    // signature pays for, so its claims stay in the group by default.
    let spoofed_default = if charge_at.is_some() { OnFailure::Log } else { OnFailure::Anonymous };
    let on_spoofed = compile_on_failure(cx, "on_spoofed", on_spoofed.as_ref(), spoofed_default);
    let on_unverified_written = on_unverified.is_some();
    let on_unverified_at = on_unverified.clone();
    let on_unverified = compile_on_failure(cx, "on_unverified", on_unverified.as_ref(), OnFailure::Log);
    // A challenge asks for a signature: the group must accept one.
    if let (OnFailure::Challenge, Some(at)) = (on_unverified, &on_unverified_at) {
        if !verify_written.is_some_and(|(m, _)| m.allows(Method::Signature)) {
            cx.err(at, "group.on_unverified = \"challenge\" asks for a Web Bot Auth signature: the group needs verify = \"signature\" (or \"any\")");
        }
    }
    if empty_after_overrides {
        return None;
    }
    let name = name.as_ref().map(|n| n.get_ref().clone()).or_else(|| tokens.first().cloned()).unwrap_or_default();
    Some(Group {
        name,
        line: cx.line(g),
        tokens,
        rules: RuleSet::new(compiled),
        rules_src,
        crawl_delay,
        content_usage: cu,
        content_usage_set: cu_set,
        content_usage_combined: cu_combined,
        app_directives: ad,
        enforce: enforce_mode,
        block_status,
        charge,
        origin: false,
        verify: VerifyMode::None,
        verify_written,
        on_spoofed,
        on_unverified,
        on_unverified_written,
        limit,
        accept_signature: None,
        rate_mode,
        class: None,
        path_limits,
    })
}

/// A rule as written: `(pattern, allow, line)`.
type RuleSource = (String, bool, usize);

/// Compiles the group's `allow` and `disallow` patterns into the rules as
/// written and `(compiled pattern, allow)`, both in file order (what
/// robots.txt renders); an invalid pattern is reported and left out.
fn compile_rules(
    cx: &mut Ctx<'_>,
    allow: &[Spanned<String>],
    disallow: &[Spanned<String>],
) -> (Vec<RuleSource>, Vec<(Pattern, bool)>) {
    let mut rules_src = Vec::new();
    let mut compiled = Vec::new();
    for (list, is_allow) in [(allow, true), (disallow, false)] {
        for p in list {
            match validate::rule(is_allow, p.get_ref()) {
                Ok(pat) => {
                    rules_src.push((p.get_ref().clone(), is_allow, cx.line(p)));
                    compiled.push((pat, is_allow));
                }
                Err(e) => cx.err(p, e),
            }
        }
    }
    // The same pattern in both lists: RFC 9309 section 2.2.2 lets the
    // allow win (equal length, the least restrictive rule).
    for d in disallow {
        if let Some(a) = allow.iter().find(|a| a.get_ref() == d.get_ref()) {
            cx.warn(
                d,
                Warning::AllowDisallowSame,
                format!(
                    "group: `{}` is both allowed (line {}) and disallowed here; the allow wins (RFC 9309 section 2.2.2: of equally long rules the least restrictive applies), so this disallow has no effect",
                    d.get_ref(),
                    cx.line(a)
                ),
            );
        }
    }
    // File order for rendering: sort by line, stable.
    let mut order: Vec<usize> = (0..rules_src.len()).collect();
    order.sort_by_key(|&i| rules_src[i].2);
    let rules_src: Vec<_> = order.iter().map(|&i| rules_src[i].clone()).collect();
    let compiled: Vec<_> = order.iter().map(|&i| compiled[i].clone()).collect();
    (rules_src, compiled)
}

/// The group's `crawl_delay` as robots.txt writes it; `None` when absent
/// or invalid (reported).
fn compile_crawl_delay(cx: &mut Ctx<'_>, crawl_delay: Option<&Spanned<toml::Value>>) -> Option<String> {
    crawl_delay.and_then(|d| match validate::crawl_delay_value(d.get_ref()) {
        Ok(v) => Some(v),
        Err(e) => {
            cx.err(d, e);
            None
        }
    })
}

/// The group's `content_usage` entries as `(path as written or None,
/// canonical preferences)` with the rule set that picks the entry for a
/// path (an entry without a path applies to `/`). Validation warnings are
/// reported next to each entry.
fn compile_content_usage(
    cx: &mut Ctx<'_>,
    content_usage: &[Spanned<String>],
) -> (Vec<(Option<String>, String)>, RuleSet) {
    let mut cu = Vec::new();
    for c in content_usage {
        match validate::content_usage(c.get_ref()) {
            Ok(v) => {
                for w in v.warnings {
                    cx.warn(c, Warning::ContentUsageVocabulary, w);
                }
                cu.push((v.path, v.value));
            }
            Err(e) => cx.err(c, e),
        }
    }
    let cu_set =
        RuleSet::new(cu.iter().map(|(p, _)| (Pattern::new_lenient(p.as_deref().unwrap_or("/")), true)).collect());
    (cu, cu_set)
}

/// The group's `app_directives` entries as `(path as written or None,
/// canonical list)`; `is_star` tells the validator the group is `*`'s.
fn compile_app_directives(
    cx: &mut Ctx<'_>,
    app_directives: &[Spanned<String>],
    is_star: bool,
) -> Vec<(Option<String>, String)> {
    let mut ad = Vec::new();
    for a in app_directives {
        match validate::app_directives(a.get_ref(), is_star) {
            Ok(v) => {
                for w in v.warnings {
                    cx.warn(a, Warning::AppDirectivesNotStar, w);
                }
                ad.push((v.path, v.value));
            }
            Err(e) => cx.err(a, e),
        }
    }
    ad
}

/// The group's `enforce` mode (`off` when absent), with the warnings for
/// a mode that cannot apply: on the `*` group (its requests name no policy
/// token, and such requests are never blocked nor recorded as violations),
/// in a group that disallows nothing (`can_disallow` false), and `block`
/// on robots.txt-only tokens, which no User-Agent header carries (one
/// warning per group).
fn compile_enforce(
    cx: &mut Ctx<'_>,
    enforce: Option<&Spanned<String>>,
    is_star: bool,
    can_disallow: bool,
    tokens: &[String],
) -> Enforce {
    let Some(e) = enforce else { return Enforce::Off };
    let mode = match e.get_ref().as_str() {
        "off" => Enforce::Off,
        "log" => Enforce::Log,
        "block" => Enforce::Block,
        "charge" => Enforce::Charge,
        other => {
            cx.err(e, format!("group.enforce must be off, log, block or charge, found `{other}`"));
            return Enforce::Off;
        }
    };
    if mode == Enforce::Off {
        return mode;
    }
    if mode == Enforce::Charge {
        if is_star {
            cx.err(e, "group.enforce = \"charge\" cannot apply to the `*` group: its requests name no crawler, and only a crawler proven by its signature can be charged; name the crawlers in a group of their own");
        }
        return mode;
    }
    let m = mode.as_str();
    if is_star {
        cx.warn(e, Warning::EnforceOnStar, format!("group.enforce: `{m}` on the `*` group has no effect: its requests name no policy token (browsers, unknown clients), and those are never blocked nor recorded as violations; name the crawlers in a group of their own to enforce on them"));
    } else if !can_disallow {
        cx.warn(e, Warning::EnforceWithoutRules, format!("group.enforce: `{m}` has nothing to act on: the group has no disallow rule; add disallow rules or remove enforce"));
    }
    if mode == Enforce::Block {
        let robots_only: Vec<String> =
            tokens.iter().filter(|t| catalog::is_robots_only(t)).map(|t| format!("`{t}`")).collect();
        match robots_only.as_slice() {
            [] => {}
            [one] => cx.warn(e, Warning::RobotsOnlyToken, format!("group.enforce: {one} never appears in a User-Agent header (a robots.txt-only token): robots.txt publishes it, but `block` cannot apply to it")),
            many => cx.warn(e, Warning::RobotsOnlyToken, format!("group.enforce: {} never appear in a User-Agent header (robots.txt-only tokens): robots.txt publishes them, but `block` cannot apply to them", many.join(", "))),
        }
    }
    mode
}

/// Whether a compiled `enforce` charges.
fn mode_is_charge(mode: Enforce) -> bool {
    mode == Enforce::Charge
}

/// The group's `block_status` (403 when absent or invalid): a 4xx or 5xx
/// status.
fn compile_block_status(cx: &mut Ctx<'_>, block_status: Option<&Spanned<i64>>) -> u16 {
    match block_status {
        None => 403,
        Some(s) => match u16::try_from(*s.get_ref()) {
            Ok(v) if (400..=599).contains(&v) => v,
            _ => {
                cx.err(s, format!("group.block_status must be a 4xx or 5xx status, found {}", s.get_ref()));
                403
            }
        },
    }
}
