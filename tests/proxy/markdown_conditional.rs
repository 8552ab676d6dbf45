//! Markdown and conditional requests against a real origin that evaluates
//! them (nginx serving a static page, with its strong ETag): the Markdown
//! has a validator of its own, a Markdown request's If-None-Match with it
//! gets the origin's 304 (mapped back to the page's tag on the way), one
//! with the page's tag does not, every 304 of a converted path says
//! `Vary: Accept`, and a HEAD gets the GET's headers.

use std::net::SocketAddr;
use std::time::Duration;

use crawlgate_e2e::nginx::Nginx;
use crawlgate_e2e::proxy::Proxy;
use crawlgate_testkit::http::{exchange, RawResponse};

const PAGE: &str = "<!doctype html><html><head><title>Cached page</title></head>\n\
<body><main><h1>Cached</h1>\n<p>Same bytes, two representations.</p></main></body></html>\n";

const RULES: &str = "[[group]]\nuser_agents = [\"*\"]\nallow = [\"/\"]\n\n[markdown]\npaths = [\"/page.html\"]\n";

/// nginx serving `PAGE` at `/page.html` from a temporary root
/// (`daemon off; master_process off;`); killed when dropped.
/// nginx serving [`PAGE`] as a static file: it evaluates the
/// preconditions itself, as a real origin does.
fn static_nginx() -> Nginx {
    let nginx = Nginx::start(|addr, dir| {
        let d = dir.display();
        format!(
            "    types {{ text/html html; }}\n    charset utf-8;\n\
             \x20   server {{\n        listen {addr};\n        root {d}/root;\n    }}\n"
        )
    });
    std::fs::create_dir_all(nginx.dir().join("root")).unwrap_or_else(|e| panic!("{e}"));
    nginx.dir().write("root/page.html", PAGE);
    nginx
}

fn send(addr: SocketAddr, method: &str, headers: &[(&str, &str)]) -> RawResponse {
    let mut req = format!("{method} /page.html HTTP/1.1\r\nHost: test.example\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    let raw = exchange(addr, req.as_bytes(), Duration::from_secs(20));
    let no_body = method == "HEAD" || raw.starts_with(b"HTTP/1.1 304");
    RawResponse::parse(&raw, no_body)
        .unwrap_or_else(|| panic!("no response head in {:?}", String::from_utf8_lossy(&raw[..raw.len().min(500)])))
}

const MD: (&str, &str) = ("Accept", "text/markdown");

#[test]
fn markdown_has_its_own_validator_and_conditional_requests_work_for_both() {
    let nginx = static_nginx();
    let proxy = Proxy::start(nginx.addr, RULES);

    // The origin's own tag, strong, on the HTML.
    let html = send(proxy.addr, "GET", &[]);
    assert_eq!(html.status, 200);
    assert_eq!(String::from_utf8_lossy(&html.body), PAGE);
    let page_tag = html.header("etag").map(str::to_owned).unwrap_or_else(|| panic!("no ETag from nginx"));
    assert!(page_tag.starts_with('"') && page_tag.ends_with('"'), "{page_tag}");
    let md_tag = format!("W/{}-md\"", page_tag.trim_end_matches('"'));

    // The Markdown: its own weak tag.
    let md = send(proxy.addr, "GET", &[MD]);
    assert_eq!(md.status, 200);
    assert_eq!(md.header("content-type"), Some("text/markdown; charset=utf-8"));
    assert_eq!(md.header("etag"), Some(md_tag.as_str()));
    assert!(String::from_utf8_lossy(&md.body).contains("# Cached\n"), "{:?}", md.body);

    // Revalidating the Markdown: the origin's 304, with the Markdown's tag
    // and the Vary of the 200.
    let not_modified = send(proxy.addr, "GET", &[MD, ("If-None-Match", &md_tag)]);
    assert_eq!(not_modified.status, 304);
    assert_eq!(not_modified.header("etag"), Some(md_tag.as_str()));
    assert_eq!(not_modified.all("vary"), ["Accept"]);
    // Among other tags too.
    let listed = format!("\"other\", {md_tag}");
    assert_eq!(send(proxy.addr, "GET", &[MD, ("If-None-Match", &listed)]).status, 304);

    // Revalidating the HTML: the origin's 304 as it sent it, plus Vary.
    let not_modified = send(proxy.addr, "GET", &[("If-None-Match", &page_tag)]);
    assert_eq!(not_modified.status, 304);
    assert_eq!(not_modified.header("etag"), Some(page_tag.as_str()));
    assert_eq!(not_modified.all("vary"), ["Accept"]);

    // One representation's tag does not validate the other.
    let crossed = send(proxy.addr, "GET", &[MD, ("If-None-Match", &page_tag)]);
    assert_eq!((crossed.status, crossed.header("content-type")), (200, Some("text/markdown; charset=utf-8")));
    assert_eq!(crossed.header("etag"), Some(md_tag.as_str()));
    let crossed = send(proxy.addr, "GET", &[("If-None-Match", &md_tag)]);
    assert_eq!((crossed.status, crossed.body.as_slice()), (200, PAGE.as_bytes()));
    // A client holding the HTML's validators, both of them (the date
    // alone would answer 304 for the Markdown at the origin).
    let modified = html.header("last-modified").map(str::to_owned).unwrap_or_else(|| panic!("no Last-Modified"));
    let crossed = send(proxy.addr, "GET", &[MD, ("If-None-Match", &page_tag), ("If-Modified-Since", &modified)]);
    assert_eq!((crossed.status, crossed.header("content-type")), (200, Some("text/markdown; charset=utf-8")));
    // A strong tag ending in -md is not the Markdown's.
    let strong = format!("{}-md\"", page_tag.trim_end_matches('"'));
    assert_eq!(send(proxy.addr, "GET", &[MD, ("If-None-Match", &strong)]).status, 200);

    // HEAD: the GET's headers, no body.
    let head = send(proxy.addr, "HEAD", &[MD]);
    assert_eq!(head.status, 200);
    assert_eq!(head.header("content-type"), Some("text/markdown; charset=utf-8"));
    assert_eq!(head.header("etag"), Some(md_tag.as_str()));
    assert_eq!(head.header("content-length"), None);
    assert!(head.body.is_empty());
}

/// After a reload adds `noai` to the page, a 304 no longer validates a
/// client's Markdown copy for an AI agent: it keeps the page's tag, drops
/// `Last-Modified` and says `x-markdown-refused`, so the client fetches
/// again and gets the HTML; so does a User-Agent claiming a search
/// crawler that nothing verified.
#[test]
fn a_304_runs_the_ai_guard_after_a_reload() {
    let nginx = static_nginx();
    let proxy = Proxy::start(nginx.addr, RULES);
    let md = send(proxy.addr, "GET", &[MD]);
    let md_tag = md.header("etag").map(str::to_owned).unwrap_or_else(|| panic!("no ETag"));
    let page_tag = format!("\"{}\"", md_tag.trim_start_matches("W/\"").trim_end_matches("-md\""));
    let modified = md.header("last-modified").map(str::to_owned).unwrap_or_else(|| panic!("no Last-Modified"));
    let before = send(proxy.addr, "GET", &[MD, ("If-None-Match", &md_tag)]);
    assert_eq!((before.status, before.header("etag")), (304, Some(md_tag.as_str())));
    assert_eq!(before.header("last-modified"), Some(modified.as_str()));
    assert_eq!(before.header("x-markdown-refused"), None);

    let policy = std::fs::read_to_string(&proxy.policy_path).unwrap_or_else(|e| panic!("{e}"));
    let noai = policy
        + "\n[[robots_tag]]\npath = \"/page.html\"\nrules = [\"noai\"]\n\n[[group]]\nuser_agents = [\"Googlebot\"]\nallow = [\"/\"]\n";
    std::fs::write(&proxy.policy_path, noai).unwrap_or_else(|e| panic!("{e}"));
    proxy.signal("HUP");
    crawlgate_e2e::proxy::wait_for("the reload", Duration::from_secs(20), || {
        (proxy.metric("crawlgate_policy_generation").as_deref() == Some("2")).then_some(())
    });

    // No policy token: counts as AI.
    let after = send(proxy.addr, "GET", &[MD, ("If-None-Match", &md_tag)]);
    assert_eq!(after.status, 304);
    assert_eq!(after.header("etag"), Some(page_tag.as_str()));
    assert_eq!(after.header("last-modified"), None);
    assert_eq!(after.header("x-markdown-refused"), Some("noai"));
    assert_eq!(after.all("vary"), ["Accept"]);
    // The unconditional request that follows: the HTML, and why.
    let refetch = send(proxy.addr, "GET", &[MD]);
    assert_eq!((refetch.status, refetch.body.as_slice()), (200, PAGE.as_bytes()));
    assert_eq!(refetch.header("etag"), Some(page_tag.as_str()));
    assert_eq!(refetch.header("x-markdown-refused"), Some("noai"));
    // A search crawler is not an AI agent, but without [verification] a
    // User-Agent naming one is not believed: its copy is not revalidated
    // either (markdown_guard.rs has a verified one).
    let google = ("User-Agent", "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)");
    let search = send(proxy.addr, "GET", &[MD, google, ("If-None-Match", &md_tag)]);
    assert_eq!((search.status, search.header("etag")), (304, Some(page_tag.as_str())));
    assert_eq!(search.header("x-markdown-refused"), Some("noai"));
}

/// An origin's own `x-markdown-tokens` and `x-markdown-refused` never
/// reach a client on a converted path's 304 either: they would refresh a
/// cached Markdown copy with the origin's words (RFC 9111 section 4.3.4).
#[test]
fn an_origin_304s_markdown_fields_are_dropped() {
    let nginx = Nginx::start(|addr, dir| {
        let d = dir.display();
        format!(
            "    types {{ text/html html; }}\n    charset utf-8;\n\
             \x20   server {{\n        listen {addr};\n        root {d}/root;\n\
             \x20       add_header X-Markdown-Tokens 1 always;\n\
             \x20       add_header X-Markdown-Refused \"ai-use=n\" always;\n    }}\n"
        )
    });
    std::fs::create_dir_all(nginx.dir().join("root")).unwrap_or_else(|e| panic!("{e}"));
    nginx.dir().write("root/page.html", PAGE);
    let proxy = Proxy::start(nginx.addr, RULES);
    let html = send(proxy.addr, "GET", &[]);
    // The HTML is the origin's: its fields pass.
    assert_eq!(html.header("x-markdown-tokens"), Some("1"));
    let page_tag = html.header("etag").map(str::to_owned).unwrap_or_else(|| panic!("no ETag from nginx"));
    let md_tag = format!("W/{}-md\"", page_tag.trim_end_matches('"'));
    let not_modified = send(proxy.addr, "GET", &[MD, ("If-None-Match", &md_tag)]);
    assert_eq!(not_modified.status, 304);
    assert_eq!(not_modified.header("etag"), Some(md_tag.as_str()));
    assert_eq!((not_modified.header("x-markdown-tokens"), not_modified.header("x-markdown-refused")), (None, None));
}
