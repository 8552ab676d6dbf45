//! The Pingora `ProxyHttp` implementation: thin hooks over the policy
//! engine (`crawlgate-policy`) and the HTML rewriter (`crawlgate-html`).
//!
//! `request_filter` decides and stores the decision in the context;
//! `response_filter` adds headers from it and sets up the rewriter; the body
//! filter only feeds chunks to the rewriter; `logging` writes the access log
//! and the request metrics.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use crawlgate_policy::matcher::{classify_request_target, RequestTarget};
use crawlgate_policy::{Action, UrlControls};
use http::header;
use pingora::http::{RequestHeader, ResponseHeader};
use pingora::modules::http::compression::ResponseCompression;
use pingora::proxy::{FailToProxy, ProxyHttp, Session};
use pingora::upstreams::peer::HttpPeer;
use pingora::{Error, ErrorSource, ErrorType, Result};

use crate::html::HtmlStream;
use crate::metrics::OTHER_AGENT;
use crate::respond;
use crate::state::{Shared, Snapshot};

/// The proxy service.
pub struct Gate {
    shared: Arc<Shared>,
    access_log_counter: AtomicU64,
}

impl Gate {
    /// A proxy serving from `shared`'s current snapshot.
    pub fn new(shared: Arc<Shared>) -> Gate {
        Gate { shared, access_log_counter: AtomicU64::new(0) }
    }

    /// Whether this request's access log line is written, by sampling rate.
    fn sample_access_log(&self, rate: f64) -> bool {
        if rate >= 1.0 {
            return true;
        }
        if rate <= 0.0 {
            return false;
        }
        // Deterministic sampling: request n is logged when the running total
        // of `rate` crosses an integer, so 0.1 logs exactly every tenth.
        let n = self.access_log_counter.fetch_add(1, Ordering::Relaxed) as f64;
        ((n + 1.0) * rate).floor() > (n * rate).floor()
    }
}

/// What one request decided and what happened to it.
pub struct Ctx {
    snap: Arc<Snapshot>,
    started: Instant,
    /// Canonical path and query the decision was made on.
    path: String,
    /// The policy token identified in the User-Agent.
    agent: Option<String>,
    group: Option<String>,
    /// `allowed`, `violation_logged` or `blocked`.
    decision: &'static str,
    /// URL-level controls for a proxied request.
    controls: Option<UrlControls>,
    /// The request's path has an HTML plan (a HEAD gets the rewrite's
    /// headers only).
    html_candidate: bool,
    html: Option<HtmlStream>,
    upstream: Option<SocketAddr>,
    upstream_status: Option<u16>,
    /// The target sent upstream in place of the client's (the origin-form
    /// of an absolute-form target), `None` to forward it unchanged.
    forward: Option<String>,
    /// Set when the proxy answered itself: `robots.txt`, `agents.txt`,
    /// `blocked`, `bad-request`.
    local: Option<&'static str>,
}

impl Ctx {
    fn agent_label(&self) -> &str {
        self.agent.as_deref().unwrap_or(OTHER_AGENT)
    }
}

/// The request target the policy decides on, or why the request is
/// refused with 400: a target that is not origin-form, absolute-form or
/// OPTIONS `*` (RFC 9112 section 3.2), or more than one `User-Agent` field
/// (a singleton, RFC 9110 section 10.1.5), which would let the decision and
/// the origin read different agents.
fn request_target(req: &RequestHeader) -> std::result::Result<RequestTarget<'_>, String> {
    if req.headers.get_all(header::USER_AGENT).iter().nth(1).is_some() {
        return Err("more than one User-Agent header field".into());
    }
    classify_request_target(req.raw_path(), req.method == http::Method::OPTIONS).map_err(|e| e.to_string())
}

fn header_str<'a>(req: &'a RequestHeader, name: header::HeaderName) -> std::borrow::Cow<'a, str> {
    req.headers.get(name).map(|v| String::from_utf8_lossy(v.as_bytes())).unwrap_or(std::borrow::Cow::Borrowed(""))
}

#[async_trait]
impl ProxyHttp for Gate {
    type CTX = Ctx;

    /// Loads the current snapshot once; every phase of this request uses it.
    fn new_ctx(&self) -> Ctx {
        Ctx {
            snap: self.shared.snapshot.load_full(),
            started: Instant::now(),
            path: String::new(),
            forward: None,
            agent: None,
            group: None,
            decision: "allowed",
            controls: None,
            html_candidate: false,
            html: None,
            upstream: None,
            upstream_status: None,
            local: None,
        }
    }

    /// First request phase, before Pingora's modules: when the policy
    /// rewrites HTML, lets the response compression module record the
    /// client's Accept-Encoding (it ignores it while disabled); compression
    /// is switched off again in `response_filter` for every response that
    /// is not rewritten. A policy without HTML rules leaves the module off
    /// (it costs throughput on every response otherwise).
    async fn early_request_filter(&self, session: &mut Session, ctx: &mut Ctx) -> Result<()> {
        // Pipelined HTTP/1.1 requests are answered in order (RFC 9112
        // section 9.3.2), each decided on its own; without this Pingora
        // answers the first and closes the connection.
        if !session.as_downstream().pipelining_enabled() {
            session.as_downstream_mut().set_pipelining_enabled(true);
        }
        if ctx.snap.rewrites_html {
            if let Some(c) = session.downstream_modules_ctx.get_mut::<ResponseCompression>() {
                c.adjust_level(COMPRESSION_LEVEL);
            }
        }
        Ok(())
    }

    /// Request phase. Answers /robots.txt and /agents.txt itself, decides on
    /// the canonical path and blocks when the policy says so. `Ok(true)`
    /// means the response was written here and the origin is not contacted.
    ///
    /// The local responses are awaited behind a `Box::pin`: inline, their
    /// futures (over 1 KiB) made this hook's own future 1.5 KiB, allocated
    /// for every request (past glibc's per-thread cache, when the binary
    /// used glibc's allocator). Boxed, only the requests answered here pay
    /// for them.
    async fn request_filter(&self, session: &mut Session, ctx: &mut Ctx) -> Result<bool> {
        // Responses written here (robots.txt, blocks) are sent as they are.
        compress(session, &ctx.snap, false);
        let snap = ctx.snap.clone();
        let req = session.req_header();
        let target = match request_target(req) {
            Ok(t) => t,
            Err(why) => {
                ctx.local = Some("bad-request");
                Box::pin(respond::plain(session, 400, format!("400 Bad Request: {why}\n"))).await?;
                return Ok(true);
            }
        };
        let path = target.canonical.into_owned();
        ctx.forward = target.forward.map(std::borrow::Cow::into_owned);
        let ua = header_str(req, header::USER_AGENT).into_owned();
        let decision = snap.policy.decide(&ua, &path);
        ctx.agent = decision.agent.map(str::to_owned);
        ctx.group = decision.group.as_ref().map(|g| g.name.to_owned());

        let path_only = path.split('?').next().unwrap_or("/");
        let file = match path_only {
            "/robots.txt" => Some(("robots.txt", Some(&snap.robots))),
            "/agents.txt" => Some(("agents.txt", snap.agents.as_ref())),
            _ => None,
        };
        if let Some((name, file)) = file {
            ctx.path = path;
            ctx.local = Some(if name == "robots.txt" { "robots.txt" } else { "agents.txt" });
            self.shared.metrics.robots_fetch(ctx.agent_label(), name);
            match file {
                Some(f) => {
                    Box::pin(respond::static_file(session, f, &snap.cache_control)).await?;
                }
                None => {
                    Box::pin(respond::plain(session, 404, "404 Not Found: this site publishes no agents.txt\n".into()))
                        .await?;
                }
            }
            return Ok(true);
        }

        match decision.action() {
            Action::Pass => {}
            Action::LogViolation | Action::Block => {
                let token = decision.agent.unwrap_or(OTHER_AGENT);
                let group = decision.group.as_ref().map(|g| g.name).unwrap_or("");
                let (rule, line) = decision.rule.as_ref().map(|r| (r.pattern, r.line)).unwrap_or(("", 0));
                self.shared.metrics.violation(token, group);
                let blocked = decision.action() == Action::Block;
                tracing::warn!(
                    target: "crawlgate::violation",
                    agent = token,
                    group,
                    rule,
                    rule_line = line,
                    path = %path,
                    action = if blocked { "block" } else { "log" },
                    "Request for a path robots.txt disallows"
                );
                if blocked {
                    ctx.decision = "blocked";
                    ctx.local = Some("blocked");
                    let status = decision.block_status;
                    let body = respond::block_body(status, token, path_only);
                    ctx.path = path;
                    Box::pin(respond::plain(session, status, body)).await?;
                    return Ok(true);
                }
                ctx.decision = "violation_logged";
            }
        }
        let controls = snap.policy.url_controls(&path);
        // HEAD too: it gets the headers the GET would get.
        ctx.html_candidate = controls.html.is_some();
        ctx.controls = Some(controls);
        ctx.path = path;
        Ok(false)
    }

    /// Picks the next healthy origin server (round robin).
    async fn upstream_peer(&self, _session: &mut Session, ctx: &mut Ctx) -> Result<Box<HttpPeer>> {
        match ctx.snap.upstream.peer() {
            Some((peer, addr)) => {
                ctx.upstream = Some(addr);
                Ok(Box::new(peer))
            }
            None => Err(Error::explain(ErrorType::ConnectNoRoute, "no healthy upstream server")),
        }
    }

    /// Adds X-Forwarded-For/-Proto (Host is forwarded unchanged) and asks
    /// for an identity body when the response may be rewritten.
    async fn upstream_request_filter(
        &self,
        session: &mut Session,
        upstream_request: &mut RequestHeader,
        ctx: &mut Ctx,
    ) -> Result<()> {
        if let Some(addr) = session.client_addr().and_then(|a| a.as_inet()).map(|a| a.ip()) {
            let forwarded = match upstream_request.headers.get("x-forwarded-for") {
                Some(prev) => format!("{}, {addr}", String::from_utf8_lossy(prev.as_bytes())),
                None => addr.to_string(),
            };
            upstream_request.insert_header("x-forwarded-for", forwarded)?;
        }
        let tls = session.digest().is_some_and(|d| d.ssl_digest.is_some());
        upstream_request.insert_header("x-forwarded-proto", if tls { "https" } else { "http" })?;
        // The origin gets the target the decision was made on.
        if let Some(target) = ctx.forward.take() {
            upstream_request.set_raw_path(target.as_bytes())?;
        }
        if ctx.html_candidate {
            // An origin that compresses anyway is not decoded by Pingora
            // (that would inflate every response, HTML or not, a whole chunk
            // at a time): only a response the rewriter takes is decoded, in
            // bounded pieces, by `crate::html`.
            upstream_request.insert_header(header::ACCEPT_ENCODING, "identity")?;
        }
        Ok(())
    }

    /// Response phase: merges Robots-Tag / X-Robots-Tag, adds Content-Usage,
    /// and prepares the HTML rewrite for 2xx HTML responses.
    async fn response_filter(&self, session: &mut Session, resp: &mut ResponseHeader, ctx: &mut Ctx) -> Result<()> {
        crate::headers::strip_hop_by_hop(resp);
        // An interim response (100 Continue, 103 Early Hints) describes no
        // representation: no policy headers; the final response follows.
        if resp.status.is_informational() {
            if resp.status == http::StatusCode::SWITCHING_PROTOCOLS {
                ctx.upstream_status = Some(101);
            }
            return Ok(());
        }
        if resp.status == http::StatusCode::NO_CONTENT {
            // RFC 9110 section 8.6: no Content-Length in a 204.
            resp.remove_header(&header::CONTENT_LENGTH);
        }
        ctx.upstream_status = Some(resp.status.as_u16());
        let Some(controls) = ctx.controls.as_ref() else {
            compress(session, &ctx.snap, false);
            return Ok(());
        };
        // Every value was validated at load; should one still be refused,
        // the response goes out without it rather than as a 500.
        if let Err(e) = crate::headers::apply(resp, controls, ctx.snap.policy.settings().upstream.content_usage) {
            tracing::warn!(path = %ctx.path, error = %e, "A policy header could not be added to the response");
        }
        if ctx.html_candidate {
            if let Some(plan) = controls.html.as_ref() {
                ctx.html =
                    crate::html::start(session, resp, plan, &ctx.snap.html_plans, &self.shared.metrics, &ctx.path)?;
            }
        }
        // A rewritten response is compressed for a client that asked for it
        // (the origin was asked for identity); anything else is left as the
        // origin sent it.
        compress(session, &ctx.snap, ctx.html.is_some());
        Ok(())
    }

    /// Body phase: feeds the rewriter, if any. Fails the response only when
    /// a compressed HTML body cannot be decoded within the limits.
    fn response_body_filter(
        &self,
        _session: &mut Session,
        body: &mut Option<Bytes>,
        end_of_stream: bool,
        ctx: &mut Ctx,
    ) -> Result<Option<Duration>> {
        if let Some(html) = ctx.html.as_mut() {
            html.filter(body, end_of_stream, &self.shared.metrics, &ctx.path)?;
        }
        Ok(None)
    }

    /// Origin unreachable or failing: 502, or 504 on a timeout, with a
    /// short body that does not leak internals.
    async fn fail_to_proxy(&self, session: &mut Session, e: &Error, ctx: &mut Ctx) -> FailToProxy {
        let code = match e.etype() {
            ErrorType::HTTPStatus(code) => *code,
            ErrorType::ConnectTimedout | ErrorType::ReadTimedout | ErrorType::WriteTimedout => 504,
            _ => match e.esource() {
                ErrorSource::Upstream => 502,
                ErrorSource::Downstream => match e.etype() {
                    ErrorType::WriteError | ErrorType::ReadError | ErrorType::ConnectionClosed => 0,
                    _ => 400,
                },
                ErrorSource::Internal | ErrorSource::Unset => {
                    if ctx.upstream.is_none() || matches!(e.etype(), ErrorType::ConnectNoRoute) {
                        502
                    } else {
                        500
                    }
                }
            },
        };
        let upstream = ctx.upstream.map(|a| a.to_string()).unwrap_or_else(|| "none".into());
        let decode_aborted = e.etype() == &crate::html::DECODE_ABORTED;
        if !decode_aborted {
            // A decode abort was logged where it happened, with its reason.
            tracing::error!(upstream = %upstream, path = %ctx.path, cause = %e, status = code, "Request to the origin failed");
        }
        if code > 0 && session.response_written().is_none() {
            let text = match code {
                504 => "504 Gateway Timeout: the origin server did not answer in time\n".to_string(),
                502 if decode_aborted => {
                    "502 Bad Gateway: the origin server's compressed response could not be decoded within limits\n"
                        .to_string()
                }
                502 if unreachable(e.etype()) || ctx.upstream.is_none() => {
                    "502 Bad Gateway: the origin server could not be reached\n".to_string()
                }
                502 if matches!(
                    e.etype(),
                    ErrorType::InvalidHTTPHeader | ErrorType::H1Error | ErrorType::H2Error | ErrorType::InvalidH2
                ) =>
                {
                    "502 Bad Gateway: the origin server sent a response that cannot be forwarded\n".to_string()
                }
                502 => "502 Bad Gateway: the connection to the origin server failed\n".to_string(),
                400 => "400 Bad Request\n".to_string(),
                other => format!("{other} Error\n"),
            };
            if let Err(err) = Box::pin(respond::plain(session, code, text)).await {
                tracing::debug!(error = %err, "Cannot send the error response");
            }
        }
        if ctx.upstream_status.is_none() {
            self.shared.metrics.upstream_status(None);
            ctx.upstream_status = Some(0);
        }
        FailToProxy { error_code: code, can_reuse_downstream: true }
    }

    /// Pingora's own error line is left out for a decode abort, which the
    /// body filter has logged with its reason.
    fn suppress_error_log(&self, _session: &Session, _ctx: &Ctx, e: &Error) -> bool {
        e.etype() == &crate::html::DECODE_ABORTED
    }

    /// End of the request: metrics and the access log line.
    async fn logging(&self, session: &mut Session, e: Option<&Error>, ctx: &mut Ctx) {
        let elapsed = ctx.started.elapsed();
        self.shared.metrics.request(ctx.agent_label(), ctx.decision, elapsed);
        if ctx.local.is_none() {
            if let Some(status) = ctx.upstream_status.filter(|s| *s != 0) {
                self.shared.metrics.upstream_status(Some(status));
            }
        }
        let settings = &ctx.snap.policy.settings().server;
        if !settings.access_log || !self.sample_access_log(settings.access_log_sample) {
            return;
        }
        let status = session.response_written().map(|r| r.status.as_u16()).unwrap_or(0);
        let req = session.req_header();
        tracing::info!(
            target: "crawlgate::access",
            method = %req.method,
            path = %ctx.path,
            status,
            agent = ctx.agent_label(),
            group = ctx.group.as_deref().unwrap_or(""),
            decision = ctx.decision,
            local = ctx.local.unwrap_or(""),
            upstream = %ctx.upstream.map(|a| a.to_string()).unwrap_or_default(),
            duration_ms = elapsed.as_secs_f64() * 1000.0,
            error = %e.map(|e| e.to_string()).unwrap_or_default(),
            "request"
        );
    }
}

/// Whether an error means no connection to the origin could be made.
fn unreachable(etype: &ErrorType) -> bool {
    matches!(
        etype,
        ErrorType::ConnectTimedout
            | ErrorType::ConnectRefused
            | ErrorType::ConnectNoRoute
            | ErrorType::ConnectError
            | ErrorType::TLSHandshakeFailure
            | ErrorType::TLSHandshakeTimedout
            | ErrorType::InvalidCert
            | ErrorType::HandshakeError
            | ErrorType::SocketError
    )
}

/// gzip/br level for rewritten responses.
const COMPRESSION_LEVEL: u32 = 5;

/// Switches response compression on or off for this response. A policy
/// that rewrites no HTML never turned it on (`early_request_filter`).
fn compress(session: &mut Session, snap: &Snapshot, on: bool) {
    if !snap.rewrites_html {
        return;
    }
    if let Some(c) = session.downstream_modules_ctx.get_mut::<ResponseCompression>() {
        if c.is_header_phase() {
            c.adjust_level(if on { COMPRESSION_LEVEL } else { 0 });
        }
    }
}

/// A mutex-free accessor for the html stream: the rewriter is `Send` but not
/// `Sync`, so it sits in a `Mutex` and is reached with `get_mut`.
pub(crate) fn unpoison<T>(m: &mut Mutex<T>) -> &mut T {
    match m.get_mut() {
        Ok(v) => v,
        Err(poisoned) => poisoned.into_inner(),
    }
}
