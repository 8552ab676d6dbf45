//! The license and x402 dialects in the proxy: a request in a charge group
//! that carries `Authorization: License <token>` is verified locally
//! (`crawlgate_payment::rsl`), one that carries `PAYMENT-SIGNATURE` is
//! verified by the facilitator (`crawlgate_payment::x402`); either is then
//! forwarded, and a 2xx is recorded in the ledger (the x402 payment
//! settled first) before its headers go out. Both credentials are removed
//! before the origin sees the request.
//!
//! A settlement that fails after the origin answered is not a free page:
//! the origin's response is dropped and the client gets a 402 with a
//! failed `PAYMENT-RESPONSE` and a fresh `PAYMENT-REQUIRED`
//! (`fail_to_proxy` writes it, nothing having been sent yet).

use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use crawlgate_payment::clients::Dialects;
use crawlgate_payment::rsl::{self, LicenseError};
use crawlgate_payment::x402::{self, Facilitator, PaymentPayload, Requirements, X402Error};
use crawlgate_policy::payment::{Dialect, PaymentSettings, Price};
use crawlgate_policy::Policy;
use http::header;
use pingora::http::{RequestHeader, ResponseHeader};
use pingora::proxy::Session;
use pingora::{Error, ErrorType, Result};

use crate::state::{Shared, Snapshot};

/// The `code` labels of `crawlgate_payment_errors_total` for the license
/// and x402 dialects.
pub const DIALECT_ERRORS: [&str; 9] = [
    "license_invalid_request",
    "license_invalid_token",
    "license_keys_unavailable",
    "x402_malformed",
    "x402_mismatch",
    "x402_rejected",
    "x402_timeout",
    "x402_facilitator",
    "x402_settle_failed",
];

/// What a request paid with, carried to the response phase.
#[derive(Debug)]
pub enum Paid {
    /// A verified license token.
    License {
        /// `sub`.
        subject: Option<String>,
        /// `jti`, the ledger's settlement reference.
        token_id: Option<String>,
    },
    /// An x402 payment the facilitator verified, settled on a 2xx.
    X402 {
        /// The client's payment, sent again to `/settle`.
        payment: Box<PaymentPayload>,
        /// This resource's requirements.
        requirements: Box<Requirements>,
        /// The resource URL of the 402 (for a new one after a failed
        /// settlement).
        resource: String,
        /// The payer `/verify` named.
        payer: Option<String>,
        /// Why settlement failed, once it did: the response is a 402.
        settle_failed: Option<String>,
    },
}

/// What the request phase did.
pub enum Outcome {
    /// No license or x402 credential, and Cloudflare's dialect applies.
    NotMine,
    /// Forward; the response phase records (and settles).
    Forward(Paid),
    /// Answered here (401, 402, 503).
    Answered,
}

/// The request's `Authorization` lines.
fn authorization(req: &RequestHeader) -> Vec<&[u8]> {
    req.headers.get_all(header::AUTHORIZATION).iter().map(|v| v.as_bytes()).collect()
}

/// The URL this request's resource has (for x402's `resource`): named by
/// the site's hosts, not by whatever `Host` the client sent
/// ([`PaymentSettings::resource_url`]).
fn resource_url(pay: &PaymentSettings, req: &RequestHeader, path: &str) -> String {
    pay.resource_url(req.headers.get(header::HOST).and_then(|h| h.to_str().ok()), path)
}

/// The x402 requirements of `price`, if the policy offers x402.
fn requirements(d: &Dialects, price: Price) -> Option<(&Facilitator, Requirements)> {
    let (cfg, client) = d.x402()?;
    let decimal = decimal(price);
    x402::requirements(cfg, price.currency.code(), &decimal).ok().map(|r| (client, r))
}

/// The `PAYMENT-REQUIRED` value for `price` when the policy offers x402:
/// another dialect's 402 names it too, so that a client that speaks only
/// x402 learns how to pay.
pub fn x402_required(
    d: &Dialects,
    pay: &PaymentSettings,
    req: &RequestHeader,
    price: Price,
    path: &str,
) -> Option<String> {
    if !pay.offers(Dialect::X402) {
        return None;
    }
    let (_, ours) = requirements(d, price)?;
    Some(x402::payment_required(&ours, &resource_url(pay, req, path), "PAYMENT-SIGNATURE header is required"))
}

/// `price` as a decimal number (`0.01`).
fn decimal(price: Price) -> String {
    let text = price.to_string();
    text.split_once(' ').map_or(text.clone(), |(_, d)| d.to_string())
}

/// Request phase of a priced request in a charge group: a license token
/// or an x402 payment is verified and the request forwarded; a request
/// with neither, where Cloudflare's dialect cannot apply (not offered, or
/// the request is not signed), is answered with what the offered dialects
/// ask for. Both credentials are removed from what the origin gets.
pub async fn request(
    shared: &Shared,
    session: &mut Session,
    policy: &Policy,
    d: &Dialects,
    price: Price,
    path: &str,
) -> Result<Outcome> {
    let pay = policy.payment();
    let req = session.req_header();
    let auth = authorization(req);
    let has_license = auth.iter().any(|v| rsl::is_license_authorization(v));
    let signature = req.headers.get(x402::PAYMENT_SIGNATURE).map(|v| v.as_bytes());
    let signed = req.headers.contains_key("signature-input");
    let outcome = match (d.license(), has_license, &signature) {
        (Some(verifier), true, _) if pay.offers(Dialect::License) => {
            let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |t| t.as_secs());
            let verdict = match rsl::license_token(&auth) {
                Ok(token) => verifier.verify(token, path, now).await,
                Err(e) => Err(e),
            };
            match verdict {
                Ok(l) => Outcome::Forward(Paid::License { subject: l.subject, token_id: l.token_id }),
                Err(e) => {
                    shared.metrics.payment().error_code(license_code(&e));
                    Box::pin(refuse_license(session, pay, &e)).await?;
                    Outcome::Answered
                }
            }
        }
        (_, _, Some(sig)) if pay.offers(Dialect::X402) => match requirements(d, price) {
            None => Outcome::NotMine,
            Some((client, ours)) => {
                let resource = resource_url(pay, session.req_header(), path);
                let checked =
                    x402::parse_payment_signature(sig).and_then(|p| x402::check_accepted(&p, &ours).map(|()| p));
                let verified = match checked {
                    Ok(p) => client.verify(&p, &ours).await.map(|v| (p, v)),
                    Err(e) => Err(e),
                };
                match verified {
                    Ok((p, v)) => Outcome::Forward(Paid::X402 {
                        payment: Box::new(p),
                        requirements: Box::new(ours),
                        resource,
                        payer: v.payer,
                        settle_failed: None,
                    }),
                    Err(e) => {
                        shared.metrics.payment().error_code(e.code());
                        tracing::debug!(path, error = %e, "x402 payment refused");
                        Box::pin(payment_required(session, pay, &ours, &resource, &e.to_string(), None)).await?;
                        Outcome::Answered
                    }
                }
            }
        },
        _ if pay.offers(Dialect::CrawlerPrice)
            && (signed || !(pay.offers(Dialect::X402) || pay.offers(Dialect::License))) =>
        {
            Outcome::NotMine
        }
        _ => match requirements(d, price).filter(|_| pay.offers(Dialect::X402)) {
            Some((_, ours)) => {
                let resource = resource_url(pay, session.req_header(), path);
                let error = "PAYMENT-SIGNATURE header is required";
                Box::pin(payment_required(session, pay, &ours, &resource, error, None)).await?;
                Outcome::Answered
            }
            None if pay.offers(Dialect::License) => {
                let e = LicenseError::InvalidRequest("the request carries no License token".into());
                shared.metrics.payment().error_code(license_code(&e));
                Box::pin(refuse_license(session, pay, &e)).await?;
                Outcome::Answered
            }
            None => Outcome::NotMine,
        },
    };
    Ok(outcome)
}

/// Removes the dialects' credentials: `Authorization: License` lines (other
/// schemes are the origin's) and `PAYMENT-SIGNATURE`.
pub fn strip(req: &mut RequestHeader, pay: &PaymentSettings) {
    if pay.offers(Dialect::License) {
        let keep: Vec<http::HeaderValue> = req
            .headers
            .get_all(header::AUTHORIZATION)
            .iter()
            .filter(|v| !rsl::is_license_authorization(v.as_bytes()))
            .cloned()
            .collect();
        if req.headers.contains_key(header::AUTHORIZATION) {
            req.remove_header(&header::AUTHORIZATION);
            for v in keep {
                let _ = req.append_header(header::AUTHORIZATION, v);
            }
        }
    }
    if pay.offers(Dialect::X402) {
        req.remove_header(x402::PAYMENT_SIGNATURE);
    }
}

fn license_code(e: &LicenseError) -> &'static str {
    match e {
        LicenseError::InvalidRequest(_) => "license_invalid_request",
        LicenseError::KeysUnavailable(_) => "license_keys_unavailable",
        _ => "license_invalid_token",
    }
}

/// The 401 (or 503) of a missing or bad license token, RSL 1.0's
/// `WWW-Authenticate: License error=..., error_description=...`.
async fn refuse_license(session: &mut Session, pay: &PaymentSettings, e: &LicenseError) -> Result<()> {
    let challenge = e.www_authenticate();
    let terms = pay.terms_link();
    let mut headers: Vec<(http::HeaderName, &str)> = vec![
        (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
        (header::CACHE_CONTROL, "no-store"),
        (header::WWW_AUTHENTICATE, &challenge),
    ];
    if let Some(t) = &terms {
        headers.push((header::LINK, t));
    }
    let status = e.status();
    let body = match status {
        503 => format!("503 Service Unavailable: {}; retry later\n", e.description()),
        _ => format!("401 Unauthorized: {}; present a license token from this site's license server as Authorization: License <token>\n", e.description()),
    };
    crate::respond::write(session, status, &headers, Bytes::from(body)).await
}

/// A 402 with `PAYMENT-REQUIRED` naming `ours` (and why, in its `error`),
/// the terms `Link`, and a failed `PAYMENT-RESPONSE` when given.
async fn payment_required(
    session: &mut Session,
    pay: &PaymentSettings,
    ours: &Requirements,
    resource: &str,
    error: &str,
    failed: Option<&str>,
) -> Result<()> {
    payment_required_reply(pay, ours, resource, error, failed).write(session).await
}

/// The response [`payment_required`] writes.
fn payment_required_reply(
    pay: &PaymentSettings,
    ours: &Requirements,
    resource: &str,
    error: &str,
    failed: Option<&str>,
) -> crate::respond::Reply {
    let required = x402::payment_required(ours, resource, error);
    let mut headers: Vec<(http::HeaderName, String)> = vec![
        (header::CONTENT_TYPE, "text/plain; charset=utf-8".into()),
        (header::CACHE_CONTROL, "no-store".into()),
        (http::HeaderName::from_static(x402::PAYMENT_REQUIRED), required),
    ];
    if let Some(f) = failed {
        headers.push((http::HeaderName::from_static(x402::PAYMENT_RESPONSE), f.into()));
    }
    if let Some(t) = pay.terms_link() {
        headers.push((header::LINK, t));
    }
    let body =
        format!("402 Payment Required: {error}; pay as PAYMENT-REQUIRED describes and retry with PAYMENT-SIGNATURE\n");
    crate::respond::Reply { status: 402, headers, body: Bytes::from(body) }
}

/// Response phase of a paid request: on a 2xx, settles an x402 payment,
/// records the charge (awaiting the commit), and adds `PAYMENT-RESPONSE`
/// or the license `Link`. Other statuses are neither settled nor charged.
/// `Err(ledger)` when the ledger could not record (a 500), `Err(402)` when
/// settlement failed (see [`settle_refusal`]).
pub async fn response(
    shared: &Shared,
    resp: &mut ResponseHeader,
    paid: &mut Paid,
    snap: &Snapshot,
    c: crate::payment::Charge<'_>,
) -> std::result::Result<Option<crate::payment::Row>, Charged> {
    let (policy, d) = (&snap.policy, &*snap.dialects);
    for name in [x402::PAYMENT_RESPONSE, x402::PAYMENT_REQUIRED] {
        resp.remove_header(name);
    }
    let status = resp.status.as_u16();
    if !(200..300).contains(&status) {
        return Ok(None);
    }
    let Some(charging) = snap.handles.charging.as_deref() else {
        return Err(Charged::Ledger("no ledger is open".into()));
    };
    let (dialect, subject, settlement) = match paid {
        Paid::License { subject, token_id } => (Dialect::License, subject.clone(), token_id.clone()),
        Paid::X402 { payment, requirements, payer, settle_failed, .. } => {
            let Some((_, client)) = d.x402() else {
                return Err(Charged::Ledger("no facilitator".into()));
            };
            match client.settle(payment, requirements).await {
                Ok(s) => {
                    let subject = s.payer.clone().or_else(|| payer.clone());
                    resp.insert_header(x402::PAYMENT_RESPONSE, x402::payment_response(&s))
                        .map_err(|e| Charged::Ledger(e.to_string()))?;
                    (Dialect::X402, subject, Some(s.transaction))
                }
                Err(e) => {
                    shared.metrics.payment().error_code(e.code());
                    let reason = match &e {
                        X402Error::SettleFailed(r) => r.clone(),
                        other => other.to_string(),
                    };
                    tracing::info!(path = c.path, error = %e, "x402 settlement failed after the origin answered; answering 402");
                    *settle_failed = Some(reason);
                    return Err(Charged::SettleFailed);
                }
            }
        }
    };
    let (agent, path, price) = (c.agent, c.path, c.price);
    let record = c.record(charging, resp, dialect, subject.unwrap_or_default(), settlement.clone());
    match crate::payment::commit(charging, record).await {
        Ok(row) => {
            shared.metrics.payment().charge(agent, dialect, price);
            if dialect == Dialect::License {
                if let Some(link) = policy.license_link() {
                    resp.append_header(header::LINK, link).map_err(|e| Charged::Ledger(e.to_string()))?;
                }
            }
            if let Some(link) = policy.payment().terms_link() {
                resp.append_header(header::LINK, link).map_err(|e| Charged::Ledger(e.to_string()))?;
            }
            Ok(Some(row))
        }
        Err(e) => {
            if let Some(s) = &settlement {
                // Settled but not recorded: the operator reconciles from the log.
                tracing::error!(dialect = dialect.as_str(), settlement = %s, path, "A settled payment could not be recorded in the ledger");
            }
            if e.unavailable() {
                return Err(Charged::Unavailable(e.to_string()));
            }
            Err(Charged::Ledger(e.to_string()))
        }
    }
}

/// Why a paid response could not go out as paid.
#[derive(Debug)]
pub enum Charged {
    /// The ledger could not record it: a 500 `InternalError`.
    Ledger(String),
    /// The ledger cannot take charges now: a 503 with Retry-After.
    Unavailable(String),
    /// The x402 settlement failed: a 402.
    SettleFailed,
}

/// The error that makes Pingora call `fail_to_proxy` for a failed settlement.
pub fn settle_error() -> Box<Error> {
    Error::explain(ErrorType::HTTPStatus(402), "the x402 payment could not be settled")
}

/// Writes the 402 of a failed settlement, when `paid` is one: a new
/// `PAYMENT-REQUIRED` and the failed `PAYMENT-RESPONSE`. `Ok(false)` when
/// there is nothing to write.
pub async fn settle_refusal(session: &mut Session, policy: &Policy, paid: &Paid) -> Result<bool> {
    let Some(reply) = settle_refusal_reply(policy, paid) else { return Ok(false) };
    reply.write(session).await?;
    Ok(true)
}

/// The 402 [`settle_refusal`] writes, when `paid` is a failed settlement.
pub fn settle_refusal_reply(policy: &Policy, paid: &Paid) -> Option<crate::respond::Reply> {
    let Paid::X402 { requirements, resource, settle_failed: Some(reason), .. } = paid else { return None };
    let failed = x402::payment_failure(reason, &requirements.network);
    let error = format!("settlement failed: {reason}");
    Some(payment_required_reply(policy.payment(), requirements, resource, &error, Some(&failed)))
}
