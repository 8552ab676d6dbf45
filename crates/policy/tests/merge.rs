//! Merging an origin's robots.txt into a policy: the golden of a merged
//! file, and the property that the merged robots.txt, parsed back by the
//! RFC 9309 evaluator `robots-test` uses, decides exactly as the merged
//! policy's `decide` (what the proxy enforces) on every (token, path).

#![cfg(test)]

use std::cell::Cell;
use std::path::PathBuf;

use crawlgate_policy::canonical::canonicalize;
use crawlgate_policy::robotstxt::RobotsTxt;
use crawlgate_policy::{load, LocalFile, Policy};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/merge").join(name)
}

fn read(name: &str) -> String {
    std::fs::read_to_string(data(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn golden_merged_robots_txt() {
    let policy = load(&read("policy.toml"), "policy.toml").unwrap_or_else(|e| panic!("{e}")).policy;
    let merged = policy.merge_origin(read("origin.robots.txt").as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    let path = data("merged.robots.txt");
    if let Some(failure) =
        crawlgate_testkit::golden::check(&path, "merged.robots.txt", merged.policy.robots_txt().as_bytes(), "merge")
    {
        panic!("{failure}");
    }
    let conflicts: Vec<String> = merged.conflicts.iter().map(ToString::to_string).collect();
    assert_eq!(
        conflicts,
        [
            "line 5: user-agent `*` is named by the policy (group `*` at line 21); the policy's group applies",
            "line 8: user-agent `GPTBot` is named by the policy (group `ai-training` at line 10); the policy's group applies",
            "line 11: user-agent `googlebot` is named by the policy (group `Googlebot` at line 16); the policy's group applies",
            "line 30: `Disallow /no-colon` read as `Disallow: /no-colon`",
        ]
    );
    assert_eq!((merged.origin_groups, merged.origin_sitemaps), (4, 1));
}

/// Tokens the policies draw from.
const POLICY_POOL: &[&str] = &["*", "Googlebot", "Googlebot-Image", "Claude", "a", "Bing-bot_x"];

/// Tokens the origin files draw from: some the policy may name (in another
/// case too), some from the `ai-training` category, some its own, `*`, and
/// values that are not product tokens.
const ORIGIN_POOL: &[&str] = &[
    "*",
    "googlebot",
    "Claude",
    "Claude_Web",
    "GPTBot",
    "CCBot",
    "Foo",
    "foo",
    "Foo-Bar",
    "Yandex",
    "Slurp",
    "Foo Bar",
    "Googlebot/2.1",
];

const UNKNOWN: &str = "UnknownCrawler";

const SEGMENTS: &[&str] =
    &["a", "b", "ab", "A", "x.php", "-", "%41", "%2F", "%7e", "é", "%C3%A9", "$", "%24", "%2A", "..", "?", "="];

fn request_path() -> impl Strategy<Value = String> {
    (prop::collection::vec(prop::sample::select(SEGMENTS), 0..4), any::<bool>()).prop_map(|(segs, trailing)| {
        let mut p = format!("/{}", segs.join("/"));
        if trailing && !segs.is_empty() {
            p.push('/');
        }
        p
    })
}

/// A pattern as written in policies and robots.txt files.
fn pattern() -> impl Strategy<Value = String> {
    let atom = prop_oneof![4 => prop::sample::select(SEGMENTS).prop_map(str::to_string), 1 => Just("*".to_string())];
    (
        prop::sample::select(&["/", "*", "/*"][..]),
        prop::collection::vec((any::<bool>(), atom), 0..3),
        prop::bool::weighted(0.2),
    )
        .prop_map(|(start, items, anchored)| {
            let mut p = start.to_string();
            for (slash, a) in items {
                if slash && !p.ends_with('/') {
                    p.push('/');
                }
                p.push_str(&a);
            }
            if anchored {
                p.push('$');
            }
            p
        })
}

/// Patterns only an origin writes: the policy loader refuses them, the
/// tolerant parser reads them.
fn origin_pattern() -> impl Strategy<Value = String> {
    prop_oneof![8 => pattern(), 1 => Just(String::new()), 1 => Just("a".to_string()), 1 => Just("x*".to_string())]
}

fn toml_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| toml::Value::String(s.clone()).to_string()).collect();
    format!("[{}]", quoted.join(", "))
}

/// A policy: groups of distinct pool tokens, sometimes the `ai-training`
/// category, enforce modes.
fn gen_policy() -> impl Strategy<Value = String> {
    let group = (
        prop::collection::vec(pattern(), 0..3),
        prop::collection::vec(pattern(), 0..3),
        prop::option::of(prop::sample::select(&["off", "log", "block"][..])),
    );
    (
        Just((0..POLICY_POOL.len()).collect::<Vec<_>>()).prop_shuffle(),
        prop::collection::vec((1usize..3, group), 0..4),
        any::<bool>(),
    )
        .prop_map(|(order, groups, category)| {
            let mut toml =
                String::from("[upstream]\nservers = [\"127.0.0.1:8000\"]\n\n[robots_txt]\norigin = \"merge\"\n");
            let mut next = 0;
            for (take, (allow, disallow, enforce)) in groups {
                let tokens: Vec<String> =
                    order.iter().skip(next).take(take).map(|&i| POLICY_POOL[i].to_string()).collect();
                next += take;
                if tokens.is_empty() {
                    continue;
                }
                toml.push_str(&format!("\n[[group]]\nuser_agents = {}\n", toml_list(&tokens)));
                if !allow.is_empty() {
                    toml.push_str(&format!("allow = {}\n", toml_list(&allow)));
                }
                if !disallow.is_empty() {
                    toml.push_str(&format!("disallow = {}\n", toml_list(&disallow)));
                }
                if let Some(e) = enforce {
                    toml.push_str(&format!("enforce = \"{e}\"\n"));
                }
            }
            if category {
                toml.push_str("\n[[group]]\ncategories = [\"ai-training\"]\ndisallow = [\"/a\"]\n");
            }
            toml
        })
}

/// An origin robots.txt: groups of pool tokens with rules and crawl
/// delays, sitemaps between groups, comments and junk lines.
fn gen_origin() -> impl Strategy<Value = String> {
    let group = (
        prop::collection::vec(prop::sample::select(ORIGIN_POOL), 1..3),
        prop::collection::vec((any::<bool>(), origin_pattern()), 0..4),
        prop::option::of(1u8..20),
        prop::option::of(prop::sample::select(
            &["Sitemap: https://e.com/s.xml", "Sitemap: https://e.com/t.xml", "# comment", "junk line", "Sitemap: /x"]
                [..],
        )),
    );
    prop::collection::vec(group, 0..6).prop_map(|groups| {
        let mut out = String::new();
        for (agents, rules, delay, after) in groups {
            for a in agents {
                out.push_str(&format!("User-agent: {a}\n"));
            }
            for (allow, p) in rules {
                out.push_str(&format!("{}: {p}\n", if allow { "Allow" } else { "Disallow" }));
            }
            if let Some(d) = delay {
                out.push_str(&format!("Crawl-delay: {d}\n"));
            }
            if let Some(line) = after {
                out.push_str(line);
                out.push('\n');
            }
            out.push('\n');
        }
        out
    })
}

fn run<S: Strategy>(cases: u32, strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>) {
    let mut runner = TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() });
    let result = runner.run(&strategy, test);
    assert!(result.is_ok(), "{}", result.err().map(|e| e.to_string()).unwrap_or_default());
}

/// One (token, path): the served bytes parsed back decide as `decide`.
fn same_decision(policy: &Policy, served: &RobotsTxt, token: &str, path: &str) -> Result<(), TestCaseError> {
    let d = policy.decide(token, path);
    // Identification may find a shorter token that is a whole word of this
    // one (a product decision, as in the policy's own round trip); the
    // robots.txt group that applies is then that token's.
    let effective = d.agent.unwrap_or(token);
    let verdict = served.is_allowed(effective, path);
    let rule = served.decide(effective, path).map(|r| (r.pattern.as_str(), r.allow));
    prop_assert_eq!(
        d.allowed,
        verdict,
        "token {} (as {}) path {:?}: decide {:?} (rule {:?}), served file {} (rule {:?})\n--- served ---\n{}",
        token,
        effective,
        path,
        d.allowed,
        d.rule,
        verdict,
        rule,
        policy.robots_txt()
    );
    prop_assert_eq!(d.rule.map(|r| (r.pattern, r.allow)), rule, "deciding rule of {} on {:?}", effective, path);
    Ok(())
}

/// The merged file served and the merged policy enforced are the same
/// thing, for every token of both pools and an unknown one.
#[test]
fn merged_robots_txt_decides_like_the_merged_policy() {
    let loaded = Cell::new(0usize);
    let strategy = (gen_policy(), gen_origin(), prop::collection::vec(request_path(), 1..6));
    run(512, strategy, |(toml, origin, paths)| {
        let Ok(l) = load(&toml, "prop.toml") else { return Ok(()) };
        loaded.set(loaded.get() + 1);
        let merged = l.policy.merge_origin(origin.as_bytes()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let served = RobotsTxt::parse(merged.policy.robots_txt().as_bytes());
        let tokens = POLICY_POOL.iter().chain(ORIGIN_POOL).copied().filter(|t| *t != "*" && !t.contains(' '));
        for token in tokens.chain([UNKNOWN]) {
            for path in paths.iter().filter(|p| LocalFile::at(&canonicalize(p)).is_none()) {
                same_decision(&merged.policy, &served, token, path).map_err(|e| {
                    TestCaseError::fail(format!("{e}\n--- policy ---\n{toml}\n--- origin ---\n{origin}"))
                })?;
            }
        }
        // Merging again with the same file changes nothing.
        let again = merged.policy.merge_origin(origin.as_bytes()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(again.policy.robots_txt(), merged.policy.robots_txt());
        Ok(())
    });
    assert!(loaded.get() > 400, "only {} of 512 generated policies loaded", loaded.get());
}

/// Issue 27: the real-world line shapes of `tests/data/robots/siteintent.robots.txt`
/// merged as the site meant them; the golden is the merged file served.
#[test]
fn golden_site_intent_merge() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/robots");
    let policy = load(&read("policy.toml"), "policy.toml").unwrap_or_else(|e| panic!("{e}")).policy;
    let origin = std::fs::read(root.join("siteintent.robots.txt")).unwrap_or_else(|e| panic!("{e}"));
    let merged = policy.merge_origin(&origin).unwrap_or_else(|e| panic!("{e}"));
    let mut report = merged.policy.robots_txt().to_string();
    report.push_str("\n# conflicts and repairs:\n");
    for c in &merged.conflicts {
        report.push_str(&format!("# {c}\n"));
    }
    let path = root.join("siteintent.merged.robots.txt");
    if let Some(failure) =
        crawlgate_testkit::golden::check(&path, "siteintent.merged.robots.txt", report.as_bytes(), "merge")
    {
        panic!("{failure}");
    }
}
