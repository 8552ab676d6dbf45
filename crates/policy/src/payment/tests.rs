//! `[payment]`, charge groups and prices as a policy file writes them.

use crate::load;

/// A policy with a charge group for `ExampleBot`, whose key is pinned.
fn policy(extra_group: &str, payment: &str) -> String {
    format!(
        r#"
[server]
trusted_proxies = ["10.0.0.0/8"]

[upstream]
servers = ["127.0.0.1:8000"]

[robots_txt]
sitemaps = ["https://example.com/maps/site.xml"]

[[group]]
user_agents = ["*"]
disallow = []

[[group]]
user_agents = ["ExampleBot"]
disallow = ["/private/"]
enforce = "charge"
{extra_group}

[verification]
state_dir = "/var/lib/crawlgate"

[[verification.keys]]
token = "ExampleBot"
jwk = '{{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}}'

{payment}
"#
    )
}

fn errors(src: &str) -> String {
    match load(src, "p.toml") {
        Ok(_) => String::new(),
        Err(d) => d.to_string(),
    }
}

#[test]
fn a_charge_group_prices_its_paths() {
    let src = policy(
        r#"price = "USD 0.01"
prices = [{ path = "/premium/", price = "USD 0.05" }, { path = "/premium/gold/", price = "EUR 1" }, { path = "/*.pdf$", price = "USD 0.10" }]"#,
        "[payment]\nterms = \"https://example.com/terms\"\nfree = [\"/press/\"]\ninstance_id = \"edge-1\"",
    );
    let p = load(&src, "p.toml").unwrap().policy;
    let g = p.group_names().position(|n| n == "ExampleBot").unwrap();
    let star = p.group_names().position(|n| n == "*").unwrap();
    let cases: &[(usize, &str, Option<&str>)] = &[
        (g, "/", Some("USD 0.01")),
        (g, "/a/b?c", Some("USD 0.01")),
        (g, "/premium/x", Some("USD 0.05")),
        (g, "/premium/gold/x", Some("EUR 1.00")),
        (g, "/premium/a.pdf", Some("USD 0.05")),
        (g, "/docs/a.pdf", Some("USD 0.10")),
        (g, "/docs/a.pdf?x", Some("USD 0.01")),
        (g, "/robots.txt", None),
        (g, "/robots.txt?x", None),
        (g, "/agents.txt", None),
        (g, "/sitemap.xml", None),
        (g, "/maps/site.xml", None),
        (g, "/security.txt", None),
        (g, "/.well-known/security.txt", None),
        (g, "/crawlers.json", None),
        (g, "/press/release", None),
        (g, "/pressx", Some("USD 0.01")),
        (star, "/", None),
    ];
    for (group, path, want) in cases {
        let got = p.price(*group, path).map(|p| p.to_string());
        assert_eq!(got.as_deref(), *want, "{path}");
    }
    // Where each price is written, for `explain`.
    let source = |path: &str| p.price_source(g, path).map(|s| (s.price.to_string(), s.line, s.path));
    assert_eq!(source("/a"), Some(("USD 0.01".into(), 19, None)));
    assert_eq!(source("/premium/gold/x"), Some(("EUR 1.00".into(), 20, Some("/premium/gold/".into()))));
    assert_eq!(source("/press/release"), None);
    assert_eq!(p.price_source(star, "/"), None);
    let pay = p.payment();
    assert_eq!(pay.terms_link().as_deref(), Some("<https://example.com/terms>; rel=\"terms-of-service\""));
    assert_eq!(pay.ledger.as_deref(), Some("/var/lib/crawlgate/ledger.sqlite"));
    assert_eq!(pay.instance_id.as_deref(), Some("edge-1"));
    assert!(pay.charging);
    assert_eq!(pay.dialects, [crate::payment::Dialect::CrawlerPrice]);
    // A disallowed path is blocked, at any price.
    let d = p.decide("ExampleBot/1.0", "/private/x");
    assert_eq!(d.action(), crate::Action::Block);
    assert_eq!(p.decide("ExampleBot/1.0", "/x").action(), crate::Action::Pass);
}

#[test]
fn check_rejects_what_cannot_be_charged() {
    let cases: &[(String, &str)] = &[
        (policy("", ""), "p.toml:18:11: group.enforce = \"charge\" needs a price (for example price = \"USD 0.01\")"),
        (policy("price = \"0.01\"", ""), "p.toml:19:9: group.price: `0.01` has no currency: write the ISO 4217 code first (for example `USD 0.01`)"),
        (policy("price = \"USD 0.001\"", ""), "p.toml:19:9: group.price: `USD 0.001` has more decimals than USD's minor unit (2)"),
        (policy("price = \"USD 0\"", ""), "p.toml:19:9: group.price: `USD 0` is below the minimum price of one minor unit (USD 0.01)"),
        (
            policy("price = \"USD 1\"\nprices = [{ path = \"x\", price = \"USD 1\" }, { path = \"/a\", price = \"1\" }]", ""),
            "p.toml:20:20: group.prices.path: pattern `x` must start with '/' or '*'\np.toml:20:67: group.prices.price: `1` has no currency: write the ISO 4217 code first (for example `USD 0.01`)",
        ),
        (
            policy("price = \"USD 1\"", "[payment]\ndialects = [\"crawler-price\", \"paypal\", \"crawler-price\"]\nterms = \"/terms\"\ninstance_id = \"a b\"\nledger = \"rel.sqlite\""),
            "p.toml:29:30: payment.dialects: `paypal` is not a dialect; use \"crawler-price\", \"license\" or \"x402\"\np.toml:29:40: payment.dialects: `crawler-price` is listed twice\np.toml:30:9: payment.terms must be an absolute http(s) URL without spaces, quotes or angle brackets, found `/terms`\np.toml:31:15: payment.instance_id must be 1 to 64 characters of A-Z, a-z, 0-9, '.', '_', '-', found `a b`\np.toml:32:10: payment.ledger must be an absolute file path or a postgres:// URL, found `rel.sqlite`",
        ),
    ];
    for (src, want) in cases {
        assert_eq!(errors(src), *want, "{src}");
    }
}

#[test]
fn charge_needs_a_signature_a_crawler_and_a_ledger() {
    let star = "[upstream]\nservers = [\"127.0.0.1:8000\"]\n\n[[group]]\nuser_agents = [\"*\"]\nenforce = \"charge\"\nprice = \"USD 0.01\"\n";
    assert_eq!(
        errors(star),
        "p.toml:6:11: group.enforce = \"charge\" cannot apply to the `*` group: its requests name no crawler, and only a crawler proven by its signature can be charged; name the crawlers in a group of their own\np.toml:6:11: group.enforce = \"charge\": charges need a ledger; set [payment] ledger (an absolute file path or a postgres:// URL) or [verification] state_dir"
    );
    // GPTBot has IP lists, no Web Bot Auth key: it cannot be charged.
    let unsigned = "[upstream]\nservers = [\"127.0.0.1:8000\"]\n\n[[group]]\nuser_agents = [\"GPTBot\"]\nenforce = \"charge\"\nprice = \"USD 0.01\"\n\n[verification]\n\n[payment]\nledger = \"/tmp/l.sqlite\"\n";
    assert_eq!(
        errors(unsigned),
        "p.toml:6:11: group.enforce = \"charge\": no token of group `GPTBot` can be verified by a Web Bot Auth signature, and only a signed request can be charged; pin its key under [[verification.keys]], or name a crawler whose Signature-Agent the catalog knows, and let verify allow \"signature\""
    );
    let price_alone = "[upstream]\nservers = [\"127.0.0.1:8000\"]\n\n[[group]]\nuser_agents = [\"GPTBot\"]\nenforce = \"block\"\ndisallow = [\"/\"]\nprice = \"USD 0.01\"\n";
    assert_eq!(errors(price_alone), "p.toml:8:9: group.price applies only with enforce = \"charge\"");
    let cf = policy("price = \"USD 1\"", "[payment]\ncloudflare_origin = true")
        .replace("trusted_proxies = [\"10.0.0.0/8\"]", "");
    assert_eq!(
        errors(&cf),
        "p.toml:29:21: payment.cloudflare_origin = true needs server.trusted_proxies listing Cloudflare's addresses: a cf-pay-per-crawl field is obeyed only from a trusted proxy, since any client can send one"
    );
}

const RSL: &str = "[payment.rsl]\nissuer = \"https://license.example\"\njwks = \"https://license.example/jwks.json\"\naudience = [\"https://example.com\"]";
const X402: &str = "[payment.x402]\nfacilitator = \"https://x402.example\"\npay_to = \"0x209693Bc6afc0C5328bA36FaF03C514EF312287C\"\nnetwork = \"eip155:8453\"\nasset = \"0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913\"\ndecimals = 6";

#[test]
fn the_license_and_x402_dialects_compile_their_tables() {
    let src = policy(
        "price = \"USD 0.01\"\nprices = [{ path = \"/cheap/\", price = \"USD 0.05\" }]",
        &format!("[payment]\ndialects = [\"license\", \"x402\", \"crawler-price\"]\n{RSL}\n{X402}"),
    );
    let p = load(&src, "p.toml").unwrap().policy;
    let pay = p.payment();
    assert_eq!(pay.rsl.as_ref().map(|r| r.issuer.as_str()), Some("https://license.example"));
    let x = pay.x402.as_ref().unwrap();
    assert_eq!(x.network, "eip155:8453");
    let g = p.group_names().position(|n| n == "ExampleBot").unwrap();
    let price = p.price(g, "/cheap/a").unwrap();
    assert_eq!(super::dialects::x402_amount(x, &price), Ok("50000".into()));
    let price = p.price(g, "/a").unwrap();
    assert_eq!(super::dialects::x402_amount(x, &price), Ok("10000".into()));
}

#[test]
fn dialects_and_their_tables_go_together() {
    let cases: Vec<(String, &str)> = vec![
        (
            "[payment]\ndialects = [\"license\"]".into(),
            "p.toml:29:13: payment.dialects offers \"license\" but there is no [payment.rsl] table",
        ),
        (
            "[payment]\ndialects = [\"crawler-price\", \"x402\"]".into(),
            "p.toml:29:30: payment.dialects offers \"x402\" but there is no [payment.x402] table",
        ),
        (format!("[payment]\n{RSL}"), "p.toml:29:1: payment.rsl is set but payment.dialects does not offer \"license\""),
        (
            format!("[payment]\ndialects = [\"x402\"]\n{X402}\ndecimals = 1").replace("decimals = 6\n", ""),
            "p.toml:18:11: group `ExampleBot`: the price USD 0.01 cannot be paid through x402: the asset has 1 decimals, fewer than the price needs",
        ),
        (
            format!("[payment]\ndialects = [\"x402\"]\n{X402}\ncurrency = \"EUR\""),
            "p.toml:18:11: group `ExampleBot`: the price USD 0.01 cannot be paid through x402: it is in USD, the x402 asset is paid in EUR",
        ),
    ];
    for (payment, want) in cases {
        let src = policy("price = \"USD 0.01\"", &payment);
        assert_eq!(errors(&src), want, "{payment}");
    }
}

#[test]
fn a_charge_group_without_signatures_is_fine_when_no_dialect_needs_them() {
    let src = policy("price = \"USD 0.01\"", &format!("[payment]\ndialects = [\"license\"]\n{RSL}"))
        .replace("token = \"ExampleBot\"", "token = \"OtherBot\"");
    assert_eq!(errors(&src), "");
    let src = policy("price = \"USD 0.01\"", "").replace("token = \"ExampleBot\"", "token = \"OtherBot\"");
    assert!(errors(&src).contains("no token of group `ExampleBot` can be verified by a Web Bot Auth signature"));
}

#[test]
fn the_resource_url_names_the_site_not_a_forged_host() {
    let named = policy("price = \"USD 0.01\"", "")
        .replace("[server]\n", "[server]\nhosts = [\"www.example.com\", \"example.com:8443\"]\n");
    let p = load(&named, "p.toml").unwrap().policy;
    let pay = p.payment();
    let cases = [
        (Some("www.example.com"), "https://www.example.com/a?b=1"),
        (Some("WWW.Example.COM"), "https://www.example.com/a?b=1"),
        (Some("example.com:8443"), "https://example.com:8443/a?b=1"),
        (Some("evil.example"), "https://www.example.com/a?b=1"),
        (Some("evil.example@www.example.com"), "https://www.example.com/a?b=1"),
        (None, "https://www.example.com/a?b=1"),
    ];
    for (host, url) in cases {
        assert_eq!(pay.resource_url(host, "/a?b=1"), url, "{host:?}");
    }
    // Nothing names the site: the request's host, as sent.
    let p = load(&policy("price = \"USD 0.01\"", ""), "p.toml").unwrap().policy;
    assert_eq!(p.payment().resource_url(Some("127.0.0.1:8080"), "/a"), "https://127.0.0.1:8080/a");
    assert_eq!(p.payment().resource_url(None, "/a"), "https:///a");
}
