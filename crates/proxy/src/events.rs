//! Typed events of the request path: each knows its metrics and its log
//! line, so labels come from enums and the hooks never format free
//! strings for them.

use std::net::SocketAddr;
use std::time::Duration;

use crawlgate_policy::verification::Verification;
use crawlgate_policy::{Action, AgentId, LocalFile};

use crate::activity::{Activity, Hit};

use crate::metrics::{Metrics, OTHER_AGENT};

/// What the proxy answered itself, without contacting the origin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Local {
    /// A locally served file (or its 404 when the policy publishes none).
    File(LocalFile),
    /// An enforcement block.
    Blocked,
    /// A request refused with 400.
    BadRequest,
    /// A request that came back to this proxy (508).
    LoopDetected,
}

impl Local {
    /// Its name in the access log.
    pub const fn as_str(self) -> &'static str {
        match self {
            Local::File(f) => f.as_str(),
            Local::Blocked => "blocked",
            Local::BadRequest => "bad-request",
            Local::LoopDetected => "loop-detected",
        }
    }
}

/// A request for a path robots.txt disallows to its agent.
pub struct Violation<'a> {
    /// The identified token, or [`OTHER_AGENT`].
    pub agent: &'a str,
    /// The group applied.
    pub group: &'a str,
    /// The deciding rule's pattern and line.
    pub rule: (&'a str, usize),
    /// The canonical path and query.
    pub path: &'a str,
    /// `LogViolation` or `Block`.
    pub action: Action,
    /// The client address.
    pub client_ip: Option<std::net::IpAddr>,
    /// The verification outcome.
    pub verification: Verification,
}

impl Violation<'_> {
    /// Counts it and writes its warning line.
    pub fn emit(&self, metrics: &Metrics) {
        metrics.violation(self.agent, self.group);
        tracing::warn!(
            target: "crawlgate::violation",
            agent = self.agent,
            group = self.group,
            rule = self.rule.0,
            rule_line = self.rule.1,
            path = %self.path,
            action = if self.action == Action::Block { "block" } else { "log" },
            client_ip = %self.client_ip.map(|a| a.to_string()).unwrap_or_default(),
            verification = %self.verification,
            "Request for a path robots.txt disallows"
        );
    }
}

/// A locally served file was fetched.
pub struct FileFetched<'a> {
    /// Who fetched it.
    pub agent: Option<&'a str>,
    /// Which file.
    pub file: LocalFile,
}

impl FileFetched<'_> {
    /// Counts it.
    pub fn emit(&self, metrics: &Metrics) {
        metrics.robots_fetch(self.agent.unwrap_or(OTHER_AGENT), self.file.as_str());
    }
}

/// One finished request: the request metrics and, when sampled in, the
/// access log line.
pub struct RequestDone<'a> {
    /// Method.
    pub method: &'a str,
    /// Canonical path and query (empty for a 400).
    pub path: &'a str,
    /// Status sent to the client (0: none).
    pub status: u16,
    /// The identified token.
    pub agent: Option<&'a str>,
    /// The group applied.
    pub group: Option<&'a str>,
    /// The outcome.
    pub outcome: Action,
    /// Set when the proxy answered itself.
    pub local: Option<Local>,
    /// The origin server contacted.
    pub upstream: Option<SocketAddr>,
    /// Time since the request's header arrived.
    pub elapsed: Duration,
    /// The error that ended it, if any.
    pub error: Option<&'a pingora::Error>,
    /// The snapshot generation it was decided on.
    pub generation: u64,
    /// The identified token's id.
    pub agent_id: Option<AgentId>,
    /// The (first) User-Agent field, "" when absent.
    pub user_agent: &'a str,
    /// The deciding disallow rule of a violation or block: pattern, line.
    pub rule: Option<(&'a str, usize)>,
    /// The Referer field.
    pub referer: Option<&'a str>,
    /// Body bytes sent to the client.
    pub bytes_sent: u64,
    /// The client address.
    pub client_ip: Option<std::net::IpAddr>,
    /// The verification outcome.
    pub verification: Verification,
    /// What showed it, if anything was checked.
    pub evidence: Option<&'a crawlgate_identity::Evidence>,
}

impl RequestDone<'_> {
    /// Counts the request.
    pub fn count(&self, metrics: &Metrics) {
        metrics.request(self.agent.unwrap_or(OTHER_AGENT), self.outcome, self.verification.label(), self.elapsed);
    }

    /// Adds the request to the activity model (the admin dashboard).
    pub fn record(&self, activity: &Activity) {
        activity.hit(&Hit {
            generation: self.generation,
            agent: self.agent_id.zip(self.agent),
            user_agent: self.user_agent,
            outcome: self.outcome,
            file: match self.local {
                Some(Local::File(f)) => Some(f),
                _ => None,
            },
            bytes: self.bytes_sent,
            path: self.path,
            rule: self.rule,
            referer: self.referer,
            client: self.client_ip,
            verification: self.verification,
            now: crate::activity::unix_now(),
        });
    }

    /// Writes the access log line.
    pub fn log(&self) {
        tracing::info!(
            target: "crawlgate::access",
            method = %self.method,
            path = %self.path,
            status = self.status,
            agent = self.agent.unwrap_or(OTHER_AGENT),
            group = self.group.unwrap_or(""),
            decision = self.outcome.as_str(),
            local = self.local.map_or("", Local::as_str),
            upstream = %self.upstream.map(|a| a.to_string()).unwrap_or_default(),
            duration_ms = self.elapsed.as_secs_f64() * 1000.0,
            error = %self.error.map(|e| e.to_string()).unwrap_or_default(),
            client_ip = %self.client_ip.map(|a| a.to_string()).unwrap_or_default(),
            verification = %self.verification,
            evidence = %self.evidence.map(|e| e.to_string()).unwrap_or_default(),
            "request"
        );
    }
}
