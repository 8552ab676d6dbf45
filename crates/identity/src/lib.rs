//! Who is really asking: verifies the crawler a request claims to be, from
//! the operator's published IP ranges ([`ranges`], [`lists`]), from
//! forward-confirmed reverse DNS ([`rdns`]) and from Web Bot Auth
//! signatures ([`wba`], [`keys`]), and reports a
//! [`crawlgate_policy::verification::Verification`] for the policy to act on.
//!
//! Everything here that does I/O runs off the request path or under a
//! timeout; a request never waits on a lookup longer than its budget. Its
//! HTTP requests (key directories, IP lists) and its JWK parsing are
//! `crawlgate_outbound`'s; this crate decides what to fetch and what the
//! answer proves.

pub mod directory;
pub mod keys;
pub mod lists;
pub mod ranges;
pub mod rdns;
pub mod replay;
pub mod wba;

use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use crawlgate_policy::verification::{
    Method, ReplayFinding, SignatureFinding, SignatureOutcome, Verification, VerificationSettings, VerifyMode,
};
use crawlgate_policy::Claim;

use crate::keys::{Keys, KeysConfig, PinnedKey};
use crate::lists::{IpCheck, ListSource, Lists, ListsConfig};
use crate::ranges::IpPrefix;
use crate::rdns::{Fcrdns, RdnsCheck, RdnsConfig};
use crate::replay::{Replay, ReplayCache, ReplayStore};
use crate::wba::{SignatureCheck, SignedRequest};

/// What showed the outcome: shown in logs, `explain` and `verify`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Evidence {
    /// Nothing was checked (no claim, or `verify = "none"`).
    #[default]
    None,
    /// No method has a source for the token.
    NoSource,
    /// The address is in this list's prefix.
    Listed {
        /// The list (URL or path).
        source: Arc<str>,
        /// The prefix.
        prefix: IpPrefix,
    },
    /// The address is in none of the token's loaded lists.
    NotListed,
    /// The token's lists are configured but none is loaded yet.
    ListsNotLoaded,
    /// The PTR name, confirmed forward.
    Ptr {
        /// The name.
        name: String,
    },
    /// Reverse DNS proves the address is not the operator's.
    RdnsMismatch {
        /// The PTR name(s) and what failed.
        detail: String,
    },
    /// Reverse DNS could not tell (timeout, SERVFAIL).
    RdnsFailed {
        /// Why.
        reason: String,
    },
    /// A valid signature by this key.
    Key {
        /// The key's JWK thumbprint (RFC 7638).
        keyid: String,
    },
    /// A signature that is present and wrong.
    BadSignature {
        /// What is wrong.
        reason: String,
        /// Whether its fields cannot even be parsed
        /// ([`wba::unparsable`]): a malformed request rather than a wrong
        /// signature.
        unparsable: bool,
    },
    /// The signing key could not be obtained.
    UnknownKey {
        /// Why.
        reason: String,
    },
    /// A valid signature already presented within its validity window.
    Replayed {
        /// The key's JWK thumbprint (RFC 7638).
        keyid: String,
    },
    /// A valid signature the replay cache had no room to record, so a
    /// replay of it could not be told.
    ReplayCacheFull,
    /// A valid signature by a key that speaks for another token than the
    /// User-Agent claims.
    OtherToken {
        /// The key's JWK thumbprint (RFC 7638).
        keyid: String,
        /// The token the key speaks for.
        token: String,
    },
    /// A valid signature whose card's `expected-user-agent` the request's
    /// User-Agent does not contain: it still proves the key's token.
    UnexpectedUserAgent {
        /// The key's JWK thumbprint (RFC 7638).
        keyid: String,
        /// The card's `expected-user-agent`.
        expected: String,
    },
}

impl fmt::Display for Evidence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Evidence::None => f.write_str("-"),
            Evidence::NoSource => f.write_str("no published source"),
            Evidence::Listed { source, prefix } => write!(f, "list {source} prefix {prefix}"),
            Evidence::NotListed => f.write_str("in none of the lists"),
            Evidence::ListsNotLoaded => f.write_str("lists not loaded yet"),
            Evidence::Ptr { name } => write!(f, "ptr {name} (forward-confirmed)"),
            Evidence::RdnsMismatch { detail } => write!(f, "rdns mismatch: {detail}"),
            Evidence::RdnsFailed { reason } => write!(f, "rdns failed: {reason}"),
            Evidence::Key { keyid } => write!(f, "keyid {keyid}"),
            Evidence::BadSignature { reason, unparsable: false } => write!(f, "invalid signature: {reason}"),
            Evidence::BadSignature { reason, unparsable: true } => write!(f, "unparsable signature: {reason}"),
            Evidence::UnknownKey { reason } => write!(f, "unknown key: {reason}"),
            Evidence::Replayed { keyid } => write!(f, "replayed signature by keyid {keyid}"),
            Evidence::ReplayCacheFull => f.write_str("replay cache full"),
            Evidence::OtherToken { keyid, token } => write!(f, "keyid {keyid} speaks for {token}"),
            Evidence::UnexpectedUserAgent { keyid, expected } => {
                write!(f, "keyid {keyid}; the User-Agent lacks the card's expected-user-agent {expected:?}")
            }
        }
    }
}

/// The outcome of verifying one request.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Verdict {
    /// The outcome.
    pub verification: Verification,
    /// What showed it.
    pub evidence: Evidence,
    /// The token a valid signature proves, when its key names one.
    pub signed_token: Option<String>,
    /// The components that valid signature covers (empty without one):
    /// a price header is agreed to only when it is among them.
    pub signed_components: Vec<String>,
    /// What the request's Web Bot Auth signature showed; `None` without
    /// one (or when its group does not verify signatures).
    pub signature: Option<SignatureOutcome>,
}

/// One method's finding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Finding {
    /// The method proves the claim.
    Proves(Evidence),
    /// The method proves the claim false.
    Disproves(Evidence),
    /// The method could not tell.
    Unknown(Evidence),
}

/// The settings a [`Verifier`] is built from.
#[derive(Clone, Debug)]
pub struct VerifierConfig {
    /// The IP lists.
    pub lists: ListsConfig,
    /// The resolver.
    pub rdns: RdnsConfig,
    /// Web Bot Auth keys.
    pub keys: KeysConfig,
    /// Per policy token (policy spelling), its reverse DNS domains.
    pub rdns_domains: Vec<(String, Vec<String>)>,
    /// How many verified signatures the replay cache holds.
    pub replay_cache_size: usize,
}

impl VerifierConfig {
    /// The configuration for `policy`: its `[verification]` table, every
    /// token with its group's `verify` mode and, when `observe_catalog`
    /// says so, the catalog crawlers the policy does not name (verified
    /// for the counts only, with `verify = "any"`).
    pub fn for_policy(policy: &crawlgate_policy::Policy) -> VerifierConfig {
        let observed = crawlgate_policy::identify::catalog_crawlers().filter_map(|t| policy.observed_claim(t));
        let tokens = Self::policy_tokens(policy).chain(observed.map(|c| (c.agent, c.verify)));
        VerifierConfig::from_settings(&policy.settings().verification, tokens)
    }

    /// The configuration for the policy's own tokens only (what `crawlgate
    /// verify` and `explain` check): no list of an unnamed catalog crawler
    /// is loaded.
    pub fn for_policy_tokens(policy: &crawlgate_policy::Policy) -> VerifierConfig {
        VerifierConfig::from_settings(&policy.settings().verification, Self::policy_tokens(policy))
    }

    /// The configuration for the policy's own tokens and `claims` (what
    /// `crawlgate explain` checks: an observed catalog crawler's claim
    /// brings its own lists, no other unnamed crawler's).
    pub fn for_policy_tokens_and(
        policy: &crawlgate_policy::Policy,
        claims: &[crawlgate_policy::Claim<'_>],
    ) -> VerifierConfig {
        let named = Self::policy_tokens(policy);
        let observed = claims.iter().filter(|c| policy.claim_token(c.agent).is_none()).map(|c| (c.agent, c.verify));
        VerifierConfig::from_settings(&policy.settings().verification, named.chain(observed))
    }

    fn policy_tokens(policy: &crawlgate_policy::Policy) -> impl Iterator<Item = (&str, VerifyMode)> {
        policy.tokens().filter_map(|t| policy.claim_token(t)).map(|c| (c.agent, c.verify))
    }

    /// The configuration for the policy's `[verification]` table and its
    /// tokens (with their groups' `verify` modes): a token's lists are
    /// loaded when its mode allows `ip`, its domains kept when it allows
    /// `rdns`.
    pub fn from_settings<'a>(
        v: &VerificationSettings,
        tokens: impl IntoIterator<Item = (&'a str, VerifyMode)>,
    ) -> VerifierConfig {
        let mut agents = Vec::new();
        let mut rdns_domains = Vec::new();
        for (token, mode) in tokens {
            if mode.allows(Method::Ip) {
                let lists = v.ip_lists_for(token);
                if !lists.is_empty() {
                    agents.push((token.to_string(), lists.into_iter().map(list_source).collect()));
                }
            }
            let domains = v.rdns_for(token);
            if mode.allows(Method::Rdns) && !domains.is_empty() {
                rdns_domains.push((token.to_string(), domains.to_vec()));
            }
        }
        VerifierConfig {
            lists: ListsConfig {
                refresh: v.refresh,
                fetch_timeout: v.fetch_timeout,
                state_dir: v.state_dir.as_ref().map(PathBuf::from),
                agents,
            },
            rdns: RdnsConfig::new(v.dns.nameservers.clone(), v.dns.timeout, v.dns.cache_size),
            keys: KeysConfig {
                pinned: v.keys.iter().map(|k| PinnedKey { token: k.token.clone(), jwk: k.jwk.clone() }).collect(),
                fetch_timeout: v.signatures.directory_timeout,
                cache_size: v.signatures.cache_size,
                max_skew: v.signatures.max_skew,
                allow_http: v.signatures.allow_http_directories,
                max_validity: v.signatures.max_validity,
                authorities: v.signatures.authorities.clone(),
                required_components: v.signatures.required_components.clone(),
                any_agent: v.signatures.any_directory_host,
                allow_private: v.signatures.allow_private_directories,
            },
            rdns_domains,
            replay_cache_size: v.signatures.replay_cache_size,
        }
    }
}

/// A list given as a URL or an absolute path.
fn list_source(s: String) -> ListSource {
    if s.starts_with("https://") || s.starts_with("http://") {
        ListSource::Url(s)
    } else {
        ListSource::File(PathBuf::from(s))
    }
}

/// Why a [`Verifier`] could not be built.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VerifierError {
    /// The resolver.
    #[error("reverse DNS: {0}")]
    Rdns(#[from] rdns::RdnsError),
    /// A pinned key.
    #[error("pinned key: {0}")]
    Key(#[from] keys::KeyError),
}

/// Verifies claims: signature, then IP lists, then reverse DNS (cached,
/// then live under its timeout). Cheap to clone.
#[derive(Clone, Debug)]
pub struct Verifier {
    lists: Lists,
    rdns: Fcrdns,
    keys: Keys,
    domains: Arc<HashMap<String, Vec<String>>>,
    replay: Arc<dyn ReplayStore>,
}

impl Verifier {
    /// Builds the parts; the lists are loaded from the state directory.
    pub fn new(config: VerifierConfig) -> Result<Verifier, VerifierError> {
        let VerifierConfig { lists, rdns, keys, rdns_domains, replay_cache_size } = config;
        Ok(Verifier {
            lists: Lists::new(lists),
            rdns: Fcrdns::new(rdns)?,
            keys: Keys::new(keys)?,
            domains: Arc::new(rdns_domains.into_iter().collect()),
            replay: Arc::new(ReplayCache::new(replay_cache_size)),
        })
    }

    /// The verifier with `store` remembering verified signatures instead of
    /// this instance's own cache (a store shared by a fleet).
    pub fn with_replay_store(mut self, store: Arc<dyn ReplayStore>) -> Verifier {
        self.replay = store;
        self
    }

    /// The IP lists (refresh service, status).
    pub fn lists(&self) -> &Lists {
        &self.lists
    }

    /// The reverse DNS checker.
    pub fn rdns(&self) -> &Fcrdns {
        &self.rdns
    }

    fn domains(&self, token: &str) -> &[String] {
        self.domains.get(token).map_or(&[], Vec::as_slice)
    }

    /// What the IP lists say, if the mode uses them and the token has any.
    /// The lists are the token's configured ones and those its Signature
    /// Agent Cards publish (`ips_uri`), once a card was fetched.
    pub fn check_ip(&self, token: &str, mode: VerifyMode, ip: IpAddr) -> Option<Finding> {
        if !mode.allows(Method::Ip) {
            return None;
        }
        let card = self.keys.card_list_check(token, ip);
        if let Some(Some((source, prefix))) = card {
            return Some(Finding::Proves(Evidence::Listed { source, prefix }));
        }
        Some(match (self.lists.check(token, ip), card) {
            (IpCheck::NoSource, None) => return None,
            (IpCheck::NoSource, Some(_)) => Finding::Disproves(Evidence::NotListed),
            (IpCheck::NotLoaded, _) => Finding::Unknown(Evidence::ListsNotLoaded),
            (IpCheck::Match { source, prefix }, _) => Finding::Proves(Evidence::Listed { source, prefix }),
            (IpCheck::NoMatch, _) => Finding::Disproves(Evidence::NotListed),
        })
    }

    fn rdns_finding(r: RdnsCheck) -> Finding {
        match r {
            RdnsCheck::Confirmed { ptr } => Finding::Proves(Evidence::Ptr { name: ptr }),
            RdnsCheck::Mismatch { detail } => Finding::Disproves(Evidence::RdnsMismatch { detail }),
            RdnsCheck::Failed { reason } => Finding::Unknown(Evidence::RdnsFailed { reason }),
        }
    }

    /// Reverse DNS from the cache: `None` when not applicable, `Some(None)`
    /// when only a lookup can tell.
    fn check_rdns_cached(&self, token: &str, mode: VerifyMode, ip: IpAddr) -> Option<Option<Finding>> {
        let domains = self.domains(token);
        if !mode.allows(Method::Rdns) || domains.is_empty() {
            return None;
        }
        Some(self.rdns.cached(ip, domains).map(Self::rdns_finding))
    }

    /// Reverse DNS, live under the resolver's timeout.
    pub async fn check_rdns(&self, token: &str, mode: VerifyMode, ip: IpAddr) -> Option<Finding> {
        let domains = self.domains(token);
        if !mode.allows(Method::Rdns) || domains.is_empty() {
            return None;
        }
        Some(Self::rdns_finding(self.rdns.check(ip, domains).await))
    }

    /// The outcome without any I/O, for a request without signature
    /// headers; `None` when a DNS lookup is needed.
    pub fn verify_cached(&self, claim: &Claim<'_>, ip: IpAddr) -> Option<Verdict> {
        if claim.verify == VerifyMode::None {
            return Some(Verdict::default());
        }
        let mut acc = Acc::default();
        if let Some(f) = self.check_ip(claim.agent, claim.verify, ip) {
            if acc.add(Method::Ip, f) {
                return Some(acc.finish());
            }
        }
        match self.check_rdns_cached(claim.agent, claim.verify, ip) {
            None => {}
            Some(None) => return None,
            Some(Some(f)) => {
                acc.add(Method::Rdns, f);
            }
        }
        Some(acc.finish())
    }

    /// Verifies `claim` (the token the User-Agent names, if any) for a
    /// request from `ip`, with its signature headers when it has any: a
    /// valid signature first (refused as a replay, [`Evidence::Replayed`],
    /// when it was already presented), then the IP lists, then reverse DNS. Any
    /// method that proves the claim verifies it; else one that disproves it
    /// makes it spoofed; else it is unverified.
    pub async fn verify(&self, claim: Option<&Claim<'_>>, ip: IpAddr, signed: Option<&SignedRequest<'_>>) -> Verdict {
        let mut acc = Acc::default();
        let sig_allowed = claim.is_none_or(|c| c.verify.allows(Method::Signature));
        let mut signature = None;
        if let (Some(req), true) = (signed, sig_allowed) {
            let now = SystemTime::now();
            let (check, seen) = wba::verify_seen(&self.keys, req, now).await;
            // Consulted only after the signature verified, so that a forger
            // can neither fill the cache nor make a genuine signature look
            // replayed.
            let covered = seen.as_ref().map(|s| s.covered.clone()).unwrap_or_default();
            let card = seen.as_ref().and_then(|s| s.card.clone());
            // Whether the fields parse is asked of every member, not of the
            // one whose outcome is reported, so that the order of the labels
            // does not decide it; only when no signature verified, so a valid
            // one is parsed once (a valid one wins in any order).
            let unparsable = match &check {
                SignatureCheck::Invalid { .. } | SignatureCheck::UnknownKey { .. } | SignatureCheck::Expired { .. } => {
                    wba::unparsable(req.headers)
                }
                SignatureCheck::Valid { .. } | SignatureCheck::Absent => None,
            };
            let replay = match seen {
                Some(s) => Some((
                    self.replay.seen_once(&s.keyid, &s.signature, s.accepted_until, wba::unix_seconds(now)).await,
                    s.keyid,
                    s.legacy,
                )),
                None => None,
            };
            let finding = match (&check, &replay) {
                (SignatureCheck::Absent, _) => None,
                _ if unparsable.is_some() => Some(SignatureFinding::Unparsable),
                (SignatureCheck::Valid { token, .. }, Some((r, _, legacy))) => Some(SignatureFinding::Valid {
                    legacy: legacy.is_some(),
                    replay: match r {
                        Replay::Fresh => ReplayFinding::Fresh,
                        Replay::Replayed => ReplayFinding::Replayed,
                        Replay::Full => ReplayFinding::NoRoom,
                    },
                    other_token: token
                        .as_deref()
                        .is_some_and(|t| claim.is_some_and(|c| !c.agent.eq_ignore_ascii_case(t))),
                }),
                (SignatureCheck::Expired { .. }, _) => Some(SignatureFinding::Expired),
                (SignatureCheck::UnknownKey { .. }, _) => Some(SignatureFinding::UnknownKey),
                (SignatureCheck::Invalid { .. }, _) | (SignatureCheck::Valid { .. }, None) => {
                    Some(SignatureFinding::Invalid)
                }
            };
            signature = finding.map(SignatureFinding::outcome);
            if let Some((_, _, Some(form))) = &replay {
                tracing::debug!(form = form.as_str(), "Web Bot Auth signature with a legacy Signature-Agent form");
            }
            let check = match replay {
                Some((Replay::Replayed, keyid, _)) => {
                    return Verdict {
                        verification: Verification::Spoofed(Method::Signature),
                        evidence: Evidence::Replayed { keyid },
                        signed_token: None,
                        signed_components: Vec::new(),
                        signature,
                    };
                }
                // Not recorded, so a replay of it could not be told: it
                // proves nothing.
                Some((Replay::Full, _, _)) => {
                    acc.add(Method::Signature, Finding::Unknown(Evidence::ReplayCacheFull));
                    SignatureCheck::Absent
                }
                Some((Replay::Fresh, _, _)) | None => check,
            };
            match check {
                SignatureCheck::Absent => {}
                // A key bound to one token that signs for a User-Agent
                // claiming another: the claim is false.
                SignatureCheck::Valid { keyid, token: Some(token), .. }
                    if claim.is_some_and(|c| !c.agent.eq_ignore_ascii_case(&token)) =>
                {
                    return Verdict {
                        verification: Verification::Spoofed(Method::Signature),
                        evidence: Evidence::OtherToken { keyid, token },
                        signed_token: None,
                        signed_components: Vec::new(),
                        signature,
                    };
                }
                SignatureCheck::Valid { keyid, token: Some(token), .. } => {
                    let expected = card.as_ref().and_then(|c| c.expected_user_agent.clone());
                    let ua = req.headers.get(http::header::USER_AGENT).map(|v| String::from_utf8_lossy(v.as_bytes()));
                    let evidence = match expected {
                        Some(e) if !ua.is_some_and(|ua| ua.to_ascii_lowercase().contains(&e.to_ascii_lowercase())) => {
                            Evidence::UnexpectedUserAgent { keyid, expected: e }
                        }
                        _ => Evidence::Key { keyid },
                    };
                    return Verdict {
                        verification: Verification::Verified(Method::Signature),
                        evidence,
                        signed_token: Some(token),
                        signed_components: covered,
                        signature,
                    };
                }
                // A valid key that names no token proves no claim.
                SignatureCheck::Valid { keyid, token: None, .. } => {
                    acc.add(Method::Signature, Finding::Unknown(Evidence::Key { keyid }));
                }
                // A member that cannot be parsed makes the request malformed
                // whichever member came first, and the reason is that
                // member's, not the first member's.
                SignatureCheck::Invalid { .. } | SignatureCheck::UnknownKey { .. } | SignatureCheck::Expired { .. }
                    if unparsable.is_some() =>
                {
                    let reason = unparsable.unwrap_or_default();
                    acc.add(Method::Signature, Finding::Disproves(Evidence::BadSignature { reason, unparsable: true }));
                }
                SignatureCheck::Invalid { reason } | SignatureCheck::Expired { reason } => {
                    acc.add(
                        Method::Signature,
                        Finding::Disproves(Evidence::BadSignature { reason, unparsable: false }),
                    );
                }
                SignatureCheck::UnknownKey { reason } => {
                    acc.add(Method::Signature, Finding::Unknown(Evidence::UnknownKey { reason }));
                }
            }
        }
        let with_signature = |v: Verdict| Verdict { signature, ..v };
        let Some(claim) = claim else { return with_signature(acc.finish_unclaimed()) };
        if claim.verify == VerifyMode::None {
            return Verdict::default();
        }
        if let Some(f) = self.check_ip(claim.agent, claim.verify, ip) {
            if acc.add(Method::Ip, f) {
                return with_signature(acc.finish());
            }
        }
        if let Some(f) = self.check_rdns(claim.agent, claim.verify, ip).await {
            acc.add(Method::Rdns, f);
        }
        with_signature(acc.finish())
    }

    /// Every applicable method's finding for `token` from `ip`, live (for
    /// `crawlgate verify`).
    pub async fn verify_each(&self, token: &str, mode: VerifyMode, ip: IpAddr) -> Vec<(Method, Finding)> {
        let mut out = Vec::new();
        if let Some(f) = self.check_ip(token, mode, ip) {
            out.push((Method::Ip, f));
        }
        if let Some(f) = self.check_rdns(token, mode, ip).await {
            out.push((Method::Rdns, f));
        }
        out
    }

    /// Every applicable method's finding without network access: the lists
    /// in use and the resolver's cache (for `crawlgate explain`).
    pub fn verify_each_offline(&self, token: &str, mode: VerifyMode, ip: IpAddr) -> Vec<(Method, Finding)> {
        let mut out = Vec::new();
        if let Some(f) = self.check_ip(token, mode, ip) {
            out.push((Method::Ip, f));
        }
        if let Some(Some(f)) = self.check_rdns_cached(token, mode, ip) {
            out.push((Method::Rdns, f));
        }
        out
    }
}

/// Combines findings in order: the first proof wins; else the first
/// disproof; else the first unknown's evidence.
#[derive(Default)]
struct Acc {
    proved: Option<(Method, Evidence)>,
    disproved: Option<(Method, Evidence)>,
    unknown: Option<Evidence>,
    checked: bool,
}

impl Acc {
    /// Adds a finding; true when it proves the claim.
    fn add(&mut self, m: Method, f: Finding) -> bool {
        self.checked = true;
        match f {
            Finding::Proves(e) => {
                self.proved.get_or_insert((m, e));
                true
            }
            Finding::Disproves(e) => {
                self.disproved.get_or_insert((m, e));
                false
            }
            Finding::Unknown(e) => {
                self.unknown.get_or_insert(e);
                false
            }
        }
    }

    fn finish(self) -> Verdict {
        let (verification, evidence) = match (self.proved, self.disproved, self.unknown) {
            (Some((m, e)), _, _) => (Verification::Verified(m), e),
            (None, Some((m, e)), _) => (Verification::Spoofed(m), e),
            (None, None, Some(e)) => (Verification::Unverified, e),
            (None, None, None) if self.checked => (Verification::Unverified, Evidence::None),
            (None, None, None) => (Verification::Unverified, Evidence::NoSource),
        };
        Verdict { verification, evidence, signed_token: None, signed_components: Vec::new(), signature: None }
    }

    /// Without a claimed token only a signature is judged: an invalid one
    /// is recorded, an unknown key is unverified, none is not applicable.
    fn finish_unclaimed(self) -> Verdict {
        if self.checked {
            self.finish()
        } else {
            Verdict::default()
        }
    }
}

/// The verdict of findings in the order they were made: the first proof
/// wins, else the first disproof, else nothing could tell.
pub fn combine(findings: &[(Method, Finding)]) -> Verdict {
    let mut acc = Acc::default();
    for (m, f) in findings {
        acc.add(*m, f.clone());
    }
    acc.finish()
}
