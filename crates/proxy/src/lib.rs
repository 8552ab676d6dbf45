//! crawlgate-proxy: the Pingora wiring of crawlgate.
//!
//! Owns the proxy service (thin hooks over `crawlgate-policy` and
//! `crawlgate-html`), the snapshot behind one `ArcSwap`, the upstream pool,
//! hot reload, and the wiring of the admin listener (`crawlgate-admin`,
//! served behind the proxy's connection limits) and of the telemetry
//! (`crawlgate-telemetry`: metrics, events, activity, fleet), which it
//! feeds. Policy decisions are not made here: every question goes to the
//! policy crate.

mod admin_view;
#[doc(hidden)]
pub mod bench;
mod conn;
mod handles;
mod headers;
mod html;
mod lifecycle;
mod limits;
mod markdown;
mod markdown_cache;
mod origin;
mod paid;
mod payment;
mod reload;
mod respond;
mod service;
mod shared_store;
mod state;
mod tls;
mod upstream;
mod verify;

use std::path::PathBuf;
use std::sync::Arc;

use crawlgate_admin::{Admin, AdminAuth};
use crawlgate_policy::{Loaded, ADMIN_CONNECTIONS};

use anyhow::Context;
use pingora::apps::HttpServerOptions;
use pingora::listeners::tls::TlsSettings;
use pingora::listeners::{L4BufferSettings, ListenerConfig};
use pingora::proxy::HttpProxy;
use pingora::server::configuration::ServerConf;
use pingora::server::Server;
use pingora::services::background::background_service;
use pingora::services::listening::Service;

pub use crawlgate_telemetry::metrics::ReloadOutcome;
pub use crawlgate_watch::early_sighup;
pub use state::LoadError;

use crate::admin_view::AdminView;
use crate::conn::{ConnApp, Limits};
use crate::lifecycle::{Drain, ListenerProbe};
use crate::reload::{HealthChecker, Reloader, Watcher};
use crate::service::Gate;
use crate::state::{Shared, Snapshot};
use crawlgate_telemetry::metrics::Metrics;

/// Runs the proxy on a policy the caller compiled (so the file is read and
/// compiled once): `file_name` names it in logs and errors, `watch` is the
/// file to hot-reload, if any (the demo can run from an embedded policy).
/// Returns only on a startup error (an unusable listener or upstream);
/// otherwise the process exits when Pingora shuts down.
pub fn run(loaded: Loaded, file_name: &str, watch: Option<PathBuf>) -> anyhow::Result<()> {
    crawlgate_telemetry::logging::init();
    // Before anything slow: a reload signal sent right after start must not
    // terminate the process.
    let early_hup = watch.as_ref().map(|_| crawlgate_watch::early_sighup());
    let metrics =
        Metrics::with_verification(loaded.policy.settings().verification.enabled).context("cannot register metrics")?;
    metrics.payment().error_codes(&paid::DIALECT_ERRORS);
    for w in &loaded.warnings {
        tracing::warn!(target: "crawlgate::policy", "{w}");
    }
    if loaded.acknowledged > 0 {
        tracing::info!(target: "crawlgate::policy", acknowledged = loaded.acknowledged, "Policy warnings acknowledged by allow_warnings");
    }
    let snap = Snapshot::new(loaded.policy, 1, None).map_err(|e| anyhow::anyhow!("{e}"))?;
    metrics.policy_loaded(snap.generation, snap.loaded_at, &snap.policy, None);
    let server_settings = &snap.policy.settings().server;
    let listen = server_settings.listen.clone();
    let tls_listen = server_settings.tls_listen.clone();
    let tls_files = (server_settings.tls_cert.clone(), server_settings.tls_key.clone());
    let admin = server_settings.admin.clone();
    let proxy_protocol = server_settings.proxy_protocol;
    let admin_auth = match &server_settings.admin_auth_file {
        Some(f) => Some(AdminAuth::from_file(std::path::Path::new(f))?),
        None => None,
    };
    let h2c = server_settings.h2c;
    let (admin_header_timeout, admin_idle_timeout, admin_per_client) = (
        server_settings.admin_header_timeout,
        server_settings.admin_idle_timeout,
        server_settings.admin_connections_per_client,
    );
    let limits = Limits {
        idle: server_settings.client_idle_timeout,
        header: server_settings.client_header_timeout,
        body: server_settings.client_body_timeout,
        max_connections: server_settings.max_connections,
    };
    raise_nofile_limit(limits.max_connections);
    let conf = ServerConf {
        threads: server_settings.threads,
        grace_period_seconds: Some(server_settings.grace_period.as_secs()),
        graceful_shutdown_timeout_seconds: Some(server_settings.grace_period.as_secs().clamp(1, 5)),
        ..ServerConf::default()
    };
    tracing::info!(
        policy = file_name,
        sha256 = snap.policy.source_sha256(),
        listen = %listen.join(", "),
        admin = admin.as_deref().unwrap_or("off"),
        upstreams = %snap.policy.settings().upstream.servers.join(", "),
        "Starting crawlgate"
    );
    if !tls_listen.is_empty() {
        tracing::info!(tls_listen = %tls_listen.join(", "), "TLS listeners");
    }
    // Before Pingora starts: it retries a port in use forever.
    lifecycle::check_bind(
        listen
            .iter()
            .map(|a| ("server.listen", a.as_str()))
            .chain(tls_listen.iter().map(|a| ("server.tls_listen", a.as_str())))
            .chain(admin.iter().map(|a| ("server.admin", a.as_str()))),
    )?;
    let mut server = Server::new_with_opt_and_conf(None, conf);
    server.bootstrap();
    if snap.handles.charging.is_some() {
        metrics.payment().init(&snap.policy);
    }
    let handles = snap.handles.clone();
    let shared = Shared::new(snap, watch.clone(), metrics);
    let certs = if tls_listen.is_empty() {
        None
    } else {
        let (Some(cert), Some(key)) = tls_files else {
            anyhow::bail!("server.tls_listen needs server.tls_cert and server.tls_key");
        };
        let store = crawlgate_certs::CertStore::open(&cert, &key).map_err(|e| anyhow::anyhow!("{e}"))?;
        shared.metrics.tls_not_after(store.not_after_unix());
        Some(store)
    };

    let mut options = HttpServerOptions::default();
    options.h2c = h2c;
    options.h2_idle_timeout = Some(limits.idle);
    // What `ProxyServiceBuilder::build` does, keeping the app to wrap it.
    let mut app = HttpProxy::new(Gate::new(shared.clone()), server.configuration.clone());
    app.server_options = Some(options);
    app.handle_init_modules();
    let mut app = ConnApp::new(app, limits, shared.metrics.connections("proxy"));
    if proxy_protocol {
        // Trust follows the running policy, so a reload can change it.
        let s = shared.clone();
        app = app.with_proxy_protocol(Arc::new(move |peer| {
            s.snapshot.load().policy.settings().server.client_address.is_trusted_proxy(peer)
        }));
    }
    let mut proxy = Service::new("crawlgate proxy".to_string(), app);
    for addr in &listen {
        proxy.add_listener(ListenerConfig::tcp(addr.as_str()).l4_buffer(l4_buffer(false)));
    }
    if let Some(store) = &certs {
        // The certificate is set on each handshake from the store, so a
        // reload applies to new connections without a restart.
        for addr in &tls_listen {
            let mut tls = TlsSettings::with_callbacks(Box::new(crate::tls::Callbacks(store.clone())))
                .map_err(|e| anyhow::anyhow!("cannot set up TLS on {addr}: {e}"))?;
            tls.enable_h2();
            proxy.add_listener(ListenerConfig::tcp(addr.as_str()).tls(tls).l4_buffer(l4_buffer(true)));
        }
    }
    server.add_service(proxy);
    if let Some(addr) = admin {
        let admin_limits = Limits {
            max_connections: ADMIN_CONNECTIONS,
            header: admin_header_timeout,
            idle: admin_idle_timeout,
            ..limits
        };
        let app = ConnApp::new(
            Admin::new(Arc::new(AdminView::new(shared.clone(), certs.clone())), admin_auth),
            admin_limits,
            shared.metrics.connections("admin"),
        )
        .with_probe_slots(ADMIN_PROBE_SLOTS, crawlgate_admin::PROBES)
        .with_per_client_limit(admin_per_client);
        let mut svc = Service::new("crawlgate admin".to_string(), app);
        svc.add_tcp(&addr);
        server.add_service(svc);
    }
    if let (Some(path), Some(early_hup)) = (watch, early_hup) {
        let watcher = Watcher::new(Reloader::new(shared.clone(), path), early_hup);
        server.add_service(background_service("policy watcher", watcher));
    }
    if let Some(store) = certs {
        let watcher = crate::tls::CertWatcher::new(store, shared.clone());
        server.add_service(background_service("TLS certificate watcher", watcher));
    }
    server.add_service(background_service("origin robots.txt", crate::origin::OriginFetcher::new(shared.clone())));
    if let Some(verifier) = handles.verifier {
        server.add_service(background_service("verification lists", verify::Refresher::new(verifier, shared.clone())));
    }
    if let Some(store) = handles.store {
        let service = crate::lifecycle::StoreService::new(store, handles.fleet, shared.clone());
        server.add_service(background_service("shared store", service));
    }
    let proxy_addrs: Vec<String> = listen.iter().chain(&tls_listen).cloned().collect();
    server.add_service(background_service("listener probe", ListenerProbe::new(shared.clone(), &proxy_addrs)));
    server.add_service(background_service("drain", Drain::new(shared.clone())));
    server.add_service(background_service("upstream health", HealthChecker::new(shared)));
    server.run_forever()
}

/// Admin connections over [`ADMIN_CONNECTIONS`] kept for `/healthz` and
/// `/readyz`: a probe still answers when clients hold every other one.
const ADMIN_PROBE_SLOTS: usize = 8;

/// Descriptors kept for everything but client connections: listeners,
/// logs, the policy watcher, health checks, idle upstream connections.
const RESERVED_FILES: u64 = 256;

/// Raises the soft limit on open files towards the hard limit when
/// `max_connections` needs it, and warns when even the hard limit is too
/// low. A proxied client connection holds two descriptors (client and
/// upstream).
fn raise_nofile_limit(max_connections: usize) {
    use rlimit::Resource;
    let clients = u64::try_from(max_connections + ADMIN_CONNECTIONS + ADMIN_PROBE_SLOTS).unwrap_or(u64::MAX);
    let need = clients.saturating_mul(2).saturating_add(RESERVED_FILES);
    let (soft, hard) = match Resource::NOFILE.get() {
        Ok(limits) => limits,
        Err(e) => {
            tracing::warn!(error = %e, "Cannot read the open files limit (RLIMIT_NOFILE)");
            return;
        }
    };
    let mut limit = soft;
    if soft < need && soft < hard {
        match Resource::NOFILE.set(hard, hard) {
            Ok(()) => {
                tracing::info!(from = soft, to = hard, "Raised the open files limit (RLIMIT_NOFILE)");
                limit = hard;
            }
            Err(e) => tracing::warn!(error = %e, "Cannot raise the open files limit (RLIMIT_NOFILE)"),
        }
    }
    if limit < need {
        tracing::warn!(
            limit,
            need,
            max_connections,
            "The open files limit (RLIMIT_NOFILE) is below what server.max_connections needs; \
             lower max_connections or raise the limit"
        );
    }
}

/// Client-side socket buffers. Pingora's default write buffer (1460 bytes,
/// one MSS) sends a response header and a body that does not fit beside it
/// in two writes, so a small page costs two syscalls and two packets. With
/// a larger buffer, a Content-Length response of up to this size leaves in
/// one write. Real-time bodies are not held back: Pingora flushes after every
/// chunk of a chunked (or close-delimited) body and buffers only bodies
/// whose length is known, flushing when the last byte is written.
const WRITE_BUFFER: usize = 32 * 1024;

/// The buffers of a client connection. Both are allocated when the
/// connection is accepted, so they are most of what an idle connection
/// costs. On plain listeners reads are unbuffered: Pingora's HTTP/1
/// parser and HTTP/2 codec read into buffers of their own, and Pingora's
/// default 64 KiB read buffer would only add a copy (and 64 KiB to every
/// idle connection). TLS keeps it: OpenSSL reads records in small pieces.
fn l4_buffer(tls: bool) -> L4BufferSettings {
    let settings = L4BufferSettings::default().write(WRITE_BUFFER);
    if tls {
        settings
    } else {
        settings.read(0)
    }
}
