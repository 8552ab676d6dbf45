//! Published IP range lists: both formats, every rejected input with its
//! exact error, lookups at prefix boundaries, and the refresh service
//! against a real HTTP server on 127.0.0.1 (changed lists, broken lists,
//! restart from the state directory with the server gone).

// A test reports a failure by panicking, also from its helpers.
#![allow(clippy::panic)]

use std::net::IpAddr;
use std::time::Duration;

use crawlgate_identity::lists::{IpCheck, ListSource, ListStatus, Lists, ListsConfig, MAX_BODY};
use crawlgate_identity::ranges::{CidrError, IpPrefix, ListError, RangeTable};
use crawlgate_testkit::serve::{Reply, Server};
use crawlgate_testkit::TempDir;
use proptest::prelude::*;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn prefix(s: &str) -> IpPrefix {
    IpPrefix::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn parse(text: &str) -> RangeTable {
    RangeTable::parse(text).unwrap_or_else(|e| panic!("{e}"))
}

fn error(text: &str) -> String {
    match RangeTable::parse(text) {
        Ok(t) => panic!("accepted {} prefixes", t.len()),
        Err(e) => e.to_string(),
    }
}

/// Shaped like Google's googlebot.json (with the keys other operators add).
const LIST_A: &str = r#"{
  "creationTime": "2026-11-20T15:46:14.000000",
  "syncToken": "1700000000000",
  "prefixes": [
    {"ipv6Prefix": "2001:4860:4801:10::/64"},
    {"ipv4Prefix": "66.249.64.0/27"},
    {"ipv4Prefix": "66.249.66.0/27", "service": "Googlebot", "scope": "global"},
    {"ipv6Prefix": "2001:4860:4801:12::/64"}
  ]
}"#;

/// A later version: one prefix dropped, one added.
const LIST_B: &str = r#"{"creationTime": "2026-11-21T15:46:14.000000", "prefixes": [
  {"ipv4Prefix": "66.249.66.0/27"}, {"ipv4Prefix": "66.249.70.0/27"}, {"ipv6Prefix": "2001:4860:4801:12::/64"}]}"#;

#[test]
fn json_list() {
    let t = parse(LIST_A);
    assert_eq!(t.len(), 4);
    assert_eq!(
        t.prefixes(),
        [
            prefix("2001:4860:4801:10::/64"),
            prefix("66.249.64.0/27"),
            prefix("66.249.66.0/27"),
            prefix("2001:4860:4801:12::/64")
        ]
    );
    assert_eq!(t.lookup(ip("66.249.66.1")), Some(prefix("66.249.66.0/27")));
    assert_eq!(t.lookup(ip("2001:4860:4801:10::abcd")), Some(prefix("2001:4860:4801:10::/64")));
    assert_eq!(t.lookup(ip("66.249.65.1")), None);
    assert_eq!(t.lookup(ip("2001:4860:4801:11::1")), None);
}

#[test]
fn line_list() {
    let text = "\u{feff}# Example crawler ranges\r\n\r\n192.0.2.0/24\r\n  198.51.100.7   # one host\n2001:db8::/32\n2001:db8:ffff::1\n\n";
    let t = parse(text);
    assert_eq!(
        t.prefixes(),
        [prefix("192.0.2.0/24"), prefix("198.51.100.7/32"), prefix("2001:db8::/32"), prefix("2001:db8:ffff::1/128")]
    );
    assert_eq!(t.lookup(ip("198.51.100.7")), Some(prefix("198.51.100.7/32")));
    assert_eq!(t.lookup(ip("198.51.100.8")), None);
    // Nested: the outer listed prefix is the evidence.
    assert_eq!(t.lookup(ip("2001:db8:ffff::1")), Some(prefix("2001:db8::/32")));
}

#[test]
fn bad_json_entries_name_their_position() {
    let cases: &[(&str, &str)] = &[
        (
            r#"{"prefixes": [{"ipv4Prefix": "66.249.64.0/27"}, {"ipv6Prefix": "2001:db8::/64"}, {"ipv4Prefix": "66.249.66.1/24"}]}"#,
            r#"prefixes[2]: "66.249.66.1/24": host bits set (the network is 66.249.66.0/24)"#,
        ),
        (r#"{"prefixes": [{"ipv4Prefix": "66.249.64.0/33"}]}"#, r#"prefixes[0]: "66.249.64.0/33": bad prefix length"#),
        (r#"{"prefixes": [{"ipv6Prefix": "2001:db8::/129"}]}"#, r#"prefixes[0]: "2001:db8::/129": bad prefix length"#),
        (r#"{"prefixes": [{"ipv4Prefix": "66.249.64/27"}]}"#, r#"prefixes[0]: "66.249.64/27": not an IP address"#),
        (
            r#"{"prefixes": [{"ipv4Prefix": "1.2.3.0/24"}, {"ipv4Prefix": "2001:db8::/32"}]}"#,
            r#"prefixes[1]: "2001:db8::/32": wrong address family for the key"#,
        ),
        (
            r#"{"prefixes": [{"ipv6Prefix": "1.2.3.0/24"}]}"#,
            r#"prefixes[0]: "1.2.3.0/24": wrong address family for the key"#,
        ),
        (r#"{"prefixes": [{"ipv4Prefix": 42}]}"#, r#"prefixes[0]: "42": not an IP address"#),
        (
            r#"{"prefixes": [{"service": "x"}]}"#,
            r#"prefixes[0]: "{\"service\":\"x\"}": expected exactly one of ipv4Prefix and ipv6Prefix"#,
        ),
        (
            r#"{"prefixes": [{"ipv4Prefix": "1.2.3.0/24", "ipv6Prefix": "::/0"}]}"#,
            r#"prefixes[0]: "{\"ipv4Prefix\":\"1.2.3.0/24\",\"ipv6Prefix\":\"::/0\"}": expected exactly one of ipv4Prefix and ipv6Prefix"#,
        ),
    ];
    for (text, want) in cases {
        assert_eq!(error(text), *want, "{text}");
    }
    assert_eq!(
        RangeTable::parse(r#"{"prefixes": [{"ipv4Prefix": "1.2.3.4/24"}]}"#).err(),
        Some(ListError::Entry {
            index: 0,
            text: "1.2.3.4/24".into(),
            error: CidrError::HostBits(prefix("1.2.3.0/24"))
        })
    );
}

#[test]
fn bad_lines_name_their_line() {
    assert_eq!(error("# ranges\n10.0.0.0/8\n10.1.0.0/16x # typo\n"), r#"line 3: "10.1.0.0/16x": bad prefix length"#);
    assert_eq!(
        error("10.0.0.0/8\n\n10.0.0.1/8\n"),
        r#"line 3: "10.0.0.1/8": host bits set (the network is 10.0.0.0/8)"#
    );
    assert_eq!(
        error("<html><body>Rate limited</body></html>\n"),
        r#"line 1: "<html><body>Rate limited</body></html>": not an IP address"#
    );
    assert_eq!(
        RangeTable::parse("1.2.3.0/24\nfe80::1%eth0\n").err(),
        Some(ListError::Line { line: 2, text: "fe80::1%eth0".into(), error: CidrError::Address })
    );
}

#[test]
fn garbage_and_empty_lists_are_rejected() {
    assert_eq!(error(r#"{"prefixes": ["#), "invalid JSON list: EOF while parsing a list at line 1 column 14");
    assert_eq!(error(r#"{"creationTime": "x"}"#), "invalid JSON list: missing field `prefixes` at line 1 column 21");
    assert_eq!(
        error(r#"{"prefixes": {}}"#),
        "invalid JSON list: invalid type: map, expected a sequence at line 1 column 13"
    );
    assert_eq!(error(r#"{"prefixes": []}"#), "the list has no prefixes");
    assert_eq!(RangeTable::parse("").err(), Some(ListError::Empty));
    assert_eq!(RangeTable::parse("# nothing yet\n\n   \n").err(), Some(ListError::Empty));
}

#[test]
fn boundaries() {
    let t = parse("66.249.64.0/27\n2001:4860:4801:10::/64\n");
    let v4 = Some(prefix("66.249.64.0/27"));
    let v6 = Some(prefix("2001:4860:4801:10::/64"));
    assert_eq!(t.lookup(ip("66.249.63.255")), None);
    assert_eq!(t.lookup(ip("66.249.64.0")), v4);
    assert_eq!(t.lookup(ip("66.249.64.31")), v4);
    assert_eq!(t.lookup(ip("66.249.64.32")), None);
    assert_eq!(t.lookup(ip("2001:4860:4801:f:ffff:ffff:ffff:ffff")), None);
    assert_eq!(t.lookup(ip("2001:4860:4801:10::")), v6);
    assert_eq!(t.lookup(ip("2001:4860:4801:10:ffff:ffff:ffff:ffff")), v6);
    assert_eq!(t.lookup(ip("2001:4860:4801:11::")), None);
    // IPv4-mapped IPv6 (a dual-stack socket's view of an IPv4 client).
    assert_eq!(t.lookup(ip("::ffff:66.249.64.0")), v4);
    assert_eq!(t.lookup(ip("::ffff:66.249.64.31")), v4);
    assert_eq!(t.lookup(ip("::ffff:66.249.64.32")), None);
    // Not mapped: an IPv4-compatible address is IPv6.
    assert_eq!(t.lookup(ip("::66.249.64.1")), None);
    // The extremes of both families.
    let edges = parse("0.0.0.0/32\n255.255.255.255\n::\nffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128\n");
    assert_eq!(edges.lookup(ip("0.0.0.0")), Some(prefix("0.0.0.0/32")));
    assert_eq!(edges.lookup(ip("0.0.0.1")), None);
    assert_eq!(edges.lookup(ip("255.255.255.255")), Some(prefix("255.255.255.255/32")));
    assert_eq!(edges.lookup(ip("255.255.255.254")), None);
    assert_eq!(edges.lookup(ip("::")), Some(prefix("::/128")));
    assert_eq!(
        edges.lookup(ip("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")),
        Some(prefix("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128"))
    );
    assert_eq!(edges.lookup(ip("::1")), None);
}

/// A random prefix (network address, host bits cleared) of either family,
/// drawn near a few base addresses so that prefixes nest and addresses hit.
fn arb_prefix() -> impl Strategy<Value = IpPrefix> {
    prop_oneof![
        (any::<u8>(), any::<u16>(), 8u8..=32).prop_map(|(a, b, len)| {
            let raw = 0x0a00_0000u32 | (u32::from(a & 3) << 16) | u32::from(b);
            let host = u32::MAX.checked_shr(u32::from(len)).unwrap_or(0);
            IpPrefix { addr: IpAddr::from((raw & !host).to_be_bytes()), len }
        }),
        (any::<u16>(), any::<u16>(), 16u8..=128).prop_map(|(a, b, len)| {
            let raw = (0x2001_0db8u128 << 96) | (u128::from(a & 7) << 64) | u128::from(b);
            let host = u128::MAX.checked_shr(u32::from(len)).unwrap_or(0);
            IpPrefix { addr: IpAddr::from((raw & !host).to_be_bytes()), len }
        }),
    ]
}

fn arb_addr() -> impl Strategy<Value = IpAddr> {
    prop_oneof![
        (any::<u8>(), any::<u16>())
            .prop_map(|(a, b)| IpAddr::from((0x0a00_0000u32 | (u32::from(a & 3) << 16) | u32::from(b)).to_be_bytes())),
        (any::<u8>(), any::<u16>()).prop_map(|(a, b)| IpAddr::from(
            ((0xffffu128 << 32) | 0x0a00_0000 | (u128::from(a & 3) << 16) | u128::from(b)).to_be_bytes()
        )),
        (any::<u16>(), any::<u16>()).prop_map(|(a, b)| IpAddr::from(
            ((0x2001_0db8u128 << 96) | (u128::from(a & 7) << 64) | u128::from(b)).to_be_bytes()
        )),
        any::<u32>().prop_map(|a| IpAddr::from(a.to_be_bytes())),
    ]
}

/// Whether the first `p.len` bits of `a` are those of `p.addr`, bit by bit
/// (independent of the table's integer ranges).
fn naive_contains(p: &IpPrefix, a: IpAddr) -> bool {
    // Lookups see an IPv4-mapped address as IPv4 (the generated prefixes
    // are never mapped ones).
    let octets = |x: IpAddr| match x {
        IpAddr::V4(v) => v.octets().to_vec(),
        IpAddr::V6(v) => v.octets().to_vec(),
    };
    let (net, addr) = (octets(p.addr), octets(a.to_canonical()));
    net.len() == addr.len()
        && (0..usize::from(p.len)).all(|i| (net[i / 8] >> (7 - i % 8)) & 1 == (addr[i / 8] >> (7 - i % 8)) & 1)
}

proptest! {
    /// `lookup` finds a listed prefix containing the address exactly when a
    /// linear scan finds one, and never reports a prefix that was not
    /// listed; both formats give the same table.
    #[test]
    fn lookup_agrees_with_a_linear_scan(prefixes in prop::collection::vec(arb_prefix(), 1..40), addrs in prop::collection::vec(arb_addr(), 1..60)) {
        let text: String = prefixes.iter().map(|p| format!("{p}\n")).collect();
        let table = RangeTable::parse(&text).unwrap_or_else(|e| panic!("{e}"));
        for a in addrs {
            let naive = prefixes.iter().any(|p| naive_contains(p, a));
            match table.lookup(a) {
                Some(found) => {
                    prop_assert!(naive, "{a} found in {found} but no prefix contains it");
                    prop_assert!(prefixes.contains(&found), "{found} not listed");
                    prop_assert!(naive_contains(&found, a), "{found} does not contain {a}");
                    // The outermost: no listed prefix is shorter and contains it.
                    prop_assert!(!prefixes.iter().any(|p| p.len < found.len && naive_contains(p, a)), "{found} not outermost for {a}");
                }
                None => prop_assert!(!naive, "{a} is listed but lookup missed it"),
            }
        }
    }
}

fn config(dir: &TempDir, agents: Vec<(&str, Vec<ListSource>)>) -> ListsConfig {
    ListsConfig {
        refresh: Duration::from_secs(3600),
        fetch_timeout: Duration::from_secs(10),
        state_dir: Some(dir.path().to_path_buf()),
        agents: agents.into_iter().map(|(t, s)| (t.to_string(), s)).collect(),
    }
}

fn matched(source: &str, p: &str) -> IpCheck {
    IpCheck::Match { source: source.into(), prefix: prefix(p) }
}

fn one_status(lists: &Lists) -> ListStatus {
    let mut all = lists.status();
    assert_eq!(all.len(), 1, "{all:?}");
    all.remove(0)
}

#[tokio::test]
async fn refresh_swaps_keeps_the_old_copy_on_failure_and_survives_a_restart() {
    let dir = TempDir::new("lists-refresh");
    let server = Server::start();
    let url = server.url("/googlebot.json");
    server.set("/googlebot.json", 200, "application/json", LIST_A);
    let cfg = config(&dir, vec![("Googlebot", vec![ListSource::Url(url.clone())])]);
    let lists = Lists::new(cfg.clone());
    assert_eq!(lists.check("Googlebot", ip("66.249.64.5")), IpCheck::NotLoaded);
    assert_eq!(lists.check("bingbot", ip("66.249.64.5")), IpCheck::NoSource);

    // List A.
    lists.refresh_all().await;
    assert_eq!(server.hits("/googlebot.json"), 1);
    assert_eq!(lists.check("Googlebot", ip("66.249.64.5")), matched(&url, "66.249.64.0/27"));
    assert_eq!(lists.check("googlebot", ip("2001:4860:4801:10::1")), matched(&url, "2001:4860:4801:10::/64"));
    assert_eq!(lists.check("Googlebot", ip("66.249.70.5")), IpCheck::NoMatch);
    let s = one_status(&lists);
    assert_eq!(
        (s.source.as_str(), s.prefixes, s.last_error.as_deref(), s.refreshes, s.failures),
        (url.as_str(), 4, None, 1, 0)
    );
    assert!(s.age_secs.is_some_and(|a| a < 3600), "{s:?}");
    let persisted: Vec<_> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    assert_eq!(persisted, [crawlgate_identity::lists::persisted_name(&url)]);

    // List B replaces it.
    server.set("/googlebot.json", 200, "application/json", LIST_B);
    lists.refresh_all().await;
    assert_eq!(lists.check("Googlebot", ip("66.249.64.5")), IpCheck::NoMatch);
    assert_eq!(lists.check("Googlebot", ip("66.249.70.5")), matched(&url, "66.249.70.0/27"));
    assert_eq!(one_status(&lists).refreshes, 2);

    // Every broken answer keeps B, says why and is counted.
    let broken: Vec<(Reply, &str)> = vec![
        (
            Reply::Respond {
                status: 200,
                content_type: "application/json".into(),
                body: br#"{"prefixes": [{"ipv4"#.to_vec(),
            },
            "invalid list: invalid JSON list: EOF while parsing a string at line 1 column 20",
        ),
        (
            Reply::Respond {
                status: 200,
                content_type: "application/json".into(),
                body: br#"{"prefixes": [{"ipv4Prefix": "66.249.66.0/27"}, {"ipv4Prefix": "66.249.70.9/27"}]}"#.to_vec(),
            },
            r#"invalid list: prefixes[1]: "66.249.70.9/27": host bits set (the network is 66.249.70.0/27)"#,
        ),
        (
            Reply::Respond {
                status: 200,
                content_type: "application/json".into(),
                body: br#"{"prefixes": []}"#.to_vec(),
            },
            "invalid list: the list has no prefixes",
        ),
        (
            Reply::Respond { status: 500, content_type: "text/plain".into(), body: b"oops".to_vec() },
            "unexpected HTTP status 500 Internal Server Error",
        ),
        (
            Reply::Respond { status: 204, content_type: "text/plain".into(), body: Vec::new() },
            "unexpected HTTP status 204 No Content",
        ),
        (
            Reply::Respond { status: 200, content_type: "text/plain".into(), body: vec![0xff, 0xfe] },
            "body is not UTF-8",
        ),
        (Reply::Close, "fetch failed: "),
    ];
    for (n, (reply, want)) in broken.into_iter().enumerate() {
        server.set_reply("/googlebot.json", reply);
        lists.refresh_all().await;
        assert_eq!(lists.check("Googlebot", ip("66.249.70.5")), matched(&url, "66.249.70.0/27"), "after {want}");
        let s = one_status(&lists);
        let err = s.last_error.clone().unwrap_or_default();
        if want.ends_with(": ") {
            assert!(err.starts_with(want) && err.len() > want.len(), "{err}");
        } else {
            assert_eq!(err, want);
        }
        assert_eq!((s.prefixes, s.refreshes, s.failures), (3, 2, n as u64 + 1), "{s:?}");
    }
    // A good answer clears the error.
    server.set("/googlebot.json", 200, "application/json", LIST_B);
    lists.refresh_all().await;
    let s = one_status(&lists);
    assert_eq!((s.last_error, s.refreshes, s.failures), (None, 3, 7));

    // Restart with the server gone: the persisted copy verifies.
    server.stop();
    drop(lists);
    let restarted = Lists::new(cfg);
    assert_eq!(restarted.check("Googlebot", ip("66.249.70.5")), matched(&url, "66.249.70.0/27"));
    assert_eq!(restarted.check("Googlebot", ip("66.249.64.5")), IpCheck::NoMatch);
    let s = one_status(&restarted);
    assert_eq!((s.prefixes, s.last_error.as_deref(), s.refreshes, s.failures), (3, None, 0, 0));
    assert!(s.age_secs.is_some_and(|a| a < 3600), "{s:?}");
    restarted.refresh_all().await;
    assert_eq!(restarted.check("Googlebot", ip("66.249.70.5")), matched(&url, "66.249.70.0/27"));
    let s = one_status(&restarted);
    assert!(s.last_error.as_deref().is_some_and(|e| e.starts_with("fetch failed: ")), "{s:?}");
    assert_eq!(s.failures, 1);
}

#[tokio::test]
async fn a_source_shared_by_tokens_is_fetched_once() {
    let dir = TempDir::new("lists-shared");
    let server = Server::start();
    server.set("/a.json", 200, "application/json", LIST_A);
    server.set("/b.txt", 200, "text/plain", "192.0.2.0/24\n");
    let (a, b) = (server.url("/a.json"), server.url("/b.txt"));
    let lists = Lists::new(config(
        &dir,
        vec![
            ("Googlebot", vec![ListSource::Url(a.clone())]),
            ("Googlebot-Image", vec![ListSource::Url(a.clone()), ListSource::Url(b.clone())]),
        ],
    ));
    lists.refresh_all().await;
    assert_eq!((server.hits("/a.json"), server.hits("/b.txt")), (1, 1));
    assert_eq!(lists.status().iter().map(|s| s.source.clone()).collect::<Vec<_>>(), [a.clone(), b.clone()]);
    assert_eq!(lists.check("Googlebot-Image", ip("66.249.66.9")), matched(&a, "66.249.66.0/27"));
    assert_eq!(lists.check("Googlebot-Image", ip("192.0.2.9")), matched(&b, "192.0.2.0/24"));
    assert_eq!(lists.check("Googlebot", ip("192.0.2.9")), IpCheck::NoMatch);
    server.stop();
}

#[tokio::test]
async fn rejected_sources() {
    let server = Server::start();
    let big = server.url("/big.txt");
    server.set("/big.txt", 200, "text/plain", vec![b'#'; MAX_BODY + 1]);
    let missing = server.url("/missing.json");
    let lists = Lists::new(ListsConfig {
        agents: vec![(
            "X".into(),
            vec![
                ListSource::Url(big.clone()),
                ListSource::Url(missing.clone()),
                ListSource::Url("ftp://example.com/x.json".into()),
            ],
        )],
        ..ListsConfig::default()
    });
    lists.refresh_all().await;
    let errors: Vec<_> = lists.status().into_iter().map(|s| (s.source, s.last_error, s.failures)).collect();
    assert_eq!(
        errors,
        [
            (big, Some("body larger than 8388608 bytes".to_string()), 1),
            (missing, Some("unexpected HTTP status 404 Not Found".to_string()), 1),
            (
                "ftp://example.com/x.json".to_string(),
                Some("unsupported URL scheme (http or https only)".to_string()),
                1
            ),
        ]
    );
    assert_eq!(lists.check("X", ip("192.0.2.1")), IpCheck::NotLoaded);
    server.stop();
}

#[tokio::test]
async fn local_file_sources() {
    let dir = TempDir::new("lists-file");
    let file = dir.write("ours.txt", "# our own crawler\n203.0.113.0/28\n");
    let name = file.display().to_string();
    let lists = Lists::new(ListsConfig {
        agents: vec![("OurBot".into(), vec![ListSource::File(file.clone())])],
        ..ListsConfig::default()
    });
    // Read at start, before any refresh.
    assert_eq!(lists.check("OurBot", ip("203.0.113.15")), matched(&name, "203.0.113.0/28"));
    assert_eq!(lists.check("OurBot", ip("203.0.113.16")), IpCheck::NoMatch);

    std::fs::write(&file, "203.0.113.16/28\n").unwrap();
    lists.refresh_all().await;
    assert_eq!(lists.check("OurBot", ip("203.0.113.16")), matched(&name, "203.0.113.16/28"));

    std::fs::write(&file, "203.0.113.16/28\n203.0.113.33/28\n").unwrap();
    lists.refresh_all().await;
    assert_eq!(lists.check("OurBot", ip("203.0.113.16")), matched(&name, "203.0.113.16/28"));
    let s = one_status(&lists);
    assert_eq!(
        s.last_error.as_deref(),
        Some(r#"invalid list: line 2: "203.0.113.33/28": host bits set (the network is 203.0.113.32/28)"#)
    );
    assert_eq!((s.prefixes, s.refreshes, s.failures), (1, 1, 1));

    // A file missing at start: nothing loaded, and the error says why.
    let gone = dir.join("gone.txt");
    let lists = Lists::new(ListsConfig {
        agents: vec![("OurBot".into(), vec![ListSource::File(gone)])],
        ..ListsConfig::default()
    });
    assert_eq!(lists.check("OurBot", ip("203.0.113.1")), IpCheck::NotLoaded);
    let s = one_status(&lists);
    assert!(s.last_error.as_deref().is_some_and(|e| e.starts_with("cannot read the file: ")), "{s:?}");
}

#[tokio::test]
async fn a_corrupt_persisted_copy_is_reported_and_refetched() {
    let dir = TempDir::new("lists-corrupt");
    let server = Server::start();
    let url = server.url("/g.json");
    server.set("/g.json", 200, "application/json", LIST_A);
    let name = crawlgate_identity::lists::persisted_name(&url);
    let path = dir.write(&name, "{\"source\": ");
    let lists = Lists::new(config(&dir, vec![("Googlebot", vec![ListSource::Url(url.clone())])]));
    assert_eq!(lists.check("Googlebot", ip("66.249.64.1")), IpCheck::NotLoaded);
    assert_eq!(
        one_status(&lists).last_error,
        Some(format!("persisted copy {}: EOF while parsing a value at line 1 column 11", path.display()))
    );
    lists.refresh_all().await;
    assert_eq!(lists.check("Googlebot", ip("66.249.64.1")), matched(&url, "66.249.64.0/27"));
    assert_eq!(one_status(&lists).last_error, None);
    server.stop();
}

#[tokio::test]
async fn run_fetches_missing_lists_at_start() {
    let dir = TempDir::new("lists-run");
    let server = Server::start();
    let url = server.url("/g.json");
    server.set("/g.json", 200, "application/json", LIST_A);
    let lists = Lists::new(config(&dir, vec![("Googlebot", vec![ListSource::Url(url.clone())])]));
    let task = tokio::spawn(lists.clone().run());
    // Upper bound for waiting only.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while lists.check("Googlebot", ip("66.249.64.1")) != matched(&url, "66.249.64.0/27") {
        assert!(tokio::time::Instant::now() < deadline, "not refreshed: {:?}", lists.status());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    task.abort();
    assert_eq!(server.hits("/g.json"), 1);
    server.stop();
}

#[tokio::test]
async fn no_match_needs_every_list_of_the_token() {
    let server = Server::start();
    server.set("/a.json", 200, "application/json", LIST_A);
    server.set("/b.json", 503, "text/plain", "");
    let (a, b) = (server.url("/a.json"), server.url("/b.json"));
    let lists = Lists::new(ListsConfig {
        agents: vec![("Google-Agent".into(), vec![ListSource::Url(a.clone()), ListSource::Url(b)])],
        ..ListsConfig::default()
    });
    lists.refresh_all().await;
    assert_eq!(lists.check("Google-Agent", ip("66.249.64.1")), matched(&a, "66.249.64.0/27"));
    // Not in A, and B could not be fetched: the address may be in B.
    assert_eq!(lists.check("Google-Agent", ip("192.0.2.1")), IpCheck::NotLoaded);
    server.set("/b.json", 200, "text/plain", "198.51.100.0/24\n");
    lists.refresh_all().await;
    assert_eq!(lists.check("Google-Agent", ip("192.0.2.1")), IpCheck::NoMatch);
    server.stop();
}
