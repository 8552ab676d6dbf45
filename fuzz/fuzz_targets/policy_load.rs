//! The TOML policy loader on arbitrary UTF-8: errors are values, never
//! panics. A policy that loads is asked every question the proxy asks.

#![no_main]

use crawlgate_policy::{agents_txt, load};
use libfuzzer_sys::fuzz_target;

const UAS: &[&str] = &[
    "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    "curl/8.5.0",
    "",
];

fuzz_target!(|text: &str| {
    let Ok(loaded) = load(text, "fuzz.toml") else { return };
    let policy = loaded.policy;
    let robots = policy.robots_txt();
    assert!(robots.len() <= crawlgate_policy::MAX_ROBOTS_TXT);
    if let Some(a) = policy.agents_txt() {
        assert!(agents_txt::verify(a).is_ok(), "published agents.txt fails its verifier:\n{a}");
    }
    let tokens: Vec<String> = policy.tokens().map(str::to_string).collect();
    // Paths: the fixed ones, and every line of the input that looks like one.
    let mut paths: Vec<&str> = vec!["/", "/robots.txt", "/agents.txt", "/a/b?c=d", "/caf\u{e9}"];
    paths.extend(text.split(['"', '\n']).filter(|s| s.starts_with('/')).take(8));
    for path in &paths {
        for ua in UAS.iter().copied().chain(tokens.iter().take(4).map(String::as_str)) {
            let d = policy.decide(ua, path);
            let _ = d.action();
        }
        let c = policy.url_controls(path);
        if let Some(v) = &c.robots_tag {
            assert!(sfv::Parser::new(v.as_str()).parse::<sfv::List>().is_ok(), "Robots-Tag {v:?} is not a list");
        }
    }
    let _ = policy.stats();
});
