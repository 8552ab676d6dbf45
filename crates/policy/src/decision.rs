//! What the policy decides for one request, as data: the agent and its
//! claim, the group and rule that applied, and what the proxy does about
//! it. A leaf of the crate: the policy, the limits and the routing step
//! all speak it.

/// What the proxy does when a group's disallowed path is requested.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enforce {
    /// Forward silently.
    Off,
    /// Forward and record a violation.
    Log,
    /// Answer `block_status` without contacting the origin.
    Block,
    /// Charge for allowed paths (`crate::payment`); a disallowed path is
    /// blocked as with `block`, since robots.txt refuses it at any price.
    Charge,
}

impl Enforce {
    /// `off`, `log`, `block` or `charge`.
    pub fn as_str(self) -> &'static str {
        match self {
            Enforce::Off => "off",
            Enforce::Log => "log",
            Enforce::Block => "block",
            Enforce::Charge => "charge",
        }
    }
}

/// What happens to one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Forward.
    Pass,
    /// Forward and record a violation.
    LogViolation,
    /// Answer the block status.
    Block,
}

impl Action {
    /// Every action, in metric label order.
    pub const ALL: [Action; 3] = [Action::Pass, Action::LogViolation, Action::Block];

    /// The request's outcome as metrics and the access log name it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Action::Pass => "allowed",
            Action::LogViolation => "violation_logged",
            Action::Block => "blocked",
        }
    }
}

/// Why the proxy refused a request: one vocabulary for the access line
/// (`reason=`), `explain`, the 403 body and `crawlgate_blocks_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockReason {
    /// A robots.txt disallow rule of the agent's group, enforced.
    Robots,
    /// The request claims a token and is proven not to be it; its group
    /// has `on_spoofed = "block"`.
    Spoofed,
    /// The claim could not be verified; its group has
    /// `on_unverified = "block"`.
    Unverified,
    /// The request target or its `User-Agent` cannot be decided on (400).
    BadRequest,
    /// The request already passed through this proxy (508).
    Loop,
    /// A Web Bot Auth signature seen before (429).
    Replayed,
    /// Over a rate limit (429 with `Retry-After`).
    Rate,
    /// A charge group answered without a page: a price to pay, a payment
    /// or license refused (402, 400, 401, 403; docs/payment.md).
    Payment,
}

impl BlockReason {
    /// Every reason, in metric label order.
    pub const ALL: [BlockReason; 8] = [
        BlockReason::Robots,
        BlockReason::Spoofed,
        BlockReason::Unverified,
        BlockReason::BadRequest,
        BlockReason::Loop,
        BlockReason::Replayed,
        BlockReason::Rate,
        BlockReason::Payment,
    ];

    /// Its name in logs, `explain` and metrics.
    pub const fn as_str(self) -> &'static str {
        match self {
            BlockReason::Robots => "robots",
            BlockReason::Spoofed => "spoofed",
            BlockReason::Unverified => "unverified",
            BlockReason::BadRequest => "bad-request",
            BlockReason::Loop => "loop",
            BlockReason::Replayed => "replayed",
            BlockReason::Rate => "rate",
            BlockReason::Payment => "payment",
        }
    }
}

/// A policy token identified in a User-Agent: an index into the policy's
/// tokens, so a request can keep it without copying the name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AgentId(pub(crate) u32);

impl AgentId {
    /// Its position in [`Policy::tokens`](crate::Policy::tokens), for tables
    /// indexed by agent.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// The group that applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupRef<'p> {
    /// Index in the policy.
    pub index: usize,
    /// Its name (`name`, else its first user agent).
    pub name: &'p str,
    /// Line of its `[[group]]` header (for an origin group, of its first
    /// `User-agent` line in the origin's robots.txt).
    pub line: usize,
    /// Taken from the origin's robots.txt (`origin = "merge"`): its rules'
    /// lines are lines of the origin's file.
    pub origin: bool,
}

/// The deciding rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuleRef<'p> {
    /// The pattern as written.
    pub pattern: &'p str,
    /// Allow or disallow.
    pub allow: bool,
    /// Its line in the policy file.
    pub line: usize,
}

/// The decision for one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision<'p> {
    /// The product token found in the User-Agent (policy spelling).
    pub agent: Option<&'p str>,
    /// The same token as an id ([`Policy::agent_name`](crate::Policy::agent_name)
    /// gives it back).
    pub agent_id: Option<AgentId>,
    /// The group applied (the token's, else `*`'s).
    pub group: Option<GroupRef<'p>>,
    /// The deciding rule.
    pub rule: Option<RuleRef<'p>>,
    /// Allowed by robots.txt.
    pub allowed: bool,
    /// The group's enforce mode.
    pub enforce: Enforce,
    /// Status of a block.
    pub block_status: u16,
    /// The outcome of verifying the claimed identity.
    pub verification: crate::verification::Verification,
    /// What the claimed token's group did because the claim was spoofed or
    /// unverified (`None`: verified, or nothing to verify). With
    /// `Anonymous` the decision is the `*` group's.
    pub on_failure: Option<crate::verification::OnFailure>,
    /// The policy token a spoofed or unverified request claimed, whatever
    /// `on_failure` made of it: with `anonymous` it is not [`Decision::agent`],
    /// yet the log, the metrics and the dashboard still name the claim.
    pub claimed: Option<&'p str>,
    /// The catalog crawler a request naming no policy token names
    /// (`identify::catalog_crawler`): observed under the group that applied.
    pub observed: Option<&'static str>,
}

impl<'p> Decision<'p> {
    /// What the proxy does. A request naming no policy token (a browser,
    /// an unknown client) is never blocked nor recorded as a violation:
    /// robots.txt binds crawlers that read it under their token, and such a
    /// request names none, so the `*` group's `enforce` does not apply.
    /// A claim its group blocks when spoofed or unverified is blocked.
    pub fn action(&self) -> Action {
        if matches!(
            self.on_failure,
            Some(crate::verification::OnFailure::Block | crate::verification::OnFailure::Challenge)
        ) {
            return Action::Block;
        }
        if self.allowed || self.agent.is_none() {
            return Action::Pass;
        }
        match self.enforce {
            Enforce::Off => Action::Pass,
            Enforce::Log => Action::LogViolation,
            Enforce::Block | Enforce::Charge => Action::Block,
        }
    }

    /// The request is for a path that the group applied to it disallows,
    /// and it came from an identified crawler (a policy token, a claim to
    /// one, or a catalog crawler): a robots.txt violation, whatever the
    /// group's `enforce` mode does about it (`off` acts on nothing, it
    /// still sees). A spoofed or unverified claim on a path its group
    /// allows is none, even when it is blocked for the claim.
    pub fn violation(&self) -> bool {
        !self.allowed
            && (self.agent.is_some() || self.claimed.is_some() || self.observed.is_some())
            && self.rule.is_some_and(|r| !r.allow)
    }

    /// The crawler's name for logs and counters: the identified token, else
    /// the token a failed verification claimed, else the catalog crawler
    /// observed.
    pub fn crawler(&self) -> Option<&'p str> {
        self.agent.or(self.claimed).or(self.observed)
    }

    /// Why [`Decision::action`] blocks, `None` when it does not. A failed
    /// verification its group blocks wins over a disallow rule: the claim
    /// is refused wherever it goes.
    pub fn block_reason(&self) -> Option<BlockReason> {
        if self.action() != Action::Block {
            return None;
        }
        if matches!(
            self.on_failure,
            Some(crate::verification::OnFailure::Block | crate::verification::OnFailure::Challenge)
        ) {
            return Some(match self.verification {
                crate::verification::Verification::Spoofed(_) => BlockReason::Spoofed,
                _ => BlockReason::Unverified,
            });
        }
        Some(BlockReason::Robots)
    }
}

/// A request's claim to be a policy token, known from its `User-Agent`
/// before any I/O: what the verifier checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Claim<'p> {
    /// The token (policy spelling).
    pub agent: &'p str,
    /// The same token as an id.
    pub agent_id: AgentId,
    /// Its group's `verify` mode (`None`: trust the User-Agent).
    pub verify: crate::verification::VerifyMode,
}
