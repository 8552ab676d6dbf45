//! Usage signals through the running proxy: TDMRep (W3C TDM Reservation
//! Protocol) headers, metas and `/.well-known/tdmrep.json`; the RSL 1.0
//! document, `License:` line and license link; Content-Usage combined with
//! `n` winning and the derived Content-Signal in robots.txt. An origin's own
//! TDM statement is kept, in its headers and in its page.

use crawlgate_e2e::origin::{Origin, Route};
use crawlgate_e2e::proxy::Proxy;

use crate::support::{client, get, header, header_values, BROWSER_UA, GPTBOT_UA};

const RULES: &str = r#"
[robots_txt]
content_signal = "derive"
license = "https://www.example.com/license.xml"

[[group]]
user_agents = ["*"]
content_usage = ["train-ai=y, ai-use=y, search=y", "/ train-ai=n"]

[tdmrep]
[[tdmrep.rules]]
path = "/"
reservation = 1
policy = "https://www.example.com/tdm-policy.json"

[[tdmrep.rules]]
path = "/open/"
reservation = 0

[rsl]
path = "/license.xml"
document = """
<?xml version="1.0" encoding="UTF-8"?>
<rsl xmlns="https://rslstandard.org/rsl"><content url="/"><license><permits type="usage">search</permits></license></content></rsl>
"""
"#;

const PAGE: &str = "<html><head><title>t</title></head><body>x</body></html>";
const TDM_METAS: &str = "<meta name=\"tdm-reservation\" content=\"1\"><meta name=\"tdm-policy\" content=\"https://www.example.com/tdm-policy.json\">";
const LINK: &str = "<link rel=\"license\" type=\"application/rsl+xml\" href=\"https://www.example.com/license.xml\">";

/// `expected` as the proxy sends it for an origin page of `page_len`
/// bytes with a Content-Length: the length promised before the page was
/// read (`<head></head>` and every element `plan` may insert) is kept by
/// padding with spaces after the page, where HTML ignores them.
fn padded(page_len: usize, plan: &[&str], expected: &str) -> String {
    let promised = page_len + "<head></head>".len() + plan.iter().map(|e| e.len()).sum::<usize>();
    format!("{expected}{}", " ".repeat(promised - expected.len()))
}

fn origin() -> Origin {
    Origin::start(vec![
        ("/page", Route::ok("text/html; charset=utf-8", PAGE)),
        ("/open/page", Route::ok("text/html; charset=utf-8", PAGE)),
        ("/data.json", Route::ok("application/json", "{}")),
        (
            "/own",
            Route::ok(
                "text/html; charset=utf-8",
                "<html><head><meta name=\"tdm-reservation\" content=\"0\"><link rel=\"license\" href=\"/own-terms\"></head><body>o</body></html>",
            )
            .header("tdm-reservation", "0"),
        ),
        // Only the page states a reservation: the headers are the policy's,
        // the page keeps its own meta.
        (
            "/own-meta",
            Route::ok(
                "text/html; charset=utf-8",
                "<html><head><meta name=\"TDM-Policy\" content=\"https://o.example/p\"></head><body>o</body></html>",
            ),
        ),
        ("/license.xml", Route::ok("text/plain", "the origin's file\n")),
    ])
}

#[test]
fn tdm_headers_and_metas_are_added_to_proxied_responses() {
    let origin = origin();
    let proxy = Proxy::start(origin.addr, RULES);

    let resp = get(&proxy.url("/page"), BROWSER_UA);
    assert_eq!(resp.status(), 200);
    assert_eq!(header(&resp, "tdm-reservation"), "1");
    assert_eq!(header(&resp, "tdm-policy"), "https://www.example.com/tdm-policy.json");
    // Both statements for `/` apply, `n` wins (draft-ietf-aipref-vocab-08).
    assert_eq!(header(&resp, "content-usage"), "train-ai=n, ai-use=y, search=y");
    assert_eq!(
        resp.text().unwrap_or_default(),
        padded(PAGE.len(), &[TDM_METAS, LINK], &PAGE.replace("<head>", &format!("<head>{TDM_METAS}{LINK}")))
    );

    let resp = get(&proxy.url("/open/page"), GPTBOT_UA);
    assert_eq!(header(&resp, "tdm-reservation"), "0");
    assert_eq!(header_values(&resp, "tdm-policy"), Vec::<String>::new());
    let open_meta = "<meta name=\"tdm-reservation\" content=\"0\">";
    assert_eq!(
        resp.text().unwrap_or_default(),
        padded(PAGE.len(), &[open_meta, LINK], &PAGE.replace("<head>", &format!("<head>{open_meta}{LINK}")))
    );

    // Not HTML: the headers only.
    let resp = get(&proxy.url("/data.json"), BROWSER_UA);
    assert_eq!(header(&resp, "tdm-reservation"), "1");
    assert_eq!(resp.text().unwrap_or_default(), "{}");
}

#[test]
fn an_origins_own_tdm_statement_is_kept() {
    let origin = origin();
    let proxy = Proxy::start(origin.addr, RULES);

    let resp = get(&proxy.url("/own"), BROWSER_UA);
    assert_eq!(resp.status(), 200);
    assert_eq!(header_values(&resp, "tdm-reservation"), ["0"]);
    assert_eq!(header_values(&resp, "tdm-policy"), Vec::<String>::new());
    // Neither the policy's TDM metas nor a second license link.
    let own = "<html><head><meta name=\"tdm-reservation\" content=\"0\"><link rel=\"license\" href=\"/own-terms\"></head><body>o</body></html>";
    assert_eq!(resp.text().unwrap_or_default(), padded(own.len(), &[LINK], own));

    let resp = get(&proxy.url("/own-meta"), BROWSER_UA);
    assert_eq!(header(&resp, "tdm-reservation"), "1");
    let own = "<html><head><meta name=\"TDM-Policy\" content=\"https://o.example/p\"></head><body>o</body></html>";
    assert_eq!(
        resp.text().unwrap_or_default(),
        padded(own.len(), &[TDM_METAS, LINK], &own.replace("<head>", &format!("<head>{LINK}")))
    );
}

#[test]
fn tdmrep_json_rsl_document_and_robots_txt_are_served_locally() {
    let origin = origin();
    let proxy = Proxy::start(origin.addr, RULES);

    let resp = get(&proxy.url("/.well-known/tdmrep.json"), GPTBOT_UA);
    assert_eq!(resp.status(), 200);
    assert_eq!(header(&resp, "content-type"), "application/json");
    assert_eq!(
        resp.text().unwrap_or_default(),
        "[\n  {\"location\": \"/open/*\", \"tdm-reservation\": 0},\n  {\"location\": \"/*\", \"tdm-reservation\": 1, \"tdm-policy\": \"https://www.example.com/tdm-policy.json\"}\n]\n"
    );

    let resp = get(&proxy.url("/license.xml"), GPTBOT_UA);
    assert_eq!(resp.status(), 200);
    assert_eq!(header(&resp, "content-type"), "application/rsl+xml");
    let etag = header(&resp, "etag");
    assert_eq!(
        resp.text().unwrap_or_default(),
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<rsl xmlns=\"https://rslstandard.org/rsl\"><content url=\"/\"><license><permits type=\"usage\">search</permits></license></content></rsl>\n"
    );
    let not_modified = client()
        .get(proxy.url("/license.xml"))
        .header("If-None-Match", &etag)
        .send()
        .unwrap_or_else(|e| panic!("GET /license.xml: {e}"));
    assert_eq!(not_modified.status(), 304);

    let resp = get(&proxy.url("/robots.txt"), GPTBOT_UA);
    assert_eq!(
        resp.text().unwrap_or_default(),
        "# robots.txt generated by crawlgate from crawlgate.toml; edit the policy, not this file.\n\n\
         User-agent: *\nDisallow:\nContent-Usage: train-ai=y, ai-use=y, search=y\nContent-Usage: / train-ai=n\n\
         Content-Signal: search=yes, ai-input=yes, ai-train=no\n\n\
         License: https://www.example.com/license.xml\n"
    );
    // None of them reached the origin.
    let local = ["/.well-known/tdmrep.json", "/license.xml", "/robots.txt"];
    let forwarded: Vec<String> =
        origin.seen().iter().map(|s| s.target.clone()).filter(|t| local.contains(&t.as_str())).collect();
    assert_eq!(forwarded, Vec::<String>::new());
}

#[test]
fn without_tdmrep_the_well_known_file_is_not_found_and_pages_are_untouched() {
    let origin = origin();
    let proxy = Proxy::start(origin.addr, "[[group]]\nuser_agents = [\"*\"]\n");
    let resp = get(&proxy.url("/.well-known/tdmrep.json"), GPTBOT_UA);
    assert_eq!(resp.status(), 404);
    assert_eq!(resp.text().unwrap_or_default(), "404 Not Found: this site publishes no tdmrep.json\n");
    let resp = get(&proxy.url("/page"), BROWSER_UA);
    assert_eq!(header_values(&resp, "tdm-reservation"), Vec::<String>::new());
    assert_eq!(resp.text().unwrap_or_default(), PAGE);
    // Without `[rsl]` the path is the origin's.
    assert_eq!(get(&proxy.url("/license.xml"), BROWSER_UA).text().unwrap_or_default(), "the origin's file\n");
}
