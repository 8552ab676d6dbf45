//! The proxy's own additions to a forwarded request (the forwarding
//! fields), its loop check (Via), its access-log sampling and its
//! bookkeeping of verification outcomes.

use super::*;

impl Gate {
    /// Whether the request already passed through this process: an
    /// upstream that leads back here (a host name that resolves to this
    /// proxy, two proxies pointing at each other) would loop forever.
    pub(super) fn looped(&self, req: &RequestHeader) -> bool {
        let ours = self.via.as_bytes();
        req.headers.get_all(header::VIA).iter().any(|v| v.as_bytes().windows(ours.len()).any(|w| w == ours))
    }

    /// Whether this request's access log line is written, by sampling rate.
    pub(super) fn sample_access_log(&self, rate: f64) -> bool {
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

    /// Adds the client address field (`X-Forwarded-For` or `Forwarded`, as
    /// `server.client_address_header` names), X-Forwarded-Proto (`Ctx::scheme`), Via and
    /// X-Request-Id (Host is forwarded unchanged) to a request that goes to
    /// the origin. They are added once, to the client's header after the
    /// decision; Pingora's copy for the origin, made again for a retried
    /// attempt, takes them along.
    pub(super) fn add_forwarding_fields(&self, session: &mut Session, ctx: &Ctx) -> Result<()> {
        let req = session.req_header_mut();
        // Every client-supplied address field goes; the chosen one comes
        // back extended for a trusted proxy, replaced by the peer for anyone
        // else, so the origin never reads an address the client chose.
        // A client without an address (a Unix socket) gets none written.
        let settings = &ctx.snap.policy.settings().server.client_address;
        let mut text = crawlgate_telemetry::events::IpText::new();
        let field = ctx.client.as_ref().map(|c| {
            let peer = text.write(c.peer);
            // An untrusted peer's lines are never read: none are gathered.
            let lines = if settings.is_trusted_proxy(c.peer) { address_lines(req, settings) } else { Vec::new() };
            origin_field(c.peer, peer, &lines, settings)
        });
        let present = crate::headers::present(&req.headers, &*ADDRESS_HEADERS);
        for name in crate::headers::named(present, &*ADDRESS_HEADERS) {
            req.remove_header(name);
        }
        if let Some((name, value)) = field {
            // The previous lines were valid field values, an address is one.
            if let Ok(value) = http::HeaderValue::from_bytes(&value) {
                req.insert_header(name, value)?;
            }
        }
        // The client's scheme: a trusted front server's word (it terminated
        // TLS), else this connection's; a client's own is replaced.
        req.insert_header("x-forwarded-proto", ctx.scheme.as_str())?;
        req.append_header(header::VIA, self.via.clone())?;
        // The origin can log the same id; a client's own X-Request-Id is
        // forwarded as it is (and never becomes the log's id).
        if !req.headers.contains_key(&X_REQUEST_ID) {
            let mut text = crawlgate_telemetry::events::IdText::new();
            if let Ok(value) = http::HeaderValue::from_bytes(text.write(ctx.id)) {
                req.insert_header(X_REQUEST_ID.as_str(), value)?;
            }
        }
        Ok(())
    }

    /// Counts, and logs at most once a minute, a claim from a private or
    /// loopback peer that forwards a client address but is not a trusted
    /// proxy: behind such a balancer every claim is verified against the
    /// balancer's address, so real crawlers fail verification.
    pub(super) fn note_untrusted_forwarder(&self, session: &Session, snap: &Snapshot) {
        let Some(peer) = session.client_addr().and_then(|a| a.as_inet()).map(|a| a.ip()) else { return };
        let headers = &session.req_header().headers;
        let forwarded = headers.contains_key("x-forwarded-for") || headers.contains_key(header::FORWARDED);
        if !snap.policy.settings().server.client_address.untrusted_forwarder(peer, forwarded) {
            return;
        }
        if self.shared.metrics.verification().untrusted_forwarded(SystemTime::now()) {
            tracing::warn!(
                %peer,
                "Identity claims arrive from {peer} with X-Forwarded-For or Forwarded, but server.trusted_proxies does not list it: they are verified against its address, so real crawlers fail verification; list the proxy in server.trusted_proxies (logged at most once a minute, crawlgate_untrusted_forwarded_total counts every such claim)"
            );
        }
    }

    /// Counts a verification outcome under the claimed (or signed) token,
    /// a policy token or `other`.
    pub(super) fn count_verification(&self, snap: &Snapshot, claim: Option<Claim<'_>>, verdict: &Verdict) {
        if verdict.verification == Verification::NotApplicable {
            return;
        }
        let agent = verdict
            .signed_token
            .as_deref()
            .and_then(|t| snap.policy.claim_token(t))
            .or(claim)
            .map_or(OTHER_AGENT, |c| c.agent);
        self.shared.metrics.verification().verification(agent, verdict.verification);
    }
}

/// `policy::client::ADDRESS_FIELDS` as header names, parsed once.
static ADDRESS_HEADERS: LazyLock<[http::HeaderName; ADDRESS_FIELDS.len()]> =
    LazyLock::new(|| ADDRESS_FIELDS.map(http::HeaderName::from_static));
static X_REQUEST_ID: http::HeaderName = http::HeaderName::from_static("x-request-id");
