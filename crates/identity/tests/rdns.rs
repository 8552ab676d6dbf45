//! Forward-confirmed reverse DNS against a real DNS server on 127.0.0.1
//! (`crawlgate_testkit::dns`): genuine, spoofed and lookalike PTR names,
//! NXDOMAIN, a silent server, garbage answers, error codes, the cache
//! (positive, negative, expiry, bound) and coalescing.
//!
//! Addresses are from the documentation ranges (RFC 5737, RFC 3849): the
//! resolver answers 127.0.0.0/8 and ::1 itself (RFC 6761), so those never
//! reach a server.

// The helpers outside `#[test]` functions fail the test by panicking.
#![allow(clippy::panic)]

use std::net::IpAddr;
use std::time::Duration;

use crawlgate_identity::rdns::{Fcrdns, RdnsCheck, RdnsConfig};
use crawlgate_testkit::dns::{DnsServer, Garbage, Mode, QueryType};
use hickory_proto::op::ResponseCode;

/// An upper bound for waiting on anything, never a performance assertion.
const BOUND: Duration = Duration::from_secs(20);

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn google() -> Vec<String> {
    ["googlebot.com", "google.com", "googleusercontent.com"].iter().map(|s| s.to_string()).collect()
}

fn config(dns: &DnsServer) -> RdnsConfig {
    RdnsConfig { min_ttl: Duration::ZERO, ..RdnsConfig::new(vec![dns.addr()], Duration::from_secs(2), 100) }
}

fn fcrdns(config: RdnsConfig) -> Fcrdns {
    Fcrdns::new(config).unwrap_or_else(|e| panic!("Fcrdns::new: {e}"))
}

async fn check(fcrdns: &Fcrdns, addr: IpAddr, suffixes: &[String]) -> RdnsCheck {
    tokio::time::timeout(BOUND, fcrdns.check(addr, suffixes))
        .await
        .unwrap_or_else(|_| panic!("check of {addr} did not return within {BOUND:?}"))
}

/// A genuine crawler: PTR under googlebot.com, A/AAAA back to the address.
fn genuine(dns: &DnsServer) {
    dns.add_ptr(ip("192.0.2.10"), "crawl-192-0-2-10.googlebot.com", 300);
    dns.add_addr("crawl-192-0-2-10.googlebot.com", ip("192.0.2.10"), 300);
    dns.add_ptr(ip("2001:db8::10"), "crawl-2001-db8--10.GoogleBot.com.", 300);
    dns.add_addr("crawl-2001-db8--10.googlebot.com", ip("2001:db8::10"), 300);
}

#[tokio::test]
async fn genuine_ipv4_and_ipv6_are_confirmed() {
    let dns = DnsServer::start();
    genuine(&dns);
    let fcrdns = fcrdns(config(&dns));
    assert_eq!(
        check(&fcrdns, ip("192.0.2.10"), &google()).await,
        RdnsCheck::Confirmed { ptr: "crawl-192-0-2-10.googlebot.com".into() }
    );
    assert_eq!(
        check(&fcrdns, ip("2001:db8::10"), &google()).await,
        RdnsCheck::Confirmed { ptr: "crawl-2001-db8--10.googlebot.com".into() }
    );
    // IPv4 forward is A, IPv6 forward is AAAA, nothing else.
    assert_eq!(dns.queries("crawl-192-0-2-10.googlebot.com", QueryType::A), 1);
    assert_eq!(dns.queries("crawl-192-0-2-10.googlebot.com", QueryType::Aaaa), 0);
    assert_eq!(dns.queries("crawl-2001-db8--10.googlebot.com", QueryType::Aaaa), 1);
    assert_eq!(dns.queries("crawl-2001-db8--10.googlebot.com", QueryType::A), 0);
    // A v4-mapped IPv6 peer is the IPv4 address.
    assert_eq!(
        check(&fcrdns, ip("::ffff:192.0.2.10"), &google()).await,
        RdnsCheck::Confirmed { ptr: "crawl-192-0-2-10.googlebot.com".into() }
    );
    assert_eq!(dns.ptr_queries(ip("192.0.2.10")), 1);
}

#[tokio::test]
async fn ptr_claiming_googlebot_that_resolves_elsewhere_is_a_mismatch() {
    let dns = DnsServer::start();
    dns.add_ptr(ip("192.0.2.20"), "crawl-66-249-66-1.googlebot.com", 300);
    dns.add_addr("crawl-66-249-66-1.googlebot.com", ip("198.51.100.1"), 300);
    let fcrdns = fcrdns(config(&dns));
    assert_eq!(
        check(&fcrdns, ip("192.0.2.20"), &google()).await,
        RdnsCheck::Mismatch {
            detail: "PTR of 192.0.2.20: crawl-66-249-66-1.googlebot.com resolves to 198.51.100.1, not 192.0.2.20"
                .into()
        }
    );
}

#[tokio::test]
async fn ptr_claiming_googlebot_without_forward_record_is_a_mismatch() {
    let dns = DnsServer::start();
    dns.add_ptr(ip("192.0.2.21"), "fake.googlebot.com", 300);
    let fcrdns = fcrdns(config(&dns));
    assert_eq!(
        check(&fcrdns, ip("192.0.2.21"), &google()).await,
        RdnsCheck::Mismatch { detail: "PTR of 192.0.2.21: no A record for fake.googlebot.com (NXDOMAIN)".into() }
    );
}

#[tokio::test]
async fn lookalike_domains_are_a_mismatch() {
    let dns = DnsServer::start();
    // Both resolve forward correctly: only the label-boundary match can tell.
    dns.add_ptr(ip("192.0.2.30"), "crawl.evilgooglebot.com", 300);
    dns.add_addr("crawl.evilgooglebot.com", ip("192.0.2.30"), 300);
    dns.add_ptr(ip("192.0.2.31"), "crawl.googlebot.com.evil.net", 300);
    dns.add_addr("crawl.googlebot.com.evil.net", ip("192.0.2.31"), 300);
    let fcrdns = fcrdns(config(&dns));
    assert_eq!(
        check(&fcrdns, ip("192.0.2.30"), &google()).await,
        RdnsCheck::Mismatch {
            detail: "PTR of 192.0.2.30 is crawl.evilgooglebot.com, not under googlebot.com, google.com, googleusercontent.com"
                .into()
        }
    );
    assert_eq!(
        check(&fcrdns, ip("192.0.2.31"), &google()).await,
        RdnsCheck::Mismatch {
            detail: "PTR of 192.0.2.31 is crawl.googlebot.com.evil.net, not under googlebot.com, google.com, googleusercontent.com"
                .into()
        }
    );
    // The same cached lookup serves another operator's domains.
    assert_eq!(
        fcrdns.cached(ip("192.0.2.31"), &["evil.net".to_string()]),
        Some(RdnsCheck::Confirmed { ptr: "crawl.googlebot.com.evil.net".into() })
    );
}

#[tokio::test]
async fn one_matching_name_among_several_is_enough() {
    let dns = DnsServer::start();
    dns.add_ptr(ip("192.0.2.40"), "host.example.net", 300);
    dns.add_ptr(ip("192.0.2.40"), "msnbot-192-0-2-40.search.msn.com", 300);
    dns.add_addr("msnbot-192-0-2-40.search.msn.com", ip("192.0.2.40"), 300);
    let fcrdns = fcrdns(config(&dns));
    assert_eq!(
        check(&fcrdns, ip("192.0.2.40"), &["search.msn.com".to_string()]).await,
        RdnsCheck::Confirmed { ptr: "msnbot-192-0-2-40.search.msn.com".into() }
    );
}

#[tokio::test]
async fn nxdomain_is_a_mismatch_and_cached_negatively() {
    let dns = DnsServer::start();
    let fcrdns = fcrdns(config(&dns));
    let expected = RdnsCheck::Mismatch { detail: "no PTR record for 192.0.2.50 (NXDOMAIN)".into() };
    assert_eq!(check(&fcrdns, ip("192.0.2.50"), &google()).await, expected);
    assert_eq!(check(&fcrdns, ip("192.0.2.50"), &google()).await, expected);
    assert_eq!(fcrdns.cached(ip("192.0.2.50"), &google()), Some(expected));
    assert_eq!(dns.ptr_queries(ip("192.0.2.50")), 1);
}

#[tokio::test]
async fn a_silent_server_fails_within_the_timeout() {
    let dns = DnsServer::start();
    genuine(&dns);
    dns.set_mode(Mode::Drop);
    let fcrdns = fcrdns(RdnsConfig { timeout: Duration::from_millis(300), ..config(&dns) });
    let RdnsCheck::Failed { reason } = check(&fcrdns, ip("192.0.2.10"), &google()).await else {
        panic!("a silent server must give Failed");
    };
    assert!(reason.contains("timed out"), "{reason}");
    assert!(dns.ptr_queries(ip("192.0.2.10")) >= 1, "the query reached the server");
    // The failure is cached briefly: the dead server is not asked again.
    let asked = dns.total_queries();
    assert!(matches!(check(&fcrdns, ip("192.0.2.10"), &google()).await, RdnsCheck::Failed { .. }));
    assert_eq!(dns.total_queries(), asked);
}

#[tokio::test]
async fn garbage_answers_fail_without_panicking() {
    for garbage in [Garbage::RandomBytes, Garbage::Truncated, Garbage::WrongId] {
        let dns = DnsServer::start();
        genuine(&dns);
        dns.set_mode(Mode::Garbage(garbage));
        let fcrdns = fcrdns(RdnsConfig { timeout: Duration::from_millis(300), ..config(&dns) });
        let outcome = check(&fcrdns, ip("192.0.2.10"), &google()).await;
        assert!(matches!(outcome, RdnsCheck::Failed { .. }), "{garbage:?}: {outcome:?}");
        assert!(dns.ptr_queries(ip("192.0.2.10")) >= 1, "{garbage:?}: the query reached the server");
    }
}

#[tokio::test]
async fn servfail_and_refused_fail() {
    let dns = DnsServer::start();
    dns.set_ptr_rcode(ip("192.0.2.60"), ResponseCode::ServFail);
    dns.set_ptr_rcode(ip("192.0.2.61"), ResponseCode::Refused);
    dns.add_ptr(ip("192.0.2.62"), "crawl.googlebot.com", 300);
    dns.set_rcode("crawl.googlebot.com", ResponseCode::ServFail);
    let fcrdns = fcrdns(config(&dns));
    for (addr, code) in [("192.0.2.60", "SERVFAIL"), ("192.0.2.61", "REFUSED")] {
        assert_eq!(
            check(&fcrdns, ip(addr), &google()).await,
            RdnsCheck::Failed { reason: format!("PTR lookup for {addr}: server answered {code}") }
        );
    }
    // A failed forward lookup of a matching name cannot tell either way.
    assert_eq!(
        check(&fcrdns, ip("192.0.2.62"), &google()).await,
        RdnsCheck::Failed { reason: "A lookup for crawl.googlebot.com: server answered SERVFAIL".into() }
    );
}

#[tokio::test]
async fn second_check_is_served_from_the_cache() {
    let dns = DnsServer::start();
    genuine(&dns);
    let fcrdns = fcrdns(config(&dns));
    assert_eq!(fcrdns.cached(ip("192.0.2.10"), &google()), None);
    let first = check(&fcrdns, ip("192.0.2.10"), &google()).await;
    let second = check(&fcrdns, ip("192.0.2.10"), &google()).await;
    assert_eq!(first, second);
    assert_eq!(fcrdns.cached(ip("192.0.2.10"), &google()), Some(first));
    assert_eq!(dns.ptr_queries(ip("192.0.2.10")), 1);
    assert_eq!(dns.queries("crawl-192-0-2-10.googlebot.com", QueryType::A), 1);
    assert_eq!(fcrdns.cache_len(), 1);
    assert_eq!(fcrdns.lookups(), 1);
    // Another operator's domains, same cached lookup, no new query.
    assert_eq!(
        fcrdns.cached(ip("192.0.2.10"), &["search.msn.com".to_string()]),
        Some(RdnsCheck::Mismatch {
            detail: "PTR of 192.0.2.10 is crawl-192-0-2-10.googlebot.com, not under search.msn.com".into()
        })
    );
    assert_eq!(dns.total_queries(), 2);
}

#[tokio::test]
async fn expiry_by_ttl_triggers_a_new_query() {
    let dns = DnsServer::start();
    dns.add_ptr(ip("192.0.2.70"), "crawl.googlebot.com", 1);
    dns.add_addr("crawl.googlebot.com", ip("192.0.2.70"), 300);
    let fcrdns = fcrdns(config(&dns));
    let confirmed = RdnsCheck::Confirmed { ptr: "crawl.googlebot.com".into() };
    assert_eq!(check(&fcrdns, ip("192.0.2.70"), &google()).await, confirmed);
    assert_eq!(dns.ptr_queries(ip("192.0.2.70")), 1);
    // Wait (bounded) until the one-second TTL has run out.
    let waited = tokio::time::timeout(BOUND, async {
        while fcrdns.cached(ip("192.0.2.70"), &google()).is_some() {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "the entry never expired");
    assert_eq!(check(&fcrdns, ip("192.0.2.70"), &google()).await, confirmed);
    assert_eq!(dns.ptr_queries(ip("192.0.2.70")), 2);
}

#[tokio::test]
async fn negative_ttl_comes_from_the_soa() {
    let dns = DnsServer::start();
    dns.set_negative_ttl(1);
    let fcrdns = fcrdns(config(&dns));
    assert!(matches!(check(&fcrdns, ip("192.0.2.80"), &google()).await, RdnsCheck::Mismatch { .. }));
    let waited = tokio::time::timeout(BOUND, async {
        while fcrdns.cached(ip("192.0.2.80"), &google()).is_some() {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "the negative entry never expired");
    assert!(matches!(check(&fcrdns, ip("192.0.2.80"), &google()).await, RdnsCheck::Mismatch { .. }));
    assert_eq!(dns.ptr_queries(ip("192.0.2.80")), 2);
}

#[tokio::test]
async fn the_minimum_ttl_holds_short_answers() {
    let dns = DnsServer::start();
    dns.add_ptr(ip("192.0.2.71"), "crawl.googlebot.com", 0);
    dns.add_addr("crawl.googlebot.com", ip("192.0.2.71"), 0);
    let fcrdns = fcrdns(RdnsConfig { min_ttl: Duration::from_secs(3600), ..config(&dns) });
    check(&fcrdns, ip("192.0.2.71"), &google()).await;
    check(&fcrdns, ip("192.0.2.71"), &google()).await;
    assert_eq!(dns.ptr_queries(ip("192.0.2.71")), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_checks_of_one_address_share_one_lookup() {
    let dns = DnsServer::start();
    genuine(&dns);
    // Slow answers keep the lookup in flight while the others arrive.
    dns.set_delay(Duration::from_millis(200));
    let fcrdns = fcrdns(config(&dns));
    let tasks: Vec<_> = (0..20)
        .map(|_| {
            let fcrdns = fcrdns.clone();
            tokio::spawn(async move { fcrdns.check(ip("192.0.2.10"), &google()).await })
        })
        .collect();
    for task in tasks {
        let outcome = tokio::time::timeout(BOUND, task)
            .await
            .unwrap_or_else(|_| panic!("a check did not return"))
            .unwrap_or_else(|e| panic!("a check panicked: {e}"));
        assert_eq!(outcome, RdnsCheck::Confirmed { ptr: "crawl-192-0-2-10.googlebot.com".into() });
    }
    // One lookup here; the resolver would also merge identical queries in
    // flight, so the server's count alone cannot show it.
    assert_eq!(fcrdns.lookups(), 1);
    assert_eq!(dns.ptr_queries(ip("192.0.2.10")), 1);
    assert_eq!(dns.queries("crawl-192-0-2-10.googlebot.com", QueryType::A), 1);
}

#[tokio::test]
async fn a_waiter_keeps_its_own_timeout() {
    let dns = DnsServer::start();
    genuine(&dns);
    dns.set_mode(Mode::Drop);
    let fcrdns = fcrdns(RdnsConfig { timeout: Duration::from_millis(300), ..config(&dns) });
    let suffixes = google();
    let (a, b) = tokio::join!(check(&fcrdns, ip("192.0.2.10"), &suffixes), check(&fcrdns, ip("192.0.2.10"), &suffixes));
    assert!(matches!(a, RdnsCheck::Failed { .. }), "{a:?}");
    assert!(matches!(b, RdnsCheck::Failed { .. }), "{b:?}");
    assert_eq!(fcrdns.lookups(), 1);
    assert_eq!(dns.ptr_queries(ip("192.0.2.10")), 1);
}

#[tokio::test]
async fn the_cache_stays_bounded_under_many_addresses() {
    let dns = DnsServer::start();
    let fcrdns = fcrdns(RdnsConfig { cache_size: 50, ..config(&dns) });
    for n in 0..1000u32 {
        let [_, _, c, d] = n.to_be_bytes();
        let addr = IpAddr::from([198, 18, c, d]);
        check(&fcrdns, addr, &google()).await;
        assert!(fcrdns.cache_len() <= 50, "after {n}: {}", fcrdns.cache_len());
    }
    assert_eq!(fcrdns.cache_len(), 50);
    assert_eq!(dns.total_queries(), 1000);
    // The newest stay, the oldest went.
    assert!(fcrdns.cached(IpAddr::from([198, 18, 3, 231]), &google()).is_some());
    assert!(fcrdns.cached(IpAddr::from([198, 18, 0, 0]), &google()).is_none());
}
