//! `crawlgate explain` and `check` on rate limits: the limit and key each
//! URL is counted under, and the warnings about Crawl-delay.

use crawlgate_e2e::{arg, code, crawlgate, stderr, stdout};
use crawlgate_testkit::TempDir;

const POLICY: &str = r#"[upstream]
servers = ["127.0.0.1:8000"]

[limits]
ipv4_prefix = 16

[[group]]
user_agents = ["*"]
rate = "30/min"

[[group]]
user_agents = ["ExampleBot"]
crawl_delay = 2
enforce_crawl_delay = true
burst = 2
"#;

fn policy(dir: &TempDir, text: &str) -> std::path::PathBuf {
    let p = dir.join("crawlgate.toml");
    std::fs::write(&p, text).unwrap_or_else(|e| panic!("{e}"));
    p
}

#[test]
fn explain_shows_the_limit_and_its_key() {
    let dir = TempDir::new("explain-rate");
    let p = policy(&dir, POLICY);
    let out = crawlgate(&["explain", "--config", arg(&p), "-A", "ExampleBot/1.0", "/page", "/robots.txt"]);
    assert_eq!((code(&out), stderr(&out)), (0, String::new()));
    assert_eq!(
        stdout(&out),
        "agent:    ExampleBot\n\
         group:    ExampleBot (line 11)\n\
         enforce:  off\n\
         \n\
         /page: allowed (no rule matched) -> pass\n\
         \x20 rate:     1/2s burst 2 (crawl_delay) (group ExampleBot), key agent:ExampleBot:net:<client>/16\n\
         /robots.txt: allowed (no rule matched) -> pass\n"
    );
    let out = crawlgate(&["explain", "--config", arg(&p), "-A", "Mozilla/5.0", "--json", "/page"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(v[0]["rate"], serde_json::json!({"limit": "30/min burst 1", "group": "*", "key": "net:<client>/16"}));
}

#[test]
fn check_warns_when_a_rate_contradicts_the_crawl_delay() {
    let dir = TempDir::new("check-rate");
    let p = policy(
        &dir,
        &format!("{POLICY}rate = \"1/min\"\n\n[[group]]\nuser_agents = [\"OtherBot\"]\nenforce_crawl_delay = true\n"),
    );
    let out = crawlgate(&["check", "--config", arg(&p)]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let file = arg(&p);
    let text = stdout(&out);
    let warnings: Vec<&str> = text.lines().filter(|l| l.contains("warning[")).collect();
    assert_eq!(
        warnings,
        [
            format!("{file}:16:8: warning[rate-stricter-than-crawl-delay]: group.rate: `1/min` allows one request every 60s, less often than the published Crawl-delay of 2s: a crawler keeping to robots.txt would be refused with 429; publish a crawl_delay of at least 60 or raise the rate"),
            format!("{file}:20:23: warning[enforce-crawl-delay-without-delay]: group.enforce_crawl_delay: the group has no crawl_delay, so there is nothing to enforce; set crawl_delay or remove enforce_crawl_delay"),
        ]
    );
}
