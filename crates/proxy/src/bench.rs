//! Hooks for the criterion benchmarks in `benches/` (not an API): the
//! steps of a reload or of a new copy of the origin's robots.txt, as
//! `reload` and `origin` run them, on the real types.

use crawlgate_policy::Policy;

use crate::metrics::Metrics;
use crate::state::Snapshot;

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
