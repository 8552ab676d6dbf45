//! Product tokens as crawlers send them (digits, dots) and robots.txt
//! groups as RFC 9309 reads them, through the real binary: `check`
//! warnings, `explain` and `robots-test` agreeing on full User-Agent
//! headers, and `import` keeping every decision or refusing.

use std::path::Path;

use crawlgate_e2e::{arg, code, crawlgate, stderr, stdout, workspace_root};
use crawlgate_testkit::TempDir;

const POLICY: &str = "tests/data/crawler-tokens.toml";
const RENDERED: &str = "tests/data/crawler-tokens.robots.txt";

/// `robots-test`'s verdict, checking stdout, exit code and an empty stderr.
fn verdict(file: &Path, ua: &str, url: &str) -> bool {
    let out = crawlgate(&["robots-test", arg(file), ua, url]);
    match (code(&out), stdout(&out).as_str(), stderr(&out).as_str()) {
        (0, "allowed\n", "") => true,
        (1, "disallowed\n", "") => false,
        (c, o, e) => panic!("robots-test {} {ua:?} {url:?}: exit {c}, stdout {o:?}, stderr {e:?}", file.display()),
    }
}

#[test]
fn check_warns_for_tokens_with_digits_and_dots() {
    let out = crawlgate(&["check", "--config", POLICY]);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    assert!(stdout(&out).starts_with(&format!(
        "OK {POLICY}: 5 groups, 6 rules, 0 robots_tags, agents.txt disabled, 8 warnings, 1 acknowledged (sha256 "
    )));
    let w = |line: usize, col: usize, token: &str| {
        format!("{POLICY}:{line}:{col}: warning[non-rfc-token]: group.user_agents: `{token}` has characters outside RFC 9309's product token (letters, '_' and '-'); it is published and identified, but strict RFC 9309 parsers ignore such user-agent lines\n")
    };
    let want = [
        w(10, 16, "AI2Bot"),
        w(10, 26, "Ai2Bot-Dolma"),
        w(10, 42, "AI2Bot-DeepResearchEval"),
        w(16, 16, "Crawl4AI"),
        w(16, 28, "img2dataset"),
        w(22, 16, "MJ12bot"),
        w(22, 27, "360Spider"),
        w(28, 16, "archive.org_bot"),
    ]
    .concat();
    // The warnings follow the summary line on stdout; nothing on stderr.
    assert!(stdout(&out).ends_with(&format!(")\n{want}")), "{}", stdout(&out));
    assert_eq!(stderr(&out), "");
}

/// For a full User-Agent header, `robots-test` on the published file picks
/// the group `explain` (the proxy's identification) picks.
#[test]
fn explain_and_robots_test_agree_on_full_user_agents() {
    let rendered = workspace_root().join(RENDERED);
    let urls = ["/", "/x", "/public/a", "/search?q=1", "/private/p"];
    for (ua, agent) in [
        ("Mozilla/5.0 (compatible) AI2Bot (+https://www.allenai.org/crawler)", Some("AI2Bot")),
        ("Mozilla/5.0 (compatible) Ai2Bot-Dolma (+https://www.allenai.org/crawler)", Some("Ai2Bot-Dolma")),
        ("Mozilla/5.0 (compatible) AI2Bot-DeepResearchEval/1.0", Some("AI2Bot-DeepResearchEval")),
        ("Mozilla/5.0 (compatible; MJ12bot/v1.4.8; http://mj12bot.com/)", Some("MJ12bot")),
        ("Mozilla/5.0 (Windows NT 6.1; WOW64) 360Spider", Some("360Spider")),
        (
            "Mozilla/5.0 (compatible; archive.org_bot +http://archive.org/details/archive.org_bot)",
            Some("archive.org_bot"),
        ),
        ("Crawl4AI/0.4 (+https://github.com/unclecode/crawl4ai)", Some("Crawl4AI")),
        ("img2dataset", Some("img2dataset")),
        ("Mozilla/5.0 (compatible; XMJ12bot/1.0)", None),
        ("Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0", None),
        ("", None),
    ] {
        let out = crawlgate(&[
            "explain",
            "--config",
            POLICY,
            "--json",
            "--user-agent",
            ua,
            urls[0],
            urls[1],
            urls[2],
            urls[3],
            urls[4],
        ]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let v: serde_json::Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("explain --json: {e}"));
        let rows = v.as_array().unwrap_or_else(|| panic!("explain --json is not an array: {v}"));
        assert_eq!(rows.len(), urls.len());
        for (row, url) in rows.iter().zip(urls) {
            assert_eq!(row["agent"].as_str(), agent, "{ua} {url}");
            let allowed = row["allowed"].as_bool().unwrap_or_else(|| panic!("no `allowed` in {row}"));
            assert_eq!(verdict(&rendered, ua, url), allowed, "robots-test and explain differ: {ua:?} {url}");
        }
    }
}

/// A file `import` can keep exactly: tokens with digits and dots, and
/// user-agent lines that Sitemap, comment and unknown lines do not split.
#[test]
fn import_keeps_crawler_tokens_and_rfc_9309_groups() {
    let dir = TempDir::new("import-tokens");
    let src = dir.write(
        "tokens.txt",
        "User-agent: AI2Bot\nSitemap: https://e.example/s.xml\nUser-agent: Ai2Bot-Dolma\n# the archive too\n\
         User-agent: archive.org_bot\nRequest-rate: 1/5\nUser-agent: 360Spider\nDisallow: /\n\n\
         User-agent: *\nDisallow: /private/\n",
    );
    let out = crawlgate(&["import", arg(&src)]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let got = stdout(&out);
    let body = got.split_once("servers = [\"127.0.0.1:8000\"]\n").map_or("", |x| x.1);
    let body = body.strip_prefix(crate::ADMIN_BLOCK).unwrap_or_else(|| panic!("no admin listener block: {got}"));
    assert_eq!(
        body,
        "\n[robots_txt]\n\
         sitemaps = [\n  \"https://e.example/s.xml\",\n]\n\
         \n[[group]]\n\
         # robots.txt group at line 1\n\
         user_agents = [\"AI2Bot\", \"Ai2Bot-Dolma\", \"archive.org_bot\", \"360Spider\"]\n\
         disallow = [\n  \"/\",\n]\n\
         # kept from line 6: Request-rate: 1/5\n\
         #   (`request-rate` has no policy key (crawlgate publishes Allow, Disallow, Crawl-delay, Content-Usage, App-Directives, Content-Signal and Sitemap))\n\
         \n[[group]]\n\
         # robots.txt group at line 10\n\
         user_agents = [\"*\"]\n\
         disallow = [\n  \"/private/\",\n]\n"
    );
    let f = src.display();
    let rfc = |line: usize, token: &str| {
        format!("warning: {f}:{line}: group.user_agents: `{token}` has characters outside RFC 9309's product token (letters, '_' and '-'); it is published and identified, but strict RFC 9309 parsers ignore such user-agent lines\n")
    };
    assert_eq!(
        stderr(&out),
        [
            rfc(1, "AI2Bot"),
            rfc(3, "Ai2Bot-Dolma"),
            rfc(5, "archive.org_bot"),
            format!("warning: {f}:6: `request-rate` has no policy key (crawlgate publishes Allow, Disallow, Crawl-delay, Content-Usage, App-Directives, Content-Signal and Sitemap); kept as a comment\n"),
            rfc(7, "360Spider"),
            format!("imported {f}: 2 groups, 2 rules, 1 sitemap; 1 line kept as comments\n"),
        ]
        .concat()
    );
    let toml = dir.write("tokens.toml", &got);
    let rendered = dir.write("rendered.txt", crawlgate(&["render", "robots.txt", "--config", arg(&toml)]).stdout);
    for ua in [
        "AI2Bot",
        "ai2bot-dolma",
        "Mozilla/5.0 (compatible; archive.org_bot +http://archive.org)",
        "360Spider",
        "Other",
    ] {
        for url in ["/", "/private/x", "/public"] {
            assert_eq!(verdict(&src, ua, url), verdict(&rendered, ua, url), "{ua} {url}");
        }
    }
    assert!(!verdict(&rendered, "Mozilla/5.0 (compatible; archive.org_bot +http://archive.org)", "/public"));
}

/// Where the policy cannot decide as the file does, `import` prints no
/// policy, exits 1 and names every crawler affected with the lines.
/// `Googlebot/2.1` is read for the site's intent (the token `Googlebot`),
/// which RFC 9309's strict reading would not, so Googlebot is among them.
#[test]
fn import_refuses_a_file_it_cannot_keep() {
    let dir = TempDir::new("import-unfaithful");
    let long = format!("Bot{}", "x".repeat(130));
    let src = dir.write(
        "lossy.txt",
        format!(
            "User-agent: *\nDisallow: /a b\n\nUser-agent: FooBot\nUser-agent: AI2Bot\nDisallow: /c\nAllow: /x\u{1}y\n\n\
             User-agent: {long}\nDisallow: /\n\nUser-agent: Googlebot/2.1\nDisallow: /g\n"
        ),
    );
    let out = crawlgate(&["import", arg(&src)]);
    let f = src.display();
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    assert_eq!(
        stderr(&out),
        format!(
            "warning: {f}:2: group.disallow: pattern `/a b` contains whitespace or a control character; decisions on paths it matches may differ; kept as a comment\n\
             warning: {f}:5: group.user_agents: `AI2Bot` has characters outside RFC 9309's product token (letters, '_' and '-'); it is published and identified, but strict RFC 9309 parsers ignore such user-agent lines\n\
             warning: {f}:7: group.allow: pattern `/x\\u0001y` contains whitespace or a control character; decisions on paths it matches may differ; kept as a comment\n\
             warning: {f}:9: group.user_agents: `Botxxxxxxxxxxxxx...` is 133 bytes long; a product token may have at most 128; a crawler named `{long}` gets the `*` group instead; kept as a comment\n\
             warning: {f}:10: in a group whose User-agent values the policy cannot express; kept as a comment\n\
             warning: {f}:12: `User-agent: Googlebot/2.1` read as `User-agent: Googlebot` (the product token `Googlebot`)\n\
             imported {f}: 3 groups, 2 rules, 0 sitemaps; 4 lines kept as comments\n\
             crawlgate: error: the imported policy is not printed: its robots.txt would not decide as {f} does for 5 crawlers:\n  \
             `*` (every crawler without a group of its own): line 2\n  \
             `FooBot`: line 7\n  \
             `AI2Bot`: line 7\n  \
             `{long}`: line 9\n  \
             `Googlebot`: line 12\n\
             `crawlgate import --force {f}` prints it anyway, these crawlers listed in a comment on top, with these \
             lines read as the site meant them (RFC 9309 alone ignores them):\n  \
             line 12: `User-agent: Googlebot/2.1` read as `User-agent: Googlebot` (the product token `Googlebot`)\n\
             and with lines 2, 7, 9 kept as comments (the warnings above say what changes)\n"
        )
    );
    // The file's decisions that the policy would have changed.
    assert!(!verdict(&src, "Other", "/a b"));
    assert!(!verdict(&src, &long, "/z"));
}
