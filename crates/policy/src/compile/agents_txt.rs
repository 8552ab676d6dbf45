//! `[agents_txt]`: the rules of the served agents.txt, each checked by its
//! verifier.

use toml::Spanned;

use super::ctx::Ctx;
use crate::agents_txt::{self, AgentsRule};
use crate::raw::RawAgentsTxt;
use crate::validate;

/// The number of agents.txt rules and the rendered file; `(0, None)`
/// without the table or with `enabled = false`.
pub(super) fn compile_agents_txt(cx: &mut Ctx<'_>, raw: Option<&Spanned<RawAgentsTxt>>) -> (usize, Option<String>) {
    let Some(raw) = raw else { return (0, None) };
    let RawAgentsTxt { enabled, rules } = raw.get_ref();
    let mut compiled = Vec::new();
    for r in rules.iter().flatten() {
        let rule = r.get_ref();
        let allow = match rule.action.get_ref().to_ascii_lowercase().as_str() {
            "allow" => true,
            "disallow" => false,
            other => {
                cx.err(
                    &rule.action,
                    format!("agents_txt.rules.action must be allow or disallow, found `{}`", validate::shown(other)),
                );
                continue;
            }
        };
        let path = rule.path.get_ref();
        if !path.starts_with('/') || path.contains(char::is_whitespace) {
            cx.err(
                &rule.path,
                format!(
                    "agents_txt.rules.path must start with `/` and contain no whitespace (write %20), found `{}`",
                    validate::shown(path)
                ),
            );
            continue;
        }
        // The verifier below refuses them too, but at the rule and with the
        // character unescaped in the message: a parameter's own position.
        let mut params_ok = true;
        for (k, v) in rule.params.iter().flatten() {
            let e = validate::no_control("agents_txt.rules.params", k)
                .and_then(|()| validate::no_control(&format!("agents_txt.rules.params.{k}"), v.get_ref()));
            if let Err(e) = e {
                cx.err(v, e);
                params_ok = false;
            }
        }
        if !params_ok {
            continue;
        }
        let params = rule.params.iter().flatten().map(|(k, v)| (k.clone(), v.get_ref().clone())).collect();
        let candidate = AgentsRule { path: rule.path.get_ref().clone(), allow, params };
        // Check each rule alone so the error points at the rule.
        match agents_txt::render(&[], std::slice::from_ref(&candidate)) {
            Ok(_) => compiled.push(candidate),
            Err(e) => cx.err(
                r,
                format!(
                    "agents_txt.rules: this rule would make agents.txt fail its verifier: {}",
                    validate::shown(&e.to_string())
                ),
            ),
        }
    }
    if !enabled.unwrap_or(true) {
        return (0, None);
    }
    let count = compiled.len();
    match agents_txt::render(&[("version", "1.0"), ("generated-by", "crawlgate")], &compiled) {
        Ok(text) => (count, Some(text)),
        Err(e) => {
            cx.err(raw, format!("agents_txt: {e}"));
            (0, None)
        }
    }
}
