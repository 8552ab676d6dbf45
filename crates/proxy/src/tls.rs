//! TLS listeners' certificates in the proxy: the pair in use
//! (`crawlgate_certs::CertStore`) is set on each handshake from OpenSSL's
//! certificate callback, so a renewed certificate applies to new handshakes
//! while open connections keep theirs; SIGHUP and a change of either file
//! reload the pair.

use std::sync::Arc;

use async_trait::async_trait;
use crawlgate_certs::{CertStore, Reloaded};
use crawlgate_watch::{FileWatch, Trigger};
use pingora::listeners::TlsAccept;
use pingora::protocols::tls::TlsRef;
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;
use pingora::tls::ext::{ssl_add_chain_cert, ssl_use_certificate, ssl_use_private_key};

use crawlgate_telemetry::metrics::ReloadOutcome as Outcome;

/// Sets the current pair on each handshake.
pub struct Callbacks(pub Arc<CertStore>);

#[async_trait]
impl TlsAccept for Callbacks {
    async fn certificate_callback(&self, ssl: &mut TlsRef) {
        let pair = self.0.current();
        let Some(leaf) = pair.chain.first() else { return };
        // Without a certificate OpenSSL ends the handshake with an alert:
        // the error is logged, the connection is not served.
        if let Err(e) = ssl_use_certificate(ssl, leaf) {
            tracing::error!(error = %e, "Cannot set the TLS certificate on a handshake");
            return;
        }
        if let Err(e) = ssl_use_private_key(ssl, &pair.key) {
            tracing::error!(error = %e, "Cannot set the TLS key on a handshake");
            return;
        }
        for cert in pair.chain.iter().skip(1) {
            if let Err(e) = ssl_add_chain_cert(ssl, cert) {
                tracing::error!(error = %e, "Cannot add a TLS chain certificate on a handshake");
                return;
            }
        }
    }
}

/// The background service that reloads the certificate on SIGHUP and when
/// the certificate or key file changes (watched through their
/// directories, by name, like the policy file: certbot's `live/` symlink
/// swap and Kubernetes' `..data` swap are seen).
pub struct CertWatcher {
    store: Arc<CertStore>,
    shared: Arc<crate::state::Shared>,
}

impl CertWatcher {
    /// Watches `store`'s files, reporting to `shared`'s metrics.
    pub fn new(store: Arc<CertStore>, shared: Arc<crate::state::Shared>) -> CertWatcher {
        CertWatcher { store, shared }
    }

    async fn reload(&self, trigger: Trigger) {
        let (store, shared) = (self.store.clone(), self.shared.clone());
        let reload = move || {
            let outcome = match store.reload(trigger.as_str()) {
                Reloaded::Unchanged => Outcome::Unchanged,
                Reloaded::Replaced => Outcome::Success,
                Reloaded::Failed => Outcome::Failure,
            };
            shared.metrics.tls_reload(outcome);
            shared.metrics.tls_not_after(store.not_after_unix());
        };
        if let Err(e) = tokio::task::spawn_blocking(reload).await {
            tracing::error!(error = %e, "TLS certificate reload task failed");
        }
    }
}

#[async_trait]
impl BackgroundService for CertWatcher {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        let watch = FileWatch::new(&self.store.files(), "the TLS certificate files");
        self.shared.metrics.tls_not_after(self.store.not_after_unix());
        watch.run(&mut shutdown, |t| self.reload(t)).await;
    }
}
