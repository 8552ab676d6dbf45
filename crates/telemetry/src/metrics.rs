//! The project's own Prometheus registry. Every label value comes from a
//! bounded set: agent labels are the policy's own product tokens and the
//! catalog crawlers the origin's robots.txt names, plus `other` (any other
//! token the origin's file names counts there, however often it changes);
//! group labels the policy's own group names plus `origin`; series of
//! tokens or groups a reload or a new origin copy removed are dropped.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use arc_swap::ArcSwap;

use prometheus::{
    exponential_buckets, Encoder, GaugeVec, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec,
    IntGauge, IntGaugeVec, Opts, Registry, TextEncoder,
};

use crawlgate_policy::{Action, BlockReason, HtmlMode, LocalFile, Policy};

mod markdown;
mod payment;
mod process;
mod store;
mod verification;

pub use markdown::{MarkdownFailure, MarkdownMetrics};
pub use payment::PaymentMetrics;
use process::*;
use store::StoreMetrics;
pub use verification::VerificationMetrics;
use verification::VERIFICATION_LABELS;

/// Label value for requests whose User-Agent names no policy token.
pub const OTHER_AGENT: &str = "other";

/// Group label of the groups taken from the origin's robots.txt.
pub const ORIGIN_GROUP: &str = "origin";

/// The label values the current snapshot allows (see the module doc).
#[derive(Debug, Default)]
struct Labels {
    agents: HashSet<String>,
    groups: HashSet<String>,
}

impl Labels {
    fn of(policy: &Policy) -> Labels {
        Labels {
            agents: policy.agent_labels().map(str::to_string).collect(),
            groups: policy.own_group_names().map(str::to_string).collect(),
        }
    }

    /// `agent` when it is a label value in use: a policy or merged
    /// catalog token, or a catalog crawler in its catalog spelling (the
    /// set stays bounded by the catalog); else `other`.
    fn agent<'a>(&self, agent: &'a str) -> &'a str {
        // Most requests name no token: no hashing, no catalog search.
        if agent == OTHER_AGENT {
            return OTHER_AGENT;
        }
        if self.agents.contains(agent) || crawlgate_policy::catalog::lookup(agent).is_some_and(|e| e.token == agent) {
            agent
        } else {
            OTHER_AGENT
        }
    }

    fn group<'a>(&self, group: &'a str) -> &'a str {
        if self.groups.contains(group) {
            group
        } else {
            ORIGIN_GROUP
        }
    }
}

/// How a reload attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReloadOutcome {
    /// A new snapshot is live.
    Success,
    /// The file's content did not change.
    Unchanged,
    /// The running policy stays.
    Failure,
}

impl ReloadOutcome {
    /// Every outcome, so that each series exists from the start (an
    /// `increase()` over a series that appears with its first failure sees
    /// nothing).
    pub const ALL: [ReloadOutcome; 3] = [ReloadOutcome::Success, ReloadOutcome::Unchanged, ReloadOutcome::Failure];

    /// Its `result` label in `crawlgate_reloads_total`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ReloadOutcome::Success => "success",
            ReloadOutcome::Unchanged => "unchanged",
            ReloadOutcome::Failure => "failure",
        }
    }
}

/// Why an HTML response passes through unchanged: the `reason` label of
/// `crawlgate_html_passthrough_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Passthrough {
    /// A content coding this proxy does not decode.
    Encoding,
    /// A charset label lol_html cannot rewrite (UTF-16, unknown labels).
    Charset,
    /// The body starts with a UTF-16 byte order mark, which overrides any
    /// label (WHATWG Encoding, "BOM sniff"): the whole body is the
    /// origin's.
    Utf16,
    /// The rewriter gave up mid-body (lol_html's memory limit); the rest
    /// passes through.
    BailOut,
}

impl Passthrough {
    /// `encoding`, `charset`, `utf-16`, `bail-out`.
    pub fn as_str(self) -> &'static str {
        match self {
            Passthrough::Encoding => "encoding",
            Passthrough::Charset => "charset",
            Passthrough::Utf16 => "utf-16",
            Passthrough::BailOut => "bail-out",
        }
    }
}

/// How one fetch of the origin's robots.txt ended: the `result` label of
/// `crawlgate_origin_robots_fetches_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OriginFetch {
    /// A 2xx with a body within the limit: the new copy.
    Ok,
    /// A 4xx: the origin has no robots.txt (RFC 9309 section 2.3.1.3).
    Absent,
    /// Another status (3xx, 5xx): the last good copy stays.
    Status,
    /// No answer within `origin_timeout`.
    Timeout,
    /// Connection or protocol error, or no healthy upstream.
    Error,
    /// A body over 500 KiB.
    TooLarge,
}

impl OriginFetch {
    /// Every result, so that each series exists from the start.
    pub const ALL: [OriginFetch; 6] = [
        OriginFetch::Ok,
        OriginFetch::Absent,
        OriginFetch::Status,
        OriginFetch::Timeout,
        OriginFetch::Error,
        OriginFetch::TooLarge,
    ];

    /// Its `result` label.
    pub const fn as_str(self) -> &'static str {
        match self {
            OriginFetch::Ok => "ok",
            OriginFetch::Absent => "absent",
            OriginFetch::Status => "status",
            OriginFetch::Timeout => "timeout",
            OriginFetch::Error => "error",
            OriginFetch::TooLarge => "too_large",
        }
    }
}

/// All metrics of one process.
pub struct Metrics {
    registry: Registry,
    requests: IntCounterVec,
    robots_fetches: IntCounterVec,
    violations: IntCounterVec,
    /// `crawlgate_blocks_total{agent,reason}`.
    blocks: IntCounterVec,
    /// `crawlgate_rate_limited_total{agent,group}`.
    rate_limited: IntCounterVec,
    html_rewrites: IntCounterVec,
    html_findings: IntCounterVec,
    html_passthrough: IntCounterVec,
    decompression_aborted: IntCounterVec,
    reloads: IntCounterVec,
    generation: IntGauge,
    reload_failing: IntGauge,
    last_success: prometheus::Gauge,
    upstream_healthy: GaugeVec,
    reload_duration: Histogram,
    client_connections: IntGaugeVec,
    connections_refused: IntCounterVec,
    client_timeouts: IntCounterVec,
    last_reload_successful: IntGauge,
    policy_info: IntGaugeVec,
    process: ProcessMetrics,
    origin_robots_fetches: IntCounterVec,
    origin_robots_age: prometheus::Gauge,
    tls_reloads: IntCounterVec,
    tls_not_after: IntGauge,
    verification: VerificationMetrics,
    payment: PaymentMetrics,
    /// Whether `crawlgate_requests_total` has the `verification` label.
    verification_label: bool,
    /// The fixed-label series counted on every request, looked up once
    /// (a lookup by label takes a lock and hashes the labels).
    hot: HotSeries,
    /// The agent and group label values of the current snapshot.
    labels: ArcSwap<Labels>,
    /// The shared store's state.
    store: StoreMetrics,
    /// `[markdown]`: conversions, refusals, the cache.
    markdown: MarkdownMetrics,
}

/// Series of fixed label sets, by index: [`STATUS_CLASSES`] (`error` last
/// for the upstream) and [`Action::ALL`].
struct HotSeries {
    responses: [IntCounter; 5],
    upstream_responses: [IntCounter; 6],
    duration: [Histogram; 3],
}

/// The status classes, in the order of [`HotSeries`].
const STATUS_CLASSES: [&str; 6] = ["1xx", "2xx", "3xx", "4xx", "5xx", "error"];

/// The index of a status class in [`STATUS_CLASSES`] (`error`: 5).
fn class_index(status: Option<u16>) -> usize {
    match status {
        Some(100..=199) => 0,
        Some(200..=299) => 1,
        Some(300..=399) => 2,
        Some(400..=499) => 3,
        Some(500..=599) => 4,
        _ => 5,
    }
}

/// The index of an outcome in [`Action::ALL`].
fn action_index(a: Action) -> usize {
    match a {
        Action::Pass => 0,
        Action::LogViolation => 1,
        Action::Block => 2,
    }
}

/// The commit the binary was built from (`build.rs`), `unknown` outside a
/// git checkout.
const COMMIT: &str = env!("CRAWLGATE_COMMIT");

/// The connection metrics of one listener kind (`proxy` or `admin`), with
/// their labels resolved once at start.
pub struct ConnMetrics {
    /// Open client connections.
    pub open: IntGauge,
    /// Connections refused at the cap.
    pub refused: IntCounter,
    /// Connections closed while waiting for a request.
    pub idle_timeouts: IntCounter,
    /// Connections closed while a request header was arriving.
    pub header_timeouts: IntCounter,
    /// HTTP/2 connections closed before their connection preface.
    pub preface_timeouts: IntCounter,
}

fn counter(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> prometheus::Result<IntCounterVec> {
    let c = IntCounterVec::new(Opts::new(name, help), labels)?;
    registry.register(Box::new(c.clone()))?;
    Ok(c)
}

impl Metrics {
    /// Creates and registers every metric. With `verification` (the policy at start has a
    /// `[verification]` table) `crawlgate_requests_total` also has the
    /// bounded `verification` label, without it its labels stay `agent`
    /// and `decision`.
    pub fn with_verification(verification: bool) -> prometheus::Result<Metrics> {
        let request_labels: &[&str] =
            if verification { &["agent", "decision", "verification"] } else { &["agent", "decision"] };
        let registry = Registry::new();
        let r = &registry;
        let duration = HistogramVec::new(
            HistogramOpts::new(
                "crawlgate_request_duration_seconds",
                "Time from request start to the end of the response, by decision.",
            )
            .buckets(exponential_buckets(0.0005, 2.0, 16)?),
            &["decision"],
        )?;
        registry.register(Box::new(duration.clone()))?;
        let generation = IntGauge::new(
            "crawlgate_policy_generation",
            "Generation of the running policy (1 at start, +1 per successful reload).",
        )?;
        registry.register(Box::new(generation.clone()))?;
        let reload_failing = IntGauge::new(
            "crawlgate_policy_reload_failing",
            "1 while the policy file on disk failed to load and the previous policy is in force; 0 once a reload succeeds or the file is the running policy again.",
        )?;
        registry.register(Box::new(reload_failing.clone()))?;
        let last_success = prometheus::Gauge::new(
            "crawlgate_policy_last_success_timestamp_seconds",
            "Unix time of the last successful policy load.",
        )?;
        registry.register(Box::new(last_success.clone()))?;
        let upstream_healthy = GaugeVec::new(
            Opts::new("crawlgate_upstream_healthy", "1 when the upstream server passes its health check."),
            &["upstream"],
        )?;
        registry.register(Box::new(upstream_healthy.clone()))?;
        let reload_duration = Histogram::with_opts(
            HistogramOpts::new("crawlgate_reload_duration_seconds", "Time to read, compile and swap a policy.")
                .buckets(exponential_buckets(0.0005, 2.0, 14)?),
        )?;
        registry.register(Box::new(reload_duration.clone()))?;
        let client_connections = IntGaugeVec::new(
            Opts::new("crawlgate_client_connections", "Open client connections by listener (proxy, admin)."),
            &["listener"],
        )?;
        registry.register(Box::new(client_connections.clone()))?;
        let origin_robots_age = prometheus::Gauge::new(
            "crawlgate_origin_robots_age_seconds",
            "Age of the origin robots.txt copy merged into /robots.txt (0 while none is in use).",
        )?;
        registry.register(Box::new(origin_robots_age.clone()))?;
        let tls_not_after = IntGauge::new(
            "crawlgate_tls_certificate_not_after_timestamp_seconds",
            "The notAfter time (Unix seconds) of the TLS certificate in use; 0 without TLS listeners.",
        )?;
        registry.register(Box::new(tls_not_after.clone()))?;
        let last_reload_successful = IntGauge::new(
            "crawlgate_policy_last_reload_successful",
            "1 when the last load of the policy file succeeded (or found it unchanged), 0 when it failed.",
        )?;
        registry.register(Box::new(last_reload_successful.clone()))?;
        last_reload_successful.set(1);
        let policy_info = IntGaugeVec::new(
            Opts::new("crawlgate_policy_info", "The running policy, by the SHA-256 of its file; always 1."),
            &["sha256"],
        )?;
        registry.register(Box::new(policy_info.clone()))?;
        let build_info = IntGaugeVec::new(
            Opts::new("crawlgate_build_info", "The running binary's version and commit; always 1."),
            &["version", "commit"],
        )?;
        registry.register(Box::new(build_info.clone()))?;
        build_info.with_label_values(&[env!("CARGO_PKG_VERSION"), COMMIT]).set(1);
        let process = ProcessMetrics::new(r)?;
        let responses = counter(
            r,
            "crawlgate_responses_total",
            "Responses sent to clients by status class (1xx to 5xx).",
            &["status_class"],
        )?;
        let upstream_responses = counter(
            r,
            "crawlgate_upstream_responses_total",
            "Upstream responses by status class (error: no response).",
            &["class"],
        )?;
        // Every series counted per request, resolved once; each exists from
        // the start.
        let hot = HotSeries {
            responses: std::array::from_fn(|i| responses.with_label_values(&[STATUS_CLASSES[i]])),
            upstream_responses: std::array::from_fn(|i| upstream_responses.with_label_values(&[STATUS_CLASSES[i]])),
            duration: Action::ALL.map(|a| duration.with_label_values(&[a.as_str()])),
        };
        let metrics = Metrics {
            origin_robots_fetches: counter(
                r,
                "crawlgate_origin_robots_fetches_total",
                "Fetches of the origin's own robots.txt by result.",
                &["result"],
            )?,
            origin_robots_age,
            tls_reloads: counter(
                r,
                "crawlgate_tls_reloads_total",
                "Reloads of the TLS certificate and key files by result (success, unchanged, failure: the running certificate stays).",
                &["result"],
            )?,
            tls_not_after,
            last_reload_successful,
            policy_info,
            process,
            client_connections,
            connections_refused: counter(
                r,
                "crawlgate_connections_refused_total",
                "Client connections refused because the listener's max_connections was reached.",
                &["listener"],
            )?,
            client_timeouts: counter(
                r,
                "crawlgate_client_timeouts_total",
                "Client connections closed by a client timeout, by listener and phase (idle, header, preface).",
                &["listener", "phase"],
            )?,
            requests: counter(
                r,
                "crawlgate_requests_total",
                "Proxied or answered requests by agent token, decision and, with verification, its outcome (none, verified, unverified, spoofed).",
                request_labels,
            )?,
            robots_fetches: counter(
                r,
                "crawlgate_robots_fetches_total",
                "Fetches of /robots.txt and /agents.txt by agent token.",
                &["agent", "file"],
            )?,
            violations: counter(
                r,
                "crawlgate_violations_total",
                "Requests for paths the agent's robots.txt group disallows.",
                &["agent", "group"],
            )?,
            blocks: counter(
                r,
                "crawlgate_blocks_total",
                "Requests the proxy refused, by agent token and reason (robots, spoofed, unverified, bad-request, loop, replayed, rate, payment).",
                &["agent", "reason"],
            )?,
            rate_limited: counter(
                r,
                "crawlgate_rate_limited_total",
                "Requests refused with 429 over a rate limit, by agent token and the group whose limit it is.",
                &["agent", "group"],
            )?,
            html_rewrites: counter(
                r,
                "crawlgate_html_rewrites_total",
                "HTML responses streamed through the robots meta rewriter, by mode.",
                &["mode"],
            )?,
            html_findings: counter(
                r,
                "crawlgate_html_findings_total",
                "Robots meta findings by mode and kind.",
                &["mode", "kind"],
            )?,
            html_passthrough: counter(
                r,
                "crawlgate_html_passthrough_total",
                "HTML responses passed through unchanged, by reason.",
                &["reason"],
            )?,
            decompression_aborted: counter(
                r,
                "crawlgate_decompression_aborted_total",
                "Compressed HTML responses aborted mid-body while decoding them, by reason (size, ratio, invalid).",
                &["reason"],
            )?,
            reloads: counter(r, "crawlgate_reloads_total", "Policy reloads by result.", &["result"])?,
            verification: VerificationMetrics::new(r)?,
            store: StoreMetrics::new(r)?,
            payment: PaymentMetrics::new(r)?,
            markdown: MarkdownMetrics::new(r)?,
            verification_label: verification,
            generation,
            reload_failing,
            last_success,
            upstream_healthy,
            reload_duration,
            registry,
            hot,
            labels: ArcSwap::from_pointee(Labels::default()),
        };
        for outcome in ReloadOutcome::ALL {
            metrics.reloads.with_label_values(&[outcome.as_str()]);
            metrics.tls_reloads.with_label_values(&[outcome.as_str()]);
        }
        for result in OriginFetch::ALL {
            metrics.origin_robots_fetches.with_label_values(&[result.as_str()]);
        }
        for reason in [Passthrough::Encoding, Passthrough::Charset, Passthrough::Utf16, Passthrough::BailOut] {
            metrics.html_passthrough.with_label_values(&[reason.as_str()]);
        }
        for reason in ["size", "ratio", "invalid"] {
            metrics.decompression_aborted.with_label_values(&[reason]);
        }
        for mode in [HtmlMode::Inject, HtmlMode::Audit, HtmlMode::Enforce] {
            metrics.html_rewrites.with_label_values(&[mode.as_str()]);
        }
        Ok(metrics)
    }

    /// Counts one request; `verification` is one of [`VERIFICATION_LABELS`].
    pub fn request(&self, agent: &str, outcome: Action, verification: &str, elapsed: Duration) {
        let agent = self.labels.load().agent(agent);
        if self.verification_label {
            self.requests.with_label_values(&[agent, outcome.as_str(), verification]).inc();
        } else {
            self.requests.with_label_values(&[agent, outcome.as_str()]).inc();
        }
        self.hot.duration[action_index(outcome)].observe(elapsed.as_secs_f64());
    }

    /// Counts a response sent to a client by its status class (no series
    /// for a request that got no response).
    pub fn response(&self, status: u16) {
        // `error` (index 5) has no series here.
        if let Some(counter) = self.hot.responses.get(class_index(Some(status))) {
            counter.inc();
        }
    }

    /// Counts a fetch of `/robots.txt` or `/agents.txt`.
    pub fn robots_fetch(&self, agent: &str, file: &str) {
        let agent = self.labels.load().agent(agent);
        self.robots_fetches.with_label_values(&[agent, file]).inc();
    }

    /// Counts a robots.txt violation.
    pub fn violation(&self, agent: &str, group: &str) {
        let labels = self.labels.load();
        self.violations.with_label_values(&[labels.agent(agent), labels.group(group)]).inc();
    }

    /// The payment metrics.
    pub fn payment(&self) -> &PaymentMetrics {
        &self.payment
    }

    /// Counts a request the proxy refused, by [`BlockReason`].
    pub fn block(&self, agent: &str, reason: BlockReason) {
        let agent = self.labels.load().agent(agent);
        self.blocks.with_label_values(&[agent, reason.as_str()]).inc();
    }

    /// Counts a request refused over the rate limit of `group`.
    pub fn rate_limited(&self, agent: &str, group: &str) {
        let labels = self.labels.load();
        self.rate_limited.with_label_values(&[labels.agent(agent), labels.group(group)]).inc();
    }

    /// Counts a rewritten HTML response.
    pub fn html_rewrite(&self, mode: &str) {
        self.html_rewrites.with_label_values(&[mode]).inc();
    }

    /// Counts one HTML finding.
    pub fn html_finding(&self, mode: &str, kind: &str) {
        self.html_findings.with_label_values(&[mode, kind]).inc();
    }

    /// Counts `n` HTML findings of one kind (those counted but not recorded
    /// in detail).
    pub fn html_findings(&self, mode: &str, kind: &str, n: u64) {
        self.html_findings.with_label_values(&[mode, kind]).inc_by(n);
    }

    /// Counts an HTML response left unchanged, by [`Passthrough`]
    /// reason.
    pub fn html_passthrough(&self, reason: Passthrough) {
        self.html_passthrough.with_label_values(&[reason.as_str()]).inc();
    }

    /// Counts a response aborted while decoding its body (`size`, `ratio`,
    /// `invalid`).
    pub fn decompression_aborted(&self, reason: &str) {
        self.decompression_aborted.with_label_values(&[reason]).inc();
    }

    /// Counts an upstream response by status class.
    pub fn upstream_status(&self, status: Option<u16>) {
        self.hot.upstream_responses[class_index(status)].inc();
    }

    /// Counts a reload attempt (`success`, `failure`, `unchanged`).
    pub fn reload(&self, outcome: ReloadOutcome) {
        self.reloads.with_label_values(&[outcome.as_str()]).inc();
        self.reload_failing.set(i64::from(outcome == ReloadOutcome::Failure));
        self.last_reload_successful.set(i64::from(outcome != ReloadOutcome::Failure));
    }

    /// Counts a reload of the TLS certificate files.
    pub fn tls_reload(&self, outcome: ReloadOutcome) {
        self.tls_reloads.with_label_values(&[outcome.as_str()]).inc();
    }

    /// Sets the `notAfter` time of the TLS certificate in use.
    pub fn tls_not_after(&self, unix_seconds: i64) {
        self.tls_not_after.set(unix_seconds);
    }

    /// Counts one fetch of the origin's robots.txt.
    pub fn origin_robots_fetch(&self, result: OriginFetch) {
        self.origin_robots_fetches.with_label_values(&[result.as_str()]).inc();
    }

    /// Sets the age of the origin robots.txt copy in use (`None`: no copy).
    pub fn origin_robots_age(&self, age: Option<Duration>) {
        self.origin_robots_age.set(age.map_or(0.0, |a| a.as_secs_f64()));
    }

    /// Observes how long a successful reload took.
    pub fn reload_duration(&self, elapsed: Duration) {
        self.reload_duration.observe(elapsed.as_secs_f64());
    }

    /// Records a newly loaded snapshot and drops the series of tokens and
    /// groups the previous policy had and this one has not.
    pub fn policy_loaded(&self, generation: u64, loaded_at: SystemTime, policy: &Policy, previous: Option<&Policy>) {
        self.generation.set(i64::try_from(generation).unwrap_or(i64::MAX));
        let now = loaded_at.duration_since(UNIX_EPOCH).unwrap_or_default();
        self.last_success.set(now.as_secs_f64());
        self.policy_info.reset();
        self.policy_info.with_label_values(&[policy.source_sha256()]).set(1);
        let labels = Labels::of(policy);
        // Every series whose labels this policy fixes exists from the load
        // on, so that rate() and increase() see the first request: those of
        // the policy's own tokens (the origin's come and go with its file).
        for token in policy.own_tokens().chain([OTHER_AGENT]) {
            for d in Action::ALL.map(Action::as_str) {
                if self.verification_label {
                    for v in VERIFICATION_LABELS {
                        self.requests.with_label_values(&[token, d, v]);
                    }
                } else {
                    self.requests.with_label_values(&[token, d]);
                }
            }
            for f in LocalFile::ALL.map(LocalFile::as_str) {
                self.robots_fetches.with_label_values(&[token, f]);
            }
            for reason in BlockReason::ALL {
                self.blocks.with_label_values(&[token, reason.as_str()]);
            }
        }
        // A token's violations are counted under the group it gets;
        // requests naming no token under `*`'s.
        for token in policy.own_tokens().chain([""]) {
            let decision = policy.decide(token, "/");
            if let Some(group) = decision.group {
                let series = [labels.agent(decision.agent.unwrap_or(OTHER_AGENT)), labels.group(group.name)];
                self.violations.with_label_values(&series);
                self.rate_limited.with_label_values(&series);
                self.store.pre_create_exceeded(series);
            }
        }
        self.bind_labels(labels);
        if let Some(prev) = previous {
            let servers = &policy.settings().upstream.servers;
            for name in prev.settings().upstream.servers.iter().filter(|s| !servers.contains(s)) {
                let _ = self.upstream_healthy.remove_label_values(&[name]);
            }
        }
    }

    /// Follows a new snapshot's tokens and groups without a reload (a new
    /// copy of the origin's robots.txt merged in): the series of labels it
    /// no longer has are dropped.
    pub fn snapshot_changed(&self, policy: &Policy) {
        self.bind_labels(Labels::of(policy));
    }

    /// Makes `new` the label values in use and drops the series of the
    /// agent and group values it no longer has. Hash sets, and only the
    /// values that went away are visited: a reload is linear in the tokens
    /// and groups.
    fn bind_labels(&self, new: Labels) {
        let old = self.labels.swap(Arc::new(new));
        let new = self.labels.load();
        let gone_agents: Vec<&str> =
            old.agents.iter().filter(|a| !new.agents.contains(*a)).map(String::as_str).collect();
        let gone_groups: Vec<&str> =
            old.groups.iter().filter(|g| !new.groups.contains(*g)).map(String::as_str).collect();
        for token in &gone_agents {
            for d in Action::ALL.map(Action::as_str) {
                if self.verification_label {
                    for v in VERIFICATION_LABELS {
                        let _ = self.requests.remove_label_values(&[token, d, v]);
                    }
                } else {
                    let _ = self.requests.remove_label_values(&[token, d]);
                }
            }
            for f in LocalFile::ALL.map(LocalFile::as_str) {
                let _ = self.robots_fetches.remove_label_values(&[token, f]);
            }
            for reason in BlockReason::ALL {
                let _ = self.blocks.remove_label_values(&[token, reason.as_str()]);
            }
            for group in old.groups.iter().map(String::as_str).chain([ORIGIN_GROUP]) {
                let _ = self.violations.remove_label_values(&[token, group]);
                let _ = self.rate_limited.remove_label_values(&[token, group]);
            }
        }
        for group in &gone_groups {
            for agent in old.agents.iter().map(String::as_str).chain([OTHER_AGENT]) {
                let _ = self.violations.remove_label_values(&[agent, group]);
                let _ = self.rate_limited.remove_label_values(&[agent, group]);
            }
        }
    }

    /// Number of agent label values in use (the policy's own tokens and the
    /// origin's catalog crawlers; `other` not included).
    #[cfg(test)]
    pub fn agent_labels(&self) -> usize {
        self.labels.load().agents.len()
    }

    /// The verification metrics.
    pub fn verification(&self) -> &VerificationMetrics {
        &self.verification
    }

    /// The connection metrics of `listener` (`proxy` or `admin`).
    pub fn connections(&self, listener: &str) -> ConnMetrics {
        ConnMetrics {
            open: self.client_connections.with_label_values(&[listener]),
            refused: self.connections_refused.with_label_values(&[listener]),
            idle_timeouts: self.client_timeouts.with_label_values(&[listener, "idle"]),
            header_timeouts: self.client_timeouts.with_label_values(&[listener, "header"]),
            preface_timeouts: self.client_timeouts.with_label_values(&[listener, "preface"]),
        }
    }

    /// Records the health of every upstream server.
    pub fn upstream_health(&self, servers: &[(String, std::net::SocketAddr, bool)]) {
        for (name, _, healthy) in servers {
            self.upstream_healthy.with_label_values(&[name]).set(if *healthy { 1.0 } else { 0.0 });
        }
    }

    /// Records the shared store's state: up or not, and its running total
    /// of failed calls; `None` without a store (the up gauge stays absent).
    pub fn limits_store(&self, store: Option<(bool, u64)>) {
        self.store.configured.set(i64::from(store.is_some()));
        let Some((up, errors)) = store else { return };
        self.store.up.with_label_values(&[] as &[&str]).set(i64::from(up));
        let seen = self.store.errors.get();
        if errors > seen {
            self.store.errors.inc_by(errors - seen);
        }
    }

    /// Records the limiter's running totals of checks that fell back to
    /// the in-process store, per reason.
    pub fn limits_fallbacks(&self, totals: [(crawlgate_limits::Fallback, u64); 3]) {
        for ((_, total), counter) in totals.iter().zip(&self.store.fallbacks) {
            let seen = counter.get();
            if *total > seen {
                counter.inc_by(total - seen);
            }
        }
    }

    /// The Prometheus text exposition of every metric, and its content type.
    pub fn encode(&self) -> (Vec<u8>, String) {
        self.process.update();
        let encoder = TextEncoder::new();
        let mut buf = Vec::new();
        if let Err(e) = encoder.encode(&self.registry.gather(), &mut buf) {
            tracing::error!(error = %e, "Cannot encode metrics");
        }
        (buf, encoder.format_type().to_string())
    }
}

/// Unix time in seconds, for `/status`.
pub fn unix_seconds(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}
