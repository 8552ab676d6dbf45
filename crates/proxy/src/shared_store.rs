//! The shared store (`[limits] store = "redis://..."`) in the proxy: the
//! [`crawlgate_limits::SharedGcra`] implementation over
//! [`crawlgate_store::Store`], and the background service that keeps the
//! connection and flushes the fleet counters. The store itself (client,
//! budget, reconnection, script) is the `crawlgate-store` crate's; what
//! happens when it fails (the in-process store decides) is the limiter's.

use std::sync::Arc;

use async_trait::async_trait;
use crawlgate_limits::{SharedError, SharedGcra, Verdict};
use crawlgate_policy::limits::{LimitSettings, StoreSetting};
use crawlgate_store::{Gcra, Store, StoreConfig, StoreError};
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;

use crate::state::Shared;

/// The limiter's shared store.
pub struct StoreGcra(pub Store);

#[async_trait]
impl SharedGcra for StoreGcra {
    async fn step(&self, key: &str, emission: std::time::Duration, burst: u32) -> Result<Verdict, SharedError> {
        match self.0.gcra(key, Gcra { emission, burst }).await {
            Ok(a) if a.allowed => Ok(Verdict::Allow),
            Ok(a) => Ok(Verdict::Deny { retry_after: a.retry_after }),
            Err(StoreError::Down { .. }) => Err(SharedError::Down),
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

/// Keeps the shared store connected (reconnecting with backoff) and
/// flushes the fleet counters, until shutdown. The connection's driver
/// task runs on this service's runtime, which lives as long as the server.
pub struct StoreService {
    shared: Arc<Shared>,
}

impl StoreService {
    /// The service over `shared`'s store.
    pub fn new(shared: Arc<Shared>) -> StoreService {
        StoreService { shared }
    }
}

#[async_trait]
impl BackgroundService for StoreService {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        let Some(store) = self.shared.store.get() else { return };
        let fleet = async {
            match self.shared.fleet.get() {
                Some(fleet) => fleet.run(&self.shared.activity).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = store.maintain() => {}
            () = fleet => {}
            _ = shutdown.changed() => {}
        }
    }
}
