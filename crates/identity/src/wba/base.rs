//! HTTP Message Signatures (RFC 9421) over a request, without any
//! profile: the header fields read as structured fields (RFC 9651, with
//! `sfv`), the signature base rebuilt as section 2.5 describes from the
//! derived components of section 2.2 and the header components of section
//! 2.1, and the plain verification of section 3.2 with Ed25519 (section
//! 3.3.6). What Web Bot Auth asks beyond that (the tag, the time window,
//! the components a site requires, the key) is the parent module's.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use ed25519_dalek::{Signature, VerifyingKey};
use sfv::{BareItem, Dictionary, FieldType, Item, List, ListEntry, Parameters, Parser};

/// The largest `Signature-Input`, `Signature` or `Signature-Agent` value
/// read (all lines together).
pub const MAX_FIELD_BYTES: usize = 16 * 1024;

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

/// The components and parameters of one `Signature-Input` member.
#[derive(Debug)]
pub(crate) struct Covered {
    /// The covered components, in order.
    pub(crate) items: Vec<Item>,
    /// The signature parameters (`keyid`, `created`, `tag`, ...).
    pub(crate) params: Parameters,
}

/// `t` in Unix seconds (negative before 1970).
pub fn unix_seconds(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => secs(d),
        Err(e) => secs(e.duration()).saturating_neg(),
    }
}

/// `d` in whole seconds, saturated.
pub(crate) fn secs(d: Duration) -> i64 {
    i64::try_from(d.as_secs()).unwrap_or(i64::MAX)
}

/// All lines of a header field, trimmed and joined with ", " (RFC 9421
/// section 2.1); `None` when it is absent.
pub(crate) fn field(headers: &http::HeaderMap, name: &str) -> Result<Option<Vec<u8>>, String> {
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

/// The `Signature` field as a dictionary (RFC 9421 section 4.2).
pub(crate) fn signature_dictionary(req: &SignedRequest<'_>) -> Result<Dictionary, String> {
    let value = field(req.headers, "signature")?
        .ok_or("Signature-Input has a web-bot-auth signature but there is no Signature header")?;
    Parser::new(&value).parse().map_err(|e| format!("Signature is not a structured-field dictionary: {e}"))
}

/// The Ed25519 signature under `label` in a `Signature` dictionary.
pub(crate) fn signature_member(signatures: &Dictionary, label: &str) -> Result<Signature, String> {
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
pub(crate) struct Target<'a> {
    /// The scheme, when the target is in absolute form.
    pub(crate) scheme: Option<&'a str>,
    /// The authority, when the target is in absolute form ("" otherwise).
    pub(crate) authority: &'a str,
    /// The path (`/` when empty).
    pub(crate) path: &'a str,
    /// The query, without its `?`.
    pub(crate) query: Option<&'a str>,
}

/// The parts of a request target in origin or absolute form.
pub(crate) fn split_target(target: &str) -> Result<Target<'_>, String> {
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
pub(crate) fn bases(req: &SignedRequest<'_>, covered: &Covered) -> Result<Vec<Vec<u8>>, String> {
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
}
