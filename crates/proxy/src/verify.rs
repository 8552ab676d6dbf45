//! Verified crawler identity in the proxy: verifies one request's claim
//! with the snapshot's [`crawlgate_identity::Verifier`] (built with the
//! first snapshot, `crate::handles`) before it is routed, and keeps its IP
//! lists fresh in the background.
//!
//! The verifier is built once: the `[verification]` settings and the set of
//! tokens whose lists and domains it checks apply after a restart (they are
//! in the reload's restart-only keys); the groups' `verify`, `on_spoofed`
//! and `on_unverified` are read from the current snapshot, so a reload
//! changes them live.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use crawlgate_identity::wba::SignedRequest;
use crawlgate_identity::{Verdict, Verifier, VerifierConfig};
use crawlgate_policy::{Claim, Policy};
use pingora::http::RequestHeader;
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;

use crate::state::{Shared, Snapshot};

/// The verifier's configuration for `policy`: its `[verification]` table and
/// every token with its group's `verify` mode.
pub fn config(policy: &Policy) -> VerifierConfig {
    VerifierConfig::for_policy(policy)
}

/// What of the verification applies only after a restart, for the reload's
/// warning: the settings (not `trusted_proxies`, read per request) and the
/// tokens whose lists and domains the verifier checks.
pub fn restart_only(policy: &Policy) -> (&'static str, String) {
    let v = &policy.settings().verification;
    let c = config(policy);
    let lists: Vec<&str> = c.lists.agents.iter().map(|(t, _)| t.as_str()).collect();
    let domains: Vec<&str> = c.rdns_domains.iter().map(|(t, _)| t.as_str()).collect();
    let key = format!(
        "{} {} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {lists:?} {domains:?}",
        v.enabled, v.observe_catalog, v.refresh, v.fetch_timeout, v.state_dir, v.lists, v.dns, v.signatures, v.keys
    );
    ("verification", key)
}

/// Whether the request has RFC 9421 signature fields to check: a
/// `Signature-Input` (a `Signature` alone may be another scheme's).
fn signed(req: &RequestHeader) -> bool {
    req.headers.contains_key("signature-input")
}

/// The `@authority` of a request (RFC 9421 section 2.2.3): the target's
/// authority, else the Host field, lower-cased.
fn authority(req: &RequestHeader) -> String {
    let from_uri = req.uri.authority().map(|a| a.as_str().to_string());
    let host = || req.headers.get(http::header::HOST).and_then(|h| h.to_str().ok()).map(str::to_string);
    from_uri.or_else(host).unwrap_or_default().to_ascii_lowercase()
}

/// Verifies the request's claim: the sync cached path when it has no
/// signature, else the live checks under their timeouts. Only this request
/// waits; lookups of one address are shared. `claim` is the token the
/// User-Agent claims (`Policy::claim`), found once by the caller.
pub async fn verify(
    shared: &Shared,
    snap: &Snapshot,
    req: &RequestHeader,
    claim: Option<Claim<'_>>,
    ip: IpAddr,
) -> Verdict {
    let (policy, Some(verifier)) = (&snap.policy, snap.handles.verifier.as_deref()) else { return Verdict::default() };
    if !policy.settings().verification.enabled {
        return Verdict::default();
    }
    // A Signature-Input alone is checked too: without its Signature it
    // is a malformed signature, not an unsigned request.
    if !signed(req) {
        let Some(claim) = claim else { return Verdict::default() };
        if let Some(v) = verifier.verify_cached(&claim, ip) {
            return v;
        }
        let started = Instant::now();
        let v = verifier.verify(Some(&claim), ip, None).await;
        shared.metrics.verification().dns_lookup(started.elapsed());
        return v;
    }
    let authority = authority(req);
    let target = String::from_utf8_lossy(req.raw_path());
    let signed =
        SignedRequest { method: req.method.as_str(), authority: &authority, target: &target, headers: &req.headers };
    verifier.verify(claim.as_ref(), ip, Some(&signed)).await
}

/// The verification of a catalog crawler the policy does not name
/// (`Policy::observation`), which no decision waits for.
pub enum Observation {
    /// Known now: a cached answer, or nothing to verify with.
    Done(Verdict),
    /// Running in a task of its own (a reverse DNS lookup): the access line
    /// and the counts await it after the response is written.
    Pending(tokio::task::JoinHandle<Verdict>),
}

/// Starts verifying an observed crawler's `claim` from `ip` off the
/// request path: a cached answer at once, else a spawned lookup. `None`
/// for a signed request, which [`verify`] checks on the path as before
/// (the signature's headers belong to the request).
pub fn observe(
    shared: &Arc<Shared>,
    snap: &Snapshot,
    req: &RequestHeader,
    claim: Claim<'static>,
    ip: IpAddr,
) -> Option<Observation> {
    let (policy, Some(verifier)) = (&snap.policy, snap.handles.verifier.clone()) else {
        return Some(Observation::Done(Verdict::default()));
    };
    if !policy.settings().verification.enabled {
        return Some(Observation::Done(Verdict::default()));
    }
    if signed(req) {
        return None;
    }
    if let Some(v) = verifier.verify_cached(&claim, ip) {
        return Some(Observation::Done(v));
    }
    let shared = shared.clone();
    Some(Observation::Pending(tokio::spawn(async move {
        let started = Instant::now();
        let v = verifier.verify(Some(&claim), ip, None).await;
        shared.metrics.verification().dns_lookup(started.elapsed());
        v
    })))
}

/// Refreshes the IP lists on their interval and publishes their state and
/// the resolver's cache size as metrics.
pub struct Refresher {
    verifier: Arc<Verifier>,
    shared: Arc<Shared>,
}

impl Refresher {
    /// A refresher for `verifier`, publishing in `shared`'s metrics.
    pub fn new(verifier: Arc<Verifier>, shared: Arc<Shared>) -> Refresher {
        Refresher { verifier, shared }
    }

    fn publish(&self, verifier: &Verifier) {
        let m = self.shared.metrics.verification();
        for s in verifier.lists().status() {
            m.list_state(&s.source, s.age_secs, s.prefixes, s.failures);
        }
        m.dns_cache(verifier.rdns().cache_len());
    }
}

/// How often the list gauges are updated.
const PUBLISH_EVERY: Duration = Duration::from_secs(5);

#[async_trait]
impl BackgroundService for Refresher {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        let verifier = &self.verifier;
        let run = verifier.lists().clone().run();
        tokio::pin!(run);
        loop {
            self.publish(verifier);
            tokio::select! {
                _ = shutdown.changed() => break,
                _ = &mut run => break,
                _ = tokio::time::sleep(PUBLISH_EVERY) => {}
            }
        }
    }
}
