//! Purpose classes (`[classes]`): a policy for every catalog crawler of a
//! purpose in one line (`training = "block"`), as Cloudflare made Search,
//! Agent and Training the unit of a policy in 2026. A class applies to
//! the crawlers of its categories that no `[[group]]` names (in
//! `user_agents` or through `categories`); it compiles into a group of
//! those tokens (`compile::classes`), so robots.txt lists them and the
//! proxy enforces, limits and charges them as any group.
//!
//! A crawler whose crawl serves several purposes (its catalog entry lists
//! several categories: Googlebot, Applebot, bingbot also feed model
//! training) belongs to the class of its primary category; with
//! `mixed_purpose = "strictest"` it gets the strictest class of all its
//! categories that the policy sets, so it is blocked wherever one of its
//! purposes is.

use crate::catalog;

/// One purpose class: its name in `[classes]` and the catalog categories
/// it covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Class {
    /// The key in `[classes]`.
    pub name: &'static str,
    /// The catalog categories (`catalog::CATEGORIES`) whose crawlers it
    /// covers.
    pub categories: &'static [&'static str],
}

/// The classes, keyed by name. Every catalog category is in exactly one
/// class (a unit test checks it): Cloudflare's three purposes, then the
/// catalog's other categories under their own names.
pub const CLASSES: &[Class] = &[
    Class { name: "training", categories: &["ai-training"] },
    Class { name: "agent", categories: &["ai-assistant"] },
    Class { name: "search", categories: &["search-engine", "ai-search"] },
    Class { name: "seo", categories: &["seo"] },
    Class { name: "archiver", categories: &["archiver"] },
    Class { name: "scraper", categories: &["scraper"] },
    Class { name: "social-preview", categories: &["social-preview"] },
    Class { name: "monitoring", categories: &["monitoring"] },
];

/// The `[classes]` key that is a setting, not a class.
pub const MIXED_PURPOSE_KEY: &str = "mixed_purpose";

/// The class named `name` (exact, lowercase).
pub fn by_name(name: &str) -> Option<&'static Class> {
    CLASSES.iter().find(|c| c.name == name)
}

/// The class covering catalog category `category`.
pub fn of_category(category: &str) -> Option<&'static Class> {
    CLASSES.iter().find(|c| c.categories.contains(&category))
}

/// The classes of a catalog entry, in the order of its categories
/// (primary first), each once.
pub fn of_entry(e: &catalog::Entry) -> Vec<&'static Class> {
    let mut out: Vec<&'static Class> = Vec::new();
    for c in e.categories.iter().filter_map(|c| of_category(c)) {
        if !out.contains(&c) {
            out.push(c);
        }
    }
    out
}

/// How a crawler of several classes is placed (`mixed_purpose`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MixedPurpose {
    /// The class of its primary category (the default).
    #[default]
    Primary,
    /// The strictest class of all its categories that the policy sets
    /// (`mixed_purpose = "strictest"`).
    Strictest,
}

/// How strict a class's `enforce` is, for `mixed_purpose = "strictest"`:
/// `block` over `charge` over `log` over `off` (or none).
pub(crate) fn strictness(enforce: Option<&str>) -> u8 {
    match enforce {
        Some("block") => 3,
        Some("charge") => 2,
        Some("log") => 1,
        _ => 0,
    }
}

/// The class a catalog crawler gets among `set` (the classes the policy
/// sets, with the strictness of each), and whether it was chosen over its
/// primary class as the strictest. `None` when no class of the crawler is
/// set (or, by default, its primary one is not). Between equally strict
/// classes the crawler's earlier category wins.
pub(crate) fn placed(
    e: &catalog::Entry,
    set: &[(&'static Class, u8)],
    mixed: MixedPurpose,
) -> Option<(&'static Class, bool)> {
    let mine = of_entry(e);
    let primary = *mine.first()?;
    let strength = |c: &Class| set.iter().find(|(s, _)| s.name == c.name).map(|(_, n)| *n);
    match mixed {
        MixedPurpose::Primary => strength(primary).map(|_| (primary, false)),
        MixedPurpose::Strictest => {
            let mut best: Option<(&'static Class, u8)> = None;
            for c in mine {
                if let Some(n) = strength(c) {
                    if best.is_none_or(|(_, b)| n > b) {
                        best = Some((c, n));
                    }
                }
            }
            best.map(|(c, _)| (c, c.name != primary.name))
        }
    }
}

/// What a compiled class group records: which class it is and how its
/// crawlers were placed (for `explain`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClassTag {
    /// The class's name.
    pub name: &'static str,
    /// `mixed_purpose` of the policy.
    pub mixed: MixedPurpose,
}

/// Why a crawler is in its class, as `explain` says it.
pub(crate) fn why(tag: &ClassTag, token: &str) -> String {
    let Some(e) = catalog::lookup(token) else {
        return format!("class `{}`", tag.name);
    };
    let mine = of_entry(e);
    let primary = e.primary_category();
    let others: Vec<&str> = mine.iter().map(|c| c.name).collect();
    if mine.first().is_some_and(|c| c.name == tag.name) {
        let more = if mine.len() > 1 && tag.mixed == MixedPurpose::Strictest {
            format!(", the strictest of its classes ({})", others.join(", "))
        } else if mine.len() > 1 {
            format!(" (it also serves {}; mixed_purpose = \"strictest\" would weigh them)", others[1..].join(", "))
        } else {
            String::new()
        };
        format!("class `{}`: `{}`'s catalog category is `{primary}`{more}, and no group names it", tag.name, e.token)
    } else {
        format!(
            "class `{}`: `{}` serves {} (categories {}), and mixed_purpose = \"strictest\" gives it the strictest class set; no group names it",
            tag.name,
            e.token,
            others.join(", "),
            e.categories.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn every_category_is_in_exactly_one_class() {
        for c in catalog::CATEGORIES {
            let n = CLASSES.iter().filter(|k| k.categories.contains(c)).count();
            assert_eq!(n, 1, "category `{c}` is in {n} classes");
        }
        for k in CLASSES {
            assert!(k.categories.iter().all(|c| catalog::is_category(c)), "{}", k.name);
            assert_ne!(k.name, MIXED_PURPOSE_KEY);
        }
        assert_eq!(by_name("training").unwrap().categories, ["ai-training"]);
        assert_eq!(of_category("ai-search").unwrap().name, "search");
        assert!(by_name("ai-training").is_none());
    }

    #[test]
    fn placement_primary_and_strictest() {
        let training = by_name("training").unwrap();
        let search = by_name("search").unwrap();
        let google = catalog::lookup("Googlebot").unwrap();
        let gpt = catalog::lookup("GPTBot").unwrap();
        let set = [(training, 3), (search, 0)];
        assert_eq!(placed(google, &set, MixedPurpose::Primary), Some((search, false)));
        assert_eq!(placed(google, &set, MixedPurpose::Strictest), Some((training, true)));
        assert_eq!(placed(gpt, &set, MixedPurpose::Primary), Some((training, false)));
        // Only training set: Googlebot's primary class is not.
        assert_eq!(placed(google, &set[..1], MixedPurpose::Primary), None);
        assert_eq!(placed(google, &set[..1], MixedPurpose::Strictest), Some((training, true)));
        // Equally strict: its primary purpose wins.
        let tie = [(training, 1), (search, 1)];
        assert_eq!(placed(google, &tie, MixedPurpose::Strictest), Some((search, false)));
        assert_eq!(placed(google, &[], MixedPurpose::Strictest), None);
    }

    #[test]
    fn why_names_the_class_and_the_reason() {
        let tag = ClassTag { name: "training", mixed: MixedPurpose::Primary };
        assert_eq!(
            why(&tag, "gptbot"),
            "class `training`: `GPTBot`'s catalog category is `ai-training`, and no group names it"
        );
        let tag = ClassTag { name: "search", mixed: MixedPurpose::Primary };
        assert_eq!(why(&tag, "Googlebot"), "class `search`: `Googlebot`'s catalog category is `search-engine` (it also serves training; mixed_purpose = \"strictest\" would weigh them), and no group names it");
        let tag = ClassTag { name: "training", mixed: MixedPurpose::Strictest };
        assert_eq!(why(&tag, "Googlebot"), "class `training`: `Googlebot` serves search, training (categories search-engine, ai-training), and mixed_purpose = \"strictest\" gives it the strictest class set; no group names it");
    }
}
