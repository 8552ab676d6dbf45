//! Web Bot Auth: HTTP Message Signatures (RFC 9421) with the profile of
//! draft-ietf-webbotauth-httpsig-protocol-01: `Signature`, `Signature-Input`
//! (`tag="web-bot-auth"`, `keyid` = JWK SHA-256 thumbprint per RFC 7638,
//! `created`, `expires`, ed25519) and `Signature-Agent`, which every signed
//! request carries and each signature covers its own member of
//! ([`agent`]).
//!
//! This module applies the profile: which signatures are candidates, the
//! time window, the components and authority a site requires, the key and
//! what it proves. The RFC 9421 signature base and its checking are in
//! the `base` submodule. Nothing here panics on bad input: every defect is
//! an [`SignatureCheck::Invalid`] with a reason.

pub mod agent;
pub(crate) mod base;

use std::time::SystemTime;

use ed25519_dalek::Signature;
use sfv::{BareItem, Dictionary, Item, ListEntry, Parser};

use self::agent::{AgentChoice, Legacy, SignatureAgent};
use self::base::{bases, field, secs, signature_dictionary, signature_member, split_target, Covered};
pub use self::base::{signature_base, unix_seconds, verify_label, SignedRequest, MAX_FIELD_BYTES};
use crate::keys::{KeyLookup, Keys};

/// The `tag` that marks a Web Bot Auth signature.
pub const TAG: &str = "web-bot-auth";

/// At most this many `tag="web-bot-auth"` signatures of one request are
/// checked.
const MAX_CANDIDATES: usize = 4;

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
        /// The `Signature-Agent` URL, if the header is present and names
        /// one.
        agent: Option<String>,
    },
    /// A signature is present and wrong: bad bytes, expired, outside the
    /// allowed clock skew, a required component not covered, malformed.
    Invalid {
        /// What is wrong.
        reason: String,
    },
    /// A well-formed signature whose `expires` has passed (beyond the
    /// allowed skew): reported apart from [`SignatureCheck::Invalid`] so a
    /// signer with a slow clock or a stale cache can be told.
    Expired {
        /// When and by how much.
        reason: String,
    },
    /// The key could not be obtained (directory unreachable, unknown keyid
    /// without a directory): nothing could tell.
    UnknownKey {
        /// Why.
        reason: String,
    },
}

/// A verified signature, as the replay cache records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    /// The key's JWK thumbprint.
    pub keyid: String,
    /// The signature bytes.
    pub signature: [u8; 64],
    /// Until when (Unix seconds, the allowed skew included) it is accepted.
    pub accepted_until: i64,
    /// The components it covers, as `Signature-Input` names them
    /// (`@authority`, `crawler-exact-price`, ...): what the signer vouched
    /// for.
    pub covered: Vec<String>,
    /// The Signature Agent Card members of the key's directory, if any.
    pub card: Option<std::sync::Arc<crate::directory::Card>>,
    /// The legacy `Signature-Agent` form the signature used, if any.
    pub legacy: Option<Legacy>,
}

/// Checks the request's Web Bot Auth signature at time `now`.
///
/// Every `tag="web-bot-auth"` signature (up to four) is tried in order; the
/// first valid one wins, otherwise the first one's outcome is reported.
/// Replays are not judged here: see [`verify_seen`].
pub async fn verify(keys: &Keys, req: &SignedRequest<'_>, now: SystemTime) -> SignatureCheck {
    verify_seen(keys, req, now).await.0
}

/// [`verify`], and for a valid signature what a replay cache must record
/// ([`crate::replay::ReplayCache`]): a caller that accepts the outcome
/// without consulting the cache accepts replays.
pub async fn verify_seen(keys: &Keys, req: &SignedRequest<'_>, now: SystemTime) -> (SignatureCheck, Option<Seen>) {
    let candidates = match candidates(req, keys) {
        Ok(c) => c,
        Err(reason) => return (SignatureCheck::Invalid { reason }, None),
    };
    let mut first = None;
    for c in candidates {
        let outcome = match c.and_then(|c| check_time(&c, keys, now).map(|()| c)) {
            Err(fault) => fault.check(),
            Ok(c) => {
                let lookup = keys.key(&c.keyid, Some(&c.agent.url)).await;
                let card = match &lookup {
                    KeyLookup::Found(k) => k.card.clone(),
                    KeyLookup::Unknown(_) => None,
                };
                let outcome = conclude(&c, lookup);
                if matches!(outcome, SignatureCheck::Valid { .. }) {
                    let seen = Seen {
                        keyid: c.keyid.clone(),
                        signature: c.signature.to_bytes(),
                        accepted_until: c.expires.saturating_add(secs(keys.max_skew())),
                        covered: c.covered.clone(),
                        card,
                        legacy: c.agent.legacy,
                    };
                    return (outcome, Some(seen));
                }
                outcome
            }
        };
        first.get_or_insert(outcome);
    }
    (first.unwrap_or(SignatureCheck::Absent), None)
}

/// [`verify`] without waiting: `None` when only a key directory fetch (which
/// [`verify`] would do) could tell. Like [`verify`] it does not judge
/// replays: the proxy's [`crate::Verifier`] never accepts a signature
/// without its replay cache.
pub fn verify_cached(keys: &Keys, req: &SignedRequest<'_>, now: SystemTime) -> Option<SignatureCheck> {
    let candidates = match candidates(req, keys) {
        Ok(c) => c,
        Err(reason) => return Some(SignatureCheck::Invalid { reason }),
    };
    let mut first = None;
    let mut pending = false;
    for c in candidates {
        let outcome = match c.and_then(|c| check_time(&c, keys, now).map(|()| c)) {
            Err(fault) => fault.check(),
            Ok(c) => match keys.cached_key(&c.keyid, Some(&c.agent.url)) {
                Some(lookup) => conclude(&c, lookup),
                None => {
                    pending = true;
                    continue;
                }
            },
        };
        if matches!(outcome, SignatureCheck::Valid { .. }) {
            return Some(outcome);
        }
        if !pending {
            first.get_or_insert(outcome);
        }
    }
    if pending {
        None
    } else {
        Some(first.unwrap_or(SignatureCheck::Absent))
    }
}

/// Why the request's signature fields cannot be parsed, if they cannot:
/// `Signature-Input` is not an RFC 9651 dictionary (or is longer than
/// [`MAX_FIELD_BYTES`]); or it has a `tag="web-bot-auth"` member whose
/// covered components are not strings or whose `keyid`, `alg`, `nonce`,
/// `tag` (strings) or `created`, `expires` (integers) have another type
/// (RFC 9421 section 2.3), and `Signature` is missing, not a dictionary,
/// or has no Byte Sequence for that label (RFC 9421 section 4.2).
///
/// A request with such fields is malformed rather than wrongly signed
/// (draft-meunier-web-bot-auth-architecture: a verifier answers 400 to
/// headers it cannot parse); what it gets is the policy's call
/// (`crawlgate_policy::verification::refuses_unparsable_signature`). A
/// `Signature` without `Signature-Input` is not judged: it may be another
/// scheme's (draft-cavage-http-signatures).
pub fn unparsable(headers: &http::HeaderMap) -> Option<String> {
    let input = match field(headers, "signature-input") {
        Err(e) => return Some(e),
        Ok(None) => return None,
        Ok(Some(v)) => v,
    };
    let input: Dictionary = match Parser::new(&input).parse() {
        Ok(d) => d,
        Err(e) => return Some(format!("Signature-Input is not a structured-field dictionary: {e}")),
    };
    let tagged: Vec<(String, sfv::InnerList)> = input
        .into_iter()
        .filter_map(|(label, entry)| match entry {
            ListEntry::InnerList(list)
                if list.params.get("tag").and_then(BareItem::as_string).is_some_and(|t| t.as_str() == TAG) =>
            {
                Some((label.as_str().to_owned(), list))
            }
            _ => None,
        })
        .collect();
    if tagged.is_empty() {
        return None;
    }
    for (label, list) in &tagged {
        if list.items.iter().any(|i| i.bare_item.as_string().is_none()) {
            return Some(format!("Signature-Input {label}: a covered component is not a string"));
        }
        for (name, want_string) in
            [("keyid", true), ("alg", true), ("nonce", true), ("created", false), ("expires", false)]
        {
            let ok = match list.params.get(name) {
                None => true,
                Some(v) if want_string => v.as_string().is_some(),
                Some(v) => v.as_integer().is_some(),
            };
            if !ok {
                let kind = if want_string { "a string" } else { "an integer" };
                return Some(format!("Signature-Input {label}: {name} is not {kind}"));
            }
        }
    }
    let signatures = match field(headers, "signature") {
        Err(e) => return Some(e),
        Ok(None) => {
            return Some("Signature-Input has a web-bot-auth signature but there is no Signature header".into())
        }
        Ok(Some(v)) => v,
    };
    let signatures: Dictionary = match Parser::new(&signatures).parse() {
        Ok(d) => d,
        Err(e) => return Some(format!("Signature is not a structured-field dictionary: {e}")),
    };
    for (label, _) in &tagged {
        match signatures.get(label.as_str()) {
            Some(ListEntry::Item(Item { bare_item: BareItem::ByteSequence(_), .. })) => {}
            Some(_) => return Some(format!("Signature {label} is not a byte sequence")),
            None => return Some(format!("Signature has no member {label}")),
        }
    }
    match field(headers, "signature-agent") {
        Err(e) => Some(e),
        Ok(Some(v)) => SignatureAgent::parse(&v).err(),
        Ok(None) => None,
    }
}

/// One `tag="web-bot-auth"` signature, parsed and checked for shape.
#[derive(Debug)]
struct Candidate {
    label: String,
    keyid: String,
    created: i64,
    expires: i64,
    agent: AgentChoice,
    signature: Signature,
    /// The signature base for each scheme the request may have had.
    bases: Vec<Vec<u8>>,
    /// The covered components' names.
    covered: Vec<String>,
}

/// The request's Web Bot Auth signatures in `Signature-Input` order: `Err`
/// for a request whose signature fields cannot be read at all, an error per
/// candidate for one that is malformed.
fn candidates(req: &SignedRequest<'_>, keys: &Keys) -> Result<Vec<Result<Candidate, Fault>>, String> {
    let Some(input) = field(req.headers, "signature-input")? else {
        return Ok(Vec::new());
    };
    let input: Dictionary = Parser::new(&input)
        .parse()
        .map_err(|e| format!("Signature-Input is not a structured-field dictionary: {e}"))?;
    let tagged: Vec<(String, Covered)> = input
        .into_iter()
        .filter_map(|(label, entry)| match entry {
            ListEntry::InnerList(list)
                if list.params.get("tag").and_then(BareItem::as_string).is_some_and(|t| t.as_str() == TAG) =>
            {
                Some((label.as_str().to_owned(), Covered { items: list.items, params: list.params }))
            }
            _ => None,
        })
        .take(MAX_CANDIDATES)
        .collect();
    if tagged.is_empty() {
        return Ok(Vec::new());
    }
    let signatures = signature_dictionary(req)?;
    let agent = match field(req.headers, "signature-agent")? {
        Some(v) => Some(SignatureAgent::parse(&v)?),
        None => None,
    };
    Ok(tagged
        .into_iter()
        .map(|(label, covered)| {
            candidate(req, keys, label, covered, &signatures, agent.as_ref()).map_err(Fault::Invalid)
        })
        .collect())
}

fn candidate(
    req: &SignedRequest<'_>,
    keys: &Keys,
    label: String,
    covered: Covered,
    signatures: &Dictionary,
    agent: Option<&SignatureAgent>,
) -> Result<Candidate, String> {
    let signature = signature_member(signatures, &label)?;
    let param = |name: &str| covered.params.get(name);
    let keyid = match param("keyid") {
        Some(BareItem::String(s)) => s.as_str().to_owned(),
        Some(_) => return Err(format!("signature {label}: keyid is not a string")),
        None => return Err(format!("signature {label}: no keyid")),
    };
    let int = |name: &str| match param(name) {
        Some(BareItem::Integer(i)) => Ok(i64::from(*i)),
        Some(_) => Err(format!("signature {label}: {name} is not an integer")),
        None => Err(format!("signature {label}: no {name}")),
    };
    let created = int("created")?;
    let expires = int("expires")?;
    match param("alg") {
        None => {}
        Some(BareItem::String(s)) if s.as_str() == "ed25519" => {}
        Some(other) => return Err(format!("signature {label}: alg {other:?} is not supported (only ed25519)")),
    }
    // `@target-uri` contains the authority, so it covers it as well
    // (draft-meunier-web-bot-auth-architecture accepts either).
    let names: Vec<&str> = covered.items.iter().filter_map(|i| i.bare_item.as_string().map(|s| s.as_str())).collect();
    if !names.iter().any(|n| *n == "@authority" || *n == "@target-uri") {
        return Err(format!("signature {label}: @authority is not covered"));
    }
    for required in keys.required_components() {
        if !covers(&names, required) {
            return Err(format!("signature {label}: {required} is not covered (required by this site)"));
        }
    }
    // The draft's first verifier rule: the covered authority is this site.
    // Otherwise a signature made for another site (or the crawler's own
    // test server) is valid here too.
    if names.contains(&"@authority") {
        bound_here(keys, &label, req.authority)?;
    }
    if names.contains(&"@target-uri") {
        let absolute = split_target(req.target).ok().and_then(|t| t.scheme.map(|_| t.authority));
        bound_here(keys, &label, absolute.unwrap_or(req.authority))?;
    }
    let bases = bases(req, &covered).map_err(|e| format!("signature {label}: {e}"))?;
    // -01: the keyid is the key's JWK SHA-256 thumbprint (RFC 7638),
    // base64url without padding: 43 characters.
    if keyid.len() != 43 || !keyid.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
        return Err(format!(
            "signature {label}: keyid {keyid:?} is not a JWK SHA-256 thumbprint (RFC 7638; draft-ietf-webbotauth-httpsig-protocol-01)"
        ));
    }
    // -01: a signed request carries Signature-Agent, and each signature
    // covers its own member (`"signature-agent";key="<member>"`).
    let Some(agent) = agent else {
        return Err(format!(
            "signature {label}: the request has no Signature-Agent (draft-ietf-webbotauth-httpsig-protocol-01 requires one)"
        ));
    };
    let Some(item) =
        covered.items.iter().find(|i| i.bare_item.as_string().is_some_and(|s| s.as_str() == "signature-agent"))
    else {
        return Err(format!("signature {label}: the Signature-Agent header is present but not covered"));
    };
    let key = match item.params.get("key") {
        None => None,
        Some(BareItem::String(k)) => Some(k.as_str()),
        Some(_) => return Err(format!("signature {label}: the covered signature-agent's key is not a string")),
    };
    let agent = agent.choose(key, &label)?;
    let scheme = agent.url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
    if !(scheme.as_deref() == Some("https") || (keys.allows_http() && scheme.as_deref() == Some("http"))) {
        return Err(format!("signature {label}: Signature-Agent {:?} is not an https URI", agent.url));
    }
    let covered = names.iter().map(|n| (*n).to_owned()).collect();
    Ok(Candidate { label, keyid, created, expires, agent, signature, bases, covered })
}

/// Whether the covered components `names` cover `required`: `@target-uri`
/// holds the scheme, authority, path and query, `@request-target` the path
/// and query.
fn covers(names: &[&str], required: &str) -> bool {
    names.contains(&required)
        || (names.contains(&"@target-uri") && matches!(required, "@authority" | "@scheme" | "@path" | "@query"))
        || (names.contains(&"@request-target") && matches!(required, "@path" | "@query"))
}

/// `Ok` when `authority` is one of this site's.
fn bound_here(keys: &Keys, label: &str, authority: &str) -> Result<(), String> {
    if keys.authorities().iter().any(|a| authority_matches(a, authority)) {
        return Ok(());
    }
    if keys.authorities().is_empty() {
        return Err(format!(
            "signature {label}: covered @authority {authority:?} cannot be checked: no authority is configured for this site"
        ));
    }
    Err(format!(
        "signature {label}: covered @authority {authority:?} is not this site ({})",
        keys.authorities().join(", ")
    ))
}

/// Whether the request authority `got` names the configured `allowed`
/// (RFC 9110 section 4.2.3): hosts compared ASCII case-insensitively, and
/// ports equal, where an omitted port stands for a default one (80 or 443)
/// on either side.
pub fn authority_matches(allowed: &str, got: &str) -> bool {
    let (ah, ap) = split_authority(allowed);
    let (gh, gp) = split_authority(got);
    if ah.is_empty() || !ah.eq_ignore_ascii_case(gh) {
        return false;
    }
    let default = |p: Option<&str>| p.is_none_or(|p| p == "80" || p == "443");
    match (ap, gp) {
        (Some(a), Some(g)) => a == g,
        (None, p) | (p, None) => default(p),
    }
}

/// `host[:port]`, with an IPv6 host in brackets; a port that is not
/// digits stays in the host (and so never matches).
fn split_authority(a: &str) -> (&str, Option<&str>) {
    let split = match a.rfind(':') {
        Some(i) if !a[i + 1..].is_empty() && a[i + 1..].bytes().all(|b| b.is_ascii_digit()) => {
            let host = &a[..i];
            // A bare IPv6 address has colons of its own.
            if host.contains(':') && !host.ends_with(']') {
                None
            } else {
                Some((host, &a[i + 1..]))
            }
        }
        _ => None,
    };
    match split {
        Some((h, p)) => (h, Some(p.trim_start_matches('0')).map(|p| if p.is_empty() { "0" } else { p })),
        None => (a, None),
    }
}

/// `created` not in the future and `expires` not in the past beyond the
/// allowed skew, `expires` after `created`, and a validity window no longer
/// than `max_validity` (the draft allows up to 24 hours and lets a verifier
/// require much less; a short window bounds how long a captured signature
/// can be replayed elsewhere and how long the replay cache keeps it).
fn check_time(c: &Candidate, keys: &Keys, now: SystemTime) -> Result<(), Fault> {
    let now = unix_seconds(now);
    let skew = secs(keys.max_skew());
    let label = &c.label;
    if c.created > now.saturating_add(skew) {
        return Err(Fault::Invalid(format!(
            "signature {label}: created {} is {} s in the future",
            c.created,
            c.created - now
        )));
    }
    if c.expires <= c.created {
        return Err(Fault::Invalid(format!(
            "signature {label}: expires {} is not after created {}",
            c.expires, c.created
        )));
    }
    if c.expires.saturating_add(skew) < now {
        return Err(Fault::Expired(format!("signature {label}: expired at {} ({} s ago)", c.expires, now - c.expires)));
    }
    let window = c.expires.saturating_sub(c.created);
    if window > secs(keys.max_validity()) {
        return Err(Fault::Invalid(format!(
            "signature {label}: valid for {window} s, longer than the {} s allowed",
            keys.max_validity().as_secs()
        )));
    }
    Ok(())
}

/// Why a candidate cannot verify, before its key is looked up.
#[derive(Debug)]
enum Fault {
    /// Malformed, not bound here, or outside its window but not expired.
    Invalid(String),
    /// Its `expires` has passed.
    Expired(String),
}

impl Fault {
    fn check(self) -> SignatureCheck {
        match self {
            Fault::Invalid(reason) => SignatureCheck::Invalid { reason },
            Fault::Expired(reason) => SignatureCheck::Expired { reason },
        }
    }
}

fn conclude(c: &Candidate, lookup: KeyLookup) -> SignatureCheck {
    match lookup {
        KeyLookup::Unknown(reason) => SignatureCheck::UnknownKey { reason },
        KeyLookup::Found(k) => {
            if c.bases.iter().any(|b| k.key.verify_strict(b, &c.signature).is_ok()) {
                SignatureCheck::Valid { keyid: c.keyid.clone(), token: k.token, agent: Some(c.agent.url.clone()) }
            } else {
                SignatureCheck::Invalid {
                    reason: format!("signature {} does not verify with key {}", c.label, c.keyid),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verify_is_send_for_the_proxy() {
        fn send<T: Send>(_: &T) {}
        let keys = Keys::new(crate::keys::KeysConfig::default()).unwrap_or_else(|e| panic!("{e}"));
        let h = http::HeaderMap::new();
        let req = SignedRequest { method: "GET", authority: "a.example", target: "/", headers: &h };
        let fut = verify(&keys, &req, SystemTime::now());
        send(&fut);
    }

    #[test]
    fn authorities_match_case_insensitively_with_default_ports() {
        let rows = [
            ("www.example.com", "www.example.com", true),
            ("www.example.com", "WWW.Example.COM", true),
            ("www.example.com", "www.example.com:443", true),
            ("www.example.com", "www.example.com:80", true),
            ("www.example.com:443", "www.example.com", true),
            ("www.example.com:8443", "www.example.com:8443", true),
            ("www.example.com:8443", "www.example.com:08443", true),
            ("www.example.com", "www.example.com:8443", false),
            ("www.example.com:8443", "www.example.com", false),
            ("www.example.com:8443", "www.example.com:443", false),
            ("www.example.com", "example.com", false),
            ("www.example.com", "www.example.com.evil", false),
            ("www.example.com", "www.example.com:", false),
            ("[2001:db8::1]", "[2001:DB8::1]:443", true),
            ("[2001:db8::1]:8080", "[2001:db8::1]", false),
            ("", "", false),
        ];
        for (allowed, got, want) in rows {
            assert_eq!(authority_matches(allowed, got), want, "{allowed:?} {got:?}");
        }
    }
}
