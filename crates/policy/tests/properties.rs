//! Property tests of the policy crate (house style 12): the published
//! robots.txt says what `decide` enforces, a generated agents.txt passes its
//! own verifier, Robots-Tag values are valid RFC 9651 lists, the merges keep
//! what the origin sent, and the parsers of outside input never panic.
//!
//! Policies are generated as TOML text and go through `load`, the same way
//! an operator's file does. A failing case prints the shrunk input.

#![cfg(test)]

use std::cell::Cell;

use crawlgate_policy::canonical::{canonicalize, normalize_request_target};
use crawlgate_policy::robots_tag::{merge_robots_tag, merge_x_robots_tag, PARSE_LIMIT};
use crawlgate_policy::robotstxt::RobotsTxt;
use crawlgate_policy::{agents_txt, load, Policy};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use sfv::{BareItem, FieldType, List, ListEntry, Parser};

/// Product tokens the generated groups draw from. Some are whole words of
/// others (`Googlebot` in `Googlebot-Image`, `Claude` in `Claude_Web`,
/// `AI2Bot` in `Ai2Bot-Dolma`), to exercise identification's
/// longest-whole-word rule; some have digits or dots, as real tokens do.
const POOL: &[&str] = &[
    "*",
    "GPTBot",
    "ClaudeBot",
    "Googlebot",
    "Googlebot-Image",
    "anthropic-ai",
    "Claude_Web",
    "Claude",
    "a",
    "Bing-bot_x",
    "AI2Bot",
    "Ai2Bot-Dolma",
    "archive.org_bot",
];

/// A crawler no generated group names.
const UNKNOWN: &str = "UnknownCrawler";

/// Path pieces: plain, percent-encoded (unreserved, reserved, lower-case
/// hex), non-ASCII raw and encoded, the RFC 9309 specials as data, the fixed
/// files, dot segments.
const SEGMENTS: &[&str] = &[
    "a",
    "b",
    "ab",
    "A",
    "x.php",
    "-",
    "_",
    "~",
    "%41",
    "%61",
    "%2F",
    "%2f",
    "%7E",
    "%7e",
    "%20",
    "é",
    "%C3%A9",
    "%c3%a9",
    "日本",
    "robots.txt",
    "robots%2Etxt",
    "agents.txt",
    "$",
    "%24",
    "%2A",
    ".",
    "..",
    "%",
    "%zz",
    "?",
    "=",
    "%23",
];

/// Query pieces.
const QUERY: &[&str] = &["q=1", "a=%41", "x=é", "$", "*", "b", "%2a", "s=a/b"];

fn toml_str(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

fn toml_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| toml_str(s)).collect();
    format!("[{}]", quoted.join(", "))
}

fn request_path() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(prop::sample::select(SEGMENTS), 0..5),
        any::<bool>(),
        prop::option::of(prop::collection::vec(prop::sample::select(QUERY), 0..3)),
    )
        .prop_map(|(segs, trailing, query)| {
            let mut p = format!("/{}", segs.join("/"));
            if trailing && !segs.is_empty() {
                p.push('/');
            }
            if let Some(q) = query {
                p.push('?');
                p.push_str(&q.join("&"));
            }
            p
        })
}

/// A pattern as an operator writes it: starts with `/` or `*`, pieces with
/// or without a `/` between them, `*` wildcards, an optional final `$`.
fn pattern() -> impl Strategy<Value = String> {
    let atom = prop_oneof![4 => prop::sample::select(SEGMENTS).prop_map(str::to_string), 1 => Just("*".to_string())];
    (
        prop::sample::select(&["/", "*", "/*"][..]),
        prop::collection::vec((any::<bool>(), atom), 0..4),
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.01),
    )
        .prop_map(|(start, items, anchored, hash)| {
            let mut p = start.to_string();
            for (slash, a) in items {
                if slash && !p.ends_with('/') {
                    p.push('/');
                }
                p.push_str(&a);
            }
            if hash {
                // Refused by the loader: `#` starts a robots.txt comment.
                p.push_str("#x");
            }
            if anchored {
                p.push('$');
            }
            p
        })
}

#[derive(Debug, Clone)]
struct GenGroup {
    /// How many tokens of the shuffled pool this group takes (0: none, so
    /// it borrows a token another group already has: a load error).
    take: usize,
    allow: Vec<String>,
    disallow: Vec<String>,
    enforce: Option<&'static str>,
}

fn gen_group() -> impl Strategy<Value = GenGroup> {
    (
        prop_oneof![1 => Just(0usize), 12 => Just(1), 8 => Just(2), 4 => Just(3)],
        prop::collection::vec(pattern(), 0..4),
        prop::collection::vec(pattern(), 0..5),
        prop::option::of(prop::sample::select(&["off", "log", "block"][..])),
    )
        .prop_map(|(take, allow, disallow, enforce)| GenGroup { take, allow, disallow, enforce })
}

/// A policy's TOML text with 1–6 groups.
#[derive(Debug, Clone)]
struct GenPolicy {
    toml: String,
}

fn gen_policy() -> impl Strategy<Value = GenPolicy> {
    let order: Vec<usize> = (0..POOL.len()).collect();
    (
        Just(order).prop_shuffle(),
        prop::collection::vec(gen_group(), 1..=6),
        prop::collection::vec(any::<bool>(), POOL.len()),
    )
        .prop_map(|(order, groups, lower)| {
            let mut toml = String::from("[upstream]\nservers = [\"127.0.0.1:8000\"]\n");
            let mut next = 0;
            for g in groups {
                let mut tokens = Vec::new();
                for _ in 0..g.take {
                    if let Some(&i) = order.get(next) {
                        // Policy spelling may differ in case from the UA's.
                        tokens.push(if lower[i] { POOL[i].to_ascii_lowercase() } else { POOL[i].to_string() });
                        next += 1;
                    }
                }
                if tokens.is_empty() {
                    // Duplicate of the first token handed out (or the first
                    // of the pool): exercises the "skip what fails" path.
                    tokens.push(POOL[order[0]].to_string());
                }
                toml.push_str(&format!("\n[[group]]\nuser_agents = {}\n", toml_list(&tokens)));
                if !g.allow.is_empty() {
                    toml.push_str(&format!("allow = {}\n", toml_list(&g.allow)));
                }
                if !g.disallow.is_empty() {
                    toml.push_str(&format!("disallow = {}\n", toml_list(&g.disallow)));
                }
                if let Some(e) = g.enforce {
                    toml.push_str(&format!("enforce = \"{e}\"\n"));
                }
            }
            GenPolicy { toml }
        })
}

/// A User-Agent header naming `token` (in some case) and no other pool
/// token as a whole word.
fn user_agent(token: &str, case: u8) -> String {
    let t = match case % 3 {
        0 => token.to_string(),
        1 => token.to_ascii_lowercase(),
        _ => token.to_ascii_uppercase(),
    };
    format!("Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; {t}/2.1; +https://example.com/info)")
}

fn is_whole_word(hay: &str, needle: &str) -> bool {
    let (h, n) = (hay.to_ascii_lowercase(), needle.to_ascii_lowercase());
    h.match_indices(&n).any(|(s, _)| {
        let e = s + n.len();
        (s == 0 || !h.as_bytes()[s - 1].is_ascii_alphanumeric())
            && (e == h.len() || !h.as_bytes()[e].is_ascii_alphanumeric())
    })
}

fn path_only(p: &str) -> &str {
    p.split('?').next().unwrap_or(p)
}

fn run<S: Strategy>(cases: u32, strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>) {
    let mut runner = TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() });
    let result = runner.run(&strategy, test);
    assert!(result.is_ok(), "{}", result.err().map(|e| e.to_string()).unwrap_or_default());
}

/// Checks one (policy, token, path): the robots.txt verdict of the token
/// `decide` identified equals `decide`'s.
fn check_round_trip(
    policy: &Policy,
    robots: &RobotsTxt,
    token: &str,
    case: u8,
    path: &str,
) -> Result<(), TestCaseError> {
    let ua = user_agent(token, case);
    let d = policy.decide(&ua, path);
    let has_group = policy.tokens().any(|t| t.eq_ignore_ascii_case(token));
    if has_group {
        // Its own group always wins over a shorter token inside it.
        prop_assert!(
            d.agent.is_some_and(|a| a.eq_ignore_ascii_case(token)),
            "UA {ua:?} identified as {:?}, not {token}",
            d.agent
        );
    }
    let effective = match d.agent {
        Some(a) => {
            // Identification may pick a shorter policy token that is a whole
            // word of this crawler's token (product decision, specs README):
            // the robots.txt group that then applies is that token's.
            prop_assert!(is_whole_word(token, a), "UA {ua:?} identified as {a}, which is not a word of {token}");
            a
        }
        None => token,
    };
    let canonical = canonicalize(path);
    if path_only(&canonical) == "/agents.txt" {
        // Never blocked by the proxy whatever robots.txt says (specs README).
        prop_assert!(d.allowed);
        return Ok(());
    }
    let verdict = robots.is_allowed(effective, path);
    let rule = robots.decide(effective, path).map(|r| (r.pattern.as_str(), r.allow));
    prop_assert_eq!(
        d.allowed,
        verdict,
        "token {} (as {}) path {:?}: decide says {:?} (rule {:?}), robots.txt says {} (rule {:?})\n--- robots.txt ---\n{}",
        token,
        effective,
        path,
        d.allowed,
        d.rule,
        verdict,
        rule,
        policy.robots_txt()
    );
    if path_only(&canonical) != "/robots.txt" {
        prop_assert_eq!(
            d.rule.map(|r| (r.pattern, r.allow)),
            rule,
            "deciding rule differs for {} on {:?}",
            effective,
            path
        );
    }
    Ok(())
}

/// (a) parse(render(policy)) decides like the policy, for every token of the
/// pool and an unknown one.
#[test]
fn robots_txt_round_trip_decides_like_the_policy() {
    let total = Cell::new(0usize);
    let loaded = Cell::new(0usize);
    let strategy = (gen_policy(), prop::collection::vec(request_path(), 1..8), any::<u8>());
    run(384, strategy, |(gen, paths, case)| {
        total.set(total.get() + 1);
        let Ok(l) = load(&gen.toml, "prop.toml") else { return Ok(()) };
        loaded.set(loaded.get() + 1);
        let policy = l.policy;
        let robots = RobotsTxt::parse(policy.robots_txt().as_bytes());
        let tokens = POOL.iter().copied().filter(|t| *t != "*").chain([UNKNOWN]);
        for token in tokens {
            for path in &paths {
                check_round_trip(&policy, &robots, token, case, path)
                    .map_err(|e| TestCaseError::fail(format!("{e}\n--- policy ---\n{}", gen.toml)))?;
            }
        }
        Ok(())
    });
    eprintln!("{} of {} generated policies loaded", loaded.get(), total.get());
    assert!(loaded.get() * 2 > total.get(), "only {} of {} generated policies loaded", loaded.get(), total.get());
}

/// agents.txt pieces: mostly valid, a few that the loader must refuse.
const AGENTS_PATH: &[&str] = &["/", "a", "status", "search", "?", "=", "%20", "&", ";", "'", "*", "x.y", "~", "@", ":"];
const AGENTS_PATH_BAD: &[&str] = &[" ", "<", "#", "é", "\"", "\t"];
const PARAM_KEYS: &[&str] = &["limit", "rate", "k-1", "~k", "window", "auth"];
const PARAM_KEYS_BAD: &[&str] = &["a b", "x=y", "é", ""];
const PARAM_VALUES: &[&str] = &["50", "1", "ok%20", "yes", "/x", "a,b", "60s", "mailto:bots@example.com"];
const PARAM_VALUES_BAD: &[&str] = &["v w", "", "a=b", "é", "a\nb"];

fn gen_agents_txt() -> impl Strategy<Value = String> {
    let piece = prop_oneof![30 => prop::sample::select(AGENTS_PATH), 1 => prop::sample::select(AGENTS_PATH_BAD)];
    let path = prop::collection::vec(piece, 0..5).prop_map(|v| format!("/{}", v.concat()));
    let key = prop_oneof![20 => prop::sample::select(PARAM_KEYS), 1 => prop::sample::select(PARAM_KEYS_BAD)];
    let value = prop_oneof![20 => prop::sample::select(PARAM_VALUES), 1 => prop::sample::select(PARAM_VALUES_BAD)];
    let params = prop::collection::btree_map(key, value, 0..3);
    let action =
        prop_oneof![20 => prop::sample::select(&["allow", "disallow", "ALLOW", "Disallow"][..]), 1 => Just("block")];
    let rule = (path, action, params).prop_map(|(path, action, params)| {
        let ps: Vec<String> = params.iter().map(|(k, v)| format!("{} = {}", toml_str(k), toml_str(v))).collect();
        format!("  {{ path = {}, action = \"{action}\", params = {{ {} }} }},\n", toml_str(&path), ps.join(", "))
    });
    (prop::collection::vec(rule, 0..6), prop::option::weighted(0.2, any::<bool>())).prop_map(|(rules, enabled)| {
        let mut t = String::from("[upstream]\nservers = [\"127.0.0.1:8000\"]\n\n[agents_txt]\n");
        if let Some(e) = enabled {
            t.push_str(&format!("enabled = {e}\n"));
        }
        t.push_str("rules = [\n");
        t.push_str(&rules.concat());
        t.push_str("]\n");
        t
    })
}

/// (b) Every agents.txt the loader accepts passes the strict verifier, with
/// one directive per configured rule.
#[test]
fn generated_agents_txt_passes_its_verifier() {
    let total = Cell::new(0usize);
    let published = Cell::new(0usize);
    run(512, gen_agents_txt(), |toml| {
        total.set(total.get() + 1);
        let Ok(l) = load(&toml, "prop.toml") else { return Ok(()) };
        let Some(text) = l.policy.agents_txt() else { return Ok(()) };
        published.set(published.get() + 1);
        let verified = agents_txt::verify(text);
        prop_assert_eq!(
            verified.clone(),
            Ok(l.policy.stats().agents_rules),
            "{:?}\n--- agents.txt ---\n{}\n--- policy ---\n{}",
            verified,
            text,
            toml
        );
        Ok(())
    });
    assert!(
        published.get() * 5 > total.get(),
        "only {} of {} generated agents.txt were published",
        published.get(),
        total.get()
    );
}

const TAG_RULES: &[&str] = &[
    "noindex",
    "nofollow",
    "none",
    "noarchive",
    "NoSnippet",
    "noai",
    "noimageai",
    "all",
    "max-snippet:50",
    "max-snippet=-1",
    "max-snippet:0",
    "max-video-preview:10",
    "max-image-preview:large",
    "max-image-preview:None",
    "unavailable_after: 2026-12-31",
    "unavailable_after: 25 Jun 2010 15:00:00 PST",
    "indexifembedded",
];

fn gen_robots_tags() -> impl Strategy<Value = String> {
    // `robots_tag.agents` takes RFC 9309 tokens only (no digits or dots).
    let rfc_tokens: Vec<&str> =
        POOL.iter().copied().filter(|t| !t.contains(|c: char| c.is_ascii_digit() || c == '.')).collect();
    let agents = prop::option::of(prop::collection::vec(prop::sample::select(rfc_tokens), 1..4));
    let entry = (
        pattern().prop_filter("`#` is refused", |p| !p.contains('#')),
        agents,
        prop::collection::vec(prop::sample::select(TAG_RULES), 1..4),
        prop::option::of(any::<bool>()),
        prop::option::of(prop::sample::select(&["off", "inject", "audit", "enforce"][..])),
    )
        .prop_map(|(path, agents, rules, header, html)| {
            let mut t = format!("\n[[robots_tag]]\npath = {}\n", toml_str(&path));
            if let Some(a) = agents {
                let mut uniq: Vec<String> = Vec::new();
                for x in a {
                    if !uniq.iter().any(|u| u == x) {
                        uniq.push(x.to_string());
                    }
                }
                t.push_str(&format!("agents = {}\n", toml_list(&uniq)));
            }
            t.push_str(&format!("rules = {}\n", toml_list(&rules.iter().map(|r| r.to_string()).collect::<Vec<_>>())));
            if let Some(h) = header {
                t.push_str(&format!("header = {h}\n"));
            }
            if let Some(h) = html {
                t.push_str(&format!("html = \"{h}\"\n"));
            }
            t
        });
    prop::collection::vec(entry, 1..5)
        .prop_map(|entries| format!("[upstream]\nservers = [\"127.0.0.1:8000\"]\n{}", entries.concat()))
}

/// (c) Every Robots-Tag value `url_controls` produces is an RFC 9651 List
/// of Tokens that re-serialises to itself, and merging it alone gives it
/// back unchanged.
#[test]
fn robots_tag_values_are_structured_lists() {
    let total = Cell::new(0usize);
    let values = Cell::new(0usize);
    run(384, (gen_robots_tags(), prop::collection::vec(request_path(), 1..8)), |(toml, paths)| {
        let l = match load(&toml, "prop.toml") {
            Ok(l) => l,
            Err(e) => {
                // Every generated agent and rule is valid (`Claude_Web`'s `_`
                // is fine inside a token).
                return Err(TestCaseError::fail(format!("generated policy failed to load: {e}\n{toml}")));
            }
        };
        for path in &paths {
            total.set(total.get() + 1);
            let c = l.policy.url_controls(path);
            let Some(v) = c.robots_tag else { continue };
            values.set(values.get() + 1);
            let list = Parser::new(v.as_str()).parse::<List>();
            prop_assert!(list.is_ok(), "{v:?} is not a structured list: {list:?}");
            let list = list.unwrap_or_default();
            prop_assert!(
                list.iter().all(|m| matches!(m, ListEntry::Item(i) if matches!(i.bare_item, BareItem::Token(_)))),
                "{v:?} has a member that is not a token"
            );
            let again = list.serialize();
            prop_assert_eq!(again.as_deref(), Some(v.as_str()));
            let merged = merge_robots_tag(&[], Some(&v));
            prop_assert_eq!(merged, vec![v.clone().into_bytes()], "merging {:?} alone changed it", v);
            prop_assert!(!c.x_robots_tag.is_empty(), "{v:?} has no X-Robots-Tag counterpart");
        }
        Ok(())
    });
    assert!(values.get() * 4 > total.get(), "only {} of {} paths got a Robots-Tag", values.get(), total.get());
}

fn header_line() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        // Structured lists, valid or nearly so.
        "([A-Za-z*][A-Za-z0-9_-]{0,6}(;[a-z][a-z-]{0,8}(=(-?[0-9]{1,3}|[a-z]{1,5}|\"[ -~]{0,8}\"|\\?[01]))?){0,3}(, ?)?){0,4}"
            .prop_map(String::into_bytes),
        // Legacy X-Robots-Tag spellings.
        "(([a-z]{1,8}: )?(noindex|nosnippet|max-snippet:[0-9]{1,2}|unavailable_after: 25 Jun 2010)(, )?){1,3}".prop_map(String::into_bytes),
        // Any text, any bytes.
        ".{0,40}".prop_map(String::into_bytes),
        prop::collection::vec(any::<u8>(), 0..64),
    ]
}

fn is_structured(line: &[u8]) -> bool {
    std::str::from_utf8(line).is_ok_and(|t| Parser::new(t).parse::<List>().is_ok())
}

/// (d) The merges never panic and never drop an origin line that is not a
/// structured field; under the 8 KiB limit every token the origin named
/// is still named.
#[test]
fn merges_keep_what_the_origin_sent() {
    let policy = prop::option::of(prop_oneof![
        "([A-Za-z*][A-Za-z0-9_-]{0,6}(;[a-z]{1,8}(=[0-9]{1,2})?){0,2}(, )?){0,3}",
        ".{0,30}",
    ]);
    let x_policy = prop::collection::vec(".{0,20}", 0..3);
    run(2048, (prop::collection::vec(header_line(), 0..6), policy, x_policy), |(upstream, policy, x_policy)| {
        let refs: Vec<&[u8]> = upstream.iter().map(Vec::as_slice).collect();
        let total: usize = upstream.iter().map(|l| l.len() + 2).sum();
        prop_assume!(total < PARSE_LIMIT);
        let merged = merge_robots_tag(&refs, policy.as_deref());
        for line in &upstream {
            if !is_structured(line) {
                prop_assert!(
                    merged.contains(line),
                    "origin line {:?} dropped: {:?}",
                    String::from_utf8_lossy(line),
                    merged
                );
            }
        }
        // The structured output is the last line, when there is one.
        let out_tokens: Vec<String> = merged
            .last()
            .and_then(|l| std::str::from_utf8(l).ok())
            .and_then(|t| Parser::new(t).parse::<List>().ok())
            .unwrap_or_default()
            .iter()
            .filter_map(|m| match m {
                ListEntry::Item(i) => i.bare_item.as_token().map(|t| t.as_str().to_ascii_lowercase()),
                ListEntry::InnerList(_) => None,
            })
            .collect();
        for line in upstream.iter().filter(|l| is_structured(l)) {
            let text = std::str::from_utf8(line).unwrap_or_default();
            for m in Parser::new(text).parse::<List>().unwrap_or_default() {
                if let ListEntry::Item(i) = m {
                    if let Some(t) = i.bare_item.as_token() {
                        prop_assert!(
                            out_tokens.contains(&t.as_str().to_ascii_lowercase()),
                            "token {} of {:?} lost: {:?}",
                            t.as_str(),
                            text,
                            merged
                        );
                    }
                }
            }
        }
        let x = merge_x_robots_tag(&refs, &x_policy);
        prop_assert!(x.len() >= upstream.len());
        prop_assert_eq!(&x[..upstream.len()], &upstream[..], "X-Robots-Tag origin lines not kept verbatim and first");
        Ok(())
    });
}

/// (d) The same on arbitrary bytes of any size, including past the limit:
/// never a panic, non-structured lines kept.
#[test]
fn merges_never_panic_on_any_bytes() {
    let big = prop::collection::vec(
        prop_oneof![
            header_line(),
            prop::collection::vec(any::<u8>(), 0..10_000),
            "([a-z]{1,6};noai, ){0,900}".prop_map(String::into_bytes)
        ],
        0..5,
    );
    run(256, (big, prop::option::of(".{0,200}")), |(upstream, policy)| {
        let refs: Vec<&[u8]> = upstream.iter().map(Vec::as_slice).collect();
        let merged = merge_robots_tag(&refs, policy.as_deref());
        for line in upstream.iter().filter(|l| !is_structured(l)) {
            prop_assert!(merged.contains(line));
        }
        let _ = merge_x_robots_tag(&refs, &[]);
        Ok(())
    });
}

fn robots_like() -> impl Strategy<Value = Vec<u8>> {
    let line = prop_oneof![
        "(User-agent|user-AGENT|Allow|Disallow|Sitemap|Crawl-delay|Content-Usage|Foo) ?: ?[ -~]{0,20}( #[ -~]{0,5})?"
            .prop_map(String::into_bytes),
        "[ -~]{0,30}".prop_map(String::into_bytes),
        prop::collection::vec(any::<u8>(), 0..30),
    ];
    let eol = prop::sample::select(&["\n", "\r\n", "\r", ""][..]);
    (prop::option::of(Just(b"\xEF\xBB\xBF".to_vec())), prop::collection::vec((line, eol), 0..60)).prop_map(
        |(bom, lines)| {
            let mut out = bom.unwrap_or_default();
            for (l, e) in lines {
                out.extend_from_slice(&l);
                out.extend_from_slice(e.as_bytes());
            }
            out
        },
    )
}

/// (e) The robots.txt parser and evaluator never panic on any bytes.
#[test]
fn robots_txt_parser_never_panics() {
    let body = prop_oneof![prop::collection::vec(any::<u8>(), 0..4096), robots_like()];
    run(1024, (body, ".{0,30}", prop_oneof![request_path(), ".{0,40}"]), |(body, ua, url)| {
        let r = RobotsTxt::parse(&body);
        let _ = r.is_allowed(&ua, &url);
        for g in r.groups() {
            for u in &g.user_agents {
                let _ = r.is_allowed(u, &url);
            }
        }
        Ok(())
    });
}

/// (e) `canonicalize` never panics and is idempotent: its output is the
/// canonical form, so canonicalising it again changes nothing. The one
/// exception is documented and asserted below.
#[test]
fn canonicalize_is_idempotent() {
    let input = prop_oneof![
        prop::collection::vec(prop::sample::select(SEGMENTS), 0..8).prop_map(|v| v.concat()),
        "([%/*$a-fA-F0-9é?]|%[0-9a-fA-F]{2}){0,20}",
        ".{0,40}",
    ];
    run(4096, input, |s| {
        let once = canonicalize(&s).into_owned();
        let twice = canonicalize(&once).into_owned();
        if lone_percent_before_escape(&s) {
            // A `%` that starts no escape is kept (documented), so `%%61a`
            // becomes `%aa`, which a second pass reads as an escape. Request
            // targets with a lone `%` are refused by
            // `normalize_request_target`, so only such patterns are affected.
            return Ok(());
        }
        prop_assert_eq!(&twice, &once, "canonicalize({:?}) = {:?} is not canonical", s, once);
        Ok(())
    });
    assert_eq!(canonicalize("/%%61a"), "/%aa");
    assert_eq!(canonicalize("/%aa"), "/%AA");
}

/// Whether `s` has a `%` that starts no valid escape (so decoding a later
/// escape can complete it).
fn lone_percent_before_escape(s: &str) -> bool {
    let b = s.as_bytes();
    b.iter().enumerate().any(|(i, &c)| {
        c == b'%'
            && !(b.get(i + 1).is_some_and(u8::is_ascii_hexdigit) && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
    })
}

/// (e) `normalize_request_target` never panics; what it returns is a
/// normalised, canonical target (idempotent), and `decide` on it needs no
/// further canonicalisation.
#[test]
fn normalize_request_target_is_idempotent() {
    let pieces: &[&str] = &[
        "/",
        "//",
        "a",
        "..",
        ".",
        "%2e",
        "%2E%2e",
        ";x=1",
        ";",
        "\\",
        "%2F",
        "%2f",
        "%5C",
        "?",
        "#",
        "q=%41",
        "é",
        "%C3%A9",
        "*",
        "$",
        "%",
        "%zz",
        "http://",
        "HTTPS://h",
        "h",
        "\u{0}",
        " ",
        "%3B",
    ];
    let input = prop_oneof![
        prop::collection::vec(prop::sample::select(pieces), 0..10).prop_map(|v| v.concat()),
        prop::collection::vec(prop::sample::select(pieces), 0..10).prop_map(|v| format!("/{}", v.concat())),
        ".{0,40}",
        "/.{0,40}",
    ];
    run(4096, input, |s| {
        let Ok(once) = normalize_request_target(&s) else { return Ok(()) };
        let once = once.into_owned();
        prop_assert!(once.starts_with('/'), "{s:?} -> {once:?}");
        let twice = normalize_request_target(&once);
        prop_assert_eq!(twice.as_deref(), Ok(once.as_str()), "normalize({:?}) = {:?} is not normalised", s, once);
        prop_assert_eq!(canonicalize(&once), once.as_str(), "normalize({:?}) = {:?} is not canonical", s, once);
        Ok(())
    });
}

/// The rule trie finds what a scan of every rule finds: the longest
/// matching pattern, allow on a tie, the earliest on a full tie.
#[test]
fn rule_set_agrees_with_a_linear_scan() {
    use crawlgate_policy::pattern::Pattern;
    use crawlgate_policy::ruleset::RuleSet;
    let rules =
        prop::collection::vec((pattern().prop_filter("`#` is refused", |p| !p.contains('#')), any::<bool>()), 0..40);
    run(1024, (rules, prop::collection::vec(request_path(), 1..10)), |(rules, paths)| {
        let compiled: Vec<(Pattern, bool)> = rules.iter().map(|(p, a)| (Pattern::new_lenient(p), *a)).collect();
        let set = RuleSet::new(compiled.clone());
        for path in &paths {
            let path = canonicalize(path);
            let linear = compiled
                .iter()
                .enumerate()
                .filter(|(_, (p, _))| p.matches(&path))
                .min_by_key(|(i, (p, allow))| (std::cmp::Reverse(p.specificity()), !allow, *i))
                .map(|(i, _)| i);
            prop_assert_eq!(set.evaluate(&path), linear, "path {:?} rules {:?}", path, rules);
        }
        Ok(())
    });
}

/// Identification finds the longest policy token present as a whole word
/// (earliest on a tie), as a scan of every token does.
#[test]
fn identification_agrees_with_a_scan_of_every_token() {
    use crawlgate_policy::identify::TokenMatcher;
    let token = "[A-Za-z_-]{1,12}";
    let words = prop::collection::vec(
        prop_oneof![token.prop_map(|t| t), "[0-9./;()+: ]{1,3}".prop_map(|t| t), Just("é".to_string())],
        0..16,
    );
    run(
        1024,
        (prop::collection::vec(token, 1..30), words, prop::collection::vec(any::<prop::sample::Index>(), 0..4)),
        |(tokens, words, picks)| {
            let mut ua = words.concat();
            // Plant some tokens, in some case, so matches happen.
            for p in &picks {
                let t = p.get(&tokens);
                ua.push_str(if p.index(2) == 0 { "; " } else { "-" });
                ua.push_str(&if p.index(3) == 0 { t.to_ascii_uppercase() } else { t.clone() });
            }
            let m = TokenMatcher::new(&tokens);
            let hay = ua.to_ascii_lowercase();
            let mut best: Option<(usize, usize, usize)> = None; // (len, start, token)
            for (ti, t) in tokens.iter().enumerate() {
                let t = t.to_ascii_lowercase();
                // Every start, overlapping occurrences included.
                for s in 0..hay.len() {
                    if !hay.is_char_boundary(s) || !hay[s..].starts_with(&t) {
                        continue;
                    }
                    let e = s + t.len();
                    let ok = (s == 0 || !hay.as_bytes()[s - 1].is_ascii_alphanumeric())
                        && (e == hay.len() || !hay.as_bytes()[e].is_ascii_alphanumeric());
                    if ok && best.is_none_or(|(bl, bs, _)| t.len() > bl || (t.len() == bl && s < bs)) {
                        best = Some((t.len(), s, ti));
                    }
                }
            }
            let found = m.find(&ua);
            // Equal tokens (ignoring case) may be reported by either index.
            let same = match (found, best) {
                (Some(f), Some((_, _, b))) => tokens[f].eq_ignore_ascii_case(&tokens[b]),
                (None, None) => true,
                _ => false,
            };
            prop_assert!(
                same,
                "UA {:?} tokens {:?}: found {:?}, expected {:?}",
                ua,
                tokens,
                found.map(|f| &tokens[f]),
                best.map(|b| &tokens[b.2])
            );
            Ok(())
        },
    );
}

/// Pieces of hostile strings: control characters, quotes, separators and
/// non-ASCII beside ordinary words of every value kind.
const HOSTILE: &[&str] = &[
    "a",
    "1",
    ":",
    " ",
    "\r",
    "\n",
    "\r\n",
    "\0",
    "\t",
    "\u{7f}",
    "\u{85}",
    "é",
    "\"",
    "'",
    "=",
    ",",
    ";",
    "/",
    "*",
    "?",
    "#",
    "y",
    "n",
    "yes",
    "train-ai",
    "ai-use",
    "search",
    "ai-train",
    "noindex",
    "2026-12-31",
    "https://e.com/",
];

/// Usually the valid `ok`, else a hostile string, so that policies with
/// one hostile value among valid ones load often enough to be checked.
fn hostile(ok: &'static str) -> impl Strategy<Value = String> {
    prop_oneof![
        2 => Just(ok.to_string()),
        1 => prop::collection::vec(prop::sample::select(HOSTILE), 0..6).prop_map(|v| v.concat()),
    ]
}

/// Whether `s` can be written as a header field value as it is: visible
/// ASCII, spaces and tabs (RFC 9110 section 5.5; the policy never emits
/// obs-text).
fn valid_field_value(s: &str) -> bool {
    s.bytes().all(|b| b == b'\t' || (0x20..0x7f).contains(&b))
}

/// Whether a generated file holds no control character but the line feed
/// (a CR, NUL, DEL or C1 character, NEL included, would break or hide a
/// line for some reader).
fn only_line_feeds(text: &str) -> bool {
    text.chars().all(|c| c == '\n' || !c.is_control())
}

/// (h) Whatever strings a policy holds, one that loads yields only valid
/// header values and a robots.txt of visible characters that parses with
/// every group it publishes: a value that could not be sent is refused at
/// load, never discovered per request.
#[test]
fn a_policy_that_loads_yields_valid_headers_and_robots_txt() {
    let loaded = Cell::new(0usize);
    let strategy = (
        hostile("2026-12-31"),
        hostile("train-ai=n"),
        hostile("search=yes, ai-train=no"),
        hostile("sitemap.xml"),
        hostile("noindex"),
        prop::collection::vec(request_path(), 1..4),
    );
    run(2048, strategy, |(date, usage, signal, sitemap, rule, paths)| {
        let toml = format!(
            "[upstream]\nservers = [\"127.0.0.1:8000\"]\n[robots_txt]\ncontent_signal = {}\nsitemaps = [{}]\n\
             [[group]]\nuser_agents = [\"*\"]\ndisallow = [\"/p\"]\ncontent_usage = [{}]\n\
             [[robots_tag]]\npath = \"/\"\nrules = [{}, {}]\nhtml = \"inject\"\n",
            toml_str(&signal),
            toml_str(&format!("https://e.com/{sitemap}")),
            toml_str(&usage),
            toml_str(&format!("unavailable_after: {date}")),
            toml_str(&rule),
        );
        let Ok(l) = load(&toml, "prop.toml") else { return Ok(()) };
        loaded.set(loaded.get() + 1);
        for path in &paths {
            let c = l.policy.url_controls(path);
            let values = c.robots_tag.iter().chain(&c.x_robots_tag).chain(&c.content_usage);
            for v in values {
                prop_assert!(valid_field_value(v), "invalid header value {v:?} from\n{toml}");
            }
        }
        let text = l.policy.robots_txt();
        prop_assert!(only_line_feeds(text), "robots.txt with a control character from\n{toml}\n---\n{text}");
        let parsed = RobotsTxt::parse(text.as_bytes());
        prop_assert_eq!(parsed.groups().len(), 1, "{}", text);
        prop_assert!(parsed.unknown_lines().is_empty(), "unknown lines {:?} in\n{}", parsed.unknown_lines(), text);
        Ok(())
    });
    assert!(loaded.get() > 200, "only {} generated policies loaded", loaded.get());
}

/// The valid values of (h2), one per key it draws from [`hostile`]: the
/// License URL's file, a group's name, user agent, allow pattern (after
/// `/`) and App-Directives, a Content-Usage entry with its path, a
/// Robots-Tag agent, an agents.txt path (after `/`) and parameter, a
/// TDMRep path (after `/`) and policy URL's file, the upstream's server
/// name.
const PUBLISHED: [&str; 12] = [
    "license.xml",
    "ai",
    "GPTBot",
    "a",
    "/x foo",
    "/docs train-ai=n",
    "ClaudeBot",
    "status",
    "50",
    "t",
    "p.json",
    "origin.example",
];

/// (h2) As (h), for the other values a policy publishes ([`PUBLISHED`]),
/// two of them drawn from [`hostile`] per policy, the others valid. A
/// policy that loads yields header values that can be sent, group names
/// (the 429 body, the metrics) and a robots.txt and agents.txt with no
/// control character but the line feed, no `#` cutting a robots.txt value,
/// robots.txt parsing into its two groups with the token and pattern as
/// written, an agents.txt that passes its verifier and a tdmrep.json that
/// is JSON.
#[test]
fn every_published_value_of_a_policy_that_loads_is_sendable() {
    let loaded = Cell::new(0usize);
    let drawn: Vec<_> = PUBLISHED.iter().map(|ok| hostile(ok)).collect();
    let strategy = (drawn, 0..PUBLISHED.len(), 0..PUBLISHED.len(), prop::collection::vec(request_path(), 1..3));
    run(1536, strategy, |(drawn, a, b, paths)| {
        let v: Vec<String> = (0..PUBLISHED.len())
            .map(|i| if i == a || i == b { drawn[i].clone() } else { PUBLISHED[i].to_string() })
            .collect();
        let [license, name, ua, allow, app, usage, tag_agent, agents_path, param, tdm_path, tdm_policy, sni] =
            <[String; 12]>::try_from(v).unwrap_or_else(|_| unreachable!());
        let allow = format!("/{allow}");
        let toml = format!(
            "[upstream]\nservers = [\"127.0.0.1:8000\"]\ntls = true\nsni = {}\n[robots_txt]\nlicense = {}\n\
             [[group]]\nuser_agents = [\"*\"]\ndisallow = [\"/p\"]\napp_directives = [{}]\ncontent_usage = [{}]\n\
             [[group]]\nname = {}\nuser_agents = [{}]\nallow = [{}]\ndisallow = [\"/\"]\n\
             [[robots_tag]]\npath = \"/\"\nagents = [{}]\nrules = [\"noai\"]\n\
             [agents_txt]\nrules = [{{ path = {}, action = \"allow\", params = {{ limit = {} }} }}]\n\
             [tdmrep]\n[[tdmrep.rules]]\npath = {}\nreservation = 1\npolicy = {}\n",
            toml_str(&sni),
            toml_str(&format!("https://e.com/{license}")),
            toml_str(&app),
            toml_str(&usage),
            toml_str(&name),
            toml_str(&ua),
            toml_str(&allow),
            toml_str(&tag_agent),
            toml_str(&format!("/{agents_path}")),
            toml_str(&param),
            toml_str(&format!("/{tdm_path}")),
            toml_str(&format!("https://e.com/{tdm_policy}")),
        );
        let Ok(l) = load(&toml, "prop.toml") else { return Ok(()) };
        loaded.set(loaded.get() + 1);
        let p = &l.policy;
        let mut values: Vec<String> = p.license_link().into_iter().collect();
        values.push(p.settings().upstream.sni.clone());
        for path in &paths {
            let c = p.url_controls(path);
            values.extend(c.robots_tag.iter().chain(&c.x_robots_tag).chain(&c.content_usage).cloned());
            values.extend(c.tdm_policy.as_deref().map(str::to_string));
        }
        for v in &values {
            prop_assert!(valid_field_value(v), "invalid header value {v:?} from\n{toml}");
        }
        for n in p.group_names() {
            prop_assert!(!n.contains(char::is_control), "group name {n:?} from\n{toml}");
        }
        let text = p.robots_txt();
        prop_assert!(only_line_feeds(text), "robots.txt with a control character from\n{toml}\n---\n{text}");
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            prop_assert!(!line.contains('#'), "a `#` cuts {line:?} in\n{text}\nfrom\n{toml}");
        }
        let parsed = RobotsTxt::parse(text.as_bytes());
        prop_assert_eq!(parsed.groups().len(), 2, "{}", text);
        prop_assert!(parsed.unknown_lines().is_empty(), "unknown lines {:?} in\n{}", parsed.unknown_lines(), text);
        let named = &parsed.groups()[1];
        prop_assert_eq!(&named.user_agents, &vec![ua.clone()], "{}", text);
        prop_assert_eq!(named.rules.first().map(|r| r.pattern.as_str()), Some(allow.as_str()), "{}", text);
        let agents = p.agents_txt().unwrap_or_default();
        prop_assert!(only_line_feeds(agents), "agents.txt with a control character from\n{toml}\n---\n{agents}");
        prop_assert_eq!(agents_txt::verify(agents), Ok(1), "{}", agents);
        let tdm = p.tdmrep_json().unwrap_or_default();
        prop_assert!(serde_json::from_str::<serde_json::Value>(tdm).is_ok(), "tdmrep.json {:?}", tdm);
        Ok(())
    });
    assert!(loaded.get() > 600, "only {} generated policies loaded", loaded.get());
}

/// Origin-file and User-Agent words: the browser words an origin might
/// name, the pool's tokens, catalog crawlers the pool lacks.
const ORIGIN_WORDS: &[&str] = &[
    "Mozilla",
    "compatible",
    "AppleWebKit",
    "KHTML",
    "like",
    "Gecko",
    "Chrome",
    "Safari",
    "Windows",
    "Win64",
    "x64",
    "Linux",
    "x86_64",
    "Android",
    "Mobile",
    "537.36",
    "5.0",
    "NT",
    "Version",
    "Firefox",
    "rv",
    "Edg",
    "iPhone",
    "CCBot",
    "bingbot",
    "PerplexityBot",
    "Bytespider",
    "Applebot",
    "facebookexternalhit",
    "Amazonbot",
];

/// A word in some case: from the pool, the origin words, or random.
fn origin_word() -> impl Strategy<Value = String> {
    let pool: Vec<&str> = POOL.iter().copied().filter(|t| *t != "*").collect();
    let cased = |words: Vec<&'static str>| {
        (prop::sample::select(words), any::<u8>()).prop_map(|(w, c)| match c % 4 {
            0 => w.to_ascii_lowercase(),
            1 => w.to_ascii_uppercase(),
            2 => w.chars().enumerate().map(|(i, ch)| if i % 2 == 0 { ch.to_ascii_uppercase() } else { ch }).collect(),
            _ => w.to_string(),
        })
    };
    prop_oneof![
        4 => cased(ORIGIN_WORDS.to_vec()),
        3 => cased(pool),
        2 => "[A-Za-z][A-Za-z0-9._-]{0,10}",
        1 => Just("*".to_string()),
    ]
}

/// An origin robots.txt: groups of user-agent lines drawn from
/// [`origin_word`], each with a few rules, `Allow: /` often.
fn origin_file() -> impl Strategy<Value = String> {
    let group = (
        prop::collection::vec(origin_word(), 1..4),
        prop::collection::vec((any::<bool>(), prop_oneof![Just("/".to_string()), pattern()]), 0..4),
    );
    prop::collection::vec(group, 0..8).prop_map(|groups| {
        let mut out = String::new();
        for (agents, rules) in groups {
            for a in agents {
                out.push_str(&format!("User-agent: {a}\n"));
            }
            for (allow, p) in rules {
                out.push_str(&format!("{}: {p}\n", if allow { "Allow" } else { "Disallow" }));
            }
            out.push('\n');
        }
        out
    })
}

/// A User-Agent header of browser-like words, pool tokens, catalog
/// crawlers and random words, with versions and separators.
fn mixed_user_agent() -> impl Strategy<Value = String> {
    let piece = (origin_word(), prop::sample::select(&["/1.2", "/", "; ", " ", ")", " (", "_", "-x"][..]));
    prop::collection::vec(piece, 1..7).prop_map(|pieces| {
        let mut ua = String::from("Mozilla/5.0 ");
        for (w, sep) in pieces {
            ua.push_str(&w);
            ua.push_str(sep);
        }
        ua
    })
}

/// Issue 21 item 2: whatever the origin's robots.txt says, a User-Agent
/// that carries one of the policy's tokens gets the decision it gets from
/// the policy alone, unless the origin serves a group for the crawler's
/// own longer token that holds the policy's (issue 33); and a browser's User-Agent of the shipped corpus is
/// identified as by the policy alone (an origin token never takes it).
#[test]
fn origin_merge_never_changes_a_policy_token_decision() {
    let browsers: Vec<&str> =
        include_str!("../data/browser-uas.txt").lines().filter(|l| l.starts_with("Mozilla/")).collect();
    let checked = Cell::new(0usize);
    let strategy = (
        gen_policy(),
        origin_file(),
        prop::collection::vec(mixed_user_agent(), 1..10),
        prop::collection::vec(request_path(), 1..4),
        any::<u8>(),
    );
    run(256, strategy, |(gen, origin, uas, paths, case)| {
        let Ok(l) = load(&gen.toml, "prop.toml") else { return Ok(()) };
        let policy = l.policy;
        let merged = match policy.merge_origin(origin.as_bytes()) {
            Ok(m) => m.policy,
            Err(e) => return Err(TestCaseError::fail(format!("merge failed: {e}"))),
        };
        let pool_uas = POOL.iter().filter(|t| **t != "*").map(|t| user_agent(t, case));
        for ua in uas.iter().cloned().chain(pool_uas) {
            for path in &paths {
                let alone = policy.decide(&ua, path);
                if alone.agent.is_none() {
                    continue;
                }
                checked.set(checked.get() + 1);
                let with_origin = merged.decide(&ua, path);
                // The one exception (issue 33, "served is enforced"): the
                // origin names the crawler's own, longer product token
                // (`Googlebot-Image` over `Googlebot`): that group is the
                // one it obeys.
                // Such a token holds a policy token as a word (the policy
                // alone identifies it) and ranks with it.
                let own_token = with_origin.agent.is_some_and(|o| is_whole_word(&ua, o) && policy.claim(o).is_some());
                if own_token && with_origin.group.is_some_and(|g| g.origin) {
                    continue;
                }
                prop_assert_eq!(
                    with_origin,
                    alone,
                    "UA {:?} path {:?}\n--- policy ---\n{}\n--- origin ---\n{}",
                    ua,
                    path,
                    gen.toml,
                    origin
                );
            }
        }
        for ua in &browsers {
            prop_assert_eq!(merged.decide(ua, "/").agent, policy.decide(ua, "/").agent, "{}\n{}", ua, origin);
        }
        Ok(())
    });
    assert!(checked.get() > 1000, "only {} decisions compared", checked.get());
}
