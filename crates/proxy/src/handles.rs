//! The handles the request path's stages use that outlive one policy: the
//! identity verifier, the rate limiter (its buckets), the shared store and
//! the fleet counters over it, the ledger. Each snapshot owns them: the
//! first is built with them, and a reload's snapshot takes its
//! predecessor's (so buckets, caches and connections survive a reload) or,
//! for a ledger the previous policy did not need, opens its own; a reload
//! that cannot open it is refused. The settings that built them apply only
//! after a restart (`crate::reload` reports a change of them).

use std::sync::Arc;

use crawlgate_identity::{Verifier, VerifierConfig};
use crawlgate_limits::Limiter;
use crawlgate_payment::charging::Charging;
use crawlgate_policy::Policy;
use crawlgate_store::Store;

use crate::shared_store::{StoreGcra, StoreReplay};
use crawlgate_telemetry::activity;
use crawlgate_telemetry::fleet::{self, Fleet};

/// What a snapshot's stages act with, beside the policy.
#[derive(Clone)]
pub struct Handles {
    /// The identity verifier; `None` without `[verification]`.
    pub verifier: Option<Arc<Verifier>>,
    /// The rate limiter (over the shared store when there is one).
    pub limiter: Arc<Limiter>,
    /// The shared store of `[limits] store`.
    pub store: Option<Store>,
    /// This instance's fleet counters, with the shared store.
    pub fleet: Option<Arc<Fleet>>,
    /// The ledger, when a policy so far charged.
    pub charging: Option<Arc<Charging>>,
}

impl Handles {
    /// The handles of the first policy.
    pub fn open(policy: &Policy) -> anyhow::Result<Handles> {
        let settings = policy.limit_settings();
        let mut limiter = Limiter::new(settings.max_keys);
        let store = crate::shared_store::open(settings);
        let mut fleet = None;
        if let Some(store) = &store {
            // Every call of the store is bounded by its own `[limits] timeout`.
            limiter = limiter.with_shared(Arc::new(StoreGcra(store.clone())), None, &settings.key_prefix);
            let start_minute = activity::unix_now() / 60;
            fleet = Some(Arc::new(Fleet::new(store.clone(), fleet::instance_name(), start_minute)));
        }
        // Verified signatures are remembered in the shared store, so a
        // signature replayed to another instance is refused too.
        let verifier = verifier(policy)?.map(|v| {
            Arc::new(match &store {
                Some(store) => {
                    let local = policy.settings().verification.signatures.replay_cache_size;
                    v.with_replay_store(Arc::new(StoreReplay::new(store.clone(), local)))
                }
                None => v,
            })
        });
        let charging = Charging::open(policy.payment()).map_err(anyhow::Error::msg)?.map(Arc::new);
        Ok(Handles { verifier, limiter: Arc::new(limiter), store, fleet, charging })
    }

    /// The handles of a reload's `policy`: `self`'s, plus the ledger when
    /// `policy` is the first to charge. The error names the key.
    pub fn carry(&self, policy: &Policy) -> Result<Handles, String> {
        let mut next = self.clone();
        if next.charging.is_none() {
            next.charging = Charging::open(policy.payment())?.map(Arc::new);
        }
        Ok(next)
    }

    /// Whether these handles opened a ledger `previous` did not have.
    pub fn opened_ledger(&self, previous: &Handles) -> bool {
        self.charging.is_some() && previous.charging.is_none()
    }
}

/// The verifier for `policy`, `None` without a `[verification]` table.
fn verifier(policy: &Policy) -> anyhow::Result<Option<Verifier>> {
    if !policy.settings().verification.enabled {
        return Ok(None);
    }
    Verifier::new(VerifierConfig::for_policy(policy)).map(Some).map_err(|e| anyhow::anyhow!("verification: {e}"))
}
