//! `[[robots_tag]]`: the URL-level `Robots-Tag` / `X-Robots-Tag` rules and
//! their HTML rewrite mode.

use toml::Spanned;

use super::ctx::Ctx;
use crate::pattern::Pattern;
use crate::policy::{HtmlMode, TagEntry};
use crate::raw::RawRobotsTag;
use crate::robots_tag::TagRules;
use crate::validate;

/// The `[[robots_tag]]` entries in file order; an entry whose path is
/// invalid is reported and left out.
pub(super) fn compile_tags(cx: &mut Ctx<'_>, raw: &[Spanned<RawRobotsTag>]) -> Vec<TagEntry> {
    let mut out = Vec::new();
    for t in raw {
        let RawRobotsTag { path, agents, rules, header, html } = t.get_ref();
        let pattern = match Pattern::new(path.get_ref()) {
            Ok(p) => p,
            Err(e) => {
                cx.err(path, format!("robots_tag.path: {e}"));
                continue;
            }
        };
        let agents: Vec<String> = match agents {
            None => vec!["*".to_string()],
            Some(list) => list
                .iter()
                .filter(|a| match validate::agent_token("robots_tag.agents", a.get_ref()) {
                    Ok(()) => true,
                    Err(e) => {
                        cx.err(a, e);
                        false
                    }
                })
                .map(|a| a.get_ref().clone())
                .collect(),
        };
        let mut ok_rules = Vec::new();
        for r in rules {
            match TagRules::new(vec![("*".to_string(), vec![r.get_ref().clone()])]) {
                Ok(_) => ok_rules.push(r.get_ref().clone()),
                Err(e) => cx.err(r, format!("robots_tag.rules: {e}")),
            }
        }
        if rules.is_empty() {
            cx.err(t, "robots_tag.rules: at least one rule is needed");
        }
        for a in &agents {
            if a != "*" {
                if let Err(e) = TagRules::new(vec![(a.clone(), vec!["noindex".to_string()])]) {
                    cx.err(t, format!("robots_tag.agents: {e}"));
                }
            }
        }
        let html = match html {
            None => None,
            Some(h) => match h.get_ref().as_str() {
                "off" => Some(None),
                "inject" => Some(Some(HtmlMode::Inject)),
                "audit" => Some(Some(HtmlMode::Audit)),
                "enforce" => Some(Some(HtmlMode::Enforce)),
                other => {
                    cx.err(h, format!("robots_tag.html must be off, inject, audit or enforce, found `{other}`"));
                    None
                }
            },
        };
        out.push(TagEntry {
            path: path.get_ref().clone(),
            pattern,
            agents,
            rules: ok_rules,
            header: header.unwrap_or(true),
            html,
        });
    }
    out
}
