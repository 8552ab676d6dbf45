//! Verified crawler identity end to end: the real binary with an IP list
//! from a local file; clients bind 127.0.0.2 and 127.0.0.3 as their source
//! (all of 127.0.0.0/8 is loopback).

use std::net::IpAddr;
use std::time::Duration;

use crawlgate_e2e::origin::{Origin, Route};
use crawlgate_e2e::proxy::Proxy;
use crawlgate_testkit::temp::TempDir;

const GOOGLEBOT_UA: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";

fn origin() -> Origin {
    Origin::start(vec![
        ("/", Route::ok("text/plain", "home\n")),
        ("/private/x", Route::ok("text/plain", "private x\n")),
        ("/nogoogle/x", Route::ok("text/plain", "no google x\n")),
    ])
}

/// The policy: `*` is blocked from /private/ only for identified crawlers
/// (logged otherwise), Googlebot may go everywhere but /nogoogle/, and is
/// verified against the list in `list`.
fn rules(list: &std::path::Path, on_spoofed: &str) -> String {
    format!(
        "[verification]\n\n[verification.lists]\nGooglebot = [\"{}\"]\n\n\
         [[group]]\nuser_agents = [\"*\"]\ndisallow = [\"/private/\"]\nenforce = \"log\"\n\n\
         [[group]]\nuser_agents = [\"Googlebot\"]\nallow = [\"/private/\"]\ndisallow = [\"/nogoogle/\"]\nenforce = \"block\"\nblock_status = 451\nverify = \"ip\"\n{on_spoofed}",
        list.display()
    )
}

/// A GET from source address `from`; `(status, body)`.
fn get_from(from: &str, url: &str, ua: &str) -> (u16, String) {
    let local: IpAddr = from.parse().unwrap_or_else(|e| panic!("{from}: {e}"));
    let client = reqwest::blocking::Client::builder()
        .local_address(local)
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap_or_else(|e| panic!("client: {e}"));
    let resp = client.get(url).header("User-Agent", ua).send().unwrap_or_else(|e| panic!("GET {url} from {from}: {e}"));
    let status = resp.status().as_u16();
    (status, resp.text().unwrap_or_default())
}

/// The access log lines of requests for `path`.
fn access_lines(proxy: &Proxy, path: &str) -> Vec<String> {
    let needle = format!(" path={path} ");
    proxy.log().lines().filter(|l| l.starts_with("time=") && l.contains(&needle)).map(str::to_owned).collect()
}

/// The access lines for `path`, once there are at least `n` (a request's
/// line is written after its response, so the last ones may lag).
fn wait_lines(proxy: &Proxy, path: &str, n: usize) -> Vec<String> {
    crawlgate_e2e::proxy::wait_for(&format!("{n} access lines for {path}"), Duration::from_secs(10), || {
        let lines = access_lines(proxy, path);
        (lines.len() >= n).then_some(lines)
    })
}

fn setup() -> (TempDir, std::path::PathBuf) {
    let dir = TempDir::new("identity");
    let list = dir.write("google.txt", "# test list\n127.0.0.2/32\n");
    (dir, list)
}

#[test]
fn listed_address_is_verified_and_spoofer_is_anonymous() {
    let (_dir, list) = setup();
    let origin = origin();
    let proxy = Proxy::start(origin.addr, &rules(&list, ""));
    // The real Googlebot (listed address) gets its group: /private/ allowed,
    // /nogoogle/ blocked with 451.
    assert_eq!(get_from("127.0.0.2", &proxy.url("/private/x"), GOOGLEBOT_UA), (200, "private x\n".into()));
    assert_eq!(get_from("127.0.0.2", &proxy.url("/nogoogle/x"), GOOGLEBOT_UA).0, 451);
    // A spoofer gets what an unnamed client gets: `*`'s rules, where
    // /private/ is disallowed (but a client naming no token is never a
    // violation) and /nogoogle/ is open.
    assert_eq!(get_from("127.0.0.3", &proxy.url("/private/x"), GOOGLEBOT_UA), (200, "private x\n".into()));
    assert_eq!(get_from("127.0.0.3", &proxy.url("/nogoogle/x"), GOOGLEBOT_UA), (200, "no google x\n".into()));
    // A browser is not verified.
    assert_eq!(get_from("127.0.0.3", &proxy.url("/"), "Mozilla/5.0 Firefox/130.0").0, 200);

    let nogoogle = wait_lines(&proxy, "/nogoogle/x", 2);
    assert_eq!(nogoogle.len(), 2, "{nogoogle:?}");
    let evidence = format!("evidence=\"list {} prefix 127.0.0.2/32\"", list.display());
    assert!(nogoogle[0].contains("client_ip=127.0.0.2 "), "{}", nogoogle[0]);
    assert!(
        nogoogle[0].contains(&format!(" agent=Googlebot verification=verified(ip) {evidence} group=Googlebot ")),
        "{}",
        nogoogle[0]
    );
    assert!(nogoogle[0].contains(" decision=block reason=robots violation=true "), "{}", nogoogle[0]);
    assert!(nogoogle[1].contains("client_ip=127.0.0.3 "), "{}", nogoogle[1]);
    // Decided as `*`, still named by its claim (issue 33: the log, the
    // metrics and the dashboard name what a spoofer claims).
    assert!(
        nogoogle[1].contains(
            " agent=Googlebot verification=spoofed(ip) evidence=\"in none of the lists\" group=* decision=allow "
        ),
        "{}",
        nogoogle[1]
    );
    let home = wait_lines(&proxy, "/", 1);
    assert!(home.iter().any(|l| l.contains("client_ip=127.0.0.3 ") && !l.contains(" verification=")), "{home:?}");
    // The spoofer's /private/ request is decided as `*`'s, which disallows
    // it: a violation by the claimed Googlebot, observed and forwarded
    // (issue 33: `off` and anonymous act on nothing, they still see); the
    // real Googlebot's block is one too.
    let log = proxy.log();
    let violations: Vec<&str> = log.lines().filter(|l| l.contains(" violation=true ")).collect();
    assert_eq!(violations.len(), 2, "{violations:?}");
    assert!(violations[0].contains(" verification=verified(ip) "), "{}", violations[0]);
    assert!(
        violations[1].contains(" path=/private/x ")
            && violations[1].contains(" agent=Googlebot verification=spoofed(ip) ")
            && violations[1].contains(" group=* decision=allow violation=true rule=/private/ "),
        "{}",
        violations[1]
    );

    let m = |s: &str| proxy.metric(s);
    let one = Some("1".to_string());
    let two = Some("2".to_string());
    assert_eq!(m("crawlgate_verifications_total{agent=\"Googlebot\",method=\"ip\",result=\"verified\"}"), two);
    assert_eq!(m("crawlgate_verifications_total{agent=\"Googlebot\",method=\"ip\",result=\"spoofed\"}"), two);
    assert_eq!(m("crawlgate_requests_total{agent=\"Googlebot\",decision=\"allowed\",verification=\"verified\"}"), one);
    assert_eq!(m("crawlgate_requests_total{agent=\"Googlebot\",decision=\"blocked\",verification=\"verified\"}"), one);
    // Counted under the token they claim, with their outcome.
    assert_eq!(m("crawlgate_requests_total{agent=\"Googlebot\",decision=\"allowed\",verification=\"spoofed\"}"), two);
    assert_eq!(
        m("crawlgate_requests_total{agent=\"other\",decision=\"allowed\",verification=\"spoofed\"}"),
        Some("0".into())
    );
    assert_eq!(
        m("crawlgate_requests_total{agent=\"other\",decision=\"violation_logged\",verification=\"spoofed\"}"),
        Some("0".to_string())
    );
    assert_eq!(m("crawlgate_requests_total{agent=\"other\",decision=\"allowed\",verification=\"none\"}"), one);
    let source = list.display().to_string();
    assert_eq!(m(&format!("crawlgate_verification_list_prefixes{{source=\"{source}\"}}")), one);
    assert_eq!(
        m(&format!("crawlgate_verification_list_refresh_failures_total{{source=\"{source}\"}}")),
        Some("0".into())
    );

    let text = reqwest::blocking::get(proxy.admin_url("/status"))
        .and_then(|r| r.text())
        .unwrap_or_else(|e| panic!("/status: {e}"));
    let status: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("/status: {e}"));
    let lists = &status["verification_lists"];
    assert_eq!(lists[0]["source"], source.as_str());
    assert_eq!(lists[0]["prefixes"], 1);
    assert_eq!(lists[0]["last_error"], serde_json::Value::Null);
    assert!(lists[0]["age_seconds"].is_u64(), "{lists}");
}

#[test]
fn spoofer_is_blocked_with_on_spoofed_block() {
    let (_dir, list) = setup();
    let origin = origin();
    let proxy = Proxy::start(origin.addr, &rules(&list, "on_spoofed = \"block\"\n"));
    assert_eq!(get_from("127.0.0.2", &proxy.url("/"), GOOGLEBOT_UA), (200, "home\n".into()));
    let (status, _) = get_from("127.0.0.3", &proxy.url("/"), GOOGLEBOT_UA);
    assert_eq!(status, 451);
    // robots.txt is never blocked.
    assert_eq!(get_from("127.0.0.3", &proxy.url("/robots.txt"), GOOGLEBOT_UA).0, 200);
    let home = wait_lines(&proxy, "/", 2);
    assert_eq!(home.len(), 2, "{home:?}");
    assert!(home[1].contains(" status=451 ") && home[1].contains(" decision=block "), "{}", home[1]);
    assert!(home[1].contains("client_ip=127.0.0.3 ") && home[1].contains(" verification=spoofed(ip) "), "{}", home[1]);
    assert_eq!(
        proxy.metric("crawlgate_requests_total{agent=\"Googlebot\",decision=\"blocked\",verification=\"spoofed\"}"),
        Some("1".into())
    );
    // A block for a spoofed claim is not a robots.txt violation.
    assert!(!proxy.log().contains(" violation=true "), "{}", proxy.log());
}

/// A proxy in front of `origin` whose policy pins `signer`'s key for
/// ExampleBot (blocked from /private/ with 451) and binds signatures to the
/// proxy's own address.
fn signed_proxy(origin: &Origin, signer: &crawlgate_testkit::wba::Signer) -> Proxy {
    use crawlgate_e2e::proxy::{base_policy, free_port};
    let addr: std::net::SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap_or_else(|e| panic!("{e}"));
    let admin: std::net::SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap_or_else(|e| panic!("{e}"));
    let rules = format!(
        "[verification]\n\n[verification.signatures]\nauthorities = [\"{addr}\"]\n\n\
         [[verification.keys]]\ntoken = \"ExampleBot\"\njwk = '{}'\n\n\
         [[group]]\nuser_agents = [\"*\"]\n\n\
         [[group]]\nuser_agents = [\"ExampleBot\"]\ndisallow = [\"/private/\"]\nenforce = \"block\"\nblock_status = 451\n",
        signer.jwk()
    );
    Proxy::start_with(addr, admin, &(base_policy(addr, admin, origin.addr) + &rules))
}

/// Now in Unix seconds.
fn unix_now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

/// The signature fields of a GET of `path` signed for `authority`
/// (`@authority`, `@method` and `@path` covered, as this site requires),
/// created at `created`.
fn signed_fields(
    signer: &crawlgate_testkit::wba::Signer,
    authority: &str,
    path: &str,
    created: i64,
) -> Vec<(&'static str, String)> {
    use crawlgate_testkit::wba::{Component, Request, SignOptions};
    let mut opts = SignOptions::web_bot_auth(created, 60);
    opts.components = ["@authority", "@method", "@path"].into_iter().map(Component::derived).collect();
    signer.sign(&Request::get(authority, path), &opts).pairs()
}

/// A GET of `path` through `proxy` with `fields` and the Host `host`;
/// `(status, body)`.
fn send_signed(proxy: &Proxy, path: &str, ua: &str, host: Option<&str>, fields: &[(&str, String)]) -> (u16, String) {
    let client =
        reqwest::blocking::Client::builder().timeout(Duration::from_secs(20)).build().unwrap_or_else(|e| panic!("{e}"));
    let mut req = client.get(proxy.url(path)).header("User-Agent", ua);
    if let Some(h) = host {
        req = req.header("Host", h);
    }
    for (name, value) in fields {
        req = req.header(*name, value);
    }
    let resp = req.send().unwrap_or_else(|e| panic!("GET {path}: {e}"));
    let status = resp.status().as_u16();
    (status, resp.text().unwrap_or_default())
}

const BROWSER_UA: &str = "Mozilla/5.0 Firefox/130.0";

/// A Web Bot Auth signature by a key pinned in the policy identifies the
/// agent even when the User-Agent names none; a tampered one is spoofed.
#[test]
fn pinned_key_signature_identifies_the_agent() {
    let signer = crawlgate_testkit::wba::Signer::from_seed(7);
    let origin = origin();
    let proxy = signed_proxy(&origin, &signer);
    let authority = proxy.addr.to_string();
    let now = unix_now();
    // Signed by ExampleBot's key: its group applies, /private/ is blocked.
    assert_eq!(
        send_signed(&proxy, "/private/x", BROWSER_UA, None, &signed_fields(&signer, &authority, "/private/x", now - 5))
            .0,
        451
    );
    // Unsigned: a browser, the `*` group.
    assert_eq!(send_signed(&proxy, "/private/x", BROWSER_UA, None, &[]).0, 200);
    // Claims ExampleBot, but the signature covers another path: spoofed,
    // so the `*` group (on_spoofed defaults to anonymous).
    let other_path = signed_fields(&signer, &authority, "/private/y", now - 5);
    assert_eq!(send_signed(&proxy, "/private/x", "ExampleBot/1.0", None, &other_path).0, 200);
    let lines = wait_lines(&proxy, "/private/x", 3);
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(lines[0].contains(" agent=ExampleBot verification=verified(signature) "), "{}", lines[0]);
    assert!(lines[0].contains(&format!(" evidence=\"keyid {}\" ", signer.keyid())), "{}", lines[0]);
    assert!(!lines[1].contains(" verification="), "{}", lines[1]);
    // Decided as `*`, still named by its claim (issue 33).
    assert!(lines[2].contains(" agent=ExampleBot verification=spoofed(signature) "), "{}", lines[2]);
    assert_eq!(
        proxy.metric("crawlgate_verifications_total{agent=\"ExampleBot\",method=\"signature\",result=\"verified\"}"),
        Some("1".into())
    );
}

/// A signature the crawler made for another site, replayed here with that
/// site's Host, does not verify: the covered `@authority` is not this site.
#[test]
fn signature_made_for_another_site_is_not_verified() {
    let signer = crawlgate_testkit::wba::Signer::from_seed(8);
    let origin = origin();
    let proxy = signed_proxy(&origin, &signer);
    let fields = signed_fields(&signer, "other.example", "/private/x", unix_now() - 5);
    // Not ExampleBot's group (451): the `*` group's answer.
    assert_eq!(
        send_signed(&proxy, "/private/x", BROWSER_UA, Some("other.example"), &fields),
        (200, "private x\n".into())
    );
    let lines = wait_lines(&proxy, "/private/x", 1);
    assert!(!lines[0].contains(" agent="), "{}", lines[0]);
    assert!(
        lines[0].contains(&format!(
            " verification=spoofed(signature) evidence=\"invalid signature: signature sig1: covered @authority \\\"other.example\\\" is not this site ({})\" ",
            proxy.addr
        )),
        "{}",
        lines[0]
    );
}

/// The same signed request twice within its window: the second is a
/// replay and gets 429 with a short reason, counted and logged.
#[test]
fn replayed_signature_gets_429() {
    let signer = crawlgate_testkit::wba::Signer::from_seed(9);
    let origin = origin();
    let proxy = signed_proxy(&origin, &signer);
    let fields = signed_fields(&signer, &proxy.addr.to_string(), "/", unix_now() - 5);
    assert_eq!(send_signed(&proxy, "/", BROWSER_UA, None, &fields), (200, "home\n".into()));
    assert_eq!(
        send_signed(&proxy, "/", BROWSER_UA, None, &fields),
        (429, "429 Too Many Requests: this Web Bot Auth signature was already used; sign each request anew\n".into())
    );
    // A new signature by the same crawler is fine.
    let fresh = signed_fields(&signer, &proxy.addr.to_string(), "/", unix_now() - 4);
    assert_eq!(send_signed(&proxy, "/", BROWSER_UA, None, &fresh), (200, "home\n".into()));
    let lines = wait_lines(&proxy, "/", 3);
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(
        lines[0].contains(" status=200 ") && lines[0].contains(" verification=verified(signature) "),
        "{}",
        lines[0]
    );
    assert!(lines[1].contains(" status=429 "), "{}", lines[1]);
    assert!(
        lines[1].contains(&format!(
            " verification=spoofed(signature) evidence=\"replayed signature by keyid {}\" group=* decision=block reason=replayed local=replayed ",
            signer.keyid()
        )),
        "{}",
        lines[1]
    );
    assert!(
        lines[2].contains(" status=200 ") && lines[2].contains(" verification=verified(signature) "),
        "{}",
        lines[2]
    );
    assert_eq!(
        proxy.metric("crawlgate_requests_total{agent=\"other\",decision=\"blocked\",verification=\"spoofed\"}"),
        Some("1".into())
    );
}

/// A spoofed bingbot on a path its group allows is blocked for the claim,
/// and says so: the 403 body names the failed verification, the access line
/// carries `reason=spoofed` and no `violation` nor the allow rule, and
/// `crawlgate_blocks_total` counts it under `spoofed`. The same crawler,
/// verified, on a path its group disallows is a robots.txt block (issue 22,
/// section 2).
#[test]
fn spoofed_claim_on_an_allowed_path_is_blocked_for_the_claim_not_for_robots_txt() {
    let dir = TempDir::new("identity");
    let list = dir.write("bing.txt", "# test list\n127.0.0.2/32\n");
    let policy = format!(
        "[verification]\n\n[verification.lists]\nbingbot = [\"{}\"]\n\n\
         [[group]]\nuser_agents = [\"*\"]\ndisallow = [\"/private/\"]\n\n\
         [[group]]\nuser_agents = [\"bingbot\"]\nallow = [\"/search\"]\ndisallow = [\"/private/\"]\n\
         enforce = \"block\"\nverify = \"ip\"\non_spoofed = \"block\"\n",
        list.display()
    );
    let origin = origin();
    let proxy = Proxy::start(origin.addr, &policy);
    let bing = "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)";
    assert_eq!(
        get_from("127.0.0.3", &proxy.url("/search?q=budget"), bing),
        (
            403,
            "403 Forbidden\n\nThis request claims to be bingbot, but its address is not one of bingbot's \
             (verification: spoofed by ip).\nSee /robots.txt for what bingbot may fetch.\n"
                .into()
        )
    );
    let search = wait_lines(&proxy, "\"/search?q=budget\"", 1);
    assert!(
        search[0].contains(" agent=bingbot verification=spoofed(ip) ")
            && search[0].contains(" decision=block reason=spoofed duration_ms="),
        "{}",
        search[0]
    );
    assert!(!search[0].contains(" violation=") && !search[0].contains(" rule="), "{}", search[0]);
    // Verified, on a disallowed path: the robots.txt rule blocks.
    let (status, body) = get_from("127.0.0.2", &proxy.url("/private/x"), bing);
    assert_eq!(
        (status, body.as_str()),
        (
            403,
            "403 Forbidden\n\nThis site's robots.txt disallows /private/x for bingbot, and the site enforces it.\n\
             See /robots.txt for what bingbot may fetch.\n"
        )
    );
    let private = wait_lines(&proxy, "/private/x", 1);
    assert!(
        private[0].contains(" verification=verified(ip) ")
            && private[0].contains(" decision=block reason=robots violation=true rule=/private/ line="),
        "{}",
        private[0]
    );
    let m = |name: &str| proxy.metric(name);
    assert_eq!(m("crawlgate_blocks_total{agent=\"bingbot\",reason=\"spoofed\"}"), Some("1".into()));
    assert_eq!(m("crawlgate_blocks_total{agent=\"bingbot\",reason=\"robots\"}"), Some("1".into()));
    assert_eq!(m("crawlgate_violations_total{agent=\"bingbot\",group=\"bingbot\"}"), Some("1".into()));
    // The page's model: blocks by reason, and one violation row (/private/x).
    let api = |path: &str| -> serde_json::Value {
        let text = reqwest::blocking::get(proxy.admin_url(path)).and_then(|r| r.text());
        serde_json::from_str(&text.unwrap_or_else(|e| panic!("{path}: {e}"))).unwrap_or_else(|e| panic!("{path}: {e}"))
    };
    let agents = api("/api/agents");
    let row = agents["agents"].as_array().and_then(|a| a.iter().find(|r| r["agent"] == "bingbot")).cloned();
    let blocked_by = row.map(|r| r["blocked_by"].clone()).unwrap_or_default();
    assert_eq!((&blocked_by["spoofed"], &blocked_by["robots"]), (&1.into(), &1.into()), "{agents}");
    let top = api("/api/violations")["top"].clone();
    let paths: Vec<&str> = top.as_array().into_iter().flatten().filter_map(|r| r["path"].as_str()).collect();
    assert_eq!(paths, ["/private/x"], "{top}");
}

/// Lists that cannot be read at start, with no copy kept from before: one
/// log line says so for all of them, none claims to keep a previous copy.
#[test]
fn lists_without_a_copy_are_reported_once_at_start() {
    let dir = TempDir::new("identity-no-copy");
    let (a, b) = (dir.path().join("missing-a.txt"), dir.path().join("missing-b.txt"));
    let origin = origin();
    let proxy = Proxy::start(
        origin.addr,
        &format!(
            "[verification]\n\n[verification.lists]\nExampleBot = [\"{}\", \"{}\"]\n\n\
             [[group]]\nuser_agents = [\"*\"]\n\n[[group]]\nuser_agents = [\"ExampleBot\"]\nverify = \"ip\"\n",
            a.display(),
            b.display()
        ),
    );
    let needle = "IP lists could not be obtained and there is no copy of them yet";
    let log = crawlgate_e2e::proxy::wait_for("the first refresh", Duration::from_secs(10), || {
        let log = proxy.log();
        log.contains(needle).then_some(log)
    });
    let lines: Vec<&str> = log.lines().filter(|l| l.contains(needle)).collect();
    assert_eq!(lines.len(), 1, "{log}");
    for p in [&a, &b] {
        assert!(lines[0].contains(&format!("{}: cannot read the file", p.display())), "{}", lines[0]);
    }
    assert!(!log.contains("keeping the previous copy"), "{log}");
}
