//! The `Verifier` façade over a real policy: IP lists from a local file and
//! forward-confirmed reverse DNS from the test DNS server on 127.0.0.1.

#![allow(clippy::panic)]

use std::net::IpAddr;
use std::time::Duration;

use crawlgate_identity::{Evidence, Verdict, Verifier, VerifierConfig};
use crawlgate_policy::verification::{Method, Verification};
use crawlgate_testkit::dns::DnsServer;
use crawlgate_testkit::temp::TempDir;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn policy(list: &str, dns: &DnsServer) -> crawlgate_policy::Policy {
    let src = format!(
        "[upstream]\nservers = [\"127.0.0.1:8000\"]\n[verification]\n[verification.lists]\nGPTBot = [\"{list}\"]\n[verification.dns]\nnameservers = [\"{}\"]\ntimeout = \"2s\"\n[[group]]\nuser_agents = [\"GPTBot\", \"Googlebot\", \"ClaudeBot\"]\n",
        dns.addr()
    );
    crawlgate_policy::load(&src, "p.toml").unwrap_or_else(|e| panic!("{e}")).policy
}

fn verifier(p: &crawlgate_policy::Policy) -> Verifier {
    let tokens = p.tokens().filter_map(|t| p.claim_token(t)).map(|c| (c.agent, c.verify)).collect::<Vec<_>>();
    Verifier::new(VerifierConfig::from_settings(&p.settings().verification, tokens)).unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test]
async fn outcomes_by_method() {
    let dir = TempDir::new("verifier");
    let list = dir.write("gptbot.txt", "127.0.0.2/32\n");
    let dns = DnsServer::start();
    dns.add_ptr(ip("192.0.2.5"), "crawl-192-0-2-5.googlebot.com", 300);
    dns.add_addr("crawl-192-0-2-5.googlebot.com", ip("192.0.2.5"), 300);
    dns.add_ptr(ip("192.0.2.6"), "fake.googlebot.com", 300);
    dns.add_addr("fake.googlebot.com", ip("192.0.2.1"), 300);
    let p = policy(&list.display().to_string(), &dns);
    let v = verifier(&p);
    let claim = |ua: &str| p.claim(ua).unwrap_or_else(|| panic!("{ua}"));
    let gpt = claim("GPTBot/1.0");
    let google = claim("Googlebot/2.1");

    let listed = v.verify_cached(&gpt, ip("127.0.0.2")).unwrap_or_default();
    assert_eq!(listed.verification, Verification::Verified(Method::Ip));
    assert_eq!(listed.evidence.to_string(), format!("list {} prefix 127.0.0.2/32", list.display()));
    let other = v.verify_cached(&gpt, ip("127.0.0.3")).unwrap_or_default();
    assert_eq!(
        other,
        Verdict {
            verification: Verification::Spoofed(Method::Ip),
            evidence: Evidence::NotListed,
            signed_token: None,
            signed_components: Vec::new(),
            signature: None
        }
    );
    assert_eq!(v.verify(Some(&gpt), ip("127.0.0.3"), None).await, other);

    // Googlebot: no cached answer yet, then a live lookup, then cached.
    assert_eq!(v.verify_cached(&google, ip("192.0.2.5")), None);
    let live = tokio::time::timeout(Duration::from_secs(10), v.verify(Some(&google), ip("192.0.2.5"), None))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(live.verification, Verification::Verified(Method::Rdns), "{live:?}");
    assert_eq!(live.evidence.to_string(), "ptr crawl-192-0-2-5.googlebot.com (forward-confirmed)");
    assert_eq!(v.verify_cached(&google, ip("192.0.2.5")), Some(live));
    let fake = v.verify(Some(&google), ip("192.0.2.6"), None).await;
    assert_eq!(fake.verification, Verification::Spoofed(Method::Rdns));

    // No source for ClaudeBot in a group verified by `any`: nothing can tell.
    let claude = claim("ClaudeBot/1.0");
    let none = Verdict {
        verification: Verification::Unverified,
        evidence: Evidence::NoSource,
        signed_token: None,
        signed_components: Vec::new(),
        signature: None,
    };
    assert_eq!(v.verify_cached(&claude, ip("127.0.0.2")), Some(none));
    // No claim and no signature: not applicable.
    assert_eq!(v.verify(None, ip("127.0.0.2"), None).await, Verdict::default());
}

/// YandexBot can be verified by reverse DNS only, and a client controls its
/// own reverse zone: a PTR that never answers leaves the claim unverified,
/// which by default now gets the `*` group (not YandexBot's), unless the
/// group says otherwise.
#[tokio::test]
async fn an_unanswered_ptr_does_not_give_an_rdns_only_group() {
    use crawlgate_policy::{Route, UserAgentField};
    let dns = DnsServer::start();
    dns.set_mode(crawlgate_testkit::dns::Mode::Drop);
    let load = |extra: &str| {
        let src = format!(
            "[upstream]\nservers = [\"127.0.0.1:8000\"]\n[verification]\n[verification.dns]\nnameservers = [\"{}\"]\ntimeout = \"300ms\"\n[[group]]\nuser_agents = [\"*\"]\ndisallow = [\"/private/\"]\n[[group]]\nuser_agents = [\"YandexBot\"]\n{extra}",
            dns.addr()
        );
        crawlgate_policy::load(&src, "p.toml").unwrap_or_else(|e| panic!("{e}")).policy
    };
    let ua = "Mozilla/5.0 (compatible; YandexBot/3.0)";
    for (extra, want_agent) in [("", None), ("on_unverified = \"log\"\n", Some("YandexBot"))] {
        let p = load(extra);
        let v = verifier(&p);
        let claim = p.claim(ua).unwrap_or_else(|| panic!("{ua}"));
        let verdict = tokio::time::timeout(Duration::from_secs(10), v.verify(Some(&claim), ip("192.0.2.77"), None))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(verdict.verification, Verification::Unverified, "{verdict:?}");
        assert!(verdict.evidence.to_string().contains("timed out"), "{}", verdict.evidence);
        let id = crawlgate_policy::Identity {
            verification: verdict.verification,
            proven: None,
            replayed: false,
            unparsable: None,
        };
        match p.route_with(false, b"/private/a", UserAgentField::One(ua), id) {
            Route::Forward { decision, .. } => {
                assert_eq!(decision.agent, want_agent, "{extra:?}");
                // The `*` group's rule decides when anonymous.
                assert_eq!(decision.rule.is_some(), want_agent.is_none(), "{extra:?}");
            }
            other => panic!("{extra:?}: {other:?}"),
        }
    }
}
