//! Charging in the proxy: with the snapshot's ledger (`crate::handles`), asks
//! `crawlgate_policy::payment` what a forwarded request in a charge group
//! is answered, writes the refusals, and on a charged 2xx records the
//! charge in the ledger before the response says `crawler-charged`.
//!
//! When: a charge is committed (and an x402 payment settled) once the
//! origin's response is accepted. For most responses that is its header:
//! `response_filter` awaits the ledger's commit
//! ([`crawlgate_payment::ledger::Ledger::record`]) before the header goes
//! out. A converted Markdown response on HTTP/1.1 is held whole by the
//! connection until its conversion finished; its charge waits for that
//! ([`on_release`]): a conversion that fails leaves no charge and no
//! settlement, and the charge's fields are added to the held header when
//! it is released. A response that fails after its charge was committed
//! gets a void row ([`Pending::finish`]).
//!
//! Durability: the writer thread batches the commits of concurrent
//! requests. A ledger that cannot commit (disk full, locked, gone) turns
//! the charged response into a 500 `InternalError` (a held one's is sent
//! in its place): the page is not served unrecorded, and
//! `crawlgate_ledger_healthy` drops to 0.

use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use crawlgate_identity::Evidence;
use crawlgate_payment::charging::Charging;
use crawlgate_payment::ledger::Record;
use crawlgate_policy::payment::cloudflare::{self, Answer, CrawlerError, CrawlerRequest, Field, Signed};
use crawlgate_policy::payment::{Dialect, Price};
use crawlgate_policy::verification::{Method, Verification};
use crawlgate_policy::Policy;
use http::header;
use pingora::http::{RequestHeader, ResponseHeader};
use pingora::proxy::Session;
use pingora::{Error, ErrorType, Result};

use crate::conn::Release;
use crate::respond::Reply;
use crate::state::{Shared, Snapshot};

/// The payment keys that only a restart applies: the ledger is opened
/// once, when the first policy that charges is loaded (at start or on a
/// reload).
pub fn restart_only(policy: &Policy) -> (&'static str, String) {
    let p = policy.payment();
    let ledger = (&p.ledger, &p.ledger_spool, &p.ledger_password_file);
    ("payment.ledger", format!("{ledger:?} {:?} {}", p.instance_id, p.charging))
}

/// What a charged request still needs in the response phase.
#[derive(Debug)]
pub struct Pending {
    price: Price,
    in_band: bool,
    /// The ledger could not record the charge: the response is a 500,
    /// or a 503 when `unavailable`.
    failed: bool,
    /// The ledger refused the charge for now (its file removed or
    /// replaced, the spool past its bound): a 503 with Retry-After.
    unavailable: bool,
    /// The request's host and the crawler's consent, for the row.
    host: String,
    evidence: Option<String>,
    /// The ledger row, once recorded (its bytes are set at the end).
    row: Option<Row>,
    /// Paid with a license token or x402 rather than Cloudflare's headers.
    paid: Option<crate::paid::Paid>,
}

impl Pending {
    /// Whether its charge was recorded in the ledger (a failed response
    /// then voids it: [`Pending::finish`]).
    pub fn charged(&self) -> bool {
        self.row.is_some()
    }
}

/// A committed ledger row, for the bytes of [`Pending::finish`].
#[derive(Debug, Clone)]
pub struct Row {
    /// The charge id.
    id: String,
    /// The bytes it was written with (the origin's Content-Length).
    bytes: Option<u64>,
}

/// A charge about to be recorded: the parts both dialect paths share.
pub struct Charge<'a> {
    /// The request's price.
    pub price: Price,
    /// The agent's token.
    pub agent: &'a str,
    /// The canonical path.
    pub path: &'a str,
    /// The request id.
    pub request_id: String,
    /// The request's host.
    pub host: &'a str,
    /// The crawler's consent (JSON), if kept.
    pub evidence: Option<String>,
}

impl Charge<'_> {
    /// The ledger row of this charge, paid in `dialect` by `subject` and
    /// answered with `resp`.
    pub fn record(
        self,
        charging: &Charging,
        resp: &ResponseHeader,
        dialect: Dialect,
        subject: String,
        settlement: Option<String>,
    ) -> Record {
        Record {
            charge_id: String::new(),
            time_ms: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(0)),
            request_id: self.request_id,
            host: self.host.to_string(),
            agent: self.agent.to_string(),
            subject,
            path: self.path.to_string(),
            amount_minor: self.price.minor,
            currency: self.price.currency.code().to_string(),
            exponent: self.price.currency.exponent(),
            dialect: dialect.as_str().to_string(),
            settlement,
            evidence: self.evidence,
            status: resp.status.as_u16(),
            bytes: resp.headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse().ok()),
            instance: charging.instance.clone(),
            voids: None,
            void: None,
        }
    }
}

/// Records `record` (awaiting its commit).
pub async fn commit(
    charging: &Charging,
    record: Record,
) -> std::result::Result<Row, crawlgate_payment::ledger::LedgerError> {
    let bytes = record.bytes;
    charging.ledger.record(record).await.map(|id| Row { id, bytes })
}

/// What the request phase did.
pub enum Step {
    /// Not a charged path: forward as usual.
    Pass,
    /// Forward; the response phase charges or states the price.
    Forward(Box<Pending>),
    /// Answered here (402, 400, 403); the origin is not contacted.
    Answered,
}

/// The request's field `name` as [`Field`].
fn field<'r>(req: &'r RequestHeader, name: &str) -> Field<'r> {
    let mut lines = req.headers.get_all(name).iter();
    match (lines.next(), lines.next()) {
        (None, _) => Field::Absent,
        (Some(v), None) => Field::One(v.as_bytes()),
        _ => Field::Many,
    }
}

/// What the request's signature showed for charging: only a signature
/// that proved the token charges.
fn signed(req: &RequestHeader, verification: Verification, evidence: Option<&Evidence>, covered: &[String]) -> Signed {
    match (verification, evidence) {
        (Verification::Verified(Method::Signature), _) => Signed::Verified {
            covers_exact: covered.iter().any(|c| c == cloudflare::EXACT_PRICE),
            covers_max: covered.iter().any(|c| c == cloudflare::MAX_PRICE),
        },
        (_, Some(Evidence::BadSignature { .. })) => Signed::Invalid,
        _ if req.headers.contains_key("signature") || req.headers.contains_key("signature-input") => Signed::Unverified,
        _ => Signed::Absent,
    }
}

/// Longest consent field kept in a ledger row: a signature is some
/// hundred bytes; a field past this is cut (marked `truncated`).
const EVIDENCE_MAX: usize = 4096;

/// The request's host for the ledger: the URI's authority or `Host`,
/// lowercase, without the port.
fn host_of(req: &RequestHeader) -> String {
    let raw = req.uri.host().map(str::to_string).or_else(|| {
        req.headers.get(header::HOST).and_then(|v| v.to_str().ok()).map(|h| {
            match h.rsplit_once(':') {
                Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) && !name.ends_with(':') => name,
                _ => h,
            }
            .to_string()
        })
    });
    let mut host = raw.unwrap_or_default().to_ascii_lowercase();
    host.truncate(255);
    host
}

/// A field's value for the evidence, cut at [`EVIDENCE_MAX`].
fn evidence_field(req: &RequestHeader, name: &str) -> Option<String> {
    let v = req.headers.get(name)?;
    let text = String::from_utf8_lossy(v.as_bytes());
    Some(if text.len() > EVIDENCE_MAX {
        let mut end = EVIDENCE_MAX;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        format!("{} (truncated)", &text[..end])
    } else {
        text.into_owned()
    })
}

/// What a signed crawler consented to (RFC 9421 HTTP Message Signatures):
/// the covered components the verifier checked, and the
/// `Signature-Input` and `Signature` fields as sent.
fn signature_evidence(req: &RequestHeader, covered: &[String]) -> Option<String> {
    let v = serde_json::json!({"signature": {
        "covered": covered,
        "input": evidence_field(req, "signature-input"),
        "value": evidence_field(req, "signature"),
    }});
    Some(v.to_string())
}

/// What a license or x402 payment shows: the license token's id and
/// issuer, or the x402 payer and network.
fn paid_evidence(paid: &crate::paid::Paid, pay: &crawlgate_policy::payment::PaymentSettings) -> Option<String> {
    let v = match paid {
        crate::paid::Paid::License { subject, token_id } => serde_json::json!({"license": {
            "jti": token_id,
            "iss": pay.rsl.as_ref().map(|r| r.issuer.as_str()),
            "sub": subject,
        }}),
        crate::paid::Paid::X402 { payer, requirements, .. } => serde_json::json!({"x402": {
            "payer": payer,
            "network": requirements.network,
        }}),
    };
    Some(v.to_string())
}

/// Request phase of a forwarded request that the decision priced (`price`,
/// `None` when free): answers it or lets it through to be charged. Strips
/// the dialect's request fields before the origin sees them (whenever the
/// policy charges).
#[allow(clippy::too_many_arguments)]
pub async fn request(
    shared: &Shared,
    session: &mut Session,
    policy: &Policy,
    dialects: &crawlgate_payment::clients::Dialects,
    price: Option<Price>,
    path: &str,
    verification: Verification,
    evidence: Option<&Evidence>,
    covered: &[String],
    peer: Option<IpAddr>,
) -> Result<Step> {
    let pay = policy.payment();
    if !pay.charging {
        return Ok(Step::Pass);
    }
    let host = host_of(session.req_header());
    let mine = match price {
        Some(price) if pay.offers(Dialect::License) || pay.offers(Dialect::X402) => {
            crate::paid::request(shared, session, policy, dialects, price, path).await?
        }
        _ => crate::paid::Outcome::NotMine,
    };
    let step = match (mine, price) {
        (crate::paid::Outcome::Answered, _) => {
            crate::paid::strip(session.req_header_mut(), pay);
            return Ok(Step::Answered);
        }
        (crate::paid::Outcome::Forward(paid), Some(price)) => {
            let evidence = paid_evidence(&paid, pay);
            Step::Forward(Box::new(Pending {
                price,
                in_band: false,
                failed: false,
                unavailable: false,
                host,
                evidence,
                row: None,
                paid: Some(paid),
            }))
        }
        (_, price) => match price {
            Some(price) if pay.offers(Dialect::CrawlerPrice) => {
                let req = session.req_header();
                let trusted = peer.is_some_and(|p| policy.settings().server.client_address.is_trusted_proxy(p));
                let cf = (pay.cloudflare_origin && trusted)
                    .then(|| req.headers.get(cloudflare::CF_PAY_PER_CRAWL).map(|v| v.as_bytes()))
                    .flatten();
                let input = CrawlerRequest {
                    signed: signed(req, verification, evidence, covered),
                    exact: field(req, cloudflare::EXACT_PRICE),
                    max: field(req, cloudflare::MAX_PRICE),
                    cloudflare: cf,
                };
                match cloudflare::decide(price, &input) {
                    Answer::Charge { price } => {
                        let evidence = signature_evidence(req, covered);
                        Step::Forward(Box::new(Pending {
                            price,
                            in_band: false,
                            failed: false,
                            unavailable: false,
                            host,
                            evidence,
                            row: None,
                            paid: None,
                        }))
                    }
                    Answer::InBand { price } => Step::Forward(Box::new(Pending {
                        price,
                        in_band: true,
                        failed: false,
                        unavailable: false,
                        host,
                        evidence: None,
                        row: None,
                        paid: None,
                    })),
                    Answer::Untouched => Step::Pass,
                    Answer::Refuse { status, error, price: stated } => {
                        if let Some(e) = error {
                            shared.metrics.payment().error(e);
                        }
                        // A 402 names every dialect offered: x402's
                        // requirements too, when the policy offers it.
                        let x402 = (status == 402)
                            .then(|| crate::paid::x402_required(dialects, pay, session.req_header(), price, path))
                            .flatten();
                        let terms = pay.terms_link();
                        let refusal =
                            Refusal { terms: terms.as_deref(), status, error, price: stated, x402: x402.as_deref() };
                        Box::pin(refuse_with(session, refusal, None)).await?;
                        return Ok(Step::Answered);
                    }
                }
            }
            // A price that no dialect in force can take: never forwarded
            // free, answered 402 with the price and the terms.
            Some(price) => {
                let x402 = crate::paid::x402_required(dialects, pay, session.req_header(), price, path);
                let terms = pay.terms_link();
                let refusal = Refusal {
                    terms: terms.as_deref(),
                    status: 402,
                    error: None,
                    price: Some(price),
                    x402: x402.as_deref(),
                };
                let body = format!(
                    "402 Payment Required: this path costs {price}, and the request carries no payment this site takes; see the terms\n"
                );
                crate::paid::strip(session.req_header_mut(), pay);
                Box::pin(refuse_with(session, refusal, Some(body))).await?;
                return Ok(Step::Answered);
            }
            None => Step::Pass,
        },
    };
    let req = session.req_header_mut();
    for name in cloudflare::REQUEST_FIELDS {
        req.remove_header(name);
    }
    crate::paid::strip(req, pay);
    Ok(step)
}

/// Answers a block in a charge group (a path its rules disallow, a
/// claim its group blocks): 403 `CrawlerForbidden` with the block's
/// explanation, since no price buys it.
pub async fn forbidden(shared: &Shared, session: &mut Session, policy: &Policy, body: String) -> Result<()> {
    shared.metrics.payment().error(CrawlerError::CrawlerForbidden);
    let terms = policy.payment().terms_link();
    let refusal = Refusal {
        terms: terms.as_deref(),
        status: 403,
        error: Some(CrawlerError::CrawlerForbidden),
        price: None,
        x402: None,
    };
    refuse_with(session, refusal, Some(body)).await
}

/// What a refusal says.
struct Refusal<'a> {
    terms: Option<&'a str>,
    status: u16,
    error: Option<CrawlerError>,
    price: Option<Price>,
    /// x402's `PAYMENT-REQUIRED`, when that dialect is offered too.
    x402: Option<&'a str>,
}

async fn refuse_with(session: &mut Session, r: Refusal<'_>, body: Option<String>) -> Result<()> {
    refusal(r, body).write(session).await
}

/// The response a refusal is.
fn refusal(r: Refusal<'_>, body: Option<String>) -> Reply {
    let Refusal { terms, status, error, price, x402 } = r;
    let price_text = price.map(|p| p.to_string());
    let mut headers: Vec<(http::HeaderName, String)> =
        vec![(header::CONTENT_TYPE, "text/plain; charset=utf-8".into()), (header::CACHE_CONTROL, "no-store".into())];
    if let Some(p) = &price_text {
        headers.push((http::HeaderName::from_static(cloudflare::PRICE), p.clone()));
    }
    if let Some(e) = error {
        headers.push((http::HeaderName::from_static(cloudflare::ERROR), e.as_str().into()));
    }
    if let Some(x) = x402 {
        headers.push((http::HeaderName::from_static(crawlgate_payment::x402::PAYMENT_REQUIRED), x.into()));
    }
    if let Some(t) = terms {
        headers.push((header::LINK, t.into()));
    }
    let title = http::StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason()).unwrap_or("Error");
    let body = match (body, error, &price_text) {
        (Some(b), _, _) => b,
        (None, Some(e), _) => format!("{status} {title}: {}\n", e.reason()),
        (None, None, Some(p)) => format!(
            "{status} {title}: this path costs {p}; retry with a crawler-exact-price or crawler-max-price header covered by the request's Web Bot Auth signature\n"
        ),
        (None, None, None) => format!("{status} {title}\n"),
    };
    Reply { status, headers, body: Bytes::from(body) }
}

/// Response phase of a request with a pending charge: a 2xx is recorded
/// (awaiting the commit) and marked `crawler-charged`; in-band pricing
/// states `crawler-price`. Any `crawler-*` field the origin sent is
/// dropped first: only crawlgate says what was charged. An `Err` means
/// the charge could not be recorded; the caller answers 500.
#[allow(clippy::too_many_arguments)]
pub async fn response(
    shared: &Shared,
    resp: &mut ResponseHeader,
    pending: &mut Pending,
    snap: &Snapshot,
    agent: &str,
    subject: &str,
    path: &str,
    request_id: String,
) -> Result<()> {
    let policy = &snap.policy;
    pending.strip(resp);
    let evidence = pending.evidence.clone();
    let charge = Charge { price: pending.price, agent, path, request_id, host: &pending.host, evidence };
    if let Some(paid) = pending.paid.as_mut() {
        let c = charge;
        return match crate::paid::response(shared, resp, paid, snap, c).await {
            Ok(row) => {
                if row.is_some() {
                    shared.metrics.payment().ledger_healthy(true);
                }
                pending.row = row;
                Ok(())
            }
            Err(crate::paid::Charged::Ledger(why)) => Err(ledger_failed(shared, pending, &why)),
            Err(crate::paid::Charged::Unavailable(why)) => Err(ledger_unavailable(shared, pending, &why)),
            Err(crate::paid::Charged::SettleFailed) => Err(crate::paid::settle_error()),
        };
    }
    let price = pending.price.to_string();
    if pending.in_band {
        return resp.insert_header(cloudflare::PRICE, price.as_str()).map(|_| ());
    }
    let status = resp.status.as_u16();
    if !cloudflare::charged_status(status) {
        return Ok(());
    }
    let Some(charging) = snap.handles.charging.as_deref() else {
        return Err(ledger_failed(shared, pending, "no ledger is open"));
    };
    let record = charge.record(charging, resp, Dialect::CrawlerPrice, subject.to_string(), None);
    let m = shared.metrics.payment();
    match commit(charging, record).await {
        Ok(row) => {
            m.ledger_healthy(true);
            m.charge(agent, Dialect::CrawlerPrice, pending.price);
            pending.row = Some(row);
            resp.insert_header(cloudflare::CHARGED, price.as_str())?;
            if let Some(link) = policy.payment().terms_link() {
                resp.append_header(header::LINK, link)?;
            }
            Ok(())
        }
        Err(e) if e.unavailable() => Err(ledger_unavailable(shared, pending, &e.to_string())),
        Err(e) => Err(ledger_failed(shared, pending, &e.to_string())),
    }
}

/// The names a charge records, owned: a held response's charge is made
/// after the response hook returned.
pub struct Payer {
    /// The agent's token.
    pub agent: String,
    /// The verified key id, if any.
    pub subject: String,
    /// The canonical path.
    pub path: String,
    /// The request id.
    pub request_id: String,
}

/// Where the [`Pending`] of a held response's charge waits for the
/// connection's release, and comes back for the end of the request.
pub type Held = Arc<Mutex<Option<Box<Pending>>>>;

/// The charge of a response the connection holds whole (a converted
/// Markdown page on HTTP/1.1; `crate::conn::release_after`), made when the
/// connection is about to release it: once the conversion finished, never
/// when it failed first. Settles and records as [`response`] does for the
/// response's `status`, and resolves to the charge's fields for the held
/// header or, when the charge fails, to the 500 or 402 the response would
/// have got at its header, sent in its place. The [`Pending`] goes back to
/// `held` for [`Pending::finish`].
pub async fn on_release(shared: Arc<Shared>, snap: Arc<Snapshot>, held: Held, status: u16, payer: Payer) -> Release {
    let taken = held.lock().unwrap_or_else(PoisonError::into_inner).take();
    let Some(mut pending) = taken else {
        // Taken back by the end of the request first: the response is not
        // released uncharged.
        tracing::error!(status, "A held response's charge was gone at its release; answering 500");
        let r = Refusal { terms: None, status: 500, error: Some(CrawlerError::InternalError), price: None, x402: None };
        let reply = refusal(r, None);
        return Release::Instead(reply.status, reply.wire());
    };
    let Payer { agent, subject, path, request_id } = payer;
    let release = match ResponseHeader::build(status, Some(4)) {
        Ok(mut head) => {
            let charged = response(&shared, &mut head, &mut pending, &snap, &agent, &subject, &path, request_id);
            match Box::pin(charged).await {
                Ok(()) => {
                    let mut lines = Vec::new();
                    head.header_to_h1_wire(&mut lines);
                    Release::With(lines)
                }
                Err(_) => {
                    let reply = pending.refusal(&snap.policy);
                    Release::Instead(reply.status, reply.wire())
                }
            }
        }
        Err(e) => {
            let reply = Reply::plain(500, "500 Internal Server Error\n".into());
            tracing::error!(status, error = %e, "A held response's charge could not be made; answering 500");
            Release::Instead(reply.status, reply.wire())
        }
    };
    *held.lock().unwrap_or_else(PoisonError::into_inner) = Some(pending);
    release
}

/// The ledger refused the charge for now: a 503 with Retry-After, the
/// page not served.
fn ledger_unavailable(shared: &Shared, pending: &mut Pending, why: &str) -> Box<Error> {
    tracing::error!(reason = why, "A charge could not be recorded; answering 503");
    pending.failed = true;
    pending.unavailable = true;
    let m = shared.metrics.payment();
    m.ledger_healthy(false);
    m.error_code("ledger_unavailable");
    Error::explain(ErrorType::HTTPStatus(503), "the ledger cannot take charges now")
}

fn ledger_failed(shared: &Shared, pending: &mut Pending, why: &str) -> Box<Error> {
    tracing::error!(reason = why, "A charge could not be recorded; answering 500 InternalError");
    pending.failed = true;
    let m = shared.metrics.payment();
    m.ledger_healthy(false);
    m.error(CrawlerError::InternalError);
    Error::explain(ErrorType::HTTPStatus(500), "the ledger could not record the charge")
}

impl Pending {
    /// Drops the `crawler-*` fields the origin sent (and, for a license or
    /// x402 payment, its `PAYMENT-*` ones): only crawlgate says what was
    /// charged, also for a response charged later ([`on_release`]).
    pub fn strip(&self, resp: &mut ResponseHeader) {
        for name in [cloudflare::PRICE, cloudflare::CHARGED, cloudflare::ERROR] {
            resp.remove_header(name);
        }
        if self.paid.is_some() {
            for name in [crawlgate_payment::x402::PAYMENT_RESPONSE, crawlgate_payment::x402::PAYMENT_REQUIRED] {
                resp.remove_header(name);
            }
        }
    }

    /// Whether the charge failed (the ledger could not record it, or the
    /// x402 settlement failed): the client got a 500 or a 402.
    pub fn refused(&self) -> bool {
        self.failed || matches!(&self.paid, Some(crate::paid::Paid::X402 { settle_failed: Some(_), .. }))
    }

    /// The response of a charge that failed: the 402 of a failed
    /// settlement, else the 500 `InternalError`.
    fn refusal(&self, policy: &Policy) -> Reply {
        let settle = self.paid.as_ref().and_then(|paid| crate::paid::settle_refusal_reply(policy, paid));
        settle.unwrap_or_else(|| failure_reply(self.unavailable))
    }

    /// The license or x402 state, when the request paid that way.
    pub fn paid(&self) -> Option<&crate::paid::Paid> {
        self.paid.as_ref()
    }

    /// Whether the charge could not be recorded (the 500 `InternalError`
    /// or the 503 is written by `fail_to_proxy`).
    pub fn failed(&self) -> bool {
        self.failed
    }

    /// Whether the ledger refused the charge for now (a 503).
    pub fn unavailable(&self) -> bool {
        self.unavailable
    }

    /// At the end of the request: the row's bytes become the body bytes
    /// actually sent; a response that `failed` after its charge was
    /// committed gets a void row instead (same request id, the status and
    /// bytes it had, the reason), which exports and summaries net out.
    pub async fn finish(&self, snap: &Snapshot, bytes: usize, status: u16, failed: Option<String>) {
        let bytes = bytes as u64;
        let (Some(row), Some(c)) = (&self.row, snap.handles.charging.as_deref()) else { return };
        if let Some(reason) = failed {
            if let Some(crate::paid::Paid::X402 { .. }) = &self.paid {
                tracing::warn!(row = row.id, reason = %reason, "A settled x402 payment's response failed; its charge is void: refund it");
            } else {
                tracing::info!(row = row.id, reason = %reason, "A charged response failed; its charge is void");
            }
            c.ledger.void(&row.id, status, bytes, reason).await;
            return;
        }
        // Most rows were written with the right count (the origin's
        // Content-Length): an update is one more write for the ledger.
        if row.bytes != Some(bytes) {
            c.ledger.set_bytes(&row.id, bytes);
        }
    }
}

/// The 500 `InternalError` of a charge the ledger could not record, or
/// the 503 of one it cannot take now.
pub async fn internal_error(session: &mut Session, unavailable: bool) -> Result<()> {
    failure_reply(unavailable).write(session).await
}

/// How long a crawler refused with a 503 is told to wait: the ledger's
/// state is checked twice a second, a spool drains in seconds.
const RETRY_AFTER_SECS: u32 = 30;

/// The 500 `InternalError`, or the 503 with Retry-After (RFC 9110
/// section 10.2.3) when the ledger refused the charge for now.
fn failure_reply(unavailable: bool) -> Reply {
    if !unavailable {
        let r = Refusal { terms: None, status: 500, error: Some(CrawlerError::InternalError), price: None, x402: None };
        return refusal(r, None);
    }
    let body = "503 Service Unavailable: the charge cannot be recorded now, and the page is not served unrecorded; retry later\n";
    let mut reply = refusal(
        Refusal { terms: None, status: 503, error: Some(CrawlerError::InternalError), price: None, x402: None },
        Some(body.into()),
    );
    reply.headers.push((header::RETRY_AFTER, RETRY_AFTER_SECS.to_string()));
    reply
}
