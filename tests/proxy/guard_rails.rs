//! Violations are recorded only for identified crawlers: a browser (or any
//! client naming no policy token) that requests a path the `*` group
//! disallows under `enforce = "log"` is forwarded and counted as allowed,
//! never as a robots.txt violator.

use std::time::Duration;

use crawlgate_e2e::origin::{Origin, Route};
use crawlgate_e2e::proxy::{wait_for, Proxy};

use crate::support::{get, BROWSER_UA};

const RULES: &str = r#"
[[group]]
user_agents = ["*"]
disallow = ["/private/"]
enforce = "log"

[[group]]
user_agents = ["ExampleBot"]
disallow = ["/private/"]
enforce = "log"
"#;

#[test]
fn a_browser_on_a_star_disallow_under_log_is_no_violation() {
    let origin = Origin::start(vec![("/private/x", Route::ok("text/plain", "private x\n"))]);
    let proxy = Proxy::start(origin.addr, RULES);
    for ua in [BROWSER_UA, "curl/8.5.0", "ExampleBot/1.0 (+https://example.com/bot)"] {
        let resp = get(&proxy.url("/private/x"), ua);
        assert_eq!(resp.status(), 200, "{ua}");
        assert_eq!(resp.text().unwrap_or_default(), "private x\n", "{ua}");
    }
    let count = |series: &str| proxy.metric(series).map(|v| v.parse::<f64>().unwrap_or(f64::NAN)).unwrap_or(0.0);
    // The crawler's request is the one violation; the two others are allowed.
    wait_for("the three requests to be counted", Duration::from_secs(5), || {
        (count(r#"crawlgate_requests_total{agent="ExampleBot",decision="violation_logged"}"#) == 1.0
            && count(r#"crawlgate_requests_total{agent="other",decision="allowed"}"#) == 2.0)
            .then_some(())
    });
    let metrics = proxy.metrics();
    assert_eq!(count(r#"crawlgate_violations_total{agent="ExampleBot",group="ExampleBot"}"#), 1.0, "{metrics}");
    assert_eq!(count(r#"crawlgate_violations_total{agent="other",group="*"}"#), 0.0, "{metrics}");
    assert_eq!(count(r#"crawlgate_requests_total{agent="other",decision="violation_logged"}"#), 0.0, "{metrics}");
    // The access log has a line per request (written after its response):
    // the one with `violation=true` is the crawler's.
    let lines = wait_for("three access lines", Duration::from_secs(10), || {
        let lines: Vec<String> = proxy.log().lines().filter(|l| l.starts_with("time=")).map(str::to_owned).collect();
        (lines.len() >= 3).then_some(lines)
    });
    let violations: Vec<&String> = lines.iter().filter(|l| l.contains(" violation=true ")).collect();
    assert_eq!(violations.len(), 1, "{lines:?}");
    assert!(violations.iter().all(|l| l.contains(" agent=ExampleBot ")), "a violation logged for no token:\n{lines:?}");
    assert_eq!(origin.seen().len(), 3);
}
