//! `[payment]` and a group's prices: validated with their positions.

use toml::Spanned;

use super::raw::{RawPathPrice, RawPayment};
use super::{Dialect, FreePaths, GroupCharge, PathPrice, PaymentSettings, Price, BUILTIN_FREE};
use crate::compile::ctx::Ctx;
use crate::pattern::Pattern;
use crate::policy::Group;
use crate::verification::{Method, VerificationSettings};

/// A charge group's `price` and `[[group.prices]]`: required with
/// `enforce = "charge"` (at `enforce_at`), refused without it.
pub(crate) fn group_charge(
    cx: &mut Ctx<'_>,
    charge_at: Option<usize>,
    price: Option<&Spanned<String>>,
    prices: &[Spanned<RawPathPrice>],
) -> Option<GroupCharge> {
    let Some(at) = charge_at else {
        if let Some(p) = price {
            cx.err(p, "group.price applies only with enforce = \"charge\"");
        }
        if let Some(p) = prices.first() {
            cx.err(p, "group.prices applies only with enforce = \"charge\"");
        }
        return None;
    };
    let Some(price) = price else {
        cx.err_at(at, "group.enforce = \"charge\" needs a price (for example price = \"USD 0.01\")");
        return None;
    };
    let line = cx.line(price);
    let price = parse(cx, "group.price", price)?;
    let mut out: Vec<PathPrice> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for entry in prices {
        let RawPathPrice { path, price } = entry.get_ref();
        let pattern = match Pattern::new(path.get_ref()) {
            Ok(p) => p,
            Err(e) => {
                cx.err(path, format!("group.prices.path: {e}"));
                continue;
            }
        };
        if seen.contains(path.get_ref()) {
            cx.err(path, format!("group.prices.path: `{}` has two prices (one price per path)", path.get_ref()));
            continue;
        }
        seen.push(path.get_ref().clone());
        let line = cx.line(price);
        if let Some(price) = parse(cx, "group.prices.price", price) {
            out.push(PathPrice { pattern, price, line });
        }
    }
    // Stable: equally specific entries keep their file order.
    out.sort_by_key(|p| std::cmp::Reverse(p.pattern.specificity()));
    Some(GroupCharge { price, line, prices: out, at })
}

fn parse(cx: &mut Ctx<'_>, key: &str, v: &Spanned<String>) -> Option<Price> {
    match Price::parse(v.get_ref()) {
        Ok(p) => Some(p),
        Err(e) => {
            cx.err(v, format!("{key}: {e}"));
            None
        }
    }
}

/// What `[payment]` compiles from beyond its own table.
pub(crate) struct Context<'a> {
    pub groups: &'a [Group],
    pub sitemaps: &'a [String],
    pub verification: &'a VerificationSettings,
    pub trusted_proxies: bool,
    /// The site's hosts (`server.hosts` and its fallbacks): the license
    /// tokens' default audience.
    pub site: &'a [String],
}

/// `[payment]` (defaults without it) and the free paths, with the checks
/// that need the whole policy: every charge group's tokens can be
/// verified by a Web Bot Auth signature, and the ledger has a place.
pub(crate) fn payment(cx: &mut Ctx<'_>, raw: Option<&RawPayment>, c: &Context<'_>) -> (PaymentSettings, FreePaths) {
    let mut s = PaymentSettings::default();
    let mut free = FreePaths { exact: BUILTIN_FREE.iter().map(|p| (*p).to_string()).collect(), patterns: Vec::new() };
    for url in c.sitemaps {
        if let Some(path) = url_path(url) {
            if !free.exact.contains(&path) {
                free.exact.push(path);
            }
        }
    }
    let charge_groups: Vec<&Group> = c.groups.iter().filter(|g| g.charge.is_some()).collect();
    s.charging = !charge_groups.is_empty();
    s.site = c.site.to_vec();
    let mut ledger_written = None;
    let mut spool_written = None;
    // A ledger written and refused already has its error.
    let mut ledger_refused = false;
    if let Some(raw) = raw {
        let RawPayment {
            terms,
            free: free_raw,
            ledger,
            ledger_spool,
            ledger_password_file,
            dialects,
            cloudflare_origin,
            instance_id,
            rsl,
            x402,
        } = raw;
        if let Some(t) = terms {
            match terms_url(t.get_ref()) {
                Ok(()) => s.terms = Some(t.get_ref().clone()),
                Err(e) => cx.err(t, e),
            }
        }
        for p in free_raw.iter().flatten() {
            match Pattern::new(p.get_ref()) {
                Ok(pattern) => {
                    s.free.push(p.get_ref().clone());
                    free.patterns.push(pattern);
                }
                Err(e) => cx.err(p, format!("payment.free: {e}")),
            }
        }
        if let Some(l) = ledger {
            s.ledger_at = Some(l.span().start);
            let v = l.get_ref();
            if super::is_postgres_url(v) {
                match super::check_postgres_url(v) {
                    Ok(()) => ledger_written = Some(v.clone()),
                    Err(e) => {
                        ledger_refused = true;
                        cx.err(l, format!("payment.ledger: the PostgreSQL URL {e}"))
                    }
                }
            } else if v.starts_with('/') && !v.ends_with('/') {
                ledger_written = Some(v.clone());
            } else {
                ledger_refused = true;
                cx.err(
                    l,
                    format!(
                        "payment.ledger must be an absolute file path or a postgres:// URL, found `{}`",
                        v.escape_debug()
                    ),
                );
            }
        }
        for (key, value, slot) in [
            ("ledger_spool", ledger_spool, &mut spool_written),
            ("ledger_password_file", ledger_password_file, &mut s.ledger_password_file),
        ] {
            let Some(v) = value else { continue };
            if v.get_ref().starts_with('/') && !v.get_ref().ends_with('/') {
                *slot = Some(v.get_ref().clone());
            } else {
                cx.err(
                    v,
                    format!("payment.{key} must be an absolute file path, found `{}`", v.get_ref().escape_debug()),
                );
            }
        }
        if let Some(list) = dialects {
            let mut out = Vec::new();
            for d in list {
                match Dialect::from_name(d.get_ref()) {
                    Some(x) if out.contains(&x) => {
                        cx.err(d, format!("payment.dialects: `{}` is listed twice", d.get_ref()))
                    }
                    Some(x) => out.push(x),
                    None => cx.err(
                        d,
                        format!(
                            "payment.dialects: `{}` is not a dialect; use \"crawler-price\", \"license\" or \"x402\"",
                            d.get_ref()
                        ),
                    ),
                }
            }
            if list.is_empty() {
                cx.err_at(
                    0,
                    "payment.dialects is empty: offer at least one of \"crawler-price\", \"license\", \"x402\"",
                );
            }
            s.dialects = out;
        }
        if let Some(cf) = cloudflare_origin {
            s.cloudflare_origin = *cf.get_ref();
            if s.cloudflare_origin && !c.trusted_proxies {
                cx.err(cf, "payment.cloudflare_origin = true needs server.trusted_proxies listing Cloudflare's addresses: a cf-pay-per-crawl field is obeyed only from a trusted proxy, since any client can send one");
            }
        }
        if let Some(id) = instance_id {
            let v = id.get_ref();
            if !v.is_empty() && v.len() <= 64 && v.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)) {
                s.instance_id = Some(v.clone());
            } else {
                cx.err(
                    id,
                    format!(
                        "payment.instance_id must be 1 to 64 characters of A-Z, a-z, 0-9, '.', '_', '-', found `{}`",
                        v.escape_debug()
                    ),
                );
            }
        }
        s.rsl = rsl.as_ref().and_then(|r| super::dialects::rsl(cx, r, c.site));
        s.x402 = x402.as_ref().and_then(|x| super::dialects::x402(cx, x));
        dialect_tables(cx, &s, dialects.as_deref().unwrap_or_default(), rsl.is_some(), x402.is_some(), raw);
    }
    if let Some(x) = &s.x402 {
        for g in &charge_groups {
            let Some(charge) = &g.charge else { continue };
            for price in std::iter::once(&charge.price).chain(charge.prices.iter().map(|p| &p.price)) {
                if let Err(e) = super::dialects::x402_amount(x, price) {
                    cx.err_at(
                        charge.at,
                        format!("group `{}`: the price {price} cannot be paid through x402: {e}", g.name),
                    );
                }
            }
        }
    }
    // Only Cloudflare's dialect identifies the payer by its Web Bot Auth
    // signature; a license token or an x402 payment names its own payer.
    // `charge` on `*` is refused where it is written.
    let by_signature = s.offers(Dialect::CrawlerPrice);
    for g in charge_groups.iter().filter(|g| by_signature && !g.tokens.iter().any(|t| t == "*")) {
        let tokens = g.tokens.iter().map(String::as_str).filter(|t| *t != "*");
        if !c.verification.methods_for(tokens, g.verify).contains(&Method::Signature) {
            let at = g.charge.as_ref().map_or(0, |ch| ch.at);
            let hint = if c.verification.enabled {
                "pin its key under [[verification.keys]], or name a crawler whose Signature-Agent the catalog knows, and let verify allow \"signature\""
            } else {
                "add a [verification] table and pin its key under [[verification.keys]]"
            };
            cx.err_at(at, format!("group.enforce = \"charge\": no token of group `{}` can be verified by a Web Bot Auth signature, and only a signed request can be charged; {hint}", g.name));
        }
    }
    if s.charging {
        s.ledger = ledger_written.or_else(|| {
            c.verification.state_dir.as_ref().map(|d| format!("{}/ledger.sqlite", d.trim_end_matches('/')))
        });
        if s.ledger.is_none() && !ledger_refused {
            let at = charge_groups.first().and_then(|g| g.charge.as_ref()).map_or(0, |ch| ch.at);
            cx.err_at(at, "group.enforce = \"charge\": charges need a ledger; set [payment] ledger (an absolute file path or a postgres:// URL) or [verification] state_dir");
        }
        if s.ledger_is_postgres() {
            s.ledger_spool = spool_written.or_else(|| {
                c.verification.state_dir.as_ref().map(|d| format!("{}/ledger-spool.sqlite", d.trim_end_matches('/')))
            });
            if s.ledger_spool.is_none() {
                cx.err_at(s.ledger_at.unwrap_or(0), "payment.ledger is a PostgreSQL database: charges need a local spool for when it does not answer; set [payment] ledger_spool (an absolute file path) or [verification] state_dir");
            }
        }
    } else {
        s.ledger = ledger_written;
        s.ledger_spool = spool_written;
    }
    (s, free)
}

/// A dialect offered needs its table, and a table needs its dialect
/// offered (`crawler-price` needs none).
fn dialect_tables(
    cx: &mut Ctx<'_>,
    s: &PaymentSettings,
    dialects: &[Spanned<String>],
    has_rsl: bool,
    has_x402: bool,
    raw: &RawPayment,
) {
    for (dialect, has, table) in [(Dialect::License, has_rsl, "rsl"), (Dialect::X402, has_x402, "x402")] {
        let offered = s.offers(dialect);
        if offered && !has {
            let at = dialects.iter().find(|d| d.get_ref() == dialect.as_str()).map_or(0, |d| d.span().start);
            cx.err_at(
                at,
                format!("payment.dialects offers \"{}\" but there is no [payment.{table}] table", dialect.as_str()),
            );
        }
        if has && !offered {
            let at = match table {
                "rsl" => raw.rsl.as_ref().map_or(0, |t| t.span().start),
                _ => raw.x402.as_ref().map_or(0, |t| t.span().start),
            };
            cx.err_at(
                at,
                format!("payment.{table} is set but payment.dialects does not offer \"{}\"", dialect.as_str()),
            );
        }
    }
}

/// The path of an absolute `http(s)` URL (a sitemap), `None` for anything
/// else.
fn url_path(url: &str) -> Option<String> {
    let rest = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://"))?;
    let path = rest.find('/').map_or("/", |i| &rest[i..]);
    let path = path.split(['?', '#']).next().unwrap_or("/");
    Some(path.to_string())
}

/// `payment.terms`: an absolute `https` or `http` URL that fits in a
/// `Link` header's `<...>`.
fn terms_url(url: &str) -> Result<(), String> {
    let ok = (url.starts_with("https://") || url.starts_with("http://"))
        && url.len() > "https://".len()
        && url.bytes().all(|b| b.is_ascii_graphic() && !b"<>\"\\".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "payment.terms must be an absolute http(s) URL without spaces, quotes or angle brackets, found `{}`",
            url.escape_debug()
        ))
    }
}
