//! Merging an origin's robots.txt into a fixed policy (`[robots_txt]
//! origin = "merge"`), then identifying User-Agents: whatever the origin's
//! bytes, a User-Agent that carries one of the policy's tokens gets the
//! decision the policy alone gives it (issue 21: an origin group for
//! `compatible` took GPTBot's requests from the policy), unless the origin
//! serves a group for the crawler's own longer token (issue 33), and a browser's
//! User-Agent is identified as by the policy alone.

#![no_main]

use std::sync::LazyLock;

use crawlgate_policy::{load, Policy};
use libfuzzer_sys::fuzz_target;

const POLICY: &str = "[upstream]\nservers = [\"127.0.0.1:8000\"]\n\n[robots_txt]\norigin = \"merge\"\n\n\
[[group]]\nname = \"ai\"\nuser_agents = [\"GPTBot\", \"claudebot\", \"Googlebot-Image\"]\ndisallow = [\"/\"]\nenforce = \"block\"\n\n\
[[group]]\nuser_agents = [\"Googlebot\"]\ndisallow = [\"/g/\"]\nenforce = \"log\"\n\n\
[[group]]\nuser_agents = [\"*\"]\ndisallow = [\"/private/\"]\nenforce = \"log\"\n";

/// User-Agents asked of every merge (real crawlers' and browsers').
const UAS: &[&str] = &[
    "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)",
    "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    "Googlebot-Image/1.0",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
    "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
    "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
    "curl/8.5.0",
];

static BASE: LazyLock<Policy> = LazyLock::new(|| match load(POLICY, "fuzz.toml") {
    Ok(l) => l.policy,
    Err(e) => panic!("the fixed policy does not load: {e}"),
});

// Input: the origin's robots.txt, then optionally a 0 byte and more
// User-Agents, one a line.
fuzz_target!(|data: &[u8]| {
    let (origin, extra) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let Ok(merged) = BASE.merge_origin(origin) else { return };
    let merged = merged.policy;
    let extra = String::from_utf8_lossy(extra);
    // Also each user-agent value of the origin file inside a crawler-like
    // and a browser-like header.
    let origin_text = String::from_utf8_lossy(origin);
    let named: Vec<String> = origin_text
        .lines()
        .filter_map(|l| l.split_once(':').filter(|(k, _)| k.trim().eq_ignore_ascii_case("user-agent")))
        .map(|(_, v)| v.trim().to_string())
        .take(16)
        .collect();
    let mut uas: Vec<String> =
        UAS.iter().map(|s| s.to_string()).chain(extra.lines().take(16).map(str::to_string)).collect();
    for n in &named {
        uas.push(format!("Mozilla/5.0 (compatible; {n}/1.0; GPTBot/1.2)"));
        uas.push(format!("Mozilla/5.0 ({n}) Googlebot/2.1"));
        uas.push(format!("{n}/1.0"));
    }
    for ua in &uas {
        for path in ["/", "/g/x", "/private/x"] {
            let alone = BASE.decide(ua, path);
            let with_origin = merged.decide(ua, path);
            // The one exception (issue 33, "served is enforced"): the
            // origin serves a group for the crawler's own longer token,
            // which holds a policy token as a word (`Googlebot-Image-X`).
            let own_token = with_origin.group.is_some_and(|g| g.origin)
                && with_origin.agent.is_some_and(|o| BASE.claim(o).is_some());
            if alone.agent.is_some() && !own_token {
                assert_eq!(with_origin, alone, "UA {ua:?} path {path}");
            }
            let _ = with_origin.action();
        }
    }
    for ua in UAS.iter().filter(|u| u.starts_with("Mozilla/5.0 (Windows") || u.starts_with("Mozilla/5.0 (X11")) {
        assert_eq!(merged.decide(ua, "/").agent, BASE.decide(ua, "/").agent, "browser {ua:?}");
    }
});
