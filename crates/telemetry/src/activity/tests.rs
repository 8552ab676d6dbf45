use std::sync::Arc;

use crawlgate_policy::{load, Action, LocalFile, Policy};
use serde_json::json;

use super::*;
use crawlgate_policy::identify::looks_like_browser;

const POLICY: &str = r#"
[upstream]
servers = ["127.0.0.1:1"]

[[group]]
user_agents = ["GPTBot"]
disallow = ["/private/"]
enforce = "log"

[[group]]
user_agents = ["ClaudeBot"]
disallow = ["/"]
enforce = "block"
"#;

fn policy(src: &str) -> Policy {
    load(src, "test.toml").unwrap().policy
}

fn hit<'a>(p: &'a Policy, generation: u64, ua: &'a str, path: &'a str) -> Hit<'a> {
    let d = p.decide(ua, path);
    Hit {
        generation,
        agent: d.agent_id.zip(d.agent),
        browser: looks_like_browser(ua),
        outcome: d.action(),
        file: LocalFile::at(path),
        bytes: 10,
        path,
        rule: d.rule.filter(|r| !r.allow).map(|r| (r.pattern, r.line)),
        referer: None,
        client: Some("192.0.2.1".parse().unwrap()),
        verification: d.verification,
        reason: d.block_reason(),
        violation: d.violation(),
        observed: d.observed,
        claimed: d.claimed.filter(|_| d.agent.is_none()),
        paid: false,
        markdown: None,
        now: 1_000_000,
    }
}

fn row<'v>(v: &'v Value, agent: &str) -> &'v Value {
    v["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["agent"] == agent)
        .unwrap_or_else(|| panic!("no row {agent}: {v}"))
}

#[test]
fn exact_counts_under_concurrent_updates() {
    let p = Arc::new(policy(POLICY));
    let a = Arc::new(Activity::new(&p, 1));
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let (p, a) = (p.clone(), a.clone());
            std::thread::spawn(move || {
                for i in 0..2_000 {
                    let path = format!("/private/{}", (i + t) % 25);
                    a.hit(&hit(&p, 1, "GPTBot/1.0", if i % 2 == 0 { "/page" } else { &path }));
                    a.hit(&hit(&p, 1, "Mozilla/5.0 (X11) Firefox/128.0", "/page"));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let v = a.agents_json_at(Window::All, 1_000_000);
    let g = row(&v, "GPTBot");
    assert_eq!(
        (g["requests"].as_u64(), g["allowed"].as_u64(), g["violations"].as_u64(), g["bytes_sent"].as_u64()),
        (Some(16_000), Some(8_000), Some(8_000), Some(160_000))
    );
    assert_eq!(g["category"], "ai-training");
    assert_eq!(g["operator"], "OpenAI");
    assert_eq!(g["verification"], json!({"verified": 0, "unverified": 0, "spoofed": 0}));
    assert_eq!(row(&v, "browser")["requests"], 16_000);
    assert_eq!(v["total"]["requests"], 32_000);
    let t = a.total.window(1_000_000 / 60, 1);
    assert_eq!(t, vec![32_000]);
    // 25 distinct disallowed paths: the summary keeps 20, and the counts add up.
    let viol = a.violations_json(100);
    let paths = viol["agents"][0]["paths"].as_array().unwrap();
    assert_eq!(paths.len(), TOP_K);
    assert_eq!(paths.iter().map(|p| p["count"].as_u64().unwrap()).sum::<u64>(), 8_000);
    assert_eq!(paths[0]["rule"], "/private/");
}

#[test]
fn counts_survive_a_reload_and_new_tokens_get_slots() {
    let p1 = policy(POLICY);
    let a = Activity::new(&p1, 1);
    a.hit(&hit(&p1, 1, "GPTBot/1.0", "/"));
    // The new policy puts ClaudeBot first: ids change, names do not.
    let p2 = policy(
        r#"
[upstream]
servers = ["127.0.0.1:1"]

[[group]]
user_agents = ["ClaudeBot", "CCBot"]
disallow = ["/"]

[[group]]
user_agents = ["GPTBot"]
"#,
    );
    a.bind(&p2, 2);
    a.hit(&hit(&p2, 2, "GPTBot/1.0", "/"));
    a.hit(&hit(&p2, 2, "CCBot/2.0", "/"));
    // A request decided on the old generation finds its slot by name.
    a.hit(&hit(&p1, 1, "GPTBot/1.0", "/"));
    let v = a.agents_json_at(Window::All, 1_000_000);
    assert_eq!(row(&v, "GPTBot")["requests"], 3);
    assert_eq!(row(&v, "CCBot")["requests"], 1);
    assert!(v["agents"].as_array().unwrap().iter().all(|r| r["agent"] != "ClaudeBot"));
}

#[test]
fn verification_outcomes_are_counted_per_agent() {
    use crawlgate_policy::verification::{Method, Verification};
    let p = policy(POLICY);
    let a = Activity::new(&p, 1);
    for v in [
        Verification::Verified(Method::Ip),
        Verification::Spoofed(Method::Rdns),
        Verification::Spoofed(Method::Ip),
        Verification::Unverified,
        Verification::NotApplicable,
    ] {
        a.hit(&Hit { verification: v, ..hit(&p, 1, "GPTBot/1.0", "/") });
    }
    let v = a.agents_json_at(Window::All, 1_000_000);
    let r = row(&v, "GPTBot");
    assert_eq!(r["requests"], 5);
    assert_eq!(r["verification"], json!({"verified": 1, "unverified": 1, "spoofed": 2}));
}

/// Blocks are counted by reason; a claim blocked on an allowed path adds
/// no row to the top violations (no rule is passed for it).
#[test]
fn blocks_are_counted_by_reason() {
    use crawlgate_policy::verification::{Method, Verification};
    let p = policy(POLICY);
    let a = Activity::new(&p, 1);
    a.hit(&hit(&p, 1, "ClaudeBot/1.0", "/a"));
    let spoofed = Hit {
        outcome: Action::Block,
        verification: Verification::Spoofed(Method::Ip),
        reason: Some(BlockReason::Spoofed),
        rule: None,
        ..hit(&p, 1, "GPTBot/1.0", "/")
    };
    a.hit(&spoofed);
    let v = a.agents_json(Window::All);
    let zero = json!({"robots": 0, "spoofed": 0, "unverified": 0, "bad-request": 0, "loop": 0, "replayed": 0, "rate": 0, "payment": 0});
    let mut claude = zero.clone();
    claude["robots"] = json!(1);
    let mut gpt = zero;
    gpt["spoofed"] = json!(1);
    assert_eq!(row(&v, "ClaudeBot")["blocked_by"], claude);
    assert_eq!(row(&v, "GPTBot")["blocked_by"], gpt);
    let violations = a.violations_json(10);
    assert_eq!(
        violations["top"],
        json!([{"agent": "ClaudeBot", "count": 1, "error": 0, "line": 12, "path": "/a", "rule": "/"}])
    );
}

#[test]
fn compliance_and_referrals() {
    let p = policy(POLICY);
    let a = Activity::new(&p, 1);
    a.hit(&hit(&p, 1, "GPTBot/1.0", "/robots.txt"));
    a.hit(&hit(&p, 1, "GPTBot/1.0", "/a"));
    a.hit(&hit(&p, 1, "ClaudeBot/1.0", "/a"));
    a.hit(&hit(&p, 1, "ClaudeBot/1.0", "/b"));
    let mut h = hit(&p, 1, "Mozilla/5.0 (X11) Firefox/128.0", "/a");
    h.referer = Some("https://chatgpt.com/");
    a.hit(&h);
    let c = a.compliance_json(10);
    assert_eq!(c["agents"], json!([{"agent": "ClaudeBot", "networks": 1, "requests_without_robots": 2}]));
    assert_eq!(
        c["clients"],
        json!([{"agent": "ClaudeBot", "network": "192.0.2.0/24", "requests_without_robots": 2, "robots_fetched_at": null, "last_seen": 1_000_000}])
    );
    let v = a.agents_json_at(Window::All, 1_000_000);
    assert_eq!(row(&v, "GPTBot")["robots_txt"], 1);
    assert_eq!(row(&v, "GPTBot")["without_robots"], 0);
    assert_eq!(row(&v, "ClaudeBot")["blocked"], 2);
    let r = a.referrals_json_at(1_000_000);
    assert_eq!(r["products"], json!([{"product": "ChatGPT", "operator": "OpenAI", "referrals": 1}]));
    let ops = r["operators"].as_array().unwrap();
    let w = |c: u64, r: u64, b: u64| json!({"crawl_requests": c, "referrals": r, "crawls_per_referral": (r > 0).then(|| c as f64 / r as f64), "bytes_sent": b});
    assert_eq!(
        ops[0],
        json!({"operator": "OpenAI", "crawl_requests": 2, "referrals": 1, "crawls_per_referral": 2.0, "bytes_sent": 20,
               "windows": {"24h": w(2, 1, 20), "7d": w(2, 1, 20), "30d": w(2, 1, 20)}})
    );
    assert_eq!(
        ops[1],
        json!({"operator": "Anthropic", "crawl_requests": 2, "referrals": 0, "crawls_per_referral": null, "bytes_sent": 20,
               "windows": {"24h": w(2, 0, 20), "7d": w(2, 0, 20), "30d": w(2, 0, 20)}})
    );
    // Two days later the 24-hour window is empty, the others still count;
    // 31 days later all of them are.
    let later = a.referrals_json_at(1_000_000 + 2 * 86_400);
    assert_eq!(later["operators"][0]["windows"], json!({"24h": w(0, 0, 0), "7d": w(2, 1, 20), "30d": w(2, 1, 20)}));
    let much_later = a.referrals_json_at(1_000_000 + 31 * 86_400);
    assert_eq!(much_later["operators"][0]["windows"], json!({"24h": w(0, 0, 0), "7d": w(0, 0, 0), "30d": w(0, 0, 0)}));
    // A referrer's minutes go to the fleet beside the agents' counts.
    let minute = 1_000_000 / 60;
    let published: Vec<(String, &str, u64, u64)> = a
        .minute_counts(minute, minute)
        .into_iter()
        .filter(|(name, ..)| name.starts_with(REFERRER_PREFIX))
        .map(|(name, c, m, n)| (name.to_string(), c, m, n))
        .collect();
    assert_eq!(published, [("referrer:ChatGPT".to_string(), "referrals", minute, 1)]);
}

/// A 429 is Limited and a 402 asks for payment: neither is Blocked; a
/// charge that stands is Paid; Markdown requested and served per agent.
#[test]
fn limited_paid_and_markdown_are_counted_apart_from_blocks() {
    let p = policy(POLICY);
    let a = Activity::new(&p, 1);
    let refused = |reason| Hit { outcome: Action::Block, reason: Some(reason), ..hit(&p, 1, "GPTBot/1.0", "/page") };
    a.hit(&refused(BlockReason::Rate));
    a.hit(&refused(BlockReason::Rate));
    a.hit(&refused(BlockReason::Payment));
    a.hit(&Hit { paid: true, ..hit(&p, 1, "GPTBot/1.0", "/page") });
    a.hit(&Hit { markdown: Some(true), ..hit(&p, 1, "GPTBot/1.0", "/page") });
    a.hit(&Hit { markdown: Some(false), ..hit(&p, 1, "GPTBot/1.0", "/page") });
    let v = a.agents_json_at(Window::All, 1_000_000);
    let r = row(&v, "GPTBot");
    let got: Vec<&Value> = ["blocked", "limited", "payment_required", "paid", "markdown_requested", "markdown_served"]
        .map(|k| &r[k])
        .into();
    assert_eq!(got, [&json!(0), &json!(2), &json!(1), &json!(1), &json!(2), &json!(1)]);
    assert_eq!((&r["blocked_by"]["rate"], &r["blocked_by"]["payment"]), (&json!(2), &json!(1)));
    let md = &a.referrals_json_at(1_000_000)["markdown"];
    assert_eq!(*md, json!({"requested": 2, "served": 1, "agents": [{"agent": "GPTBot", "requested": 2, "served": 1}]}));
    // The window counts them too.
    let hour = a.agents_json_at(Window::Minutes(60), 1_000_000);
    assert_eq!((&row(&hour, "GPTBot")["limited"], &row(&hour, "GPTBot")["paid"]), (&json!(2), &json!(1)));
}

/// A violating path longer than [`MAX_PATH`] bytes is kept cut at the last
/// character boundary at or before it: here byte 256 falls inside an `é`.
#[test]
fn long_paths_are_cut_on_a_character_boundary() {
    let long = format!("/{}", "é".repeat(200));
    let kept = format!("/{}", "é".repeat(127));
    assert_eq!((long.len(), kept.len()), (401, 255));
    assert_eq!(cut(&long), kept);
    let at_limit = "/".repeat(MAX_PATH);
    assert_eq!(cut(&at_limit), at_limit);
    assert_eq!(cut(&format!("{at_limit}x")), at_limit);
    let p = policy(POLICY);
    let a = Activity::new(&p, 1);
    a.hit(&hit(&p, 1, "ClaudeBot/1.0", &long));
    assert_eq!(
        a.violations_json(10)["top"],
        json!([{"agent": "ClaudeBot", "count": 1, "error": 0, "line": 12, "path": kept, "rule": "/"}])
    );
}

/// Issue 21 item 6: an origin whose robots.txt names new tokens on every
/// refresh, with requests naming them, adds no metric series, no activity
/// slot and no dashboard row after the first copy (the real registry and
/// model, fed as the request path feeds them).
#[test]
fn rotating_origin_tokens_keep_series_and_slots_flat() {
    let p = policy(&format!("{POLICY}\n[[group]]\nuser_agents = [\"*\"]\ndisallow = [\"/x/\"]\nenforce = \"log\"\n"));
    let metrics = crate::metrics::Metrics::with_verification(false).unwrap();
    metrics.policy_loaded(1, std::time::SystemTime::now(), &p, None);
    let a = Activity::new(&p, 1);
    let series = |m: &crate::metrics::Metrics| {
        let text = String::from_utf8(m.encode().0).unwrap();
        text.lines().filter(|l| !l.starts_with('#') && !l.starts_with("process_")).count()
    };
    let mut counts = Vec::new();
    for rotation in 0..10 {
        let mut origin = String::from("User-agent: CCBot\nDisallow: /x/\n\n");
        for i in 0..300 {
            origin.push_str(&format!("User-agent: Rot{rotation}Bot{i}\nDisallow: /x/\n\n"));
        }
        let merged = p.merge_origin(origin.as_bytes()).unwrap().policy;
        a.bind(&merged, 1);
        metrics.snapshot_changed(&merged);
        for i in 0..300 {
            let ua = format!("Mozilla/5.0 (compatible; Rot{rotation}Bot{i}/1.0)");
            let h = hit(&merged, 1, &ua, "/x/page");
            assert_eq!(h.agent.map(|(_, n)| n.to_string()), Some(format!("Rot{rotation}Bot{i}")));
            a.hit(&h);
            let d = merged.decide(&ua, "/x/page");
            metrics.request(d.agent.unwrap_or("other"), d.action(), "none", std::time::Duration::ZERO);
            metrics.violation(d.agent.unwrap_or("other"), d.group.map_or("", |g| g.name));
            metrics.robots_fetch(d.agent.unwrap_or("other"), "robots.txt");
        }
        let ua = "Mozilla/5.0 (compatible; CCBot/2.0)";
        a.hit(&hit(&merged, 1, ua, "/x/page"));
        metrics.request("CCBot", Action::LogViolation, "none", std::time::Duration::ZERO);
        let rows = a.agents_json(Window::All)["agents"].as_array().map_or(0, Vec::len);
        counts.push((series(&metrics), a.slot_count(), rows, metrics.agent_labels()));
    }
    assert!(counts.iter().all(|c| *c == counts[0]), "{counts:?}");
    // GPTBot, ClaudeBot and the origin's catalog crawler CCBot.
    assert_eq!((counts[0].1, counts[0].3), (3, 3), "{counts:?}");
    let v = a.agents_json(Window::All);
    assert_eq!(row(&v, OTHER_BOT)["requests"], 3000);
    assert_eq!(row(&v, "CCBot")["requests"], 10);
    let text = String::from_utf8(metrics.encode().0).unwrap();
    assert!(text.contains("crawlgate_requests_total{agent=\"other\",decision=\"violation_logged\"} 3000"), "{text}");
    assert!(text.contains("crawlgate_violations_total{agent=\"other\",group=\"origin\"} 3000"), "{text}");
    assert!(!text.contains("Rot"), "{text}");
}

/// The page's vocabulary: robots.txt fetches are not Allowed, an enforced
/// disallow is both a violation and a block (reason `robots`), a spoof
/// refused on an allowed path is a block (reason `spoofed`) and no
/// violation, and a 400 is a block of its own reason.
#[test]
fn one_vocabulary_for_allowed_violations_and_blocks() {
    use crawlgate_policy::verification::{Method, Verification};
    let p = policy(POLICY);
    let a = Activity::new(&p, 1);
    a.hit(&hit(&p, 1, "ClaudeBot/1.0", "/robots.txt"));
    a.hit(&hit(&p, 1, "ClaudeBot/1.0", "/members/a"));
    a.hit(&hit(&p, 1, "GPTBot/1.0", "/robots.txt"));
    a.hit(&hit(&p, 1, "GPTBot/1.0", "/page"));
    a.hit(&hit(&p, 1, "GPTBot/1.0", "/private/a"));
    // A spoofed GPTBot refused on an allowed path.
    a.hit(&Hit {
        verification: Verification::Spoofed(Method::Ip),
        outcome: Action::Block,
        reason: Some(BlockReason::Spoofed),
        ..hit(&p, 1, "GPTBot/1.0", "/page")
    });
    a.hit(&Hit { reason: Some(BlockReason::BadRequest), ..hit(&p, 1, "GPTBot/1.0", "/x") });
    let v = a.agents_json_at(Window::All, 1_000_000);
    let pick = |r: &Value| {
        json!([
            r["requests"],
            r["allowed"],
            r["violations"],
            r["blocked"],
            r["spoofed"],
            r["verified"],
            r["robots_txt"]
        ])
    };
    assert_eq!(pick(row(&v, "ClaudeBot")), json!([2, 0, 1, 1, 0, 0, 1]));
    assert_eq!(pick(row(&v, "GPTBot")), json!([5, 1, 1, 2, 1, 0, 1]));
    assert_eq!(
        row(&v, "GPTBot")["blocked_by"],
        json!({"robots": 0, "spoofed": 1, "unverified": 0, "bad-request": 1, "loop": 0, "replayed": 0, "rate": 0, "payment": 0})
    );
    assert_eq!(row(&v, "ClaudeBot")["blocked_by"]["robots"], 1);
    assert_eq!(
        v["total"],
        json!({
            "requests": 7, "allowed": 1, "violations": 2, "blocked": 3, "spoofed": 1, "verified": 0,
            "robots_txt": 2, "without_robots": 0, "agents_txt": 0, "bytes_sent": 70, "limited": 0,
            "payment_required": 0, "paid": 0, "markdown_requested": 0, "markdown_served": 0,
            "blocked_by": {"robots": 1, "spoofed": 1, "unverified": 0, "bad-request": 1, "loop": 0, "replayed": 0, "rate": 0, "payment": 0},
        })
    );
    // Only the two disallowed paths are violations.
    let viol = a.violations_json(10);
    let paths: Vec<&Value> = viol["top"].as_array().unwrap().iter().map(|t| &t["path"]).collect();
    assert_eq!(paths, [&json!("/members/a"), &json!("/private/a")]);
}

/// `window=1h|6h|24h` counts the requests of that span from the per-minute
/// rings; `per_minute` is the last hour of requests, oldest first.
#[test]
fn windows_and_the_sparkline() {
    let p = policy(POLICY);
    let a = Activity::new(&p, 1);
    let now = 1_000_000 * 60 + 30;
    let at = |secs_ago: u64, path: &'static str| Hit { now: now - secs_ago, ..hit(&p, 1, "GPTBot/1.0", path) };
    a.hit(&at(0, "/page"));
    a.hit(&at(0, "/page"));
    a.hit(&at(120, "/private/a"));
    a.hit(&at(2 * 3600, "/page"));
    a.hit(&at(20 * 3600, "/private/b"));
    a.hit(&at(30 * 3600, "/page"));
    a.hit(&Hit { now: now - 2 * 3600, ..hit(&p, 1, "ClaudeBot/1.0", "/a") });
    let counts = |w: Window| {
        let v = a.agents_json_at(w, now);
        let rows: Vec<Value> = v["agents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| json!([r["agent"], r["requests"], r["allowed"], r["violations"], r["blocked"]]))
            .collect();
        (v["window"].clone(), json!(rows), v["total"]["requests"].clone())
    };
    assert_eq!(counts(Window::Minutes(60)), (json!("1h"), json!([["GPTBot", 3, 2, 1, 0]]), json!(3)));
    assert_eq!(
        counts(Window::Minutes(360)),
        (json!("6h"), json!([["GPTBot", 4, 3, 1, 0], ["ClaudeBot", 1, 0, 1, 1]]), json!(5))
    );
    assert_eq!(
        counts(Window::Minutes(MINUTES)),
        (json!("24h"), json!([["GPTBot", 5, 3, 2, 0], ["ClaudeBot", 1, 0, 1, 1]]), json!(6))
    );
    assert_eq!(
        counts(Window::All),
        (json!("all"), json!([["GPTBot", 6, 4, 2, 0], ["ClaudeBot", 1, 0, 1, 1]]), json!(7))
    );
    let v = a.agents_json_at(Window::Minutes(60), now);
    let mut spark = vec![0u64; SPARKLINE_MINUTES];
    spark[59] = 2;
    spark[57] = 1;
    assert_eq!(v["agents"][0]["per_minute"], json!(spark));
    assert_eq!(Window::parse("6h"), Some(Window::Minutes(360)));
    assert_eq!(Window::parse("7h"), None);
}

/// The violations grouped by agent and rule, most first, the paths under
/// each.
#[test]
fn violations_grouped_by_agent_and_rule() {
    let p = policy(POLICY);
    let a = Activity::new(&p, 1);
    for path in ["/private/a", "/private/b", "/private/b"] {
        a.hit(&hit(&p, 1, "GPTBot/1.0", path));
    }
    a.hit(&hit(&p, 1, "ClaudeBot/1.0", "/x"));
    let groups = &a.violations_json(10)["groups"];
    assert_eq!(
        groups,
        &json!([
            {"agent": "GPTBot", "rule": "/private/", "line": 7, "count": 3, "paths": [
                {"path": "/private/b", "count": 2, "error": 0},
                {"path": "/private/a", "count": 1, "error": 0},
            ]},
            {"agent": "ClaudeBot", "rule": "/", "line": 12, "count": 1, "paths": [
                {"path": "/x", "count": 1, "error": 0},
            ]},
        ])
    );
}

/// A catalog crawler the policy does not name gets its own row and counts
/// under its operator in the referral ratio.
#[test]
fn unnamed_catalog_crawler_counts_under_its_operator() {
    let p = policy(POLICY);
    let a = Activity::new(&p, 1);
    let ua = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; PerplexityBot/1.0; +https://perplexity.ai/perplexitybot)";
    a.hit(&hit(&p, 1, ua, "/a"));
    a.hit(&hit(&p, 1, ua, "/b"));
    let mut h = hit(&p, 1, "Mozilla/5.0 (X11) Firefox/128.0", "/a");
    h.referer = Some("https://www.perplexity.ai/");
    a.hit(&h);
    let v = a.agents_json(Window::All);
    assert_eq!(row(&v, "PerplexityBot")["requests"], 2);
    assert_eq!(row(&v, "PerplexityBot")["operator"], "Perplexity");
    let ops = a.referrals_json_at(1_000_000)["operators"].clone();
    let perplexity = ops.as_array().and_then(|o| o.iter().find(|r| r["operator"] == "Perplexity")).cloned();
    let w = json!({"crawl_requests": 2, "referrals": 1, "crawls_per_referral": 2.0, "bytes_sent": 20});
    assert_eq!(
        perplexity,
        Some(json!({"operator": "Perplexity", "crawl_requests": 2, "referrals": 1, "crawls_per_referral": 2.0,
                    "bytes_sent": 20, "windows": {"24h": w, "7d": w, "30d": w}}))
    );
}

/// An origin group's disallow under `enforce = "off"` is forwarded and is
/// a violation on the page as in the access line (issue 22: Violations are
/// every request to a disallowed path, enforced or not), not an Allowed one.
#[test]
fn origin_disallow_under_off_is_a_violation_not_allowed() {
    let p = policy(POLICY);
    let merged = p.merge_origin(b"User-agent: ExampleBot\nDisallow: /v1-only/\n").unwrap().policy;
    let a = Activity::new(&merged, 1);
    let h = hit(&merged, 1, "ExampleBot/1.0", "/v1-only/a");
    assert!(h.violation && h.outcome == Action::Pass, "{:?}", h.outcome);
    a.hit(&h);
    a.hit(&hit(&merged, 1, "ExampleBot/1.0", "/other"));
    let v = a.agents_json(Window::All);
    let r = row(&v, OTHER_BOT);
    assert_eq!(
        (&r["requests"], &r["allowed"], &r["violations"], &r["blocked"]),
        (&json!(2), &json!(1), &json!(1), &json!(0))
    );
}
