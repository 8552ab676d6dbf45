//! Comparing robots rules: the keys rules are compared by, whether a set
//! of rules covers another, reading a `content` attribute. The vocabulary
//! itself (which rules restrict, which page rule contradicts which policy
//! rule, how a rule splits into name and value) is the policy crate's
//! `robots_tag` module.

pub(crate) use crawlgate_policy::robots_tag::{contradicts_split, RESTRICTIVE_RULES};

use crate::MAX_RULE_LEN;

/// `rule`, cut to at most [`crate::MAX_RULE_LEN`] bytes at a character boundary.
pub(crate) fn bounded_rule(rule: &str) -> &str {
    if rule.len() <= MAX_RULE_LEN {
        return rule;
    }
    let mut end = MAX_RULE_LEN;
    while !rule.is_char_boundary(end) {
        end -= 1;
    }
    &rule[..end]
}

/// `("noindex", "")`, `("max-snippet", "50")`: an empty value counts as
/// none.
pub(crate) fn split_rule(rule: &str) -> (&str, &str) {
    let (name, value) = crawlgate_policy::robots_tag::split_rule(rule);
    (name, value.unwrap_or(""))
}

/// The rule as compared: `max-snippet : 50` and `max-snippet:50` agree.
pub(crate) fn rule_key(rule: &str) -> String {
    match split_rule(rule) {
        (name, "") => name.to_string(),
        (name, value) => format!("{name}:{value}"),
    }
}

/// Whether `key` (a [`rule_key`]) is the key of the rule split into
/// `(name, value)` by [`split_rule`], without building the rule's key.
pub(crate) fn key_matches(key: &str, (name, value): (&str, &str)) -> bool {
    if value.is_empty() {
        return key == name;
    }
    key.len() == name.len() + 1 + value.len()
        && key.starts_with(name)
        && key.as_bytes()[name.len()] == b':'
        && key.ends_with(value)
}

/// Whether a set of rules (as [`rule_key`]s) includes `rule`; `none` stands
/// for `noindex, nofollow` and the other way round.
pub(crate) fn covers(keys: &[String], rule: &str) -> bool {
    covers_split(keys, split_rule(rule))
}

/// [`covers`] on a rule split already.
pub(crate) fn covers_split(keys: &[String], split: (&str, &str)) -> bool {
    let has = |r: &str| keys.iter().any(|k| k == r);
    let flag = |f: &str| split.1.is_empty() && split.0 == f;
    keys.iter().any(|k| key_matches(k, split))
        || ((flag("noindex") || flag("nofollow")) && has("none"))
        || (flag("none") && has("noindex") && has("nofollow"))
}

/// The rules of a `content` attribute already lowercased, in order. An
/// iterator, not a list: a `content` can hold millions of rules, and a
/// `String` for each would cost many times the attribute's size.
pub(crate) fn content_rules(lower: &str) -> impl Iterator<Item = &str> + Clone {
    lower.split(',').map(str::trim).filter(|r| !r.is_empty())
}

/// A set of rules in a form that compares equal regardless of order, case,
/// spacing and repetition.
pub(crate) fn rule_set(rules: &[String]) -> Vec<String> {
    let mut v: Vec<String> = rules.iter().map(|r| rule_key(r)).collect();
    v.sort();
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crawlgate_policy::robots_tag::contradicts;

    fn is_key_of(key: &str, rule: &str) -> bool {
        key_matches(key, split_rule(rule))
    }

    /// The rules of a `content` attribute, lowercase, in order.
    fn parse_content(content: &str) -> Vec<String> {
        content_rules(&content.to_ascii_lowercase()).map(str::to_owned).collect()
    }

    #[test]
    fn rules_compare_loosely() {
        assert!(contradicts("noindex", "all"));
        assert!(contradicts("nosnippet", "max-snippet:-1"));
        assert!(!contradicts("nosnippet", "max-snippet : 0"));
        assert!(covers(&["none".into()], "nofollow"));
        assert!(covers(&["noindex".into(), "nofollow".into()], "none"));
        assert_eq!(
            rule_set(&parse_content(" NoIndex ,  NOFOLLOW,noindex")),
            vec!["nofollow".to_string(), "noindex".to_string()]
        );
        assert_eq!(rule_key("max-snippet : 50"), "max-snippet:50");
        assert_eq!(rule_key("noindex:"), "noindex");
        assert_eq!(bounded_rule(&"é".repeat(100)).len(), MAX_RULE_LEN);
        for (key, rule, want) in [
            ("max-snippet:50", "max-snippet : 50", true),
            ("max-snippet:50", "max-snippet=50", true),
            ("max-snippet:50", "max-snippet:5", false),
            ("max-snippet:50", "max-snippet:500", false),
            ("max-snippet:50", "max-snippet", false),
            ("noindex", "noindex:", true),
            ("noindex", "noindex", true),
            ("noindex", "noindexx", false),
            ("none", "noindex", false),
        ] {
            assert_eq!(is_key_of(key, rule), want, "{key} {rule}");
            assert_eq!(is_key_of(key, rule), rule_key(rule) == key, "{key} {rule}");
        }
        assert!(covers(&["max-snippet:50".into()], "MAX-SNIPPET:50".to_ascii_lowercase().as_str()));
        assert!(!covers(&["none".into()], "noindex:1"));
        assert!(!covers(&["noindex".into()], "none"));
    }
}
