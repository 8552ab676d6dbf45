//! `crawlgate check`, `render` and `explain` on small policies written to
//! temp files: exact outputs and exit codes, the config path's sources.

use std::path::Path;
use std::process::{Command, Output};

use crawlgate_e2e::{arg, code, crawlgate, crawlgate_bin, stderr, stdout, workspace_root};
use crawlgate_testkit::TempDir;

const POLICY: &str = r#"[upstream]
servers = ["127.0.0.1:8000"]

[robots_txt]
sitemaps = ["https://example.com/sitemap.xml"]

# Everybody: not /private/; no AI training.
[[group]]
user_agents = ["*"]
disallow = ["/private/"]
content_usage = ["train-ai=n"]
# No enforce: only requests naming no token reach `*`, never violations.

[[group]]
name = "ai"
user_agents = ["GPTBot", "CCBot"]
disallow = ["/"]
allow = ["/public/"]
enforce = "block"

[[robots_tag]]
path = "/drafts/"
rules = ["noindex"]
"#;

/// The first 12 hex digits of SHA-256(POLICY) (computed outside crawlgate).
const POLICY_SHA: &str = "48e328d40641";

const INVALID: &str = r#"[upstream]
servers = ["127.0.0.1:8000"]

[[group]]
user_agents = ["GPT Bot", "*"]
disallow = ["private/", "/ok"]
enforce = "always"

[[group]]
user_agents = ["*"]
crawl_delay = -1
"#;

const GPTBOT_UA: &str =
    "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)";
const PERPLEXITY_UA: &str = "Mozilla/5.0 (compatible; PerplexityBot/1.0; +https://perplexity.ai/perplexitybot)";
const BROWSER_UA: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0";

fn policy(dir: &TempDir) -> std::path::PathBuf {
    dir.write("policy.toml", POLICY)
}

#[test]
fn check_valid_policy() {
    let dir = TempDir::new("check-valid");
    let p = policy(&dir);
    let out = crawlgate(&["check", "--config", arg(&p)]);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    assert_eq!(
        stdout(&out),
        format!(
            "OK {}: 2 groups, 3 rules, 1 robots_tag, agents.txt disabled, 0 warnings (sha256 {POLICY_SHA})\n",
            p.display()
        )
    );
    assert_eq!(stderr(&out), "");

    // Warnings are counted and follow the summary on stdout (errors and
    // warnings on one stream); agents.txt is summarised.
    let p2 = dir.write(
        "warn.toml",
        "[upstream]\nservers = [\"127.0.0.1:8000\"]\n\n[[group]]\nuser_agents = [\"*\"]\ndisallow = [\"/x\"]\nenforce = \"block\"\n\n[agents_txt]\nrules = [{ path = \"/a\", action = \"allow\" }]\n",
    );
    let out = crawlgate(&["check", "-c", arg(&p2)]);
    assert_eq!(code(&out), 0);
    let line = stdout(&out);
    let prefix = format!(
        "OK {}: 1 group, 1 rule, 0 robots_tags, agents.txt enabled (1 directive), 1 warning (sha256 ",
        p2.display()
    );
    let warning = format!("{}:7:11: warning[enforce-on-star]: group.enforce: `block` on the `*` group has no effect: its requests name no policy token (browsers, unknown clients), and those are never blocked nor recorded as violations; name the crawlers in a group of their own to enforce on them\n", p2.display());
    assert!(line.starts_with(&prefix), "{line}");
    let sha = line.strip_prefix(&prefix).and_then(|r| r.strip_suffix(&format!(")\n{warning}"))).unwrap_or("");
    assert!(sha.len() == 12 && sha.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()), "{line}");
    assert_eq!(stderr(&out), "");
    // `render` and `explain` only count the warnings, once, on stderr.
    let counted = format!("{p}: 1 warning (`crawlgate check --config {p}` lists it)\n", p = p2.display());
    for args in [
        vec!["render", "robots.txt", "--config", arg(&p2)],
        vec!["explain", "--config", arg(&p2), "--user-agent", "GPTBot", "https://e.example/a", "https://e.example/x"],
    ] {
        let out = crawlgate(&args);
        assert_eq!((code(&out), stderr(&out)), (0, counted.clone()), "{args:?}");
    }
}

#[test]
fn check_invalid_policy_lists_every_error() {
    let dir = TempDir::new("check-invalid");
    let p = dir.write("bad.toml", INVALID);
    let out = crawlgate(&["check", "--config", arg(&p)]);
    assert_eq!(code(&out), 1);
    let f = p.display();
    assert_eq!(
        stdout(&out),
        format!(
            "{f}:5:16: group.user_agents: `GPT Bot` is not a product token (letters, digits, '_', '-' and '.' only, or \"*\")\n\
             {f}:6:13: group.disallow: pattern `private/` must start with '/' or '*'\n\
             {f}:7:11: group.enforce must be off, log, block or charge, found `always`\n\
             {f}:10:16: group.user_agents: duplicate group for token `*` (first at {f}:5:27)\n\
             {f}:11:15: group.crawl_delay must be a positive number of seconds, found -1\n"
        )
    );
    assert_eq!(stderr(&out), format!("{f}: 5 errors\n"));

    // A TOML-level error: one diagnostic, the unknown key located.
    let p = dir.write("unknown.toml", "[upstream]\nservers = [\"127.0.0.1:8000\"]\nbogus = 1\n");
    let out = crawlgate(&["check", "--config", arg(&p)]);
    assert_eq!(code(&out), 1);
    assert_eq!(
        stdout(&out),
        format!("{}:3:1: upstream.bogus: unknown key (valid here: servers, tls, sni, verify_cert, connect_timeout, read_timeout, health_check_interval, content_usage)\n", p.display())
    );
    assert_eq!(stderr(&out), format!("{}: 1 error\n", p.display()));

    // render and explain refuse an invalid policy the same way.
    let out = crawlgate(&["render", "robots.txt", "--config", arg(&p)]);
    assert_eq!((code(&out), stderr(&out)), (1, format!("{}: 1 error\n", p.display())));
}

#[test]
fn missing_config_is_a_clear_error() {
    let dir = TempDir::new("check-missing");
    let missing = dir.path().join("nope.toml");
    for args in [
        vec!["check", "--config", arg(&missing)],
        vec!["render", "robots.txt", "--config", arg(&missing)],
        vec!["explain", "--config", arg(&missing), "-A", "GPTBot", "/"],
    ] {
        let out = crawlgate(&args);
        assert_eq!(code(&out), 2, "{args:?}");
        assert_eq!(stdout(&out), "");
        assert_eq!(
            stderr(&out),
            format!(
                "crawlgate: cannot read policy file {}: No such file or directory (os error 2)\n",
                missing.display()
            )
        );
    }
    // Neither --config nor CRAWLGATE_CONFIG: the documented default path.
    let default = Path::new("/etc/crawlgate/crawlgate.toml");
    if !default.exists() {
        let out = crawlgate(&["check"]);
        assert_eq!(code(&out), 2);
        assert_eq!(stderr(&out), "crawlgate: cannot read policy file /etc/crawlgate/crawlgate.toml: No such file or directory (os error 2)\n");
    }
}

#[test]
fn crawlgate_config_env_var_is_honoured() {
    let dir = TempDir::new("check-env");
    let p = policy(&dir);
    let run = |env: &Path, args: &[&str]| -> Output {
        Command::new(crawlgate_bin())
            .args(args)
            .current_dir(workspace_root())
            .env("CRAWLGATE_CONFIG", env)
            .output()
            .expect("cannot run crawlgate")
    };
    let want = format!(
        "OK {}: 2 groups, 3 rules, 1 robots_tag, agents.txt disabled, 0 warnings (sha256 {POLICY_SHA})\n",
        p.display()
    );
    let out = run(&p, &["check"]);
    assert_eq!((code(&out), stdout(&out)), (0, want.clone()));
    // --config wins over the environment.
    let missing = dir.path().join("missing.toml");
    let out = run(&missing, &["check", "--config", arg(&p)]);
    assert_eq!((code(&out), stdout(&out)), (0, want));
    let out = run(&missing, &["check"]);
    assert_eq!(code(&out), 2);
    assert_eq!(
        stderr(&out),
        format!("crawlgate: cannot read policy file {}: No such file or directory (os error 2)\n", missing.display())
    );
    let out = run(&p, &["render", "robots.txt"]);
    assert_eq!(code(&out), 0);
    assert!(stdout(&out).starts_with("# robots.txt generated by crawlgate from policy.toml;"), "{}", stdout(&out));
}

#[test]
fn render_exact_bytes() {
    let dir = TempDir::new("render");
    let p = policy(&dir);
    let out = crawlgate(&["render", "robots.txt", "--config", arg(&p)]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        out.stdout,
        b"# robots.txt generated by crawlgate from policy.toml; edit the policy, not this file.\n\
\n\
User-agent: *\n\
Disallow: /private/\n\
Content-Usage: train-ai=n\n\
\n\
User-agent: GPTBot\n\
User-agent: CCBot\n\
Disallow: /\n\
Allow: /public/\n\
\n\
Sitemap: https://example.com/sitemap.xml\n"
    );
    assert_eq!(stderr(&out), "");
    let out = crawlgate(&["render", "agents.txt", "--config", arg(&p)]);
    assert_eq!(code(&out), 1);
    assert_eq!(stdout(&out), "");
    assert_eq!(
        stderr(&out),
        format!("{}: agents.txt is disabled (no [agents_txt] table, or enabled = false)\n", p.display())
    );
    let out = crawlgate(&["render", "sitemap.xml", "--config", arg(&p)]);
    assert_eq!(code(&out), 2);
}

#[test]
fn explain_text() {
    let dir = TempDir::new("explain-text");
    let p = policy(&dir);
    let out =
        crawlgate(&["explain", "--config", arg(&p), "-A", GPTBOT_UA, "/drafts/x", "https://example.com/public/a?b"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // The agent's block once, then one line per URL; the blocked URL's
    // 403 carries none of the page's headers.
    assert_eq!(
        stdout(&out),
        "agent:    GPTBot (catalog: OpenAI, ai-training)\n\
         group:    ai (line 14)\n\
         enforce:  block\n\
         \n\
         /drafts/x: disallowed (Disallow: / at line 17) -> block (403)\n\
         \x20 reason:   robots\n\
         https://example.com/public/a?b: allowed (Allow: /public/ at line 18) -> pass\n\
         \x20 header:   Content-Usage: train-ai=n\n"
    );
    // A browser is never blocked nor recorded as a violation.
    let out = crawlgate(&["explain", "--config", arg(&p), "--user-agent", BROWSER_UA, "/private/x", "/drafts/y"]);
    assert_eq!(code(&out), 0);
    assert_eq!(
        stdout(&out),
        "agent:    none (no policy token in the User-Agent)\n\
         group:    * (line 8)\n\
         enforce:  off\n\
         \n\
         /private/x: disallowed (Disallow: /private/ at line 10) -> pass\n\
         /drafts/y: allowed (no rule matched) -> pass\n\
         \x20 header:   Robots-Tag: *;noindex\n\
         \x20 header:   X-Robots-Tag: noindex\n\
         \x20 header:   Content-Usage: train-ai=n\n"
    );
    // A catalog crawler the policy does not name: named as the proxy's
    // access line names it, decided by `*` (observed, not enforced).
    let out = crawlgate(&["explain", "--config", arg(&p), "-A", PERPLEXITY_UA, "/private/x"]);
    assert_eq!((code(&out), stderr(&out)), (0, String::new()));
    assert_eq!(
        stdout(&out),
        "agent:    PerplexityBot (catalog: Perplexity, ai-search; not named by the policy: observed only)\n\
         group:    * (line 8)\n\
         enforce:  off\n\
         \n\
         /private/x: disallowed (Disallow: /private/ at line 10) -> pass\n"
    );
    // A target that cannot be decided on.
    let out = crawlgate(&["explain", "--config", arg(&p), "-A", GPTBOT_UA, "/a%zz"]);
    assert_eq!(
        (code(&out), stdout(&out), stderr(&out)),
        (2, String::new(), "crawlgate: /a%zz: invalid percent-escape at byte 2\n".to_string())
    );
}

#[test]
fn explain_json() {
    let dir = TempDir::new("explain-json");
    let p = policy(&dir);
    let json = |ua: &str, urls: &[&str]| -> serde_json::Value {
        let mut args = vec!["explain", "--json", "--config", arg(&p), "-A", ua];
        args.extend_from_slice(urls);
        let out = crawlgate(&args);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("explain --json is not JSON ({e}): {}", stdout(&out)))
    };

    let v = json(GPTBOT_UA, &["/private/../drafts/x"]);
    let arr = v.as_array().unwrap_or_else(|| panic!("not an array: {v}"));
    assert_eq!(arr.len(), 1);
    let d = &arr[0];
    assert_eq!(d["url"], "/private/../drafts/x");
    assert_eq!(d["path"], "/drafts/x");
    assert_eq!(d["agent"], "GPTBot");
    assert_eq!(d["observed"], serde_json::Value::Null);
    assert_eq!(
        d["catalog"],
        serde_json::json!({"token": "GPTBot", "operator": "OpenAI", "categories": ["ai-training"]})
    );
    assert_eq!(d["group"], serde_json::json!({"name": "ai", "line": 14, "origin": false}));
    assert_eq!(d["rule"], serde_json::json!({"pattern": "/", "allow": false, "line": 17}));
    assert_eq!(d["allowed"], false);
    assert_eq!(d["enforce"], "block");
    assert_eq!(d["action"], "block");
    assert_eq!(d["block_status"], 403);
    assert_eq!(d["reason"], "robots");
    assert_eq!(d["violation"], true);
    // A block is the proxy's 403: none of the page's headers.
    assert_eq!(d["headers"], serde_json::json!({}));
    assert_eq!(d["html"], serde_json::Value::Null);

    let v = json(BROWSER_UA, &["/private/x", "/elsewhere"]);
    let arr = v.as_array().unwrap_or_else(|| panic!("not an array: {v}"));
    assert_eq!(arr.len(), 2);
    let d = &arr[0];
    assert_eq!(d["path"], "/private/x");
    assert_eq!(d["agent"], serde_json::Value::Null);
    assert_eq!(d["observed"], serde_json::Value::Null);
    assert_eq!(d["catalog"], serde_json::Value::Null);
    assert_eq!(d["group"], serde_json::json!({"name": "*", "line": 8, "origin": false}));
    assert_eq!(d["rule"], serde_json::json!({"pattern": "/private/", "allow": false, "line": 10}));
    assert_eq!(d["allowed"], false);
    assert_eq!(d["enforce"], "off");
    assert_eq!(d["action"], "pass");
    assert_eq!(d["block_status"], serde_json::Value::Null);
    // No preference is published for a path the `*` group disallows.
    assert_eq!(
        d["headers"],
        serde_json::json!({
            "robots-tag": null,
            "x-robots-tag": [],
            "content-usage": null,
            "tdm-reservation": null,
            "tdm-policy": null,
        })
    );
    let d = &arr[1];
    assert_eq!(d["rule"], serde_json::Value::Null);
    assert_eq!(d["allowed"], true);
    assert_eq!(d["action"], "pass");
    assert_eq!(
        d["headers"],
        serde_json::json!({
            "robots-tag": null,
            "x-robots-tag": [],
            "content-usage": "train-ai=n",
            "tdm-reservation": null,
            "tdm-policy": null,
        })
    );

    // A catalog crawler the policy does not name: `agent` stays the
    // policy token (none), `observed` names the crawler.
    let v = json(PERPLEXITY_UA, &["/private/x"]);
    let d = &v[0];
    assert_eq!(d["agent"], serde_json::Value::Null);
    assert_eq!(d["observed"], "PerplexityBot");
    assert_eq!(
        d["catalog"],
        serde_json::json!({"token": "PerplexityBot", "operator": "Perplexity", "categories": ["ai-search"]})
    );
    assert_eq!(d["group"], serde_json::json!({"name": "*", "line": 8, "origin": false}));
    assert_eq!(d["action"], "pass");
}

#[test]
fn explain_into_a_closed_pipe_ends_quietly() {
    // `crawlgate explain ... | head -1`: the reader leaves after one line;
    // the output is far larger than a pipe's buffer, so later writes fail.
    let urls: Vec<String> = (0..3000).map(|i| format!("/p{i}")).collect();
    let mut child = Command::new(crawlgate_bin())
        .args(["explain", "--config", "conf/crawlgate.toml", "-A", "GPTBot/1.2"])
        .args(&urls)
        .current_dir(workspace_root())
        .env_remove("CRAWLGATE_CONFIG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn crawlgate");
    let mut first = String::new();
    {
        let out = child.stdout.take().expect("stdout");
        std::io::BufRead::read_line(&mut std::io::BufReader::new(out), &mut first).expect("first line");
    }
    let done = child.wait_with_output().expect("wait");
    assert_eq!(first, "agent:    GPTBot (catalog: OpenAI, ai-training)\n");
    assert_eq!(done.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&done.stderr));
    assert_eq!(String::from_utf8_lossy(&done.stderr), "");
}

/// `explain` shows both usage statements (the Content-Usage header and the
/// robots.txt Content-Signal) and the TDMRep headers and head elements.
#[test]
fn explain_shows_content_usage_content_signal_and_tdmrep() {
    let out = crawlgate(&["explain", "--config", "tests/data/signals.toml", "-A", "ExampleBot/1.0", "/open/a"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "agent:    none (no policy token in the User-Agent)\ngroup:    * (line 17)\nenforce:  off\nrobots:   Content-Signal: search=yes, ai-input=no, ai-train=no\n\n/open/a: allowed (no rule matched) -> pass\n  header:   Content-Usage: train-ai=y\n  header:   tdm-reservation: 0\n  html:     inject <meta name=\"tdm-reservation\" content=\"0\">\n  html:     inject <link rel=\"license\" type=\"application/rsl+xml\" href=\"https://www.example.com/license.xml\">\n"
    );
}

#[test]
fn check_json_lists_errors_with_exit_1() {
    let p = "tests/data/invalid/type-listen.toml";
    let out = crawlgate(&["check", "--json", "--config", p]);
    assert_eq!(code(&out), 1);
    assert_eq!(stderr(&out), "");
    assert_eq!(
        stdout(&out),
        format!(
            "{{\n  \"acknowledged\": 0,\n  \"errors\": [\n    {{\n      \"col\": 10,\n      \"id\": null,\n      \"line\": 3,\n      \
             \"message\": \"server.listen: expected an array of strings, e.g. listen = [\\\"0.0.0.0:8080\\\"], found a string\"\n    \
             }}\n  ],\n  \"file\": \"{p}\",\n  \"warnings\": []\n}}\n"
        )
    );
    // A file that cannot be read is exit 2, and still JSON: one error
    // without a position.
    let p = "tests/data/invalid/no-such-file.toml";
    let out = crawlgate(&["check", "--json", "--config", p]);
    assert_eq!((code(&out), stderr(&out)), (2, String::new()));
    assert_eq!(
        stdout(&out),
        format!(
            "{{\n  \"acknowledged\": 0,\n  \"errors\": [\n    {{\n      \"col\": 0,\n      \"id\": null,\n      \"line\": 0,\n      \
             \"message\": \"cannot read policy file {p}: No such file or directory (os error 2)\"\n    }}\n  ],\n  \"file\": \"{p}\",\n  \
             \"warnings\": []\n}}\n"
        )
    );
}

// `enforce` on `*` applies to the origin's groups, which name crawlers.
const MERGE_POLICY: &str = r#"allow_warnings = ["enforce-on-star"]

[upstream]
servers = ["127.0.0.1:8000"]

[robots_txt]
origin = "merge"

[[group]]
user_agents = ["*"]
disallow = ["/private/"]
enforce = "block"
"#;

const ORIGIN_ROBOTS: &str = "User-agent: *\nDisallow: /cgi-bin/\n\nUser-agent: ExampleBot\nDisallow: /v1-only/\n";

const MERGE_NOTE: &str = "note: robots_txt.origin is \"merge\": the origin's robots.txt groups are not included (the proxy serves and enforces them too); pass --origin URL or --origin-file PATH to include them\n";

/// With `origin = "merge"`, `render` and `explain` say that the origin's
/// groups are missing, and with `--origin-file` (or `--origin URL`) merge
/// them as the proxy does (`Policy::merge_origin`).
#[test]
fn render_and_explain_merge_the_origin_as_the_proxy_does() {
    let dir = TempDir::new("render-origin");
    let p = dir.write("policy.toml", MERGE_POLICY);
    let o = dir.write("origin.txt", ORIGIN_ROBOTS);
    let policy_part = "# robots.txt generated by crawlgate from policy.toml; edit the policy, not this file.\n\n\
                       User-agent: *\nDisallow: /private/\n";
    let out = crawlgate(&["render", "robots.txt", "-c", arg(&p)]);
    assert_eq!((code(&out), stdout(&out), stderr(&out)), (0, policy_part.to_string(), MERGE_NOTE.to_string()));
    let merged = format!(
        "{policy_part}\n# The origin's own groups, for crawlers this policy does not name.\n\n\
         User-agent: ExampleBot\nDisallow: /v1-only/\n"
    );
    let out = crawlgate(&["render", "robots.txt", "-c", arg(&p), "--origin-file", arg(&o)]);
    assert_eq!((code(&out), stdout(&out), stderr(&out)), (0, merged.clone(), String::new()));
    // The same file from a real origin.
    let origin = crawlgate_e2e::origin::Origin::start(vec![(
        "/robots.txt",
        crawlgate_e2e::origin::Route::ok("text/plain", ORIGIN_ROBOTS),
    )]);
    let url = format!("http://{}", origin.addr);
    let out = crawlgate(&["render", "robots.txt", "-c", arg(&p), "--origin", &url]);
    assert_eq!((code(&out), stdout(&out), stderr(&out)), (0, merged, String::new()));

    // explain: the origin's group decides for ExampleBot only when merged.
    let ua = "Mozilla/5.0 (compatible; ExampleBot/1.0)";
    let out = crawlgate(&["explain", "-c", arg(&p), "-A", ua, "/v1-only/x"]);
    assert_eq!(stderr(&out), MERGE_NOTE);
    assert!(stdout(&out).ends_with("\n/v1-only/x: allowed (no rule matched) -> pass\n"), "{}", stdout(&out));
    let out = crawlgate(&["explain", "-c", arg(&p), "-A", ua, "--origin-file", arg(&o), "--json", "/v1-only/x"]);
    assert_eq!(stderr(&out), "");
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)));
    assert_eq!(v[0]["agent"], "ExampleBot");
    assert_eq!(v[0]["allowed"], false);
    assert_eq!(v[0]["rule"]["pattern"], "/v1-only/");
    assert_eq!(v[0]["action"], "block");
}

/// Served is enforced (issue 33, fault 5): a merged origin group for a
/// longer product token decides for that crawler, and `explain` names the
/// origin's file as where the group is.
#[test]
fn explain_shows_the_origin_group_of_a_longer_token() {
    let dir = TempDir::new("explain-origin-token");
    let p = dir.write(
        "policy.toml",
        "[upstream]\nservers = [\"127.0.0.1:8000\"]\n\n[robots_txt]\norigin = \"merge\"\n\n\
         [[group]]\nuser_agents = [\"Googlebot\"]\ndisallow = [\"/nogoogle/\"]\nenforce = \"block\"\n",
    );
    let o =
        dir.write("origin.txt", "User-agent: Googlebot-Image\nDisallow: /\n\nUser-agent: Googlebot-News\nAllow: /\n");
    let out =
        crawlgate(&["explain", "-c", arg(&p), "-A", "Googlebot-Image/1.0", "--origin-file", arg(&o), "/public/a.png"]);
    assert_eq!(
        (code(&out), stdout(&out), stderr(&out)),
        (
            0,
            "agent:    Googlebot-Image (catalog: Google, search-engine)\n\
             group:    Googlebot-Image (the origin's robots.txt, line 1)\n\
             enforce:  off\n\n\
             /public/a.png: disallowed (Disallow: / at line 2) -> pass\n"
                .to_string(),
            String::new()
        )
    );
    let out = crawlgate(&[
        "explain",
        "-c",
        arg(&p),
        "-A",
        "Googlebot-News",
        "--origin-file",
        arg(&o),
        "--json",
        "/nogoogle/x",
    ]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)));
    assert_eq!(v[0]["group"], serde_json::json!({"name": "Googlebot-News", "line": 4, "origin": true}));
    assert_eq!((&v[0]["allowed"], &v[0]["action"]), (&serde_json::json!(true), &serde_json::json!("pass")));
    // Without the origin's file, Googlebot's own group decides.
    let out = crawlgate(&["explain", "-c", arg(&p), "-A", "Googlebot-News", "--json", "/nogoogle/x"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)));
    assert_eq!(v[0]["group"], serde_json::json!({"name": "Googlebot", "line": 7, "origin": false}));
    assert_eq!(v[0]["action"], "block");
}

#[test]
fn explain_says_whether_markdown_would_be_served() {
    let dir = TempDir::new("explain-markdown");
    let p = dir.join("p.toml");
    let policy = "[upstream]\nservers = [\"127.0.0.1:8000\"]\n\n[[group]]\nuser_agents = [\"*\"]\nallow = [\"/\"]\n\n\
                  [[group]]\nuser_agents = [\"GPTBot\"]\ndisallow = [\"/blocked/\"]\nenforce = \"block\"\n\n\
                  [[robots_tag]]\npath = \"/ai-free/\"\nrules = [\"noai\"]\n\n[markdown]\npaths = [\"/docs/\", \"/ai-free/\", \"/blocked/\"]\n";
    std::fs::write(&p, policy).unwrap_or_else(|e| panic!("{e}"));
    let out = crawlgate(&[
        "explain",
        "--config",
        arg(&p),
        "-A",
        "GPTBot/1.2",
        "/docs/a",
        "/ai-free/b",
        "/other",
        "/blocked/c",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("markdown:")).map(str::trim).collect();
    assert_eq!(
        lines,
        [
            "markdown: converted (when Accept prefers text/markdown and the origin answers 2xx text/html)",
            "markdown: not converted (refused for an AI agent: the policy says noai)",
            "markdown: not converted (no markdown.paths pattern matches)",
            "markdown: not converted (the request is blocked)",
        ]
    );
    // Without a [markdown] table there is no markdown line at all.
    let out = crawlgate(&["explain", "--config", "tests/data/signals.toml", "-A", "ExampleBot/1.0", "/open/a"]);
    assert!(!stdout(&out).contains("markdown"), "{}", stdout(&out));
}
