//! Shared fixtures of the proxy tests.

use std::time::Duration;

use crawlgate_e2e::origin::{Origin, Route};
use crawlgate_e2e::proxy::Proxy;
use crawlgate_testkit::wba::{Component, Request, SignOptions, Signer};

/// A raw keep-alive connection, to prove responses don't close it.
pub use crawlgate_testkit::http::Conn;

/// The policy most proxy tests run (appended to the test `[server]` and
/// `[upstream]` sections).
pub const POLICY: &str = r#"
[robots_txt]
sitemaps = ["https://example.com/sitemap.xml"]
cache_max_age = "2h"

[[group]]
user_agents = ["*"]
disallow = ["/private/"]
content_usage = ["train-ai=n"]
enforce = "log"

[[group]]
user_agents = ["GPTBot"]
disallow = ["/"]
allow = ["/public/"]
enforce = "block"

[[group]]
user_agents = ["ExampleBot"]
disallow = ["/secret/", "/*.bak$"]
enforce = "block"
block_status = 451

[[robots_tag]]
path = "/drafts/"
rules = ["noindex", "nosnippet"]

[[robots_tag]]
path = "/drafts/"
agents = ["GPTBot"]
rules = ["noai"]

[agents_txt]
rules = [{ path = "/status", action = "allow" }, { path = "/admin", action = "disallow" }]
"#;

/// A GPTBot User-Agent as OpenAI sends it.
pub const GPTBOT_UA: &str =
    "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)";

/// A browser User-Agent.
pub const BROWSER_UA: &str =
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";

/// An origin with a few ordinary pages.
pub fn origin() -> Origin {
    Origin::start(vec![
        ("/", Route::ok("text/plain", "home\n")),
        ("/public/page", Route::ok("text/plain", "public page\n")),
        ("/private/x", Route::ok("text/plain", "private x\n")),
        ("/secretary", Route::ok("text/plain", "secretary\n")),
        ("/drafts/a", Route::ok("text/plain", "draft a\n")),
        (
            "/tagged",
            Route::ok("text/plain", "tagged\n")
                .header("Robots-Tag", "*;noarchive")
                .header("X-Robots-Tag", "unavailable_after: 25 Jun 2010 15:00:00 PST")
                .header("Content-Usage", "train-ai=y"),
        ),
        (
            "/drafts/tagged",
            Route::ok("text/plain", "tagged draft\n")
                .header("Robots-Tag", "*;noarchive, otherbot;nofollow")
                .header("X-Robots-Tag", "googlebot: nosnippet"),
        ),
        ("/robots.txt", Route::ok("text/plain", "User-agent: *\nDisallow: /from-origin\n")),
    ])
}

/// The proxy on [`POLICY`] in front of `origin`.
pub fn proxy(origin: &Origin) -> Proxy {
    Proxy::start(origin.addr, POLICY)
}

/// A blocking client that neither follows redirects nor decompresses.
pub fn client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_gzip()
        .no_brotli()
        .timeout(Duration::from_secs(20))
        .build()
        .expect("client")
}

/// GET with a User-Agent.
pub fn get(url: &str, ua: &str) -> reqwest::blocking::Response {
    client().get(url).header("User-Agent", ua).send().unwrap_or_else(|e| panic!("GET {url}: {e}"))
}

/// All values of a response header, as text.
pub fn header_values(resp: &reqwest::blocking::Response, name: &str) -> Vec<String> {
    resp.headers().get_all(name).iter().map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()).collect()
}

/// One header as text ("" when absent).
pub fn header(resp: &reqwest::blocking::Response, name: &str) -> String {
    resp.headers().get(name).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()).unwrap_or_default()
}

/// The proxy's `/status` on its admin listener.
pub fn admin_status(proxy: &Proxy) -> serde_json::Value {
    let text = reqwest::blocking::get(proxy.admin_url("/status")).unwrap().text().unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Writes `policy` over the proxy's file, sends SIGHUP and waits for the
/// reload to end (a new generation, or a new failure on `/status`).
pub fn reload(proxy: &Proxy, policy: &str) {
    let before = admin_status(proxy);
    std::fs::write(&proxy.policy_path, policy).unwrap();
    proxy.signal("HUP");
    crawlgate_e2e::proxy::wait_for("the reload", Duration::from_secs(20), || {
        let s = admin_status(proxy);
        (s["generation"] != before["generation"] || s["last_error_at"] != before["last_error_at"]).then_some(())
    });
}

/// Now, in whole seconds since the Unix epoch.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64
}

/// The signature fields of a GET of `path` covering `@authority`,
/// `@method`, `@path` and the header fields `covered` (with their values
/// in `headers`), created `age` seconds ago: what Cloudflare's `crawler-*`
/// dialect asks of a paid request.
pub fn sign(
    signer: &Signer,
    proxy: &Proxy,
    path: &str,
    headers: &[(&str, &str)],
    covered: &[&str],
    age: i64,
) -> Vec<(String, String)> {
    let mut opts = SignOptions::web_bot_auth(unix_now() - age, 60);
    opts.components = ["@authority", "@method", "@path"].into_iter().map(Component::derived).collect();
    opts.components.extend(covered.iter().map(|c| Component::Header((*c).to_string())));
    let mut req = Request::get(&proxy.addr.to_string(), path);
    req.headers = headers.iter().map(|(k, v)| ((*k).to_string(), (*v).to_string())).collect();
    let mut out: Vec<(String, String)> = headers.iter().map(|(k, v)| ((*k).to_string(), (*v).to_string())).collect();
    out.extend(signer.sign(&req, &opts).pairs().into_iter().map(|(k, v)| (k.to_string(), v)));
    out
}
