//! The built-in catalog against identification: a policy naming every
//! catalog token (one group per category) must identify each example
//! User-Agent as its own entry, every `<token>/1.0` as its token, and none of
//! the ordinary browser / library User-Agents of `data/browser-uas.txt` as
//! anything. Plus the policy-level catalog rules: category expansion, explicit
//! `user_agents` winning over a category, and the robots-only warning.

#![cfg(test)]

use crawlgate_policy::catalog::{self, Entry, CATEGORIES};
use crawlgate_policy::{load, Loaded};

const BROWSER_UAS: &str = include_str!("../data/browser-uas.txt");

fn load_ok(toml: &str) -> Loaded {
    match load(toml, "t.toml") {
        Ok(l) => l,
        Err(e) => panic!("policy does not load:\n{e}\n---\n{toml}"),
    }
}

fn load_err(toml: &str) -> String {
    match load(toml, "t.toml") {
        Ok(_) => panic!("policy loads, expected an error:\n{toml}"),
        Err(e) => e.to_string(),
    }
}

fn warnings(l: &Loaded) -> Vec<String> {
    l.warnings.iter().map(ToString::to_string).collect()
}

/// A `*` group plus one group per category: every catalog token.
fn whole_catalog_policy() -> String {
    let mut s = String::from(
        "[upstream]\nservers = [\"127.0.0.1:8000\"]\n\n[[group]]\nuser_agents = [\"*\"]\ndisallow = [\"/private/\"]\n",
    );
    for c in CATEGORIES {
        s.push_str(&format!("\n[[group]]\nname = \"{c}\"\ncategories = [\"{c}\"]\ndisallow = [\"/\"]\n"));
    }
    s
}

fn whole_catalog() -> Loaded {
    let l = load_ok(&whole_catalog_policy());
    assert_eq!(l.policy.tokens().count(), catalog::entries().len(), "the policy does not name every catalog token");
    l
}

fn agent_of<'p>(l: &'p Loaded, ua: &str) -> Option<&'p str> {
    l.policy.decide(ua, "/").agent
}

/// The catalog entry a User-Agent is identified as (policy spelling may
/// differ in case from the catalog's).
fn identified(l: &Loaded, ua: &str) -> Option<&'static Entry> {
    agent_of(l, ua)
        .map(|a| catalog::lookup(a).unwrap_or_else(|| panic!("identified `{a}`, which is not a catalog token")))
}

#[test]
fn every_example_ua_identifies_its_own_entry() {
    let l = whole_catalog();
    let mut failures = Vec::new();
    let mut checked = 0;
    for e in catalog::entries() {
        let Some(ua) = &e.example_ua else { continue };
        checked += 1;
        let got = identified(&l, ua).map(|x| x.token.as_str());
        if !got.is_some_and(|g| g.eq_ignore_ascii_case(&e.token)) {
            failures.push(format!("{}: {ua:?} identified as {got:?}", e.token));
        }
        // The group applied is the entry's category group.
        let d = l.policy.decide(ua, "/");
        if d.group.map(|g| g.name) != e.categories.first().map(String::as_str) {
            failures.push(format!(
                "{}: {ua:?} got group {:?}, category {:?}",
                e.token,
                d.group.map(|g| g.name),
                e.categories
            ));
        }
    }
    assert!(checked >= 80, "only {checked} example User-Agents");
    assert!(
        failures.is_empty(),
        "{} of {checked} example User-Agents misidentified:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn browser_and_library_uas_identify_nothing() {
    let l = whole_catalog();
    let mut failures = Vec::new();
    let mut checked = 0;
    for (n, ua) in BROWSER_UAS.lines().enumerate() {
        assert!(!ua.trim().is_empty(), "browser-uas.txt:{}: empty line", n + 1);
        checked += 1;
        if let Some(a) = agent_of(&l, ua) {
            failures.push(format!("browser-uas.txt:{}: {ua:?} identified as {a}", n + 1));
        }
        let d = l.policy.decide(ua, "/");
        if d.group.map(|g| g.name) != Some("*") {
            failures.push(format!(
                "browser-uas.txt:{}: {ua:?} got group {:?}, not `*`",
                n + 1,
                d.group.map(|g| g.name)
            ));
        }
    }
    assert!(checked >= 60, "only {checked} browser User-Agents");
    assert!(
        failures.is_empty(),
        "{} of {checked} browser User-Agents identified as crawlers:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_token_with_a_version_identifies_itself() {
    let l = whole_catalog();
    let mut failures = Vec::new();
    for e in catalog::entries() {
        for ua in [
            format!("{}/1.0", e.token),
            e.token.clone(),
            format!("Mozilla/5.0 (compatible; {}/2.1; +https://example.com/bot)", e.token),
            format!("{}/1.0", e.token.to_ascii_lowercase()),
            format!("{}/1.0", e.token.to_ascii_uppercase()),
        ] {
            let got = agent_of(&l, &ua);
            if !got.is_some_and(|g| g.eq_ignore_ascii_case(&e.token)) {
                failures.push(format!("{}: {ua:?} identified as {got:?}", e.token));
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn tokens_match_only_as_whole_words() {
    let l = whole_catalog();
    // (User-Agent, expected token). Real catalog tokens, including the ones
    // that are ordinary words or names (data/README.md).
    let cases: &[(&str, Option<&str>)] = &[
        // Inside a longer word: no match.
        ("xGPTBotx", None),
        ("GPTBotanist/1.0", None),
        ("MyGPTBot/1.0", None),
        ("GPTBot2/1.0", None),
        ("ClaudeBotty", None),
        ("Mozilla/5.0 (Cursorily; rv:1)", None),
        ("Precursor/2.0", None),
        ("Devine/1.0", None),
        ("Yakima-Client/3", None),
        ("Yetis/1.0", None),
        ("Mastodonte/1.0", None),
        ("Slurpee/1.0", None),
        ("Traefik/2.11", None),
        ("LCCN-fetch/1.0", None),
        ("Anomurans/1.0", None),
        // Delimited by start, end, `/`, `;`, `(`, `)`, space, `+`, `,`: match.
        ("GPTBot", Some("GPTBot")),
        ("GPTBot/1.2", Some("GPTBot")),
        ("x;GPTBot;y", Some("GPTBot")),
        ("(GPTBot)", Some("GPTBot")),
        ("a GPTBot b", Some("GPTBot")),
        ("+GPTBot+", Some("GPTBot")),
        ("compatible,GPTBot,1", Some("GPTBot")),
        ("Mozilla/5.0 (compatible; ClaudeBot/1.0; +claudebot@anthropic.com)", Some("ClaudeBot")),
        ("Cursor/0.42.3", Some("Cursor")),
        ("Mozilla/5.0 (compatible; Yeti/1.1; +http://naver.me/bot)", Some("Yeti")),
        // Case-insensitive, policy spelling returned.
        ("gptbot/1.0", Some("GPTBot")),
        ("GPTBOT/1.0", Some("GPTBot")),
        ("mozilla/5.0 (compatible; CLAUDEBOT/1.0)", Some("ClaudeBot")),
        // `-` and `_` are boundaries (spec: any character outside
        // [A-Za-z0-9]); the longest token found wins.
        ("Googlebot-Image/1.0", Some("Googlebot-Image")),
        ("Googlebot-Imagex/1.0", Some("Googlebot")),
        ("AdsBot-Google-Mobile", Some("AdsBot-Google-Mobile")),
        ("AdsBot-Google (+http://www.google.com/adsbot.html)", Some("AdsBot-Google")),
        ("GPTBot_test/1.0", Some("GPTBot")),
        // Non-ASCII around a token is a boundary, and no Unicode case folding.
        ("élan GPTBot/1 ünï", Some("GPTBot")),
        ("GPTBo\u{212a}/1.0", None),
        // Nothing.
        ("", None),
        ("-", None),
    ];
    let mut failures = Vec::new();
    for (ua, want) in cases {
        let got = agent_of(&l, ua);
        if got != *want {
            failures.push(format!("{ua:?}: identified as {got:?}, expected {want:?}"));
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn categories_expand_to_catalog_tokens_in_robots_txt() {
    let l = load_ok(
        "[upstream]\nservers = [\"127.0.0.1:8000\"]\n\n[[group]]\nuser_agents = [\"*\"]\nallow = [\"/\"]\n\n[[group]]\nname = \"ai\"\ncategories = [\"ai-training\"]\ndisallow = [\"/\"]\n",
    );
    let robots = l.policy.robots_txt();
    let tokens = catalog::tokens_in_category("ai-training").unwrap_or_default();
    assert!(tokens.len() >= 20);
    for t in &tokens {
        assert!(robots.contains(&format!("User-agent: {t}\n")), "robots.txt lacks `{t}`:\n{robots}");
    }
    assert!(!robots.contains("User-agent: OAI-SearchBot"), "{robots}");
    let uas = robots.lines().filter(|l| l.starts_with("User-agent: ")).count();
    assert_eq!(uas, tokens.len() + 1);
    assert!(!l.policy.decide("Mozilla/5.0 (compatible; GPTBot/1.2)", "/x").allowed);
    assert!(l.policy.decide("Mozilla/5.0 (compatible; OAI-SearchBot/1.0)", "/x").allowed);
}

#[test]
fn categories_beside_user_agents_in_one_group() {
    // A token both named and brought by the category appears once.
    let l = load_ok(
        "[upstream]\nservers = [\"127.0.0.1:8000\"]\n\n[[group]]\nuser_agents = [\"gptbot\", \"MyOwnBot\"]\ncategories = [\"ai-training\"]\ndisallow = [\"/\"]\n",
    );
    let robots = l.policy.robots_txt();
    assert_eq!(robots.matches("User-agent: gptbot\n").count(), 1, "{robots}");
    assert!(!robots.contains("User-agent: GPTBot\n"), "{robots}");
    assert!(robots.contains("User-agent: MyOwnBot\n"), "{robots}");
    assert_eq!(l.policy.decide("GPTBot/1.0", "/").agent, Some("gptbot"));
    assert!(warnings(&l).is_empty(), "{:?}", warnings(&l));
}

#[test]
fn unknown_category_lists_the_known_ones() {
    let e = load_err(
        "[upstream]\nservers = [\"127.0.0.1:8000\"]\n\n[[group]]\ncategories = [\"ai\"]\ndisallow = [\"/\"]\n",
    );
    assert!(
        e.starts_with("t.toml:5:15: group.categories: unknown category `ai` (known: ai-training, ai-search,"),
        "{e}"
    );
}

#[test]
fn block_on_robots_only_tokens_of_a_category_warns_once() {
    let l = load_ok(
        "[upstream]\nservers = [\"127.0.0.1:8000\"]\n\n[[group]]\ncategories = [\"ai-training\"]\ndisallow = [\"/\"]\nenforce = \"block\"\n",
    );
    let w = warnings(&l);
    assert_eq!(
        w,
        vec![
            "t.toml:7:11: warning[robots-only-token]: group.enforce: `Applebot-Extended`, `Google-Extended` never appear in a User-Agent header (robots.txt-only tokens): robots.txt publishes them, but `block` cannot apply to them"
        ],
        "{w:#?}"
    );
    // Still published.
    assert!(l.policy.robots_txt().contains("User-agent: Google-Extended\n"));
    assert!(l.policy.robots_txt().contains("User-agent: Applebot-Extended\n"));
}

#[test]
fn block_on_one_robots_only_token_warns() {
    let l = load_ok(
        "[upstream]\nservers = [\"127.0.0.1:8000\"]\n\n[[group]]\nuser_agents = [\"GPTBot\", \"google-extended\"]\ndisallow = [\"/\"]\nenforce = \"block\"\n",
    );
    assert_eq!(
        warnings(&l),
        vec![
            "t.toml:7:11: warning[robots-only-token]: group.enforce: `google-extended` never appears in a User-Agent header (a robots.txt-only token): robots.txt publishes it, but `block` cannot apply to it"
        ]
    );
    // Not with `log` or `off`, nor for ordinary tokens.
    for enforce in ["log", "off"] {
        let l = load_ok(&format!(
            "[upstream]\nservers = [\"127.0.0.1:8000\"]\n\n[[group]]\ncategories = [\"ai-training\"]\ndisallow = [\"/\"]\nenforce = \"{enforce}\"\n"
        ));
        assert!(warnings(&l).is_empty(), "{enforce}: {:?}", warnings(&l));
    }
    let l = load_ok("[upstream]\nservers = [\"127.0.0.1:8000\"]\n\n[[group]]\ncategories = [\"ai-search\"]\ndisallow = [\"/\"]\nenforce = \"block\"\n");
    assert!(warnings(&l).is_empty(), "{:?}", warnings(&l));
}

#[test]
fn explicit_user_agents_win_over_a_category_in_either_order() {
    let explicit = "[[group]]\nname = \"gpt\"\nuser_agents = [\"gptbot\"]\nallow = [\"/\"]\n";
    let category = "[[group]]\nname = \"training\"\ncategories = [\"ai-training\"]\ndisallow = [\"/\"]\n";
    for (first, second) in [(explicit, category), (category, explicit)] {
        let src = format!("[upstream]\nservers = [\"127.0.0.1:8000\"]\n\n{first}\n{second}");
        let l = load_ok(&src);
        // The category group names the token it loses and where it goes.
        let line = if first == category { 6 } else { 11 };
        let join = if first == category { 9 } else { 4 };
        assert_eq!(
            warnings(&l),
            vec![format!("t.toml:{line}:15: warning[token-leaves-category]: group.categories: `ai-training` brings `GPTBot`, named in user_agents of the group `gpt` at t.toml:{join}:1: it leaves this group (`training`) and follows that group's rules only")]
        );
        let robots = l.policy.robots_txt();
        assert_eq!(robots.to_ascii_lowercase().matches("user-agent: gptbot\n").count(), 1, "{robots}");
        assert!(robots.contains("User-agent: gptbot\n"), "{robots}");
        assert!(robots.contains("User-agent: ClaudeBot\n"), "{robots}");
        let d = l.policy.decide("Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)", "/page");
        assert_eq!((d.agent, d.group.map(|g| g.name), d.allowed), (Some("gptbot"), Some("gpt"), true));
        let d = l.policy.decide("Mozilla/5.0 (compatible; ClaudeBot/1.0)", "/page");
        assert_eq!((d.agent, d.group.map(|g| g.name), d.allowed), (Some("ClaudeBot"), Some("training"), false));
        assert_eq!(l.policy.tokens().count(), catalog::tokens_in_category("ai-training").unwrap_or_default().len());
    }
}

#[test]
fn same_category_in_two_groups_is_one_error() {
    let e = load_err(
        "[upstream]\nservers = [\"127.0.0.1:8000\"]\n\n[[group]]\ncategories = [\"seo\"]\ndisallow = [\"/\"]\n\n[[group]]\ncategories = [\"seo\"]\nallow = [\"/\"]\n",
    );
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.starts_with("t.toml:9:15: group.categories: `seo` brings `AhrefsBot`, "), "{e}");
    assert!(e.contains(", already in the group at t.toml:5:15 (a token belongs to one group; name it in user_agents to pick its group)"), "{e}");
    // Explicit duplicates stay an error, one per token.
    let e = load_err(
        "[upstream]\nservers = [\"127.0.0.1:8000\"]\n\n[[group]]\nuser_agents = [\"GPTBot\"]\n\n[[group]]\nuser_agents = [\"gptbot\"]\n",
    );
    assert_eq!(e, "t.toml:8:16: group.user_agents: duplicate group for token `gptbot` (first at t.toml:5:16)");
}

#[test]
fn category_emptied_by_explicit_names_is_left_out_with_a_warning() {
    let monitoring = catalog::tokens_in_category("monitoring").unwrap_or_default();
    let names = monitoring.iter().map(|t| format!("\"{t}\"")).collect::<Vec<_>>().join(", ");
    let src = format!(
        "[upstream]\nservers = [\"127.0.0.1:8000\"]\n\n[[group]]\nuser_agents = [\"*\"]\nallow = [\"/\"]\n\n[[group]]\nuser_agents = [{names}]\nallow = [\"/\"]\n\n[[group]]\nname = \"mon\"\ncategories = [\"monitoring\"]\ndisallow = [\"/\"]\n"
    );
    let l = load_ok(&src);
    assert_eq!(
        warnings(&l),
        vec!["t.toml:12:1: warning[empty-category-group]: group: every token of its categories is named in user_agents of another group, so this group is empty and left out of robots.txt"]
    );
    assert_eq!(l.policy.stats().groups, 2);
    let robots = l.policy.robots_txt();
    assert!(!robots.contains("Disallow: /"), "{robots}");
    assert!(l.policy.group_names().all(|n| n != "mon"));
}
