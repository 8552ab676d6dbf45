//! The origin servers: name resolution at policy load, round-robin
//! selection with TCP health checks, and the `HttpPeer` for a request.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use crawlgate_policy::UpstreamSettings;
use pingora::upstreams::peer::HttpPeer;
use pingora_load_balancing::health_check::{HealthCheck, TcpHealthCheck};
use pingora_load_balancing::selection::RoundRobin;
use pingora_load_balancing::{Backend, LoadBalancer};

/// Why the upstream section cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UpstreamError {
    /// A server name did not resolve.
    #[error("upstream server `{server}` does not resolve: {source}")]
    Resolve {
        /// The server as written in the policy.
        server: String,
        /// The resolver's error.
        source: std::io::Error,
    },
    /// A server name resolved to no address.
    #[error("upstream server `{0}` resolves to no address")]
    NoAddress(String),
}

/// The origin pool of one policy snapshot. Reloads that leave `[upstream]`
/// unchanged keep the same `Arc<Upstream>`, and with it the health state.
pub struct Upstream {
    lb: LoadBalancer<RoundRobin>,
    /// `(server as written, resolved address)`, in policy order.
    servers: Vec<(String, SocketAddr)>,
    /// Each server's health, as Pingora's checks last flipped it (healthy
    /// until a check says otherwise, like Pingora's own state). Read on
    /// every request without Pingora's selection iterator, which allocates.
    healthy: Arc<[AtomicBool]>,
    /// The round-robin position.
    next: AtomicUsize,
    settings: UpstreamSettings,
    key: String,
}

impl Upstream {
    /// Resolves every server (blocking DNS: call off the request path) and
    /// builds the pool. Pingora's `HttpPeer::new` panics on a failed lookup,
    /// so names are resolved here, once, and peers use addresses.
    pub fn new(settings: &UpstreamSettings) -> Result<Arc<Upstream>, UpstreamError> {
        let mut servers = Vec::with_capacity(settings.servers.len());
        for server in &settings.servers {
            let addr = server
                .to_socket_addrs()
                .map_err(|source| UpstreamError::Resolve { server: server.clone(), source })?
                .next()
                .ok_or_else(|| UpstreamError::NoAddress(server.clone()))?;
            servers.push((server.clone(), addr));
        }
        let addrs: Vec<SocketAddr> = servers.iter().map(|(_, a)| *a).collect();
        let mut lb = LoadBalancer::<RoundRobin>::try_from_iter(addrs.iter().copied())
            .map_err(|source| UpstreamError::Resolve { server: settings.servers.join(","), source })?;
        let mut hc = TcpHealthCheck::new();
        hc.peer_template.options.connection_timeout = Some(settings.connect_timeout);
        // Two failures before a server is taken out, so one dropped SYN does
        // not flap the pool.
        hc.consecutive_failure = 2;
        let healthy: Arc<[AtomicBool]> = servers.iter().map(|_| AtomicBool::new(true)).collect();
        lb.set_health_check(Box::new(TcpCheck { check: hc, addrs: addrs.clone(), healthy: healthy.clone() }));
        lb.parallel_health_check = true;
        Ok(Arc::new(Upstream {
            lb,
            servers,
            healthy,
            next: AtomicUsize::new(0),
            settings: settings.clone(),
            key: settings_key(settings),
        }))
    }

    /// Whether `settings` would build the same pool (then the pool is kept
    /// across a reload).
    pub fn same_settings(&self, settings: &UpstreamSettings) -> bool {
        self.key == settings_key(settings)
    }

    /// The peer for the next request: the next healthy server in
    /// round-robin order, `None` when every server is down.
    pub fn peer(&self) -> Option<(HttpPeer, SocketAddr)> {
        let n = self.servers.len();
        let start = if n > 1 { self.next.fetch_add(1, Ordering::Relaxed) } else { 0 };
        let i = (0..n).map(|k| (start + k) % n).find(|&i| self.healthy[i].load(Ordering::Relaxed))?;
        let addr = self.servers[i].1;
        let s = &self.settings;
        let mut peer = HttpPeer::new(addr, s.tls, s.sni.clone());
        peer.options.connection_timeout = Some(s.connect_timeout);
        peer.options.read_timeout = Some(s.read_timeout);
        peer.options.verify_cert = s.verify_cert;
        peer.options.verify_hostname = s.verify_cert;
        Some((peer, addr))
    }

    /// Runs one round of TCP health checks on every server.
    pub async fn check_health(&self) {
        self.lb.backends().run_health_check(true).await;
    }

    /// `(server as written, address, healthy)` for every server.
    pub fn health(&self) -> Vec<(String, SocketAddr, bool)> {
        self.servers
            .iter()
            .zip(self.healthy.iter())
            .map(|((name, addr), healthy)| (name.clone(), *addr, healthy.load(Ordering::Relaxed)))
            .collect()
    }

    /// Whether at least one server is healthy.
    pub fn any_healthy(&self) -> bool {
        self.health().iter().any(|(_, _, h)| *h)
    }
}

/// Pingora's TCP health check, naming a server by its address in the
/// "becomes healthy / unhealthy" log lines (Pingora's default names it with
/// the `Debug` dump of its `Backend`).
/// It also mirrors each flip into [`Upstream`]'s own health flags.
struct TcpCheck {
    check: Box<TcpHealthCheck>,
    /// The servers' addresses, in the flags' order.
    addrs: Vec<SocketAddr>,
    healthy: Arc<[AtomicBool]>,
}

#[async_trait::async_trait]
impl HealthCheck for TcpCheck {
    async fn check(&self, target: &Backend) -> pingora::Result<()> {
        self.check.check(target).await
    }

    async fn health_status_change(&self, target: &Backend, healthy: bool) {
        // Two names may resolve to one address: both flags follow it.
        for (addr, flag) in self.addrs.iter().zip(self.healthy.iter()) {
            if target.addr.as_inet() == Some(addr) {
                flag.store(healthy, Ordering::Relaxed);
            }
        }
        self.check.health_status_change(target, healthy).await;
    }

    fn backend_summary(&self, target: &Backend) -> String {
        format!("Upstream server {}", target.addr)
    }

    fn health_threshold(&self, success: bool) -> usize {
        self.check.health_threshold(success)
    }
}

fn settings_key(s: &UpstreamSettings) -> String {
    format!(
        "{:?}|{}|{}|{}|{:?}|{:?}|{:?}",
        s.servers, s.tls, s.sni, s.verify_cert, s.connect_timeout, s.read_timeout, s.health_check_interval
    )
}
