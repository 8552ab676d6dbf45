//! What a key directory holds beyond its keys: the Signature Agent Card
//! members that bind a key to a robots.txt product token
//! (draft-meunier-webbotauth-registry) and the directory's own response
//! signature (draft-meunier-http-message-signatures-directory,
//! `tag="http-message-signatures-directory"`). How it is fetched safely
//! (no private, loopback or link-local address for a client-chosen
//! `Signature-Agent`) is `crawlgate_outbound`'s, driven by [`crate::keys`].
//!
//! A card's `client_id` (draft-meunier-webbotauth-registry section 3.1.1)
//! must be the URL the card was fetched from, compared as simple strings;
//! crawlgate fetches cards from the `Signature-Agent`'s well-known
//! directory URL (it does not resolve `type=cimd` members, section 4.5), so
//! a card there either carries that URL as its `client_id` or none.

use std::collections::HashMap;
use std::sync::Arc;

use crawlgate_outbound::jwk::parse_ed25519_jwk;
use crawlgate_outbound::key_set::{self, Overflow};
use ed25519_dalek::{Signature, VerifyingKey};
use sfv::{BareItem, Dictionary, FieldType, Item, List, ListEntry, Parser};

/// The `tag` of a directory's response signature.
pub const DIRECTORY_TAG: &str = "http-message-signatures-directory";

/// At most this many keys are read from one directory; a larger one is
/// refused whole ([`Overflow::Refuse`]).
pub const MAX_DIRECTORY_KEYS: usize = 64;

/// The Signature Agent Card members crawlgate uses
/// (draft-meunier-webbotauth-registry): read from the card's
/// `web_bot_auth` object, else from its top level. In a directory that
/// lists its keys, a key's own JWK members win over the card's (one
/// document, one publisher); the keys of a `jwks_uri` JWKS take the card's
/// members and cannot widen them ([`parse_card_jwks`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Card {
    /// `rfc9309-product-token`: the robots.txt token the key speaks for.
    pub token: Option<String>,
    /// `expected-user-agent`: the User-Agent its requests carry.
    pub expected_user_agent: Option<String>,
    /// `ips_uri`: where the agent publishes its addresses.
    pub ips_uri: Option<String>,
}

impl Card {
    fn from_json(v: &serde_json::Value) -> Card {
        Card {
            token: member(v, "rfc9309-product-token").filter(|t| valid_token(t)),
            expected_user_agent: member(v, "expected-user-agent"),
            ips_uri: member(v, "ips_uri"),
        }
    }

    /// `self` with the members `over` sets replacing its own.
    fn overlaid(&self, over: &Card) -> Card {
        Card {
            token: over.token.clone().or_else(|| self.token.clone()),
            expected_user_agent: over.expected_user_agent.clone().or_else(|| self.expected_user_agent.clone()),
            ips_uri: over.ips_uri.clone().or_else(|| self.ips_uri.clone()),
        }
    }

    fn is_empty(&self) -> bool {
        self.token.is_none() && self.expected_user_agent.is_none() && self.ips_uri.is_none()
    }
}

/// The string member `name` of a card or key: in its `web_bot_auth` object,
/// else at its top level; trimmed, and absent when empty.
fn member(v: &serde_json::Value, name: &str) -> Option<String> {
    [v.get("web_bot_auth"), Some(v)]
        .iter()
        .flatten()
        .find_map(|s| s.get(name).and_then(serde_json::Value::as_str))
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

/// An RFC 9309 product token: `[a-zA-Z_-]+`.
fn valid_token(t: &str) -> bool {
    !t.is_empty() && t.bytes().all(|b| b.is_ascii_alphabetic() || b == b'_' || b == b'-')
}

/// One key of a directory, with the card that describes it, if any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirectoryKey {
    /// The key.
    pub key: VerifyingKey,
    /// The card members that apply to it.
    pub card: Option<Arc<Card>>,
}

/// Reads a key directory or a Signature Agent Card: a JWKS (RFC 7517
/// section 5, `keys`) or a card with `jwks.keys` or `keys`; its Ed25519
/// keys by thumbprint, each with the card members that apply to it. Keys
/// of other types are skipped; more than [`MAX_DIRECTORY_KEYS`] keys is an
/// error. A card that names its keys by `jwks_uri` only is an error here:
/// [`read_directory_document`] says where to fetch them.
pub fn parse_directory_document(body: &[u8]) -> Result<HashMap<String, DirectoryKey>, String> {
    match read_directory_document(body, None)? {
        DirectoryDocument::Keys(keys) => Ok(keys),
        DirectoryDocument::JwksUri { uri, .. } => {
            Err(format!("the directory names its keys by jwks_uri {uri:?} and lists none"))
        }
    }
}

/// What a key directory document holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DirectoryDocument {
    /// Its keys, by thumbprint.
    Keys(HashMap<String, DirectoryKey>),
    /// A Signature Agent Card that lists no keys and names a JWKS by
    /// `jwks_uri` (draft-meunier-webbotauth-registry; RFC 7591 section
    /// 2): its keys are there, described by the card's members.
    JwksUri {
        /// The `jwks_uri` as written (absolute or relative to the card).
        uri: String,
        /// The card's members, applied to the keys fetched.
        card: Card,
    },
}

/// Reads a key directory or a Signature Agent Card: its keys when it lists
/// them (`keys` or `jwks.keys`), else its `jwks_uri` (top level or in
/// `web_bot_auth`). A card that lists keys is read for those alone.
///
/// `fetched_from` is the URL the document was fetched from: a card that
/// carries a `client_id` is refused unless it is that URL, compared as
/// simple strings (draft-meunier-webbotauth-registry section 3.1.1, RFC
/// 3986 section 6.2.1), so a card cannot claim another agent's identity. A
/// card without `client_id` was not retrieved through one and is read.
/// `None` (a document not fetched, e.g. a test's) skips that check.
pub fn read_directory_document(body: &[u8], fetched_from: Option<&str>) -> Result<DirectoryDocument, String> {
    let doc: serde_json::Value = serde_json::from_slice(body).map_err(|e| format!("the directory is not JSON: {e}"))?;
    if !doc.is_object() {
        return Err("the directory is not a JSON object".into());
    }
    if let (Some(url), Some(id)) = (fetched_from, doc.get("client_id")) {
        if id.as_str() != Some(url) {
            return Err(format!(
                "the card's client_id {id} is not the URL it was fetched from (draft-meunier-webbotauth-registry section 3.1.1)"
            ));
        }
    }
    let card = Card::from_json(&doc);
    let uri = member(&doc, "jwks_uri");
    if uri.is_some() && doc.get("jwks").is_some() {
        return Err("the card names both jwks and jwks_uri (RFC 7591 section 2 allows one)".into());
    }
    let listed = doc.get("keys").or_else(|| doc.get("jwks").and_then(|j| j.get("keys")));
    match (listed, uri) {
        (None, Some(uri)) => Ok(DirectoryDocument::JwksUri { uri, card }),
        _ => keys_with_card(listed, &card).map(DirectoryDocument::Keys),
    }
}

/// Reads the JWKS a card's `jwks_uri` names: its Ed25519 keys, each with
/// `card`'s members. The JWKS is another resource, possibly on another
/// host (draft-meunier-webbotauth-registry section 3.1.2 separates key
/// material from metadata), so it cannot widen the card: a key that names
/// an `rfc9309-product-token` other than the card's (or any, when the card
/// names none) is refused, and a key's `expected-user-agent` or `ips_uri`
/// is ignored. A JWKS that names a further `jwks_uri` instead of keys is
/// refused (one indirection only).
pub fn parse_card_jwks(body: &[u8], card: &Card) -> Result<HashMap<String, DirectoryKey>, String> {
    let doc: serde_json::Value = serde_json::from_slice(body).map_err(|e| format!("the JWKS is not JSON: {e}"))?;
    if !doc.is_object() {
        return Err("the JWKS is not a JSON object".into());
    }
    let shared = (!card.is_empty()).then(|| Arc::new(card.clone()));
    read_keys(doc.get("keys"), |k| match member(k, "rfc9309-product-token") {
        Some(t) if !card.token.as_deref().is_some_and(|c| c.eq_ignore_ascii_case(&t)) => {
            tracing::info!(
                token = t,
                card_token = card.token.as_deref().unwrap_or(""),
                "A jwks_uri key names a product token its Signature Agent Card does not; the key is refused"
            );
            Err(())
        }
        _ => Ok(shared.clone()),
    })
}

/// The keys of a directory that lists them, each with `card`'s members
/// under its own.
fn keys_with_card(keys: Option<&serde_json::Value>, card: &Card) -> Result<HashMap<String, DirectoryKey>, String> {
    read_keys(keys, |k| {
        let own = card.overlaid(&Card::from_json(k));
        Ok((!own.is_empty()).then(|| Arc::new(own)))
    })
}

/// The Ed25519 keys of a `keys` array (at most [`MAX_DIRECTORY_KEYS`]),
/// each with the card `card_for` gives it; a key it refuses is left out.
fn read_keys(
    keys: Option<&serde_json::Value>,
    card_for: impl Fn(&serde_json::Value) -> Result<Option<Arc<Card>>, ()>,
) -> Result<HashMap<String, DirectoryKey>, String> {
    let keys =
        key_set::members(keys, MAX_DIRECTORY_KEYS, Overflow::Refuse).map_err(|e| format!("the directory {e}"))?;
    let mut out = HashMap::new();
    for k in keys.read {
        let Ok(parsed) = parse_ed25519_jwk(k) else { continue };
        if let Ok(card) = card_for(k) {
            out.insert(parsed.thumbprint, DirectoryKey { key: parsed.key, card });
        }
    }
    Ok(out)
}

/// The thumbprints of the Ed25519 keys of a directory whose `kid` is set
/// and is not their JWK SHA-256 thumbprint: draft-ietf-webbotauth-httpsig-protocol-01
/// says a well-known directory's `kid` MUST be the thumbprint, so such a
/// key is not one the directory may vouch for.
pub fn kid_mismatches(body: &[u8]) -> Vec<String> {
    let Ok(doc) = serde_json::from_slice::<serde_json::Value>(body) else { return Vec::new() };
    let listed = doc.get("keys").or_else(|| doc.get("jwks").and_then(|j| j.get("keys")));
    let Some(keys) = listed.and_then(serde_json::Value::as_array) else { return Vec::new() };
    keys.iter()
        .filter_map(|k| parse_ed25519_jwk(k).ok())
        .filter(|p| p.kid.as_ref().is_some_and(|kid| *kid != p.thumbprint))
        .map(|p| p.thumbprint)
        .collect()
}

/// The outcome of checking a directory response's own signatures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DirectorySignature {
    /// The response carries no `tag="http-message-signatures-directory"`
    /// signature.
    Unsigned,
    /// One verified with a key the directory lists.
    Valid {
        /// The key's thumbprint.
        keyid: String,
    },
    /// Signed, and no signature verified: the directory is not trusted.
    Invalid {
        /// Why.
        reason: String,
    },
}

/// Checks the response signatures of a directory fetched from `authority`
/// (draft-meunier-http-message-signatures-directory: the response is
/// signed, per RFC 9421, by keys it lists, covering at least
/// `"@authority";req`, with `tag="http-message-signatures-directory"`)
/// at Unix second `now`, allowing `skew` seconds on `created` and
/// `expires`.
pub fn verify_directory_response(
    headers: &http::HeaderMap,
    authority: &str,
    keys: &HashMap<String, DirectoryKey>,
    now: i64,
    skew: i64,
) -> DirectorySignature {
    let joined = |name: &str| {
        let v: Vec<&[u8]> = headers.get_all(name).iter().map(|v| v.as_bytes().trim_ascii()).collect();
        (!v.is_empty()).then(|| v.join(&b", "[..]))
    };
    let Some(input) = joined("signature-input") else { return DirectorySignature::Unsigned };
    let invalid = |reason: String| DirectorySignature::Invalid { reason };
    let Ok(input) = Parser::new(&input).parse::<Dictionary>() else {
        return invalid("Signature-Input is not a structured-field dictionary".into());
    };
    let tagged: Vec<(String, sfv::InnerList)> = input
        .into_iter()
        .filter_map(|(label, e)| match e {
            ListEntry::InnerList(l)
                if l.params.get("tag").and_then(BareItem::as_string).is_some_and(|t| t.as_str() == DIRECTORY_TAG) =>
            {
                Some((label.as_str().to_owned(), l))
            }
            _ => None,
        })
        .take(MAX_DIRECTORY_KEYS)
        .collect();
    if tagged.is_empty() {
        return DirectorySignature::Unsigned;
    }
    let signatures = joined("signature").and_then(|s| Parser::new(&s).parse::<Dictionary>().ok());
    let Some(signatures) = signatures else {
        return invalid("the response is signed but its Signature field is missing or malformed".into());
    };
    let mut first_error = None;
    for (label, list) in tagged {
        match check_one(&label, &list, &signatures, authority, keys, now, skew) {
            Ok(keyid) => return DirectorySignature::Valid { keyid },
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    invalid(first_error.unwrap_or_default())
}

fn check_one(
    label: &str,
    list: &sfv::InnerList,
    signatures: &Dictionary,
    authority: &str,
    keys: &HashMap<String, DirectoryKey>,
    now: i64,
    skew: i64,
) -> Result<String, String> {
    let keyid = list
        .params
        .get("keyid")
        .and_then(BareItem::as_string)
        .ok_or_else(|| format!("directory signature {label}: no keyid"))?
        .as_str()
        .to_owned();
    let key = keys.get(&keyid).ok_or_else(|| format!("directory signature {label}: keyid {keyid:?} is not listed"))?;
    let int = |name: &str| list.params.get(name).and_then(BareItem::as_integer).map(i64::from);
    if let Some(created) = int("created") {
        if created > now.saturating_add(skew) {
            return Err(format!("directory signature {label}: created in the future"));
        }
    }
    if let Some(expires) = int("expires") {
        if expires.saturating_add(skew) < now {
            return Err(format!("directory signature {label}: expired"));
        }
    }
    let mut base = Vec::new();
    let mut covers_authority = false;
    for item in &list.items {
        let name = item.bare_item.as_string().map(|s| s.as_str()).unwrap_or_default();
        let req = item.params.get("req").is_some_and(|v| v == &BareItem::Boolean(true));
        if name == "@authority" && req && item.params.len() == 1 {
            covers_authority = true;
            base.extend_from_slice(item.serialize().as_bytes());
            base.extend_from_slice(b": ");
            base.extend_from_slice(authority.to_ascii_lowercase().as_bytes());
            base.push(b'\n');
        } else {
            return Err(format!("directory signature {label}: component {} is not supported", item.serialize()));
        }
    }
    if !covers_authority {
        return Err(format!("directory signature {label}: \"@authority\";req is not covered"));
    }
    let params: List = vec![ListEntry::InnerList(list.clone())];
    let params = params.serialize().ok_or_else(|| format!("directory signature {label}: parameters"))?;
    base.extend_from_slice(b"\"@signature-params\": ");
    base.extend_from_slice(params.as_bytes());
    let sig = match signatures.get(label) {
        Some(ListEntry::Item(Item { bare_item: BareItem::ByteSequence(b), .. })) => {
            Signature::from_slice(b).map_err(|_| format!("directory signature {label} is not 64 bytes"))?
        }
        _ => return Err(format!("directory signature {label}: no Signature member")),
    };
    key.key
        .verify_strict(&base, &sig)
        .map(|()| keyid.clone())
        .map_err(|_| format!("directory signature {label} does not verify with key {keyid}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cards_bind_keys_to_tokens() {
        let x = "JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs";
        let id = "poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";
        let card = |body: String| {
            parse_directory_document(body.as_bytes()).unwrap_or_else(|e| panic!("{e}")).remove(id).and_then(|k| k.card)
        };
        // A plain JWKS: no card.
        assert_eq!(card(format!(r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","x":"{x}"}}]}}"#)), None);
        // Card members in the web_bot_auth object, keys in jwks.
        let c = card(format!(
            r#"{{"client_name":"Example","web_bot_auth":{{"rfc9309-product-token":"GPTBot","expected-user-agent":"Mozilla/5.0 GPTBot/1.0","ips_uri":"https://a.example/ips.json"}},"jwks":{{"keys":[{{"kty":"OKP","crv":"Ed25519","x":"{x}"}}]}}}}"#
        ));
        assert_eq!(
            c.as_deref(),
            Some(&Card {
                token: Some("GPTBot".into()),
                expected_user_agent: Some("Mozilla/5.0 GPTBot/1.0".into()),
                ips_uri: Some("https://a.example/ips.json".into())
            })
        );
        // Top-level members, overridden by the key's own.
        let c = card(format!(
            r#"{{"rfc9309-product-token":"GPTBot","keys":[{{"kty":"OKP","crv":"Ed25519","x":"{x}","rfc9309-product-token":"OAI-SearchBot"}}]}}"#
        ));
        assert_eq!(c.and_then(|c| c.token.clone()).as_deref(), Some("OAI-SearchBot"));
        // Not a product token: ignored.
        let c = card(format!(
            r#"{{"rfc9309-product-token":"Bad Bot/1","keys":[{{"kty":"OKP","crv":"Ed25519","x":"{x}"}}]}}"#
        ));
        assert_eq!(c, None);
    }

    /// The keys of a card's `jwks_uri` speak for the card's token or are
    /// refused: a key naming another token (or any, when the card names
    /// none) is left out, and the key's other members do not replace the
    /// card's; in a directory that lists its keys the key's own members win
    /// (`cards_bind_keys_to_tokens`).
    #[test]
    fn jwks_uri_keys_cannot_widen_the_card() {
        let x = "JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs";
        let id = "poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";
        let gptbot = Card {
            token: Some("GPTBot".into()),
            expected_user_agent: Some("GPTBot/1.0".into()),
            ips_uri: Some("https://a.example/ips.json".into()),
        };
        let untokened = Card { token: None, ..gptbot.clone() };
        // (the card, the key's extra members, the card the key gets or
        // None when it is refused)
        let rows: Vec<(&Card, &str, Option<Card>)> = vec![
            (&gptbot, "", Some(gptbot.clone())),
            (&gptbot, r#","rfc9309-product-token":"GPTBot""#, Some(gptbot.clone())),
            (&gptbot, r#","rfc9309-product-token":"gptbot""#, Some(gptbot.clone())),
            (&gptbot, r#","rfc9309-product-token":"OAI-SearchBot""#, None),
            (&gptbot, r#","web_bot_auth":{"rfc9309-product-token":"OAI-SearchBot"}"#, None),
            (&gptbot, r#","rfc9309-product-token":"Bad Bot/1""#, None),
            (
                &gptbot,
                r#","expected-user-agent":"Other/1","ips_uri":"https://evil.example/ips.json""#,
                Some(gptbot.clone()),
            ),
            (&untokened, "", Some(untokened.clone())),
            (&untokened, r#","rfc9309-product-token":"GPTBot""#, None),
        ];
        for (i, (card, extra, want)) in rows.into_iter().enumerate() {
            let body = format!(r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","x":"{x}"{extra}}}]}}"#);
            let keys = parse_card_jwks(body.as_bytes(), card).unwrap_or_else(|e| panic!("row {i}: {e}"));
            let got = keys.get(id).map(|k| k.card.as_deref().cloned().unwrap_or_default());
            assert_eq!(got, want, "row {i}: {extra}");
        }
        // A card with no members gives its keys none.
        let keys = parse_card_jwks(
            format!(r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","x":"{x}"}}]}}"#).as_bytes(),
            &Card::default(),
        );
        assert_eq!(keys.map(|k| k.get(id).map(|k| k.card.clone())), Ok(Some(None)));
    }

    #[test]
    fn too_many_keys_is_refused_whole() {
        let one = r#"{"kty":"OKP","crv":"Ed25519","x":"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs"}"#;
        let body = format!(r#"{{"keys":[{}]}}"#, vec![one; MAX_DIRECTORY_KEYS + 1].join(","));
        assert_eq!(
            parse_directory_document(body.as_bytes()).err().as_deref(),
            Some("the directory lists 65 keys, more than 64")
        );
        let body = format!(r#"{{"keys":[{}]}}"#, vec![one; MAX_DIRECTORY_KEYS].join(","));
        assert!(parse_directory_document(body.as_bytes()).is_ok());
    }
}
