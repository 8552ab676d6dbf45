//! Web Bot Auth: HTTP Message Signatures (RFC 9421) with the profile of
//! draft-meunier-web-bot-auth-architecture: `Signature`, `Signature-Input`
//! (`tag="web-bot-auth"`, `keyid` = JWK thumbprint per RFC 7638, `created`,
//! `expires`, ed25519) and `Signature-Agent`.
//!
//! The signature base is rebuilt as RFC 9421 section 2.5 describes, from
//! the derived components of section 2.2 and the header components of
//! section 2.1, and checked with Ed25519 (section 3.3.6). The header fields
//! are structured fields (RFC 9651) parsed with `sfv`. Nothing here panics
//! on bad input: every defect is an [`SignatureCheck::Invalid`] with a
//! reason.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use ed25519_dalek::{Signature, VerifyingKey};
use sfv::{BareItem, Dictionary, FieldType, Item, List, ListEntry, Parameters, Parser};

use crate::keys::{KeyLookup, Keys};

/// The `tag` that marks a Web Bot Auth signature.
pub const TAG: &str = "web-bot-auth";

/// The largest `Signature-Input`, `Signature` or `Signature-Agent` value
/// read (all lines together).
pub const MAX_FIELD_BYTES: usize = 16 * 1024;

/// At most this many `tag="web-bot-auth"` signatures of one request are
/// checked.
const MAX_CANDIDATES: usize = 4;

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
            Err(reason) => SignatureCheck::Invalid { reason },
            Ok(c) => {
                let lookup = keys.key(&c.keyid, c.agent.as_deref()).await;
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
            Err(reason) => SignatureCheck::Invalid { reason },
            Ok(c) => match keys.cached_key(&c.keyid, c.agent.as_deref()) {
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
    None
}

/// Checks the RFC 9421 signature under `label` with `key`, without the Web
/// Bot Auth profile (no tag, time or coverage rules): the plain
/// verification of RFC 9421 section 3.2.
pub fn verify_label(req: &SignedRequest<'_>, label: &str, key: &VerifyingKey) -> Result<(), String> {
    let covered = covered_for_label(req, label)?;
    let signature = signature_for_label(req, label)?;
    let bases = bases(req, &covered)?;
    if bases.iter().any(|b| key.verify_strict(b, &signature).is_ok()) {
        Ok(())
    } else {
        Err(format!("signature {label} does not verify"))
    }
}

/// The signature base (RFC 9421 section 2.5) of the signature under `label`,
/// for an `https` request.
pub fn signature_base(req: &SignedRequest<'_>, label: &str) -> Result<Vec<u8>, String> {
    let covered = covered_for_label(req, label)?;
    base(req, &covered, "https")
}

/// One `tag="web-bot-auth"` signature, parsed and checked for shape.
#[derive(Debug)]
struct Candidate {
    label: String,
    keyid: String,
    created: i64,
    expires: i64,
    agent: Option<String>,
    signature: Signature,
    /// The signature base for each scheme the request may have had.
    bases: Vec<Vec<u8>>,
    /// The covered components' names.
    covered: Vec<String>,
}

/// The components and parameters of one `Signature-Input` member.
#[derive(Debug)]
struct Covered {
    items: Vec<Item>,
    params: Parameters,
}

/// The request's Web Bot Auth signatures in `Signature-Input` order: `Err`
/// for a request whose signature fields cannot be read at all, an error per
/// candidate for one that is malformed.
fn candidates(req: &SignedRequest<'_>, keys: &Keys) -> Result<Vec<Result<Candidate, String>>, String> {
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
    let agent_field = field(req.headers, "signature-agent")?;
    Ok(tagged
        .into_iter()
        .map(|(label, covered)| candidate(req, keys, label, covered, &signatures, agent_field.as_deref()))
        .collect())
}

fn candidate(
    req: &SignedRequest<'_>,
    keys: &Keys,
    label: String,
    covered: Covered,
    signatures: &Dictionary,
    agent_field: Option<&[u8]>,
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
    let agent = match agent_field {
        None => None,
        Some(value) => {
            let Some(item) =
                covered.items.iter().find(|i| i.bare_item.as_string().is_some_and(|s| s.as_str() == "signature-agent"))
            else {
                return Err(format!("signature {label}: the Signature-Agent header is present but not covered"));
            };
            let key = item.params.get("key").and_then(BareItem::as_string).map(|s| s.as_str());
            agent_url(value, key, &label)
        }
    };
    let bases = bases(req, &covered).map_err(|e| format!("signature {label}: {e}"))?;
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

/// The `Signature-Agent` URL: the dictionary member the covered component's
/// `key` names, else the member under the signature's label, else the only
/// member; or, from older senders, a plain string item.
fn agent_url(value: &[u8], key: Option<&str>, label: &str) -> Option<String> {
    if let Ok(dict) = Parser::new(value).parse::<Dictionary>() {
        let member = match key {
            Some(k) => dict.get(k),
            None => dict.get(label).or_else(|| if dict.len() == 1 { dict.values().next() } else { None }),
        };
        if let Some(ListEntry::Item(item)) = member {
            return item.bare_item.as_string().map(|s| s.as_str().to_owned());
        }
    }
    if key.is_some() {
        return None;
    }
    let item = Parser::new(value).parse::<Item>().ok()?;
    item.bare_item.as_string().map(|s| s.as_str().to_owned())
}

/// `created` not in the future and `expires` not in the past beyond the
/// allowed skew, `expires` after `created`, and a validity window no longer
/// than `max_validity` (the draft allows up to 24 hours and lets a verifier
/// require much less; a short window bounds how long a captured signature
/// can be replayed elsewhere and how long the replay cache keeps it).
fn check_time(c: &Candidate, keys: &Keys, now: SystemTime) -> Result<(), String> {
    let now = unix_seconds(now);
    let skew = secs(keys.max_skew());
    let label = &c.label;
    if c.created > now.saturating_add(skew) {
        return Err(format!("signature {label}: created {} is {} s in the future", c.created, c.created - now));
    }
    if c.expires <= c.created {
        return Err(format!("signature {label}: expires {} is not after created {}", c.expires, c.created));
    }
    if c.expires.saturating_add(skew) < now {
        return Err(format!("signature {label}: expired at {} ({} s ago)", c.expires, now - c.expires));
    }
    let window = c.expires.saturating_sub(c.created);
    if window > secs(keys.max_validity()) {
        return Err(format!(
            "signature {label}: valid for {window} s, longer than the {} s allowed",
            keys.max_validity().as_secs()
        ));
    }
    Ok(())
}

fn conclude(c: &Candidate, lookup: KeyLookup) -> SignatureCheck {
    match lookup {
        KeyLookup::Unknown(reason) => SignatureCheck::UnknownKey { reason },
        KeyLookup::Found(k) => {
            if c.bases.iter().any(|b| k.key.verify_strict(b, &c.signature).is_ok()) {
                SignatureCheck::Valid { keyid: c.keyid.clone(), token: k.token, agent: c.agent.clone() }
            } else {
                SignatureCheck::Invalid {
                    reason: format!("signature {} does not verify with key {}", c.label, c.keyid),
                }
            }
        }
    }
}

/// `t` in Unix seconds (negative before 1970).
pub fn unix_seconds(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => secs(d),
        Err(e) => secs(e.duration()).saturating_neg(),
    }
}

fn secs(d: Duration) -> i64 {
    i64::try_from(d.as_secs()).unwrap_or(i64::MAX)
}

/// All lines of a header field, trimmed and joined with ", " (RFC 9421
/// section 2.1); `None` when it is absent.
fn field(headers: &http::HeaderMap, name: &str) -> Result<Option<Vec<u8>>, String> {
    let mut lines = headers.get_all(name).iter().peekable();
    if lines.peek().is_none() {
        return Ok(None);
    }
    let mut buf = Vec::new();
    for (i, v) in lines.enumerate() {
        if i > 0 {
            buf.extend_from_slice(b", ");
        }
        buf.extend_from_slice(v.as_bytes().trim_ascii());
        if buf.len() > MAX_FIELD_BYTES {
            return Err(format!("{name} is longer than {MAX_FIELD_BYTES} bytes"));
        }
    }
    Ok(Some(buf))
}

fn signature_dictionary(req: &SignedRequest<'_>) -> Result<Dictionary, String> {
    let value = field(req.headers, "signature")?
        .ok_or("Signature-Input has a web-bot-auth signature but there is no Signature header")?;
    Parser::new(&value).parse().map_err(|e| format!("Signature is not a structured-field dictionary: {e}"))
}

fn signature_member(signatures: &Dictionary, label: &str) -> Result<Signature, String> {
    let bytes = match signatures.get(label) {
        Some(ListEntry::Item(Item { bare_item: BareItem::ByteSequence(b), .. })) => b,
        Some(_) => return Err(format!("Signature {label} is not a byte sequence")),
        None => return Err(format!("Signature has no member {label}")),
    };
    Signature::from_slice(bytes)
        .map_err(|_| format!("Signature {label} is {} bytes, an Ed25519 signature is 64", bytes.len()))
}

fn covered_for_label(req: &SignedRequest<'_>, label: &str) -> Result<Covered, String> {
    let input = field(req.headers, "signature-input")?.ok_or("no Signature-Input")?;
    let mut input: Dictionary = Parser::new(&input)
        .parse()
        .map_err(|e| format!("Signature-Input is not a structured-field dictionary: {e}"))?;
    match input.shift_remove(label) {
        Some(ListEntry::InnerList(list)) => Ok(Covered { items: list.items, params: list.params }),
        Some(ListEntry::Item(_)) => Err(format!("Signature-Input {label} is not an inner list")),
        None => Err(format!("Signature-Input has no member {label}")),
    }
}

fn signature_for_label(req: &SignedRequest<'_>, label: &str) -> Result<Signature, String> {
    signature_member(&signature_dictionary(req)?, label)
}

/// The parts of the request target.
struct Target<'a> {
    /// The scheme, when the target is in absolute form.
    scheme: Option<&'a str>,
    /// The authority, when the target is in absolute form ("" otherwise).
    authority: &'a str,
    path: &'a str,
    query: Option<&'a str>,
}

fn split_target(target: &str) -> Result<Target<'_>, String> {
    let (scheme, rest) = if let Some(r) = target.strip_prefix("https://") {
        (Some("https"), r)
    } else if let Some(r) = target.strip_prefix("http://") {
        (Some("http"), r)
    } else {
        (None, target)
    };
    let authority = match scheme {
        Some(_) => rest.find(['/', '?']).map_or(rest, |i| &rest[..i]),
        None => "",
    };
    let origin_form = match scheme {
        Some(_) => rest.find(['/', '?']).map_or("", |i| &rest[i..]),
        None if target.starts_with('/') => target,
        None => return Err(format!("request target {target:?} is not in origin or absolute form")),
    };
    let (path, query) = match origin_form.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (origin_form, None),
    };
    Ok(Target { scheme, authority, path: if path.is_empty() { "/" } else { path }, query })
}

/// The signature base for each scheme the request may have had: the target
/// names it in absolute form; otherwise, when `@scheme` or `@target-uri` is
/// covered, `https` and then `http`.
fn bases(req: &SignedRequest<'_>, covered: &Covered) -> Result<Vec<Vec<u8>>, String> {
    let scheme_dependent = covered
        .items
        .iter()
        .any(|i| i.bare_item.as_string().is_some_and(|s| matches!(s.as_str(), "@scheme" | "@target-uri")));
    let explicit = split_target(req.target).ok().and_then(|t| t.scheme);
    match explicit {
        Some(s) => Ok(vec![base(req, covered, s)?]),
        None if scheme_dependent => Ok(vec![base(req, covered, "https")?, base(req, covered, "http")?]),
        None => Ok(vec![base(req, covered, "https")?]),
    }
}

/// The signature base of RFC 9421 section 2.5: one line per covered
/// component, then the `@signature-params` line.
fn base(req: &SignedRequest<'_>, covered: &Covered, scheme: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(256);
    let mut seen = std::collections::HashSet::with_capacity(covered.items.len());
    for item in &covered.items {
        let name = item
            .bare_item
            .as_string()
            .ok_or_else(|| format!("covered component {:?} is not a string", item.bare_item))?;
        let id = item.serialize();
        let value = component_value(req, name.as_str(), &item.params, scheme)?;
        out.extend_from_slice(id.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(&value);
        out.push(b'\n');
        if !seen.insert(id) {
            return Err(format!("component {} is covered twice", item.serialize()));
        }
    }
    let params_line: List =
        vec![ListEntry::InnerList(sfv::InnerList::with_params(covered.items.clone(), covered.params.clone()))];
    let params_line = params_line.serialize().ok_or("the signature parameters do not serialize")?;
    out.extend_from_slice(b"\"@signature-params\": ");
    out.extend_from_slice(params_line.as_bytes());
    Ok(out)
}

fn component_value(req: &SignedRequest<'_>, name: &str, params: &Parameters, scheme: &str) -> Result<Vec<u8>, String> {
    if let Some(derived) = name.strip_prefix('@') {
        let allowed =
            if derived == "query-param" { params.keys().all(|k| k.as_str() == "name") } else { params.is_empty() };
        if !allowed {
            return Err(format!("component {name} has parameters this verifier does not support"));
        }
        let target = || split_target(req.target);
        let value = match derived {
            "method" => req.method.to_owned(),
            "authority" => {
                if req.authority.is_empty() {
                    return Err("@authority is covered but the request has no authority".into());
                }
                req.authority.to_ascii_lowercase()
            }
            "scheme" => scheme.to_owned(),
            "target-uri" => match target()?.scheme {
                Some(_) => req.target.to_owned(),
                None => format!("{scheme}://{}{}", req.authority.to_ascii_lowercase(), req.target),
            },
            "request-target" => req.target.to_owned(),
            "path" => target()?.path.to_owned(),
            "query" => format!("?{}", target()?.query.unwrap_or("")),
            "query-param" => query_param(target()?.query, params)?,
            "signature-params" => return Err("@signature-params must not be a covered component".into()),
            "status" => return Err("@status is a response component".into()),
            _ => return Err(format!("unknown derived component {name}")),
        };
        return Ok(value.into_bytes());
    }
    if name.is_empty() || name.bytes().any(|b| b.is_ascii_uppercase() || !b.is_ascii_graphic()) {
        return Err(format!("component name {name:?} is not a lower-case field name"));
    }
    header_value(req.headers, name, params)
}

/// A header component's value (RFC 9421 section 2.1), with the `sf`, `key`
/// and `bs` parameters of sections 2.1.1 to 2.1.3.
fn header_value(headers: &http::HeaderMap, name: &str, params: &Parameters) -> Result<Vec<u8>, String> {
    for k in params.keys() {
        if !matches!(k.as_str(), "sf" | "key" | "bs") {
            return Err(format!("component {name:?} has parameter {:?}, unsupported on a request", k.as_str()));
        }
    }
    if headers.get(name).is_none() {
        return Err(format!("covered header {name:?} is missing"));
    }
    if params.get("bs").is_some() {
        let lines: Vec<String> =
            headers.get_all(name).iter().map(|v| format!(":{}:", STANDARD.encode(v.as_bytes()))).collect();
        return Ok(lines.join(", ").into_bytes());
    }
    let raw = field(headers, name)?.unwrap_or_default();
    if let Some(key) = params.get("key") {
        let key = key.as_string().ok_or_else(|| format!("component {name:?}: key is not a string"))?;
        let dict: Dictionary = Parser::new(&raw)
            .parse()
            .map_err(|e| format!("covered header {name:?} is not a structured-field dictionary: {e}"))?;
        let member = dict
            .get(key.as_str())
            .ok_or_else(|| format!("covered header {name:?} has no member {:?}", key.as_str()))?;
        let one: List = vec![member.clone()];
        return one.serialize().map(String::into_bytes).ok_or_else(|| format!("{name:?} does not serialize"));
    }
    if params.get("sf").is_some() {
        if let Some(s) = Parser::new(&raw).parse::<Dictionary>().ok().and_then(|d| d.serialize()) {
            return Ok(s.into_bytes());
        }
        return Parser::new(&raw)
            .parse::<List>()
            .ok()
            .and_then(|l| l.serialize())
            .map(String::into_bytes)
            .ok_or_else(|| format!("covered header {name:?} is not a structured field"));
    }
    if !raw.is_ascii() {
        return Err(format!("covered header {name:?} has non-ASCII bytes (a signer must use ;bs)"));
    }
    Ok(raw)
}

/// `@query-param` (RFC 9421 section 2.2.8): the named parameter's value,
/// decoded and re-encoded so equivalent spellings compare equal.
fn query_param(query: Option<&str>, params: &Parameters) -> Result<String, String> {
    let name = params.get("name").and_then(BareItem::as_string).ok_or("@query-param needs a string name")?.as_str();
    let mut found = None;
    for pair in query.unwrap_or("").split('&') {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if reencode(k) == name {
            if found.is_some() {
                return Err(format!("@query-param {name:?} occurs more than once"));
            }
            found = Some(reencode(v));
        }
    }
    found.ok_or_else(|| format!("@query-param {name:?} is not in the query"))
}

/// Decodes `application/x-www-form-urlencoded` text and percent-encodes
/// every byte but ALPHA, DIGIT and `*-._`, spaces as `%20`.
fn reencode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => decoded.push(b' '),
            b'%' => match (hex(bytes.get(i + 1)), hex(bytes.get(i + 2))) {
                (Some(h), Some(l)) => {
                    decoded.push((h << 4) | l);
                    i += 2;
                }
                _ => decoded.push(b'%'),
            },
            b => decoded.push(b),
        }
        i += 1;
    }
    let mut out = String::with_capacity(decoded.len());
    for b in decoded {
        if b.is_ascii_alphanumeric() || matches!(b, b'*' | b'-' | b'.' | b'_') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn hex(b: Option<&u8>) -> Option<u8> {
    match b? {
        b @ b'0'..=b'9' => Some(b - b'0'),
        b @ b'a'..=b'f' => Some(b - b'a' + 10),
        b @ b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
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
    fn targets_split_into_path_and_query() {
        let t = split_target("/foo?param=Value&Pet=dog").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((t.scheme, t.path, t.query), (None, "/foo", Some("param=Value&Pet=dog")));
        let t = split_target("https://example.com?x").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((t.scheme, t.path, t.query), (Some("https"), "/", Some("x")));
        assert!(split_target("*").is_err());
    }

    #[test]
    fn query_params_are_reencoded_as_rfc9421_section_2_2_8_shows() {
        let q = Some("var=this%20is%20a%20big%0Avalue&bar=with+plus+whitespace&fa%C3%A7ade%22%3A%20=something");
        let p = |n: &str| {
            let mut ps = Parameters::new();
            ps.insert(
                sfv::KeyRef::constant("name").to_owned(),
                BareItem::String(sfv::String::from_string(n.to_owned()).unwrap_or_else(|(e, _)| panic!("{e}"))),
            );
            ps
        };
        assert_eq!(query_param(q, &p("var")), Ok("this%20is%20a%20big%0Avalue".into()));
        assert_eq!(query_param(q, &p("bar")), Ok("with%20plus%20whitespace".into()));
        assert_eq!(query_param(q, &p("fa%C3%A7ade%22%3A%20")), Ok("something".into()));
        assert!(query_param(q, &p("nope")).is_err());
        assert_eq!(reencode("%zz%4"), "%25zz%254");
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

    #[test]
    fn agent_urls_from_dictionary_or_string() {
        assert_eq!(agent_url(br#"sig1="https://a.example""#, None, "sig1").as_deref(), Some("https://a.example"));
        assert_eq!(
            agent_url(br#"a="https://a.example", b="https://b.example""#, Some("b"), "sig1").as_deref(),
            Some("https://b.example")
        );
        assert_eq!(agent_url(br#"x="https://a.example""#, None, "sig1").as_deref(), Some("https://a.example"));
        assert_eq!(agent_url(br#""https://a.example""#, None, "sig1").as_deref(), Some("https://a.example"));
        assert_eq!(agent_url(b"a=1, b=2", None, "sig1"), None);
        assert_eq!(agent_url(b"\xff", None, "sig1"), None);
    }
}
