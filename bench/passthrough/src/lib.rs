//! The baseline for `scripts/load-test`: the smallest Pingora reverse proxy
//! that forwards every request to one upstream, with the same server
//! settings crawlgate uses (2 threads, HTTP/1.1 keep-alive, no compression).
//! Whatever crawlgate costs beyond this is the price of the policy.
//!
//! `run` serves `LISTEN UPSTREAM` from the command line (e.g. `passthrough 127.0.0.1:18083 127.0.0.1:18081`).
//!
//! `passthrough-tuned` (src/tuned.rs) is the same proxy with crawlgate's
//! two process-level settings, mimalloc and a 32 KiB client write buffer,
//! so that the load test can also show what the policy costs on equal
//! footing.

use std::net::SocketAddr;

use async_trait::async_trait;
use pingora::listeners::{L4BufferSettings, ListenerConfig};
use pingora::proxy::{http_proxy_service, ProxyHttp, Session};
use pingora::server::configuration::ServerConf;
use pingora::server::Server;
use pingora::upstreams::peer::HttpPeer;
use pingora::Result;

struct Passthrough {
    upstream: SocketAddr,
}

#[async_trait]
impl ProxyHttp for Passthrough {
    type CTX = ();

    fn new_ctx(&self) {}

    /// The one upstream, plain HTTP.
    async fn upstream_peer(&self, _session: &mut Session, _ctx: &mut ()) -> Result<Box<HttpPeer>> {
        Ok(Box::new(HttpPeer::new(self.upstream, false, String::new())))
    }
}

/// Runs the pass-through; `write_buffer` sets the client-side L4 write
/// buffer (Pingora's default when `None`).
pub fn run(write_buffer: Option<usize>) {
    let args: Vec<String> = std::env::args().collect();
    let (Some(listen), Some(upstream)) = (args.get(1), args.get(2).and_then(|u| u.parse::<SocketAddr>().ok())) else {
        eprintln!("usage: passthrough LISTEN_ADDR UPSTREAM_IP:PORT");
        std::process::exit(2);
    };
    let conf = ServerConf {
        threads: 2,
        grace_period_seconds: Some(0),
        graceful_shutdown_timeout_seconds: Some(1),
        ..ServerConf::default()
    };
    let mut server = Server::new_with_opt_and_conf(None, conf);
    server.bootstrap();
    let mut proxy = http_proxy_service(&server.configuration, Passthrough { upstream });
    match write_buffer {
        None => proxy.add_tcp(listen),
        Some(n) => {
            proxy.add_listener(ListenerConfig::tcp(listen.as_str()).l4_buffer(L4BufferSettings::default().write(n)))
        }
    }
    server.add_service(proxy);
    server.run_forever()
}
