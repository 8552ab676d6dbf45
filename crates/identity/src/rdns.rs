//! Forward-confirmed reverse DNS: resolve the PTR of the address, match the
//! name against the operator's domains, resolve the name forward and
//! confirm the address is among its A/AAAA records. Lookups are cached
//! (positive and negative, honouring TTLs, bounded) and coalesced per
//! address.
//!
//! One lookup resolves every PTR name of the address forward (the first
//! [`MAX_PTR_NAMES`]), whatever the operator, and the cache keeps that
//! result; the operator's domains are matched when the result is read, so
//! one lookup answers for every operator. This is the procedure Google
//! documents in "Verifying Googlebot and other Google crawlers" and Bing in
//! "How to verify Bingbot".

use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use hickory_resolver::config::{ConnectionConfig, NameServerConfig, ResolveHosts, ResolverConfig};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::net::{DnsError, NetError};
use hickory_resolver::proto::op::ResponseCode;
use hickory_resolver::proto::rr::{Name, RData, RecordType};
use hickory_resolver::{Resolver, TokioResolver};
use tokio::sync::watch;

/// At most this many PTR names of one address are considered.
pub const MAX_PTR_NAMES: usize = 4;

/// At most this many forward addresses are named in a mismatch's detail.
const MAX_SHOWN_ADDRESSES: usize = 4;

/// Resolver settings (from the policy's `[verification]` table).
#[derive(Clone, Debug)]
pub struct RdnsConfig {
    /// Nameservers (UDP, then TCP); empty means the system's resolv.conf.
    pub nameservers: Vec<SocketAddr>,
    /// Budget of one whole check (PTR plus forward), default 500 ms.
    pub timeout: Duration,
    /// Maximum cached addresses.
    pub cache_size: usize,
    /// Shortest time a positive or negative answer is cached, whatever its
    /// TTL (default 30 s).
    pub min_ttl: Duration,
    /// Longest time an answer is cached, whatever its TTL (default 1 day).
    pub max_ttl: Duration,
    /// How long a negative answer without an SOA record is cached
    /// (default 5 min; with an SOA, RFC 2308 section 5 gives the time).
    pub negative_ttl: Duration,
    /// How long a failed lookup (timeout, SERVFAIL, undecodable answer) is
    /// cached, so a dead resolver is not asked again for every request
    /// (default 30 s).
    pub failure_ttl: Duration,
    /// Lookups running at once; a check beyond this fails at once instead
    /// of queueing (default 256).
    pub max_in_flight: usize,
}

impl RdnsConfig {
    /// The given nameservers, timeout and cache size, with the default TTL
    /// clamps.
    pub fn new(nameservers: Vec<SocketAddr>, timeout: Duration, cache_size: usize) -> RdnsConfig {
        RdnsConfig { nameservers, timeout, cache_size, ..RdnsConfig::default() }
    }
}

impl Default for RdnsConfig {
    fn default() -> RdnsConfig {
        RdnsConfig {
            nameservers: Vec::new(),
            timeout: Duration::from_millis(500),
            cache_size: 10_000,
            min_ttl: Duration::from_secs(30),
            max_ttl: Duration::from_secs(86_400),
            negative_ttl: Duration::from_secs(300),
            failure_ttl: Duration::from_secs(30),
            max_in_flight: 256,
        }
    }
}

/// The outcome of one check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RdnsCheck {
    /// The PTR name is under one of the domains and resolves back to the address.
    Confirmed {
        /// The PTR name.
        ptr: String,
    },
    /// Proven not to be the operator: no PTR name under its domains, or the
    /// name does not resolve back to the address.
    Mismatch {
        /// The PTR name(s), if any, and what failed.
        detail: String,
    },
    /// Nothing could tell (timeout, SERVFAIL, garbage answer).
    Failed {
        /// Why.
        reason: String,
    },
}

/// Why the resolver could not be built.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{0}")]
pub struct RdnsError(pub String);

/// The forward-confirmed reverse DNS checker; cheap to clone.
#[derive(Clone)]
pub struct Fcrdns {
    inner: Arc<Inner>,
}

struct Inner {
    resolver: TokioResolver,
    config: RdnsConfig,
    cache: Mutex<Cache>,
    in_flight: Mutex<HashMap<IpAddr, watch::Receiver<Option<Arc<Entry>>>>>,
    lookups: AtomicU64,
}

impl std::fmt::Debug for Fcrdns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fcrdns")
            .field("config", &self.inner.config)
            .field("cached", &self.cache_len())
            .finish_non_exhaustive()
    }
}

impl Fcrdns {
    /// Builds the resolver.
    pub fn new(config: RdnsConfig) -> Result<Fcrdns, RdnsError> {
        let nameservers = if config.nameservers.is_empty() {
            let text = std::fs::read_to_string("/etc/resolv.conf")
                .map_err(|e| RdnsError(format!("no nameservers configured and /etc/resolv.conf: {e}")))?;
            let found = resolv_conf_nameservers(&text);
            if found.is_empty() {
                return Err(RdnsError("no nameservers configured and none in /etc/resolv.conf".to_string()));
            }
            found
        } else {
            config.nameservers.clone()
        };
        let servers = nameservers
            .iter()
            .map(|addr| {
                let mut udp = ConnectionConfig::udp();
                udp.port = addr.port();
                let mut tcp = ConnectionConfig::tcp();
                tcp.port = addr.port();
                NameServerConfig::new(addr.ip(), true, vec![udp, tcp])
            })
            .collect();
        let mut builder =
            Resolver::builder_with_config(ResolverConfig::from_name_servers(servers), TokioRuntimeProvider::default());
        let options = builder.options_mut();
        options.timeout = config.timeout;
        options.attempts = 1;
        // The cache here is keyed by address and knows the forward result too.
        options.cache_size = 0;
        options.use_hosts_file = ResolveHosts::Never;
        options.ndots = 0;
        let resolver = builder.build().map_err(|e| RdnsError(format!("cannot build the DNS resolver: {e}")))?;
        Ok(Fcrdns {
            inner: Arc::new(Inner {
                resolver,
                cache: Mutex::new(Cache::new(config.cache_size)),
                in_flight: Mutex::new(HashMap::new()),
                lookups: AtomicU64::new(0),
                config,
            }),
        })
    }

    /// The cached outcome for `ip` against `suffixes`, without any I/O.
    pub fn cached(&self, ip: IpAddr, suffixes: &[String]) -> Option<RdnsCheck> {
        let ip = ip.to_canonical();
        let entry = self.cache_get(ip, Instant::now())?;
        Some(entry.judge(ip, suffixes))
    }

    /// Checks `ip` against `suffixes`, within the configured timeout.
    pub async fn check(&self, ip: IpAddr, suffixes: &[String]) -> RdnsCheck {
        let ip = ip.to_canonical();
        let timeout = self.inner.config.timeout;
        if let Some(entry) = self.cache_get(ip, Instant::now()) {
            return entry.judge(ip, suffixes);
        }
        let mut rx = {
            let mut in_flight = lock(&self.inner.in_flight);
            if let Some(rx) = in_flight.get(&ip) {
                rx.clone()
            } else {
                // A lookup that finished since the first look has stored
                // its result before leaving the in-flight map.
                if let Some(entry) = self.cache_get(ip, Instant::now()) {
                    return entry.judge(ip, suffixes);
                }
                if in_flight.len() >= self.inner.config.max_in_flight {
                    return RdnsCheck::Failed {
                        reason: format!("{} reverse DNS lookups already in flight", in_flight.len()),
                    };
                }
                let Ok(runtime) = tokio::runtime::Handle::try_current() else {
                    return RdnsCheck::Failed { reason: "no Tokio runtime to run the lookup on".into() };
                };
                let (tx, rx) = watch::channel(None);
                in_flight.insert(ip, rx.clone());
                self.inner.lookups.fetch_add(1, Ordering::Relaxed);
                let inner = Arc::clone(&self.inner);
                // The lookup runs on its own, so a waiter that gives up
                // (or is dropped) does not cancel it for the others.
                runtime.spawn(async move { inner.run(ip, tx).await });
                rx
            }
        };
        let waited = tokio::time::timeout(timeout, rx.wait_for(Option::is_some))
            .await
            .map(|done| done.ok().and_then(|entry| entry.clone()));
        match waited {
            Ok(Some(entry)) => entry.judge(ip, suffixes),
            Ok(None) => RdnsCheck::Failed { reason: "lookup ended without a result".into() },
            Err(_) => RdnsCheck::Failed { reason: format!("timed out after {} ms", timeout.as_millis()) },
        }
    }

    /// The number of cached addresses.
    pub fn cache_len(&self) -> usize {
        lock(&self.inner.cache).map.len()
    }

    /// The number of lookups started: checks that found neither a cached
    /// outcome nor a lookup of the same address in flight.
    pub fn lookups(&self) -> u64 {
        self.inner.lookups.load(Ordering::Relaxed)
    }

    fn cache_get(&self, ip: IpAddr, now: Instant) -> Option<Arc<Entry>> {
        lock(&self.inner.cache).get(ip, now)
    }
}

impl Inner {
    /// One lookup of `ip`, bounded by the timeout; its result is cached, then
    /// handed to every waiter.
    async fn run(self: Arc<Self>, ip: IpAddr, tx: watch::Sender<Option<Arc<Entry>>>) {
        // However this task ends, the address leaves the in-flight map.
        let leave = LeaveInFlight { inner: Arc::clone(&self), ip };
        let timeout = self.config.timeout;
        let (outcome, ttl) = match tokio::time::timeout(timeout, Arc::clone(&self).lookup(ip)).await {
            Ok(found) => found,
            Err(_) => (Outcome::Failed(format!("timed out after {} ms", timeout.as_millis())), self.config.failure_ttl),
        };
        let now = Instant::now();
        let expires = now.checked_add(ttl).unwrap_or(now + Duration::from_secs(86_400));
        let entry = Arc::new(Entry { expires, outcome });
        // Cached before leaving the in-flight map: `check` relies on it.
        lock(&self.cache).insert(ip, Arc::clone(&entry));
        drop(leave);
        tx.send_replace(Some(entry));
    }

    /// The PTR names of `ip` and, for each, whether it resolves back to
    /// `ip`; with how long the answer may be cached.
    async fn lookup(self: Arc<Self>, ip: IpAddr) -> (Outcome, Duration) {
        let ptr = match self.resolver.lookup(Name::from(ip), RecordType::PTR).await {
            Ok(found) => found,
            Err(e) => {
                return match self.miss(e, "PTR", &ip.to_string()) {
                    (Miss::Negative(detail), ttl) => (Outcome::NoPtr(detail), ttl),
                    (Miss::Failed(reason), ttl) => (Outcome::Failed(reason), ttl),
                };
            }
        };
        let mut ttl = u32::MAX;
        let mut names: Vec<Name> = Vec::new();
        for record in ptr.answers() {
            if let RData::PTR(name) = &record.data {
                ttl = ttl.min(record.ttl);
                if !names.contains(&name.0) {
                    names.push(name.0.clone());
                }
            }
        }
        names.truncate(MAX_PTR_NAMES);
        if names.is_empty() {
            return (Outcome::NoPtr(format!("no PTR record for {ip} (no data)")), self.clamp(self.config.negative_ttl));
        }
        // Every name is resolved forward at once, so a slow name does not
        // use up the budget of the one that matters.
        let mut tasks = tokio::task::JoinSet::new();
        for (index, name) in names.iter().enumerate() {
            let inner = Arc::clone(&self);
            let name = name.clone();
            tasks.spawn(async move { (index, inner.forward(ip, name).await) });
        }
        let mut forward: Vec<Option<Forward>> = names.iter().map(|_| None).collect();
        let mut lifetime = self.clamp(Duration::from_secs(u64::from(ttl)));
        while let Some(done) = tasks.join_next().await {
            match done {
                Ok((index, (result, ttl))) => {
                    lifetime = lifetime.min(ttl);
                    if let Some(slot) = forward.get_mut(index) {
                        *slot = Some(result);
                    }
                }
                Err(e) => {
                    return (Outcome::Failed(format!("forward lookup for {ip} ended: {e}")), self.config.failure_ttl);
                }
            }
        }
        let results = names
            .iter()
            .zip(forward)
            .map(|(name, forward)| PtrName {
                name: display_name(name),
                forward: forward.unwrap_or_else(|| Forward::Failed("forward lookup ended without a result".into())),
            })
            .collect();
        (Outcome::Names(results), lifetime)
    }

    /// Whether `name` resolves to `ip` (A for IPv4, AAAA for IPv6).
    async fn forward(&self, ip: IpAddr, name: Name) -> (Forward, Duration) {
        let (kind, label) = match ip {
            IpAddr::V4(_) => (RecordType::A, "A"),
            IpAddr::V6(_) => (RecordType::AAAA, "AAAA"),
        };
        let shown = display_name(&name);
        let found = match self.resolver.lookup(name, kind).await {
            Ok(found) => found,
            Err(e) => {
                return match self.miss(e, label, &shown) {
                    (Miss::Negative(detail), ttl) => (Forward::Mismatch(detail), ttl),
                    (Miss::Failed(reason), ttl) => (Forward::Failed(reason), ttl),
                };
            }
        };
        let mut ttl = u32::MAX;
        let mut seen = Vec::new();
        for record in found.answers() {
            let addr = match &record.data {
                RData::A(a) => IpAddr::V4(a.0),
                RData::AAAA(a) => IpAddr::V6(a.0),
                _ => continue,
            };
            ttl = ttl.min(record.ttl);
            if addr == ip {
                return (Forward::Confirmed, self.clamp(Duration::from_secs(u64::from(ttl))));
            }
            seen.push(addr);
        }
        let lifetime = self.clamp(Duration::from_secs(u64::from(ttl)));
        if seen.is_empty() {
            return (Forward::Mismatch(format!("{shown} has no {label} record")), lifetime);
        }
        let mut detail = format!("{shown} resolves to ");
        for (i, addr) in seen.iter().take(MAX_SHOWN_ADDRESSES).enumerate() {
            if i > 0 {
                detail.push_str(", ");
            }
            let _ = write!(detail, "{addr}");
        }
        if seen.len() > MAX_SHOWN_ADDRESSES {
            let _ = write!(detail, " and {} more", seen.len() - MAX_SHOWN_ADDRESSES);
        }
        let _ = write!(detail, ", not {ip}");
        (Forward::Mismatch(detail), lifetime)
    }

    /// A resolver error as a negative answer (NXDOMAIN or no data) or a
    /// failure, with how long to cache it.
    fn miss(&self, error: NetError, kind: &str, what: &str) -> (Miss, Duration) {
        match error {
            NetError::Dns(DnsError::NoRecordsFound(none)) => {
                let ttl = none
                    .negative_ttl
                    .map(|secs| Duration::from_secs(u64::from(secs)))
                    .unwrap_or(self.config.negative_ttl);
                let why = if none.response_code == ResponseCode::NXDomain { "NXDOMAIN" } else { "no data" };
                (Miss::Negative(format!("no {kind} record for {what} ({why})")), self.clamp(ttl))
            }
            NetError::Dns(DnsError::ResponseCode(code)) => (
                Miss::Failed(format!("{kind} lookup for {what}: server answered {}", rcode_name(code))),
                self.config.failure_ttl,
            ),
            other => (Miss::Failed(format!("{kind} lookup for {what}: {other}")), self.config.failure_ttl),
        }
    }

    fn clamp(&self, ttl: Duration) -> Duration {
        ttl.clamp(self.config.min_ttl, self.config.max_ttl.max(self.config.min_ttl))
    }
}

/// Removes an address from the in-flight map when its lookup ends.
struct LeaveInFlight {
    inner: Arc<Inner>,
    ip: IpAddr,
}

impl Drop for LeaveInFlight {
    fn drop(&mut self) {
        lock(&self.inner.in_flight).remove(&self.ip);
    }
}

/// A lookup that found nothing.
enum Miss {
    /// NXDOMAIN or no data: a proof.
    Negative(String),
    /// No answer that tells anything.
    Failed(String),
}

/// One cached lookup.
#[derive(Debug)]
struct Entry {
    expires: Instant,
    outcome: Outcome,
}

#[derive(Debug)]
enum Outcome {
    /// The PTR names (at least one) with their forward results.
    Names(Vec<PtrName>),
    /// No PTR name: NXDOMAIN or no data.
    NoPtr(String),
    /// The lookup failed.
    Failed(String),
}

#[derive(Debug)]
struct PtrName {
    /// Lower case, without the trailing dot.
    name: String,
    forward: Forward,
}

#[derive(Debug)]
enum Forward {
    Confirmed,
    Mismatch(String),
    Failed(String),
}

impl Entry {
    /// The outcome for an operator whose domains are `suffixes`.
    fn judge(&self, ip: IpAddr, suffixes: &[String]) -> RdnsCheck {
        let names = match &self.outcome {
            Outcome::Names(names) => names,
            Outcome::NoPtr(detail) => return RdnsCheck::Mismatch { detail: detail.clone() },
            Outcome::Failed(reason) => return RdnsCheck::Failed { reason: reason.clone() },
        };
        let mut failed = None;
        let mut mismatch = None;
        for ptr in names {
            if !suffixes.iter().any(|suffix| under_domain(&ptr.name, suffix)) {
                continue;
            }
            match &ptr.forward {
                Forward::Confirmed => return RdnsCheck::Confirmed { ptr: ptr.name.clone() },
                Forward::Mismatch(detail) => {
                    mismatch.get_or_insert(detail);
                }
                Forward::Failed(reason) => {
                    failed.get_or_insert(reason);
                }
            }
        }
        if let Some(reason) = failed {
            return RdnsCheck::Failed { reason: reason.clone() };
        }
        if let Some(detail) = mismatch {
            return RdnsCheck::Mismatch { detail: format!("PTR of {ip}: {detail}") };
        }
        let mut detail = format!("PTR of {ip} is ");
        for (i, ptr) in names.iter().enumerate() {
            if i > 0 {
                detail.push_str(", ");
            }
            detail.push_str(&ptr.name);
        }
        detail.push_str(", not under ");
        for (i, suffix) in suffixes.iter().enumerate() {
            if i > 0 {
                detail.push_str(", ");
            }
            detail.push_str(suffix);
        }
        RdnsCheck::Mismatch { detail }
    }
}

/// Whether `name` (lower case, no trailing dot) is `domain` or under it, on
/// a label boundary: `crawl-1.googlebot.com` is under `googlebot.com`,
/// `evilgooglebot.com` is not. Case-insensitive; a trailing or leading dot
/// of `domain` is ignored.
fn under_domain(name: &str, domain: &str) -> bool {
    let domain = domain.strip_suffix('.').unwrap_or(domain);
    let domain = domain.strip_prefix('.').unwrap_or(domain);
    let (name, domain) = (name.as_bytes(), domain.as_bytes());
    if domain.is_empty() || name.len() < domain.len() {
        return false;
    }
    let split = name.len() - domain.len();
    name[split..].eq_ignore_ascii_case(domain) && (split == 0 || name[split - 1] == b'.')
}

/// The RFC 1035 section 4.1.1 mnemonic of a response code.
fn rcode_name(code: ResponseCode) -> String {
    match code {
        ResponseCode::FormErr => "FORMERR".into(),
        ResponseCode::ServFail => "SERVFAIL".into(),
        ResponseCode::NXDomain => "NXDOMAIN".into(),
        ResponseCode::NotImp => "NOTIMP".into(),
        ResponseCode::Refused => "REFUSED".into(),
        other => format!("{other} ({})", u16::from(other)),
    }
}

/// A DNS name in lower case without its trailing dot.
fn display_name(name: &Name) -> String {
    let mut text = name.to_ascii();
    if text.ends_with('.') && text.len() > 1 {
        text.pop();
    }
    text.make_ascii_lowercase();
    text
}

/// The `nameserver` lines of a resolv.conf (resolv.conf(5)), on port 53.
fn resolv_conf_nameservers(text: &str) -> Vec<SocketAddr> {
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            if words.next()? != "nameserver" {
                return None;
            }
            let addr = words.next()?;
            // A link-local IPv6 address may carry a zone (`fe80::1%eth0`).
            let addr = addr.split('%').next()?;
            addr.parse::<IpAddr>().ok().map(|ip| SocketAddr::new(ip, 53))
        })
        .collect()
}

/// The address cache: at most `capacity` addresses, the oldest inserted
/// evicted first; an expired entry is dropped when read.
struct Cache {
    map: HashMap<IpAddr, (u64, Arc<Entry>)>,
    order: VecDeque<(IpAddr, u64)>,
    next: u64,
    capacity: usize,
}

impl Cache {
    fn new(capacity: usize) -> Cache {
        Cache { map: HashMap::new(), order: VecDeque::new(), next: 0, capacity }
    }

    fn get(&mut self, ip: IpAddr, now: Instant) -> Option<Arc<Entry>> {
        let (_, entry) = self.map.get(&ip)?;
        if entry.expires > now {
            return Some(Arc::clone(entry));
        }
        self.map.remove(&ip);
        None
    }

    fn insert(&mut self, ip: IpAddr, entry: Arc<Entry>) {
        if self.capacity == 0 {
            return;
        }
        let seq = self.next;
        self.next += 1;
        self.map.insert(ip, (seq, entry));
        self.order.push_back((ip, seq));
        while self.map.len() > self.capacity {
            let Some((old, old_seq)) = self.order.pop_front() else { break };
            if self.map.get(&old).is_some_and(|(current, _)| *current == old_seq) {
                self.map.remove(&old);
            }
        }
        // Re-inserted and expired addresses leave stale positions behind.
        if self.order.len() > 2 * self.capacity + 16 {
            let map = &self.map;
            self.order.retain(|(ip, seq)| map.get(ip).is_some_and(|(current, _)| current == seq));
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_boundary_suffixes() {
        assert!(under_domain("crawl-66-249-66-1.googlebot.com", "googlebot.com"));
        assert!(under_domain("crawl-66-249-66-1.googlebot.com", "GoogleBot.COM."));
        assert!(under_domain("googlebot.com", "googlebot.com"));
        assert!(under_domain("a.googlebot.com", ".googlebot.com"));
        assert!(!under_domain("evilgooglebot.com", "googlebot.com"));
        assert!(!under_domain("googlebot.com.evil.net", "googlebot.com"));
        assert!(!under_domain("com", "googlebot.com"));
        assert!(!under_domain("googlebot.com", ""));
        assert!(!under_domain("googlebot.com", "."));
    }

    #[test]
    fn resolv_conf_lines() {
        let text = "# comment\nsearch example.net\nnameserver 192.0.2.53\nnameserver  fe80::1%eth0\n\
                    nameserver bogus\noptions ndots:2\n";
        assert_eq!(
            resolv_conf_nameservers(text),
            vec![
                "192.0.2.53:53".parse::<SocketAddr>().unwrap_or_else(|e| panic!("{e}")),
                "[fe80::1]:53".parse::<SocketAddr>().unwrap_or_else(|e| panic!("{e}")),
            ]
        );
    }

    fn entry(outcome: Outcome) -> Arc<Entry> {
        Arc::new(Entry { expires: Instant::now() + Duration::from_secs(60), outcome })
    }

    #[test]
    fn cache_evicts_oldest_and_stays_bounded() {
        let mut cache = Cache::new(3);
        let ip = |n: u8| IpAddr::from([192, 0, 2, n]);
        for n in 0..10 {
            cache.insert(ip(n), entry(Outcome::NoPtr(String::new())));
            // Re-inserting one address must not grow the order queue forever.
            cache.insert(ip(0), entry(Outcome::NoPtr(String::new())));
        }
        assert_eq!(cache.map.len(), 3);
        assert!(cache.order.len() <= 2 * 3 + 16);
        let now = Instant::now();
        assert!(cache.get(ip(0), now).is_some());
        assert!(cache.get(ip(9), now).is_some());
        assert!(cache.get(ip(8), now).is_some());
        assert!(cache.get(ip(1), now).is_none());
    }

    #[test]
    fn expired_entries_are_dropped_on_read() {
        let mut cache = Cache::new(3);
        let ip = IpAddr::from([192, 0, 2, 1]);
        cache.insert(ip, entry(Outcome::NoPtr(String::new())));
        assert!(cache.get(ip, Instant::now() + Duration::from_secs(61)).is_none());
        assert_eq!(cache.map.len(), 0);
    }

    #[test]
    fn judge_applies_the_suffixes_on_read() {
        let ip = IpAddr::from([192, 0, 2, 1]);
        let found = entry(Outcome::Names(vec![
            PtrName { name: "host.example.net".into(), forward: Forward::Confirmed },
            PtrName {
                name: "crawl.googlebot.com".into(),
                forward: Forward::Mismatch("crawl.googlebot.com resolves to 192.0.2.9, not 192.0.2.1".into()),
            },
        ]));
        assert_eq!(
            found.judge(ip, &["example.net".to_string()]),
            RdnsCheck::Confirmed { ptr: "host.example.net".into() }
        );
        assert_eq!(
            found.judge(ip, &["googlebot.com".to_string()]),
            RdnsCheck::Mismatch {
                detail: "PTR of 192.0.2.1: crawl.googlebot.com resolves to 192.0.2.9, not 192.0.2.1".into()
            }
        );
        assert_eq!(
            found.judge(ip, &["search.msn.com".to_string()]),
            RdnsCheck::Mismatch {
                detail: "PTR of 192.0.2.1 is host.example.net, crawl.googlebot.com, not under search.msn.com".into()
            }
        );
    }
}
