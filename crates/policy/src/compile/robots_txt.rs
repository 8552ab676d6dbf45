//! `[robots_txt]`: what robots.txt publishes besides the groups (sitemaps,
//! `Content-Signal`, ACAP, the license) and the origin's own robots.txt
//! (`origin*`).

use std::time::Duration;

use toml::Spanned;

use super::ctx::Ctx;
use super::hosts::valid_host_maybe_port;
use crate::diag::Warning;
use crate::policy::{Group, RobotsTxtExtras};
use crate::raw::RawRobotsTxt;
use crate::settings::{OriginRobotsMode, OriginRobotsSettings};
use crate::sf;
use crate::validate;

/// Where the robots.txt `Content-Signal` comes from.
pub(super) enum SignalSource {
    /// No `content_signal` key.
    None,
    /// Written in the policy (the value as published, the key's offset).
    Written(String, usize),
    /// `content_signal = "derive"` (the key's offset).
    Derive(usize),
}

/// `[robots_txt]` but its origin keys: the `max-age` of the served files,
/// the extras robots.txt publishes, and where its `Content-Signal` comes
/// from.
pub(super) fn compile_robots_txt(
    cx: &mut Ctx<'_>,
    raw: Option<&Spanned<RawRobotsTxt>>,
) -> (Duration, RobotsTxtExtras, SignalSource) {
    let mut extras = RobotsTxtExtras::default();
    let default_age = Duration::from_secs(3600);
    let Some(raw) = raw else { return (default_age, extras, SignalSource::None) };
    // The origin keys are compiled by `compile_robots_origin`.
    let RawRobotsTxt {
        sitemaps,
        cache_max_age,
        content_signal,
        acap,
        license,
        origin: _,
        origin_refresh: _,
        origin_timeout: _,
        origin_host: _,
        origin_max_groups: _,
    } = raw.get_ref();
    for s in sitemaps.iter().flatten() {
        match validate::sitemap(s.get_ref()) {
            Ok(()) => extras.sitemaps.push(s.get_ref().clone()),
            Err(e) => cx.err(s, e),
        }
    }
    let age = cx.duration("robots_txt.cache_max_age", cache_max_age.as_ref(), default_age);
    let mut signal = SignalSource::None;
    if let Some(cs) = content_signal {
        if cs.get_ref() == "derive" {
            signal = SignalSource::Derive(cs.span().start);
        } else {
            match validate::content_signal(cs.get_ref()) {
                Ok(v) => signal = SignalSource::Written(v, cs.span().start),
                Err(e)
                    if !cs.get_ref().contains('=') && validate::edit_distance(cs.get_ref().trim(), "derive") <= 2 =>
                {
                    cx.err(
                        cs,
                        format!("{e}; did you mean \"derive\" (the line derived from the `*` group's Content-Usage)?"),
                    )
                }
                Err(e) => cx.err(cs, e),
            }
        }
    }
    extras.acap = acap.unwrap_or(false);
    if let Some(l) = license {
        match validate::license(l.get_ref()) {
            Ok(()) => extras.license = Some(l.get_ref().clone()),
            Err(e) => cx.err(l, e),
        }
    }
    (age, extras, signal)
}

/// What the `*` group's Content-Usage says for the whole site: its entries
/// without a path or for `/` (or `/*`), combined with `n` winning.
fn site_content_usage(star: &Group) -> Option<String> {
    let root = star.content_usage.iter().filter(|(p, _)| matches!(p.as_deref(), None | Some("/") | Some("/*")));
    sf::combine_content_usage(root.map(|(_, v)| v.as_str()))
}

/// The robots.txt `Content-Signal` value: as written (with a warning where
/// it says otherwise than the `*` group's Content-Usage for the whole
/// site), or derived from that Content-Usage.
pub(super) fn content_signal(cx: &mut Ctx<'_>, source: SignalSource, star: Option<&Group>) -> Option<String> {
    let usage = star.and_then(|g| site_content_usage(g).map(|u| (u, g.line)));
    match source {
        SignalSource::None => None,
        SignalSource::Derive(at) => {
            let derived = usage.as_ref().and_then(|(u, _)| sf::content_signal_from_usage(u));
            if derived.is_none() {
                cx.warn_at(at, Warning::ContentSignalUnderived, "robots_txt.content_signal = \"derive\": the `*` group states no train-ai, ai-use or search preference for the whole site (a content_usage without a path or for `/`), so robots.txt has no Content-Signal line");
            }
            derived
        }
        SignalSource::Written(value, at) => {
            if let Some((u, line)) = &usage {
                // `u` is canonical: `label=y, label=n`.
                let usage_pairs: Vec<(&str, bool)> =
                    u.split(", ").filter_map(|kv| kv.split_once('=').map(|(k, v)| (k, v == "y"))).collect();
                let mut ours = Vec::new();
                let mut theirs = Vec::new();
                for (key, allow) in validate::content_signal_pairs(&value) {
                    let Some((_, label)) = sf::CONTENT_SIGNAL_KEYS.iter().find(|(k, _)| *k == key) else { continue };
                    if let Some((_, a)) = usage_pairs.iter().find(|(l, _)| l == label) {
                        if *a != allow {
                            ours.push(format!("{key}={}", if allow { "yes" } else { "no" }));
                            theirs.push(format!("{label}={}", if *a { "y" } else { "n" }));
                        }
                    }
                }
                if !ours.is_empty() {
                    cx.warn_at(
                        at, Warning::ContentSignalMismatch,
                        format!(
                            "robots_txt.content_signal says {} but the `*` group's content_usage (group at line {line}) says {}; crawlers reading both get contradicting preferences (content_signal = \"derive\" publishes the group's)",
                            ours.join(", "),
                            theirs.join(", ")
                        ),
                    );
                }
            }
            signal_use_conflicts(cx, &value, at, usage.as_ref());
            Some(value)
        }
    }
}

/// Warns when a written Content-Signal's `use=` level contradicts what
/// the same line says with `ai-input` / `ai-train`, or what the `*`
/// group's site-wide Content-Usage says with `ai-use` / `train-ai`
/// ([`sf::SignalUse::contradictions`]).
fn signal_use_conflicts(cx: &mut Ctx<'_>, value: &str, at: usize, usage: Option<&(String, usize)>) {
    let Some(level) = validate::content_signal_use(value) else { return };
    let own = validate::content_signal_pairs(value);
    let own_of = |key: &str| own.iter().find(|(k, _)| *k == key).map(|(_, a)| *a);
    let mut found: Vec<String> = Vec::new();
    let own: Vec<String> = level
        .contradictions(own_of("ai-train"), own_of("ai-input"))
        .into_iter()
        .map(|label| {
            let (l, v) = label.split_once('=').unwrap_or((label, ""));
            let key = sf::CONTENT_SIGNAL_KEYS.iter().find(|(_, lab)| *lab == l).map_or(l, |(k, _)| *k);
            format!("{key}={}", if v == "y" { "yes" } else { "no" })
        })
        .collect();
    if !own.is_empty() {
        found.push(format!("{} (this line)", own.join(", ")));
    }
    if let Some((u, line)) = usage {
        let pairs: Vec<(&str, bool)> =
            u.split(", ").filter_map(|kv| kv.split_once('=').map(|(k, v)| (k, v == "y"))).collect();
        let of = |label: &str| pairs.iter().find(|(l, _)| *l == label).map(|(_, a)| *a);
        let theirs = level.contradictions(of("train-ai"), of("ai-use"));
        if !theirs.is_empty() {
            found.push(format!("{} (the `*` group's content_usage, group at line {line})", theirs.join(", ")));
        }
    }
    if !found.is_empty() {
        cx.warn_at(
            at,
            Warning::ContentSignalUseConflict,
            format!(
                "robots_txt.content_signal: use={} contradicts {}; use=immediate and use=reference grant AI use without training, use=full grants training too, and no level fits ai-use=n",
                level.as_str(),
                found.join(" and ")
            ),
        );
    }
}

/// `[robots_txt] origin`, `origin_refresh`, `origin_timeout` and
/// `origin_host`: whether and how the proxy fetches the origin's own
/// robots.txt to merge it.
pub(super) fn compile_robots_origin(cx: &mut Ctx<'_>, raw: Option<&Spanned<RawRobotsTxt>>) -> OriginRobotsSettings {
    let mut o = OriginRobotsSettings {
        mode: OriginRobotsMode::Ignore,
        refresh: Duration::from_secs(600),
        timeout: Duration::from_secs(5),
        host: None,
        max_groups: 500,
    };
    let Some(raw) = raw else { return o };
    // The other keys are compiled by `compile_robots_txt`.
    let RawRobotsTxt { origin, origin_refresh, origin_timeout, origin_host, origin_max_groups, .. } = raw.get_ref();
    if let Some(n) = origin_max_groups {
        match usize::try_from(*n.get_ref()) {
            Ok(u) if u <= 100_000 => o.max_groups = u,
            _ => cx.err(n, format!("robots_txt.origin_max_groups must be between 0 and 100000, found {}", n.get_ref())),
        }
    }
    if let Some(m) = origin {
        match m.get_ref().as_str() {
            "ignore" => o.mode = OriginRobotsMode::Ignore,
            "merge" => o.mode = OriginRobotsMode::Merge,
            other => {
                let hint = crate::validate::closest(other, ["ignore", "merge"], 2)
                    .map_or(String::new(), |c| format!("; did you mean `{c}`?"));
                cx.err(m, format!("robots_txt.origin must be ignore or merge, found `{other}`{hint}"))
            }
        }
    }
    o.refresh = cx.positive_duration("robots_txt.origin_refresh", origin_refresh, o.refresh);
    o.timeout = cx.positive_duration("robots_txt.origin_timeout", origin_timeout, o.timeout);
    if let Some(h) = origin_host {
        let v = h.get_ref();
        if !valid_host_maybe_port(v) {
            cx.err(h, format!("robots_txt.origin_host must be a host or host:port, found `{}`", v.escape_debug()));
        } else {
            o.host = Some(v.clone());
        }
    }
    if o.mode == OriginRobotsMode::Ignore {
        for key in
            [("origin_refresh", origin_refresh), ("origin_timeout", origin_timeout), ("origin_host", origin_host)]
        {
            if let (name, Some(v)) = key {
                cx.warn(
                    v,
                    Warning::OriginKeyUnused,
                    format!("robots_txt.{name} has no effect unless robots_txt.origin = \"merge\""),
                );
            }
        }
    }
    o
}
