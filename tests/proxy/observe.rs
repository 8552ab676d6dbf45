//! Observation against a real origin: a catalog crawler the policy does not
//! name is identified in the access line and the metrics' `agent` label,
//! while the `*` group decides (issue 22, section 1).

use std::time::Duration;

use crawlgate_e2e::origin::{Origin, Route};
use crawlgate_e2e::proxy::{base_policy, free_port, wait_for, Proxy};

const PERPLEXITY_UA: &str =
    "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; PerplexityBot/1.0; +https://perplexity.ai/perplexitybot)";

#[test]
fn unnamed_catalog_crawler_is_named_in_the_access_line_and_metrics() {
    let origin = Origin::start(vec![("/news", Route::ok("text/plain", "news\n"))]);
    let policy = "[[group]]\nuser_agents = [\"*\"]\ndisallow = [\"/private/\"]\n\n\
                  [[group]]\nuser_agents = [\"GPTBot\"]\ndisallow = [\"/\"]\n";
    let proxy = Proxy::start(origin.addr, policy);
    let resp = reqwest::blocking::Client::new()
        .get(proxy.url("/news"))
        .header("User-Agent", PERPLEXITY_UA)
        .send()
        .unwrap_or_else(|e| panic!("GET /news: {e}"));
    assert_eq!(resp.status().as_u16(), 200);
    let line = wait_for("the access line of /news", Duration::from_secs(10), || {
        proxy.log().lines().find(|l| l.starts_with("time=") && l.contains(" path=/news ")).map(str::to_owned)
    });
    assert!(line.contains(" agent=PerplexityBot group=* decision=allow "), "{line}");
    assert_eq!(
        proxy.metric("crawlgate_requests_total{agent=\"PerplexityBot\",decision=\"allowed\"}"),
        Some("1".into()),
        "{}",
        proxy.metrics()
    );
    assert_eq!(proxy.metric("crawlgate_requests_total{agent=\"other\",decision=\"allowed\"}"), Some("0".into()));
    // The page's model: its own row, under its operator.
    let text = reqwest::blocking::get(proxy.admin_url("/api/agents")).and_then(|r| r.text());
    let agents: serde_json::Value =
        serde_json::from_str(&text.unwrap_or_else(|e| panic!("/api/agents: {e}"))).unwrap_or_else(|e| panic!("{e}"));
    let row = agents["agents"].as_array().and_then(|a| a.iter().find(|r| r["agent"] == "PerplexityBot")).cloned();
    let row = row.unwrap_or_else(|| panic!("no PerplexityBot row: {agents}"));
    assert_eq!((&row["requests"], &row["operator"]), (&1.into(), &"Perplexity".into()), "{row}");
}

/// An origin group's disallow under `enforce = "off"` (the `*` group's
/// default, which origin groups take) is forwarded and recorded as an
/// observed violation whose rule is a line of the origin's robots.txt.
#[test]
fn origin_disallow_not_enforced_is_an_observed_violation() {
    let origin = Origin::start(vec![
        ("/robots.txt", Route::ok("text/plain", "User-agent: ExampleBot\nDisallow: /v1-only/\n")),
        ("/v1-only/page", Route::ok("text/plain", "page\n")),
    ]);
    let policy = "[robots_txt]\norigin = \"merge\"\n\n[[group]]\nuser_agents = [\"*\"]\ndisallow = [\"/private/\"]\n";
    let proxy = Proxy::start(origin.addr, policy);
    let client = reqwest::blocking::Client::new();
    wait_for("the merged robots.txt", Duration::from_secs(15), || {
        let body = client.get(proxy.url("/robots.txt")).send().and_then(|r| r.text()).ok()?;
        body.contains("User-agent: ExampleBot").then_some(())
    });
    let resp = client
        .get(proxy.url("/v1-only/page"))
        .header("User-Agent", "Mozilla/5.0 (compatible; ExampleBot/1.0)")
        .send()
        .unwrap_or_else(|e| panic!("GET /v1-only/page: {e}"));
    assert_eq!(resp.status().as_u16(), 200);
    let line = wait_for("the access line of /v1-only/page", Duration::from_secs(10), || {
        proxy.log().lines().find(|l| l.starts_with("time=") && l.contains(" path=/v1-only/page ")).map(str::to_owned)
    });
    assert!(
        line.contains(" agent=ExampleBot group=ExampleBot decision=allow violation=true rule=/v1-only/ line=2 rule_source=origin "),
        "{line}"
    );
}

/// A GET of `url` as PerplexityBot from source address `from`; the status.
fn get_as_perplexity_from(from: &str, url: &str) -> u16 {
    let local: std::net::IpAddr = from.parse().unwrap_or_else(|e| panic!("{from}: {e}"));
    let client = reqwest::blocking::Client::builder()
        .local_address(local)
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap_or_else(|e| panic!("client: {e}"));
    let resp = client
        .get(url)
        .header("User-Agent", PERPLEXITY_UA)
        .send()
        .unwrap_or_else(|e| panic!("GET {url} from {from}: {e}"));
    resp.status().as_u16()
}

/// The policy of the observed-verification tests: PerplexityBot (a catalog
/// crawler the policy does not name) has a list holding 127.0.0.2; the `*`
/// group disallows /private/ under `enforce = "log"`.
fn observed_policy(list: &std::path::Path, extra: &str) -> String {
    format!(
        "[verification]\n{extra}\n[verification.lists]\nPerplexityBot = [\"{}\"]\n\n\
         [[group]]\nuser_agents = [\"*\"]\ndisallow = [\"/private/\"]\nenforce = \"log\"\n",
        list.display()
    )
}

/// The access line of the request for `path`.
fn access_line(proxy: &Proxy, path: &str) -> String {
    let needle = format!(" path={path} ");
    wait_for(&format!("the access line of {path}"), Duration::from_secs(10), || {
        proxy.log().lines().find(|l| l.starts_with("time=") && l.contains(&needle)).map(str::to_owned)
    })
}

/// `observe_catalog = "verify"` (the default): an unnamed catalog crawler
/// is verified with its list for the access line, the verification counter
/// and the activity model, and the `*` group decides whatever the outcome.
#[test]
fn unnamed_catalog_crawler_is_verified_but_never_decided_on() {
    let dir = crawlgate_testkit::temp::TempDir::new("observe-verify");
    let list = dir.write("perplexity.txt", "# test list\n127.0.0.2/32\n");
    let origin = Origin::start(vec![
        ("/news", Route::ok("text/plain", "news\n")),
        ("/spoofed", Route::ok("text/plain", "spoofed\n")),
        ("/private/x", Route::ok("text/plain", "private x\n")),
    ]);
    let proxy = Proxy::start(origin.addr, &observed_policy(&list, ""));
    assert_eq!(get_as_perplexity_from("127.0.0.2", &proxy.url("/news")), 200);
    assert_eq!(get_as_perplexity_from("127.0.0.3", &proxy.url("/spoofed")), 200);
    assert_eq!(get_as_perplexity_from("127.0.0.3", &proxy.url("/private/x")), 200);
    let news = access_line(&proxy, "/news");
    let evidence = format!("evidence=\"list {} prefix 127.0.0.2/32\"", list.display());
    assert!(
        news.contains(&format!(" agent=PerplexityBot verification=verified(ip) {evidence} group=* decision=allow ")),
        "{news}"
    );
    let spoofed = access_line(&proxy, "/spoofed");
    let spoofed_fields =
        " agent=PerplexityBot verification=spoofed(ip) evidence=\"in none of the lists\" group=* decision=allow ";
    assert!(spoofed.contains(spoofed_fields), "{spoofed}");
    let private = access_line(&proxy, "/private/x");
    // Observed, never decided on: a violation of `*`'s rule, forwarded.
    assert!(private.contains(&format!("{spoofed_fields}violation=true rule=/private/ ")), "{private}");
    let metric = |result: &str| {
        proxy.metric(&format!(
            "crawlgate_verifications_total{{agent=\"PerplexityBot\",method=\"ip\",result=\"{result}\"}}"
        ))
    };
    assert_eq!((metric("verified"), metric("spoofed")), (Some("1".into()), Some("2".into())), "{}", proxy.metrics());
    let text = reqwest::blocking::get(proxy.admin_url("/api/agents")).and_then(|r| r.text());
    let agents: serde_json::Value =
        serde_json::from_str(&text.unwrap_or_else(|e| panic!("/api/agents: {e}"))).unwrap_or_else(|e| panic!("{e}"));
    let row = agents["agents"].as_array().and_then(|a| a.iter().find(|r| r["agent"] == "PerplexityBot")).cloned();
    let row = row.unwrap_or_else(|| panic!("no PerplexityBot row: {agents}"));
    let v = &row["verification"];
    // Three forwarded, one of them a violation (not counted allowed).
    assert_eq!(
        (&v["verified"], &v["spoofed"], &row["allowed"], &row["violations"], &row["blocked"]),
        (&1.into(), &2.into(), &2.into(), &1.into(), &0.into()),
        "{row}"
    );
}

/// `observe_catalog = "off"`: an unnamed catalog crawler is not verified
/// (no `verification` field), as before the key existed.
#[test]
fn observe_catalog_off_verifies_no_unnamed_catalog_crawler() {
    let dir = crawlgate_testkit::temp::TempDir::new("observe-off");
    let list = dir.write("perplexity.txt", "# test list\n127.0.0.2/32\n");
    let origin = Origin::start(vec![("/news", Route::ok("text/plain", "news\n"))]);
    let proxy = Proxy::start(origin.addr, &observed_policy(&list, "observe_catalog = \"off\"\n"));
    assert_eq!(get_as_perplexity_from("127.0.0.3", &proxy.url("/news")), 200);
    let news = access_line(&proxy, "/news");
    assert!(news.contains(" agent=PerplexityBot group=* decision=allow "), "{news}");
    assert!(!news.contains("verification="), "{news}");
}

/// An unnamed catalog crawler verified by reverse DNS only (YandexBot),
/// from 192.0.2.5 behind a trusted proxy (the resolver answers loopback
/// PTRs itself): the lookup runs beside the response, which does not wait
/// for it (the DNS server answers each query 1 s late), and its outcome
/// still reaches the request's access line and the verification counter.
#[test]
fn an_observed_crawlers_lookup_does_not_hold_its_response() {
    let ip = |s: &str| -> std::net::IpAddr { s.parse().unwrap_or_else(|e| panic!("{s}: {e}")) };
    let dns = crawlgate_testkit::dns::DnsServer::start();
    dns.add_ptr(ip("192.0.2.5"), "spider-192-0-2-5.yandex.com", 300);
    dns.add_addr("spider-192-0-2-5.yandex.com", ip("192.0.2.5"), 300);
    dns.set_delay(Duration::from_secs(1));
    let origin = Origin::start(vec![("/news", Route::ok("text/plain", "news\n"))]);
    let (listen, admin) = (free_addr(), free_addr());
    let policy = base_policy(listen, admin, origin.addr).replacen(
        "[server]\n",
        "[server]\ntrusted_proxies = [\"127.0.0.1/32\"]\n",
        1,
    ) + &format!(
        "\n[verification]\n[verification.dns]\nnameservers = [\"{}\"]\ntimeout = \"30s\"\n\n\
             [[group]]\nuser_agents = [\"*\"]\ndisallow = [\"/private/\"]\n",
        dns.addr()
    );
    let proxy = Proxy::start_with(listen, admin, &policy);
    let resp = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .and_then(|c| {
            c.get(proxy.url("/news"))
                .header("User-Agent", "Mozilla/5.0 (compatible; YandexBot/3.0; +http://yandex.com/bots)")
                .header("X-Forwarded-For", "192.0.2.5")
                .send()
        })
        .unwrap_or_else(|e| panic!("GET /news: {e}"));
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(resp.text().ok().as_deref(), Some("news\n"));
    // The response is in, the lookup is not: no line for it yet.
    assert!(!proxy.log().contains(" path=/news "), "logged before the lookup answered:\n{}", proxy.log());
    let line = access_line(&proxy, "/news");
    assert!(
        line.contains(
            " agent=YandexBot verification=verified(rdns) evidence=\"ptr spider-192-0-2-5.yandex.com (forward-confirmed)\" group=* decision=allow "
        ),
        "{line}"
    );
    let verified = "crawlgate_verifications_total{agent=\"YandexBot\",method=\"rdns\",result=\"verified\"}";
    assert_eq!(proxy.metric(verified).as_deref(), Some("1"), "{}", proxy.metrics());
}

/// A free 127.0.0.1 address.
fn free_addr() -> std::net::SocketAddr {
    std::net::SocketAddr::from(([127, 0, 0, 1], free_port()))
}
