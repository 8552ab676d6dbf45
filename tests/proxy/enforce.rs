//! Identification and enforcement: block, log, pass, and the canonical
//! path that cannot be used to slip past a block.

use crate::support::{get, header, origin, proxy, Conn, BROWSER_UA, GPTBOT_UA};

#[test]
fn blocked_crawler_gets_the_block_status_without_touching_the_origin() {
    let origin = origin();
    let proxy = proxy(&origin);
    let resp = get(&proxy.url("/"), GPTBOT_UA);
    assert_eq!(resp.status(), 403);
    assert_eq!(header(&resp, "content-type"), "text/plain; charset=utf-8");
    assert_eq!(header(&resp, "cache-control"), "no-store");
    assert_eq!(
        resp.text().unwrap_or_default(),
        "403 Forbidden\n\nThis site's robots.txt disallows / for GPTBot, and the site enforces it.\nSee /robots.txt for what GPTBot may fetch.\n"
    );
    let custom = get(&proxy.url("/secret/plans"), "ExampleBot/2.0 (+https://example.com/bot)");
    assert_eq!(custom.status(), 451);
    assert!(origin.seen().is_empty(), "origin saw {:?}", origin.seen());
    // Allowed paths of the same crawler pass.
    let public = get(&proxy.url("/public/page"), GPTBOT_UA);
    assert_eq!(public.status(), 200);
    assert_eq!(public.text().unwrap_or_default(), "public page\n");
    assert_eq!(origin.seen().len(), 1);
}

#[test]
fn block_keeps_the_connection_alive() {
    let origin = origin();
    let proxy = proxy(&origin);
    let mut conn = Conn::open(proxy.addr);
    let blocked = conn.request("GET", "/", &[("User-Agent", GPTBOT_UA)]);
    assert_eq!(blocked.status, 403);
    let head = conn.request("HEAD", "/", &[("User-Agent", GPTBOT_UA)]);
    assert_eq!(head.status, 403);
    assert!(head.body.is_empty());
    let next = conn.request("GET", "/public/page", &[("User-Agent", GPTBOT_UA)]);
    assert_eq!(next.status, 200);
    assert_eq!(next.body, b"public page\n");
}

#[test]
fn browsers_and_unknown_clients_are_never_blocked() {
    let origin = origin();
    let proxy = proxy(&origin);
    for ua in [BROWSER_UA, "curl/8.5.0", "", "MyGPTBotClone/1.0", "gptbotx"] {
        let resp = get(&proxy.url("/secretary"), ua);
        assert_eq!(resp.status(), 200, "ua {ua:?}");
    }
    // `*` group is `log`: the request passes and the violation is logged.
    let resp = get(&proxy.url("/private/x"), "SomeCrawler/1.0");
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.text().unwrap_or_default(), "private x\n");
    crawlgate_e2e::proxy::wait_for(
        &format!("the violation log line in\n{}", proxy.log()),
        std::time::Duration::from_secs(5),
        || {
            let log = proxy.log();
            log.lines()
                .find(|l| {
                    l.starts_with("time=")
                        && l.contains(" path=/private/x ")
                        && l.contains(" decision=log violation=true rule=/private/ ")
                })
                .map(|_| ())
        },
    );
}

/// Every spelling of a blocked resource that an origin could resolve to it
/// is blocked; look-alikes are not.
#[test]
fn path_tricks_do_not_slip_past_a_block() {
    let origin = origin();
    let proxy = proxy(&origin);
    let ua = "ExampleBot/2.0";
    let blocked = [
        "/secret/x",
        "/secret/",
        "/%73ecret/x",
        "/%73%65%63%72%65%74/x",
        "/./secret/x",
        "/a/../secret/x",
        "/a/%2e%2e/secret/x",
        "/a/%2E%2E/secret/x",
        "/public/../../secret/x",
        "/secret/./x",
        "//secret/x",
        "/secret//x",
        "/secret/x?y=1",
        "/backup.bak",
        "/dir/%62ackup.bak",
        "/secret%2Fx",
        "/secret%2fx",
        "/a%2F..%2Fsecret/x",
        "/a\\..\\secret\\x",
        "/secret;jsessionid=1/x",
        "/a/..;/secret/x",
        "/%2e/secret/x",
        "/a/.%2E/secret/x",
    ];
    // Absolute-form targets and fragments: the proxy blocks them or refuses
    // the request outright; either way the origin never sees them.
    let refused = ["http://example.com/secret/x", "HTTP://example.com//secret/x", "/secret/x#frag"];
    for path in refused {
        let mut conn = Conn::open(proxy.addr);
        let resp = conn.request("GET", path, &[("User-Agent", ua)]);
        assert!([400, 451].contains(&resp.status), "{path} must be blocked or refused, got {}", resp.status);
    }
    for path in blocked {
        let mut conn = Conn::open(proxy.addr);
        let resp = conn.request("GET", path, &[("User-Agent", ua)]);
        assert_eq!(resp.status, 451, "{path} must be blocked");
    }
    let allowed = ["/secretary", "/Secret/x", "/backup.bak2", "/backup.bak?x"];
    for path in allowed {
        let mut conn = Conn::open(proxy.addr);
        let resp = conn.request("GET", path, &[("User-Agent", ua)]);
        assert_ne!(resp.status, 451, "{path} must not be blocked");
    }
    assert!(
        origin.seen().iter().all(|s| !s.target.contains("secret/") && !s.target.ends_with(".bak")),
        "origin saw a blocked path: {:?}",
        origin.seen().iter().map(|s| s.target.clone()).collect::<Vec<_>>()
    );
}

#[test]
fn malformed_targets_are_rejected_with_400() {
    let origin = origin();
    let proxy = proxy(&origin);
    for path in ["/%zz/secret", "/a%"] {
        let mut conn = Conn::open(proxy.addr);
        let resp = conn.request("GET", path, &[("User-Agent", "ExampleBot/2.0")]);
        assert_eq!(resp.status, 400, "{path}");
    }
}
