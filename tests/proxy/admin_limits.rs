//! The admin listener under a flood of half-sent requests: one client
//! address cannot hold more than `admin_connections_per_client`, the
//! health probes still answer when every connection is held, and the
//! half-sent requests are cut off after `admin_header_timeout`.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use crawlgate_e2e::proxy::{base_policy, free_port, wait_for, Proxy};
use crawlgate_testkit::http::Conn;

use crate::support::{origin, POLICY};

/// What a connection over a limit gets.
const SERVICE_UNAVAILABLE: &[u8] =
    b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\nRetry-After: 1\r\n\r\n";

/// What a request header too slow for its deadline gets.
const REQUEST_TIMEOUT: &[u8] = b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";

/// A request header that never ends.
const HALF_SENT: &[u8] = b"GET /metrics HTTP/1.1\r\nHost: a\r\n";

const PATIENCE: Duration = Duration::from_secs(15);

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn addr() -> SocketAddr {
    format!("127.0.0.1:{}", free_port()).parse().unwrap()
}

/// A connection from `source` to `to` that has sent a half request.
fn half_sent(source: &str, to: SocketAddr) -> Conn {
    let mut c = Conn::from_source(ip(source), to);
    c.stream().set_read_timeout(Some(PATIENCE)).unwrap();
    c.send(HALF_SENT);
    c
}

/// One request from `source` on a new connection: everything the admin
/// listener wrote until it closed.
fn exchange_from(source: &str, to: SocketAddr, request: &[u8]) -> String {
    let mut c = Conn::from_source(ip(source), to);
    c.stream().set_read_timeout(Some(PATIENCE)).unwrap();
    c.send(request);
    String::from_utf8_lossy(&c.read_to_close()).into_owned()
}

/// Whether the admin listener wrote to or closed `c` (it was refused).
fn answered(c: &mut Conn) -> bool {
    let s = c.stream();
    s.set_read_timeout(Some(Duration::from_millis(1))).unwrap();
    let answered = !matches!(s.peek(&mut [0u8; 1]), Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut));
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    answered
}

#[test]
fn probes_answer_while_half_sent_requests_hold_the_admin_listener() {
    let origin = origin();
    // The proxy's own header timeout is long: the admin one (default 5 s)
    // is what cuts the half-sent requests off.
    let (listen, admin) = (addr(), addr());
    let policy = base_policy(listen, admin, origin.addr).replacen(
        "[server]\n",
        "[server]\nclient_header_timeout = \"60s\"\nclient_idle_timeout = \"60s\"\n",
        1,
    ) + POLICY;
    let proxy = Proxy::start_with(listen, admin, &policy);
    let ready = || exchange_from("127.0.0.1", admin, b"GET /readyz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
    wait_for("the proxy to be ready", PATIENCE, || ready().starts_with("HTTP/1.1 200 OK\r\n").then_some(()));
    // The scrape that reads the gauge is open while it is encoded.
    let open = || proxy.metric("crawlgate_client_connections{listener=\"admin\"}");
    let started = Instant::now();

    // One client: its first 16 half-sent requests are held, every later
    // connection (up to the 65th) is refused at once.
    let mut held: Vec<Conn> = (0..16).map(|_| half_sent("127.0.0.2", admin)).collect();
    wait_for("16 held admin connections", PATIENCE, || (open().as_deref() == Some("17")).then_some(()));
    for n in 17..=65 {
        let mut c = half_sent("127.0.0.2", admin);
        assert_eq!(
            String::from_utf8_lossy(&c.read_to_close()),
            String::from_utf8_lossy(SERVICE_UNAVAILABLE),
            "connection {n} from 127.0.0.2"
        );
    }
    assert_eq!(proxy.metric("crawlgate_connections_refused_total{listener=\"admin\"}").as_deref(), Some("49"));
    // The per-client cap never refuses a probe: the client holding 16
    // half-sent requests still gets its /healthz answered.
    let own = exchange_from("127.0.0.2", admin, b"GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n");
    assert!(own.starts_with("HTTP/1.1 200 OK\r\n") && own.ends_with("\r\n\r\nok\n"), "{own}");

    // Three more clients fill the cap of 64. A request that checks it may
    // take a slot while a held connection is accepted, which then finds
    // the cap full and is refused: that one is opened again.
    held.extend((0..16).map(|_| half_sent("127.0.0.3", admin)));
    held.extend((0..16).map(|_| half_sent("127.0.0.4", admin)));
    wait_for("48 held admin connections", PATIENCE, || (open().as_deref() == Some("49")).then_some(()));
    let mut last: Vec<Conn> = (0..16).map(|_| half_sent("127.0.0.5", admin)).collect();
    let metrics = b"GET /metrics HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
    wait_for("the admin cap to be full", PATIENCE, || {
        for c in &mut last {
            if answered(c) {
                *c = half_sent("127.0.0.5", admin);
            }
        }
        (exchange_from("127.0.0.6", admin, metrics) == String::from_utf8_lossy(SERVICE_UNAVAILABLE)).then_some(())
    });
    held.extend(last);

    // The probes still answer, from a client with no connection open.
    let healthz = exchange_from("127.0.0.1", admin, b"GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n");
    assert!(healthz.starts_with("HTTP/1.1 200 OK\r\n") && healthz.ends_with("\r\n\r\nok\n"), "{healthz}");
    let readyz = exchange_from("127.0.0.1", admin, b"GET /readyz?full=1 HTTP/1.0\r\n\r\n");
    assert!(readyz.starts_with("HTTP/1.1 200 OK\r\n") && readyz.ends_with("\r\n\r\nready\n"), "{readyz}");
    let head = exchange_from("127.0.0.7", admin, b"HEAD /healthz HTTP/1.1\r\nHost: a\r\n\r\n");
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n") && head.ends_with("\r\n\r\n"), "{head}");
    // Over the cap, anything but a probe is refused: another path, a
    // probe sent half (cut off after its 1 s deadline), or silence.
    assert_eq!(exchange_from("127.0.0.7", admin, metrics), String::from_utf8_lossy(SERVICE_UNAVAILABLE));
    let t = Instant::now();
    let slow = exchange_from("127.0.0.7", admin, b"GET /healthz HTTP/1.1\r\nHost: a\r\n");
    assert_eq!(slow, String::from_utf8_lossy(REQUEST_TIMEOUT));
    assert!(t.elapsed() < Duration::from_secs(3), "a half-sent probe held its slot for {:?}", t.elapsed());
    assert_eq!(exchange_from("127.0.0.7", admin, b""), String::from_utf8_lossy(SERVICE_UNAVAILABLE));

    // Eight connections from one address that connect, send nothing and
    // reconnect do not hold the probe slots: a probe slot is taken only by
    // a request line that names a probe.
    let cycles = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let silent = {
        let (stop, cycles) = (stop.clone(), cycles.clone());
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let mut idle: Vec<Conn> = (0..8).map(|_| Conn::from_source(ip("127.0.0.8"), admin)).collect();
                for c in &mut idle {
                    c.stream().set_read_timeout(Some(PATIENCE)).unwrap();
                    assert_eq!(
                        String::from_utf8_lossy(&c.read_to_close()),
                        String::from_utf8_lossy(SERVICE_UNAVAILABLE)
                    );
                }
                cycles.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        })
    };
    // Probes for as long as two rounds of silent connections last.
    let mut probes = Vec::new();
    while probes.len() < 20 || cycles.load(std::sync::atomic::Ordering::SeqCst) < 2 {
        let r = exchange_from("127.0.0.1", admin, b"GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n");
        probes.push(r.lines().next().unwrap_or("").to_string());
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    silent.join().unwrap();
    assert_eq!(probes, vec!["HTTP/1.1 200 OK".to_string(); probes.len()]);

    // The held ones are cut off with a 408 after the admin header timeout
    // (5 s), not the proxy's (60 s).
    for (n, c) in held.iter_mut().enumerate() {
        assert_eq!(
            String::from_utf8_lossy(&c.read_to_close()),
            String::from_utf8_lossy(REQUEST_TIMEOUT),
            "held connection {n}"
        );
    }
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_secs(5) && elapsed < Duration::from_secs(15), "cut off after {elapsed:?}");
    // Closed on our side too, so they stop lingering.
    drop(held);
    wait_for("the held connections gone", PATIENCE, || (open().as_deref() == Some("1")).then_some(()));
    let m = proxy.metrics();
    assert!(m.contains("crawlgate_client_timeouts_total{listener=\"admin\",phase=\"header\"} 65\n"), "{m}");
}

/// An idle admin connection is closed after `admin_idle_timeout`, not the
/// proxy's `client_idle_timeout`: a kept-alive dashboard or scraper
/// connection does not hold one of the 64 slots for a minute.
#[test]
fn idle_admin_connections_close_after_the_admin_idle_timeout() {
    let origin = origin();
    let (listen, admin) = (addr(), addr());
    let policy = base_policy(listen, admin, origin.addr).replacen(
        "[server]\n",
        "[server]\nclient_idle_timeout = \"60s\"\nadmin_idle_timeout = \"1s\"\n",
        1,
    ) + POLICY;
    let proxy = Proxy::start_with(listen, admin, &policy);
    let ready = || exchange_from("127.0.0.1", admin, b"GET /readyz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
    wait_for("the proxy to be ready", PATIENCE, || ready().starts_with("HTTP/1.1 200 OK\r\n").then_some(()));
    let mut c = Conn::from_source(ip("127.0.0.2"), admin);
    c.stream().set_read_timeout(Some(PATIENCE)).unwrap();
    let first = c.request("GET", "/healthz", &[]);
    assert_eq!((first.status, first.body.as_slice()), (200, &b"ok\n"[..]));
    // Kept alive for the next request, then closed without a byte.
    assert_eq!(c.read_to_close(), b"");
    let idle = "crawlgate_client_timeouts_total{listener=\"admin\",phase=\"idle\"}";
    assert_eq!(proxy.metric(idle).as_deref(), Some("1"), "{}", proxy.metrics());
}
