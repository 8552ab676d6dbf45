//! Web Bot Auth: HTTP Message Signatures (RFC 9421) with the profile of
//! draft-meunier-web-bot-auth-architecture: `Signature`, `Signature-Input`
//! (`tag="web-bot-auth"`, `keyid` = JWK thumbprint per RFC 7638, `created`,
//! `expires`, ed25519) and `Signature-Agent`.
//!
//! CONTRACT (owned by the `wba` helper; signatures are fixed, bodies are stubs).

use std::time::SystemTime;

use crate::keys::Keys;

/// The parts of a request a signature may cover.
#[derive(Clone, Copy, Debug)]
pub struct SignedRequest<'a> {
    /// The method.
    pub method: &'a str,
    /// `@authority`: the Host (or :authority), lower-cased.
    pub authority: &'a str,
    /// `@path` with the query (the request target as received).
    pub target: &'a str,
    /// All request headers.
    pub headers: &'a http::HeaderMap,
}

/// The outcome of checking a request's signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SignatureCheck {
    /// No `Signature`/`Signature-Input` with `tag="web-bot-auth"`.
    Absent,
    /// A valid signature by a known key.
    Valid {
        /// The key's JWK thumbprint.
        keyid: String,
        /// The token the key belongs to (pinned key or the catalog's
        /// `Signature-Agent` host), if known.
        token: Option<String>,
        /// The `Signature-Agent` value, if present.
        agent: Option<String>,
    },
    /// A signature is present and wrong: bad bytes, expired, outside the
    /// allowed clock skew, a required component not covered, malformed.
    Invalid {
        /// What is wrong.
        reason: String,
    },
    /// The key could not be obtained (directory unreachable, unknown keyid
    /// without a directory): nothing could tell.
    UnknownKey {
        /// Why.
        reason: String,
    },
}

/// Checks the request's Web Bot Auth signature at time `now`.
pub async fn verify(keys: &Keys, req: &SignedRequest<'_>, now: SystemTime) -> SignatureCheck {
    let _ = (keys, req, now);
    SignatureCheck::Absent
}
