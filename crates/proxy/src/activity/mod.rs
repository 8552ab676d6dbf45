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
mod timeline;
mod topk;

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

use arc_swap::ArcSwap;
use crawlgate_policy::referrers::{referrers, same_operator};
use crawlgate_policy::{catalog, Action, AgentId, BlockReason, LocalFile, Policy};
use serde_json::{json, Value};

pub use compliance::{Compliance, Net, WINDOW_SECS};
pub use timeline::{Timeline, MINUTES};
pub use topk::{Counted, SpaceSaving};

/// Disallowed paths kept per agent.
pub const TOP_K: usize = 20;
/// Agent-network pairs the compliance table keeps.
pub const COMPLIANCE_CAPACITY: usize = 10_000;
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
    /// The catalog crawler a request naming no policy token names
    /// (`identify::catalog_crawler`): its own row, counted under its
    /// operator.
    pub observed: Option<&'static str>,
    /// Unix seconds.
    pub now: u64,
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
    /// Verification outcomes of requests claiming this agent. Nothing
    /// verifies identities yet: these stay 0 until a verifier feeds them.
    verified: AtomicU64,
    unverified: AtomicU64,
    spoofed: AtomicU64,
    /// Refused requests by [`BlockReason`] (indexed as [`BlockReason::ALL`]).
    blocked_by: [AtomicU64; BlockReason::ALL.len()],
    timeline: Timeline,
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
            verified: AtomicU64::new(0),
            unverified: AtomicU64::new(0),
            spoofed: AtomicU64::new(0),
            blocked_by: std::array::from_fn(|_| AtomicU64::new(0)),
            timeline: Timeline::default(),
            top: Mutex::new(SpaceSaving::new(TOP_K)),
        }
    }

    fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }

    /// The agent's row in `/api/agents`.
    fn row(&self) -> Value {
        let g = Self::get;
        let entry = catalog::lookup(&self.name);
        let kind = match &*self.name {
            OTHER_BOT | BROWSER => &*self.name,
            _ => "token",
        };
        json!({
            "agent": &*self.name,
            "kind": kind,
            "category": entry.and_then(|e| e.categories.first()).map(String::as_str),
            "operator": entry.map(|e| e.operator.as_str()),
            "requests": g(&self.requests),
            "allowed": g(&self.allowed),
            "violations": g(&self.violations),
            "blocked": g(&self.blocked),
            "robots_txt": g(&self.robots_txt),
            "agents_txt": g(&self.agents_txt),
            "bytes_sent": g(&self.bytes),
            "without_robots": g(&self.without_robots),
            "first_seen": g(&self.first_seen),
            "last_seen": g(&self.last_seen),
            "blocked_by": BlockReason::ALL
                .iter()
                .zip(&self.blocked_by)
                .map(|(r, c)| (r.as_str().to_owned(), Value::from(g(c))))
                .collect::<serde_json::Map<String, Value>>(),
            "verification": {
                "verified": g(&self.verified),
                "unverified": g(&self.unverified),
                "spoofed": g(&self.spoofed),
            },
        })
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

    /// The slot of a catalog crawler the policy does not name, made on its
    /// first request (at most one per catalog entry).
    fn catalog_slot(&self, name: &'static str) -> Arc<AgentStats> {
        if let Some(s) = self.named.read().ok().and_then(|n| n.get(name).cloned()) {
            return s;
        }
        let mut named = match self.named.write() {
            Ok(n) => n,
            Err(poisoned) => poisoned.into_inner(),
        };
        named.entry(Arc::from(name)).or_insert_with(|| Arc::new(AgentStats::new(name))).clone()
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
            None => match hit.observed {
                Some(name) => self.catalog_slot(name),
                None if hit.browser => self.browser.clone(),
                None => self.other_bot.clone(),
            },
        };
        let s = &*slot;
        let inc = |c: &AtomicU64| {
            c.fetch_add(1, Ordering::Relaxed);
        };
        inc(&s.requests);
        inc(match hit.outcome {
            Action::Pass => &s.allowed,
            Action::LogViolation => &s.violations,
            Action::Block => &s.blocked,
        });
        {
            use crawlgate_policy::verification::Verification;
            match hit.verification {
                Verification::Verified(_) => inc(&s.verified),
                Verification::Unverified => inc(&s.unverified),
                Verification::Spoofed(_) => inc(&s.spoofed),
                Verification::NotApplicable => {}
            }
        }
        if let Some(reason) = hit.reason {
            if let Some(c) = BlockReason::ALL.iter().position(|r| *r == reason).and_then(|i| s.blocked_by.get(i)) {
                inc(c);
            }
        }
        s.bytes.fetch_add(hit.bytes, Ordering::Relaxed);
        let _ = s.first_seen.compare_exchange(0, hit.now, Ordering::Relaxed, Ordering::Relaxed);
        s.last_seen.fetch_max(hit.now, Ordering::Relaxed);
        let minute = hit.now / 60;
        s.timeline.add(minute);
        self.total.add(minute);
        let is_browser = Arc::ptr_eq(&slot, &self.browser);
        match hit.file {
            Some(LocalFile::RobotsTxt) => {
                inc(&s.robots_txt);
                if !is_browser {
                    self.compliance.robots(&s.name, Net::of(hit.client), hit.now);
                }
            }
            Some(LocalFile::AgentsTxt) => inc(&s.agents_txt),
            // Usage documents, not crawl instructions: counted as requests.
            Some(LocalFile::TdmRep | LocalFile::Rsl) => {}
            None => {
                if !is_browser && self.compliance.page(&s.name, Net::of(hit.client), hit.now) {
                    inc(&s.without_robots);
                }
            }
        }
        if hit.outcome != Action::Pass {
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

    /// `/api/agents`.
    pub fn agents_json(&self) -> Value {
        let seen = self.seen();
        let sum = |f: fn(&AgentStats) -> &AtomicU64| seen.iter().map(|s| f(s).load(Ordering::Relaxed)).sum::<u64>();
        json!({
            "started_at": self.started,
            "now": unix_now(),
            "note": "Counts are kept in memory since the process started: a restart resets them, a policy reload keeps them.",
            "agents": seen.iter().map(|s| s.row()).collect::<Vec<_>>(),
            "total": {
                "requests": sum(|s| &s.requests),
                "allowed": sum(|s| &s.allowed),
                "violations": sum(|s| &s.violations),
                "blocked": sum(|s| &s.blocked),
                "robots_txt": sum(|s| &s.robots_txt),
                "agents_txt": sum(|s| &s.agents_txt),
                "bytes_sent": sum(|s| &s.bytes),
            },
        })
    }

    /// `/api/timeline`: the last `minutes` minutes (at most 24 h), total
    /// and per agent seen in them.
    pub fn timeline_json(&self, minutes: usize) -> Value {
        let minutes = minutes.clamp(1, MINUTES);
        let end = unix_now() / 60;
        let mut agents = serde_json::Map::new();
        for s in self.seen() {
            let w = s.timeline.window(end, minutes);
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

    /// `/api/referrals`: visitors sent by AI products, per product, and per
    /// operator beside the requests its crawlers made.
    pub fn referrals_json(&self) -> Value {
        let mut products: Vec<(&str, &str, u64)> = Vec::new();
        for (r, c) in referrers().iter().zip(self.referrals.iter()) {
            let n = c.load(Ordering::Relaxed);
            match products.iter_mut().find(|(p, _, _)| *p == r.product) {
                Some(e) => e.2 += n,
                None => products.push((&r.product, &r.operator, n)),
            }
        }
        let seen = self.seen();
        let mut operators: Vec<Value> = Vec::new();
        let mut done: Vec<&str> = Vec::new();
        for (_, operator, _) in &products {
            if done.contains(operator) {
                continue;
            }
            done.push(operator);
            let referrals: u64 = products.iter().filter(|p| p.1 == *operator).map(|p| p.2).sum();
            let crawls: u64 = seen
                .iter()
                .filter(|s| catalog::lookup(&s.name).is_some_and(|e| same_operator(&e.operator, operator)))
                .map(|s| s.requests.load(Ordering::Relaxed))
                .sum();
            if referrals == 0 && crawls == 0 {
                continue;
            }
            operators.push(json!({
                "operator": operator,
                "crawl_requests": crawls,
                "referrals": referrals,
                "crawls_per_referral": (referrals > 0).then(|| crawls as f64 / referrals as f64),
            }));
        }
        products.retain(|p| p.2 > 0);
        products.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(b.0)));
        json!({
            "products": products.iter().map(|(p, o, n)| json!({"product": p, "operator": o, "referrals": n})).collect::<Vec<_>>(),
            "operators": operators,
        })
    }
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
