//! The running state: one immutable [`Snapshot`] (compiled policy, the
//! pre-rendered robots.txt and agents.txt with their ETags, the upstream
//! pool) behind one `ArcSwap`, plus what the admin endpoints report about
//! reloads. A request loads the snapshot once, in `new_ctx`, and keeps that
//! `Arc` for its whole life.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use arc_swap::ArcSwap;
use crawlgate_policy::{Diagnostics, Policy};

use crawlgate_payment::clients::Dialects;

use crate::handles::Handles;
use crate::respond::StaticFile;
use crate::upstream::{Upstream, UpstreamError};
use crawlgate_telemetry::metrics::{Metrics, OriginFetch};

/// Everything one request needs, immutable: the policy and what its
/// stages act with.
pub struct Snapshot {
    /// The compiled policy.
    pub policy: Policy,
    /// 1 for the policy loaded at start, +1 per successful reload.
    pub generation: u64,
    /// When this snapshot was built.
    pub loaded_at: SystemTime,
    /// `/robots.txt`.
    pub robots: StaticFile,
    /// `/agents.txt`, `None` when disabled.
    pub agents: Option<StaticFile>,
    /// `/.well-known/tdmrep.json`, `None` without `[tdmrep]`.
    pub tdmrep: Option<StaticFile>,
    /// The RSL document, `None` without `[rsl]`.
    pub rsl: Option<StaticFile>,
    /// `Cache-Control` of both files.
    pub cache_control: String,
    /// The HTML rewriter plans of this policy, prepared on first use.
    pub html_plans: crate::html::RewritePlans,
    /// Some response body may be rewritten: a `[[robots_tag]]` entry
    /// rewrites HTML (`Policy::rewrites_html`) or `[markdown]` converts
    /// pages. The compression module is on for such a policy only.
    pub rewrites_bodies: bool,
    /// The Markdown converter's settings (`[markdown]` enabled).
    pub markdown: Option<Arc<crawlgate_html::markdown::MarkdownConfig>>,
    /// The cache of converted pages of this snapshot (`[markdown]`
    /// enabled, `cache_bytes` above 0).
    pub md_cache: Option<Arc<crate::markdown_cache::MarkdownCache>>,
    /// The origin pool.
    pub upstream: Arc<Upstream>,
    /// The payment dialects' clients (license verifier, x402 facilitator)
    /// of this policy's `[payment.rsl]` / `[payment.x402]`: built with the
    /// snapshot (a reload that cannot build them is refused), kept from the
    /// previous snapshot while those settings do not change.
    pub dialects: Arc<Dialects>,
    /// The verifier, limiter, shared store, fleet counters and ledger the
    /// stages act with: opened with the first snapshot, taken over by each
    /// reload's.
    pub handles: Handles,
}

/// Why a policy could not become a snapshot.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The file could not be read.
    #[error("cannot read policy file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The policy is invalid.
    #[error("{0}")]
    Invalid(Diagnostics),
    /// The upstream section cannot be used.
    #[error("{0}")]
    Upstream(#[from] UpstreamError),
    /// robots.txt or agents.txt cannot be served (a header value the
    /// policy rendered is not a valid field value).
    #[error("cannot serve {file}: {error}")]
    Serve {
        /// `robots.txt` or `agents.txt`.
        file: &'static str,
        /// What went wrong.
        error: String,
    },
    /// The policy charges for the first time and its ledger cannot be
    /// opened, or a payment dialect's client cannot be built.
    #[error("{0}; the running policy stays in force")]
    Payment(String),
    /// A handle of the first snapshot (the verifier, the ledger) cannot be
    /// built: the process does not start.
    #[error("{0}")]
    Start(String),
}

impl Snapshot {
    /// Compiles `source` into a snapshot (a reload). `previous` lends its
    /// upstream pool (and its health state) when `[upstream]` did not change,
    /// and its handles.
    pub fn build(
        source: &str,
        file_name: &str,
        generation: u64,
        previous: Option<&Snapshot>,
    ) -> Result<(Snapshot, Vec<String>), LoadError> {
        let loaded = crawlgate_policy::load(source, file_name).map_err(LoadError::Invalid)?;
        let warnings = loaded.warnings.iter().map(ToString::to_string).collect();
        Ok((Snapshot::new(loaded.policy, generation, previous)?, warnings))
    }

    /// A snapshot of a compiled policy: the served files rendered, the
    /// upstream pool built (or `previous`'s kept).
    pub fn new(policy: Policy, generation: u64, previous: Option<&Snapshot>) -> Result<Snapshot, LoadError> {
        let settings = policy.settings();
        let upstream = match previous {
            Some(prev) if prev.upstream.same_settings(&settings.upstream) => prev.upstream.clone(),
            _ => Upstream::new(&settings.upstream)?,
        };
        let dialects = match previous {
            Some(prev) if prev.dialects.same_settings(policy.payment()) => prev.dialects.clone(),
            _ => Arc::new(Dialects::open(policy.payment()).map_err(LoadError::Payment)?),
        };
        let handles = match previous {
            Some(prev) => prev.handles.carry(&policy).map_err(LoadError::Payment)?,
            None => Handles::open(&policy).map_err(|e| LoadError::Start(format!("{e:#}")))?,
        };
        let cache_control = format!("public, max-age={}", settings.cache_max_age.as_secs());
        let markdown = crate::markdown::config(&policy);
        let md_cache = markdown
            .as_ref()
            .and(policy.settings().markdown.as_ref())
            .and_then(|s| crate::markdown_cache::MarkdownCache::new(s.cache_bytes))
            .map(Arc::new);
        let rewrites_bodies = policy.rewrites_html() || markdown.is_some();
        let serve = |file: &'static str| move |e: Box<pingora::Error>| LoadError::Serve { file, error: e.to_string() };
        let robots = StaticFile::new(policy.robots_txt(), &cache_control).map_err(serve("robots.txt"))?;
        let agents =
            policy.agents_txt().map(|t| StaticFile::new(t, &cache_control)).transpose().map_err(serve("agents.txt"))?;
        let tdmrep = policy
            .tdmrep_json()
            .map(|t| StaticFile::typed(t, &cache_control, "application/json"))
            .transpose()
            .map_err(serve("tdmrep.json"))?;
        let rsl = policy
            .rsl_document()
            .map(|t| StaticFile::typed(t, &cache_control, "application/rsl+xml"))
            .transpose()
            .map_err(serve("rsl"))?;
        Ok(Snapshot {
            tdmrep,
            rsl,
            policy,
            generation,
            loaded_at: SystemTime::now(),
            robots,
            agents,
            cache_control,
            html_plans: crate::html::RewritePlans::default(),
            rewrites_bodies,
            markdown,
            md_cache,
            upstream,
            dialects,
            handles,
        })
    }
}

/// What `/status` reports about loading.
#[derive(Default, Clone)]
pub struct LoadStatus {
    /// The last failed load's error text, cleared by the next good load.
    pub last_error: Option<String>,
    /// When the last failure happened.
    pub last_error_at: Option<SystemTime>,
    /// Settings changed by a reload that only a restart applies.
    pub restart_required: Vec<String>,
}

/// State shared by the proxy, the admin endpoints and the reloader.
pub struct Shared {
    /// The current snapshot.
    pub snapshot: ArcSwap<Snapshot>,
    /// The policy file (`None` when the policy came from memory, as in the demo).
    pub config_path: Option<PathBuf>,
    /// Reload bookkeeping for `/status`.
    pub status: Mutex<LoadStatus>,
    /// The metrics registry.
    pub metrics: Metrics,
    /// The origin's robots.txt: the last good copy and `/status` details.
    pub origin: Mutex<OriginState>,
    /// The activity model behind the dashboard (kept across reloads).
    pub activity: crawlgate_telemetry::activity::Activity,
    /// Every proxy listener accepts connections (and shutdown has not
    /// begun): the first condition of `/readyz`.
    pub listeners_bound: AtomicBool,
}

impl Shared {
    /// Wraps the first snapshot.
    pub fn new(first: Snapshot, config_path: Option<PathBuf>, metrics: Metrics) -> Arc<Shared> {
        let activity = crawlgate_telemetry::activity::Activity::new(&first.policy, first.generation);
        Arc::new(Shared {
            snapshot: ArcSwap::from_pointee(first),
            config_path,
            status: Mutex::new(LoadStatus::default()),
            metrics,
            origin: Mutex::default(),
            activity,
            listeners_bound: AtomicBool::new(false),
        })
    }

    /// A copy of the load status (poisoning is survivable: the data is plain).
    pub fn load_status(&self) -> LoadStatus {
        match self.status.lock() {
            Ok(s) => s.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Mutates the load status.
    pub fn with_status(&self, f: impl FnOnce(&mut LoadStatus)) {
        match self.status.lock() {
            Ok(mut s) => f(&mut s),
            Err(poisoned) => f(&mut poisoned.into_inner()),
        }
    }
}

/// A good copy of the origin's robots.txt.
#[derive(Clone)]
pub struct OriginCopy {
    /// The body; empty when the origin has none.
    pub body: Arc<[u8]>,
    /// The status it came with (2xx, or the 4xx of an absent file).
    pub status: u16,
    /// When it was fetched.
    pub fetched_at: SystemTime,
    /// `scheme://host` of the public site (`origin_host`, or `upstream.sni`
    /// under TLS) that relative `Sitemap` values are resolved against.
    pub base: Option<String>,
}

/// What `/status` reports about the origin's robots.txt, and the last good
/// copy that every new policy is merged with.
#[derive(Default, Clone)]
pub struct OriginState {
    /// The last good copy.
    pub copy: Option<OriginCopy>,
    /// The last fetch's result and when it ended.
    pub last_fetch: Option<(OriginFetch, SystemTime)>,
    /// The last failed fetch's error, cleared by a good one.
    pub last_error: Option<String>,
    /// The conflicts of the merge in use, one line each.
    pub conflicts: Vec<String>,
    /// Groups and sitemaps the merge in use took from the origin.
    pub taken: (usize, usize),
    /// Why the last merge could not be used, if it could not.
    pub merge_error: Option<String>,
}
