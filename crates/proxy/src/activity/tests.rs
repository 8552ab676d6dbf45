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
    let v = a.agents_json();
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
    let v = a.agents_json();
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
    let v = a.agents_json();
    let r = row(&v, "GPTBot");
    assert_eq!(r["requests"], 5);
    assert_eq!(r["verification"], json!({"verified": 1, "unverified": 1, "spoofed": 2}));
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
    assert_eq!(c["clients"][0]["network"], "192.0.2.0/24");
    assert_eq!(c["clients"][0]["robots_fetched_at"], Value::Null);
    let v = a.agents_json();
    assert_eq!(row(&v, "GPTBot")["robots_txt"], 1);
    assert_eq!(row(&v, "GPTBot")["without_robots"], 0);
    assert_eq!(row(&v, "ClaudeBot")["blocked"], 2);
    let r = a.referrals_json();
    assert_eq!(r["products"], json!([{"product": "ChatGPT", "operator": "OpenAI", "referrals": 1}]));
    let ops = r["operators"].as_array().unwrap();
    assert_eq!(ops[0], json!({"operator": "OpenAI", "crawl_requests": 2, "referrals": 1, "crawls_per_referral": 2.0}));
    assert_eq!(
        ops[1],
        json!({"operator": "Anthropic", "crawl_requests": 2, "referrals": 0, "crawls_per_referral": null})
    );
    assert_eq!((Action::Pass, cut(&"é".repeat(200)).len()), (Action::Pass, 256));
}
