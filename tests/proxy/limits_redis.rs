//! Rate limits shared through a real `redis-server` (testkit) by real
//! crawlgate processes in front of a real origin (issue 24): two instances
//! admit the rate together, not twice it; Redis stopped mid-run falls back
//! to each instance's own limits with no 5xx, one log line and the gauge at
//! 0; started again, the shared limits resume; a wrong password is a clear
//! error at start and limits stay local; the right one works; the fleet
//! view adds both instances up. The Web Bot Auth replay cache is shared
//! the same way: a signature accepted by one instance is a replay (429) at
//! the other; with Redis stopped each instance still refuses its own
//! replays.

use std::time::Duration;

use crawlgate_e2e::origin::{Origin, Route};
use crawlgate_e2e::proxy::{wait_for, Proxy};
use crawlgate_testkit::redis::{RedisServer, Resp};

const UA: &str = "ExampleBot/1.0 (+https://example.com/bot)";

/// 5 per minute, burst 5: five requests pass at once, then one every 12 s,
/// longer than any of these tests takes between two checks. The budget is
/// generous so a loaded test machine does not fall back by timeout.
fn policy(store: &str) -> String {
    format!(
        "[limits]\nstore = \"{store}\"\ntimeout = \"1s\"\n\n\
         [[group]]\nuser_agents = [\"ExampleBot\"]\nallow = [\"/\"]\nrate = \"5/min\"\nburst = 5\n"
    )
}

fn origin() -> Origin {
    Origin::start(vec![("/page", Route::ok("text/plain", "page\n"))])
}

/// Sends `n` GETs of /page as ExampleBot, to each proxy in turn, and
/// returns the statuses; a 429 must carry a whole-seconds `Retry-After`.
fn crawl(proxies: &[&Proxy], n: usize) -> Vec<u16> {
    let client = reqwest::blocking::Client::builder().timeout(Duration::from_secs(10)).build().unwrap();
    (0..n)
        .map(|i| {
            let proxy = proxies[i % proxies.len()];
            let resp = client
                .get(proxy.url("/page"))
                .header("User-Agent", UA)
                .send()
                .unwrap_or_else(|e| panic!("GET /page: {e}\n{}", proxy.log()));
            let status = resp.status().as_u16();
            if status == 429 {
                let retry = resp.headers().get("retry-after").and_then(|v| v.to_str().ok()).map(str::to_owned);
                let secs: u64 =
                    retry.as_deref().and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("Retry-After {retry:?}"));
                assert!((1..=60).contains(&secs), "Retry-After {secs}");
            }
            status
        })
        .collect()
}

fn allowed(statuses: &[u16]) -> usize {
    assert!(statuses.iter().all(|s| *s == 200 || *s == 429), "only 200 and 429 expected: {statuses:?}");
    statuses.iter().filter(|s| **s == 200).count()
}

fn count(log: &str, needle: &str) -> usize {
    log.lines().filter(|l| l.contains(needle)).count()
}

/// Waits until the proxy's store gauge reads `v`.
fn wait_gauge(proxy: &Proxy, v: &str) {
    wait_for(&format!("crawlgate_limits_store_up {v}"), Duration::from_secs(20), || {
        (proxy.metric("crawlgate_limits_store_up").as_deref() == Some(v)).then_some(())
    });
}

fn bucket_keys(redis: &RedisServer) -> usize {
    match redis.command(&["KEYS", "crawlgate:agent:*"]) {
        Resp::Array(Some(keys)) => keys.len(),
        other => panic!("KEYS: {other:?}"),
    }
}

#[test]
fn two_instances_sharing_redis_admit_the_rate_together() {
    let redis = RedisServer::start();
    let origin = origin();
    let a = Proxy::start(origin.addr, &policy(&redis.url()));
    let b = Proxy::start(origin.addr, &policy(&redis.url()));
    wait_gauge(&a, "1");
    wait_gauge(&b, "1");
    let statuses = crawl(&[&a, &b], 20);
    // One bucket for both: the burst of 5 (a sixth only if the test took
    // over 12 s), not 5 per instance.
    let n = allowed(&statuses);
    assert!((5..=6).contains(&n), "{n} admitted of {statuses:?}");
    assert_eq!(&statuses[..5], [200; 5]);
    assert_eq!(bucket_keys(&redis), 1);
    assert_eq!(a.metric("crawlgate_limits_store_errors_total"), Some("0".into()));
    assert_eq!(a.metric("crawlgate_limits_fallback_total{reason=\"down\"}"), Some("0".into()));
    assert_eq!(count(&a.log(), "Shared store is up"), 1, "{}", a.log());
}

#[test]
fn redis_stopped_mid_run_falls_back_to_local_limits_and_resumes() {
    let mut redis = RedisServer::start();
    let origin = origin();
    let proxy = Proxy::start(origin.addr, &policy(&redis.url()));
    wait_gauge(&proxy, "1");
    assert_eq!(allowed(&crawl(&[&proxy], 3)), 3);
    redis.stop();
    // No 5xx: the in-process store decides, with its own (fresh) bucket.
    let statuses = crawl(&[&proxy], 10);
    assert_eq!(allowed(&statuses), 5, "{statuses:?}");
    wait_gauge(&proxy, "0");
    let errors: u64 = proxy.metric("crawlgate_limits_store_errors_total").and_then(|v| v.parse().ok()).unwrap_or(0);
    assert!(errors >= 1, "{}", proxy.metrics());
    // Each of the ten was decided locally, and counted by its reason.
    let fallbacks: u64 = ["down", "error", "timeout"]
        .iter()
        .map(|r| {
            proxy
                .metric(&format!("crawlgate_limits_fallback_total{{reason=\"{r}\"}}"))
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap()
        })
        .sum();
    assert_eq!(fallbacks, 10, "{}", proxy.metrics());
    let log = proxy.log();
    assert_eq!(count(&log, "Shared store is down"), 1, "{log}");
    redis.start_again();
    wait_gauge(&proxy, "1");
    // Shared again: the new server's bucket is fresh (5 pass) while the
    // local one is spent (it would pass none).
    let statuses = crawl(&[&proxy], 10);
    assert_eq!(allowed(&statuses), 5, "{statuses:?}");
    assert_eq!(bucket_keys(&redis), 1);
    let log = proxy.log();
    assert_eq!(count(&log, "Shared store is down"), 1, "{log}");
    assert_eq!(count(&log, "Shared store is up"), 2, "{log}");
}

#[test]
fn a_wrong_password_is_a_clear_error_at_start_and_limits_stay_local() {
    let redis = RedisServer::start_with_password("right-password");
    let origin = origin();
    let proxy = Proxy::start(origin.addr, &policy(&redis.url_with_password("wrong-password")));
    let line = wait_for("the password error", Duration::from_secs(10), || {
        proxy.log().lines().find(|l| l.contains("refused the password")).map(str::to_owned)
    });
    assert!(
        line.contains(&format!(
            "Redis at 127.0.0.1:{} refused the password in the store URL (AUTH failed)",
            redis.port()
        )),
        "{line}"
    );
    assert!(!proxy.log().contains("wrong-password"), "{}", proxy.log());
    assert_eq!(proxy.metric("crawlgate_limits_store_up"), Some("0".into()));
    let statuses = crawl(&[&proxy], 8);
    assert_eq!(allowed(&statuses), 5, "{statuses:?}");
    assert_eq!(bucket_keys(&redis), 0);
    // Retried with backoff, logged once.
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(count(&proxy.log(), "refused the password"), 1, "{}", proxy.log());
}

#[test]
fn the_right_password_shares_the_limits() {
    let redis = RedisServer::start_with_password("right-password");
    let origin = origin();
    let proxy = Proxy::start(origin.addr, &policy(&redis.url()));
    wait_gauge(&proxy, "1");
    assert_eq!(allowed(&crawl(&[&proxy], 7)), 5);
    assert_eq!(bucket_keys(&redis), 1);
}

#[test]
fn the_fleet_view_adds_both_instances_up() {
    let redis = RedisServer::start();
    let origin = origin();
    let a = Proxy::start(origin.addr, &policy(&redis.url()));
    let b = Proxy::start(origin.addr, &policy(&redis.url()));
    wait_gauge(&a, "1");
    wait_gauge(&b, "1");
    crawl(&[&a], 2);
    crawl(&[&b], 3);
    let fleet = wait_for("both instances in a's fleet view", Duration::from_secs(30), || {
        let text = reqwest::blocking::get(a.admin_url("/api/agents?window=1h")).and_then(|r| r.text()).ok()?;
        let v: serde_json::Value = serde_json::from_str(&text).ok()?;
        let fleet = v["fleet"].clone();
        (fleet["instances"] == 2 && fleet["agents"][0]["requests"]["fleet"] == 5).then_some(fleet)
    });
    assert_eq!(fleet["shared"], true);
    assert_eq!(fleet["agents"][0]["agent"], "ExampleBot");
    assert_eq!(fleet["agents"][0]["requests"]["this"], 2);
    let page = reqwest::blocking::get(a.admin_url("/")).and_then(|r| r.text()).unwrap();
    assert!(page.contains("<span id=\"fleet-instances\">2</span> instance(s) reported in the last minute."), "{page}");
    assert_eq!(status(&a)["limits"]["store"]["up"], true);
    assert_eq!(a.metric("crawlgate_limits_store_configured"), Some("1".into()));

    // Redis stopped: no frozen totals or stale instance count, but since
    // when the fleet is unknown; /status says the store is down and why.
    let mut redis = redis;
    redis.stop();
    crawl(&[&a], 1);
    let fleet = wait_for("a's fleet view to say the store is down", Duration::from_secs(30), || {
        let text = reqwest::blocking::get(a.admin_url("/api/agents?window=1h")).and_then(|r| r.text()).ok()?;
        let v: serde_json::Value = serde_json::from_str(&text).ok()?;
        (v["fleet"]["current"] == false).then(|| v["fleet"].clone())
    });
    let store = status(&a)["limits"]["store"].clone();
    assert_eq!(store["configured"], true);
    assert_eq!(store["up"], false);
    assert_eq!(store["target"], format!("127.0.0.1:{}", redis.port()));
    let since = store["since"].as_u64().unwrap();
    let error = store["last_error"].as_str().unwrap_or_default();
    assert!(error.starts_with(&format!("Redis at 127.0.0.1:{}", redis.port())), "{store}");
    assert_eq!(fleet["agents"], serde_json::json!([]));
    assert_eq!(fleet["instances"], serde_json::Value::Null);
    let note = format!(
        "Fleet totals unavailable since {:02}:{:02} UTC (store down); showing this instance only.",
        since % 86_400 / 3600,
        since % 3600 / 60
    );
    assert_eq!(fleet["note"], note.as_str());
    let page = reqwest::blocking::get(a.admin_url("/")).and_then(|r| r.text()).unwrap();
    let start = page.find("<section id=\"fleet\">").unwrap();
    let section = &page[start..start + page[start..].find("</section>").unwrap()];
    assert_eq!(
        section,
        format!("<section id=\"fleet\"><h2>Fleet</h2><p id=\"fleet-summary\"><span class=\"badge bad\">store down</span> {note}</p>")
    );
    assert_eq!(a.metric("crawlgate_limits_store_up"), Some("0".into()));
}

fn status(proxy: &Proxy) -> serde_json::Value {
    let text = reqwest::blocking::get(proxy.admin_url("/status")).and_then(|r| r.text()).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn without_a_store_the_page_says_it_shows_one_instance() {
    let origin = origin();
    let proxy = Proxy::start(origin.addr, "[[group]]\nuser_agents = [\"ExampleBot\"]\nallow = [\"/\"]\n");
    let text = reqwest::blocking::get(proxy.admin_url("/api/agents")).and_then(|r| r.text()).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["fleet"]["shared"], false);
    assert_eq!(v["fleet"]["instances"], 1);
    let page = reqwest::blocking::get(proxy.admin_url("/")).and_then(|r| r.text()).unwrap();
    assert!(page.contains("This page shows one instance: no shared store ([limits] store) is configured."));
    // No store: no up gauge to alert on, and one that says so.
    assert_eq!(proxy.metric("crawlgate_limits_store_up"), None);
    assert_eq!(proxy.metric("crawlgate_limits_store_configured"), Some("0".into()));
    assert_eq!(status(&proxy)["limits"], serde_json::json!({"store": {"configured": false}}));
}

/// The Host both instances are reached under, the `@authority` the
/// signatures cover.
const SITE: &str = "www.example.com";

/// Signatures by `signer`'s pinned key verified for [`SITE`], the replay
/// cache in `store`.
fn signed_policy(store: &str, signer: &crawlgate_testkit::wba::Signer) -> String {
    format!(
        "[limits]\nstore = \"{store}\"\ntimeout = \"1s\"\n\n\
         [verification]\n\n[verification.signatures]\nauthorities = [\"{SITE}\"]\n\n\
         [[verification.keys]]\ntoken = \"ExampleBot\"\njwk = '{}'\n\n\
         [[group]]\nuser_agents = [\"*\"]\n",
        signer.jwk()
    )
}

/// A signature of `GET /page` at [`SITE`] covering `@authority`, `@method`
/// and `@path`, created now less `ago` seconds.
fn signature(signer: &crawlgate_testkit::wba::Signer, ago: i64) -> Vec<(&'static str, String)> {
    use crawlgate_testkit::wba::{Component, Request, SignOptions};
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let created = i64::try_from(now).unwrap_or(i64::MAX) - ago;
    let mut opts = SignOptions::web_bot_auth(created, 60);
    opts.components = ["@authority", "@method", "@path"].into_iter().map(Component::derived).collect();
    signer.sign(&Request::get(SITE, "/page"), &opts).pairs()
}

/// `GET /page` through `proxy` with Host [`SITE`] and `fields`;
/// `(status, body)`.
fn send_signed(proxy: &Proxy, fields: &[(&str, String)]) -> (u16, String) {
    let client = reqwest::blocking::Client::builder().timeout(Duration::from_secs(10)).build().unwrap();
    let mut req = client.get(proxy.url("/page")).header("User-Agent", "Mozilla/5.0 Firefox/130.0").header("Host", SITE);
    for (name, value) in fields {
        req = req.header(*name, value);
    }
    let resp = req.send().unwrap_or_else(|e| panic!("GET /page: {e}\n{}", proxy.log()));
    (resp.status().as_u16(), resp.text().unwrap_or_default())
}

const PAGE: (u16, &str) = (200, "page\n");
const REPLAYED: &str = "429 Too Many Requests: this Web Bot Auth signature was already used; sign each request anew\n";

fn replay_keys(redis: &RedisServer, keyid: &str) -> usize {
    match redis.command(&["KEYS", &format!("crawlgate:replay:{keyid}:*")]) {
        Resp::Array(Some(keys)) => keys.len(),
        other => panic!("KEYS: {other:?}"),
    }
}

#[test]
fn a_signature_accepted_by_one_instance_is_a_replay_at_the_other() {
    let redis = RedisServer::start();
    let signer = crawlgate_testkit::wba::Signer::from_seed(11);
    let origin = origin();
    let a = Proxy::start(origin.addr, &signed_policy(&redis.url(), &signer));
    let b = Proxy::start(origin.addr, &signed_policy(&redis.url(), &signer));
    wait_gauge(&a, "1");
    wait_gauge(&b, "1");
    let fields = signature(&signer, 5);
    let (status, body) = send_signed(&a, &fields);
    assert_eq!((status, body.as_str()), PAGE, "{}", a.log());
    assert_eq!(send_signed(&b, &fields), (429, REPLAYED.into()), "{}", b.log());
    assert_eq!(send_signed(&a, &fields), (429, REPLAYED.into()));
    assert_eq!(replay_keys(&redis, &signer.keyid()), 1);
    // A fresh signature by the same crawler passes, once.
    let fresh = signature(&signer, 4);
    let (status, body) = send_signed(&b, &fresh);
    assert_eq!((status, body.as_str()), PAGE);
    assert_eq!(send_signed(&a, &fresh), (429, REPLAYED.into()));
    assert_eq!(replay_keys(&redis, &signer.keyid()), 2);
    let blocked = "crawlgate_requests_total{agent=\"other\",decision=\"blocked\",verification=\"spoofed\"}";
    assert_eq!(b.metric(blocked), Some("1".into()), "{}", b.metrics());
    assert_eq!(a.metric(blocked), Some("2".into()), "{}", a.metrics());
    assert_eq!(a.metric("crawlgate_limits_store_errors_total"), Some("0".into()));
}

#[test]
fn with_redis_stopped_each_instance_still_refuses_its_own_replays() {
    let mut redis = RedisServer::start();
    let signer = crawlgate_testkit::wba::Signer::from_seed(12);
    let origin = origin();
    let a = Proxy::start(origin.addr, &signed_policy(&redis.url(), &signer));
    let b = Proxy::start(origin.addr, &signed_policy(&redis.url(), &signer));
    wait_gauge(&a, "1");
    wait_gauge(&b, "1");
    redis.stop();
    let fields = signature(&signer, 5);
    let (status, body) = send_signed(&a, &fields);
    assert_eq!((status, body.as_str()), PAGE, "{}", a.log());
    assert_eq!(send_signed(&a, &fields), (429, REPLAYED.into()), "{}", a.log());
    // Each instance remembers alone now: B has not seen it.
    let (status, body) = send_signed(&b, &fields);
    assert_eq!((status, body.as_str()), PAGE, "{}", b.log());
    assert_eq!(send_signed(&b, &fields), (429, REPLAYED.into()), "{}", b.log());
    for proxy in [&a, &b] {
        let errors: u64 = proxy.metric("crawlgate_limits_store_errors_total").and_then(|v| v.parse().ok()).unwrap_or(0);
        assert!(errors >= 2, "{}", proxy.metrics());
    }
}
