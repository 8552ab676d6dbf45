//! Protocol upgrades (RFC 9110 section 7.8): after a 101 the proxy relays
//! bytes without reading them, so only the upgrades `[server] upgrades`
//! allows reach the origin; the rest get 400 and the origin sees nothing.

use std::net::SocketAddr;
use std::time::Duration;

use crawlgate_e2e::origin::{Origin, Route};
use crawlgate_e2e::proxy::{base_policy, free_port, Proxy};
use crawlgate_testkit::http::{exchange, RawResponse};

const RULES: &str = r#"
[[group]]
user_agents = ["GPTBot"]
disallow = ["/private/"]
enforce = "block"
"#;

/// Status and whole response text of a raw HTTP/1.1 GET with `headers`.
fn get(proxy: &Proxy, target: &str, headers: &str) -> (u16, String) {
    let request = format!(
        "GET {target} HTTP/1.1\r\nHost: site.test\r\nUser-Agent: GPTBot/1.2\r\n{headers}Connection: close\r\n\r\n"
    );
    let raw = exchange(proxy.addr, request.as_bytes(), Duration::from_secs(5));
    let status = RawResponse::parse(&raw, false).map_or(0, |r| r.status);
    (status, String::from_utf8_lossy(&raw).into_owned())
}

fn start(upgrades: Option<&str>) -> (Origin, Proxy) {
    let origin = Origin::start(vec![("/public/a", Route::ok("text/plain", "public\n"))]);
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let admin: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let mut policy = base_policy(addr, admin, origin.addr);
    if let Some(mode) = upgrades {
        policy = policy.replace("threads = 2\n", &format!("threads = 2\nupgrades = \"{mode}\"\n"));
    }
    let proxy = Proxy::start_with(addr, admin, &(policy + RULES));
    (origin, proxy)
}

#[test]
fn only_websocket_upgrades_reach_the_origin_by_default() {
    let (origin, proxy) = start(None);
    let refused = "400 Bad Request: only Upgrade: websocket is allowed (server.upgrades = \"websocket\")\n";
    for upgrade in [
        "Upgrade: h2c\r\nConnection: Upgrade, HTTP2-Settings\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n",
        "Upgrade: foo\r\nConnection: upgrade\r\n",
        "Upgrade: websocket, foo\r\nConnection: upgrade\r\n",
        "Upgrade: foo\r\n",
    ] {
        let (status, text) = get(&proxy, "/public/a", upgrade);
        assert_eq!(status, 400, "{upgrade}: {text}");
        assert!(text.ends_with(refused), "{upgrade}: {text}");
    }
    assert_eq!(origin.seen().len(), 0, "{:?}", origin.seen());
    // A websocket upgrade still passes (this origin answers 200, not 101),
    // with its Upgrade field (which Pingora writes in lower case).
    let ws = "Upgrade: WebSocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n";
    let (status, text) = get(&proxy, "/public/a", ws);
    assert_eq!(status, 200, "{text}");
    let seen = origin.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!((seen[0].target.as_str(), seen[0].header("upgrade")), ("/public/a", Some("websocket")));
    // A blocked path stays blocked, upgrade or not.
    let (status, text) = get(&proxy, "/private/x", ws);
    assert_eq!(status, 403, "{text}");
    assert_eq!(origin.seen().len(), 1);
}

#[test]
fn upgrades_off_refuses_websocket_and_all_lets_any_through() {
    let (origin, proxy) = start(Some("off"));
    let ws = "Upgrade: websocket\r\nConnection: Upgrade\r\n";
    let (status, text) = get(&proxy, "/public/a", ws);
    assert_eq!(status, 400, "{text}");
    assert!(
        text.ends_with("400 Bad Request: protocol upgrades are not allowed (server.upgrades = \"off\")\n"),
        "{text}"
    );
    assert_eq!(origin.seen().len(), 0);
    // Without an Upgrade field nothing changes.
    assert_eq!(get(&proxy, "/public/a", "").0, 200);
    drop(proxy);

    let (origin, proxy) = start(Some("all"));
    let (status, text) = get(&proxy, "/public/a", "Upgrade: foo\r\nConnection: upgrade\r\n");
    assert_eq!(status, 200, "{text}");
    assert_eq!(origin.seen().first().and_then(|s| s.header("upgrade")), Some("foo"));
}
