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
            "p.toml:29:30: payment.dialects: `paypal` is not a dialect; use \"crawler-price\", \"license\" or \"x402\"\np.toml:29:40: payment.dialects: `crawler-price` is listed twice\np.toml:30:9: payment.terms must be an absolute http(s) URL without spaces, quotes or angle brackets, found `/terms`\np.toml:31:15: payment.instance_id must be 1 to 64 characters of A-Z, a-z, 0-9, '.', '_', '-', found `a b`\np.toml:32:10: payment.ledger must be an absolute file path, found `rel.sqlite`",
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
        "p.toml:6:11: group.enforce = \"charge\" cannot apply to the `*` group: its requests name no crawler, and only a crawler proven by its signature can be charged; name the crawlers in a group of their own\np.toml:6:11: group.enforce = \"charge\": charges need a ledger; set [payment] ledger (an absolute file path) or [verification] state_dir"
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
