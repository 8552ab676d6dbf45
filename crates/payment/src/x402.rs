//! x402 v2 payments through a facilitator: the `PAYMENT-REQUIRED` header
//! of a 402 (base64 JSON naming what the site accepts, the `exact` scheme),
//! the client's `PAYMENT-SIGNATURE` read and checked against those
//! requirements, the facilitator's `POST /verify`, `POST /settle` and
//! `GET /supported` within a time budget, and the `PAYMENT-RESPONSE` that
//! reports the settlement.
//!
//! The payload is verified against the site's own requirements, never the
//! ones the client echoes: a client that alters the amount, the asset or
//! the recipient is refused before the facilitator is asked.

use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
use base64::Engine as _;
use crawlgate_policy::payment::dialects::X402Settings;
use serde::{Deserialize, Serialize};

use crawlgate_outbound::fetch::{FetchError, Outbound, Reach};

/// The protocol version spoken.
pub const X402_VERSION: u64 = 2;
/// The header of a 402 naming the accepted payments.
pub const PAYMENT_REQUIRED: &str = "payment-required";
/// The header of a client's paid retry.
pub const PAYMENT_SIGNATURE: &str = "payment-signature";
/// The header reporting the settlement.
pub const PAYMENT_RESPONSE: &str = "payment-response";
/// The only scheme offered: the signed amount is settled.
pub const SCHEME_EXACT: &str = "exact";
/// The largest `PAYMENT-SIGNATURE` read.
pub const MAX_PAYMENT_SIGNATURE_BYTES: usize = 16 * 1024;
/// The largest facilitator answer read.
const MAX_FACILITATOR_BODY: usize = 64 * 1024;
/// The most decimals an asset may have (keeps atomic amounts in a u128).
pub const MAX_DECIMALS: u32 = 30;

/// What the site accepts for one resource (x402 v2 `PaymentRequirements`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Requirements {
    /// The scheme.
    pub scheme: String,
    /// CAIP-2 network id.
    pub network: String,
    /// Amount in the asset's atomic units, as a decimal string.
    pub amount: String,
    /// The asset.
    pub asset: String,
    /// The recipient.
    pub pay_to: String,
    /// How long the client's authorization must stay valid.
    pub max_timeout_seconds: u64,
    /// Scheme-specific data.
    #[serde(default)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// Why a payment did not go through.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum X402Error {
    /// The `PAYMENT-SIGNATURE` does not parse.
    #[error("invalid PAYMENT-SIGNATURE: {0}")]
    Malformed(String),
    /// The payment is not for what this resource costs.
    #[error("the payment does not match the requirements: {0}")]
    Mismatch(String),
    /// The facilitator found the payment invalid (its `invalidReason`).
    #[error("the facilitator rejected the payment: {0}")]
    Rejected(String),
    /// The facilitator did not answer within the budget.
    #[error("the facilitator did not answer in time: {0}")]
    Timeout(String),
    /// The facilitator could not be asked or answered nonsense.
    #[error("the facilitator failed: {0}")]
    Facilitator(String),
    /// Settlement failed (its `errorReason`).
    #[error("settlement failed: {0}")]
    SettleFailed(String),
}

impl X402Error {
    /// A bounded label for metrics and the access log.
    pub fn code(&self) -> &'static str {
        match self {
            X402Error::Malformed(_) => "x402_malformed",
            X402Error::Mismatch(_) => "x402_mismatch",
            X402Error::Rejected(_) => "x402_rejected",
            X402Error::Timeout(_) => "x402_timeout",
            X402Error::Facilitator(_) => "x402_facilitator",
            X402Error::SettleFailed(_) => "x402_settle_failed",
        }
    }
}

/// Converts a decimal price (`0.01`) to atomic units of an asset with
/// `decimals` decimals (`10000` for 6), exactly: a price with more
/// fractional digits than the asset has is refused, never rounded.
pub fn atomic_amount(decimal: &str, decimals: u32) -> Result<String, String> {
    if decimals > MAX_DECIMALS {
        return Err(format!("{decimals} decimals is more than {MAX_DECIMALS}"));
    }
    let (int, frac) = decimal.split_once('.').unwrap_or((decimal, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() || !digits(int) || !digits(frac) || (decimal.contains('.') && frac.is_empty()) {
        return Err(format!("`{decimal}` is not a decimal number"));
    }
    let frac = frac.trim_end_matches('0');
    if frac.len() > decimals as usize {
        return Err(format!("`{decimal}` has more fractional digits than the asset's {decimals} decimals"));
    }
    let padded = format!("{int}{frac}{}", "0".repeat(decimals as usize - frac.len()));
    let value: u128 = padded.parse().map_err(|_| format!("`{decimal}` is too large"))?;
    if value == 0 {
        return Err(format!("`{decimal}` is zero"));
    }
    Ok(value.to_string())
}

/// The requirements of the policy's `[payment.x402]` for a price of
/// `amount` (decimal) in `currency`.
pub fn requirements(settings: &X402Settings, currency: &str, amount: &str) -> Result<Requirements, String> {
    if !currency.eq_ignore_ascii_case(&settings.currency) {
        return Err(format!("the price is in {currency}, the x402 asset is paid in {}", settings.currency));
    }
    Ok(Requirements {
        scheme: SCHEME_EXACT.into(),
        network: settings.network.clone(),
        amount: atomic_amount(amount, settings.decimals)?,
        asset: settings.asset.clone(),
        pay_to: settings.pay_to.clone(),
        max_timeout_seconds: settings.max_timeout.as_secs(),
        extra: settings.extra.iter().map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone()))).collect(),
    })
}

/// The `PAYMENT-REQUIRED` value: base64 of `{x402Version, error, resource,
/// accepts, extensions}`.
pub fn payment_required(requirements: &Requirements, resource_url: &str, error: &str) -> String {
    let doc = serde_json::json!({
        "x402Version": X402_VERSION,
        "error": error,
        "resource": {"url": resource_url, "description": "", "mimeType": ""},
        "accepts": [requirements],
        "extensions": {},
    });
    STANDARD.encode(doc.to_string())
}

/// A client's payment, read from `PAYMENT-SIGNATURE`.
#[derive(Clone, Debug, PartialEq)]
pub struct PaymentPayload {
    /// The requirements the client says it paid for.
    pub accepted: Requirements,
    /// The whole document as sent, passed on to the facilitator.
    pub raw: serde_json::Value,
}

fn malformed(msg: impl Into<String>) -> X402Error {
    X402Error::Malformed(msg.into())
}

/// Reads a `PAYMENT-SIGNATURE` value: base64 JSON `{x402Version: 2,
/// accepted, payload}`.
pub fn parse_payment_signature(value: &[u8]) -> Result<PaymentPayload, X402Error> {
    if value.len() > MAX_PAYMENT_SIGNATURE_BYTES {
        return Err(malformed(format!("longer than {MAX_PAYMENT_SIGNATURE_BYTES} bytes")));
    }
    let value = value.trim_ascii();
    let json =
        STANDARD.decode(value).or_else(|_| STANDARD_NO_PAD.decode(value)).map_err(|_| malformed("not base64"))?;
    let raw: serde_json::Value = serde_json::from_slice(&json).map_err(|_| malformed("not JSON"))?;
    match raw.get("x402Version").and_then(serde_json::Value::as_u64) {
        Some(X402_VERSION) => {}
        Some(v) => return Err(malformed(format!("x402Version {v} is not supported (2)"))),
        None => return Err(malformed("no x402Version")),
    }
    let accepted = raw.get("accepted").cloned().ok_or_else(|| malformed("no accepted requirements"))?;
    let accepted: Requirements =
        serde_json::from_value(accepted).map_err(|e| malformed(format!("accepted requirements: {e}")))?;
    if !raw.get("payload").is_some_and(serde_json::Value::is_object) {
        return Err(malformed("no payload object"));
    }
    Ok(PaymentPayload { accepted, raw })
}

/// Whether the client paid for `ours`: scheme, network, amount, asset and
/// recipient equal (addresses compared ASCII case-insensitively: EVM
/// addresses carry their checksum in the case).
pub fn check_accepted(payment: &PaymentPayload, ours: &Requirements) -> Result<(), X402Error> {
    let a = &payment.accepted;
    let mismatch = |what: &str, theirs: &str, mine: &str| {
        Err(X402Error::Mismatch(format!("{what} is {theirs:?}, this resource asks for {mine:?}")))
    };
    if a.scheme != ours.scheme {
        return mismatch("scheme", &a.scheme, &ours.scheme);
    }
    if a.network != ours.network {
        return mismatch("network", &a.network, &ours.network);
    }
    if a.amount != ours.amount {
        return mismatch("amount", &a.amount, &ours.amount);
    }
    if !a.asset.eq_ignore_ascii_case(&ours.asset) {
        return mismatch("asset", &a.asset, &ours.asset);
    }
    if !a.pay_to.eq_ignore_ascii_case(&ours.pay_to) {
        return mismatch("payTo", &a.pay_to, &ours.pay_to);
    }
    Ok(())
}

/// A payment the facilitator found valid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verified {
    /// The payer's address.
    pub payer: Option<String>,
}

/// A settled payment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settlement {
    /// The transaction (the ledger's settlement reference).
    pub transaction: String,
    /// The network it settled on.
    pub network: String,
    /// The payer's address.
    pub payer: Option<String>,
}

/// The `PAYMENT-RESPONSE` value of a settlement: base64 of `{success,
/// transaction, network, payer}`.
pub fn payment_response(s: &Settlement) -> String {
    let doc = serde_json::json!({
        "success": true, "transaction": s.transaction, "network": s.network, "payer": s.payer,
    });
    STANDARD.encode(doc.to_string())
}

/// The `PAYMENT-RESPONSE` value of a failed settlement: `success` false and
/// its `errorReason`.
pub fn payment_failure(reason: &str, network: &str) -> String {
    let doc = serde_json::json!({
        "success": false, "errorReason": reason, "transaction": "", "network": network,
    });
    STANDARD.encode(doc.to_string())
}

/// A payment kind a facilitator supports (`GET /supported`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Kind {
    /// Protocol version.
    pub x402_version: u64,
    /// Scheme.
    pub scheme: String,
    /// CAIP-2 network id.
    pub network: String,
}

/// The facilitator client; cheap to clone.
#[derive(Clone, Debug)]
pub struct Facilitator {
    base: String,
    outbound: Outbound,
}

impl Facilitator {
    /// A client for the policy's `[payment.x402]` `facilitator`, each call
    /// within its `timeout`.
    pub fn new(settings: &X402Settings) -> Result<Facilitator, String> {
        let reach = Reach { allow_http: settings.allow_http, allow_private: settings.allow_private_addresses };
        let outbound = Outbound::new(reach, settings.timeout).map_err(|e| e.to_string())?;
        let base = settings.facilitator.trim_end_matches('/').to_owned();
        outbound.check_url(&base).map_err(|e| e.to_string())?;
        Ok(Facilitator { base, outbound })
    }

    fn failed(e: FetchError) -> X402Error {
        if e.timed_out() {
            X402Error::Timeout(e.to_string())
        } else {
            X402Error::Facilitator(e.to_string())
        }
    }

    async fn call(
        &self,
        what: &str,
        payment: &PaymentPayload,
        ours: &Requirements,
    ) -> Result<serde_json::Map<String, serde_json::Value>, X402Error> {
        let url = format!("{}/{what}", self.base);
        let body = serde_json::json!({
            "x402Version": X402_VERSION, "paymentPayload": payment.raw, "paymentRequirements": ours,
        });
        let r = self
            .outbound
            .post_json(&url, body.to_string().into_bytes(), MAX_FACILITATOR_BODY)
            .await
            .map_err(Self::failed)?;
        // A facilitator may answer a refusal with a 4xx and the usual body;
        // such an answer never grants, whatever it says.
        match serde_json::from_slice(&r.body) {
            Ok(serde_json::Value::Object(m)) if (200..300).contains(&r.status) => Ok(m),
            Ok(serde_json::Value::Object(mut m)) if r.status < 500 => {
                for k in ["isValid", "success"] {
                    if let Some(v @ serde_json::Value::Bool(true)) = m.get_mut(k) {
                        *v = serde_json::Value::Bool(false);
                    }
                }
                Ok(m)
            }
            _ => Err(X402Error::Facilitator(format!("{url}: status {} without a JSON answer", r.status))),
        }
    }

    /// `POST /verify`: whether the payment is valid for `ours`.
    pub async fn verify(&self, payment: &PaymentPayload, ours: &Requirements) -> Result<Verified, X402Error> {
        let m = self.call("verify", payment, ours).await?;
        let payer = m.get("payer").and_then(serde_json::Value::as_str).map(str::to_owned);
        match m.get("isValid").and_then(serde_json::Value::as_bool) {
            Some(true) => Ok(Verified { payer }),
            Some(false) => {
                let reason = m.get("invalidReason").and_then(serde_json::Value::as_str).unwrap_or("invalid");
                Err(X402Error::Rejected(reason.to_owned()))
            }
            None => Err(X402Error::Facilitator("the /verify answer has no isValid".into())),
        }
    }

    /// `POST /settle`: settles the payment.
    pub async fn settle(&self, payment: &PaymentPayload, ours: &Requirements) -> Result<Settlement, X402Error> {
        let m = self.call("settle", payment, ours).await?;
        let text = |n: &str| m.get(n).and_then(serde_json::Value::as_str).map(str::to_owned);
        match m.get("success").and_then(serde_json::Value::as_bool) {
            Some(true) => match text("transaction").filter(|t| !t.is_empty()) {
                Some(transaction) => Ok(Settlement {
                    transaction,
                    network: text("network").unwrap_or_else(|| ours.network.clone()),
                    payer: text("payer"),
                }),
                None => Err(X402Error::Facilitator("the /settle answer names no transaction".into())),
            },
            Some(false) => Err(X402Error::SettleFailed(text("errorReason").unwrap_or_else(|| "unknown".into()))),
            None => Err(X402Error::Facilitator("the /settle answer has no success".into())),
        }
    }

    /// `GET /supported`: the kinds of payment the facilitator handles.
    pub async fn supported(&self) -> Result<Vec<Kind>, X402Error> {
        let url = format!("{}/supported", self.base);
        let r = self.outbound.get(&url, "application/json", MAX_FACILITATOR_BODY).await.map_err(Self::failed)?;
        if r.status != 200 {
            return Err(X402Error::Facilitator(format!("{url}: status {}", r.status)));
        }
        #[derive(Deserialize)]
        struct Supported {
            kinds: Vec<Kind>,
        }
        let s: Supported =
            serde_json::from_slice(&r.body).map_err(|e| X402Error::Facilitator(format!("{url}: {e}")))?;
        Ok(s.kinds)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn prices_convert_exactly_to_atomic_units() {
        assert_eq!(atomic_amount("0.01", 6), Ok("10000".into()));
        assert_eq!(atomic_amount("1", 6), Ok("1000000".into()));
        assert_eq!(atomic_amount("3.14", 2), Ok("314".into()));
        assert_eq!(atomic_amount("0.000001", 6), Ok("1".into()));
        assert_eq!(atomic_amount("0.0100", 2), Ok("1".into()));
        assert_eq!(atomic_amount("12", 0), Ok("12".into()));
        assert_eq!(
            atomic_amount("0.0000001", 6),
            Err("`0.0000001` has more fractional digits than the asset's 6 decimals".into())
        );
        assert_eq!(atomic_amount("0", 6), Err("`0` is zero".into()));
        for bad in ["", ".5", "1.", "-1", "1e3", "0x10", "1.2.3", " 1"] {
            assert_eq!(atomic_amount(bad, 6), Err(format!("`{bad}` is not a decimal number")), "{bad}");
        }
        assert_eq!(atomic_amount("1", 31), Err("31 decimals is more than 30".into()));
        assert_eq!(atomic_amount(&"9".repeat(40), 6), Err(format!("`{}` is too large", "9".repeat(40))));
    }

    fn config() -> X402Settings {
        X402Settings {
            facilitator: "https://facilitator.example".into(),
            pay_to: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C".into(),
            network: "eip155:8453".into(),
            asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913".into(),
            decimals: 6,
            currency: "USD".into(),
            extra: vec![("name".into(), "USD Coin".into()), ("version".into(), "2".into())],
            max_timeout: Duration::from_secs(60),
            timeout: Duration::from_secs(2),
            allow_http: false,
            allow_private_addresses: false,
        }
    }

    #[test]
    fn payment_required_is_base64_json_of_the_exact_scheme() {
        let req = requirements(&config(), "USD", "0.01").unwrap_or_else(|e| panic!("{e}"));
        let header = payment_required(&req, "https://www.example.com/a", "PAYMENT-SIGNATURE header is required");
        let doc: serde_json::Value =
            serde_json::from_slice(&STANDARD.decode(header).unwrap_or_default()).unwrap_or_default();
        assert_eq!(
            doc,
            serde_json::json!({
                "x402Version": 2,
                "error": "PAYMENT-SIGNATURE header is required",
                "resource": {"url": "https://www.example.com/a", "description": "", "mimeType": ""},
                "accepts": [{
                    "scheme": "exact", "network": "eip155:8453", "amount": "10000",
                    "asset": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
                    "payTo": "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
                    "maxTimeoutSeconds": 60, "extra": {"name": "USD Coin", "version": "2"}
                }],
                "extensions": {}
            })
        );
        assert_eq!(
            requirements(&config(), "EUR", "0.01"),
            Err("the price is in EUR, the x402 asset is paid in USD".into())
        );
    }

    fn signature_of(doc: &serde_json::Value) -> Vec<u8> {
        STANDARD.encode(doc.to_string()).into_bytes()
    }

    #[test]
    fn payment_signatures_parse_and_must_match_the_requirements() {
        let ours = requirements(&config(), "USD", "0.01").unwrap_or_else(|e| panic!("{e}"));
        let good = serde_json::json!({"x402Version": 2, "accepted": ours, "payload": {"signature": "0x1"}});
        let p = parse_payment_signature(&signature_of(&good)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(check_accepted(&p, &ours), Ok(()));
        assert_eq!(p.raw, good);
        let mut lower = good.clone();
        lower["accepted"]["payTo"] = ours.pay_to.to_ascii_lowercase().into();
        let p = parse_payment_signature(&signature_of(&lower)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(check_accepted(&p, &ours), Ok(()));
        let mut cheap = good.clone();
        cheap["accepted"]["amount"] = "1".into();
        let p = parse_payment_signature(&signature_of(&cheap)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            check_accepted(&p, &ours),
            Err(X402Error::Mismatch("amount is \"1\", this resource asks for \"10000\"".into()))
        );
        let mut elsewhere = good.clone();
        elsewhere["accepted"]["payTo"] = "0xattacker".into();
        let p = parse_payment_signature(&signature_of(&elsewhere)).unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(check_accepted(&p, &ours), Err(X402Error::Mismatch(m)) if m.starts_with("payTo")));

        let bad = |v: &[u8]| match parse_payment_signature(v) {
            Err(X402Error::Malformed(m)) => m,
            other => panic!("{other:?}"),
        };
        assert_eq!(bad(b"!!!"), "not base64");
        assert_eq!(bad(STANDARD.encode("nope").as_bytes()), "not JSON");
        assert_eq!(bad(&signature_of(&serde_json::json!({"accepted": ours}))), "no x402Version");
        assert_eq!(bad(&signature_of(&serde_json::json!({"x402Version": 1}))), "x402Version 1 is not supported (2)");
        assert_eq!(bad(&signature_of(&serde_json::json!({"x402Version": 2}))), "no accepted requirements");
        assert_eq!(bad(&signature_of(&serde_json::json!({"x402Version": 2, "accepted": ours}))), "no payload object");
        assert!(bad(&signature_of(&serde_json::json!({"x402Version": 2, "accepted": {}, "payload": {}})))
            .starts_with("accepted requirements: missing field"));
        assert_eq!(bad(&vec![b'A'; MAX_PAYMENT_SIGNATURE_BYTES + 1]), "longer than 16384 bytes");
    }

    proptest::proptest! {
        /// Any bytes, and base64 of any text, as `PAYMENT-SIGNATURE`: an
        /// error value or a payment, never a panic.
        #[test]
        fn outside_input_never_panics(raw in proptest::collection::vec(proptest::num::u8::ANY, 0..400), text in ".{0,300}") {
            let _ = parse_payment_signature(&raw);
            let _ = parse_payment_signature(STANDARD.encode(&text).as_bytes());
            let _ = atomic_amount(&text, 6);
        }
    }

    #[test]
    fn payment_responses_are_base64_json() {
        let s = Settlement { transaction: "0xabc".into(), network: "eip155:8453".into(), payer: Some("0xp".into()) };
        let doc: serde_json::Value =
            serde_json::from_slice(&STANDARD.decode(payment_response(&s)).unwrap_or_default()).unwrap_or_default();
        assert_eq!(
            doc,
            serde_json::json!({"success": true, "transaction": "0xabc", "network": "eip155:8453", "payer": "0xp"})
        );
        let doc: serde_json::Value = serde_json::from_slice(
            &STANDARD.decode(payment_failure("insufficient_funds", "eip155:8453")).unwrap_or_default(),
        )
        .unwrap_or_default();
        assert_eq!(
            doc,
            serde_json::json!({"success": false, "errorReason": "insufficient_funds", "transaction": "", "network": "eip155:8453"})
        );
    }
}
