//! The benchmark policy and questions, shared by the `decide` and `memory`
//! benches (see `decide.rs` for what they are).

#![allow(dead_code)]

use crawlgate_policy::{load, Policy};

/// Search engines, social previews and SEO crawlers (not in ai.robots.txt).
const OTHER_TOKENS: &[&str] = &[
    "Googlebot",
    "Googlebot-Image",
    "Googlebot-News",
    "Googlebot-Video",
    "Storebot-Google",
    "AdsBot-Google",
    "Mediapartners-Google",
    "bingbot",
    "BingPreview",
    "msnbot",
    "DuckDuckBot",
    "Applebot",
    "YandexBot",
    "YandexImages",
    "Baiduspider",
    "Sogou",
    "SeznamBot",
    "MojeekBot",
    "Qwantify",
    "Yeti",
    "Slurp",
    "facebookexternalhit",
    "facebookcatalog",
    "Twitterbot",
    "LinkedInBot",
    "Slackbot",
    "Discordbot",
    "TelegramBot",
    "WhatsApp",
    "Pinterestbot",
    "redditbot",
    "AhrefsBot",
    "SemrushBot",
    "DotBot",
    "rogerbot",
];

/// Realistic User-Agent headers and the product token a robots.txt
/// library must be given for each (`None`: a browser or tool, which only
/// the `*` group concerns).
pub const USER_AGENTS: &[(&str, &str)] = &[
    ("Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)", "GPTBot"),
    ("Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)", "ClaudeBot"),
    ("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "Googlebot"),
    (
        "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.6778.204 Mobile Safari/537.36 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
        "Googlebot",
    ),
    ("Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm) Chrome/116.0.1938.76 Safari/537.36", "bingbot"),
    ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", "Mozilla"),
    ("Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0", "Mozilla"),
    ("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.2 Safari/605.1.15", "Mozilla"),
    ("curl/8.5.0", "curl"),
];

/// Request paths: pages, assets, searches with parameters, deep paths.
pub const PATHS: &[&str] = &[
    "/",
    "/products/shoes/12345?color=red&size=42",
    "/section17/article-2023.html",
    "/blog/2024/05/hello-world/",
    "/search?q=robots+txt&sessionid=8f2a",
    "/static/js/app.4f3c2b.js",
    "/docs/api/v2/reference/index.html",
    "/user/alice/private/settings",
    "/files/annual-report-2024.pdf",
    "/wp-admin/admin-ajax.php",
    "/category/garden/tools?page=3",
    "/cart/checkout",
    "/images/gallery/2023/summer/IMG_2291.jpg",
    "/news/world/europe/2025-01-17-some-headline",
    "/api/v3/items/991/comments?sort=new",
    "/print/section42/page7.html",
];

/// xorshift64*: deterministic, no dependency.
pub struct Rng(u64);

impl Rng {
    /// Next value.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// A value below `n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const WORDS: &[&str] = &[
    "products", "category", "blog", "news", "docs", "user", "account", "cart", "search", "api", "static", "images",
    "files", "print", "archive", "tag", "author", "admin", "private", "tmp", "internal", "drafts", "preview", "feeds",
    "export",
];

const PARAMS: &[&str] = &[
    "sessionid",
    "sid",
    "utm_source",
    "utm_medium",
    "utm_campaign",
    "ref",
    "replytocom",
    "sort",
    "order",
    "filter",
    "page",
    "lang",
    "color",
    "size",
    "price",
    "view",
    "print",
    "share",
    "fbclid",
    "gclid",
    "q",
    "s",
    "from",
    "to",
    "limit",
    "offset",
    "format",
    "amp",
    "variant",
];

const EXTENSIONS: &[&str] =
    &["pdf", "doc", "docx", "xls", "xlsx", "zip", "gz", "bak", "json", "xml", "csv", "txt", "psd", "mp4"];

/// One rule pattern of a realistic kind: mostly path prefixes, some
/// query-parameter and file-type wildcards, `*` inside paths, `$` anchors.
fn pattern(rng: &mut Rng, i: usize) -> String {
    let w = |rng: &mut Rng| WORDS[rng.below(WORDS.len())];
    match rng.below(20) {
        0..=9 => format!("/{}/{}{i}/", w(rng), w(rng)),
        10 => format!("/section{i}/"),
        11 | 12 => format!("/{}{i}", w(rng)),
        13 => format!("/*{}{}=", ["?", "&"][rng.below(2)], PARAMS[rng.below(PARAMS.len())]),
        14 => format!("/{}/*.{}$", w(rng), EXTENSIONS[rng.below(EXTENSIONS.len())]),
        15 => format!("/*.{}$", EXTENSIONS[rng.below(EXTENSIONS.len())]),
        16 | 17 => format!("/{}/*/{}{i}", w(rng), w(rng)),
        _ => format!("/{}/page{i}.html$", w(rng)),
    }
}

/// The policy TOML: every token, six groups, 500 rules.
pub fn policy_toml() -> String {
    let ai: Vec<&str> = include_str!("../data/ai-robots-tokens.txt").lines().filter(|l| !l.is_empty()).collect();
    let mut seen: Vec<String> = Vec::new();
    let mut uniq = |list: Vec<&str>| -> Vec<String> {
        list.into_iter()
            .filter(|t| {
                let lower = t.to_ascii_lowercase();
                let new = !seen.contains(&lower);
                seen.push(lower);
                new
            })
            .map(str::to_string)
            .collect()
    };
    let (training, rest) = ai.split_at(ai.len() * 2 / 3);
    let groups: Vec<(&str, Vec<String>, usize, &str)> = vec![
        // (name, tokens, rules, enforce)
        ("everyone", vec!["*".to_string()], 330, "log"),
        ("ai-training", uniq(training.to_vec()), 30, "block"),
        ("ai-other", uniq(rest.to_vec()), 40, "log"),
        ("search", uniq(OTHER_TOKENS[..20].to_vec()), 60, "off"),
        ("social", uniq(OTHER_TOKENS[20..31].to_vec()), 20, "off"),
        ("seo", uniq(OTHER_TOKENS[31..].to_vec()), 20, "block"),
    ];
    let mut rng = Rng(0x5eed_cafe_f00d_0001);
    let mut out = String::from("[upstream]\nservers = [\"127.0.0.1:8000\"]\n");
    let mut n = 0;
    for (name, tokens, rules, enforce) in groups {
        let quoted: Vec<String> = tokens.iter().map(|t| format!("\"{t}\"")).collect();
        let (mut allow, mut disallow) = (Vec::new(), Vec::new());
        if name == "ai-training" {
            disallow.push("\"/\"".to_string());
            n += 1;
        }
        let mut written: Vec<String> = Vec::new();
        for _ in 0..rules - usize::from(name == "ai-training") {
            // A group states each pattern once.
            let mut p = pattern(&mut rng, n);
            while written.contains(&p) {
                p = pattern(&mut rng, n);
            }
            written.push(p.clone());
            let p = format!("\"{p}\"");
            if rng.below(4) == 0 {
                allow.push(p)
            } else {
                disallow.push(p)
            }
            n += 1;
        }
        out.push_str(&format!(
            "\n[[group]]\nname = \"{name}\"\nuser_agents = [{}]\nallow = [{}]\ndisallow = [{}]\nenforce = \"{enforce}\"\n",
            quoted.join(", "),
            allow.join(", "),
            disallow.join(", ")
        ));
    }
    assert_eq!(n, 500);
    out
}

/// The loaded policy.
pub fn policy() -> Policy {
    load_or_panic(&policy_toml())
}

/// The same policy plus one group per catalog category (`categories =
/// [..]`), so every token of the built-in catalog is in it too (tokens the
/// policy already names explicitly stay in their explicit group).
#[allow(dead_code)] // used by the decide bench, not by the memory bench
pub fn policy_with_catalog() -> Policy {
    let mut toml = policy_toml();
    for cat in crawlgate_policy::catalog::CATEGORIES {
        toml.push_str(&format!("\n[[group]]\nname = \"catalog-{cat}\"\ncategories = [\"{cat}\"]\ndisallow = [\"/{cat}-only/\"]\nenforce = \"log\"\n"));
    }
    load_or_panic(&toml)
}

fn load_or_panic(toml: &str) -> Policy {
    match load(toml, "bench.toml") {
        Ok(l) => l.policy,
        Err(e) => panic!("bench policy does not load:\n{e}"),
    }
}
