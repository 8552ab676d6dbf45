//! Structured-field values in the policy (RFC 9651 via `sfv`): the
//! `App-Directives` list (draft-nottingham-plan-b) and the AIPREF `Content-Usage`
//! dictionary (draft-ietf-aipref-vocab-08), and its mapping onto
//! Cloudflare's Content Signals Policy (`Content-Signal` in robots.txt).

use sfv::{BareItem, Dictionary, FieldType, List, ListEntry, Parser};

/// The AIPREF vocabulary's category labels (draft-ietf-aipref-vocab-08
/// section 3: AI training, AI use, search).
pub const KNOWN_CATEGORIES: &[&str] = &["train-ai", "ai-use", "search"];

/// Labels of earlier AIPREF vocabulary drafts that draft-ietf-aipref-vocab-08
/// no longer defines: receivers ignore them like any unknown label.
pub const DROPPED_CATEGORIES: &[&str] = &["train-genai", "all", "bots", "ai-output", "tdm"];

/// The Content Signals keys and the AIPREF labels they correspond to, in
/// the order `Content-Signal` lists them.
pub const CONTENT_SIGNAL_KEYS: [(&str, &str); 3] =
    [("search", "search"), ("ai-input", "ai-use"), ("ai-train", "train-ai")];

/// Why a structured-field value is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SfError {
    /// Not a valid RFC 9651 List.
    #[error("invalid structured-field list `{value}`: {reason}")]
    BadList {
        /// The value.
        value: String,
        /// The parser's reason.
        reason: String,
    },
    /// A list member that is not a Token (an inner list, a string...).
    #[error("App-Directives member `{0}` must be a token naming an application")]
    NotToken(String),
    /// Not a valid RFC 9651 Dictionary.
    #[error("invalid structured-field dictionary `{value}`: {reason}")]
    BadDictionary {
        /// The value.
        value: String,
        /// The parser's reason.
        reason: String,
    },
    /// A preference other than the tokens `y` / `n`.
    #[error("content_usage value for `{key}` must be y or n, found `{found}`")]
    BadPreference {
        /// The category.
        key: String,
        /// What was found.
        found: String,
    },
    /// An empty value.
    #[error("value is empty")]
    Empty,
}

/// A validated Content-Usage preference value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentUsage {
    /// Canonical serialisation, e.g. `train-ai=n, search=y`.
    pub canonical: String,
    /// Keys outside [`KNOWN_CATEGORIES`] (kept; receivers ignore them).
    pub unknown_keys: Vec<String>,
}

/// Validates an `App-Directives` list (after its optional path): a List of
/// Tokens with parameters. Returns the canonical serialisation.
pub fn parse_app_directives(list: &str) -> Result<String, SfError> {
    if list.trim().is_empty() {
        return Err(SfError::Empty);
    }
    let parsed: List =
        Parser::new(list).parse().map_err(|e| SfError::BadList { value: list.to_string(), reason: e.to_string() })?;
    for entry in &parsed {
        match entry {
            ListEntry::Item(item) if matches!(item.bare_item, BareItem::Token(_)) => {}
            other => return Err(SfError::NotToken(format!("{other:?}"))),
        }
    }
    parsed.serialize().ok_or(SfError::Empty)
}

/// Validates a `Content-Usage` preference value: a Dictionary whose values
/// are the Tokens `y` or `n`. Returns the canonical serialisation and the
/// keys outside the vocabulary.
pub fn parse_content_usage(prefs: &str) -> Result<ContentUsage, SfError> {
    if prefs.trim().is_empty() {
        return Err(SfError::Empty);
    }
    let dict: Dictionary = Parser::new(prefs)
        .parse()
        .map_err(|e| SfError::BadDictionary { value: prefs.to_string(), reason: e.to_string() })?;
    let mut unknown_keys = Vec::new();
    for (key, value) in &dict {
        let ok = match value {
            ListEntry::Item(item) => item.bare_item.as_token().is_some_and(|t| t.as_str() == "y" || t.as_str() == "n"),
            ListEntry::InnerList(_) => false,
        };
        if !ok {
            let found = match value {
                ListEntry::Item(item) => match &item.bare_item {
                    BareItem::Boolean(true) => "?1 (a bare key)".to_string(),
                    BareItem::Token(t) => t.as_str().to_string(),
                    other => format!("{other:?}"),
                },
                ListEntry::InnerList(_) => "an inner list".to_string(),
            };
            return Err(SfError::BadPreference { key: key.as_str().to_string(), found });
        }
        if !KNOWN_CATEGORIES.contains(&key.as_str()) {
            unknown_keys.push(key.as_str().to_string());
        }
    }
    Ok(ContentUsage { canonical: dict.serialize().ok_or(SfError::Empty)?, unknown_keys })
}

/// The `(label, y or n)` pairs of a Content-Usage value already validated
/// by [`parse_content_usage`] (the last value of a repeated key, as RFC 9651
/// parsing keeps it).
fn preferences(prefs: &str) -> Vec<(String, bool)> {
    let Ok(dict) = Parser::new(prefs).parse::<Dictionary>() else { return Vec::new() };
    dict.iter()
        .filter_map(|(k, v)| match v {
            ListEntry::Item(item) => item.bare_item.as_token().map(|t| (k.as_str().to_string(), t.as_str() == "y")),
            ListEntry::InnerList(_) => None,
        })
        .collect()
}

/// Combines several Content-Usage statements that apply to the same
/// content (draft-ietf-aipref-vocab-08, "Combining Preferences"): for each
/// label, `n` if any statement says `n`, else `y`. Labels keep the order
/// of their first appearance; the result is canonical. `None` when no
/// statement states anything.
pub fn combine_content_usage<'a>(statements: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let mut combined: Vec<(String, bool)> = Vec::new();
    for s in statements {
        for (label, allow) in preferences(s) {
            match combined.iter_mut().find(|(l, _)| *l == label) {
                Some((_, a)) => *a = *a && allow,
                None => combined.push((label, allow)),
            }
        }
    }
    if combined.is_empty() {
        return None;
    }
    Some(combined.iter().map(|(l, a)| format!("{l}={}", if *a { "y" } else { "n" })).collect::<Vec<_>>().join(", "))
}

/// A Content-Signal `use=` level: how far an AI product may use the
/// content, narrowest first. `immediate`: only to answer the request at
/// hand; `reference`: also kept to be referred to and cited later;
/// `full`: any use, training included.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SignalUse {
    /// `use=immediate`.
    Immediate,
    /// `use=reference`.
    Reference,
    /// `use=full`.
    Full,
}

impl SignalUse {
    /// The level `value` names, if any.
    pub fn parse(value: &str) -> Option<SignalUse> {
        match value {
            "immediate" => Some(SignalUse::Immediate),
            "reference" => Some(SignalUse::Reference),
            "full" => Some(SignalUse::Full),
            _ => None,
        }
    }

    /// As written in a Content-Signal line.
    pub fn as_str(self) -> &'static str {
        match self {
            SignalUse::Immediate => "immediate",
            SignalUse::Reference => "reference",
            SignalUse::Full => "full",
        }
    }

    /// What contradicts this level in `train-ai` / `ai-use` preferences
    /// (Content-Usage labels, `true` for `y`): `ai-use=n` contradicts any
    /// level (a level grants some use); `train-ai=n` contradicts `full`,
    /// and `train-ai=y` a level below `full` (it allows training, which
    /// only `full` covers). The contradicting `label=y|n` statements.
    pub fn contradictions(self, train_ai: Option<bool>, ai_use: Option<bool>) -> Vec<&'static str> {
        let mut out = Vec::new();
        if ai_use == Some(false) {
            out.push("ai-use=n");
        }
        match (self, train_ai) {
            (SignalUse::Full, Some(false)) => out.push("train-ai=n"),
            (SignalUse::Immediate | SignalUse::Reference, Some(true)) => out.push("train-ai=y"),
            _ => {}
        }
        out
    }
}

/// The `use=` level a Content-Usage value implies, where one is
/// defensible: `full` when `train-ai=y` and `ai-use` is not `n` (training
/// allowed is every use allowed). Nothing else maps: `ai-use=n` is said by
/// `ai-input=no` (no level means "none"), and `ai-use=y` without training
/// does not say whether the content may be kept after the answer, which
/// is what separates `immediate` from `reference`.
pub fn signal_use_from_usage(prefs: &str) -> Option<SignalUse> {
    let prefs = preferences(prefs);
    let get = |label: &str| prefs.iter().find(|(l, _)| l == label).map(|(_, a)| *a);
    (get("train-ai") == Some(true) && get("ai-use") != Some(false)).then_some(SignalUse::Full)
}

/// The `Content-Signal` value (`search=yes, ai-input=no, ai-train=no`)
/// that says what a Content-Usage value says: `train-ai` is `ai-train`,
/// `ai-use` is `ai-input`, `search` is `search`, and `use=` as
/// [`signal_use_from_usage`] maps it; other labels have no counterpart.
/// `None` when none of the three is stated.
pub fn content_signal_from_usage(prefs: &str) -> Option<String> {
    let parsed = preferences(prefs);
    let mut pairs: Vec<String> = CONTENT_SIGNAL_KEYS
        .iter()
        .filter_map(|(signal, label)| {
            parsed.iter().find(|(l, _)| l == label).map(|(_, a)| format!("{signal}={}", if *a { "yes" } else { "no" }))
        })
        .collect();
    if pairs.is_empty() {
        return None;
    }
    if let Some(u) = signal_use_from_usage(prefs) {
        pairs.push(format!("use={}", u.as_str()));
    }
    Some(pairs.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn app_directives() {
        assert_eq!(parse_app_directives("examplesearch;widgets=?0").as_deref(), Ok("examplesearch;widgets=?0"));
        assert_eq!(parse_app_directives("a,  b;x=1").as_deref(), Ok("a, b;x=1"));
        assert!(matches!(parse_app_directives("9bot"), Err(SfError::BadList { .. })));
        assert!(matches!(parse_app_directives("\"str\""), Err(SfError::NotToken(_))));
        assert!(matches!(parse_app_directives("(a b)"), Err(SfError::NotToken(_))));
        assert_eq!(parse_app_directives(" "), Err(SfError::Empty));
    }

    #[test]
    fn content_usage() {
        let cu = parse_content_usage("train-ai=n,search=y").unwrap();
        assert_eq!(cu.canonical, "train-ai=n, search=y");
        assert!(cu.unknown_keys.is_empty());
        assert_eq!(parse_content_usage("future-use=n").map(|c| c.unknown_keys), Ok(vec!["future-use".to_string()]));
        assert_eq!(
            parse_content_usage("train-ai=maybe").map_err(|e| e.to_string()),
            Err("content_usage value for `train-ai` must be y or n, found `maybe`".to_string())
        );
        assert!(matches!(parse_content_usage("train-ai"), Err(SfError::BadPreference { .. })));
        assert!(matches!(parse_content_usage("Train-AI=n"), Err(SfError::BadDictionary { .. })));
        assert!(parse_content_usage("train-ai=n, ai-use=y, search=y").unwrap().unknown_keys.is_empty());
        assert_eq!(parse_content_usage("tdm=n").map(|c| c.unknown_keys), Ok(vec!["tdm".to_string()]));
    }

    #[test]
    fn n_wins_when_statements_combine() {
        assert_eq!(
            combine_content_usage(["train-ai=y, search=y", "train-ai=n", "ai-use=y"]).as_deref(),
            Some("train-ai=n, search=y, ai-use=y")
        );
        assert_eq!(combine_content_usage(["search=n", "search=y"]).as_deref(), Some("search=n"));
        assert_eq!(combine_content_usage(Vec::<&str>::new()), None);
    }

    #[test]
    fn content_signal_mapping() {
        assert_eq!(
            content_signal_from_usage("train-ai=n, ai-use=y, search=y, foo=n").as_deref(),
            Some("search=yes, ai-input=yes, ai-train=no")
        );
        assert_eq!(content_signal_from_usage("train-ai=n").as_deref(), Some("ai-train=no"));
        assert_eq!(content_signal_from_usage("foo=n"), None);
        // use=: full only where training is allowed and AI use is not refused.
        assert_eq!(
            content_signal_from_usage("train-ai=y, ai-use=y").as_deref(),
            Some("ai-input=yes, ai-train=yes, use=full")
        );
        assert_eq!(content_signal_from_usage("train-ai=y").as_deref(), Some("ai-train=yes, use=full"));
        assert_eq!(content_signal_from_usage("train-ai=y, ai-use=n").as_deref(), Some("ai-input=no, ai-train=yes"));
        assert_eq!(content_signal_from_usage("ai-use=y, train-ai=n").as_deref(), Some("ai-input=yes, ai-train=no"));
    }

    #[test]
    fn use_levels_and_their_contradictions() {
        use SignalUse::{Full, Immediate, Reference};
        assert!(Immediate < Reference && Reference < Full);
        assert_eq!(
            ["immediate", "reference", "full", "all"].map(SignalUse::parse),
            [Some(Immediate), Some(Reference), Some(Full), None]
        );
        assert_eq!(Full.contradictions(Some(false), Some(false)), ["ai-use=n", "train-ai=n"]);
        assert_eq!(Full.contradictions(Some(true), Some(true)), Vec::<&str>::new());
        assert_eq!(Reference.contradictions(Some(true), None), ["train-ai=y"]);
        assert_eq!(Reference.contradictions(Some(false), Some(true)), Vec::<&str>::new());
        assert_eq!(Immediate.contradictions(None, Some(false)), ["ai-use=n"]);
        assert_eq!(Immediate.contradictions(None, None), Vec::<&str>::new());
    }
}
