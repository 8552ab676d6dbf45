//! Start and stop: every listener address is bound once before Pingora
//! starts (so a port held by another process ends `run` with an error
//! instead of Pingora's endless retry), `/readyz` waits until every
//! listener accepts connections, and a SIGTERM ends the process as soon
//! as no client connection is left instead of always sleeping through the
//! grace period. The shared store's connection is kept here too.

use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use crawlgate_store::Store;
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;

use crate::state::Shared;
use crawlgate_telemetry::fleet::Fleet;

/// Binds each `(key, address)` and releases it at once. Rust's
/// `TcpListener::bind` sets `SO_REUSEADDR` on Unix, as Pingora's listener
/// does, so an address this check passes is one Pingora can bind (and a
/// port left in `TIME_WAIT` by a previous run does not fail it).
pub fn check_bind<'a>(addrs: impl IntoIterator<Item = (&'static str, &'a str)>) -> anyhow::Result<()> {
    for (key, addr) in addrs {
        if let Err(e) = TcpListener::bind(addr) {
            anyhow::bail!("cannot listen on {addr} ({key}): {e}");
        }
    }
    Ok(())
}

/// The address to connect to for a listen address: the loopback address
/// of the same family for an unspecified one.
fn probe_addr(addr: &str) -> Option<SocketAddr> {
    let mut a: SocketAddr = addr.parse().ok()?;
    if a.ip().is_unspecified() {
        a.set_ip(if a.is_ipv4() { std::net::Ipv4Addr::LOCALHOST.into() } else { std::net::Ipv6Addr::LOCALHOST.into() });
    }
    Some(a)
}

/// Marks the process ready once every proxy listener accepts a
/// connection (Pingora binds them when its services start, after `run`
/// has returned control).
pub struct ListenerProbe {
    shared: Arc<Shared>,
    addrs: Vec<SocketAddr>,
}

impl ListenerProbe {
    /// Probes `addrs` (the plain and TLS listeners).
    pub fn new(shared: Arc<Shared>, addrs: &[String]) -> ListenerProbe {
        ListenerProbe { shared, addrs: addrs.iter().filter_map(|a| probe_addr(a)).collect() }
    }
}

#[async_trait]
impl BackgroundService for ListenerProbe {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        let mut pending = self.addrs.clone();
        while !pending.is_empty() {
            let mut left = Vec::new();
            for addr in pending {
                let bound = tokio::net::TcpStream::connect(addr).await.is_ok();
                if !bound {
                    left.push(addr);
                }
            }
            pending = left;
            if pending.is_empty() {
                break;
            }
            tokio::select! {
                _ = shutdown.changed() => return,
                _ = tokio::time::sleep(Duration::from_millis(20)) => {}
            }
        }
        self.shared.listeners_bound.store(true, Ordering::Release);
        tracing::info!("Listening on every address; ready");
    }
}

/// On SIGTERM, waits for the client connections still open (those with a
/// request in flight: idle keep-alive connections close at once on
/// shutdown) and exits when none is left, after the ledger committed the
/// byte counts still waiting. Pingora's grace period stays the upper
/// bound: it ends the process when it expires.
pub struct Drain {
    shared: Arc<Shared>,
}

impl Drain {
    /// Watches `shared`'s connection gauges.
    pub fn new(shared: Arc<Shared>) -> Drain {
        Drain { shared }
    }
}

#[async_trait]
impl BackgroundService for Drain {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        if shutdown.changed().await.is_err() {
            return;
        }
        self.shared.listeners_bound.store(false, Ordering::Release);
        let proxy = self.shared.metrics.connections("proxy").open;
        let admin = self.shared.metrics.connections("admin").open;
        loop {
            let open = proxy.get() + admin.get();
            if open <= 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if let Some(charging) = self.shared.snapshot.load().handles.charging.clone() {
            // Byte counts of charges that ended in the last second.
            if tokio::time::timeout(Duration::from_secs(2), charging.ledger.flush()).await.is_err() {
                tracing::warn!("Graceful shutdown: the ledger did not flush within 2 s");
            }
        }
        tracing::info!("Graceful shutdown: no client connection left; exiting");
        std::process::exit(0);
    }
}

/// Keeps the shared store connected (reconnecting with backoff) and
/// flushes the fleet counters, until shutdown. The connection's driver
/// task runs on this service's runtime, which lives as long as the server.
pub struct StoreService {
    store: Store,
    fleet: Option<Arc<Fleet>>,
    shared: Arc<Shared>,
}

impl StoreService {
    /// The service over `store`, flushing `fleet` from `shared`'s activity.
    pub fn new(store: Store, fleet: Option<Arc<Fleet>>, shared: Arc<Shared>) -> StoreService {
        StoreService { store, fleet, shared }
    }
}

#[async_trait]
impl BackgroundService for StoreService {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        let store = &self.store;
        let fleet = async {
            match &self.fleet {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_in_use_is_an_error_naming_the_key() {
        let held = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
        let addr = held.local_addr().unwrap_or_else(|e| panic!("{e}")).to_string();
        let err = check_bind([("server.listen", addr.as_str())]).err().map(|e| e.to_string()).unwrap_or_default();
        assert_eq!(err, format!("cannot listen on {addr} (server.listen): Address already in use (os error 98)"));
        drop(held);
        assert!(check_bind([("server.listen", addr.as_str())]).is_ok());
    }

    #[test]
    fn unspecified_addresses_are_probed_on_loopback() {
        assert_eq!(probe_addr("0.0.0.0:80"), Some(SocketAddr::from(([127, 0, 0, 1], 80))));
        assert_eq!(probe_addr("[::]:80"), "[::1]:80".parse().ok());
        assert_eq!(probe_addr("10.1.2.3:80"), Some(SocketAddr::from(([10, 1, 2, 3], 80))));
    }
}
