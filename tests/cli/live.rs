//! `crawlgate explain --live`: the verdict the running proxy would reach,
//! from a served IP list (fetched over HTTP) and forward-confirmed reverse
//! DNS against a real DNS server on 127.0.0.1 (`crawlgate_testkit::dns`).

use crawlgate_e2e::{arg, code, crawlgate, stderr, stdout};
use crawlgate_testkit::dns::DnsServer;
use crawlgate_testkit::serve::Server;
use crawlgate_testkit::TempDir;

fn ip(s: &str) -> std::net::IpAddr {
    s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn run(args: &[&str]) -> (i32, String, String) {
    let out = crawlgate(args);
    (code(&out), stdout(&out), stderr(&out))
}

/// A DNS server where 192.0.2.5 is a forward-confirmed Googlebot and
/// 192.0.2.6 claims a googlebot.com name that does not point back.
fn dns() -> DnsServer {
    let dns = DnsServer::start();
    dns.add_ptr(ip("192.0.2.5"), "crawl-192-0-2-5.googlebot.com", 300);
    dns.add_addr("crawl-192-0-2-5.googlebot.com", ip("192.0.2.5"), 300);
    dns.add_ptr(ip("192.0.2.6"), "fake.googlebot.com", 300);
    dns.add_addr("fake.googlebot.com", ip("192.0.2.1"), 300);
    dns
}

/// Googlebot verified by reverse DNS only (blocked when spoofed); GPTBot by
/// a list served over HTTP holding 127.0.0.2 (blocked when spoofed).
#[test]
fn explain_live_gives_the_proxys_verdict() {
    let dns = dns();
    let lists = Server::start();
    lists.set("/gptbot.json", 200, "application/json", r#"{"prefixes": [{"ipv4Prefix": "127.0.0.2/32"}]}"#);
    let list = lists.url("/gptbot.json");
    let dir = TempDir::new("cli-explain-live");
    let p = dir.write(
        "p.toml",
        format!(
            "[upstream]\nservers = [\"127.0.0.1:8000\"]\n\n[server]\ntrusted_proxies = [\"127.0.0.1/32\"]\n\n\
             [verification]\n[verification.lists]\nGPTBot = [\"{list}\"]\n[verification.dns]\nnameservers = [\"{}\"]\ntimeout = \"5s\"\n\n\
             [[group]]\nuser_agents = [\"*\"]\n\n\
             [[group]]\nuser_agents = [\"Googlebot\"]\nverify = \"rdns\"\non_spoofed = \"block\"\n\n\
             [[group]]\nuser_agents = [\"GPTBot\"]\nverify = \"ip\"\non_spoofed = \"block\"\n",
            dns.addr()
        ),
    );
    let c = arg(&p);
    let explain = |ua: &str, client: &str| run(&["explain", "-c", c, "--live", "-A", ua, "--client-ip", client, "/a"]);
    assert_eq!(
        explain("Googlebot/2.1", "192.0.2.5"),
        (
            0,
            "agent:    Googlebot (catalog: Google, search-engine, ai-training)\nclient:   192.0.2.5\nverify:   verified(rdns)\n  \
             rdns:     verified (ptr crawl-192-0-2-5.googlebot.com (forward-confirmed))\ngroup:    Googlebot (line 17)\n\
             enforce:  off\n\n/a: allowed (no rule matched) -> pass\n"
                .to_string(),
            String::new()
        )
    );
    assert_eq!(
        explain("Googlebot/2.1", "192.0.2.6"),
        (
            0,
            "agent:    Googlebot (catalog: Google, search-engine, ai-training)\nclient:   192.0.2.6\nverify:   spoofed(rdns) -> on failure: block\n  \
             rdns:     spoofed (rdns mismatch: PTR of 192.0.2.6: fake.googlebot.com resolves to 192.0.2.1, not 192.0.2.6)\ngroup:    Googlebot (line 17)\n\
             enforce:  off\n\n/a: allowed (no rule matched) -> block (403)\n  reason:   spoofed (not a robots.txt violation)\n"
                .to_string(),
            String::new()
        )
    );
    assert_eq!(
        explain("GPTBot/1.0", "127.0.0.2"),
        (
            0,
            format!(
                "agent:    GPTBot (catalog: OpenAI, ai-training)\nclient:   127.0.0.2\nverify:   verified(ip)\n  \
                 ip:       verified (list {list} prefix 127.0.0.2/32)\ngroup:    GPTBot (line 22)\nenforce:  off\n\n\
                 /a: allowed (no rule matched) -> pass\n"
            ),
            String::new()
        )
    );
    assert_eq!(
        explain("GPTBot/1.0", "127.0.0.3"),
        (
            0,
            "agent:    GPTBot (catalog: OpenAI, ai-training)\nclient:   127.0.0.3\nverify:   spoofed(ip) -> on failure: block\n  \
             ip:       spoofed (in none of the lists)\ngroup:    GPTBot (line 22)\nenforce:  off\n\n\
             /a: allowed (no rule matched) -> block (403)\n  reason:   spoofed (not a robots.txt violation)\n"
                .to_string(),
            String::new()
        )
    );
    assert_eq!(lists.handle().hits("/gptbot.json"), 4, "each --live run fetches the list (no state_dir keeps a copy)");
    assert_eq!(dns.ptr_queries(ip("192.0.2.5")), 1);
}
