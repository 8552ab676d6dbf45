//! The decision as one value, table-tested: each row is a request and the
//! whole verdict in one line. The rows marked "fault" are the faults found
//! where features met (issue 33), each now decided in one place.

use super::*;
use crate::load;
use crate::verification::{Method, Verification};

const POLICY: &str = r#"
[upstream]
servers = ["127.0.0.1:8000"]

[verification]

[markdown]
paths = ["/docs/"]

[limits]

[[group]]
user_agents = ["*"]
disallow = ["/admin/"]

[[group]]
user_agents = ["GPTBot"]
disallow = ["/"]
enforce = "off"
verify = "none"

[[group]]
user_agents = ["Googlebot"]
disallow = ["/nogoogle/"]
enforce = "block"
rate = "2/s"

[[group]]
user_agents = ["ExampleBot"]
enforce = "charge"
price = "USD 0.01"

[payment]
ledger = "/tmp/ledger.sqlite"
dialects = ["x402"]

[payment.x402]
facilitator = "https://facilitator.example"
pay_to = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"
network = "eip155:84532"
asset = "0x036CbD53842c5426634e7929541eC2318f3dCF7e"
decimals = 6
"#;

/// The verdict in one line: route, agent (or claim, or observed crawler),
/// group, violation, limit, price and dialects, form, caching.
fn line(v: &Verdict<'_, '_>) -> String {
    let decision = match &v.route {
        Route::BadRequest(e) => return format!("400 {e}"),
        Route::Serve { file, .. } => return format!("serve {}", file.as_str()),
        Route::NotFound { file, .. } => return format!("404 {}", file.as_str()),
        Route::Replayed { .. } => return "429 replay".to_string(),
        Route::Block { decision, .. } => ("block", decision),
        Route::Forward { decision, .. } => ("forward", decision),
    };
    let (kind, d) = decision;
    let mut out = format!(
        "{kind} {} agent={} group={}",
        d.action().as_str(),
        d.crawler().unwrap_or("-"),
        d.group.map_or("-", |g| g.name)
    );
    if d.violation() {
        out.push_str(" violation");
    }
    if let Some(l) = &v.limit {
        out.push_str(&format!(" limit={}", l.limit));
    }
    if let Some(p) = v.price {
        let names: Vec<&str> = v.dialects.iter().map(|d| d.as_str()).collect();
        out.push_str(&format!(" price={p} [{}]", names.join(",")));
    }
    match v.form {
        Negotiation::NotCovered => {}
        Negotiation::Html => out.push_str(" form=html"),
        Negotiation::Markdown => out.push_str(" form=markdown"),
    }
    if v.cache == CacheRule::Private {
        out.push_str(" private");
    }
    out
}

fn facts<'r>(ua: &'r str, target: &'r str) -> RequestFacts<'r> {
    RequestFacts {
        method: "GET",
        raw_target: target.as_bytes(),
        user_agent: UserAgentField::One(ua),
        upgrade: UpgradeField::Absent,
        client: Some("192.0.2.1".parse().unwrap_or_else(|e| panic!("{e}"))),
        host: Some("site.example"),
        accept: None,
    }
}

const WS: &[u8] = b"websocket";

#[test]
fn verdicts() {
    let loaded = load(POLICY, "t.toml").unwrap_or_else(|e| panic!("{e}"));
    // The origin's robots.txt names longer Google tokens (fault 5).
    let merged = loaded
        .policy
        .merge_origin(b"User-agent: Googlebot-Image\nDisallow: /\n\nUser-agent: Googlebot-News\nAllow: /\n")
        .unwrap_or_else(|e| panic!("{e}"));
    let p = &merged.policy;
    let none = Verification::NotApplicable;
    let verified = Verification::Verified(Method::Ip);
    let spoofed = Verification::Spoofed(Method::Ip);
    let amazon = "Mozilla/5.0 (compatible; Amazonbot/0.1)";
    type Row = (&'static str, &'static str, UpgradeField<'static>, Option<&'static str>, Verification, &'static str);
    let rows: &[Row] = &[
        // A browser: `*`, never a violation.
        ("Firefox/130.0", "/admin/x", UpgradeField::Absent, None, none, "forward allowed agent=- group=*"),
        // Fault 6: `off` does not act, but sees: GPTBot's disallow, a
        // catalog crawler under `*`, and a spoofed claim sent to `*`.
        ("GPTBot/1.2", "/a", UpgradeField::Absent, None, none, "forward allowed agent=GPTBot group=GPTBot violation"),
        (amazon, "/admin/x", UpgradeField::Absent, None, none, "forward allowed agent=Amazonbot group=* violation"),
        (amazon, "/a", UpgradeField::Absent, None, none, "forward allowed agent=Amazonbot group=*"),
        ("Googlebot/2.1", "/admin/x", UpgradeField::Absent, None, spoofed, "forward allowed agent=Googlebot group=* violation"),
        // The verified crawler: its group, its limit.
        ("Googlebot/2.1", "/a", UpgradeField::Absent, None, verified, "forward allowed agent=Googlebot group=Googlebot limit=2/s burst 1"),
        ("Googlebot/2.1", "/nogoogle/a", UpgradeField::Absent, None, verified, "block blocked agent=Googlebot group=Googlebot violation"),
        // Fault 5: the group of the crawler's own product token, where the
        // served robots.txt has one.
        ("Googlebot-Image/1.0", "/public/a.png", UpgradeField::Absent, None, none, "forward allowed agent=Googlebot-Image group=Googlebot-Image violation"),
        ("Googlebot-News", "/nogoogle/x", UpgradeField::Absent, None, none, "forward allowed agent=Googlebot-News group=Googlebot-News"),
        // Faults 1 and 4: a price always comes with the dialects in force
        // and keeps the response from shared caches.
        ("ExampleBot/1.0", "/a", UpgradeField::Absent, None, none, "forward allowed agent=ExampleBot group=ExampleBot price=USD 0.01 [x402] private"),
        ("ExampleBot/1.0", "/robots.txt", UpgradeField::Absent, None, none, "serve robots.txt"),
        // Fault 2: no upgrade on a charged path; elsewhere as `upgrades`
        // says.
        ("ExampleBot/1.0", "/a", UpgradeField::One(WS), None, none, "400 a charged path cannot be upgraded to another protocol (the connection would carry content no charge covers)"),
        ("GPTBot/1.2", "/a", UpgradeField::One(WS), None, none, "forward allowed agent=GPTBot group=GPTBot violation"),
        ("GPTBot/1.2", "/a", UpgradeField::One(b"h2c"), None, none, "400 only Upgrade: websocket is allowed (server.upgrades = \"websocket\")"),
        ("GPTBot/1.2", "/a", UpgradeField::Many, None, none, "400 only Upgrade: websocket is allowed (server.upgrades = \"websocket\")"),
        // The form: Markdown where covered and preferred.
        ("GPTBot/1.2", "/docs/a", UpgradeField::Absent, Some("text/markdown, text/html;q=0.5"), none, "forward allowed agent=GPTBot group=GPTBot violation form=markdown"),
        ("GPTBot/1.2", "/docs/a", UpgradeField::Absent, Some("text/html"), none, "forward allowed agent=GPTBot group=GPTBot violation form=html"),
        ("ExampleBot/1.0", "/docs/a", UpgradeField::Absent, Some("text/markdown"), none, "forward allowed agent=ExampleBot group=ExampleBot price=USD 0.01 [x402] form=markdown private"),
    ];
    for (ua, target, upgrade, accept, verification, want) in rows {
        let f = RequestFacts { upgrade: *upgrade, accept: *accept, ..facts(ua, target) };
        let id = Identity { verification: *verification, proven: None, replayed: false, unparsable: None };
        assert_eq!(line(&p.decide_request(&f, id)), *want, "{ua} {target} {upgrade:?} {verification:?}");
    }
}

/// Without a client address (a Unix socket) nothing is limited; a policy
/// that charges nothing prices nothing.
#[test]
fn no_address_no_limit_and_no_charge_no_price() {
    let loaded = load(POLICY, "t.toml").unwrap_or_else(|e| panic!("{e}"));
    let id = Identity { verification: Verification::Verified(Method::Ip), ..Identity::default() };
    let f = RequestFacts { client: None, ..facts("Googlebot/2.1", "/a") };
    assert_eq!(line(&loaded.policy.decide_request(&f, id)), "forward allowed agent=Googlebot group=Googlebot");
    let free = POLICY.replace("enforce = \"charge\"\nprice = \"USD 0.01\"\n", "");
    let free = &free[..free.find("[payment]").unwrap_or(free.len())];
    let loaded = load(free, "t.toml").unwrap_or_else(|e| panic!("{e}"));
    let f = facts("ExampleBot/1.0", "/a");
    assert_eq!(
        line(&loaded.policy.decide_request(&f, Identity::default())),
        "forward allowed agent=ExampleBot group=ExampleBot"
    );
}
