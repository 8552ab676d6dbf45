//! Where features meet: each test is one fault that came from one
//! feature's decision made apart from another's (a reload and the payment
//! clients, an upgrade and a charge, a charge and a shared cache, the
//! origin's groups and identification, enforcement and observation). Each
//! failed before the request's decision became one value.

use std::net::SocketAddr;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use crawlgate_e2e::origin::{open_gate, Body, Origin, Route};
use crawlgate_e2e::proxy::{base_policy, free_port, wait_for, Proxy};
use crawlgate_payment::ledger::Reader;
use crawlgate_testkit::facilitator::{Facilitator, Mode};
use crawlgate_testkit::http::{exchange, RawResponse};
use crawlgate_testkit::temp::TempDir;
use crawlgate_testkit::wba::Signer;

use crate::support::{admin_status as status_json, reload, sign};

const NETWORK: &str = "eip155:84532";

fn addrs() -> (SocketAddr, SocketAddr) {
    let port = || -> SocketAddr { format!("127.0.0.1:{}", free_port()).parse().unwrap() };
    (port(), port())
}

/// A charge group for ExampleBot, paid with x402 in `currency`.
fn x402_rules(f: &Facilitator, ledger: &std::path::Path, currency: &str, dialects: &str) -> String {
    format!(
        "[[group]]\nuser_agents = [\"*\"]\n\n\
         [[group]]\nuser_agents = [\"ExampleBot\"]\nenforce = \"charge\"\nprice = \"{currency} 0.01\"\n\n\
         [payment]\nledger = \"{}\"\ndialects = {dialects}\ninstance_id = \"edge-1\"\n\n\
         [payment.x402]\nfacilitator = \"{}\"\npay_to = \"0x209693Bc6afc0C5328bA36FaF03C514EF312287C\"\nnetwork = \"{NETWORK}\"\nasset = \"0x036CbD53842c5426634e7929541eC2318f3dCF7e\"\ncurrency = \"{currency}\"\ndecimals = 6\ntimeout = \"500ms\"\nallow_http = true\nallow_private_addresses = true\n",
        ledger.display(),
        f.url()
    )
}

/// Status, headers and body of a GET as `ua`.
fn get(proxy: &Proxy, path: &str, ua: &str) -> (u16, reqwest::header::HeaderMap, String) {
    let client = reqwest::blocking::Client::builder().timeout(Duration::from_secs(20)).build().unwrap();
    let resp = client.get(proxy.url(path)).header("User-Agent", ua).send().unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    (status, headers, resp.text().unwrap_or_default())
}

fn rows(ledger: &std::path::Path) -> usize {
    Reader::open(ledger).and_then(|r| r.export(0)).map_or(0, |r| r.len())
}

/// A `PAYMENT-SIGNATURE` for `path` with `nonce`, paying what the 402 to
/// an unpaid request asks.
fn x402_payment(proxy: &Proxy, path: &str, nonce: &str) -> String {
    let (status, h, body) = get(proxy, path, "ExampleBot/1.0");
    assert_eq!(status, 402, "{body}");
    let v = h.get("payment-required").unwrap().to_str().unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&STANDARD.decode(v).unwrap()).unwrap();
    crawlgate_testkit::facilitator::payment_signature(
        &doc["accepts"][0],
        "0x857b06519E91e3A54538791bDbb0E22373e36b66",
        nonce,
    )
}

/// A GET of `path` as ExampleBot over `HTTP/<version>` on a connection of
/// its own, with `fields`; `None` when the connection closed before a
/// whole response head.
fn raw_get(proxy: &Proxy, version: &str, path: &str, fields: &[(&str, &str)]) -> Option<RawResponse> {
    let mut req = format!(
        "GET {path} HTTP/{version}\r\nHost: {}\r\nUser-Agent: ExampleBot/1.0\r\nConnection: close\r\n",
        proxy.addr
    );
    for (k, v) in fields {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    RawResponse::parse(&exchange(proxy.addr, req.as_bytes(), Duration::from_secs(20)), false)
}

/// The amount and currency a `PAYMENT-REQUIRED` asks for.
fn required(h: &reqwest::header::HeaderMap) -> Option<(String, String)> {
    let v = h.get("payment-required")?.to_str().ok()?;
    let doc: serde_json::Value = serde_json::from_slice(&STANDARD.decode(v).ok()?).ok()?;
    let accepts = &doc["accepts"][0];
    Some((accepts["amount"].as_str()?.to_string(), accepts["asset"].as_str()?.to_string()))
}

/// A reload that changes a charge group's dialects or currency builds the
/// payment clients with its snapshot: a request no client could price was
/// forwarded free until a restart (`dialects [x402], unsigned -> 200`).
#[test]
fn a_reload_that_changes_the_dialects_or_currency_never_serves_a_charged_path_free() {
    let facilitator = Facilitator::start(NETWORK);
    let origin = Origin::start(vec![("/articles/1", Route::ok("text/plain", "PAID-CONTENT\n"))]);
    let dir = TempDir::new("reload-dialects");
    let ledger = dir.join("ledger.sqlite");
    let (addr, admin) = addrs();
    // Cloudflare's dialect charges signed requests: ExampleBot's key is
    // pinned.
    let signer = crawlgate_testkit::wba::Signer::from_seed(33);
    let base = base_policy(addr, admin, origin.addr)
        + &format!("[verification]\n\n[[verification.keys]]\ntoken = \"ExampleBot\"\njwk = '{}'\n\n", signer.jwk());
    // Started with Cloudflare's dialect alone: no x402 client is built.
    let cloudflare = x402_rules(&facilitator, &ledger, "USD", "[\"crawler-price\"]");
    let cloudflare = cloudflare[..cloudflare.find("[payment.x402]").unwrap()].to_string();
    let proxy = Proxy::start_with(addr, admin, &(base.clone() + &cloudflare));
    // Unsigned: Cloudflare's dialect refuses it (400).
    let (status, _, body) = get(&proxy, "/articles/1", "ExampleBot/1.0");
    assert_eq!(status, 400, "{body}");

    reload(&proxy, &(base.clone() + &x402_rules(&facilitator, &ledger, "USD", "[\"x402\"]")));
    assert_eq!(status_json(&proxy)["last_error"], serde_json::Value::Null);
    let (status, h, body) = get(&proxy, "/articles/1", "ExampleBot/1.0");
    assert_eq!(
        (status, required(&h)),
        (402, Some(("10000".into(), "0x036CbD53842c5426634e7929541eC2318f3dCF7e".into()))),
        "{body}"
    );

    reload(&proxy, &(base + &x402_rules(&facilitator, &ledger, "EUR", "[\"x402\"]")));
    assert_eq!(status_json(&proxy)["restart_required"], serde_json::json!([]));
    let (status, h, body) = get(&proxy, "/articles/1", "ExampleBot/1.0");
    assert_eq!(status, 402, "{body}");
    assert!(required(&h).is_some(), "{h:?}");
    assert!(!body.contains("PAID-CONTENT"), "{body}");
    assert!(origin.seen().is_empty(), "{:?}", origin.seen());
    assert_eq!(rows(&ledger), 0);
}

/// A websocket upgrade on a charged path is refused before anything is
/// verified, settled or forwarded: after a 101 the tunnel carries bytes no
/// charge meters.
#[test]
fn an_upgrade_on_a_charged_path_is_refused() {
    let facilitator = Facilitator::start(NETWORK);
    let origin = Origin::start(vec![("/articles/1", Route::ok("text/plain", "PAID-CONTENT\n"))]);
    let dir = TempDir::new("charged-upgrade");
    let ledger = dir.join("ledger.sqlite");
    let (addr, admin) = addrs();
    let policy = base_policy(addr, admin, origin.addr) + &x402_rules(&facilitator, &ledger, "USD", "[\"x402\"]");
    let proxy = Proxy::start_with(addr, admin, &policy);
    let request = "GET /articles/1 HTTP/1.1\r\nHost: site.test\r\nUser-Agent: ExampleBot/1.0\r\n\
                   Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
                   Sec-WebSocket-Version: 13\r\nPAYMENT-SIGNATURE: e30=\r\n\r\n";
    let raw = exchange(proxy.addr, request.as_bytes(), Duration::from_secs(5));
    let resp = RawResponse::parse(&raw, false).unwrap_or_else(|| panic!("{}", String::from_utf8_lossy(&raw)));
    let text = String::from_utf8_lossy(&raw).into_owned();
    assert_eq!(resp.status, 400, "{text}");
    assert!(
        text.ends_with("400 Bad Request: a charged path cannot be upgraded to another protocol (the connection would carry content no charge covers)\n"),
        "{text}"
    );
    assert!(origin.seen().is_empty());
    assert_eq!((facilitator.verify_calls(), facilitator.settle_calls()), (0, 0));
    assert_eq!(rows(&ledger), 0);
    // A path of the same site that is not charged still upgrades.
    let free = "GET /robots.txt HTTP/1.1\r\nHost: site.test\r\nUser-Agent: ExampleBot/1.0\r\nConnection: close\r\n\r\n";
    let raw = exchange(proxy.addr, free.as_bytes(), Duration::from_secs(5));
    assert_eq!(RawResponse::parse(&raw, false).map(|r| r.status), Some(200));
}

/// A charged 200 never keeps the origin's `Cache-Control: public`: a
/// shared cache in front (nginx `proxy_cache`) served the paid page free to
/// the next unsigned request, with a `crawler-charged` the ledger did not
/// have.
#[test]
fn a_paid_response_is_private_to_shared_caches() {
    let facilitator = Facilitator::start(NETWORK);
    let origin = Origin::start(vec![(
        "/articles/1",
        Route::ok("text/plain", "PAID-CONTENT\n").header("Cache-Control", "public, max-age=600, s-maxage=900"),
    )]);
    let dir = TempDir::new("paid-private");
    let ledger = dir.join("ledger.sqlite");
    let (addr, admin) = addrs();
    let policy = base_policy(addr, admin, origin.addr) + &x402_rules(&facilitator, &ledger, "USD", "[\"x402\"]");
    let proxy = Proxy::start_with(addr, admin, &policy);
    let (status, h, _) = get(&proxy, "/articles/1", "ExampleBot/1.0");
    assert_eq!(status, 402);
    let accepted = {
        let v = h.get("payment-required").unwrap().to_str().unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&STANDARD.decode(v).unwrap()).unwrap();
        doc["accepts"][0].clone()
    };
    assert_eq!(h.get("cache-control").and_then(|v| v.to_str().ok()), Some("no-store"));
    let payment = crawlgate_testkit::facilitator::payment_signature(
        &accepted,
        "0x857b06519E91e3A54538791bDbb0E22373e36b66",
        "0x01",
    );
    let client = reqwest::blocking::Client::new();
    let resp = client
        .get(proxy.url("/articles/1"))
        .header("User-Agent", "ExampleBot/1.0")
        .header("PAYMENT-SIGNATURE", payment)
        .send()
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(resp.headers().get("cache-control").and_then(|v| v.to_str().ok()), Some("private, max-age=600"));
    assert_eq!(resp.text().unwrap(), "PAID-CONTENT\n");
    // A free path keeps the origin's caching.
    let (_, h, _) = get(&proxy, "/articles/1", "Mozilla/5.0 (X11; Linux x86_64) Firefox/130.0");
    assert_eq!(h.get("cache-control").and_then(|v| v.to_str().ok()), Some("public, max-age=600, s-maxage=900"));
}

/// The group that decides is the one the crawler obeys in the robots.txt
/// served: its own product token's, where the origin's file names it.
#[test]
fn a_merged_origin_group_for_a_longer_token_is_enforced() {
    let origin = Origin::start(vec![
        (
            "/robots.txt",
            Route::ok(
                "text/plain",
                "User-agent: Googlebot-Image\nDisallow: /\n\nUser-agent: Googlebot-News\nAllow: /\n",
            ),
        ),
        ("/public/a.png", Route::ok("image/png", "png\n")),
        ("/nogoogle/x", Route::ok("text/plain", "news\n")),
    ]);
    let (addr, admin) = addrs();
    // Origin groups take the `*` group's enforce mode: block here.
    let rules = "[robots_txt]\norigin = \"merge\"\n\n[[group]]\nuser_agents = [\"*\"]\nenforce = \"block\"\n\n\
                 [[group]]\nuser_agents = [\"Googlebot\"]\ndisallow = [\"/nogoogle/\"]\nenforce = \"block\"\n";
    let policy = base_policy(addr, admin, origin.addr) + rules;
    let proxy = Proxy::start_with(addr, admin, &policy);
    let client = reqwest::blocking::Client::new();
    wait_for("the merged robots.txt", Duration::from_secs(15), || {
        let body = client.get(proxy.url("/robots.txt")).send().and_then(|r| r.text()).ok()?;
        body.contains("User-agent: Googlebot-Image").then_some(())
    });
    let status = |ua: &str, path: &str| get(&proxy, path, ua).0;
    assert_eq!(status("Googlebot-Image/1.0", "/public/a.png"), 403);
    assert_eq!(status("Googlebot-News", "/nogoogle/x"), 200);
    assert_eq!(status("Mozilla/5.0 (compatible; Googlebot/2.1)", "/nogoogle/x"), 403);
    assert_eq!(status("Mozilla/5.0 (compatible; Googlebot/2.1)", "/public/a.png"), 200);
    let line = wait_for("the access line of /public/a.png", Duration::from_secs(10), || {
        proxy.log().lines().find(|l| l.starts_with("time=") && l.contains(" path=/public/a.png ")).map(str::to_owned)
    });
    assert!(line.contains(" group=Googlebot-Image "), "{line}");
}

/// `enforce = "off"` acts on nothing but still sees: a policy group's
/// disallow under `off` (what `import` writes), a catalog crawler under
/// `*`, and a spoofed claim sent to `*` are violations in the log, the
/// metrics and the dashboard, and the claim keeps its name.
#[test]
fn what_is_observed_does_not_depend_on_what_is_enforced() {
    let origin = Origin::start(vec![
        ("/article", Route::ok("text/plain", "article\n")),
        ("/admin/x", Route::ok("text/plain", "admin\n")),
    ]);
    let dir = TempDir::new("observe-enforce");
    let list = dir.write("google.txt", "# test list\n127.0.0.2/32\n");
    let (addr, admin) = addrs();
    let rules = format!(
        "[verification]\nobserve_catalog = \"off\"\n\n[verification.lists]\nGooglebot = [\"{}\"]\n\n\
         [[group]]\nuser_agents = [\"*\"]\ndisallow = [\"/admin/\"]\n\n\
         [[group]]\nuser_agents = [\"GPTBot\"]\ndisallow = [\"/\"]\nenforce = \"off\"\nverify = \"none\"\n\n\
         [[group]]\nuser_agents = [\"Googlebot\"]\ndisallow = [\"/nogoogle/\"]\nverify = \"ip\"\n",
        list.display()
    );
    let policy = base_policy(addr, admin, origin.addr) + &rules;
    let proxy = Proxy::start_with(addr, admin, &policy);
    let gpt = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)";
    let amazon = "Mozilla/5.0 (compatible; Amazonbot/0.1; +https://developer.amazon.com/support/amazonbot)";
    let google = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
    for _ in 0..3 {
        assert_eq!(get(&proxy, "/article", gpt).0, 200);
    }
    assert_eq!(get(&proxy, "/admin/x", amazon).0, 200);
    // 127.0.0.1 is not in Google's ranges: spoofed, and anonymous by default.
    assert_eq!(get(&proxy, "/admin/x", google).0, 200);
    let line = |path: &str, agent: &str| {
        wait_for(&format!("the access line of {agent} {path}"), Duration::from_secs(10), || {
            proxy
                .log()
                .lines()
                .find(|l| l.starts_with("time=") && l.contains(&format!(" path={path} ")) && l.contains(agent))
                .map(str::to_owned)
        })
    };
    let gpt_line = line("/article", "agent=GPTBot");
    assert!(gpt_line.contains(" agent=GPTBot group=GPTBot decision=allow violation=true rule=/ "), "{gpt_line}");
    let amazon_line = line("/admin/x", "agent=Amazonbot");
    assert!(
        amazon_line.contains(" agent=Amazonbot group=* decision=allow violation=true rule=/admin/ "),
        "{amazon_line}"
    );
    let google_line = line("/admin/x", "agent=Googlebot");
    assert!(
        google_line.contains(
            " agent=Googlebot verification=spoofed(ip) evidence=\"in none of the lists\" group=* decision=allow violation=true rule=/admin/ "
        ),
        "{google_line}"
    );
    wait_for("the violation counters", Duration::from_secs(10), || {
        (proxy.metric("crawlgate_violations_total{agent=\"GPTBot\",group=\"GPTBot\"}").as_deref() == Some("3"))
            .then_some(())
    });
    assert_eq!(proxy.metric("crawlgate_violations_total{agent=\"Amazonbot\",group=\"*\"}").as_deref(), Some("1"));
    assert_eq!(proxy.metric("crawlgate_violations_total{agent=\"Googlebot\",group=\"*\"}").as_deref(), Some("1"));
    let text = reqwest::blocking::get(proxy.admin_url("/api/agents")).and_then(|r| r.text()).unwrap();
    let agents: serde_json::Value = serde_json::from_str(&text).unwrap();
    let row = |name: &str| {
        agents["agents"]
            .as_array()
            .and_then(|a| a.iter().find(|r| r["agent"] == name))
            .cloned()
            .unwrap_or_else(|| panic!("no {name} row: {agents}"))
    };
    let counts = |r: &serde_json::Value| (r["requests"].clone(), r["allowed"].clone(), r["violations"].clone());
    // Passed, yet not "allowed": every one broke a rule.
    assert_eq!(counts(&row("GPTBot")), (3.into(), 0.into(), 3.into()));
    assert_eq!(counts(&row("Amazonbot")), (1.into(), 0.into(), 1.into()));
    let claimed = row("Googlebot (claimed)");
    assert_eq!((counts(&claimed), claimed["spoofed"].clone()), ((1.into(), 0.into(), 1.into()), 1.into()), "{claimed}");
}

/// A charge is for what was delivered: a paid response that fails after
/// its charge was committed (a Markdown page whose gzip body cannot be
/// decoded, asked over HTTP/1.0, where the response is not held: 502; an
/// origin that stops mid-body: a 200 cut short) gets a void row with the
/// same request id and the reason, and the summary nets it out. A client
/// that goes away keeps its charge.
#[test]
fn a_charged_response_that_fails_is_voided() {
    let facilitator = Facilitator::start(NETWORK);
    let origin = Origin::start(vec![
        (
            "/articles/gz",
            Route::ok("text/html; charset=utf-8", b"this is not gzip".to_vec()).header("Content-Encoding", "gzip"),
        ),
        (
            "/articles/cut",
            Route {
                status: 200,
                headers: vec![("Content-Type".into(), "text/plain".into())],
                body: crawlgate_e2e::origin::Body::Truncated { declared: 1000, sent: b"PAID-CONTENT".to_vec() },
            },
        ),
        ("/articles/ok", Route::ok("text/plain", "PAID-CONTENT\n")),
    ]);
    let dir = TempDir::new("charged-void");
    let ledger = dir.join("ledger.sqlite");
    let (addr, admin) = addrs();
    let policy = base_policy(addr, admin, origin.addr)
        + "[markdown]\npaths = [\"/articles/\"]\n\n"
        + &x402_rules(&facilitator, &ledger, "USD", "[\"x402\"]");
    let proxy = Proxy::start_with(addr, admin, &policy);
    let paid = |path: &str, nonce: &str, version: &str, accept: &str| {
        let payment = x402_payment(&proxy, path, nonce);
        let resp = raw_get(&proxy, version, path, &[("Accept", accept), ("PAYMENT-SIGNATURE", &payment)]);
        resp.map_or((0, 0), |r| (if r.complete || r.status != 200 { r.status } else { 0 }, r.body.len()))
    };
    assert_eq!(paid("/articles/ok", "0x01", "1.1", "text/plain"), (200, 13));
    // Not held (HTTP/1.0): charged at its header, then failed: a 502, or a
    // cut when its header had left.
    let (gz, _) = paid("/articles/gz", "0x02", "1.0", "text/markdown");
    assert!(gz == 502 || gz == 0, "{gz}");
    let (status, _) = paid("/articles/cut", "0x03", "1.1", "text/plain");
    assert_eq!(status, 0, "a cut 200");
    let rows = wait_for("two void rows", Duration::from_secs(10), || {
        let rows = Reader::open(&ledger).and_then(|r| r.export(0)).ok()?;
        (rows.iter().filter(|r| r.void.is_some()).count() == 2).then_some(rows)
    });
    // Every charge was a 200; each failed one has a void row whose reason
    // names the origin's failure (the exact error varies with timing).
    let charges: Vec<(&str, u16)> =
        rows.iter().filter(|r| r.void.is_none()).map(|r| (r.path.as_str(), r.status)).collect();
    assert_eq!(charges, [("/articles/ok", 200), ("/articles/gz", 200), ("/articles/cut", 200)]);
    let mut voids: Vec<(&str, &str)> =
        rows.iter().filter_map(|r| Some((r.path.as_str(), r.void.as_deref()?))).collect();
    voids.sort();
    assert_eq!(voids.iter().map(|v| v.0).collect::<Vec<_>>(), ["/articles/cut", "/articles/gz"], "{voids:?}");
    assert!(voids.iter().all(|v| v.1.starts_with("origin: ")), "{voids:?}");
    for void in rows.iter().filter(|r| r.void.is_some()) {
        let charge = rows.iter().find(|r| r.void.is_none() && r.path == void.path).unwrap();
        assert_eq!((&void.request_id, &void.instance), (&charge.request_id, &charge.instance));
    }
    let summary = Reader::open(&ledger).and_then(|r| r.summary(0)).unwrap();
    assert_eq!(summary.iter().map(|s| (s.charges, s.amount_minor)).collect::<Vec<_>>(), [(1, 1)]);
}

/// A page's HTML, converted to Markdown with "PAID-CONTENT" in it.
const ARTICLE: &str = "<!doctype html><html><head><title>Article</title></head>\
<body><main><h1>Article</h1><p>PAID-CONTENT, paid for.</p></main></body></html>\n";

/// A converted Markdown response on HTTP/1.1 is held whole for its token
/// estimate, and charged only once its conversion finished: a page whose
/// gzip body cannot be decoded gets its 502 and leaves no ledger row (not
/// even a void one) and no settlement, the payment verified and never
/// settled, whether its body came with its header or after it (then the
/// held header is dropped for the 502); a good page is settled and
/// recorded once, its held header saying so beside its estimate; a
/// settlement that fails at the end sends the 402 in place of the held
/// page.
#[test]
fn a_held_markdown_response_is_charged_only_once_converted() {
    let facilitator = Facilitator::start(NETWORK);
    let gate = std::sync::Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
    let not_gzip =
        || Route::ok("text/html; charset=utf-8", b"this is not gzip".to_vec()).header("Content-Encoding", "gzip");
    let late = Body::Gated { first: Vec::new(), rest: b"this is not gzip".to_vec(), gate: gate.clone(), sized: true };
    let origin = Origin::start(vec![
        ("/articles/gz", not_gzip()),
        ("/articles/late", not_gzip().body(late)),
        ("/articles/ok", Route::ok("text/html; charset=utf-8", ARTICLE)),
    ]);
    let dir = TempDir::new("held-charge");
    let ledger = dir.join("ledger.sqlite");
    let (addr, admin) = addrs();
    let policy = base_policy(addr, admin, origin.addr)
        + "[markdown]\npaths = [\"/articles/\"]\n\n"
        + &x402_rules(&facilitator, &ledger, "USD", "[\"x402\"]");
    let proxy = Proxy::start_with(addr, admin, &policy);
    let markdown = |path: &str, nonce: &str| {
        let payment = x402_payment(&proxy, path, nonce);
        let fields = [("Accept", "text/markdown"), ("PAYMENT-SIGNATURE", payment.as_str())];
        raw_get(&proxy, "1.1", path, &fields).unwrap_or_else(|| panic!("no response to {path}"))
    };

    let failed = markdown("/articles/gz", "0x21");
    assert_eq!(failed.status, 502, "{}", failed.text());
    assert!(failed.complete && failed.header("payment-response").is_none(), "{}", failed.text());
    // The body comes a second after the header, which the connection holds
    // by then (the client sees nothing of it).
    let opener = std::thread::spawn({
        let gate = gate.clone();
        move || {
            std::thread::sleep(Duration::from_secs(1));
            open_gate(&gate);
        }
    });
    let late = markdown("/articles/late", "0x24");
    let _ = opener.join();
    assert_eq!(late.status, 502, "{}", late.text());
    assert!(late.complete && late.text().matches("HTTP/1.1").count() == 1, "{}", late.text());
    assert_eq!((facilitator.verify_calls(), facilitator.settle_calls()), (2, 0));

    let ok = markdown("/articles/ok", "0x22");
    assert_eq!((ok.status, ok.complete), (200, true), "{}", ok.text());
    assert_eq!(ok.header("content-type"), Some("text/markdown; charset=utf-8"));
    assert!(ok.header("payment-response").is_some(), "{}", ok.text());
    let tokens: u64 = ok.header("x-markdown-tokens").and_then(|t| t.parse().ok()).unwrap_or(0);
    assert!(tokens > 0, "{}", ok.text());
    assert!(String::from_utf8_lossy(&ok.body).contains("PAID-CONTENT"), "{}", ok.text());
    assert_eq!((facilitator.verify_calls(), facilitator.settle_calls()), (3, 1));

    facilitator.set_mode(Mode::SettleFailure);
    let refused = markdown("/articles/ok", "0x23");
    assert_eq!(refused.status, 402, "{}", refused.text());
    assert!(refused.header("payment-response").is_some() && refused.header("payment-required").is_some());
    assert!(!refused.text().contains("PAID-CONTENT") && refused.header("x-markdown-tokens").is_none());
    assert_eq!(refused.header("connection"), Some("close"));
    assert_eq!(facilitator.settle_calls(), 2);

    // One row: the page delivered, with the bytes the client got.
    let want = ok.body.len() as u64;
    let rows = wait_for("the row's byte count", Duration::from_secs(10), || {
        let rows = Reader::open(&ledger).and_then(|r| r.export(0)).ok()?;
        (rows.len() == 1 && rows[0].bytes == Some(want)).then_some(rows)
    });
    let row = &rows[0];
    assert_eq!((row.path.as_str(), row.status, row.dialect.as_str(), &row.void), ("/articles/ok", 200, "x402", &None));
    // The access log says what the client got (two 402s answered unpaid
    // requests, one went in place of the held page).
    let lines = |path: &str, status: u16| {
        let want = format!(" path={path} ");
        let status = format!(" status={status} ");
        proxy.log().lines().filter(|l| l.starts_with("time=") && l.contains(&want) && l.contains(&status)).count()
    };
    wait_for("the access lines", Duration::from_secs(10), || {
        (lines("/articles/gz", 502) == 1 && lines("/articles/late", 502) == 1 && lines("/articles/ok", 402) == 3)
            .then_some(())
    });
}

/// Cloudflare's dialect on a held Markdown response: `crawler-charged`
/// reaches the client in the held header with `x-markdown-tokens`, and
/// the ledger has the one charge, recorded once converted. A page past
/// the hold's bound is charged before its first byte leaves (its header
/// says `crawler-charged`, without an estimate) and streams.
#[test]
fn a_held_markdown_response_says_crawler_charged() {
    let paragraph = format!("<p>{}</p>", "word ".repeat(16).trim_end());
    let big = Body::Generated {
        head: b"<html><body><main>".to_vec(),
        filler: paragraph.into_bytes(),
        tail: b"<p>PAID-END</p></main></body></html>".to_vec(),
        total: 1 << 20,
        sized: false,
    };
    let origin = Origin::start(vec![
        ("/articles/ok", Route::ok("text/html; charset=utf-8", ARTICLE)),
        ("/articles/big", Route::ok("text/html; charset=utf-8", "").body(big)),
    ]);
    let facilitator = Facilitator::start(NETWORK);
    let dir = TempDir::new("held-crawler-charged");
    let ledger = dir.join("ledger.sqlite");
    let (addr, admin) = addrs();
    let signer = Signer::from_seed(35);
    let cloudflare = x402_rules(&facilitator, &ledger, "USD", "[\"crawler-price\"]");
    let cloudflare = &cloudflare[..cloudflare.find("[payment.x402]").unwrap()];
    let policy = base_policy(addr, admin, origin.addr)
        + &format!(
            "[verification]\n\n[verification.signatures]\nauthorities = [\"{addr}\"]\n\n\
             [[verification.keys]]\ntoken = \"ExampleBot\"\njwk = '{}'\n\n",
            signer.jwk()
        )
        + "[markdown]\npaths = [\"/articles/\"]\n\n"
        + cloudflare;
    let proxy = Proxy::start_with(addr, admin, &policy);
    let signed =
        sign(&signer, &proxy, "/articles/ok", &[("crawler-exact-price", "USD 0.01")], &["crawler-exact-price"], 5);
    let mut fields: Vec<(&str, &str)> = signed.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    fields.push(("Accept", "text/markdown"));
    let resp = raw_get(&proxy, "1.1", "/articles/ok", &fields).unwrap_or_else(|| panic!("no response"));
    assert_eq!((resp.status, resp.complete), (200, true), "{}", resp.text());
    assert_eq!(resp.header("crawler-charged"), Some("USD 0.01"), "{}", resp.text());
    assert!(resp.header("x-markdown-tokens").and_then(|t| t.parse::<u64>().ok()).is_some_and(|t| t > 0));
    assert!(String::from_utf8_lossy(&resp.body).contains("PAID-CONTENT"), "{}", resp.text());
    let want = resp.body.len() as u64;
    let rows = wait_for("the row's byte count", Duration::from_secs(10), || {
        let rows = Reader::open(&ledger).and_then(|r| r.export(0)).ok()?;
        (rows.len() == 1 && rows[0].bytes == Some(want)).then_some(rows)
    });
    let row = &rows[0];
    assert_eq!(
        (row.path.as_str(), row.status, row.dialect.as_str(), &row.void),
        ("/articles/ok", 200, "crawler-price", &None)
    );

    let signed =
        sign(&signer, &proxy, "/articles/big", &[("crawler-exact-price", "USD 0.01")], &["crawler-exact-price"], 4);
    let mut fields: Vec<(&str, &str)> = signed.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    fields.push(("Accept", "text/markdown"));
    let big = raw_get(&proxy, "1.1", "/articles/big", &fields).unwrap_or_else(|| panic!("no response"));
    assert_eq!((big.status, big.complete), (200, true), "{}", &big.text()[..big.text().len().min(500)]);
    assert_eq!((big.header("crawler-charged"), big.header("x-markdown-tokens")), (Some("USD 0.01"), None));
    assert!(big.body.len() > 256 * 1024 && big.body.ends_with(b"PAID-END\n"), "{} bytes", big.body.len());
    let want = big.body.len() as u64;
    wait_for("the second row's byte count", Duration::from_secs(10), || {
        let rows = Reader::open(&ledger).and_then(|r| r.export(0)).ok()?;
        (rows.len() == 2 && rows[1].path == "/articles/big" && rows[1].bytes == Some(want)).then_some(())
    });
}
