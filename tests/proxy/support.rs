//! Shared fixtures of the proxy tests.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use crawlgate_e2e::origin::{Origin, Route};
use crawlgate_e2e::proxy::Proxy;

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
        .unwrap_or_else(|e| panic!("client: {e}"))
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

/// An HTTP/1.1 response read off a raw connection.
#[derive(Debug)]
pub struct RawResponse {
    /// Status code.
    pub status: u16,
    /// Headers, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body (Content-Length delimited; empty for HEAD/304).
    pub body: Vec<u8>,
}

impl RawResponse {
    /// First value of a header.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// A raw keep-alive connection, to prove responses don't close it.
pub struct Conn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Conn {
    /// Connects.
    pub fn open(addr: SocketAddr) -> Conn {
        let s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect: {e}"));
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap_or_else(|e| panic!("{e}"));
        Conn { reader: BufReader::new(s.try_clone().unwrap_or_else(|e| panic!("{e}"))), writer: s }
    }

    /// Sends one request and reads one response (`head`: no body expected).
    pub fn request(&mut self, method: &str, path: &str, headers: &[(&str, &str)]) -> RawResponse {
        let mut req = format!("{method} {path} HTTP/1.1\r\nHost: test.example\r\n");
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str("\r\n");
        self.writer.write_all(req.as_bytes()).unwrap_or_else(|e| panic!("write: {e}"));
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap_or_else(|e| panic!("read status: {e}"));
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {line:?}"));
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            self.reader.read_line(&mut h).unwrap_or_else(|e| panic!("read header: {e}"));
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
            }
        }
        let len: usize =
            headers.iter().find(|(k, _)| k == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
        let mut body = vec![0; if method == "HEAD" || status == 304 { 0 } else { len }];
        self.reader.read_exact(&mut body).unwrap_or_else(|e| panic!("read body: {e}"));
        RawResponse { status, headers, body }
    }
}
