//! The activity model behind the admin dashboard: who requested what,
//! what the policy did with it, whether they read robots.txt and how many
//! visitors AI products sent. Fed by [`crate::events::RequestDone`].
//!
//! Cheap on the request path and bounded in memory: each agent (a token of
//! the policy's own groups or a catalog crawler the origin's robots.txt
//! names, plus `other-bot` and `browser`; any other origin token counts as
//! `other-bot`, so a file that renames its tokens on every refresh adds
//! nothing) has a preallocated slot of
//! atomic counters, found by the request's agent id in a table rebuilt
//! for each policy generation; its timeline is a fixed ring of packed
//! atomics; its top disallowed paths are a space-saving summary of
//! [`TOP_K`] entries; the compliance table has a fixed capacity. Everything
//! else (sorting, catalog lookups, ratios) happens when an admin endpoint
//! is read.
//!
//! Slots are kept by token name outside the snapshot, so counts survive a
//! policy reload; they live in memory only, so a restart resets them.

mod compliance;
mod field;
mod hours;
mod minutes;
mod named;
mod timeline;
mod topk;

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

use arc_swap::ArcSwap;
use crawlgate_policy::referrers::referrers;
use crawlgate_policy::{catalog, Action, AgentId, BlockReason, LocalFile, Policy};
use serde_json::{json, Value};

pub(crate) use compliance::{Compliance, Net, WINDOW_SECS};
pub use field::{fleet_referrals, RATIO_WINDOWS, REFERRALS, REFERRER_PREFIX};
pub(crate) use timeline::{Timeline, MINUTES};
pub(crate) use topk::{Counted, SpaceSaving};

/// Disallowed paths kept per agent.
pub const TOP_K: usize = 20;
/// Agent-network pairs the compliance table keeps.
pub const COMPLIANCE_CAPACITY: usize = 10_000;
/// Minutes of a row's sparkline (`per_minute` in `/api/agents`).
pub const SPARKLINE_MINUTES: usize = 60;
/// Longest path kept in a top-k entry (longer ones are cut, with `…`).
const MAX_PATH: usize = 256;

/// The slot of requests naming no policy token whose User-Agent does not
/// look like a browser.
pub const OTHER_BOT: &str = "other-bot";
/// The slot of requests naming no policy token from browsers.
pub const BROWSER: &str = "browser";

/// One finished request, as the model sees it.
#[derive(Clone, Copy, Debug)]
pub struct Hit<'a> {
    /// The snapshot generation the request was decided on.
    pub generation: u64,
    /// The policy token found, with its name.
    pub agent: Option<(AgentId, &'a str)>,
    /// The User-Agent looks like a browser's (`Policy::looks_like_browser`; only
    /// read when no token was found).
    pub browser: bool,
    /// The outcome.
    pub outcome: Action,
    /// The locally served file, if the request was for one.
    pub file: Option<LocalFile>,
    /// Body bytes sent.
    pub bytes: u64,
    /// The canonical path and query.
    pub path: &'a str,
    /// The deciding disallow rule of a violation or block: pattern and line.
    pub rule: Option<(&'a str, usize)>,
    /// The `Referer` field.
    pub referer: Option<&'a str>,
    /// The client address (through trusted proxies).
    pub client: Option<IpAddr>,
    /// The verification outcome of the request's claim.
    pub verification: crawlgate_policy::verification::Verification,
    /// Why the proxy refused it, if it did.
    pub reason: Option<BlockReason>,
    /// A request for a path its group disallows, enforced or not (the
    /// access line's `violation=true`, origin groups under `off` included).
    pub violation: bool,
    /// The catalog crawler a request naming no policy token names
    /// (`identify::catalog_crawler`): its own row, counted under its
    /// operator.
    pub observed: Option<&'static str>,
    /// The policy token a spoofed or unverified claim named when its group
    /// sent it to `*`: counted in a row of its own, `<token> (claimed)`,
    /// apart from the crawler it claims to be.
    pub claimed: Option<&'a str>,
    /// A charge for it was recorded and stands (not voided).
    pub paid: bool,
    /// Whether it negotiated Markdown (`[markdown]`), and if so whether it
    /// was served Markdown.
    pub markdown: Option<bool>,
    /// Unix seconds.
    pub now: u64,
}

/// The counters kept per minute as well as in total, so that a window
/// (the last hour, 6 hours, 24 hours) can be read back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Count {
    /// Every request.
    Requests,
    /// Page requests passed to the origin with no violation (locally
    /// served files are not page requests).
    Allowed,
    /// Requests for a path the agent's group disallows, enforced or not.
    Violations,
    /// Requests refused, for any [`BlockReason`] but a rate limit or a
    /// price: those are [`Count::Limited`] and [`Count::PaymentRequired`].
    Blocked,
    /// Claims proven false.
    Spoofed,
    /// Claims proven true.
    Verified,
    /// Fetches of `/robots.txt`.
    RobotsTxt,
    /// Page requests with no robots.txt fetch in the preceding 24 hours.
    WithoutRobots,
    /// Requests refused over a rate limit (429).
    Limited,
    /// Requests answered without the page for want of a payment (402, or
    /// a payment or license refused: [`BlockReason::Payment`]).
    PaymentRequired,
    /// Requests charged (a ledger row that stands).
    Paid,
    /// Requests that asked for Markdown (`Accept`, on a `[markdown]` path).
    MarkdownRequested,
    /// Of those, the ones served Markdown.
    MarkdownServed,
}

impl Count {
    /// Every counter, in storage order.
    pub const ALL: [Count; 13] = [
        Count::Requests,
        Count::Allowed,
        Count::Violations,
        Count::Blocked,
        Count::Spoofed,
        Count::Verified,
        Count::RobotsTxt,
        Count::WithoutRobots,
        Count::Limited,
        Count::PaymentRequired,
        Count::Paid,
        Count::MarkdownRequested,
        Count::MarkdownServed,
    ];

    /// Its key in `/api/agents`.
    pub const fn key(self) -> &'static str {
        match self {
            Count::Requests => "requests",
            Count::Allowed => "allowed",
            Count::Violations => "violations",
            Count::Blocked => "blocked",
            Count::Spoofed => "spoofed",
            Count::Verified => "verified",
            Count::RobotsTxt => "robots_txt",
            Count::WithoutRobots => "without_robots",
            Count::Limited => "limited",
            Count::PaymentRequired => "payment_required",
            Count::Paid => "paid",
            Count::MarkdownRequested => "markdown_requested",
            Count::MarkdownServed => "markdown_served",
        }
    }

    const fn index(self) -> usize {
        self as usize
    }
}

/// The span `/api/agents` counts over: since the process started, or the
/// last hour, 6 hours or 24 hours (the timeline ring's reach).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Window {
    /// Since the process started.
    All,
    /// The last `n` minutes, this one included.
    Minutes(usize),
}

impl Window {
    /// The windows the page offers, with their query values.
    pub const CHOICES: [(&'static str, Window); 4] = [
        ("all", Window::All),
        ("1h", Window::Minutes(60)),
        ("6h", Window::Minutes(360)),
        ("24h", Window::Minutes(MINUTES)),
    ];

    /// The window of a `window=` query value.
    pub fn parse(s: &str) -> Option<Window> {
        Window::CHOICES.iter().find(|(name, _)| *name == s).map(|(_, w)| *w)
    }

    /// Its query value.
    pub fn name(self) -> &'static str {
        Window::CHOICES.iter().find(|(_, w)| *w == self).map_or("all", |(name, _)| name)
    }
}

/// A disallowed path with its deciding rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViolationKey {
    /// Canonical path and query (cut at 256 bytes).
    pub path: Box<str>,
    /// The rule's pattern.
    pub rule: Box<str>,
    /// The rule's line in the policy file.
    pub line: usize,
}

/// Counters of one agent.
pub struct AgentStats {
    name: Arc<str>,
    requests: AtomicU64,
    allowed: AtomicU64,
    violations: AtomicU64,
    blocked: AtomicU64,
    robots_txt: AtomicU64,
    agents_txt: AtomicU64,
    bytes: AtomicU64,
    first_seen: AtomicU64,
    last_seen: AtomicU64,
    without_robots: AtomicU64,
    limited: AtomicU64,
    payment_required: AtomicU64,
    paid: AtomicU64,
    markdown_requested: AtomicU64,
    markdown_served: AtomicU64,
    /// Requests and bytes per hour over 30 days (the crawl-to-referral
    /// ratios).
    hours: [hours::Hours; 2],
    /// Verification outcomes of requests claiming this agent. Nothing
    /// verifies identities yet: these stay 0 until a verifier feeds them.
    verified: AtomicU64,
    unverified: AtomicU64,
    spoofed: AtomicU64,
    /// Refusals by [`BlockReason`], in [`BlockReason::ALL`] order.
    blocked_by: [AtomicU64; BlockReason::ALL.len()],
    /// Per-minute counts of the [`Count`]s, in [`Count::ALL`] order.
    timelines: [Timeline; Count::ALL.len()],
    top: Mutex<SpaceSaving<ViolationKey>>,
}

impl AgentStats {
    fn new(name: &str) -> AgentStats {
        AgentStats {
            name: name.into(),
            requests: AtomicU64::new(0),
            allowed: AtomicU64::new(0),
            violations: AtomicU64::new(0),
            blocked: AtomicU64::new(0),
            robots_txt: AtomicU64::new(0),
            agents_txt: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            first_seen: AtomicU64::new(0),
            last_seen: AtomicU64::new(0),
            without_robots: AtomicU64::new(0),
            limited: AtomicU64::new(0),
            payment_required: AtomicU64::new(0),
            paid: AtomicU64::new(0),
            markdown_requested: AtomicU64::new(0),
            markdown_served: AtomicU64::new(0),
            hours: Default::default(),
            verified: AtomicU64::new(0),
            unverified: AtomicU64::new(0),
            spoofed: AtomicU64::new(0),
            blocked_by: std::array::from_fn(|_| AtomicU64::new(0)),
            timelines: std::array::from_fn(|_| Timeline::default()),
            top: Mutex::new(SpaceSaving::new(TOP_K)),
        }
    }

    fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }

    /// A counter's total since the process started.
    fn total(&self, c: Count) -> u64 {
        Self::get(self.counter(c))
    }

    /// The atomic total of `c`.
    fn counter(&self, c: Count) -> &AtomicU64 {
        match c {
            Count::Requests => &self.requests,
            Count::Allowed => &self.allowed,
            Count::Violations => &self.violations,
            Count::Blocked => &self.blocked,
            Count::Spoofed => &self.spoofed,
            Count::Verified => &self.verified,
            Count::RobotsTxt => &self.robots_txt,
            Count::WithoutRobots => &self.without_robots,
            Count::Limited => &self.limited,
            Count::PaymentRequired => &self.payment_required,
            Count::Paid => &self.paid,
            Count::MarkdownRequested => &self.markdown_requested,
            Count::MarkdownServed => &self.markdown_served,
        }
    }

    /// A counter over `window`, which ends with minute `end`.
    fn count(&self, c: Count, window: Window, end: u64) -> u64 {
        match window {
            Window::All => self.total(c),
            Window::Minutes(n) => self.timelines[c.index()].sum(end, n),
        }
    }

    /// Requests per minute over the last hour, oldest first.
    fn sparkline(&self, end: u64) -> Vec<u64> {
        self.timelines[Count::Requests.index()].window(end, SPARKLINE_MINUTES)
    }

    /// The agent's row in `/api/agents`: the [`Count`]s over `window`
    /// (ending with minute `end`), the rest since the process started.
    fn row(&self, window: Window, end: u64) -> Value {
        let g = Self::get;
        let entry = catalog::lookup(&self.name);
        let kind = match &*self.name {
            OTHER_BOT | BROWSER => &*self.name,
            _ => "token",
        };
        let mut row = serde_json::Map::new();
        row.insert("agent".into(), json!(&*self.name));
        row.insert("kind".into(), json!(kind));
        row.insert("category".into(), json!(entry.and_then(|e| e.categories.first()).map(String::as_str)));
        row.insert("operator".into(), json!(entry.map(|e| e.operator.as_str())));
        for c in Count::ALL {
            row.insert(c.key().into(), json!(self.count(c, window, end)));
        }
        row.insert(
            "blocked_by".into(),
            Value::Object(
                BlockReason::ALL
                    .iter()
                    .zip(&self.blocked_by)
                    .map(|(r, n)| (r.as_str().to_string(), json!(g(n))))
                    .collect(),
            ),
        );
        row.insert("agents_txt".into(), json!(g(&self.agents_txt)));
        row.insert("bytes_sent".into(), json!(g(&self.bytes)));
        row.insert("first_seen".into(), json!(g(&self.first_seen)));
        row.insert("last_seen".into(), json!(g(&self.last_seen)));
        row.insert(
            "verification".into(),
            json!({
                "verified": g(&self.verified),
                "unverified": g(&self.unverified),
                "spoofed": g(&self.spoofed),
            }),
        );
        row.insert("per_minute".into(), json!(self.sparkline(end)));
        Value::Object(row)
    }
}

/// The slots of one policy generation, indexed by [`AgentId::index`].
struct Slots {
    generation: u64,
    /// Each token of the generation's policy with its slot (`other-bot`'s
    /// for an origin token that gets no slot of its own).
    by_id: Vec<(Arc<str>, Arc<AgentStats>)>,
}

/// The whole model.
pub struct Activity {
    started: u64,
    slots: ArcSwap<Slots>,
    named: RwLock<HashMap<Arc<str>, Arc<AgentStats>>>,
    other_bot: Arc<AgentStats>,
    browser: Arc<AgentStats>,
    total: Timeline,
    compliance: Compliance,
    referrals: Box<[AtomicU64]>,
    /// Per referrer, its referrals per minute (published to the fleet)
    /// and per hour (the 7- and 30-day ratios).
    referral_time: Box<[field::ReferralTime]>,
}

/// Unix seconds now.
pub fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

impl Activity {
    /// A model with slots for `policy`'s tokens.
    pub fn new(policy: &Policy, generation: u64) -> Activity {
        let activity = Activity {
            started: unix_now(),
            slots: ArcSwap::from_pointee(Slots { generation: 0, by_id: Vec::new() }),
            named: RwLock::new(HashMap::new()),
            other_bot: Arc::new(AgentStats::new(OTHER_BOT)),
            browser: Arc::new(AgentStats::new(BROWSER)),
            total: Timeline::default(),
            compliance: Compliance::new(COMPLIANCE_CAPACITY),
            referrals: referrers().iter().map(|_| AtomicU64::new(0)).collect(),
            referral_time: referrers().iter().map(|_| field::ReferralTime::default()).collect(),
        };
        activity.bind(policy, generation);
        activity
    }

    /// Prepares the slots of a new policy generation: a token already seen
    /// keeps its counters.
    pub fn bind(&self, policy: &Policy, generation: u64) {
        let mut named = match self.named.write() {
            Ok(n) => n,
            Err(poisoned) => poisoned.into_inner(),
        };
        let labelled: std::collections::HashSet<&str> = policy.agent_labels().collect();
        let by_id = policy
            .tokens()
            .map(|t| {
                let slot = if labelled.contains(t) {
                    named.entry(Arc::from(t)).or_insert_with(|| Arc::new(AgentStats::new(t))).clone()
                } else {
                    self.other_bot.clone()
                };
                (Arc::from(t), slot)
            })
            .collect();
        self.slots.store(Arc::new(Slots { generation, by_id }));
    }

    /// The slot of a token: by id when the request's generation is the
    /// current one, else by name.
    fn token_slot(&self, generation: u64, id: AgentId, name: &str) -> Arc<AgentStats> {
        let slots = self.slots.load();
        if slots.generation == generation {
            // The name check covers a snapshot of the same generation with
            // other tokens (the origin's robots.txt merged in).
            if let Some((_, s)) = slots.by_id.get(id.index()).filter(|(t, _)| &**t == name) {
                return s.clone();
            }
        }
        // A request of an older snapshot: its token's slot if it has one,
        // else `other-bot` (no slot is made here, so none for an origin
        // token the current snapshot no longer names).
        self.named.read().ok().and_then(|n| n.get(name).cloned()).unwrap_or_else(|| self.other_bot.clone())
    }

    /// Number of named slots (`other-bot` and `browser` not included).
    #[cfg(test)]
    pub fn slot_count(&self) -> usize {
        match self.named.read() {
            Ok(n) => n.len(),
            Err(poisoned) => poisoned.into_inner().len(),
        }
    }

    /// Adds one finished request.
    pub fn hit(&self, hit: &Hit<'_>) {
        let slot = match hit.agent {
            Some((id, name)) => self.token_slot(hit.generation, id, name),
            None => match (hit.observed, hit.claimed) {
                (Some(name), _) => self.catalog_slot(name),
                (None, Some(token)) => self.claimed_slot(token),
                (None, None) if hit.browser => self.browser.clone(),
                (None, None) => self.other_bot.clone(),
            },
        };
        let s = &*slot;
        let inc = |c: &AtomicU64| {
            c.fetch_add(1, Ordering::Relaxed);
        };
        let minute = hit.now / 60;
        // One counter and its per-minute ring.
        let count = |c: Count| {
            inc(s.counter(c));
            s.timelines[c.index()].add(minute);
        };
        count(Count::Requests);
        let hour = hit.now / 3600;
        s.hours[0].add(hour, 1);
        s.hours[1].add(hour, hit.bytes);
        if hit.paid {
            count(Count::Paid);
        }
        if let Some(served) = hit.markdown {
            count(Count::MarkdownRequested);
            if served {
                count(Count::MarkdownServed);
            }
        }
        // A refusal is one whatever its reason; a violation is a request
        // for a disallowed path, logged or refused for that path (a spoof
        // refused on an allowed path is none).
        let reason = match (hit.reason, hit.outcome) {
            (Some(r), _) => Some(r),
            (None, Action::Block) => Some(BlockReason::Robots),
            (None, _) => None,
        };
        // `hit.violation` covers a failed claim refused on a disallowed
        // path and an origin group's disallow under `off`.
        let violation = hit.violation || hit.outcome == Action::LogViolation || reason == Some(BlockReason::Robots);
        if let Some(r) = reason {
            // A 429 limits, a 402 asks for payment: neither is a block.
            count(match r {
                BlockReason::Rate => Count::Limited,
                BlockReason::Payment => Count::PaymentRequired,
                _ => Count::Blocked,
            });
            if let Some(c) = s.blocked_by.get(r as usize) {
                inc(c);
            }
        }
        if violation {
            count(Count::Violations);
        }
        if reason.is_none() && !violation && hit.file.is_none() {
            count(Count::Allowed);
        }
        {
            use crawlgate_policy::verification::Verification;
            match hit.verification {
                Verification::Verified(_) => count(Count::Verified),
                Verification::Unverified => inc(&s.unverified),
                Verification::Spoofed(_) => count(Count::Spoofed),
                Verification::NotApplicable => {}
            }
        }
        s.bytes.fetch_add(hit.bytes, Ordering::Relaxed);
        let _ = s.first_seen.compare_exchange(0, hit.now, Ordering::Relaxed, Ordering::Relaxed);
        s.last_seen.fetch_max(hit.now, Ordering::Relaxed);
        self.total.add(minute);
        let is_browser = Arc::ptr_eq(&slot, &self.browser);
        match hit.file {
            Some(LocalFile::RobotsTxt) => {
                count(Count::RobotsTxt);
                if !is_browser {
                    self.compliance.robots(&s.name, Net::of(hit.client), hit.now);
                }
            }
            Some(LocalFile::AgentsTxt) => inc(&s.agents_txt),
            // Usage documents, not crawl instructions: counted as requests.
            Some(LocalFile::TdmRep | LocalFile::Rsl) => {}
            None => {
                if !is_browser && self.compliance.page(&s.name, Net::of(hit.client), hit.now) {
                    count(Count::WithoutRobots);
                }
            }
        }
        if violation {
            if let Some((rule, line)) = hit.rule {
                let path = cut(hit.path);
                let mut top = match s.top.lock() {
                    Ok(t) => t,
                    Err(poisoned) => poisoned.into_inner(),
                };
                top.add_with(
                    |k| k.line == line && *k.path == *path && *k.rule == *rule,
                    || ViolationKey { path: path.into(), rule: rule.into(), line },
                );
            }
        }
        if let Some(i) = hit.referer.and_then(crawlgate_policy::referrers::referrer_of) {
            if let Some(c) = self.referrals.get(i) {
                inc(c);
            }
            if let Some(r) = self.referral_time.get(i) {
                r.minutes.add(minute);
                r.hours.add(hour, 1);
            }
        }
    }

    /// Every slot with at least one request, most requests first.
    fn seen(&self) -> Vec<Arc<AgentStats>> {
        let mut v: Vec<Arc<AgentStats>> = match self.named.read() {
            Ok(n) => n.values().cloned().collect(),
            Err(poisoned) => poisoned.into_inner().values().cloned().collect(),
        };
        v.push(self.other_bot.clone());
        v.push(self.browser.clone());
        v.retain(|s| s.requests.load(Ordering::Relaxed) > 0);
        v.sort_by(|a, b| {
            b.requests.load(Ordering::Relaxed).cmp(&a.requests.load(Ordering::Relaxed)).then(a.name.cmp(&b.name))
        });
        v
    }

    /// `/api/agents` over `window`.
    pub fn agents_json(&self, window: Window) -> Value {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        let mut v = self.agents_json_at(window, now.as_secs());
        if let Value::Object(m) = &mut v {
            // For rates between two reads (`crawlgate top`).
            m.insert("now_ms".into(), json!(u64::try_from(now.as_millis()).unwrap_or(u64::MAX)));
        }
        v
    }

    /// `/api/agents` over `window` ending at `now` (Unix seconds): agents
    /// with requests in the window, most first, and their totals.
    pub fn agents_json_at(&self, window: Window, now: u64) -> Value {
        let end = now / 60;
        let mut rows: Vec<(u64, Value)> = self
            .seen()
            .iter()
            .map(|s| (s.count(Count::Requests, window, end), s.row(window, end)))
            .filter(|(n, _)| *n > 0)
            .collect();
        // `seen` sorted by name among equals; a stable sort keeps that.
        rows.sort_by_key(|r| std::cmp::Reverse(r.0));
        let rows: Vec<Value> = rows.into_iter().map(|(_, r)| r).collect();
        let mut total = serde_json::Map::new();
        for key in Count::ALL.iter().map(|c| c.key()).chain(["agents_txt", "bytes_sent"]) {
            total.insert(key.into(), json!(rows.iter().filter_map(|r| r[key].as_u64()).sum::<u64>()));
        }
        let mut by_reason = serde_json::Map::new();
        for r in BlockReason::ALL {
            let n: u64 = rows.iter().filter_map(|row| row["blocked_by"][r.as_str()].as_u64()).sum();
            by_reason.insert(r.as_str().into(), json!(n));
        }
        total.insert("blocked_by".into(), Value::Object(by_reason));
        json!({
            "started_at": self.started,
            "now": now,
            "window": window.name(),
            "window_minutes": match window { Window::All => None, Window::Minutes(n) => Some(n) },
            "note": "Counts are kept in memory since the process started: a restart resets them, a policy reload keeps them. \
                     With a window, requests, allowed, violations, blocked, spoofed, verified, robots_txt and \
                     without_robots count that window; the other fields count since the start.",
            "agents": rows,
            "total": Value::Object(total),
        })
    }

    /// `/api/timeline`: the last `minutes` minutes (at most 24 h), total
    /// and per agent seen in them.
    pub fn timeline_json(&self, minutes: usize) -> Value {
        let minutes = minutes.clamp(1, MINUTES);
        let end = unix_now() / 60;
        let mut agents = serde_json::Map::new();
        for s in self.seen() {
            let w = s.timelines[Count::Requests.index()].window(end, minutes);
            if w.iter().any(|&c| c > 0) {
                agents.insert(s.name.to_string(), json!(w));
            }
        }
        json!({
            "minutes": minutes,
            "end_minute": end * 60,
            "total": self.total.window(end, minutes),
            "agents": agents,
        })
    }

    /// `/api/violations`: the top disallowed paths, per agent and over
    /// all agents (at most `limit` of the latter).
    pub fn violations_json(&self, limit: usize) -> Value {
        let mut all: Vec<(Arc<str>, Counted<ViolationKey>)> = Vec::new();
        let mut per_agent = Vec::new();
        for s in self.seen() {
            let top = match s.top.lock() {
                Ok(t) => t.top().into_iter().cloned().collect::<Vec<_>>(),
                Err(poisoned) => poisoned.into_inner().top().into_iter().cloned().collect(),
            };
            if top.is_empty() {
                continue;
            }
            per_agent.push(json!({
                "agent": &*s.name,
                "paths": top.iter().map(entry_json).collect::<Vec<_>>(),
            }));
            all.extend(top.into_iter().map(|c| (s.name.clone(), c)));
        }
        all.sort_by(|a, b| b.1.count.cmp(&a.1.count).then(a.0.cmp(&b.0)).then(a.1.key.path.cmp(&b.1.key.path)));
        let groups = violation_groups(&all);
        all.truncate(limit);
        json!({
            "k": TOP_K,
            "top": all.iter().map(|(agent, c)| {
                let mut v = entry_json(c);
                if let Value::Object(m) = &mut v {
                    m.insert("agent".into(), json!(&**agent));
                }
                v
            }).collect::<Vec<_>>(),
            "agents": per_agent,
            "groups": groups,
        })
    }

    /// `/api/compliance`: page requests with no robots.txt fetch in the
    /// preceding 24 hours, per agent and per agent and network.
    pub fn compliance_json(&self, limit: usize) -> Value {
        let mut clients = self.compliance.offenders();
        clients.sort_by(|a, b| b.2.without_robots.cmp(&a.2.without_robots).then(a.0.cmp(&b.0)).then(a.1.cmp(&b.1)));
        let mut agents: Vec<(Arc<str>, u64, u64)> = Vec::new();
        for (agent, _, c) in &clients {
            match agents.iter_mut().find(|(a, _, _)| a == agent) {
                Some(e) => {
                    e.1 += 1;
                    e.2 += c.without_robots;
                }
                None => agents.push((agent.clone(), 1, c.without_robots)),
            }
        }
        agents.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
        clients.truncate(limit);
        json!({
            "window_hours": WINDOW_SECS / 3600,
            "tracked": self.compliance.tracked(),
            "capacity": self.compliance.capacity(),
            "agents": agents.iter().map(|(a, n, r)| json!({"agent": &**a, "networks": n, "requests_without_robots": r})).collect::<Vec<_>>(),
            "clients": clients.iter().map(|(a, n, c)| json!({
                "agent": &**a,
                "network": n.to_string(),
                "requests_without_robots": c.without_robots,
                "robots_fetched_at": (c.robots_at != 0).then_some(c.robots_at),
                "last_seen": c.last_seen,
            })).collect::<Vec<_>>(),
        })
    }
}

/// The kept violations grouped by agent and rule (most counted first),
/// each with its paths (most counted first).
fn violation_groups(all: &[(Arc<str>, Counted<ViolationKey>)]) -> Vec<Value> {
    /// One agent and rule, its total and its paths.
    struct Group<'a> {
        agent: &'a str,
        rule: &'a str,
        line: usize,
        count: u64,
        paths: Vec<&'a Counted<ViolationKey>>,
    }
    let mut groups: Vec<Group<'_>> = Vec::new();
    for (agent, c) in all {
        match groups.iter_mut().find(|g| g.agent == &**agent && g.rule == &*c.key.rule && g.line == c.key.line) {
            Some(g) => {
                g.count += c.count;
                g.paths.push(c);
            }
            None => groups.push(Group { agent, rule: &c.key.rule, line: c.key.line, count: c.count, paths: vec![c] }),
        }
    }
    groups.sort_by(|a, b| b.count.cmp(&a.count).then(a.agent.cmp(b.agent)).then(a.line.cmp(&b.line)));
    groups
        .iter()
        .map(|g| {
            json!({
                "agent": g.agent,
                "rule": g.rule,
                "line": g.line,
                "count": g.count,
                "paths": g.paths.iter().map(|c| json!({"path": &*c.key.path, "count": c.count, "error": c.error})).collect::<Vec<_>>(),
            })
        })
        .collect()
}

fn entry_json(c: &Counted<ViolationKey>) -> Value {
    json!({"path": &*c.key.path, "rule": &*c.key.rule, "line": c.key.line, "count": c.count, "error": c.error})
}

/// `path` cut at [`MAX_PATH`] bytes on a character boundary.
fn cut(path: &str) -> &str {
    if path.len() <= MAX_PATH {
        return path;
    }
    let mut end = MAX_PATH;
    while !path.is_char_boundary(end) {
        end -= 1;
    }
    &path[..end]
}

#[cfg(test)]
mod tests;
