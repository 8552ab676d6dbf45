//! Charging in Cloudflare's `crawler-*` dialect end to end: the real
//! binary, a real origin, requests signed with the test kit's Web Bot Auth
//! signer whose key the policy pins for ExampleBot, and the ledger read
//! back with `crawlgate ledger export`.

use std::time::Duration;

use crawlgate_e2e::origin::{Body, Origin, Route};
use crawlgate_e2e::proxy::{base_policy, free_port, Proxy};
use crawlgate_testkit::temp::TempDir;
use crawlgate_testkit::wba::{Component, Request, SignOptions, Signer};

use crate::support::{admin_status as status, reload, sign, unix_now};

const UA: &str = "ExampleBot/1.0";

fn origin() -> Origin {
    Origin::start(vec![
        ("/", Route::ok("text/plain", "home\n")),
        ("/page", Route::ok("text/plain", "page\n")),
        ("/premium/a", Route::ok("text/plain", "premium\n")),
        ("/sitemap.xml", Route::ok("application/xml", "<urlset/>\n")),
        ("/press/x", Route::ok("text/plain", "press\n")),
        ("/private/x", Route::ok("text/plain", "private\n")),
        ("/charged-by-origin", Route::ok("text/plain", "x\n").header("crawler-charged", "USD 9.99")),
        ("/chunked", Route::ok("text/plain", "").body(Body::Chunked(vec![b"one ".to_vec(), b"two\n".to_vec()]))),
    ])
}

/// A proxy whose ExampleBot group charges USD 0.01 (USD 0.05 under
/// /premium/), pinning `signer`'s key, and the directory of its ledger.
fn proxy(origin: &Origin, signer: &Signer) -> (Proxy, TempDir) {
    let (addr, admin, policy, dir) = policy(origin, signer, "");
    (Proxy::start_with(addr, admin, &policy), dir)
}

/// The policy of [`proxy`] with `payment` appended to its `[payment]`
/// table, its addresses and its ledger's directory.
fn policy(
    origin: &Origin,
    signer: &Signer,
    payment: &str,
) -> (std::net::SocketAddr, std::net::SocketAddr, String, TempDir) {
    let addr: std::net::SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let admin: std::net::SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let rules = format!(
        "[verification]\n\n[verification.signatures]\nauthorities = [\"{addr}\"]\n\n\
         [[verification.keys]]\ntoken = \"ExampleBot\"\njwk = '{}'\n\n\
         [[group]]\nuser_agents = [\"*\"]\n\n\
         [[group]]\nuser_agents = [\"ExampleBot\"]\ndisallow = [\"/private/\"]\nenforce = \"charge\"\nprice = \"USD 0.01\"\n\
         prices = [{{ path = \"/premium/\", price = \"USD 0.05\" }}]\n\n\
         [payment]\nterms = \"https://example.com/terms\"\nfree = [\"/press/\"]\ninstance_id = \"test-1\"\n{payment}",
        signer.jwk()
    );
    let policy = base_policy(addr, admin, origin.addr) + &rules;
    let dir = TempDir::new("ledger");
    let ledger = dir.join("ledger.sqlite");
    let policy = policy.replace("[payment]\n", &format!("[payment]\nledger = \"{}\"\n", ledger.display()));
    (addr, admin, policy, dir)
}

fn ledger_path(proxy: &Proxy) -> String {
    let policy = std::fs::read_to_string(&proxy.policy_path).unwrap();
    let line = policy.lines().find(|l| l.starts_with("ledger = ")).unwrap();
    line.trim_start_matches("ledger = ").trim_matches('"').to_string()
}

/// The answer to a GET: status, the payment fields and the body.
#[derive(Debug, PartialEq, Eq)]
struct Answer {
    status: u16,
    fields: Vec<String>,
    body: String,
}

fn get(proxy: &Proxy, path: &str, ua: &str, fields: &[(String, String)]) -> Answer {
    let client = reqwest::blocking::Client::builder().timeout(Duration::from_secs(20)).build().unwrap();
    let mut req = client.get(proxy.url(path)).header("User-Agent", ua);
    for (k, v) in fields {
        req = req.header(k.as_str(), v.as_str());
    }
    let resp = req.send().unwrap();
    let status = resp.status().as_u16();
    let mut fields = Vec::new();
    for name in ["content-type", "crawler-price", "crawler-charged", "crawler-error", "link", "retry-after"] {
        for v in resp.headers().get_all(name) {
            fields.push(format!("{name}: {}", v.to_str().unwrap()));
        }
    }
    Answer { status, fields, body: resp.text().unwrap() }
}

fn answer(status: u16, fields: &[&str], body: &str) -> Answer {
    Answer { status, fields: fields.iter().map(|s| (*s).to_string()).collect(), body: body.to_string() }
}

/// Waits for a counter the proxy updates after the response (in its
/// logging phase) to read `want`.
fn wait_metric(proxy: &Proxy, series: &str, want: &str) {
    crawlgate_e2e::proxy::wait_for(&format!("{series} = {want}"), Duration::from_secs(10), || {
        (proxy.metric(series).as_deref() == Some(want)).then_some(())
    });
}

const TERMS: &str = "link: <https://example.com/terms>; rel=\"terms-of-service\"";
const TEXT: &str = "content-type: text/plain; charset=utf-8";

/// `crawlgate ledger export` of the proxy's ledger, time and request id
/// masked.
fn export(proxy: &Proxy, format: &str) -> String {
    let out = crawlgate_e2e::crawlgate(&["ledger", "export", "--file", &ledger_path(proxy), "--format", format]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The CSV lines with the time, charge id and request id masked, and the
/// signature evidence (a quoted JSON object) shown as `EVIDENCE`.
fn masked_csv(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| {
            let f: Vec<&str> = l.splitn(4, ',').collect();
            if f[0] == "time" {
                return l.to_string();
            }
            let rest = match (f[3].find(",\"{\"\"signature\"\""), f[3].rfind("}}\",")) {
                (Some(a), Some(b)) => format!("{},EVIDENCE{}", &f[3][..a], &f[3][b + 3..]),
                _ => f[3].to_string(),
            };
            format!("TIME,CID,ID,{rest}")
        })
        .collect()
}

/// 402 -> priced retry -> 200 with crawler-charged -> one ledger row; the
/// origin never sees the price header; metrics count the charge.
#[test]
fn a_priced_signed_retry_is_charged_and_recorded() {
    let signer = Signer::from_seed(21);
    let origin = origin();
    let (proxy, _ledger) = proxy(&origin, &signer);
    let first = sign(&signer, &proxy, "/", &[], &[], 5);
    assert_eq!(
        get(&proxy, "/", UA, &first),
        answer(
            402,
            &[TEXT, "crawler-price: USD 0.01", TERMS],
            "402 Payment Required: this path costs USD 0.01; retry with a crawler-exact-price or crawler-max-price header covered by the request's Web Bot Auth signature\n"
        )
    );
    let paid = sign(&signer, &proxy, "/", &[("crawler-exact-price", "USD 0.01")], &["crawler-exact-price"], 4);
    assert_eq!(
        get(&proxy, "/", UA, &paid),
        answer(200, &["content-type: text/plain", "crawler-charged: USD 0.01", TERMS], "home\n")
    );
    let premium = sign(&signer, &proxy, "/premium/a", &[("crawler-max-price", "USD 1")], &["crawler-max-price"], 3);
    assert_eq!(
        get(&proxy, "/premium/a", UA, &premium),
        answer(200, &["content-type: text/plain", "crawler-charged: USD 0.05", TERMS], "premium\n")
    );
    let seen = origin.seen();
    assert!(
        seen.iter().all(|s| s.header("crawler-exact-price").is_none() && s.header("crawler-max-price").is_none()),
        "{seen:?}"
    );
    assert_eq!(seen.len(), 2, "the 402 never reached the origin: {seen:?}");
    let keyid = signer.keyid();
    assert_eq!(
        masked_csv(&export(&proxy, "csv")),
        [
            "time,charge_id,request_id,instance,host,agent,payer,dialect,path,currency,amount,amount_minor,status,bytes,settlement,evidence,voids,void"
                .to_string(),
            format!("TIME,CID,ID,test-1,127.0.0.1,ExampleBot,{keyid},crawler-price,/,USD,0.01,1,200,5,,EVIDENCE,,"),
            format!("TIME,CID,ID,test-1,127.0.0.1,ExampleBot,{keyid},crawler-price,/premium/a,USD,0.05,5,200,8,,EVIDENCE,,"),
        ]
    );
    // The consent kept for a dispute: the covered components and the
    // fields as the crawler sent them.
    let json: Vec<serde_json::Value> =
        export(&proxy, "json").lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let sig = &json[1]["evidence"]["signature"];
    assert_eq!(
        sig["covered"],
        serde_json::json!(["@authority", "@method", "@path", "crawler-max-price", "signature-agent"])
    );
    assert!(
        sig["input"]
            .as_str()
            .unwrap()
            .starts_with("sig1=(\"@authority\" \"@method\" \"@path\" \"crawler-max-price\" \"signature-agent\";key=\"sig1\");created="),
        "{sig}"
    );
    assert!(sig["value"].as_str().unwrap().starts_with("sig1=:"), "{sig}");
    assert_eq!(json[1]["charge_id"].as_str().unwrap().len(), 32);
    assert_eq!(
        proxy.metric("crawlgate_charges_total{agent=\"ExampleBot\",dialect=\"crawler-price\"}"),
        Some("2".into())
    );
    assert_eq!(
        proxy.metric("crawlgate_charged_amount_minor_units_total{agent=\"ExampleBot\",currency=\"USD\"}"),
        Some("6".into())
    );
    assert_eq!(proxy.metric("crawlgate_ledger_healthy"), Some("1".into()));
    let client = reqwest::blocking::Client::new();
    let api: serde_json::Value =
        serde_json::from_str(&client.get(proxy.admin_url("/api/charges")).send().unwrap().text().unwrap()).unwrap();
    assert_eq!(
        api,
        serde_json::json!({"charging": true, "agents": [{"agent": "ExampleBot", "charges": 2, "amounts": ["USD 0.06"]}]})
    );
    let page = client.get(proxy.admin_url("/")).send().unwrap().text().unwrap();
    assert!(
        page.contains("<tbody><tr><td>ExampleBot</td><td class=\"n\">2</td><td class=\"n\">USD 0.06</td></tr></tbody>"),
        "{page}"
    );
    let summary = crawlgate_e2e::crawlgate(&["ledger", "summary", "--file", &ledger_path(&proxy)]);
    let text = String::from_utf8(summary.stdout).unwrap();
    assert!(
        text.lines().nth(1).unwrap().ends_with("ExampleBot                USD              2            0.06"),
        "{text}"
    );
}

/// Every refusal the dialect has, each with its status and code, none
/// reaching the origin, each counted.
#[test]
fn every_crawler_error_is_answered_as_cloudflare_documents() {
    let signer = Signer::from_seed(22);
    let origin = origin();
    let (proxy, _ledger) = proxy(&origin, &signer);
    let priced = |h: &[(&str, &str)], covered: &[&str], age: i64| sign(&signer, &proxy, "/", h, covered, age);
    let wrong_path =
        sign(&signer, &proxy, "/elsewhere", &[("crawler-exact-price", "USD 0.01")], &["crawler-exact-price"], 5);
    type Fields = Vec<(String, String)>;
    let cases: Vec<(&str, Fields, Answer)> = vec![
        ("unsigned", vec![("crawler-exact-price".into(), "USD 0.01".into())], answer(400, &[TEXT, "crawler-error: StrongAuthRequired", TERMS], "400 Bad Request: sign the request with Web Bot Auth (RFC 9421) by a key this site knows\n")),
        ("invalid signature", wrong_path, answer(400, &[TEXT, "crawler-error: InvalidSignature", TERMS], "400 Bad Request: the request's Web Bot Auth signature does not verify\n")),
        ("both", priced(&[("crawler-exact-price", "USD 0.01"), ("crawler-max-price", "USD 0.01")], &["crawler-exact-price", "crawler-max-price"], 10), answer(400, &[TEXT, "crawler-error: ConflictingPriceHeaders", TERMS], "400 Bad Request: send only one of crawler-exact-price and crawler-max-price\n")),
        ("malformed", priced(&[("crawler-max-price", "0.01 USD")], &["crawler-max-price"], 11), answer(400, &[TEXT, "crawler-error: InvalidCrawlerPriceValue", TERMS], "400 Bad Request: send one crawler-exact-price or crawler-max-price as `<ISO 4217 code> <decimal>`, for example `USD 0.01`\n")),
        ("exact wrong", priced(&[("crawler-exact-price", "USD 0.02")], &["crawler-exact-price"], 12), answer(402, &[TEXT, "crawler-price: USD 0.01", "crawler-error: InvalidCrawlerExactPrice", TERMS], "402 Payment Required: crawler-exact-price must equal crawler-price\n")),
        ("max too low", priced(&[("crawler-max-price", "USD 0.005")], &["crawler-max-price"], 13), answer(402, &[TEXT, "crawler-price: USD 0.01", "crawler-error: InvalidCrawlerMaxPrice", TERMS], "402 Payment Required: crawler-max-price must be at least crawler-price\n")),
        ("not covered", priced(&[("crawler-max-price", "USD 1")], &[], 14), answer(402, &[TEXT, "crawler-price: USD 0.01", "crawler-error: MissingCrawlerPrice", TERMS], "402 Payment Required: send crawler-exact-price or crawler-max-price, covered by the request's signature\n")),
    ];
    for (name, fields, want) in &cases {
        assert_eq!(get(&proxy, "/", UA, fields), *want, "{name}");
    }
    let private = sign(&signer, &proxy, "/private/x", &[("crawler-max-price", "USD 1")], &["crawler-max-price"], 15);
    let got = get(&proxy, "/private/x", UA, &private);
    assert_eq!(
        (got.status, got.fields.clone()),
        (403, vec![TEXT.to_string(), "crawler-error: CrawlerForbidden".into(), TERMS.into()])
    );
    assert!(
        got.body.starts_with("403 Forbidden\n\nThis site's robots.txt disallows /private/x for ExampleBot"),
        "{}",
        got.body
    );
    assert!(origin.seen().is_empty(), "{:?}", origin.seen());
    for code in [
        "strong_auth_required",
        "invalid_signature",
        "conflicting_price_headers",
        "invalid_crawler_price_value",
        "invalid_crawler_exact_price",
        "invalid_crawler_max_price",
        "missing_crawler_price",
        "crawler_forbidden",
    ] {
        assert_eq!(
            proxy.metric(&format!("crawlgate_payment_errors_total{{code=\"{code}\"}}")),
            Some("1".into()),
            "{code}"
        );
    }
    wait_metric(&proxy, "crawlgate_blocks_total{agent=\"ExampleBot\",reason=\"payment\"}", "7");
    assert_eq!(export(&proxy, "csv").lines().count(), 1, "no charge recorded");
}

/// A signed, priced request presented twice: the second is a replay,
/// answered 429 as the Web Bot Auth architecture draft says, counted and
/// not charged again.
#[test]
fn a_replayed_paid_request_gets_429_and_no_second_charge() {
    let signer = Signer::from_seed(23);
    let origin = origin();
    let (proxy, _ledger) = proxy(&origin, &signer);
    let paid = sign(&signer, &proxy, "/", &[("crawler-exact-price", "USD 0.01")], &["crawler-exact-price"], 5);
    assert_eq!(get(&proxy, "/", UA, &paid).status, 200);
    assert_eq!(
        get(&proxy, "/", UA, &paid),
        answer(
            429,
            &[TEXT],
            "429 Too Many Requests: this Web Bot Auth signature was already used; sign each request anew\n"
        )
    );
    wait_metric(&proxy, "crawlgate_blocks_total{agent=\"ExampleBot\",reason=\"replayed\"}", "1");
    assert_eq!(export(&proxy, "csv").lines().count(), 2);
}

/// Free paths (built-in, sitemaps, `free`, robots.txt served locally) and
/// non-2xx responses are never charged; an origin's own crawler-charged
/// never reaches the client unless crawlgate charged.
#[test]
fn free_paths_and_failed_responses_are_not_charged() {
    let signer = Signer::from_seed(24);
    let origin = origin();
    let (proxy, _ledger) = proxy(&origin, &signer);
    for (path, status) in [("/robots.txt", 200), ("/sitemap.xml", 200), ("/press/x", 200), ("/missing", 404)] {
        let paid = sign(&signer, &proxy, path, &[("crawler-max-price", "USD 1")], &["crawler-max-price"], 5);
        let got = get(&proxy, path, UA, &paid);
        assert_eq!(got.status, status, "{path}");
        assert!(got.fields.iter().all(|f| !f.starts_with("crawler-")), "{path}: {:?}", got.fields);
    }
    let paid =
        sign(&signer, &proxy, "/charged-by-origin", &[("crawler-max-price", "USD 1")], &["crawler-max-price"], 6);
    let got = get(&proxy, "/charged-by-origin", UA, &paid);
    assert_eq!(got.fields, ["content-type: text/plain", "crawler-charged: USD 0.01", TERMS]);
    let rows = export(&proxy, "csv");
    assert_eq!(rows.lines().count(), 2, "{rows}");
    assert!(rows.contains(",/charged-by-origin,USD,0.01,1,200,"), "{rows}");
}

/// Behind Cloudflare: `pricing=in-band` from a trusted proxy gets
/// crawlgate's price stated in the response and no charge here;
/// `bypass` is forwarded untouched.
#[test]
fn in_band_pricing_behind_cloudflare() {
    let signer = Signer::from_seed(25);
    let origin = origin();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let admin: std::net::SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let dir = TempDir::new("ledger");
    let policy = base_policy(addr, admin, origin.addr)
        .replace("[server]\n", "[server]\ntrusted_proxies = [\"127.0.0.0/8\"]\n")
        + &format!(
            "[verification]\n\n[[verification.keys]]\ntoken = \"ExampleBot\"\njwk = '{}'\n\n\
             [[group]]\nuser_agents = [\"*\"]\n\n\
             [[group]]\nuser_agents = [\"ExampleBot\"]\nenforce = \"charge\"\nprice = \"USD 0.02\"\n\n\
             [payment]\ncloudflare_origin = true\nledger = \"{}\"\n",
            signer.jwk(),
            dir.join("l.sqlite").display()
        );
    let proxy = Proxy::start_with(addr, admin, &policy);
    let cf = |mode: &str| vec![("cf-pay-per-crawl".to_string(), format!("protocol=cloudflare, pricing={mode}"))];
    assert_eq!(
        get(&proxy, "/", UA, &cf("in-band")),
        answer(200, &["content-type: text/plain", "crawler-price: USD 0.02"], "home\n")
    );
    assert_eq!(get(&proxy, "/", UA, &cf("bypass")), answer(200, &["content-type: text/plain"], "home\n"));
    assert_eq!(get(&proxy, "/", UA, &cf("zone-default")), answer(200, &["content-type: text/plain"], "home\n"));
    // Without the field crawlgate charges itself: unsigned, 400.
    assert_eq!(get(&proxy, "/", UA, &[]).status, 400);
    assert!(origin.seen().iter().all(|s| s.header("cf-pay-per-crawl").is_none()));
    assert_eq!(
        proxy.metric("crawlgate_charges_total{agent=\"ExampleBot\",dialect=\"crawler-price\"}"),
        Some("0".into())
    );
}

/// A locked ledger: the charged request gets 500 InternalError (the page
/// is not served unrecorded), the alert gauge drops, a browser is served;
/// once the lock is gone charging resumes.
#[test]
fn a_locked_ledger_stops_charging_only() {
    let signer = Signer::from_seed(26);
    let origin = origin();
    let (proxy, _ledger) = proxy(&origin, &signer);
    let paid = sign(&signer, &proxy, "/", &[("crawler-exact-price", "USD 0.01")], &["crawler-exact-price"], 5);
    assert_eq!(get(&proxy, "/", UA, &paid).status, 200);
    let lock = rusqlite::Connection::open(ledger_path(&proxy)).unwrap();
    lock.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let paid = sign(&signer, &proxy, "/", &[("crawler-exact-price", "USD 0.01")], &["crawler-exact-price"], 4);
    assert_eq!(
        get(&proxy, "/", UA, &paid),
        answer(
            500,
            &[TEXT, "crawler-error: InternalError"],
            "500 Internal Server Error: the charge could not be recorded; nothing was charged, retry later\n"
        )
    );
    assert_eq!(proxy.metric("crawlgate_ledger_healthy"), Some("0".into()));
    assert_eq!(proxy.metric("crawlgate_payment_errors_total{code=\"internal_error\"}"), Some("1".into()));
    assert_eq!(get(&proxy, "/", "Mozilla/5.0 Firefox/130.0", &[]).status, 200);
    lock.execute_batch("COMMIT").unwrap();
    let paid = sign(&signer, &proxy, "/", &[("crawler-exact-price", "USD 0.01")], &["crawler-exact-price"], 3);
    assert_eq!(get(&proxy, "/", UA, &paid).status, 200);
    assert_eq!(proxy.metric("crawlgate_ledger_healthy"), Some("1".into()));
    assert_eq!(export(&proxy, "csv").lines().count(), 3);
}

/// The ledger file removed under the running proxy: SQLite would go on
/// committing into the deleted file and the crawler would get
/// `crawler-charged` for a row nobody can bill. The charged request gets
/// a 503 with Retry-After instead (no page), health drops to 0 without a
/// charge to notice it, and `/status` says why; other traffic is served.
#[test]
fn a_removed_ledger_file_stops_charging_with_503() {
    let signer = Signer::from_seed(29);
    let origin = origin();
    let (proxy, _ledger) = proxy(&origin, &signer);
    let paid = sign(&signer, &proxy, "/", &[("crawler-exact-price", "USD 0.01")], &["crawler-exact-price"], 5);
    assert_eq!(get(&proxy, "/", UA, &paid).status, 200);
    let path = ledger_path(&proxy);
    std::fs::remove_file(&path).unwrap();
    wait_metric(&proxy, "crawlgate_ledger_healthy", "0");
    let paid = sign(&signer, &proxy, "/", &[("crawler-exact-price", "USD 0.01")], &["crawler-exact-price"], 4);
    assert_eq!(
        get(&proxy, "/", UA, &paid),
        answer(
            503,
            &[TEXT, "crawler-error: InternalError", "retry-after: 30"],
            "503 Service Unavailable: the charge cannot be recorded now, and the page is not served unrecorded; retry later\n"
        )
    );
    assert_eq!(proxy.metric("crawlgate_payment_errors_total{code=\"ledger_unavailable\"}"), Some("1".into()));
    assert_eq!(get(&proxy, "/", "Mozilla/5.0 Firefox/130.0", &[]).status, 200);
    let client = reqwest::blocking::Client::new();
    let status: serde_json::Value =
        serde_json::from_str(&client.get(proxy.admin_url("/status")).send().unwrap().text().unwrap()).unwrap();
    assert_eq!(
        status["ledger"],
        serde_json::json!({
            "backend": "sqlite",
            "target": path,
            "healthy": false,
            "postgres_up": null,
            "spool_rows": 0,
            "error": format!("ledger {path}: the file was removed under the running proxy; charging stops until crawlgate is restarted"),
        })
    );
}

/// A chunked page's row is committed without a byte count (the origin
/// sent no Content-Length); the count sent is written when the response
/// ends, normally with the next charges. A SIGTERM right after still
/// writes it: the ledger is flushed before the process exits.
#[test]
fn a_clean_shutdown_writes_the_last_byte_counts() {
    let signer = Signer::from_seed(22);
    let origin = origin();
    let (mut proxy, _ledger) = proxy(&origin, &signer);
    let paid = sign(&signer, &proxy, "/chunked", &[("crawler-exact-price", "USD 0.01")], &["crawler-exact-price"], 4);
    assert_eq!(
        get(&proxy, "/chunked", UA, &paid),
        answer(200, &["content-type: text/plain", "crawler-charged: USD 0.01", TERMS], "one two\n")
    );
    proxy.signal("TERM");
    crawlgate_e2e::proxy::wait_for("the proxy to exit", Duration::from_secs(12), || {
        (!proxy.is_running()).then_some(())
    });
    let keyid = signer.keyid();
    assert_eq!(
        masked_csv(&export(&proxy, "csv"))[1..],
        [format!(
            "TIME,CID,ID,test-1,127.0.0.1,ExampleBot,{keyid},crawler-price,/chunked,USD,0.01,1,200,8,,EVIDENCE,,"
        )]
    );
}

/// kill -9 in the middle of a charged load: every response that said
/// crawler-charged has its row in the ledger afterwards.
#[test]
fn kill_9_loses_no_announced_charge() {
    let signer = std::sync::Arc::new(Signer::from_seed(27));
    let origin = origin();
    let (mut proxy, _ledger) = proxy(&origin, &signer);
    let proxy_addr = proxy.addr;
    let charged = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut workers = Vec::new();
    for w in 0..4 {
        let (signer, charged, stop) = (signer.clone(), charged.clone(), stop.clone());
        workers.push(std::thread::spawn(move || {
            let client = reqwest::blocking::Client::builder().timeout(Duration::from_secs(5)).build().unwrap();
            let mut i = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                i += 1;
                let path = format!("/page?w={w}&i={i}");
                let mut opts = SignOptions::web_bot_auth(unix_now() - 5, 60);
                opts.components =
                    ["@authority", "@method", "@path", "@query"].into_iter().map(Component::derived).collect();
                opts.components.push(Component::Header("crawler-max-price".into()));
                let mut req = Request::get(&proxy_addr.to_string(), &path);
                req.headers = vec![("crawler-max-price".into(), "USD 1".into())];
                let mut r = client
                    .get(format!("http://{proxy_addr}{path}"))
                    .header("User-Agent", UA)
                    .header("crawler-max-price", "USD 1");
                for (k, v) in signer.sign(&req, &opts).pairs() {
                    r = r.header(k, v);
                }
                match r.send() {
                    Ok(resp) if resp.headers().contains_key("crawler-charged") => charged.lock().unwrap().push(path),
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
        }));
    }
    crawlgate_e2e::proxy::wait_for("charged responses", Duration::from_secs(20), || {
        (charged.lock().unwrap().len() >= 40).then_some(())
    });
    proxy.signal("KILL");
    std::thread::sleep(Duration::from_millis(200));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    assert!(!proxy.is_running());
    let rows = export(&proxy, "csv");
    let charged = charged.lock().unwrap();
    let missing: Vec<&String> = charged.iter().filter(|p| !rows.contains(&format!(",{},USD,0.01,", p))).collect();
    assert!(missing.is_empty(), "{} of {} announced charges have no row: {missing:?}", missing.len(), charged.len());
}

/// A process started without charging opens its ledger when a reload
/// brings the first charge group; a ledger that cannot be opened keeps the
/// running policy, with the reason on /status.
#[test]
fn a_reload_that_adds_the_first_charge_group_opens_the_ledger() {
    let signer = Signer::from_seed(28);
    let origin = origin();
    let (addr, admin, charging, _dir) = policy(&origin, &signer, "");
    let free = charging
        .replace("enforce = \"charge\"\nprice = \"USD 0.01\"\n", "")
        .replace("prices = [{ path = \"/premium/\", price = \"USD 0.05\" }]\n", "");
    let free = free[..free.find("[payment]").unwrap()].to_string();
    let proxy = Proxy::start_with(addr, admin, &free);
    // Each request signed with an earlier age, so a later `created`
    // whatever the clock does: two signatures with the same `created` are
    // the same bytes, a replay.
    let paid = |age| sign(&signer, &proxy, "/", &[("crawler-max-price", "USD 1")], &["crawler-max-price"], age);
    assert_eq!(get(&proxy, "/", UA, &paid(7)), answer(200, &["content-type: text/plain"], "home\n"));

    let unwritable = charging.replace(&ledger_line(&charging), "ledger = \"/nonexistent-dir/ledger.sqlite\"");
    reload(&proxy, &unwritable);
    let error = status(&proxy)["last_error"].as_str().unwrap_or_default().to_string();
    assert_eq!(
        error,
        "payment.ledger: ledger /nonexistent-dir/ledger.sqlite: unable to open database file: /nonexistent-dir/ledger.sqlite; the running policy stays in force"
    );
    assert_eq!(get(&proxy, "/", UA, &paid(6)), answer(200, &["content-type: text/plain"], "home\n"));

    reload(&proxy, &charging);
    let s = status(&proxy);
    assert_eq!(
        (s["last_error"].clone(), s["restart_required"].clone()),
        (serde_json::Value::Null, serde_json::json!([]))
    );
    assert_eq!(
        get(&proxy, "/", UA, &paid(5)),
        answer(200, &["content-type: text/plain", "crawler-charged: USD 0.01", TERMS], "home\n")
    );
    assert_eq!(export(&proxy, "csv").lines().count(), 2);
}

fn ledger_line(policy: &str) -> String {
    policy.lines().find(|l| l.starts_with("ledger = ")).unwrap().to_string()
}

/// With x402 offered beside Cloudflare's dialect, the `crawler-price` 402
/// also carries x402's `PAYMENT-REQUIRED`, so a client of either dialect
/// learns how to pay.
#[test]
fn a_crawler_price_402_also_offers_x402_when_offered() {
    use base64::Engine as _;
    let signer = Signer::from_seed(29);
    let origin = origin();
    let facilitator = crawlgate_testkit::facilitator::Facilitator::start("eip155:84532");
    let x402 = format!(
        "dialects = [\"crawler-price\", \"x402\"]\n\n[payment.x402]\nfacilitator = \"{}\"\n\
         pay_to = \"0x209693Bc6afc0C5328bA36FaF03C514EF312287C\"\nnetwork = \"eip155:84532\"\n\
         asset = \"0x036CbD53842c5426634e7929541eC2318f3dCF7e\"\ndecimals = 6\nallow_http = true\nallow_private_addresses = true\n",
        facilitator.url()
    );
    let (addr, admin, policy, _dir) = policy(&origin, &signer, &x402);
    let proxy = Proxy::start_with(addr, admin, &policy);
    let first = sign(&signer, &proxy, "/", &[], &[], 5);
    let client = reqwest::blocking::Client::builder().timeout(Duration::from_secs(20)).build().unwrap();
    let mut req = client.get(proxy.url("/")).header("User-Agent", UA);
    for (k, v) in &first {
        req = req.header(k.as_str(), v.as_str());
    }
    let resp = req.send().unwrap();
    assert_eq!(resp.status().as_u16(), 402);
    assert_eq!(resp.headers().get("crawler-price").map(|v| v.to_str().unwrap()), Some("USD 0.01"));
    let required = resp.headers().get("payment-required").expect("PAYMENT-REQUIRED in the crawler-price 402");
    let doc: serde_json::Value =
        serde_json::from_slice(&base64::engine::general_purpose::STANDARD.decode(required.as_bytes()).unwrap())
            .unwrap();
    assert_eq!(doc["error"], "PAYMENT-SIGNATURE header is required");
    assert_eq!(doc["resource"]["url"], format!("https://{addr}/"));
    assert_eq!(doc["accepts"][0]["amount"], "10000");
    assert_eq!(doc["accepts"][0]["network"], "eip155:84532");
}

/// The ledger's object in the proxy's `/status`.
fn ledger_status(proxy: &Proxy) -> serde_json::Value {
    let client = reqwest::blocking::Client::new();
    let text = client.get(proxy.admin_url("/status")).send().unwrap().text().unwrap();
    serde_json::from_str::<serde_json::Value>(&text).unwrap()["ledger"].clone()
}

/// Two instances charging into one PostgreSQL (issue 34), which is
/// SIGKILLed and started again in the middle: every `crawler-charged`
/// either instance sent is one row, and the ledger's totals are their
/// sum. The schema is made beforehand by `crawlgate ledger migrate`.
#[test]
fn two_instances_charge_into_one_postgres_through_a_restart() {
    let mut pg = crawlgate_testkit::postgres::PgServer::start();
    let migrated = crawlgate_e2e::crawlgate(&["ledger", "migrate", "--ledger", &pg.url()]);
    assert_eq!(
        String::from_utf8_lossy(&migrated.stdout),
        format!(
            "postgres://crawlgate:***@127.0.0.1:{}/postgres: ledger schema migrated from version 0 to 1\n",
            pg.port()
        )
    );
    let signer = Signer::from_seed(30);
    let origin = origin();
    let mut proxies = Vec::new();
    let mut dirs = Vec::new();
    for instance in ["test-1", "test-2"] {
        let (addr, admin, policy, dir) = policy(&origin, &signer, "");
        let password = dir.write("pg-password", crawlgate_testkit::postgres::PASSWORD);
        let ledger = format!(
            "ledger = \"{}\"\nledger_spool = \"{}\"\nledger_password_file = \"{}\"",
            pg.url_without_password(),
            dir.join("spool.sqlite").display(),
            password.display()
        );
        let policy = policy
            .replace(&format!("ledger = \"{}\"", dir.join("ledger.sqlite").display()), &ledger)
            .replace("instance_id = \"test-1\"", &format!("instance_id = \"{instance}\""));
        proxies.push(Proxy::start_with(addr, admin, &policy));
        dirs.push(dir);
    }
    let mut charged = 0u64;
    let mut sent = 0u64;
    // Ages count down as the clock goes on, so no two signatures of one
    // proxy are alike (a repeated one is a replay: 429).
    let mut round = |from: i64, to: i64| {
        for age in (to..from).rev() {
            for (i, proxy) in proxies.iter().enumerate() {
                let path = if (age + i as i64) % 2 == 0 { "/" } else { "/premium/a" };
                let paid = sign(&signer, proxy, path, &[("crawler-max-price", "USD 1")], &["crawler-max-price"], age);
                let got = get(proxy, path, UA, &paid);
                assert_eq!(got.status, 200, "{got:?}");
                sent += 1;
                let price = got.fields.iter().find_map(|f| f.strip_prefix("crawler-charged: USD ")).unwrap();
                charged += if price == "0.01" { 1 } else { 5 };
            }
        }
    };
    round(46, 36);
    pg.kill();
    round(36, 26);
    for proxy in &proxies {
        assert_eq!(ledger_status(proxy)["postgres_up"], serde_json::json!(false));
        assert_eq!(proxy.metric("crawlgate_ledger_postgres_up"), Some("0".into()));
    }
    pg.start_again();
    round(26, 16);
    for proxy in &proxies {
        crawlgate_e2e::proxy::wait_for("the spool to drain", Duration::from_secs(60), || {
            let s = ledger_status(proxy);
            (s["spool_rows"] == 0 && s["postgres_up"] == true).then_some(())
        });
    }
    assert_eq!(sent, 60);
    assert_eq!(
        pg.query("SELECT count(*), count(DISTINCT charge_id), sum(amount_minor) FROM crawlgate_charges"),
        format!("{sent}|{sent}|{charged}")
    );
    assert_eq!(
        pg.query("SELECT instance, count(*) FROM crawlgate_charges GROUP BY instance ORDER BY instance"),
        "test-1|30\ntest-2|30"
    );
    let summary = crawlgate_e2e::crawlgate(&["ledger", "summary", "--file", &pg.url(), "--group-by", "host"]);
    assert_eq!(
        String::from_utf8_lossy(&summary.stdout),
        format!(
            "host                      currency   charges          amount\n\
             127.0.0.1                 USD             60  {:>14}\n",
            crawlgate_payment::ledger::decimal(charged, 2)
        )
    );
    let status = ledger_status(&proxies[0]);
    assert_eq!(status["target"], serde_json::json!(pg.url_without_password()));
    assert_eq!(status["backend"], "postgres");
}
