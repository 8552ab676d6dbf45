//! Rate limits end to end: the real proxy in front of a real origin, spoken
//! to over real connections (from chosen loopback source addresses where
//! the network matters).
//!
//! Counts are asserted without trusting the machine's speed: a burst sent
//! back to back is admitted exactly `burst` times unless the test measured
//! that it took longer than one emission interval, and a paced crawler's
//! admissions are checked against the bounds GCRA guarantees for the gaps
//! the test measured.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use crawlgate_e2e::origin::{Origin, Route};
use crawlgate_e2e::proxy::{wait_for, Proxy};
use crawlgate_testkit::http::{Conn, RawResponse};

const PATIENCE: Duration = Duration::from_secs(20);
const CRAWLER: &str = "Mozilla/5.0 (compatible; ExampleBot/1.0; +https://example.com/bot)";
const BROWSER: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";

fn origin() -> Origin {
    Origin::start(vec![("/", Route::ok("text/plain", "home\n")), ("/page", Route::ok("text/plain", "page\n"))])
}

fn from(ip: &str, proxy: &Proxy) -> Conn {
    Conn::from_source(ip.parse::<IpAddr>().unwrap_or_else(|e| panic!("{e}")), proxy.addr)
}

fn get(conn: &mut Conn, path: &str, ua: &str) -> RawResponse {
    conn.request("GET", path, &[("User-Agent", ua)])
}

/// The 429 body for `group` over `limit` (in words) with `retry` seconds.
fn refusal(group: &str, limit: &str, retry: u64) -> String {
    format!("429 Too Many Requests\n\nThis site allows the group {group} {limit}. Retry after {retry} s.\nSee /robots.txt for the published Crawl-delay.\n")
}

fn reload(proxy: &Proxy, policy: &str, generation: u64) {
    std::fs::write(&proxy.policy_path, policy).unwrap_or_else(|e| panic!("{e}"));
    proxy.signal("HUP");
    wait_for("the reload", PATIENCE, || {
        (proxy.metric("crawlgate_policy_generation").as_deref() == Some(&generation.to_string())).then_some(())
    });
}

#[test]
fn a_burst_over_the_rate_gets_exactly_burst_through_then_429_with_retry_after() {
    let origin = origin();
    let proxy = Proxy::start(
        origin.addr,
        "[[group]]\nuser_agents = [\"ExampleBot\"]\nrate = \"2/s\"\nburst = 3\n\n[[group]]\nuser_agents = [\"*\"]\n",
    );
    let mut conn = from("127.0.0.1", &proxy);
    let started = Instant::now();
    let statuses: Vec<u16> = (0..10).map(|_| get(&mut conn, "/page", CRAWLER).status).collect();
    let elapsed = started.elapsed();
    let admitted = statuses.iter().filter(|s| **s == 200).count();
    // GCRA admits at most burst + elapsed / T; at least the burst.
    let bound = 3 + (elapsed.as_millis() / 500) as usize;
    if elapsed < Duration::from_millis(500) {
        assert_eq!(statuses, [200, 200, 200, 429, 429, 429, 429, 429, 429, 429], "in {elapsed:?}");
    } else {
        assert!((3..=bound).contains(&admitted), "{admitted} admitted in {elapsed:?}: {statuses:?}");
    }

    // The next one is refused: Retry-After is the wait rounded up to whole
    // seconds (at most 500 ms at 2/s: 1).
    let r = get(&mut conn, "/page", CRAWLER);
    assert_eq!(r.status, 429);
    assert_eq!(r.header("retry-after"), Some("1"));
    assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));
    assert_eq!(String::from_utf8_lossy(&r.body), refusal("ExampleBot", "2 requests per second, bursts of up to 3", 1));

    // robots.txt is never limited.
    for _ in 0..20 {
        assert_eq!(get(&mut conn, "/robots.txt", CRAWLER).status, 200);
    }
    let refused = statuses.iter().filter(|s| **s == 429).count() + 1;
    let origin_seen = origin.seen().iter().filter(|s| s.target == "/page").count();
    assert_eq!(origin_seen, admitted, "a refused request never reaches the origin");

    wait_for("the counter", PATIENCE, || {
        let want = refused.to_string();
        (proxy.metric("crawlgate_rate_limited_total{agent=\"ExampleBot\",group=\"ExampleBot\"}").as_deref()
            == Some(&want))
        .then_some(())
    });
    assert_eq!(proxy.metric("crawlgate_blocks_total{agent=\"ExampleBot\",reason=\"rate\"}"), Some(refused.to_string()));
    // The access line: reason, group and limit.
    let log = proxy.log();
    let line =
        log.lines().rfind(|l| l.contains("status=429")).unwrap_or_else(|| panic!("no 429 access line in:\n{log}"));
    for part in [
        "agent=ExampleBot",
        "group=ExampleBot",
        "decision=block",
        "reason=rate",
        "local=rate-limited",
        "limit=\"2/s burst 3\"",
    ] {
        assert!(line.contains(part), "{part} missing from {line}");
    }
    // The dashboard's per-agent breakdown counts the refusals.
    let text =
        reqwest::blocking::get(proxy.admin_url("/api/agents")).and_then(|r| r.text()).unwrap_or_else(|e| panic!("{e}"));
    let activity: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    let row = activity["agents"]
        .as_array()
        .and_then(|a| a.iter().find(|r| r["agent"] == "ExampleBot"))
        .unwrap_or_else(|| panic!("no ExampleBot row: {activity}"));
    assert_eq!(row["blocked_by"]["rate"], refused);
}

#[test]
fn a_crawler_at_ten_per_second_gets_about_two_per_second_through() {
    let origin = origin();
    let proxy = Proxy::start(
        origin.addr,
        "[[group]]\nuser_agents = [\"ExampleBot\"]\nrate = \"2/s\"\n\n[[group]]\nuser_agents = [\"*\"]\n",
    );
    let mut conn = from("127.0.0.1", &proxy);
    let started = Instant::now();
    let mut admitted = 0u32;
    let mut max_gap = Duration::ZERO;
    let mut last = started;
    for i in 0..25u32 {
        // 10 requests a second, each sent at its slot or as soon as the
        // previous answer is in.
        let slot = started + Duration::from_millis(100) * i;
        if let Some(wait) = slot.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let now = Instant::now();
        max_gap = max_gap.max(now - last);
        last = now;
        let r = get(&mut conn, "/page", CRAWLER);
        match r.status {
            200 => admitted += 1,
            429 => assert_eq!(r.header("retry-after"), Some("1")),
            s => panic!("status {s}"),
        }
    }
    let elapsed = started.elapsed();
    // At most one per 500 ms plus the first; at least one per 500 ms plus
    // the longest gap between two requests.
    let most = 1 + (elapsed.as_millis() / 500) as u32;
    let least = (elapsed.as_millis() / (500 + max_gap.as_millis() + 1)) as u32;
    assert!((least..=most).contains(&admitted), "{admitted} admitted in {elapsed:?} (gaps up to {max_gap:?})");
}

#[test]
fn enforce_crawl_delay_admits_one_request_per_delay() {
    let origin = origin();
    let proxy = Proxy::start(
        origin.addr,
        "[[group]]\nuser_agents = [\"ExampleBot\"]\ncrawl_delay = 1\nenforce_crawl_delay = true\n\n[[group]]\nuser_agents = [\"*\"]\n",
    );
    let mut conn = from("127.0.0.1", &proxy);
    let robots = String::from_utf8_lossy(&get(&mut conn, "/robots.txt", CRAWLER).body).into_owned();
    assert!(robots.contains("User-agent: ExampleBot\nDisallow:\nCrawl-delay: 1\n"), "{robots}");
    let started = Instant::now();
    let first = get(&mut conn, "/page", CRAWLER);
    let second = get(&mut conn, "/page", CRAWLER);
    assert_eq!(first.status, 200);
    if started.elapsed() < Duration::from_secs(1) {
        assert_eq!(second.status, 429);
        assert_eq!(second.header("retry-after"), Some("1"));
        assert_eq!(
            String::from_utf8_lossy(&second.body),
            refusal("ExampleBot", "1 request per second (its Crawl-delay)", 1)
        );
    }
    // A browser is not a crawler of the group: not limited.
    for _ in 0..5 {
        assert_eq!(get(&mut conn, "/page", BROWSER).status, 200);
    }
    // One delay later the crawler is admitted again.
    std::thread::sleep(Duration::from_millis(1100));
    assert_eq!(get(&mut conn, "/page", CRAWLER).status, 200);
}

/// `*` with `1/min`: the first request of a network is admitted, the next
/// refused for about a minute.
fn star_policy(prefix: u8) -> String {
    format!("[limits]\nipv4_prefix = {prefix}\n\n[[group]]\nuser_agents = [\"*\"]\nrate = \"1/min\"\n")
}

#[test]
fn the_star_group_is_limited_per_client_network() {
    let origin = origin();
    // /32: 127.0.0.2 and 127.0.0.3 are two networks.
    let proxy = Proxy::start(origin.addr, &star_policy(32));
    let mut two = from("127.0.0.2", &proxy);
    let mut three = from("127.0.0.3", &proxy);
    let started = Instant::now();
    assert_eq!(get(&mut two, "/page", BROWSER).status, 200);
    let again = get(&mut two, "/page", BROWSER);
    assert_eq!(get(&mut three, "/page", BROWSER).status, 200);
    let waited = started.elapsed().as_secs();
    assert_eq!(again.status, 429);
    let retry: u64 = again.header("retry-after").and_then(|v| v.parse().ok()).unwrap_or(0);
    assert!((60 - waited - 1..=60).contains(&retry), "Retry-After {retry} after {waited} s");
    assert_eq!(String::from_utf8_lossy(&again.body), refusal("*", "1 request per minute", retry));
    // A token the policy does not name is one of everybody.
    assert_eq!(get(&mut three, "/page", CRAWLER).status, 429);
    // The files crawlgate serves itself are never limited.
    for path in ["/robots.txt", "/agents.txt"] {
        assert_ne!(get(&mut two, path, BROWSER).status, 429, "{path}");
    }
    drop(proxy);

    // /8: one network.
    let proxy = Proxy::start(origin.addr, &star_policy(8));
    assert_eq!(get(&mut from("127.0.0.2", &proxy), "/page", BROWSER).status, 200);
    assert_eq!(get(&mut from("127.0.0.3", &proxy), "/page", BROWSER).status, 429);
    assert_eq!(proxy.metric("crawlgate_rate_limited_total{agent=\"other\",group=\"*\"}").as_deref(), Some("1"));
}

#[test]
fn a_reload_changes_the_rate_for_the_next_request_and_keeps_the_buckets() {
    let origin = origin();
    let proxy = Proxy::start(origin.addr, "[[group]]\nuser_agents = [\"ExampleBot\"]\nrate = \"10/s\"\n");
    let policy = std::fs::read_to_string(&proxy.policy_path).unwrap_or_else(|e| panic!("{e}"));
    let mut conn = from("127.0.0.1", &proxy);
    assert_eq!(get(&mut conn, "/page", CRAWLER).status, 200);
    std::thread::sleep(Duration::from_millis(150));
    assert_eq!(get(&mut conn, "/page", CRAWLER).status, 200);
    std::thread::sleep(Duration::from_millis(150));

    // 1/min from the next request on.
    reload(&proxy, &policy.replace("rate = \"10/s\"", "rate = \"1/min\""), 2);
    let started = Instant::now();
    assert_eq!(get(&mut conn, "/page", CRAWLER).status, 200);
    let r = get(&mut conn, "/page", CRAWLER);
    assert_eq!(r.status, 429);
    assert_eq!(String::from_utf8_lossy(&r.body), refusal("ExampleBot", "1 request per minute", 60));

    // 2/min: the bucket is kept (its next admission is still a minute
    // after the last one, not reset and not 30 s).
    reload(&proxy, &policy.replace("rate = \"10/s\"", "rate = \"2/min\""), 3);
    let r = get(&mut conn, "/page", CRAWLER);
    let waited = started.elapsed().as_secs();
    assert_eq!(r.status, 429);
    let retry: u64 = r.header("retry-after").and_then(|v| v.parse().ok()).unwrap_or(0);
    assert!((60 - waited - 1..=60).contains(&retry), "Retry-After {retry} after {waited} s");
    assert!(retry > 30, "Retry-After {retry}: the bucket restarted with the new rate");
}

#[test]
fn a_verified_crawler_has_one_bucket_across_its_addresses() {
    let dir = crawlgate_testkit::TempDir::new("limits-verified");
    let list = dir.write("google.txt", "127.0.0.2/32\n127.0.0.3/32\n");
    let origin = origin();
    let proxy = Proxy::start(
        origin.addr,
        &format!(
            "[limits]\nipv4_prefix = 32\n\n[verification]\n\n[verification.lists]\nGooglebot = [\"{}\"]\n\n\
             [[group]]\nuser_agents = [\"*\"]\nrate = \"1/min\"\n\n\
             [[group]]\nuser_agents = [\"Googlebot\"]\nverify = \"ip\"\nrate = \"1/min\"\n",
            list.display()
        ),
    );
    const GOOGLEBOT: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
    // Its first address is admitted, its second shares the bucket.
    assert_eq!(get(&mut from("127.0.0.2", &proxy), "/page", GOOGLEBOT).status, 200);
    let second = get(&mut from("127.0.0.3", &proxy), "/page", GOOGLEBOT);
    assert_eq!(second.status, 429);
    assert!(String::from_utf8_lossy(&second.body).contains("allows the group Googlebot 1 request per minute."));
    // A spoofer of the token is not counted against the real crawler: it
    // gets what an unnamed client gets, the `*` limit of its own network.
    assert_eq!(get(&mut from("127.0.0.4", &proxy), "/page", GOOGLEBOT).status, 200);
    assert_eq!(get(&mut from("127.0.0.4", &proxy), "/page", GOOGLEBOT).status, 429);
    let log = wait_for("the access lines", PATIENCE, || {
        let log = proxy.log();
        (log.lines().filter(|l| l.contains("status=429")).count() == 2).then_some(log)
    });
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("status=429")).collect();
    assert!(
        lines[0].contains("client_ip=127.0.0.3 ") && lines[0].contains(" verification=verified(ip) "),
        "{}",
        lines[0]
    );
    assert!(lines[0].contains(" group=Googlebot decision=block reason=rate "), "{}", lines[0]);
    assert!(
        lines[1].contains("client_ip=127.0.0.4 ") && lines[1].contains(" verification=spoofed(ip) "),
        "{}",
        lines[1]
    );
    assert!(lines[1].contains(" group=* decision=block reason=rate "), "{}", lines[1]);
}

/// A shared store nobody answers at: every limit is enforced in process,
/// and the log says so once (the reconnection attempts behind it add no
/// line).
#[test]
fn an_unreachable_shared_store_leaves_local_limits_and_one_log_line() {
    let origin = origin();
    let proxy = Proxy::start(
        origin.addr,
        "[limits]\nstore = \"redis://127.0.0.1:1/0\"\n\n[[group]]\nuser_agents = [\"ExampleBot\"]\nrate = \"1/min\"\n",
    );
    let mut conn = from("127.0.0.1", &proxy);
    assert_eq!(get(&mut conn, "/page", CRAWLER).status, 200);
    assert_eq!(get(&mut conn, "/page", CRAWLER).status, 429);
    assert_eq!(get(&mut conn, "/page", CRAWLER).status, 429);
    crawlgate_e2e::proxy::wait_for("the store's log line", std::time::Duration::from_secs(10), || {
        proxy.log().contains("Shared store is down").then_some(())
    });
    // Reconnection attempts at 100, 200, 400 ms ... log nothing more.
    std::thread::sleep(std::time::Duration::from_secs(1));
    let log = proxy.log();
    let notes: Vec<&str> = log.lines().filter(|l| l.contains("Shared store is down")).collect();
    assert_eq!(notes.len(), 1, "{log}");
    assert!(notes[0].contains("rate limits are per instance until it is back"), "{log}");
    assert_eq!(proxy.metric("crawlgate_limits_store_up"), Some("0".into()));
}

/// `rate_mode = "log"` (nginx `limit_req_dry_run`): every request passes,
/// the ones over the rate counted and logged as `would_limit`. `"delay"`
/// (a burst without `nodelay`): a request over the rate is held until it
/// conforms, then passes (`delayed`); one whose wait would pass
/// `rate_max_delay` gets the 429 at once, on a connection that stays open.
#[test]
fn log_mode_passes_and_counts_would_limit_and_delay_mode_holds_within_its_bound() {
    let origin = origin();
    let proxy = Proxy::start(
        origin.addr,
        "[[group]]\nuser_agents = [\"ExampleBot\"]\nrate = \"1/min\"\nrate_mode = \"log\"\n\n\
         [[group]]\nuser_agents = [\"HeldBot\"]\nrate = \"4/s\"\nrate_mode = \"delay\"\nrate_max_delay = \"2s\"\n\n\
         [[group]]\nuser_agents = [\"SlowBot\"]\nrate = \"1/min\"\nrate_mode = \"delay\"\nrate_max_delay = \"1s\"\n\n\
         [[group]]\nuser_agents = [\"*\"]\n",
    );
    let mut conn = from("127.0.0.1", &proxy);
    let statuses: Vec<u16> = (0..3).map(|_| get(&mut conn, "/page", "ExampleBot/1.0").status).collect();
    assert_eq!(statuses, [200, 200, 200]);
    // Two back to back at 4/s, burst 1: the second waits about 250 ms.
    let statuses: Vec<u16> = (0..2).map(|_| get(&mut conn, "/page", "HeldBot/1.0").status).collect();
    assert_eq!(statuses, [200, 200]);
    // 1/min: a second request would wait a minute, past its 1 s bound.
    assert_eq!(get(&mut conn, "/page", "SlowBot/1.0").status, 200);
    let refused = get(&mut conn, "/page", "SlowBot/1.0");
    assert_eq!(refused.status, 429);
    assert_ne!(
        refused.header("connection").map(str::to_ascii_lowercase).as_deref(),
        Some("close"),
        "{:?}",
        refused.headers
    );
    assert_eq!(refused.header("retry-after"), Some("60"));
    assert_eq!(String::from_utf8_lossy(&refused.body), refusal("SlowBot", "1 request per minute", 60));
    // The same connection serves the next request.
    assert_eq!(get(&mut conn, "/page", BROWSER).status, 200);
    for (series, want) in [
        ("crawlgate_rate_exceeded_total{action=\"would_limit\",agent=\"ExampleBot\",group=\"ExampleBot\"}", "2"),
        ("crawlgate_rate_exceeded_total{action=\"delayed\",agent=\"HeldBot\",group=\"HeldBot\"}", "1"),
        ("crawlgate_rate_limited_total{agent=\"SlowBot\",group=\"SlowBot\"}", "1"),
    ] {
        wait_for(series, PATIENCE, || (proxy.metric(series).as_deref() == Some(want)).then_some(()));
    }
    assert_eq!(
        proxy.metric("crawlgate_rate_limited_total{agent=\"ExampleBot\",group=\"ExampleBot\"}"),
        Some("0".into())
    );
    let log = proxy.log();
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("over_rate=")).collect();
    assert_eq!(lines.len(), 3, "{log}");
    for (line, action, agent) in [
        (lines[0], "would_limit", "ExampleBot"),
        (lines[1], "would_limit", "ExampleBot"),
        (lines[2], "delayed", "HeldBot"),
    ] {
        assert!(line.contains(&format!("agent={agent} ")), "{line}");
        assert!(line.contains(" status=200 "), "{line}");
        assert!(line.contains(&format!(" over_rate={action}")), "{line}");
    }
}

/// Several rates inside one group, by path (`[[group.rates]]`): each entry
/// counts in a bucket of its own, other paths get the group's `rate`, and
/// a 429 keeps the connection (the next requests go on the same one).
#[test]
fn per_path_rates_inside_one_group_and_the_429_keeps_the_connection() {
    let origin = Origin::start(vec![
        ("/", Route::ok("text/plain", "home\n")),
        ("/page", Route::ok("text/plain", "page\n")),
        ("/search", Route::ok("text/plain", "results\n")),
    ]);
    let proxy = Proxy::start(
        origin.addr,
        "[[group]]\nuser_agents = [\"ExampleBot\"]\nrate = \"100/s\"\nburst = 100\n\n\
         [[group.rates]]\npaths = [\"/search\"]\nrate = \"1/min\"\n\n\
         [[group.rates]]\npaths = [\"/page\"]\nrate = \"1/min\"\nburst = 3\n\n\
         [[group]]\nuser_agents = [\"*\"]\n",
    );
    let mut conn = from("127.0.0.1", &proxy);
    // One request a minute on /search: the second is refused.
    assert_eq!(get(&mut conn, "/search?q=a", CRAWLER).status, 200);
    let r = get(&mut conn, "/search?q=b", CRAWLER);
    assert_eq!(r.status, 429);
    assert_eq!(r.header("retry-after"), Some("60"));
    assert_eq!(r.header("connection"), Some("keep-alive"), "a 429 does not close the connection");
    assert_eq!(String::from_utf8_lossy(&r.body), refusal("ExampleBot", "1 request per minute on /search", 60));
    // /page has its own bucket (burst 3), untouched by /search's.
    let page: Vec<u16> = (0..4).map(|_| get(&mut conn, "/page", CRAWLER).status).collect();
    assert_eq!(page, [200, 200, 200, 429]);
    // Every other path: the group's 100/s, burst 100.
    let home: Vec<u16> = (0..10).map(|_| get(&mut conn, "/", CRAWLER).status).collect();
    assert_eq!(home, [200; 10]);
    // All of it on the one connection, and the limits still hold.
    assert_eq!(get(&mut conn, "/search", CRAWLER).status, 429);
    let m = proxy.metrics();
    assert!(m.contains("crawlgate_rate_limited_total{agent=\"ExampleBot\",group=\"ExampleBot\"} 3\n"), "{m}");
}
