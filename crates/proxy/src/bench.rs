//! Hooks for the criterion benchmarks in `benches/` (not an API): the
//! steps of a reload or of a new copy of the origin's robots.txt, as
//! `reload` and `origin` run them, and the HTML path of one response, as
//! the response hooks run it, on the real types.

use crawlgate_policy::Policy;

use crate::state::Snapshot;
use crawlgate_telemetry::metrics::Metrics;

/// A running policy and its metrics registry, reloaded on demand.
pub struct Reload {
    metrics: Metrics,
    current: Snapshot,
}

impl Reload {
    /// `policy` loaded as at start (generation 1).
    pub fn new(policy: Policy) -> Result<Reload, String> {
        let metrics = Metrics::with_verification(false).map_err(|e| e.to_string())?;
        let current = Snapshot::new(policy, 1, None).map_err(|e| e.to_string())?;
        metrics.policy_loaded(current.generation, current.loaded_at, &current.policy, None);
        Ok(Reload { metrics, current })
    }

    /// One reload: `policy` merged with the origin's `origin` robots.txt,
    /// compiled into a snapshot (served files rendered) and recorded by
    /// the metrics registry (`policy_loaded`, the previous policy's series
    /// dropped). Returns the number of origin groups merged.
    pub fn reload(&mut self, policy: &Policy, origin: &[u8]) -> Result<usize, String> {
        let merged = policy.merge_origin(origin).map_err(|e| e.to_string())?;
        let next = Snapshot::new(merged.policy, self.current.generation + 1, Some(&self.current))
            .map_err(|e| e.to_string())?;
        self.metrics.policy_loaded(next.generation, next.loaded_at, &next.policy, Some(&self.current.policy));
        self.current = next;
        Ok(merged.origin_groups)
    }
}

/// The HTML path of responses as the proxy runs it for a policy's HTML
/// plan: the snapshot's prepared rewrite plans, `crate::html::start` on
/// the origin's response header (checks, header edits, the rewriter) and
/// the body filter on the body.
pub struct HtmlResponse {
    metrics: Metrics,
    plans: crate::html::RewritePlans,
    plan: std::sync::Arc<crawlgate_policy::HtmlPlan>,
}

impl HtmlResponse {
    /// For `plan`.
    pub fn new(plan: crawlgate_policy::HtmlPlan) -> Result<HtmlResponse, String> {
        let metrics = Metrics::with_verification(false).map_err(|e| e.to_string())?;
        Ok(HtmlResponse { metrics, plans: crate::html::RewritePlans::default(), plan: std::sync::Arc::new(plan) })
    }

    /// One response: `header` (copied, as Pingora hands the hook its own)
    /// and `body` in one chunk that ends the stream. Returns the bytes
    /// sent, or 0 when the HTML path does not take the response.
    pub fn run(&self, header: &pingora::http::ResponseHeader, body: &bytes::Bytes) -> usize {
        let mut resp = header.clone();
        let Ok(Some(mut stream)) = crate::html::start(false, &mut resp, &self.plan, &self.plans, &self.metrics, "/")
        else {
            return 0;
        };
        let mut chunk = Some(body.clone());
        if stream.filter(&mut chunk, true, &self.metrics, "/", true).is_err() {
            return 0;
        }
        chunk.map_or(0, |c| c.len()) + resp.headers.len()
    }
}
