//! Purpose classes (`[classes]`, issue 36 item 4): a class applies to every
//! catalog crawler of its categories that no group names, is published in
//! robots.txt and enforced like a group; `mixed_purpose = "strictest"`
//! gives a crawler of several purposes its strictest class.

#![cfg(test)]

use crawlgate_policy::catalog::{self, Entry};
use crawlgate_policy::{load, Action, Loaded};

const UP: &str = "[upstream]\nservers = [\"127.0.0.1:8000\"]\n";

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

/// A User-Agent naming the entry: its real one when the catalog has it.
fn ua(e: &Entry) -> String {
    e.example_ua.clone().unwrap_or_else(|| format!("{}/1.0", e.token))
}

fn action(l: &Loaded, ua: &str, path: &str) -> Action {
    l.policy.decide(ua, path).action()
}

fn visible() -> impl Iterator<Item = &'static Entry> {
    catalog::entries().iter().filter(|e| e.ua_visible)
}

#[test]
fn training_block_blocks_every_training_crawler_and_no_search_crawler() {
    let l = load_ok(&format!("{UP}\n[classes]\ntraining = \"block\"\n"));
    assert!(l.warnings.is_empty(), "{:?}", l.warnings.iter().map(ToString::to_string).collect::<Vec<_>>());
    let mut training = 0;
    let mut search = 0;
    for e in visible() {
        let got = action(&l, &ua(e), "/any/page");
        match e.primary_category() {
            "ai-training" => {
                training += 1;
                assert_eq!(got, Action::Block, "{} ({})", e.token, ua(e));
                let d = l.policy.decide(&ua(e), "/any/page");
                assert_eq!(d.group.map(|g| g.name), Some("class:training"), "{}", e.token);
                assert_eq!(d.block_status, 403);
            }
            "search-engine" | "ai-search" => {
                search += 1;
                assert_eq!(got, Action::Pass, "{} ({})", e.token, ua(e));
            }
            // Another crawler is blocked only where its User-Agent
            // carries a training crawler's token as a word
            // (`AI2Bot-DeepResearchEval/1.0` names `AI2Bot`), as any group
            // identifies it.
            _ if got == Action::Block => {
                let agent = l.policy.decide(&ua(e), "/").agent.unwrap_or_default();
                let named = catalog::lookup(agent).map(Entry::primary_category);
                assert_eq!(named, Some("ai-training"), "{} ({}) blocked as {agent}", e.token, ua(e));
            }
            _ => {}
        }
    }
    assert!(training >= 25 && search >= 50, "{training} training, {search} search crawlers");
    // Googlebot's crawl also trains models, but its primary purpose is
    // search: by default it keeps its search class (none set here).
    assert_eq!(
        action(&l, "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "/"),
        Action::Pass
    );
    // robots.txt itself is never blocked; browsers are not crawlers.
    assert_eq!(action(&l, "GPTBot/1.1", "/robots.txt"), Action::Pass);
    assert_eq!(action(&l, "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0", "/"), Action::Pass);
}

#[test]
fn robots_txt_lists_the_class_tokens_robots_only_included() {
    let l = load_ok(&format!("{UP}\n[classes]\ntraining = \"block\"\n"));
    let txt = l.policy.robots_txt();
    let group = txt
        .split("\n\n")
        .find(|g| g.starts_with("# Class `training`"))
        .unwrap_or_else(|| panic!("no class group:\n{txt}"));
    let listed: Vec<&str> = group.lines().filter_map(|l| l.strip_prefix("User-agent: ")).collect();
    let want = catalog::tokens_in_category("ai-training").unwrap_or_default();
    assert_eq!(listed, want);
    assert!(listed.contains(&"Google-Extended") && listed.contains(&"Applebot-Extended"));
    assert!(group.ends_with("Disallow: /") || group.ends_with("Disallow: /\n"), "{group}");
}

#[test]
fn a_group_naming_a_crawler_wins_over_its_class() {
    let l = load_ok(&format!(
        "{UP}\n[[group]]\nuser_agents = [\"GPTBot\"]\ndisallow = [\"/private/\"]\n\n[[group]]\nname = \"ai\"\ncategories = [\"ai-assistant\"]\ndisallow = [\"/\"]\n\n[classes]\ntraining = \"block\"\nagent = \"block\"\n"
    ));
    assert_eq!(action(&l, "GPTBot/1.1", "/page"), Action::Pass);
    assert_eq!(l.policy.decide("GPTBot/1.1", "/page").group.map(|g| g.name), Some("GPTBot"));
    assert_eq!(action(&l, "ClaudeBot/1.0", "/page"), Action::Block);
    // The category group took every agent crawler: the class has none
    // left and makes no group.
    assert!(!l.policy.robots_txt().contains("# Class `agent`"), "{}", l.policy.robots_txt());
    assert!(!l.policy.group_names().any(|n| n == "class:agent"));
    let d = l.policy.decide("ChatGPT-User/1.0", "/page");
    assert_eq!(d.group.map(|g| g.name), Some("ai"));
    assert_eq!(d.action(), Action::Pass, "the category group does not enforce");
    // The class group does not list GPTBot.
    assert_eq!(l.policy.robots_txt().matches("User-agent: GPTBot\n").count(), 1);
}

#[test]
fn mixed_purpose_strictest_blocks_a_crawler_where_any_purpose_is_blocked() {
    let src = format!("{UP}\n[classes]\nmixed_purpose = \"strictest\"\ntraining = \"block\"\nsearch = \"allow\"\n");
    let l = load_ok(&src);
    for t in ["Googlebot", "Applebot", "bingbot"] {
        let e = catalog::lookup(t).unwrap_or_else(|| panic!("{t}"));
        let d = l.policy.decide(&ua(e), "/page");
        assert_eq!(d.action(), Action::Block, "{t}");
        let g = d.group.unwrap_or_else(|| panic!("{t}: no group"));
        assert_eq!(g.name, "class:training");
        let why = l.policy.class_reason(g.index, d.agent.unwrap_or_default()).unwrap_or_default();
        assert_eq!(why, format!("class `training`: `{t}` serves search, training (categories search-engine, ai-training), and mixed_purpose = \"strictest\" gives it the strictest class set; no group names it"));
    }
    // A search crawler of one purpose keeps its class.
    let d = l.policy.decide("DuckDuckBot/1.1; (+http://duckduckgo.com/duckduckbot.html)", "/page");
    assert_eq!((d.action(), d.group.map(|g| g.name)), (Action::Pass, Some("class:search")));
    // Without the setting the primary purpose decides.
    let l = load_ok(&src.replace("mixed_purpose = \"strictest\"\n", ""));
    let d = l.policy.decide("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "/page");
    assert_eq!((d.action(), d.group.map(|g| g.name)), (Action::Pass, Some("class:search")));
    let g = d.group.unwrap_or_else(|| panic!("no group"));
    assert_eq!(
        l.policy.class_reason(g.index, "Googlebot").as_deref(),
        Some("class `search`: `Googlebot`'s catalog category is `search-engine` (it also serves training; mixed_purpose = \"strictest\" would weigh them), and no group names it")
    );
    let txt = l.policy.robots_txt();
    let search = txt.split("\n\n").find(|g| {
        g.starts_with("# Class `search` ([classes]): its catalog crawlers that no group names.\nUser-agent: ")
    });
    let search = search.unwrap_or_else(|| panic!("{txt}"));
    assert!(search.contains("\nUser-agent: Googlebot\n") && search.ends_with("\nAllow: /\n"), "{search}");
}

#[test]
fn a_class_table_takes_a_groups_keys() {
    let l = load_ok(&format!(
        "{UP}\n[classes.training]\nenforce = \"log\"\n\n[classes.scraper]\ndisallow = [\"/api/\"]\nenforce = \"block\"\nblock_status = 451\nrate = \"2/s\"\n"
    ));
    assert_eq!(action(&l, "GPTBot/1.1", "/page"), Action::LogViolation);
    assert_eq!(action(&l, "Scrapy/2.11", "/page"), Action::Pass);
    let d = l.policy.decide("Scrapy/2.11", "/api/x");
    assert_eq!((d.action(), d.block_status), (Action::Block, 451));
    assert!(l.policy.robots_txt().contains("User-agent: Scrapy\n"), "{}", l.policy.robots_txt());
}

#[test]
fn class_errors_name_the_key() {
    let e = load_err(&format!("{UP}\n[classes]\nai-training = \"block\"\n"));
    assert_eq!(e, "t.toml:5:1: classes: unknown class `ai-training` (known: training, agent, search, seo, archiver, scraper, social-preview, monitoring, and the key mixed_purpose); `ai-training` is a catalog category, in the class `training`");
    let e = load_err(&format!("{UP}\n[classes]\ntraining = \"deny\"\n"));
    assert_eq!(e, "t.toml:5:12: classes.training: expected \"block\", \"log\", \"allow\" or a table (enforce, rate, price, ...), found `deny`");
    let e = load_err(&format!("{UP}\n[classes]\nmixed_purpose = \"any\"\n"));
    assert_eq!(e, "t.toml:5:17: classes.mixed_purpose must be \"primary\" or \"strictest\", found `any`");
    let e = load_err(&format!("{UP}\n[classes.training]\nenforce = \"stop\"\n"));
    assert_eq!(e, "t.toml:5:11: group.enforce must be off, log, block or charge, found `stop`");
    let e = load_err(&format!("{UP}\n[classes.training]\nuser_agents = [\"x\"]\n"));
    assert!(e.starts_with("t.toml:5:1: "), "{e}");
}
