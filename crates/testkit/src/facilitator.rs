//! A test x402 v2 facilitator: `POST /verify`, `POST /settle` and
//! `GET /supported` with the bodies x402 v2 defines, for one network and
//! the `exact` scheme. Payments are made by [`payment_signature`]: an
//! EIP-3009 style `authorization` (`from`, `to`, `value`, `validAfter`,
//! `validBefore`, `nonce`) whose `signature` is a SHA-256 the double can
//! check in place of a chain. A nonce settles once.
//!
//! Modes: [`Mode::Valid`] checks payments as described; [`Mode::InvalidPayload`]
//! finds every payload invalid; [`Mode::Slow`] answers everything after a
//! delay (for timeouts); [`Mode::SettleFailure`] verifies but fails every
//! settlement.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use sha2::{Digest, Sha256};

use crate::stub::{StubReply, StubRequest, StubServer};

/// How the facilitator behaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Verifies and settles valid payments.
    Valid,
    /// Every payload is invalid (`invalid_exact_evm_payload_signature`).
    InvalidPayload,
    /// Answers after this delay.
    Slow(Duration),
    /// Verifies, then fails every settlement (`insufficient_funds`).
    SettleFailure,
    /// Answers `/verify` and `/settle` with a 400 whose body grants
    /// (`isValid: true`, `success: true`): a status and a body that
    /// disagree.
    Contradictory,
}

struct State {
    mode: Mode,
    network: String,
    verifies: usize,
    settles: usize,
    settled: Vec<String>,
    nonces: HashSet<String>,
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The facilitator; stopped on drop.
pub struct Facilitator {
    stub: StubServer,
    state: Arc<Mutex<State>>,
}

impl Facilitator {
    /// Starts in [`Mode::Valid`] for `network` (CAIP-2).
    pub fn start(network: &str) -> Facilitator {
        let state = Arc::new(Mutex::new(State {
            mode: Mode::Valid,
            network: network.into(),
            verifies: 0,
            settles: 0,
            settled: Vec::new(),
            nonces: HashSet::new(),
        }));
        let shared = state.clone();
        let stub = StubServer::start(move |req| answer(&shared, req));
        Facilitator { stub, state }
    }

    /// The base URL.
    pub fn url(&self) -> String {
        self.stub.url("")
    }

    /// Changes the mode.
    pub fn set_mode(&self, mode: Mode) {
        lock(&self.state).mode = mode;
    }

    /// `/verify` calls so far.
    pub fn verify_calls(&self) -> usize {
        lock(&self.state).verifies
    }

    /// `/settle` calls so far.
    pub fn settle_calls(&self) -> usize {
        lock(&self.state).settles
    }

    /// The transactions settled, in order.
    pub fn settled(&self) -> Vec<String> {
        lock(&self.state).settled.clone()
    }
}

/// The test signature of an authorization: hex SHA-256 of
/// `from|to|value|nonce`, `0x`-prefixed.
pub fn test_signature(from: &str, to: &str, value: &str, nonce: &str) -> String {
    hex0x(&Sha256::digest(format!("{from}|{to}|{value}|{nonce}").as_bytes()))
}

/// The transaction id a settled nonce gets.
pub fn transaction_of(nonce: &str) -> String {
    hex0x(&Sha256::digest(format!("tx|{nonce}").as_bytes()))
}

fn hex0x(bytes: &[u8]) -> String {
    let mut s = String::from("0x");
    for b in bytes {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// A client's `PAYMENT-SIGNATURE` paying `accepted` (one entry of a 402's
/// `accepts`, as JSON) from `payer`, with `nonce`: base64 JSON
/// `{x402Version: 2, resource, accepted, payload: {signature, authorization}}`.
pub fn payment_signature(accepted: &serde_json::Value, payer: &str, nonce: &str) -> String {
    let to = accepted["payTo"].as_str().unwrap_or("");
    let value = accepted["amount"].as_str().unwrap_or("");
    let doc = serde_json::json!({
        "x402Version": 2,
        "resource": {"url": "", "description": "", "mimeType": ""},
        "accepted": accepted,
        "payload": {
            "signature": test_signature(payer, to, value, nonce),
            "authorization": {
                "from": payer, "to": to, "value": value,
                "validAfter": "0", "validBefore": (now() + 600).to_string(), "nonce": nonce,
            },
        },
    });
    STANDARD.encode(doc.to_string())
}

/// The payer of a valid payment, or why it is invalid (x402 reason codes).
fn check(body: &serde_json::Value, network: &str, nonces: &HashSet<String>) -> Result<String, &'static str> {
    if body["x402Version"] != 2 || body["paymentPayload"]["x402Version"] != 2 {
        return Err("invalid_x402_version");
    }
    let req = &body["paymentRequirements"];
    let payload = &body["paymentPayload"];
    if req["scheme"] != "exact" || payload["accepted"]["scheme"] != "exact" {
        return Err("unsupported_scheme");
    }
    if req["network"] != network || payload["accepted"]["network"] != network {
        return Err("invalid_network");
    }
    for field in ["amount", "asset", "payTo"] {
        if payload["accepted"][field] != req[field] {
            return Err("invalid_payment_requirements");
        }
    }
    let auth = &payload["payload"]["authorization"];
    let s = |v: &serde_json::Value| v.as_str().unwrap_or("").to_string();
    let (from, to, value, nonce) = (s(&auth["from"]), s(&auth["to"]), s(&auth["value"]), s(&auth["nonce"]));
    if to != s(&req["payTo"]) {
        return Err("invalid_exact_evm_payload_recipient_mismatch");
    }
    if value != s(&req["amount"]) {
        return Err("invalid_exact_evm_payload_authorization_value");
    }
    if s(&auth["validBefore"]).parse::<u64>().unwrap_or(0) <= now() {
        return Err("invalid_exact_evm_payload_authorization_valid_before");
    }
    if s(&payload["payload"]["signature"]) != test_signature(&from, &to, &value, &nonce) {
        return Err("invalid_exact_evm_payload_signature");
    }
    if nonces.contains(&nonce) {
        return Err("invalid_exact_evm_payload_authorization_nonce_used");
    }
    Ok(from)
}

fn answer(state: &Mutex<State>, req: &StubRequest) -> StubReply {
    let mode = lock(state).mode;
    let delay = match mode {
        Mode::Slow(d) => d,
        _ => Duration::ZERO,
    };
    let reply = answer_now(state, req, mode);
    match reply {
        StubReply::Respond { status, headers, body, .. } => StubReply::Respond { status, headers, body, delay },
        other => other,
    }
}

fn answer_now(state: &Mutex<State>, req: &StubRequest, mode: Mode) -> StubReply {
    let mut st = lock(state);
    let network = st.network.clone();
    let body: serde_json::Value = serde_json::from_slice(&req.body).unwrap_or(serde_json::Value::Null);
    match (req.method.as_str(), req.target.as_str()) {
        ("POST", "/verify" | "/settle") if mode == Mode::Contradictory => StubReply::json(
            400,
            &serde_json::json!({"isValid": true, "success": true, "transaction": "0xforged", "network": network}),
        ),
        ("GET", "/supported") => StubReply::json(
            200,
            &serde_json::json!({
                "kinds": [{"x402Version": 2, "scheme": "exact", "network": network}],
                "extensions": [],
                "signers": {"eip155:*": ["0x0000000000000000000000000000000000000fac"]},
            }),
        ),
        ("POST", "/verify") => {
            st.verifies += 1;
            let payer = body["paymentPayload"]["payload"]["authorization"]["from"].clone();
            let verdict = match mode {
                Mode::InvalidPayload => Err("invalid_exact_evm_payload_signature"),
                _ => check(&body, &network, &st.nonces),
            };
            match verdict {
                Ok(from) => StubReply::json(200, &serde_json::json!({"isValid": true, "payer": from})),
                Err(reason) => StubReply::json(
                    400,
                    &serde_json::json!({"isValid": false, "invalidReason": reason, "payer": payer}),
                ),
            }
        }
        ("POST", "/settle") => {
            st.settles += 1;
            let payer = body["paymentPayload"]["payload"]["authorization"]["from"].clone();
            let verdict = match mode {
                Mode::InvalidPayload => Err("invalid_exact_evm_payload_signature"),
                Mode::SettleFailure => Err("insufficient_funds"),
                _ => check(&body, &network, &st.nonces),
            };
            match verdict {
                Ok(from) => {
                    let nonce =
                        body["paymentPayload"]["payload"]["authorization"]["nonce"].as_str().unwrap_or("").to_string();
                    let tx = transaction_of(&nonce);
                    st.nonces.insert(nonce);
                    st.settled.push(tx.clone());
                    StubReply::json(
                        200,
                        &serde_json::json!({"success": true, "transaction": tx, "network": network, "payer": from}),
                    )
                }
                Err(reason) => StubReply::json(
                    400,
                    &serde_json::json!({"success": false, "errorReason": reason, "transaction": "", "network": network, "payer": payer}),
                ),
            }
        }
        _ => StubReply::json(404, &serde_json::json!({"error": "not found"})),
    }
}
