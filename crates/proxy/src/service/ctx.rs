//! The request's context: what one request decided and what happened to
//! it, kept from `new_ctx` to `logging`.

use super::*;

/// What one request decided and what happened to it. Names are looked up
/// in the snapshot by id, never copied per request.
pub struct Ctx {
    pub(super) snap: Arc<Snapshot>,
    pub(super) started: Instant,
    /// Canonical path and query the decision was made on (a locally served
    /// file's path; for a 400, the raw target when the access log writes
    /// it, else empty).
    pub(super) path: Cow<'static, str>,
    /// The policy token identified in the User-Agent.
    pub(super) agent: Option<AgentId>,
    /// The group applied (an index into the policy's groups).
    pub(super) group: Option<usize>,
    /// What the policy made of the request.
    pub(super) outcome: Action,
    /// URL-level controls for a proxied request.
    pub(super) controls: Option<UrlControls>,
    /// The request's path has an HTML plan (a HEAD gets the rewrite's
    /// headers only).
    pub(super) html_candidate: bool,
    /// What the request negotiated with `[markdown]`.
    pub(super) markdown: Negotiation,
    /// Its response is converted to Markdown.
    pub(super) markdown_served: bool,
    /// The response's rewrite. Boxed: the rewriter's state is over a
    /// kilobyte, and the context lives inside every request's futures,
    /// which are moved whole into place; most responses have none.
    pub(super) html: Option<Box<HtmlStream>>,
    pub(super) upstream: Option<SocketAddr>,
    pub(super) upstream_status: Option<u16>,
    /// The target sent upstream in place of the client's (the origin-form
    /// of an absolute-form target), `None` to forward it unchanged.
    pub(super) forward: Option<String>,
    /// Set when the proxy answered itself.
    pub(super) local: Option<Local>,
    /// The client's address (`None` on a Unix socket), resolved through
    /// trusted proxies in `early_request_filter`.
    pub(super) client: Option<ClientAddr>,
    /// The client's scheme: a trusted proxy's `X-Forwarded-Proto` (or
    /// `Forwarded` `proto=`), else the connection's
    /// (`policy::scheme::request_scheme`).
    pub(super) scheme: crawlgate_policy::scheme::Scheme,
    /// This request's id in the access log.
    pub(super) id: RequestId,
    /// The deciding rule's pattern and line.
    pub(super) rule: Option<(String, usize)>,
    /// Whether this request gets an access log line (sampling decided at
    /// start, so that an error folded into the line is not logged twice).
    pub(super) logged: bool,
    /// The verification outcome and what showed it.
    pub(super) verification: Verification,
    /// Boxed: set only for a verified claim, and the context stays small.
    pub(super) evidence: Option<Box<Evidence>>,
    /// What the request's Web Bot Auth signature showed.
    pub(super) signature: Option<crawlgate_policy::verification::SignatureOutcome>,
    /// The request broke a robots.txt rule (a block for a failed
    /// verification alone is none).
    pub(super) violation: bool,
    /// Why the proxy refused the request.
    pub(super) reason: Option<BlockReason>,
    /// The deciding rule is a line of the origin's robots.txt.
    pub(super) origin_rule: bool,
    /// The catalog crawler a request naming no policy token names, for
    /// logs and metrics only (`group` stays the one that decided).
    pub(super) observed: Option<&'static str>,
    /// The policy token a spoofed or unverified request claimed when
    /// `on_spoofed` / `on_unverified = "anonymous"` decided it as `*`:
    /// still named in the log, the metrics and the dashboard.
    pub(super) claimed: Option<AgentId>,
    /// Its verification still running (a reverse DNS lookup the response
    /// does not wait for); `logging` awaits it.
    /// Boxed: rare, and the context stays small.
    pub(super) observing: Option<Box<(Claim<'static>, tokio::task::JoinHandle<Verdict>)>>,
    /// The User-Agent looks like a browser's (the activity model's row for
    /// requests naming no token).
    pub(super) browser: bool,
    /// The rate limit a refused request is over (or a passed one, with
    /// `over_rate`).
    pub(super) limit: Option<crawlgate_policy::limits::GroupLimit>,
    /// A request over its rate that was not refused: `would_limit`
    /// (`rate_mode = "log"`) or `delayed`, and the limit's group index.
    pub(super) over_rate: Option<(&'static str, usize)>,
    /// A charge to record or a price to state in the response phase.
    pub(super) pay: Option<Box<crate::payment::Pending>>,
    /// That charge, while the connection makes it when it releases a held
    /// response (`charge_on_release`); back in `pay` by the end.
    pub(super) held_charge: Option<crate::payment::Held>,
    /// Whether a shared cache may store the response.
    pub(super) cache: CacheRule,
    /// The Markdown cache's key of a request it may answer (and whose
    /// converted response it may keep), then the page on its way there.
    pub(super) md: Option<Box<md_cache::Md>>,
}

impl Ctx {
    /// Records a request refused (429) over the limit of group `group`.
    pub(super) fn rate_limited(&mut self, group: usize, limit: crawlgate_policy::limits::GroupLimit, path: String) {
        self.outcome = Action::Block;
        self.local = Some(Local::RateLimited);
        self.reason = Some(BlockReason::Rate);
        self.group = Some(group);
        self.limit = Some(limit);
        self.rule = None;
        self.path = Cow::Owned(path);
    }

    pub(super) fn agent_name(&self) -> Option<&str> {
        self.agent.map(|a| self.snap.policy.agent_name(a))
    }

    pub(super) fn claimed_name(&self) -> Option<&str> {
        self.claimed.map(|a| self.snap.policy.agent_name(a))
    }

    pub(super) fn group_name(&self) -> Option<&str> {
        self.group.map(|g| self.snap.policy.group_name(g))
    }

    /// Takes back the charge left to the connection's release: made or
    /// refused by now, or never made (the response failed first).
    pub(super) fn reclaim_charge(&mut self) {
        if let Some(held) = self.held_charge.take() {
            if let Some(pay) = held.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take() {
                self.pay = Some(pay);
            }
        }
    }

    /// Keeps what the rest of the request needs of a decision.
    pub(super) fn note(&mut self, decision: &Decision<'_>) {
        self.agent = decision.agent_id;
        self.group = decision.group.map(|g| g.index);
        // The access log shows the deciding rule; the activity model keeps
        // it for violations and blocks, logged or not.
        if decision.agent.is_none() {
            self.claimed = decision.claimed.and_then(|c| self.snap.policy.claim_token(c)).map(|c| c.agent_id);
        }
        if self.logged || decision.action() != Action::Pass || decision.violation() {
            self.rule = decision.rule.map(|r| (r.pattern.to_owned(), r.line));
            self.origin_rule = decision.group.is_some_and(|g| g.origin);
        }
    }
}
