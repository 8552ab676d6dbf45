//! `Policy::decide` on a realistic policy, against two other Rust
//! robots.txt matchers asked the same questions.
//!
//! The policy: the product tokens of ai.robots.txt's `robots.json` (the
//! names matching `^[A-Za-z_-]+$`, snapshot in `data/ai-robots-tokens.txt`,
//! MIT, see `data/LICENSE-ai-robots-txt` of this crate) plus search-engine
//! and social-preview tokens, in six groups, with 500 Allow/Disallow rules
//! (prefixes, `*` wildcards, `$` anchors; most in `*`). The TOML is
//! generated here, deterministically, and loaded once.
//!
//! - `crawlgate`: one `decide(full User-Agent, path)` per iteration; it
//!   identifies the agent in the whole header, selects the group,
//!   canonicalises the path and finds the deciding rule.
//! - `texting_robots`: `Robot::allowed(path)` on a `Robot` built beforehand
//!   for the agent's token (its best case: parsing is outside the timing,
//!   and the caller has already picked the product token).
//! - `robotstxt`: Google's matcher ported to Rust;
//!   `one_agent_allowed_by_robots(robots_txt, token, url)` parses the whole
//!   file on every call (it has no other API), so that is what is timed.
//!
//! Run: `cargo bench -p crawlgate-policy --bench decide`.

// `criterion_group!` defines an undocumented public function; a bench
// that cannot set up has nothing to measure, so it panics.
#![allow(missing_docs, clippy::panic)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};

mod common;
use common::{policy, policy_with_catalog, PATHS, USER_AGENTS};

fn bench(c: &mut Criterion) {
    let policy = policy();
    let robots = policy.robots_txt().to_string();
    let stats = policy.stats();
    let tokens = policy.tokens().count();
    eprintln!(
        "policy: {} groups, {tokens} tokens, {} rules, robots.txt {} bytes",
        stats.groups,
        stats.rules,
        robots.len()
    );

    // The fixed rotation of questions: every UA with every path, in an
    // order that does not repeat a UA twice in a row.
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    for p in 0..PATHS.len() {
        for u in 0..USER_AGENTS.len() {
            pairs.push((u, (p + u) % PATHS.len()));
        }
    }
    let urls: Vec<String> = PATHS.iter().map(|p| format!("https://example.com{p}")).collect();
    let robots_by_ua: Vec<texting_robots::Robot> = USER_AGENTS
        .iter()
        .map(|(_, token)| match texting_robots::Robot::new(token, robots.as_bytes()) {
            Ok(r) => r,
            Err(e) => panic!("texting_robots cannot parse the robots.txt: {e}"),
        })
        .collect();

    // The three must agree on these questions (they all follow RFC 9309
    // here); say so if they do not, and how often.
    let (mut tr_diff, mut g_diff, mut disallowed) = (0, 0, 0);
    for &(u, p) in &pairs {
        let ours = policy.decide(USER_AGENTS[u].0, PATHS[p]).allowed;
        disallowed += usize::from(!ours);
        tr_diff += usize::from(robots_by_ua[u].allowed(PATHS[p]) != ours);
        let google =
            robotstxt::DefaultMatcher::default().one_agent_allowed_by_robots(&robots, USER_AGENTS[u].1, &urls[p]);
        g_diff += usize::from(google != ours);
    }
    eprintln!(
        "{} questions, {disallowed} disallowed; texting_robots differs on {tr_diff}, robotstxt on {g_diff}",
        pairs.len()
    );

    let mut g = c.benchmark_group("decide");
    g.warm_up_time(Duration::from_secs(2)).measurement_time(Duration::from_secs(6));
    g.bench_function("crawlgate", |b| {
        let mut i = 0;
        b.iter(|| {
            let (u, p) = pairs[i % pairs.len()];
            i += 1;
            black_box(policy.decide(black_box(USER_AGENTS[u].0), black_box(PATHS[p])).allowed)
        })
    });
    // The catalog issue's regression check: the same questions with every
    // catalog token in the policy as well (one group per category).
    let with_catalog = policy_with_catalog();
    eprintln!("with the catalog: {} tokens, {} groups", with_catalog.tokens().count(), with_catalog.stats().groups);
    g.bench_function("crawlgate+catalog", |b| {
        let mut i = 0;
        b.iter(|| {
            let (u, p) = pairs[i % pairs.len()];
            i += 1;
            black_box(with_catalog.decide(black_box(USER_AGENTS[u].0), black_box(PATHS[p])).allowed)
        })
    });
    g.bench_function("texting_robots", |b| {
        let mut i = 0;
        b.iter(|| {
            let (u, p) = pairs[i % pairs.len()];
            i += 1;
            black_box(robots_by_ua[u].allowed(black_box(PATHS[p])))
        })
    });
    g.bench_function("robotstxt", |b| {
        let mut i = 0;
        b.iter(|| {
            let (u, p) = pairs[i % pairs.len()];
            i += 1;
            black_box(robotstxt::DefaultMatcher::default().one_agent_allowed_by_robots(
                black_box(&robots),
                USER_AGENTS[u].1,
                black_box(&urls[p]),
            ))
        })
    });
    g.finish();
}

/// `url_controls` on a policy with Robots-Tag entries: what a proxied
/// response under header/meta rules asks of the policy.
fn bench_controls(c: &mut Criterion) {
    let toml = "[upstream]\nservers = [\"127.0.0.1:8000\"]\n\n[[group]]\nuser_agents = [\"*\"]\ncontent_usage = [\"train-ai=n\"]\n\n\
                [[robots_tag]]\npath = \"/\"\nagents = [\"GPTBot\"]\nrules = [\"noai\"]\nhtml = \"inject\"\n\n\
                [[robots_tag]]\npath = \"/drafts/\"\nrules = [\"noindex\", \"nosnippet\"]\n";
    let policy = match crawlgate_policy::load(toml, "controls.toml") {
        Ok(l) => l.policy,
        Err(e) => panic!("{e}"),
    };
    c.bench_function("url_controls/drafts", |b| {
        b.iter(|| black_box(policy.url_controls(black_box("/drafts/post.html"))))
    });
}

/// Identification alone: the catalog-sized policy's token matcher on a
/// browser's User-Agent (no token: the whole header is scanned) and a
/// crawler's.
fn bench_identify(c: &mut Criterion) {
    let policy = policy_with_catalog();
    let matcher = crawlgate_policy::identify::TokenMatcher::new(&policy.tokens().collect::<Vec<_>>());
    let browser =
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
    let crawler = USER_AGENTS[0].0;
    assert!(matcher.find(browser).is_none() && matcher.find(crawler).is_some());
    c.bench_function("identify/browser", |b| b.iter(|| matcher.find(black_box(browser))));
    c.bench_function("identify/crawler", |b| b.iter(|| matcher.find(black_box(crawler))));
}

/// Identification on a policy merged with an origin robots.txt of 200
/// groups (some for browser words, which a merge now drops), and on the
/// plain policy: 1,024 distinct User-Agents per iteration, more than the
/// per-thread remembered answers hold, so each one is searched.
fn bench_identify_merged(c: &mut Criterion) {
    let policy = policy();
    let mut origin = String::from("User-agent: compatible\nAllow: /\n\nUser-agent: Mozilla\nAllow: /\n\n");
    for i in 0..200 {
        origin.push_str(&format!("User-agent: OriginBot{i}\nDisallow: /o{i}/\n\n"));
    }
    let merged = match policy.merge_origin(origin.as_bytes()) {
        Ok(m) => m.policy,
        Err(e) => panic!("{e}"),
    };
    let uas: Vec<String> = (0..1024)
        .map(|i| match i % 4 {
            0 => format!("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{i}.0.0.0 Safari/537.36"),
            1 => format!("Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.{i}; +https://openai.com/gptbot)"),
            2 => format!("Mozilla/5.0 (compatible; OriginBot{}/{i}.0)", i % 200),
            _ => format!("Mozilla/5.0 (compatible; Googlebot/2.{i}; +http://www.google.com/bot.html)"),
        })
        .collect();
    for (name, p) in [("identify/plain_1024_uncached", &policy), ("identify/merged_1024_uncached", &merged)] {
        c.bench_function(name, |b| {
            b.iter(|| {
                for ua in &uas {
                    black_box(p.claim(black_box(ua)));
                }
            })
        });
    }
}

criterion_group!(benches, bench, bench_controls, bench_identify, bench_identify_merged);
criterion_main!(benches);
