//! A head built to make the HTML rewriter grow: millions of robots metas,
//! each one a finding in audit and enforce mode. The rewriter records the
//! details of a bounded number of findings per response and counts the
//! rest, so the proxy's memory stays flat while `/metrics` still counts
//! every finding.
//!
//! `HTML_LIMITS_HEAD_MB=200` runs the same tests on a bigger head (the
//! default is 64 MB).

use std::io::Read;
use std::time::Duration;

use crawlgate_e2e::origin::{Body, Origin, Route};
use crawlgate_e2e::proxy::Proxy;

const RULES: &str = r#"
[[group]]
user_agents = ["*"]
disallow = ["/nothing-here/"]

[[robots_tag]]
path = "/audit/"
rules = ["noindex"]
html = "audit"

[[robots_tag]]
path = "/enforce/"
rules = ["noindex"]
html = "enforce"
"#;

const HEAD: &str = "<!doctype html>\n<html><head>\n";
/// `index` contradicts the policy's `noindex` (a conflict), `noarchive`
/// restricts more than the policy asks (an extra).
const META: &str = "<meta name=\"robots\" content=\"index, noarchive\">\n";
/// [`META`] once enforce has stripped the conflict.
const ENFORCED_META: &str = "<meta name=\"robots\" content=\"noarchive\">\n";
/// What enforce inserts after `<head>`.
const POLICY_META: &str = "<meta name=\"robots\" content=\"noindex\">";
const TAIL: &str = "</head><body><p>x</p></body></html>\n";

/// Peak RSS the proxy may reach, whatever the size of the head: the
/// property these tests prove. The proxy idles at a few tens of MB.
const PEAK_RSS_KB: u64 = 150 * 1024;

/// How many metas the page carries.
fn metas() -> usize {
    let mb: usize = std::env::var("HTML_LIMITS_HEAD_MB").ok().and_then(|v| v.parse().ok()).unwrap_or(64);
    (mb << 20) / META.len()
}

fn origin(path: &str, metas: usize) -> Origin {
    Origin::start(vec![(
        path,
        Route::ok("text/html; charset=utf-8", "").body(Body::Generated {
            head: HEAD.as_bytes().to_vec(),
            filler: META.as_bytes().to_vec(),
            tail: TAIL.as_bytes().to_vec(),
            total: HEAD.len() + metas * META.len() + TAIL.len(),
            sized: true,
        }),
    )])
}

fn client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .no_gzip()
        .no_brotli()
        .timeout(Duration::from_secs(600))
        .build()
        .expect("client")
}

/// Reads the body of `url` and compares it with `want` as it arrives
/// (neither side is printed whole: they are tens of MB).
fn fetch_and_compare(url: &str, want: &[u8]) {
    let mut resp = client().get(url).send().unwrap_or_else(|e| panic!("GET {url}: {e}"));
    assert_eq!(resp.status().as_u16(), 200, "{url}");
    let mut at = 0usize;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = resp.read(&mut buf).unwrap_or_else(|e| panic!("{url}: read after {at} bytes: {e}"));
        if n == 0 {
            break;
        }
        let end = (at + n).min(want.len());
        if buf[..end - at] != want[at..end] || at + n > want.len() {
            let diff = buf[..n].iter().zip(&want[at..end]).position(|(a, b)| a != b).unwrap_or(end - at);
            let from = diff.saturating_sub(40);
            panic!(
                "{url}: body differs at byte {}\n  want {:?}\n  got  {:?}",
                at + diff,
                String::from_utf8_lossy(&want[at + from..(at + diff + 40).min(want.len())]),
                String::from_utf8_lossy(&buf[from..(diff + 40).min(n)])
            );
        }
        at += n;
    }
    assert_eq!(at, want.len(), "{url}: body ended early");
}

/// `crawlgate_html_findings_total{kind, mode}` from the admin listener.
fn findings_metric(proxy: &Proxy, mode: &str, kind: &str) -> u64 {
    let series = format!("crawlgate_html_findings_total{{kind=\"{kind}\",mode=\"{mode}\"}}");
    proxy.metric(&series).map_or(0, |v| v.parse().unwrap_or_else(|e| panic!("{series} {v}: {e}")))
}

fn assert_peak_bounded(proxy: &Proxy, metas: usize) {
    let peak = proxy.memory_kb("VmHWM").unwrap_or_else(|| panic!("no VmHWM for the proxy"));
    eprintln!("proxy peak RSS {peak} kB after {metas} metas");
    assert!(peak < PEAK_RSS_KB, "proxy peak RSS {peak} kB (bound {PEAK_RSS_KB} kB) after a head of {metas} metas");
}

/// Audit leaves the page unchanged byte for byte and counts every
/// conflict and extra, one of each per meta.
#[test]
fn audit_of_a_huge_head_counts_every_finding_in_bounded_memory() {
    let n = metas();
    let origin = origin("/audit/page.html", n);
    let proxy = Proxy::start(origin.addr, RULES);
    let want = [HEAD, &META.repeat(n), TAIL].concat();
    fetch_and_compare(&proxy.url("/audit/page.html"), want.as_bytes());
    assert_eq!(findings_metric(&proxy, "audit", "conflict"), n as u64);
    assert_eq!(findings_metric(&proxy, "audit", "extra"), n as u64);
    assert_eq!(findings_metric(&proxy, "audit", "missing"), 1);
    assert_peak_bounded(&proxy, n);
    assert!(proxy.log().contains("HTML findings beyond the recorded ones"), "{}", proxy.log());
}

/// Enforce strips `index` from every meta and inserts the policy's meta.
#[test]
fn enforce_of_a_huge_head_rewrites_every_meta_in_bounded_memory() {
    let n = metas();
    let origin = origin("/enforce/page.html", n);
    let proxy = Proxy::start(origin.addr, RULES);
    let want = ["<!doctype html>\n<html><head>", POLICY_META, "\n", &ENFORCED_META.repeat(n), TAIL].concat();
    fetch_and_compare(&proxy.url("/enforce/page.html"), want.as_bytes());
    assert_eq!(findings_metric(&proxy, "enforce", "conflict"), n as u64);
    assert_eq!(findings_metric(&proxy, "enforce", "extra"), n as u64);
    assert_peak_bounded(&proxy, n);
}
