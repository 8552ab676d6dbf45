//! `crawlgate agents list` and a category-based policy through the real
//! binary: the table and its count line, `--json` against `catalog.json`,
//! `--category`, the exit code of an unknown category, and the golden
//! robots.txt of `tests/data/catalog/categories.toml` (`UPDATE_GOLDEN=1`
//! rewrites it; read the diff before committing) with its robots-only
//! warning.

use crawlgate_e2e::{crawlgate, stderr, stdout, workspace_root};
use crawlgate_testkit::golden;
use serde::{Deserialize, Serialize};

const POLICY: &str = "tests/data/catalog/categories.toml";
const GOLDEN: &str = "tests/data/catalog/categories.robots.txt";

/// One entry of `crates/policy/data/catalog.json`. Serialized back, it
/// is the entry as written (absent keys stay absent), so it can be compared
/// with `agents list --json` exactly.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct CatalogEntry {
    token: String,
    operator: String,
    categories: Vec<String>,
    ua_visible: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    example_ua: Option<String>,
}

impl CatalogEntry {
    fn in_category(&self, category: &str) -> bool {
        self.categories.iter().any(|c| c == category)
    }
}

fn catalog_json() -> Vec<CatalogEntry> {
    golden::read_json(&workspace_root().join("crates/policy/data/catalog.json"))
}

/// Entries sorted as `agents list` prints them (by token, ignoring case),
/// as JSON.
fn sorted_json(mut entries: Vec<CatalogEntry>) -> Vec<serde_json::Value> {
    entries.sort_by_key(|e| e.token.to_ascii_lowercase());
    entries.iter().map(|e| serde_json::to_value(e).unwrap()).collect()
}

/// The part of one `explain --json` decision these tests look at.
#[derive(Debug, Deserialize)]
struct Explained {
    group: ExplainedGroup,
    action: String,
    block_status: Option<u16>,
}

#[derive(Debug, Deserialize)]
struct ExplainedGroup {
    name: String,
}

fn run_ok(args: &[&str]) -> String {
    let out = crawlgate(args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "crawlgate {args:?}\n--- stdout\n{}--- stderr\n{}",
        stdout(&out),
        stderr(&out)
    );
    stdout(&out)
}

#[test]
fn agents_list_is_a_table_of_the_whole_catalog() {
    let n = catalog_json().len();
    let text = run_ok(&["agents", "list"]);
    let lines: Vec<&str> = text.lines().collect();
    // Header, one row per entry, the count line.
    assert_eq!(lines.len(), n + 2, "{text}");
    assert_eq!(n, 201);
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["TOKEN", "CATEGORIES", "SEEN", "IN", "UA", "OPERATOR"]
    );
    assert_eq!(lines[n + 1], "201 agents (3 robots.txt only)");
    // Exact rows: the columns are as wide as their longest cell (the token
    // `cohere-training-data-crawler`, `search-engine,ai-training`,
    // `robots.txt only`).
    let row = |token: &str| {
        lines
            .iter()
            .copied()
            .find(|l| l.split_whitespace().next() == Some(token))
            .unwrap_or_else(|| panic!("no row for {token}:\n{text}"))
    };
    assert_eq!(row("GPTBot"), "GPTBot                        ai-training                yes              OpenAI");
    assert_eq!(
        row("Google-Extended"),
        "Google-Extended               ai-training                robots.txt only  Google"
    );
    assert_eq!(
        row("facebookexternalhit"),
        "facebookexternalhit           social-preview             yes              Meta"
    );
    // A crawler of several purposes lists them, the primary one first.
    assert_eq!(row("Googlebot"), "Googlebot                     search-engine,ai-training  yes              Google");
    // Every row starts at the same columns, no trailing spaces.
    let cat_col = lines[0].find("CATEGORIES").unwrap_or_default();
    for l in &lines[..=n] {
        assert!(!l.ends_with(' '), "trailing space: {l:?}");
        assert_eq!(l.as_bytes().get(cat_col - 2..cat_col), Some(&b"  "[..]), "misaligned: {l:?}");
        assert_ne!(l.as_bytes().get(cat_col), Some(&b' '), "misaligned: {l:?}");
    }
    // Sorted by token, case-insensitively.
    let tokens: Vec<String> =
        lines[1..=n].iter().map(|l| l.split_whitespace().next().unwrap_or_default().to_ascii_lowercase()).collect();
    let mut sorted = tokens.clone();
    sorted.sort();
    assert_eq!(tokens, sorted);
    assert!(stderr(&crawlgate(&["agents", "list"])).is_empty());
}

#[test]
fn agents_list_json_is_catalog_json() {
    let text = run_ok(&["agents", "list", "--json"]);
    let got: Vec<serde_json::Value> = golden::parse_json(text.as_bytes(), "agents list --json");
    let want = sorted_json(catalog_json());
    assert_eq!(got.len(), want.len());
    assert_eq!(got, want);
}

#[test]
fn agents_list_by_category() {
    let text = run_ok(&["agents", "list", "--category", "ai-assistant", "--json"]);
    let got: Vec<serde_json::Value> = golden::parse_json(text.as_bytes(), "agents list --category ai-assistant --json");
    let want: Vec<CatalogEntry> = catalog_json().into_iter().filter(|e| e.in_category("ai-assistant")).collect();
    assert!(want.len() >= 30);
    assert!(want.iter().any(|e| e.token == "ChatGPT-User"));
    assert_eq!(got, sorted_json(want.clone()));

    let text = run_ok(&["agents", "list", "--category", "ai-assistant"]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), want.len() + 2, "{text}");
    assert_eq!(
        lines.last().copied(),
        Some(format!("{} agents in category ai-assistant (0 robots.txt only)", want.len()).as_str())
    );
    for l in &lines[1..lines.len() - 1] {
        assert_eq!(l.split_whitespace().nth(1), Some("ai-assistant"), "{l}");
    }
    assert!(!text.contains("GPTBot "), "{text}");
}

#[test]
fn agents_list_unknown_category_exits_2() {
    let out = crawlgate(&["agents", "list", "--category", "ai"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stdout(&out), "");
    assert_eq!(
        stderr(&out),
        "crawlgate: unknown category `ai` (known: ai-training, ai-search, ai-assistant, search-engine, seo, archiver, scraper, social-preview, monitoring)\n"
    );
    let out = crawlgate(&["agents", "list", "--category", "AI-Training", "--json"]);
    assert_eq!(out.status.code(), Some(2), "categories are lowercase names");
}

#[test]
fn category_policy_renders_the_golden_robots_txt() {
    let out = crawlgate(&["render", "robots.txt", "--config", POLICY]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    golden::assert_golden(&workspace_root().join(GOLDEN), GOLDEN, &out.stdout, &format!("{POLICY} rendered"));
    let got = stdout(&out);

    // The golden is the catalog's expansion: every token of each category
    // once, except OAI-SearchBot, which the policy names in its own group.
    let ua_lines: Vec<&str> = got.lines().filter_map(|l| l.strip_prefix("User-agent: ")).collect();
    let cats = catalog_json();
    // A category group brings the entries whose primary (first) category
    // it is: Googlebot's second category, ai-training, brings it nowhere.
    let count = |c: &str| cats.iter().filter(|e| e.categories.first().is_some_and(|f| f == c)).count();
    assert_eq!(ua_lines.len(), 1 + count("search-engine") + count("ai-training") + count("ai-search"), "{got}");
    let mut lower: Vec<String> = ua_lines.iter().map(|t| t.to_ascii_lowercase()).collect();
    lower.sort();
    lower.dedup();
    assert_eq!(lower.len(), ua_lines.len(), "a token in two groups:\n{got}");
    for t in ["Google-Extended", "Applebot-Extended", "GPTBot", "Googlebot", "PerplexityBot", "OAI-SearchBot"] {
        assert!(ua_lines.contains(&t), "{t} missing:\n{got}");
    }
    assert!(got.contains("\nUser-agent: ZanistaBot\nDisallow: /drafts/\nDisallow: /private/\n\nUser-agent: OAI-SearchBot\nAllow: /drafts/public/\n"), "{got}");
}

#[test]
fn category_policy_check_warns_about_robots_only_tokens() {
    let out = crawlgate(&["check", "--config", POLICY]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(
        stdout(&out).starts_with(&format!(
            "OK {POLICY}: 5 groups, 8 rules, 0 robots_tags, agents.txt disabled, 1 warning, 1 acknowledged "
        )),
        "{}",
        stdout(&out)
    );
    // The warning follows the summary on stdout; nothing on stderr.
    assert!(
        stdout(&out).ends_with(&format!(
            ")\n{POLICY}:26:11: warning[robots-only-token]: group.enforce: `Applebot-Extended`, `Google-Extended` never appear in a User-Agent header (robots.txt-only tokens): robots.txt publishes them, but `block` cannot apply to them\n"
        )),
        "{}",
        stdout(&out)
    );
    assert_eq!(stderr(&out), "");
}

#[test]
fn category_policy_explain_identifies_catalog_agents() {
    // (User-Agent, path, group, action)
    let cases = [
        ("Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)", "/", "ai-training", "block (403)"),
        ("Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; PerplexityBot/1.0; +https://perplexity.ai/perplexitybot)", "/drafts/public/a", "ai-search", "log violation"),
        ("Mozilla/5.0 (compatible; OAI-SearchBot/1.0; +https://openai.com/searchbot)", "/drafts/public/a", "openai-search", "pass"),
        ("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "/private/x", "search", "pass"),
        ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36", "/", "*", "pass"),
    ];
    for (ua, path, group, action) in cases {
        let text = run_ok(&["explain", "--config", POLICY, "-A", ua, "--json", path]);
        let v: Vec<Explained> = golden::parse_json(text.as_bytes(), "explain --json");
        let first = v.first().unwrap_or_else(|| panic!("{ua}: no decision in {text}"));
        assert_eq!(first.group.name, group, "{ua}: {text}");
        let got_action = match first.block_status {
            Some(s) => format!("{} ({s})", first.action),
            None => first.action.clone(),
        };
        assert_eq!(got_action, action, "{ua}: {text}");
    }
}

/// `[classes]` (issue 36): `explain` names the class a crawler is in and
/// why, and the class group enforces; a crawler a group names keeps it.
#[test]
fn explain_names_the_class_and_why() {
    let p = "tests/data/classes.toml";
    let google = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
    let text = run_ok(&["explain", "--config", p, "-A", google, "/a"]);
    assert_eq!(
        text,
        "agent:    Googlebot (catalog: Google, search-engine, ai-training)\n\
         group:    class:training (line 20)\n\
         class:    class `training`: `Googlebot` serves search, training (categories search-engine, ai-training), and mixed_purpose = \"strictest\" gives it the strictest class set; no group names it\n\
         enforce:  block\n\
         \n\
         /a: disallowed (Disallow: / at line 20) -> block (403)\n  reason:   robots\n"
    );
    let text = run_ok(&["explain", "--config", p, "-A", "DuckDuckBot/1.1", "/a"]);
    assert!(text.contains("group:    class:search (line 21)\nclass:    class `search`: `DuckDuckBot`'s catalog category is `search-engine`, and no group names it\n"), "{text}");
    assert!(text.contains("/a: allowed (Allow: / at line 21) -> pass"), "{text}");
    let json = run_ok(&["explain", "--json", "--config", p, "-A", "GPTBot/1.1", "/a"]);
    let v: serde_json::Value = golden::parse_json(json.as_bytes(), "explain --json");
    assert_eq!(
        (&v[0]["class"], &v[0]["group"]["name"], &v[0]["action"]),
        (&serde_json::Value::Null, &serde_json::json!("GPTBot"), &serde_json::json!("pass"))
    );
}
