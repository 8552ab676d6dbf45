//! `[payment.rsl]` and `[payment.x402]`: the settings of the two dialects
//! that depend on an outside service, a license server (RSL 1.0 license
//! tokens) and an x402 facilitator, as written (`Raw*`) and validated.
//! `crawlgate-payment` turns the compiled settings into its verifier and
//! facilitator client.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use crate::compile::ctx::Ctx;

type S<T> = Spanned<T>;

/// `[payment.rsl]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRsl {
    pub issuer: S<String>,
    pub jwks: Option<S<String>>,
    pub keys: Option<Vec<S<String>>>,
    pub audience: Option<Vec<S<String>>>,
    pub usage: Option<S<String>>,
    pub skew: Option<S<String>>,
    pub fetch_timeout: Option<S<String>>,
    pub allow_http: Option<S<bool>>,
    pub allow_private_addresses: Option<S<bool>>,
}

/// `[payment.x402]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawX402 {
    pub facilitator: S<String>,
    pub pay_to: S<String>,
    pub network: S<String>,
    pub asset: S<String>,
    pub decimals: S<i64>,
    pub currency: Option<S<String>>,
    pub extra: Option<BTreeMap<String, S<String>>>,
    pub max_timeout: Option<S<String>>,
    pub timeout: Option<S<String>>,
    pub allow_http: Option<S<bool>>,
    pub allow_private_addresses: Option<S<bool>>,
}

/// The usages a license token's scope may be required to grant: RSL 1.0's
/// usage vocabulary and the AIPREF labels it maps onto.
pub const USAGES: [&str; 8] = ["all", "ai-all", "ai-train", "ai-input", "ai-index", "search", "train-ai", "ai-use"];

/// The longest `skew`, `fetch_timeout` and `timeout` accepted: a request
/// waits for these.
const MAX_WAIT: Duration = Duration::from_secs(30);

/// The compiled `[payment.rsl]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RslSettings {
    /// The license server; a token's `iss` must equal it.
    pub issuer: String,
    /// Its JWKS URL, if keys are fetched.
    pub jwks: Option<String>,
    /// Pinned public keys (Ed25519 JWKs, JSON text).
    pub keys: Vec<String>,
    /// The names a token's `aud` may give this site: `audience`, else
    /// `https://` and each of the site's hosts.
    pub audience: Vec<String>,
    /// The usage a token's `scope` must grant (or `all`).
    pub usage: String,
    /// Allowed clock skew for `exp`, `nbf`, `iat`.
    pub skew: Duration,
    /// Deadline of one JWKS fetch.
    pub fetch_timeout: Duration,
    /// Plain `http://` JWKS URLs allowed (tests only).
    pub allow_http: bool,
    /// Private, loopback and link-local JWKS addresses allowed (tests, or a
    /// license server on this host).
    pub allow_private_addresses: bool,
}

/// The compiled `[payment.x402]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct X402Settings {
    /// The facilitator's base URL.
    pub facilitator: String,
    /// The address paid.
    pub pay_to: String,
    /// The CAIP-2 network id.
    pub network: String,
    /// The asset (token contract address).
    pub asset: String,
    /// The asset's decimals.
    pub decimals: u32,
    /// The ISO 4217 currency the asset stands for.
    pub currency: String,
    /// `extra` of the payment requirements (EIP-712 `name`, `version`).
    pub extra: Vec<(String, String)>,
    /// `maxTimeoutSeconds` offered.
    pub max_timeout: Duration,
    /// The budget of one facilitator call.
    pub timeout: Duration,
    /// Plain `http://` facilitator URL allowed (tests only).
    pub allow_http: bool,
    /// A facilitator on a private, loopback or link-local address allowed.
    pub allow_private_addresses: bool,
}

/// An absolute `https://` URL (or `http://` when allowed) with a host.
fn service_url(url: &str, allow_http: bool) -> Result<(), String> {
    let rest = match url.split_once("://") {
        Some(("https", rest)) => rest,
        Some(("http", rest)) if allow_http => rest,
        Some(("http", _)) => return Err("must be an https:// URL (allow_http = true is for tests)".into()),
        _ => return Err("must be an absolute https:// URL".into()),
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    if host.is_empty() || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("must be an absolute https:// URL with a host and no whitespace".into());
    }
    if host.contains('@') {
        return Err("must not carry user information".into());
    }
    Ok(())
}

/// A CAIP-2 chain id: `namespace:reference`, namespace `[-a-z0-9]{3,8}`,
/// reference `[-_a-zA-Z0-9]{1,32}`.
pub fn caip2(id: &str) -> bool {
    let Some((ns, reference)) = id.split_once(':') else { return false };
    (3..=8).contains(&ns.len())
        && ns.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && (1..=32).contains(&reference.len())
        && reference.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn bounded_wait(cx: &mut Ctx<'_>, key: &str, v: &Option<Spanned<String>>, default: Duration) -> Duration {
    let d = cx.positive_duration(key, v, default);
    match v {
        Some(s) if d > MAX_WAIT => {
            cx.err(s, format!("{key} must be at most 30s, found `{}`", s.get_ref()));
            default
        }
        _ => d,
    }
}

fn flag(v: &Option<Spanned<bool>>) -> bool {
    v.as_ref().is_some_and(|b| *b.get_ref())
}

fn plain(cx: &mut Ctx<'_>, key: &str, v: &Spanned<String>) -> Option<String> {
    let s = v.get_ref();
    if s.is_empty() || s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        cx.err(v, format!("{key} must be a non-empty value without whitespace, found `{s}`"));
        return None;
    }
    Some(s.clone())
}

/// A public JWK of a kind license tokens are checked with: Ed25519 (OKP),
/// P-256 (EC) or RSA, with its key members present (the key itself is
/// checked when the verifier is built).
fn signing_jwk(jwk: &str) -> Result<(), String> {
    let v: serde_json::Value = serde_json::from_str(jwk).map_err(|e| format!("not JSON: {e}"))?;
    let field = |k: &str| v.get(k).and_then(serde_json::Value::as_str);
    let need = |members: &[&str]| match members.iter().find(|m| field(m).is_none_or(str::is_empty)) {
        Some(m) => Err(format!("`{m}` is missing")),
        None => Ok(()),
    };
    if v.get("d").is_some() {
        return Err("it holds a private key (`d`); pin the public key only".into());
    }
    match (field("kty"), field("crv")) {
        (Some("OKP"), _) => crate::verification::validate_ed25519_jwk(jwk),
        (Some("EC"), Some("P-256")) => need(&["x", "y"]),
        (Some("EC"), _) => Err("`crv` must be \"P-256\" for an EC key".into()),
        (Some("RSA"), _) => need(&["n", "e"]),
        _ => Err("`kty` must be \"OKP\", \"EC\" or \"RSA\"".into()),
    }
}

/// `[payment.rsl]`; `site` are the site's hosts (`server.hosts`), the
/// default audience.
pub(crate) fn rsl(cx: &mut Ctx<'_>, raw: &Spanned<RawRsl>, site: &[String]) -> Option<RslSettings> {
    let RawRsl { issuer, jwks, keys, audience, usage, skew, fetch_timeout, allow_http, allow_private_addresses } =
        raw.get_ref();
    let allow_http = flag(allow_http);
    let issuer = plain(cx, "payment.rsl.issuer", issuer);
    let jwks = jwks.as_ref().and_then(|u| match service_url(u.get_ref(), allow_http) {
        Ok(()) => Some(u.get_ref().clone()),
        Err(e) => {
            cx.err(u, format!("payment.rsl.jwks {e}, found `{}`", u.get_ref()));
            None
        }
    });
    let mut pinned = Vec::new();
    for k in keys.iter().flatten() {
        match signing_jwk(k.get_ref()) {
            Ok(()) => pinned.push(k.get_ref().clone()),
            Err(e) => cx.err(k, format!("payment.rsl.keys: the JWK is not a usable public key: {e}")),
        }
    }
    if raw.get_ref().jwks.is_none() && keys.as_ref().is_none_or(Vec::is_empty) {
        cx.err(raw, "payment.rsl needs the license server's keys: jwks (its JWKS URL) or keys (pinned JWKs)");
    }
    let mut aud = Vec::new();
    for a in audience.iter().flatten() {
        let v = a.get_ref().trim_end_matches('/').to_ascii_lowercase();
        let ok = match v.split_once("://") {
            Some(("https" | "http", host)) => !host.is_empty() && !host.contains(['/', '?', '#', '@']),
            Some(_) => false,
            None => !v.is_empty() && !v.contains(['/', '?', '#', '@', ' ']),
        };
        if ok {
            aud.push(v);
        } else {
            cx.err(
                a,
                format!("payment.rsl.audience: `{}` is not an origin (https://host[:port]) or a host", a.get_ref()),
            );
        }
    }
    if audience.is_none() {
        aud = site.iter().map(|h| format!("https://{h}")).collect();
        if aud.is_empty() {
            cx.err(raw, "payment.rsl.audience is required when server.hosts is not set: a token must name this site");
        }
    }
    let usage = match usage {
        None => "all".to_string(),
        Some(u) if USAGES.contains(&u.get_ref().as_str()) => u.get_ref().clone(),
        Some(u) => {
            cx.err(u, format!("payment.rsl.usage must be one of {}, found `{}`", USAGES.join(", "), u.get_ref()));
            "all".to_string()
        }
    };
    let skew = bounded_wait(cx, "payment.rsl.skew", skew, Duration::from_secs(30));
    let fetch_timeout = bounded_wait(cx, "payment.rsl.fetch_timeout", fetch_timeout, Duration::from_secs(2));
    Some(RslSettings {
        issuer: issuer?,
        jwks,
        keys: pinned,
        audience: aud,
        usage,
        skew,
        fetch_timeout,
        allow_http,
        allow_private_addresses: flag(allow_private_addresses),
    })
}

/// `[payment.x402]`.
pub(crate) fn x402(cx: &mut Ctx<'_>, raw: &Spanned<RawX402>) -> Option<X402Settings> {
    let RawX402 {
        facilitator,
        pay_to,
        network,
        asset,
        decimals,
        currency,
        extra,
        max_timeout,
        timeout,
        allow_http,
        allow_private_addresses,
    } = raw.get_ref();
    let allow_http = flag(allow_http);
    let facilitator_ok = match service_url(facilitator.get_ref(), allow_http) {
        Ok(()) => true,
        Err(e) => {
            cx.err(facilitator, format!("payment.x402.facilitator {e}, found `{}`", facilitator.get_ref()));
            false
        }
    };
    let pay_to_v = plain(cx, "payment.x402.pay_to", pay_to);
    let asset_v = plain(cx, "payment.x402.asset", asset);
    let network_ok = caip2(network.get_ref());
    if !network_ok {
        cx.err(
            network,
            format!(
                "payment.x402.network must be a CAIP-2 chain id (e.g. \"eip155:8453\"), found `{}`",
                network.get_ref()
            ),
        );
    }
    let decimals_v = match u32::try_from(*decimals.get_ref()) {
        Ok(d) if d <= 30 => Some(d),
        _ => {
            cx.err(decimals, format!("payment.x402.decimals must be 0 to 30, found {}", decimals.get_ref()));
            None
        }
    };
    let currency_v = match currency {
        None => "USD".to_string(),
        Some(c) if c.get_ref().len() == 3 && c.get_ref().bytes().all(|b| b.is_ascii_uppercase()) => c.get_ref().clone(),
        Some(c) => {
            cx.err(
                c,
                format!(
                    "payment.x402.currency must be an ISO 4217 code (three capital letters), found `{}`{}",
                    c.get_ref(),
                    crate::payment::price::near_code(c.get_ref())
                        .map_or(String::new(), |n| format!("; did you mean `{n}`?"))
                ),
            );
            "USD".to_string()
        }
    };
    // Sent in every 402's PAYMENT-REQUIRED (the EIP-712 domain a payment
    // is signed for): a control character there is a typing slip no
    // payer's domain matches.
    let mut extra_v: Vec<(String, String)> = Vec::new();
    for (k, v) in extra.iter().flatten() {
        let checked = crate::validate::no_control("payment.x402.extra", k)
            .and_then(|()| crate::validate::no_control(&format!("payment.x402.extra.{k}"), v.get_ref()));
        match checked {
            Ok(()) => extra_v.push((k.clone(), v.get_ref().clone())),
            Err(e) => cx.err(v, e),
        }
    }
    let max_timeout_v = cx.positive_duration("payment.x402.max_timeout", max_timeout, Duration::from_secs(60));
    let timeout_v = bounded_wait(cx, "payment.x402.timeout", timeout, Duration::from_secs(3));
    if !facilitator_ok || !network_ok {
        return None;
    }
    Some(X402Settings {
        facilitator: facilitator.get_ref().trim_end_matches('/').to_string(),
        pay_to: pay_to_v?,
        network: network.get_ref().clone(),
        asset: asset_v?,
        decimals: decimals_v?,
        currency: currency_v,
        extra: extra_v,
        max_timeout: max_timeout_v,
        timeout: timeout_v,
        allow_http,
        allow_private_addresses: flag(allow_private_addresses),
    })
}

/// A group price in the x402 asset's atomic units (as a decimal string):
/// its currency must be the asset's, and the asset must have at least the
/// decimals the amount needs.
pub fn x402_amount(x: &X402Settings, price: &super::Price) -> Result<String, String> {
    if price.currency.code() != x.currency {
        return Err(format!("it is in {}, the x402 asset is paid in {}", price.currency.code(), x.currency));
    }
    let exponent = u32::from(price.currency.exponent());
    let mut minor = u128::from(price.minor);
    if x.decimals >= exponent {
        minor = minor
            .checked_mul(10u128.pow(x.decimals - exponent))
            .ok_or_else(|| "the amount is too large in atomic units".to_string())?;
    } else {
        let unit = 10u128.pow(exponent - x.decimals);
        if minor % unit != 0 {
            return Err(format!("the asset has {} decimals, fewer than the price needs", x.decimals));
        }
        minor /= unit;
    }
    Ok(minor.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Tables {
        rsl: Option<Spanned<RawRsl>>,
        x402: Option<Spanned<RawX402>>,
    }

    /// Compiles the tables of `src` (the inside of `[payment]`); the
    /// settings or the errors, one per line.
    fn compile(src: &str) -> (Option<RslSettings>, Option<X402Settings>, String) {
        let tables: Tables = toml::from_str(src).unwrap_or_else(|e| panic!("{e}"));
        let mut cx = Ctx::for_test("p.toml", src);
        let site = vec!["www.example.com".to_string()];
        let r = tables.rsl.as_ref().and_then(|t| rsl(&mut cx, t, &site));
        let x = tables.x402.as_ref().and_then(|t| x402(&mut cx, t));
        let errors = cx.error_text();
        (r, x, errors)
    }

    #[test]
    fn rsl_defaults_and_keys() {
        let (r, _, errors) =
            compile("[rsl]\nissuer = \"https://license.example\"\njwks = \"https://license.example/jwks.json\"\n");
        assert_eq!(errors, "");
        assert_eq!(
            r,
            Some(RslSettings {
                issuer: "https://license.example".into(),
                jwks: Some("https://license.example/jwks.json".into()),
                keys: Vec::new(),
                audience: vec!["https://www.example.com".into()],
                usage: "all".into(),
                skew: Duration::from_secs(30),
                fetch_timeout: Duration::from_secs(2),
                allow_http: false,
                allow_private_addresses: false,
            })
        );
        let (r, _, errors) = compile(
            "[rsl]\nissuer = \"https://license.example\"\nkeys = ['{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs\"}']\naudience = [\"https://WWW.example.com/\", \"example.org\"]\nusage = \"ai-use\"\nskew = \"10s\"\n",
        );
        assert_eq!(errors, "");
        let r = r.unwrap_or_else(|| panic!("no settings"));
        assert_eq!(r.audience, ["https://www.example.com", "example.org"]);
        assert_eq!((r.usage.as_str(), r.skew, r.keys.len(), r.jwks), ("ai-use", Duration::from_secs(10), 1, None));
    }

    #[test]
    fn rsl_errors_have_positions() {
        let cases: &[(&str, &str)] = &[
            ("[rsl]\nissuer = \"x\"\n", "p.toml:1:1: payment.rsl needs the license server's keys: jwks (its JWKS URL) or keys (pinned JWKs)"),
            ("[rsl]\nissuer = \"x\"\njwks = \"http://l.example/j\"\n", "p.toml:3:8: payment.rsl.jwks must be an https:// URL (allow_http = true is for tests), found `http://l.example/j`"),
            ("[rsl]\nissuer = \"x\"\njwks = \"https://u@l.example/j\"\n", "p.toml:3:8: payment.rsl.jwks must not carry user information, found `https://u@l.example/j`"),
            ("[rsl]\nissuer = \"\"\njwks = \"https://l.example/j\"\n", "p.toml:2:10: payment.rsl.issuer must be a non-empty value without whitespace, found ``"),
            ("[rsl]\nissuer = \"x\"\nkeys = ['{\"kty\":\"RSA\"}']\n", "p.toml:3:9: payment.rsl.keys: the JWK is not a usable public key: `n` is missing"),
            ("[rsl]\nissuer = \"x\"\nkeys = ['{\"kty\":\"oct\",\"k\":\"AA\"}']\n", "p.toml:3:9: payment.rsl.keys: the JWK is not a usable public key: `kty` must be \"OKP\", \"EC\" or \"RSA\""),
            ("[rsl]\nissuer = \"x\"\nkeys = ['{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"AA\",\"y\":\"AA\",\"d\":\"AA\"}']\n", "p.toml:3:9: payment.rsl.keys: the JWK is not a usable public key: it holds a private key (`d`); pin the public key only"),
            ("[rsl]\nissuer = \"x\"\njwks = \"https://l.example/j\"\naudience = [\"https://a/b\"]\n", "p.toml:4:13: payment.rsl.audience: `https://a/b` is not an origin (https://host[:port]) or a host"),
            ("[rsl]\nissuer = \"x\"\njwks = \"https://l.example/j\"\nusage = \"crawl\"\n", "p.toml:4:9: payment.rsl.usage must be one of all, ai-all, ai-train, ai-input, ai-index, search, train-ai, ai-use, found `crawl`"),
            ("[rsl]\nissuer = \"x\"\njwks = \"https://l.example/j\"\nskew = \"5m\"\n", "p.toml:4:8: payment.rsl.skew must be at most 30s, found `5m`"),
            ("[rsl]\nissuer = \"x\"\njwks = \"https://l.example/j\"\nfetch_timeout = \"0s\"\n", "p.toml:4:17: payment.rsl.fetch_timeout must be greater than zero, found `0s`"),
        ];
        for (src, want) in cases {
            let (_, _, errors) = compile(src);
            assert_eq!(errors, *want, "{src}");
        }
        let (_, _, errors) = compile("[rsl]\nissuer = \"x\"\njwks = \"http://127.0.0.1:1/j\"\nallow_http = true\n");
        assert_eq!(errors, "");
    }

    const X402: &str = "[x402]\nfacilitator = \"https://x402.example/facilitator/\"\npay_to = \"0x209693Bc6afc0C5328bA36FaF03C514EF312287C\"\nnetwork = \"eip155:8453\"\nasset = \"0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913\"\ndecimals = 6\n";

    #[test]
    fn x402_defaults_and_extra() {
        let (_, x, errors) = compile(&format!("{X402}[x402.extra]\nname = \"USD Coin\"\nversion = \"2\"\n"));
        assert_eq!(errors, "");
        assert_eq!(
            x,
            Some(X402Settings {
                facilitator: "https://x402.example/facilitator".into(),
                pay_to: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C".into(),
                network: "eip155:8453".into(),
                asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913".into(),
                decimals: 6,
                currency: "USD".into(),
                extra: vec![("name".into(), "USD Coin".into()), ("version".into(), "2".into())],
                max_timeout: Duration::from_secs(60),
                timeout: Duration::from_secs(3),
                allow_http: false,
                allow_private_addresses: false,
            })
        );
    }

    #[test]
    fn x402_errors_have_positions() {
        let with = |key: &str, value: &str| X402.replace(&format!("{key} = "), &format!("{key} = {value}\n#"));
        let cases: Vec<(String, &str)> = vec![
            (
                with("facilitator", "\"ftp://f\""),
                "p.toml:2:15: payment.x402.facilitator must be an absolute https:// URL, found `ftp://f`",
            ),
            (
                with("network", "\"base\""),
                "p.toml:4:11: payment.x402.network must be a CAIP-2 chain id (e.g. \"eip155:8453\"), found `base`",
            ),
            (with("decimals", "31"), "p.toml:6:12: payment.x402.decimals must be 0 to 30, found 31"),
            (
                with("pay_to", "\"0x 1\""),
                "p.toml:3:10: payment.x402.pay_to must be a non-empty value without whitespace, found `0x 1`",
            ),
            (
                format!("{X402}currency = \"usd\"\n"),
                "p.toml:7:12: payment.x402.currency must be an ISO 4217 code (three capital letters), found `usd`; did you mean `USD`?",
            ),
            (
                format!("{X402}currency = \"EURO\"\n"),
                "p.toml:7:12: payment.x402.currency must be an ISO 4217 code (three capital letters), found `EURO`; did you mean `EUR`?",
            ),
            (format!("{X402}timeout = \"1m\"\n"), "p.toml:7:11: payment.x402.timeout must be at most 30s, found `1m`"),
            (
                format!("{X402}[x402.extra]\nname = \"USD Coin\\r\"\n"),
                "p.toml:8:8: payment.x402.extra.name: `USD Coin\\r` contains a control character",
            ),
            (
                format!("{X402}[x402.extra]\n\"ver\\u0000sion\" = \"2\"\n"),
                "p.toml:8:19: payment.x402.extra: `ver\\0sion` contains a control character",
            ),
        ];
        for (src, want) in cases {
            let (_, _, errors) = compile(&src);
            assert_eq!(errors, want, "{src}");
        }
    }

    #[test]
    fn caip2_ids() {
        for ok in ["eip155:1", "eip155:8453", "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp", "cosmos:cosmoshub-3"] {
            assert!(caip2(ok), "{ok}");
        }
        for bad in ["base", "eip155:", ":1", "EIP155:1", "ab:1", "eip155:1:2", "eip155:1 "] {
            assert!(!caip2(bad), "{bad}");
        }
    }
}
