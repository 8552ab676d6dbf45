//! The shared store (`[limits] store = "redis://..."`) in the proxy: the
//! [`crawlgate_limits::SharedGcra`] and
//! [`crawlgate_identity::replay::ReplayStore`] implementations over
//! [`crawlgate_store::Store`] (`crate::lifecycle::StoreService` keeps the
//! connection and flushes the fleet counters). The store itself (client,
//! budget, reconnection, script) is the `crawlgate-store` crate's; what
//! happens when it fails (the in-process store decides) is the limiter's.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use async_trait::async_trait;
use crawlgate_identity::replay::{Replay, ReplayCache, ReplayStore};
use crawlgate_limits::{SharedError, SharedGcra, Verdict};
use crawlgate_policy::limits::{LimitSettings, StoreSetting};
use crawlgate_store::{Gcra, Store, StoreConfig, StoreError};
use sha2::{Digest, Sha256};

/// The limiter's shared store.
pub struct StoreGcra(pub Store);

#[async_trait]
impl SharedGcra for StoreGcra {
    async fn step(&self, key: &str, emission: Duration, burst: u32) -> Result<Verdict, SharedError> {
        match self.0.gcra(key, Gcra { emission, burst }).await {
            Ok(a) if a.allowed => Ok(Verdict::Allow),
            Ok(a) => Ok(Verdict::Deny { retry_after: a.retry_after }),
            Err(StoreError::Down { .. }) => Err(SharedError::Down),
            Err(StoreError::Timeout { .. }) => Err(SharedError::Timeout),
            Err(e) => Err(SharedError::Failed(e.to_string())),
        }
    }

    fn is_up(&self) -> bool {
        self.0.is_up()
    }
}

/// The store `settings` name, not yet connected; `None` for the
/// in-process store. A URL the client cannot use (the policy checks the
/// scheme, the client the rest) is logged and leaves limits local.
pub fn open(settings: &LimitSettings) -> Option<Store> {
    let StoreSetting::Redis(url) = &settings.store else { return None };
    let config = StoreConfig { url: url.clone(), key_prefix: settings.key_prefix.clone(), timeout: settings.timeout };
    match Store::new(config) {
        Ok(store) => Some(store),
        Err(e) => {
            tracing::error!(error = %e, "Shared store not used; rate limits are per instance");
            None
        }
    }
}

/// The Web Bot Auth replay cache over the shared store, so that a signature
/// replayed to another instance of the fleet is refused too
/// (draft-meunier-web-bot-auth-architecture: "a replay gets 429"). When the
/// store cannot answer (down, over its budget) the signature is recorded in
/// this instance's own cache instead, the limits' fail-to-local rule: it is
/// never taken as fresh without being recorded somewhere. The failed call
/// counts in `crawlgate_limits_store_errors_total` (the store counts it).
#[derive(Debug)]
pub struct StoreReplay {
    store: Store,
    local: ReplayCache,
}

impl StoreReplay {
    /// The shared replay cache over `store`, falling back to a local cache
    /// of `local_capacity` signatures.
    pub fn new(store: Store, local_capacity: usize) -> StoreReplay {
        StoreReplay { store, local: ReplayCache::new(local_capacity) }
    }
}

impl ReplayStore for StoreReplay {
    fn seen_once<'a>(
        &'a self,
        keyid: &'a str,
        signature: &'a [u8],
        forget_after: i64,
        now: i64,
    ) -> Pin<Box<dyn Future<Output = Replay> + Send + 'a>> {
        Box::pin(async move {
            let key = replay_key(keyid, signature);
            match self.store.seen_once(&key, replay_ttl(forget_after, now)).await {
                Ok(true) => Replay::Replayed,
                Ok(false) => Replay::Fresh,
                Err(e) => {
                    tracing::debug!(error = %e, "Replay cache: shared store failed; recorded locally");
                    self.local.check(keyid, signature, forget_after, now)
                }
            }
        })
    }
}

/// The longest keyid or signature kept as is in a replay key; a longer one
/// is replaced by its SHA-256, so a key never exceeds about 600 bytes.
const REPLAY_PART_MAX: usize = 256;

/// The store key of one verified signature: the keyid, `:`, the signature
/// bytes in hex (each part its SHA-256 when longer than
/// [`REPLAY_PART_MAX`] bytes). Hex has no `:`, so the last `:` splits it.
fn replay_key(keyid: &str, signature: &[u8]) -> String {
    let keyid = if keyid.len() > REPLAY_PART_MAX {
        format!("sha256-{}", hex::encode(Sha256::digest(keyid.as_bytes())))
    } else {
        keyid.to_string()
    };
    let signature = if signature.len() > REPLAY_PART_MAX {
        format!("sha256-{}", hex::encode(Sha256::digest(signature)))
    } else {
        hex::encode(signature)
    };
    format!("{keyid}:{signature}")
}

/// How long the store keeps a signature: until `forget_after`, at least a
/// second.
fn replay_ttl(forget_after: i64, now: i64) -> Duration {
    Duration::from_secs(u64::try_from(forget_after.saturating_sub(now)).unwrap_or(0).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_keys_are_keyid_and_hex_signature_bounded_in_length() {
        assert_eq!(replay_key("kid-1", &[0x00, 0xab, 0xff]), "kid-1:00abff");
        let long_sig = vec![7u8; REPLAY_PART_MAX + 1];
        let key = replay_key("k", &long_sig);
        assert_eq!(key, format!("k:sha256-{}", hex::encode(Sha256::digest(&long_sig))));
        let long_id = "x".repeat(REPLAY_PART_MAX + 1);
        let key = replay_key(&long_id, &[1]);
        assert_eq!(key, format!("sha256-{}:01", hex::encode(Sha256::digest(long_id.as_bytes()))));
        // At the bound, kept as is.
        let id = "y".repeat(REPLAY_PART_MAX);
        assert_eq!(replay_key(&id, &[2]), format!("{id}:02"));
    }

    #[test]
    fn replay_ttl_runs_to_forget_after_and_is_at_least_a_second() {
        assert_eq!(replay_ttl(160, 100), Duration::from_secs(60));
        assert_eq!(replay_ttl(100, 100), Duration::from_secs(1));
        assert_eq!(replay_ttl(50, 100), Duration::from_secs(1));
        assert_eq!(replay_ttl(i64::MAX, i64::MIN), Duration::from_secs(u64::try_from(i64::MAX).unwrap_or(0)));
    }
}
