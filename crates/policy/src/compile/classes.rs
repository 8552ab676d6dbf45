//! `[classes]`: each class set in the policy becomes a group of the
//! catalog crawlers of that class that no `[[group]]` names
//! (`crate::classes` says which crawler is in which class), compiled with
//! a group's checks, so robots.txt lists them and the proxy acts on them
//! as on any group.

use std::collections::{BTreeMap, HashMap, HashSet};

use toml::Spanned;

use super::ctx::Ctx;
use super::group::compile_group;
use crate::catalog;
use crate::classes::{self, Class, ClassTag, MixedPurpose, CLASSES, MIXED_PURPOSE_KEY};
use crate::diag::Warning;
use crate::policy::Group;
use crate::raw::{RawClass, RawClassEntry, RawGroup};

/// One class as set: its name's span, and the group keys it stands for.
struct Set {
    class: &'static Class,
    at: std::ops::Range<usize>,
    raw: RawClass,
    strictness: u8,
}

/// Compiles `[classes]` into groups, in file order, after the policy's
/// own `groups` (whose tokens no class takes). A class none of whose
/// crawlers is left makes no group.
pub(super) fn compile_classes(
    cx: &mut Ctx<'_>,
    raw: Option<&BTreeMap<Spanned<String>, Spanned<RawClassEntry>>>,
    groups: &[Group],
) -> Vec<Group> {
    let Some(raw) = raw else { return Vec::new() };
    let mut mixed = MixedPurpose::Primary;
    let mut set: Vec<Set> = Vec::new();
    for (key, entry) in raw {
        if key.get_ref() == MIXED_PURPOSE_KEY {
            match entry.get_ref() {
                RawClassEntry::Short(v) if v == "strictest" => mixed = MixedPurpose::Strictest,
                RawClassEntry::Short(v) if v == "primary" => mixed = MixedPurpose::Primary,
                RawClassEntry::Short(v) => {
                    cx.err(entry, format!("classes.mixed_purpose must be \"primary\" or \"strictest\", found `{v}`"))
                }
                RawClassEntry::Table(_) => {
                    cx.err(entry, "classes.mixed_purpose must be \"primary\" or \"strictest\", found a table")
                }
            }
            continue;
        }
        let Some(class) = classes::by_name(key.get_ref()) else {
            let known = CLASSES.iter().map(|c| c.name).collect::<Vec<_>>().join(", ");
            let hint = match classes::of_category(key.get_ref()) {
                Some(c) => format!("; `{}` is a catalog category, in the class `{}`", key.get_ref(), c.name),
                None => String::new(),
            };
            cx.err(
                key,
                format!(
                    "classes: unknown class `{}` (known: {known}, and the key {MIXED_PURPOSE_KEY}){hint}",
                    key.get_ref()
                ),
            );
            continue;
        };
        let Some(raw) = class_keys(cx, key, entry) else { continue };
        let strictness = classes::strictness(raw.enforce.as_ref().map(|e| e.get_ref().as_str()));
        set.push(Set { class, at: key.span(), raw, strictness });
    }
    set.sort_by_key(|s| s.at.start);

    // The catalog crawlers no group names, each to its class.
    let named: HashSet<String> = groups.iter().flat_map(|g| g.tokens.iter()).map(|t| t.to_ascii_lowercase()).collect();
    let strengths: Vec<(&'static Class, u8)> = set.iter().map(|s| (s.class, s.strictness)).collect();
    let mut members: HashMap<&'static str, Vec<&'static str>> = HashMap::new();
    for e in catalog::entries() {
        if named.contains(&e.token.to_ascii_lowercase()) {
            continue;
        }
        if let Some((class, _)) = classes::placed(e, &strengths, mixed) {
            members.entry(class.name).or_default().push(e.token.as_str());
        }
    }

    let mut out = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for s in set {
        let Some(tokens) = members.remove(s.class.name) else { continue };
        let at = s.at.clone();
        let sp = |v: String| Spanned::new(at.clone(), v);
        let RawClass { enforce, allow, disallow, block_status, verify, on_spoofed, on_unverified, rate, burst, price } =
            s.raw;
        let raw = RawGroup {
            name: Some(sp(format!("class:{}", s.class.name))),
            user_agents: Some(tokens.iter().map(|t| sp(t.to_string())).collect()),
            categories: None,
            allow,
            disallow,
            crawl_delay: None,
            content_usage: None,
            app_directives: None,
            enforce,
            block_status,
            verify,
            on_spoofed,
            on_unverified,
            rate,
            burst,
            enforce_crawl_delay: None,
            rate_mode: None,
            rate_max_delay: None,
            price,
            prices: None,
            rates: None,
        };
        let before = cx.warnings.len();
        let group = compile_group(cx, &Spanned::new(at.clone(), raw), &HashMap::new(), &mut seen);
        // The catalog's own tokens: a non-RFC spelling or a robots.txt-only
        // crawler is what the class is, not a slip of the policy's author.
        let mut i = 0;
        cx.warnings.retain(|d| {
            i += 1;
            i <= before || !matches!(d.warning, Some(Warning::NonRfcToken | Warning::RobotsOnlyToken))
        });
        if let Some(mut g) = group {
            g.class = Some(ClassTag { name: s.class.name, mixed });
            out.push(g);
        }
    }
    out
}

/// The group keys a class entry stands for: `"block"` and `"log"`
/// disallow everything with that enforcement, `"allow"` allows
/// everything; a table is taken as written, with `disallow = ["/"]` when
/// it enforces `block` or `log` and writes no rule. `None` after an error.
fn class_keys(cx: &mut Ctx<'_>, key: &Spanned<String>, entry: &Spanned<RawClassEntry>) -> Option<RawClass> {
    let at = entry.span();
    let sp = |v: &str| Spanned::new(at.clone(), v.to_string());
    let empty = || RawClass {
        enforce: None,
        allow: None,
        disallow: None,
        block_status: None,
        verify: None,
        on_spoofed: None,
        on_unverified: None,
        rate: None,
        burst: None,
        price: None,
    };
    match entry.get_ref() {
        RawClassEntry::Short(v) => match v.as_str() {
            "block" | "log" => Some(RawClass { enforce: Some(sp(v)), disallow: Some(vec![sp("/")]), ..empty() }),
            "allow" => Some(RawClass { allow: Some(vec![sp("/")]), ..empty() }),
            other => {
                cx.err(
                    entry,
                    format!(
                        "classes.{}: expected \"block\", \"log\", \"allow\" or a table (enforce, rate, price, ...), found `{other}`",
                        key.get_ref()
                    ),
                );
                None
            }
        },
        RawClassEntry::Table(t) => {
            let mut t = (**t).clone();
            let refuses = t.enforce.as_ref().is_some_and(|e| matches!(e.get_ref().as_str(), "block" | "log"));
            if refuses && t.allow.is_none() && t.disallow.is_none() {
                t.disallow = t.enforce.as_ref().map(|e| vec![Spanned::new(e.span(), "/".to_string())]);
            }
            Some(t)
        }
    }
}
