//! Signing keys for Web Bot Auth: pinned in the policy, or fetched over
//! HTTPS from the agent's `/.well-known/http-message-signatures-directory`
//! (a JWKS of media type `application/http-message-signatures-directory+json`)
//! and cached for their lifetime.
//!
//! CONTRACT (owned by the `wba` helper; signatures are fixed, bodies are stubs).

use std::time::Duration;

/// A key pinned in the policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PinnedKey {
    /// The token the key proves.
    pub token: String,
    /// The public key as a JWK (JSON text, `{"kty":"OKP","crv":"Ed25519","x":..}`).
    pub jwk: String,
}

/// Key settings (from the policy's `[verification]` table).
#[derive(Clone, Debug)]
pub struct KeysConfig {
    /// Pinned keys.
    pub pinned: Vec<PinnedKey>,
    /// Timeout of one directory fetch.
    pub fetch_timeout: Duration,
    /// Maximum cached directories.
    pub cache_size: usize,
    /// Allowed clock skew for `created`/`expires`.
    pub max_skew: Duration,
    /// Whether directories may be fetched over plain HTTP (tests only).
    pub allow_http: bool,
}

/// The keys known and cached; cheap to clone.
#[derive(Clone, Debug)]
pub struct Keys {}

/// Why the key configuration is invalid (a pinned JWK that does not parse).
#[derive(Clone, Debug, thiserror::Error)]
#[error("{0}")]
pub struct KeyError(pub String);

impl Keys {
    /// Builds the key store from the pinned keys.
    pub fn new(config: KeysConfig) -> Result<Keys, KeyError> {
        let _ = config;
        Ok(Keys {})
    }
}
