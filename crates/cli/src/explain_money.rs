//! What `crawlgate explain` says about the money of a charge group: the
//! price of the path and the line it is written on, the dialects that can
//! take it, and what the proxy answers a request that is not signed and
//! one that is signed but names no price (docs/payment.md; the proxy's
//! order of dialects is `crawlgate_proxy`'s `paid::request`).

use crawlgate_policy::payment::dialects::x402_amount;
use crawlgate_policy::payment::{Dialect, PriceSource};
use crawlgate_policy::{Decision, Enforce, Policy};

/// The money of a request `d` decides on `path`: `None` outside a charge
/// group or on a disallowed path (a block, never charged); `{"free":
/// true}` on a path never charged; else the price, its source
/// (`FILE:LINE`), the dialects and the two refusals.
pub fn of(policy: &Policy, file: &str, d: &Decision<'_>, path: &str) -> Option<serde_json::Value> {
    if d.enforce != Enforce::Charge || !d.allowed {
        return None;
    }
    let group = d.group?;
    let Some(PriceSource { price, line, path: matched }) = policy.price_source(group.index, path) else {
        return Some(serde_json::json!({"free": true}));
    };
    let pay = policy.payment();
    let x402 = pay.offers(Dialect::X402) && pay.x402.as_ref().is_some_and(|x| x402_amount(x, &price).is_ok());
    let mut dialects = Vec::new();
    for dialect in [Dialect::CrawlerPrice, Dialect::License] {
        if pay.offers(dialect) {
            dialects.push(dialect.as_str());
        }
    }
    if x402 {
        dialects.push(Dialect::X402.as_str());
    }
    // Without a signature Cloudflare's dialect cannot name a payer: the
    // other offered dialects ask for their own credentials first.
    let other = if x402 {
        Some("402 Payment Required with PAYMENT-REQUIRED (x402: PAYMENT-SIGNATURE header is required)")
    } else if pay.offers(Dialect::License) {
        Some("401 Unauthorized with WWW-Authenticate: License (the request carries no License token)")
    } else {
        None
    };
    let unsigned =
        other.map_or_else(|| "400 Bad Request (crawler-error: StrongAuthRequired)".to_string(), str::to_string);
    let signed = if pay.offers(Dialect::CrawlerPrice) {
        format!("402 Payment Required with crawler-price: {price}")
    } else {
        unsigned.clone()
    };
    let source = match &matched {
        Some(p) => format!("{file}:{line}: [[group.prices]] path = \"{p}\""),
        None => format!("{file}:{line}: group.price of group `{}`", group.name),
    };
    Some(serde_json::json!({
        "price": price.to_string(),
        "source": source,
        "dialects": dialects,
        "unsigned": unsigned,
        "signed_without_price": signed,
    }))
}

/// The lines `explain` prints under a URL for [`of`]'s value.
pub fn print(o: &serde_json::Value) {
    let s = |v: &serde_json::Value| v.as_str().unwrap_or("-").to_string();
    if o["free"] == true {
        outln!("  price:    none (a free path: never charged)");
        return;
    }
    outln!("  price:    {} ({})", s(&o["price"]), s(&o["source"]));
    let dialects: Vec<String> = o["dialects"].as_array().into_iter().flatten().map(s).collect();
    outln!("  dialects: {}", dialects.join(", "));
    outln!("  unsigned: {}", s(&o["unsigned"]));
    outln!("  no price: {} (signed, without crawler-exact-price or crawler-max-price)", s(&o["signed_without_price"]));
}
