//! The rows made on first sight: a catalog crawler the policy does not
//! name, and the spoofed or unverified claims to a token sent to `*`.

use std::sync::Arc;

use super::{Activity, AgentStats};

impl Activity {
    /// The slot of a catalog crawler the policy does not name, made on its
    /// first request (at most one per catalog entry).
    pub(super) fn catalog_slot(&self, name: &'static str) -> Arc<AgentStats> {
        if let Some(s) = self.named.read().ok().and_then(|n| n.get(name).cloned()) {
            return s;
        }
        let mut named = match self.named.write() {
            Ok(n) => n,
            Err(poisoned) => poisoned.into_inner(),
        };
        named.entry(Arc::from(name)).or_insert_with(|| Arc::new(AgentStats::new(name))).clone()
    }

    /// The row of spoofed or unverified claims to `token` that its group
    /// sent to `*` (at most one per policy token).
    pub(super) fn claimed_slot(&self, token: &str) -> Arc<AgentStats> {
        let name = format!("{token} (claimed)");
        if let Some(s) = self.named.read().ok().and_then(|n| n.get(name.as_str()).cloned()) {
            return s;
        }
        let mut named = match self.named.write() {
            Ok(n) => n,
            Err(poisoned) => poisoned.into_inner(),
        };
        named.entry(Arc::from(name.as_str())).or_insert_with(|| Arc::new(AgentStats::new(&name))).clone()
    }
}
