//! The Pingora `ProxyHttp` implementation: thin hooks over the policy
//! engine (`crawlgate-policy`) and the HTML rewriter (`crawlgate-html`).
//!
//! `request_filter` decides and stores the decision in the context;
//! `response_filter` adds headers from it and sets up the rewriter; the body
//! filter only feeds chunks to the rewriter; `logging` writes the access log
//! and the request metrics.

use std::borrow::Cow;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant, SystemTime};

use async_trait::async_trait;
use bytes::Bytes;
use crawlgate_identity::{Evidence, Verdict};
use crawlgate_policy::client::{client_address, origin_field, ClientAddr, ClientAddressSettings, ADDRESS_FIELDS};
use crawlgate_policy::markdown::Negotiation;
use crawlgate_policy::verification::Verification;
use crawlgate_policy::{
    Action, AgentId, BlockReason, CacheRule, Claim, Decision, Identity, LocalFile, RequestFacts, Route, UpgradeField,
    Upgrades, UrlControls, UserAgentField,
};
use http::header;
use pingora::http::{RequestHeader, ResponseHeader};
use pingora::modules::http::compression::ResponseCompression;
use pingora::proxy::{FailToProxy, ProxyHttp, Session};
use pingora::upstreams::peer::{H1UpgradePolicy, HttpPeer};
use pingora::{Error, ErrorSource, ErrorType, Result};

use crate::html::HtmlStream;
use crate::respond;
use crate::state::{Shared, Snapshot};
use crawlgate_telemetry::events::{FileFetched, Local, RequestDone, RequestId, Violation};
use crawlgate_telemetry::metrics::OTHER_AGENT;

mod charge;
mod ctx;
mod facts;
mod failure;
mod gate;
mod md_cache;

use charge::{replace_held, settle_charge};
pub use ctx::Ctx;
use facts::*;

/// The proxy service.
pub struct Gate {
    shared: Arc<Shared>,
    access_log_counter: AtomicU64,
    /// The random part of this process's request ids.
    id_prefix: u32,
    /// The number of the next request.
    requests: AtomicU64,
    /// This process's `Via` entry (RFC 9110 section 7.6.3), with a random
    /// pseudonym so that a request that comes back is recognised.
    via: http::HeaderValue,
}

impl Gate {
    /// A proxy serving from `shared`'s current snapshot.
    pub fn new(shared: Arc<Shared>) -> Gate {
        use std::hash::{BuildHasher, Hasher};
        let id = std::collections::hash_map::RandomState::new().build_hasher().finish();
        // Static bytes (one small string per process, kept for its life):
        // cloning the value into every forwarded request then touches no
        // reference count, which both worker threads would contend on.
        let text: &'static str = Box::leak(format!("1.1 crawlgate-{id:016x}").into_boxed_str());
        let via = http::HeaderValue::from_maybe_shared(Bytes::from_static(text.as_bytes()))
            .unwrap_or(http::HeaderValue::from_static("1.1 crawlgate"));
        let id_prefix = (std::collections::hash_map::RandomState::new().build_hasher().finish() >> 32) as u32;
        Gate { shared, access_log_counter: AtomicU64::new(0), id_prefix, requests: AtomicU64::new(1), via }
    }
}

#[async_trait]
impl ProxyHttp for Gate {
    type CTX = Ctx;

    /// Loads the current snapshot once; every phase of this request uses it.
    fn new_ctx(&self) -> Ctx {
        let snap = self.shared.snapshot.load_full();
        let settings = &snap.policy.settings().server;
        let logged = settings.access_log && self.sample_access_log(settings.access_log_sample);
        Ctx {
            id: RequestId { prefix: self.id_prefix, n: self.requests.fetch_add(1, Ordering::Relaxed) },
            rule: None,
            logged,
            snap,
            started: Instant::now(),
            path: Cow::Borrowed(""),
            forward: None,
            agent: None,
            group: None,
            outcome: Action::Pass,
            controls: None,
            html_candidate: false,
            markdown: Negotiation::NotCovered,
            markdown_served: false,
            html: None,
            upstream: None,
            upstream_status: None,
            local: None,
            client: None,
            scheme: crawlgate_policy::scheme::Scheme::Http,
            verification: Verification::NotApplicable,
            evidence: None,
            signature: None,
            violation: false,
            reason: None,
            observed: None,
            claimed: None,
            observing: None,
            origin_rule: false,
            browser: false,
            limit: None,
            over_rate: None,
            pay: None,
            held_charge: None,
            cache: CacheRule::Origin,
            md: None,
        }
    }

    /// First request phase, before Pingora's modules: when the policy
    /// rewrites bodies (HTML rules or `[markdown]`), lets the response
    /// compression module record the client's Accept-Encoding (it ignores
    /// it while disabled); compression is switched off again in
    /// `response_filter` for every response that is not rewritten. A
    /// policy that rewrites nothing leaves the module off (it costs
    /// throughput on every response otherwise).
    async fn early_request_filter(&self, session: &mut Session, ctx: &mut Ctx) -> Result<()> {
        // Pipelined HTTP/1.1 requests are answered in order (RFC 9112
        // section 9.3.2), each decided on its own; without this Pingora
        // answers the first and closes the connection.
        if !session.as_downstream().pipelining_enabled() {
            session.as_downstream_mut().set_pipelining_enabled(true);
        }
        ctx.client = client_addr(session, &ctx.snap);
        ctx.scheme = request_scheme(session, &ctx.snap);
        if ctx.snap.rewrites_bodies && accepts_coding(session.req_header()) {
            if let Some(c) = session.downstream_modules_ctx.get_mut::<ResponseCompression>() {
                c.adjust_level(COMPRESSION_LEVEL);
            }
        }
        Ok(())
    }

    /// Request phase: routes the request (`Policy::route`) and carries the
    /// route out. `Ok(true)` means the response was written here and the
    /// origin is not contacted.
    ///
    /// The responses written here are awaited behind a `Box::pin`, so that
    /// their futures do not enlarge this hook's future, which every request
    /// allocates.
    async fn request_filter(&self, session: &mut Session, ctx: &mut Ctx) -> Result<bool> {
        // Responses written here (robots.txt, blocks) are sent as they are.
        compress(session, &ctx.snap, false);
        let snap = ctx.snap.clone();
        let req = session.req_header();
        if self.looped(req) {
            ctx.local = Some(Local::LoopDetected);
            ctx.reason = Some(BlockReason::Loop);
            let body = "508 Loop Detected: this request already passed through this proxy; check upstream.servers\n";
            Box::pin(respond::plain(session, 508, body.to_string())).await?;
            return Ok(true);
        }
        let (ua_lines, ua) = user_agent(req);
        let field = match ua_lines {
            0 => UserAgentField::Absent,
            1 => UserAgentField::One(&ua),
            _ => UserAgentField::Many,
        };
        let client = ctx.client.as_ref().map(|c| c.ip);
        // The token the User-Agent claims, found once for the verifier and
        // its counter (only when something is verified at all).
        let claim = if snap.handles.verifier.is_some() { snap.policy.claim(&ua) } else { None };
        if claim.is_some() {
            self.note_untrusted_forwarder(session, &snap);
        }
        // An upgrade the policy does not allow is refused before anything
        // is verified or decided: after a 101 the connection is the origin's.
        let upgrade = snap.policy.check_upgrade(req.headers.get_all(header::UPGRADE).iter().map(|v| v.as_bytes()));
        let verdict = match client {
            Some(ip) if upgrade.is_ok() => crate::verify::verify(&self.shared, &snap, req, claim, ip).await,
            _ => Verdict::default(),
        };
        self.count_verification(&snap, claim, &verdict);
        let Verdict { verification, evidence, signed_token, signed_components, signature } = verdict;
        ctx.signature = signature;
        let replayed = matches!(evidence, Evidence::Replayed { .. });
        let unparsable = match &evidence {
            Evidence::BadSignature { reason, unparsable: true } => Some(reason.clone()),
            _ => None,
        };
        ctx.verification = verification;
        ctx.evidence = (evidence != Evidence::None).then(|| Box::new(evidence));
        let identity =
            Identity { verification, proven: signed_token.as_deref(), replayed, unparsable: unparsable.as_deref() };
        // Pingora drops a fragment from the target it parses; the request
        // line still has it, and a target with `#` is refused.
        let wire = client_target_with_fragment(session);
        let raw_target = wire.as_deref().unwrap_or(req.raw_path());
        let upgrade_ok = upgrade.is_ok();
        // Only a policy that converts pages reads Accept.
        let accept = snap.policy.settings().markdown.as_ref().and_then(|_| crate::markdown::accept(req));
        let facts = RequestFacts {
            method: req.method.as_str(),
            raw_target,
            user_agent: field,
            upgrade: upgrade_field(req),
            client,
            host: request_host(req),
            accept: accept.as_deref(),
        };
        // The whole decision, once: what follows carries it out.
        let crawlgate_policy::Verdict { route, limit, price, form, cache, .. } =
            snap.policy.decide_request(&facts, identity);
        ctx.cache = cache;
        // After routing: the answer is remembered with the identification.
        ctx.browser = ua_lines == 1 && snap.policy.looks_like_browser(&ua);
        // A catalog crawler the policy does not name (nor claimed, so no
        // verification applies): named for observation only.
        let observation = if ua_lines == 1 { snap.policy.observation(&ua, ctx.verification) } else { None };
        ctx.observed = observation.map(|(token, _)| token);
        // Verified with the catalog's methods when `[verification]
        // observe_catalog` says so: after routing, so the outcome reaches
        // the access line and the counts and never the decision. A lookup
        // runs beside the response; `logging` waits for it.
        if let (Some((_, Some(claim))), Some(ip), true) = (observation, client, upgrade_ok) {
            let verdict = match crate::verify::observe(&self.shared, &snap, req, claim, ip) {
                Some(crate::verify::Observation::Done(v)) => Some(v),
                Some(crate::verify::Observation::Pending(task)) => {
                    ctx.observing = Some(Box::new((claim, task)));
                    None
                }
                None => Some(crate::verify::verify(&self.shared, &snap, req, Some(claim), ip).await),
            };
            if let Some(verdict) = verdict {
                self.count_verification(&snap, Some(claim), &verdict);
                ctx.verification = verdict.verification;
                ctx.evidence = (verdict.evidence != Evidence::None).then(|| Box::new(verdict.evidence));
                ctx.signature = ctx.signature.or(verdict.signature);
            }
        }
        match route {
            Route::BadRequest(why) => {
                ctx.local = Some(Local::BadRequest);
                ctx.reason = Some(BlockReason::BadRequest);
                if ctx.logged {
                    ctx.path = Cow::Owned(String::from_utf8_lossy(raw_target).into_owned());
                }
                Box::pin(respond::plain(session, 400, format!("400 Bad Request: {why}\n"))).await?;
                return Ok(true);
            }
            Route::Serve { file, decision } | Route::NotFound { file, decision } => {
                ctx.note(&decision);
                ctx.path = match file {
                    LocalFile::Rsl => Cow::Owned(snap.policy.local_file_path(file).to_owned()),
                    _ => Cow::Borrowed(file.path()),
                };
                ctx.local = Some(Local::File(file));
                FileFetched { agent: decision.agent, file }.emit(&self.shared.metrics);
                // The snapshot holds a file exactly when the route serves it.
                let served = match file {
                    LocalFile::RobotsTxt => Some(&snap.robots),
                    LocalFile::AgentsTxt => snap.agents.as_ref(),
                    LocalFile::TdmRep => snap.tdmrep.as_ref(),
                    LocalFile::Rsl => snap.rsl.as_ref(),
                };
                match served {
                    Some(f) => {
                        Box::pin(respond::static_file(session, f, &snap.cache_control)).await?;
                    }
                    None => {
                        let body = format!("404 Not Found: this site publishes no {}\n", file.as_str());
                        Box::pin(respond::plain(session, 404, body)).await?;
                    }
                }
                return Ok(true);
            }
            Route::Block { decision, target } => {
                ctx.note(&decision);
                ctx.outcome = Action::Block;
                ctx.local = Some(Local::Blocked);
                let agent = decision.agent.unwrap_or(OTHER_AGENT);
                let reason = decision.block_reason().unwrap_or(BlockReason::Robots);
                ctx.reason = Some(reason);
                // Only a path its group disallows is a robots.txt
                // violation; a claim blocked on an allowed path names no
                // rule (the allow rule did not block it).
                if decision.violation() {
                    violation(&decision).emit(&self.shared.metrics);
                    ctx.violation = true;
                } else {
                    ctx.rule = None;
                }
                // A charge group speaks Cloudflare's dialect: 403.
                let charge = decision.enforce == crawlgate_policy::Enforce::Charge;
                let status = if charge { 403 } else { decision.block_status };
                let body = respond::block_body(status, reason, agent, target.path(), ctx.verification);
                ctx.path = Cow::Owned(target.canonical.into_owned());
                if charge {
                    Box::pin(crate::payment::forbidden(&self.shared, session, &snap.policy, body)).await?;
                    return Ok(true);
                }
                match snap.policy.challenge(&decision) {
                    Some(accept) => {
                        let body = respond::challenge_body(agent, accept);
                        Box::pin(respond::challenge(session, accept, body)).await?;
                    }
                    None => Box::pin(respond::plain(session, status, body)).await?,
                }
                return Ok(true);
            }
            Route::Replayed { decision, target } => {
                ctx.note(&decision);
                ctx.outcome = Action::Block;
                ctx.local = Some(Local::Replayed);
                ctx.reason = Some(BlockReason::Replayed);
                ctx.path = Cow::Owned(target.canonical.into_owned());
                let body =
                    "429 Too Many Requests: this Web Bot Auth signature was already used; sign each request anew\n";
                Box::pin(respond::plain(session, 429, body.to_string())).await?;
                return Ok(true);
            }
            Route::Forward { decision, target, controls } => {
                ctx.note(&decision);
                ctx.outcome = decision.action();
                if decision.violation() {
                    violation(&decision).emit(&self.shared.metrics);
                    ctx.violation = true;
                }
                if let Some(limit) = limit {
                    // Checked now, not at arrival (see `limits::check`).
                    let checked = crate::limits::check(&snap.handles.limiter, &limit, std::time::Instant::now()).await;
                    if let Some(action) = checked.over_rate() {
                        (ctx.over_rate, ctx.limit) = (Some((action, limit.group.index)), Some(limit.limit));
                    }
                    if let crate::limits::Checked::Refused(refused) = checked {
                        ctx.rate_limited(limit.group.index, refused.limit, target.canonical.into_owned());
                        Box::pin(crate::limits::respond(session, &refused, limit.group.name, limit.key.path)).await?;
                        return Ok(true);
                    }
                }
                // HEAD too: it gets the headers the GET would get.
                ctx.html_candidate = controls.html.is_some();
                ctx.controls = Some(controls);
                ctx.forward = target.forward.map(Cow::into_owned);
                ctx.path = Cow::Owned(target.canonical.into_owned());
                let peer = session.client_addr().and_then(|a| a.as_inet()).map(|a| a.ip());
                let evidence = ctx.evidence.as_deref();
                let step = crate::payment::request(
                    &self.shared,
                    session,
                    &snap.policy,
                    &snap.dialects,
                    price,
                    &ctx.path,
                    ctx.verification,
                    evidence,
                    &signed_components,
                    peer,
                );
                match Box::pin(step).await? {
                    crate::payment::Step::Pass => {}
                    crate::payment::Step::Forward(p) => ctx.pay = Some(p),
                    crate::payment::Step::Answered => {
                        ctx.outcome = Action::Block;
                        ctx.local = Some(Local::Blocked);
                        ctx.reason = Some(BlockReason::Payment);
                        return Ok(true);
                    }
                }
                ctx.markdown = form;
                if form == Negotiation::Markdown {
                    crate::markdown::origin_preconditions(session.req_header_mut());
                }
            }
        }
        self.add_forwarding_fields(session, ctx)?;
        // A page converted before, revalidated by the origin: served here.
        Box::pin(self.markdown_from_cache(session, ctx)).await
    }

    /// Picks the next healthy origin server (round robin).
    async fn upstream_peer(&self, _session: &mut Session, ctx: &mut Ctx) -> Result<Box<HttpPeer>> {
        match ctx.snap.upstream.peer() {
            Some((mut peer, addr)) => {
                ctx.upstream = Some(addr);
                if ctx.snap.policy.settings().server.upgrades == Upgrades::All {
                    // Pingora forwards only a websocket upgrade unless told
                    // to keep the client's Upgrade and Connection fields.
                    peer.options.http_upstream_request_policy.h1_upgrade = H1UpgradePolicy::Preserve;
                }
                Ok(Box::new(peer))
            }
            None => Err(Error::explain(ErrorType::ConnectNoRoute, "no healthy upstream server")),
        }
    }

    /// Sends the target the decision was made on, and asks for an identity
    /// body when the response may be rewritten. (The forwarding fields are
    /// in the client's header already: `add_forwarding_fields`.)
    async fn upstream_request_filter(
        &self,
        _session: &mut Session,
        upstream_request: &mut RequestHeader,
        ctx: &mut Ctx,
    ) -> Result<()> {
        // The origin gets the target the decision was made on.
        // Not taken: a retried request is sent again.
        if let Some(target) = ctx.forward.as_deref() {
            upstream_request.set_raw_path(target.as_bytes())?;
        }
        if ctx.html_candidate || ctx.markdown == Negotiation::Markdown {
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
        // A priced response is charged before its header goes out; one
        // converted to Markdown may be held whole, and is charged below.
        let markdown = ctx.markdown == Negotiation::Markdown && ctx.controls.is_some();
        if !markdown {
            self.charge(resp, ctx).await?;
        }
        if ctx.cache == CacheRule::Private {
            // A paid page, or one that states its price, is this client's
            // alone: never stored by a shared cache in front of the proxy.
            let private = crawlgate_policy::cache::private(
                resp.headers.get_all(header::CACHE_CONTROL).iter().map(http::HeaderValue::as_bytes),
            );
            resp.insert_header(header::CACHE_CONTROL, private)?;
        }
        let Some(controls) = ctx.controls.as_ref() else {
            compress(session, &ctx.snap, false);
            return Ok(());
        };
        let origin = crate::headers::OriginFields::of(resp);
        let origin_tdm = origin.states_tdm();
        // Every value was validated at load; should one still be refused,
        // the response goes out without it rather than as a 500.
        let content_usage = ctx.snap.policy.settings().upstream.content_usage;
        if let Err(e) = crate::headers::apply(resp, controls, content_usage, origin) {
            tracing::warn!(path = %ctx.path, error = %e, "A policy header could not be added to the response");
        }
        if ctx.markdown != Negotiation::NotCovered {
            crate::markdown::vary(resp)?;
        }
        let (mut converted, mut held) = (false, false);
        let mut collect = None;
        if ctx.markdown == Negotiation::Markdown {
            let agent = ctx.agent.map(|a| ctx.snap.policy.agent_name(a));
            let asker = crate::markdown::Asker { agent, verification: ctx.verification };
            let md = ctx.snap.markdown.as_ref();
            // Before the Markdown's own validator replaces the page's.
            let storable = self.markdown_storable(resp, ctx);
            let outcome = crate::markdown::start(
                session,
                resp,
                &ctx.snap.policy,
                md,
                controls,
                asker,
                &self.shared.metrics,
                &ctx.path,
                ctx.scheme,
            )?;
            if let crate::markdown::Outcome::Converted(stream) = outcome {
                if let (Some(validators), true) = (storable, stream.is_some()) {
                    collect = self.markdown_collect(resp, ctx, validators);
                }
                // Held from the header on for `x-markdown-tokens` (HTTP/1.1,
                // chunked: the framing whose last chunk ends the hold).
                if stream.as_ref().is_some_and(|s| s.chunked())
                    && session.req_header().version == http::Version::HTTP_11
                {
                    held = crate::conn::hold_for_markdown_tokens(session.as_downstream());
                }
                ctx.html = stream;
                converted = true;
                ctx.markdown_served = true;
            }
        }
        if ctx.html_candidate && !converted {
            // An origin that states its own TDM reservation keeps it in the
            // page too (rare: that plan is built for the response).
            let own = match controls.html.as_ref() {
                Some(plan) if origin_tdm && controls.tdm_reservation.is_some() => {
                    crate::headers::without_tdm_metas(plan)
                }
                other => other.cloned(),
            };
            if let Some(plan) = own.as_ref() {
                let head = session.req_header().method == http::Method::HEAD;
                ctx.html = crate::html::start(head, resp, plan, &ctx.snap.html_plans, &self.shared.metrics, &ctx.path)?
                    .map(Box::new);
            }
        }
        // Held whole, the response is charged once converted, before any of
        // it leaves (a failed conversion charges nothing); otherwise now.
        if markdown && ctx.pay.is_some() && !(held && self.charge_on_release(session, resp, ctx)) {
            self.charge(resp, ctx).await?;
        }
        // A rewritten response is compressed for a client that asked for it
        // (the origin was asked for identity); anything else is left as the
        // origin sent it. For a client that asks for no coding Pingora's
        // module is off, and the Vary it would add is added here.
        if ctx.html.is_some() && !accepts_coding(session.req_header()) {
            crate::html::vary_on_encoding(resp)?;
        }
        compress(session, &ctx.snap, ctx.html.is_some());
        ctx.md = collect;
        Self::markdown_header(resp, ctx);
        Ok(())
    }

    /// Body phase: feeds the rewriter, if any. Fails the response only when
    /// a compressed HTML body cannot be decoded within the limits.
    fn response_body_filter(
        &self,
        session: &mut Session,
        body: &mut Option<Bytes>,
        end_of_stream: bool,
        ctx: &mut Ctx,
    ) -> Result<Option<Duration>> {
        if let Some(html) = ctx.html.as_mut() {
            html.filter(body, end_of_stream, &self.shared.metrics, &ctx.path, ctx.logged)?;
            if end_of_stream {
                // A converted response held since its header gets its
                // estimate (a no-op when it is not held).
                if let Some(tokens) = html.markdown_tokens() {
                    crate::conn::markdown_tokens(session, tokens);
                }
                // The rest of a chunked rewrite is written right after this
                // filter: one write instead of one per chunk and the last
                // chunk.
                if html.chunked() {
                    crate::conn::coalesce_response_end(session);
                }
            }
        }
        self.markdown_body(body, end_of_stream, ctx);
        Ok(None)
    }

    /// Origin unreachable or failing: 502, or 504 on a timeout, with a
    /// short body that does not leak internals.
    async fn fail_to_proxy(&self, session: &mut Session, e: &Error, ctx: &mut Ctx) -> FailToProxy {
        // A rewritten response's end may have asked the connection to hold
        // its writes for the last chunk, which the error answer never sends.
        crate::conn::end_coalescing(session.as_downstream());
        // A held response's charge comes back unmade if it failed first.
        ctx.reclaim_charge();
        let code = failure::status(e, ctx.upstream.is_some());
        if let Some(paid) = ctx.pay.as_ref().and_then(|p| p.paid()).filter(|_| session.response_written().is_none()) {
            match Box::pin(crate::paid::settle_refusal(session, &ctx.snap.policy, paid)).await {
                Ok(true) => return FailToProxy { error_code: 402, can_reuse_downstream: true },
                Ok(false) => {}
                Err(err) => tracing::debug!(error = %err, "Cannot send the error response"),
            }
        }
        if ctx.pay.as_ref().is_some_and(|p| p.failed()) && session.response_written().is_none() {
            let unavailable = ctx.pay.as_ref().is_some_and(|p| p.unavailable());
            if let Err(err) = Box::pin(crate::payment::internal_error(session, unavailable)).await {
                tracing::debug!(error = %err, "Cannot send the error response");
            }
            return FailToProxy { error_code: if unavailable { 503 } else { 500 }, can_reuse_downstream: true };
        }
        let upstream = ctx.upstream.map(|a| a.to_string()).unwrap_or_else(|| "none".into());
        let decode_aborted = e.etype() == &crate::html::DECODE_ABORTED;
        // With an access log line, the error is its `error` field; without
        // one, a decode abort was logged where it happened, with its reason.
        if !decode_aborted && !ctx.logged {
            tracing::error!(upstream = %upstream, path = %ctx.path, cause = %e, status = code, "Request to the origin failed");
        }
        if code > 0 {
            let text = failure::text(code, e, decode_aborted, ctx.upstream.is_some());
            if session.response_written().is_none() {
                if let Err(err) = Box::pin(respond::plain(session, code, text)).await {
                    tracing::debug!(error = %err, "Cannot send the error response");
                }
            } else {
                replace_held(session, code, text);
            }
        }
        if ctx.upstream_status.is_none() {
            self.shared.metrics.upstream_status(None);
            ctx.upstream_status = Some(0);
        }
        FailToProxy { error_code: code, can_reuse_downstream: true }
    }

    /// Pingora's own error line is left out when the request's access log
    /// line carries the error, and for a decode abort, which the body
    /// filter has logged with its reason.
    fn suppress_error_log(&self, _session: &Session, ctx: &Ctx, e: &Error) -> bool {
        ctx.logged || e.etype() == &crate::html::DECODE_ABORTED
    }

    /// End of the request: metrics and the access log line.
    async fn logging(&self, session: &mut Session, e: Option<&Error>, ctx: &mut Ctx) {
        let status = settle_charge(session, ctx);
        if ctx.local.is_none() {
            if let Some(status) = ctx.upstream_status.filter(|s| *s != 0) {
                self.shared.metrics.upstream_status(Some(status));
            }
        }
        let elapsed = ctx.started.elapsed();
        // An observed crawler's lookup, after the response: its outcome
        // still reaches this request's line and counts (a failed task
        // leaves the request unverified-as-not-applicable).
        if let Some((claim, task)) = ctx.observing.take().map(|b| *b) {
            let verdict = task.await.unwrap_or_default();
            self.count_verification(&ctx.snap, Some(claim), &verdict);
            ctx.verification = verdict.verification;
            ctx.evidence = (verdict.evidence != Evidence::None).then(|| Box::new(verdict.evidence));
        }
        let req = session.req_header();
        // Host and User-Agent are only read for the access log line.
        let host = if ctx.logged {
            req.headers
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .or_else(|| req.uri.authority().map(http::uri::Authority::as_str))
        } else {
            None
        };
        let (ua_lines, ua) = if ctx.logged { user_agent(req) } else { (0, Cow::Borrowed("")) };
        let done = RequestDone {
            time: SystemTime::now().checked_sub(elapsed).unwrap_or_else(SystemTime::now),
            id: ctx.id,
            client: ctx.client.as_ref(),
            method: req.method.as_str(),
            host,
            path: &ctx.path,
            protocol: protocol(req.version),
            status,
            bytes_sent: session.body_bytes_sent(),
            user_agent: (ua_lines == 1).then_some(&*ua),
            browser: ctx.browser,
            agent: ctx.agent_name().or(ctx.claimed_name()).or(ctx.observed),
            observed: ctx.observed,
            claimed: ctx.claimed_name(),
            group: ctx.group_name(),
            outcome: ctx.outcome,
            local: ctx.local,
            rule: ctx.rule.as_ref().map(|(p, l)| (p.as_str(), *l)),
            upstream: ctx.upstream,
            upstream_status: ctx.upstream_status,
            elapsed,
            error: e,
            generation: ctx.snap.generation,
            agent_id: ctx.agent,
            referer: req.headers.get(header::REFERER).and_then(|v| v.to_str().ok()),
            verification: ctx.verification,
            evidence: ctx.evidence.as_deref(),
            signature: ctx.signature,
            violation: ctx.violation,
            reason: ctx.reason,
            origin_rule: ctx.origin_rule,
            limit: ctx.limit,
            over_rate: ctx.over_rate.map(|(action, g)| (action, ctx.snap.policy.group_name(g))),
            paid: ctx.pay.as_ref().is_some_and(|p| p.charged()) && e.and_then(void_reason).is_none(),
            markdown: (ctx.markdown == Negotiation::Markdown).then_some(ctx.markdown_served),
        };
        if let Some(pay) = &ctx.pay {
            pay.finish(&ctx.snap, session.body_bytes_sent(), status, e.and_then(void_reason)).await;
        }
        done.count(&self.shared.metrics);
        done.record(&self.shared.activity);
        if ctx.logged {
            done.log(ctx.snap.policy.settings().server.access_log_format);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn accepts_coding_reads_every_field_line() {
        let cases: &[(&[&str], bool)] = &[
            (&[], false),
            (&["identity"], false),
            (&[" Identity ;q=1, "], false),
            (&["gzip"], true),
            (&["identity", "br;q=0.5"], true),
            (&["deflate, identity"], true),
            (&["*"], true),
        ];
        for (values, want) in cases {
            let mut req = super::RequestHeader::build("GET", b"/", None).unwrap_or_else(|e| panic!("{e}"));
            for v in *values {
                req.append_header(super::header::ACCEPT_ENCODING, *v).unwrap_or_else(|e| panic!("{e}"));
            }
            assert_eq!(super::accepts_coding(&req), *want, "{values:?}");
        }
    }

    /// The context is part of every request's futures, which Pingora and
    /// async-trait move whole (a copy per move): it stays small, and large
    /// per-response state (the HTML rewrite) is boxed.
    #[test]
    fn request_context_stays_small() {
        let size = std::mem::size_of::<super::Ctx>();
        assert!(size <= 512, "Ctx is {size} bytes");
    }
}
