//! The `Signature-Agent` field of draft-ietf-webbotauth-httpsig-protocol-01:
//! a structured-field Dictionary (RFC 9651 section 3.2) whose member values
//! are `https` URI Strings, each the URL of a JWKS (RFC 7517 section 5).
//! Each signature covers its own member, `"signature-agent";key="<member>"`
//! (RFC 9421 section 2.1.2), so the URL its key is looked up under is the
//! one the signer vouched for.
//!
//! The forms `-01` removed stay readable, reported as [`Legacy`] so they
//! are counted apart: a bare String field (older senders, read as a
//! one-member dictionary keyed by the signature's label), a member covered
//! without `key` (the whole field signed), and an origin-only value
//! (`"https://chatgpt.com"`, which deployed signers still send and which
//! `-01` would fetch as a JWKS and fail), read as that origin's
//! `/.well-known/http-message-signatures-directory`. A member that carries
//! parameters (`-00`'s `directory`, `jwks_uri`, `cimd` member types) is
//! ignored, as `-01` says a verifier must.
//!
//! Pure: parsing and choosing only. What is fetched, and from where it may
//! be, is [`crate::keys`]'s.

use sfv::{BareItem, Dictionary, Item, ListEntry, Parser};

/// A `Signature-Agent` form `-01` removed, which this verifier still reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Legacy {
    /// The field is a bare String, not a Dictionary.
    BareString,
    /// The signature covers the whole field, not its own member (`key`).
    WholeField,
    /// The member value is an origin only: its well-known key directory is
    /// fetched instead of the URL itself.
    OriginOnly,
}

impl Legacy {
    /// Its name in logs.
    pub const fn as_str(self) -> &'static str {
        match self {
            Legacy::BareString => "bare-string",
            Legacy::WholeField => "whole-field",
            Legacy::OriginOnly => "origin-only",
        }
    }
}

/// One member of the field.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Member {
    key: String,
    /// The URL, or why the member cannot be used.
    url: Result<String, String>,
}

/// A parsed `Signature-Agent` field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignatureAgent {
    members: Vec<Member>,
    /// The field was a bare String (its one member is keyed by the label
    /// of whichever signature asks).
    bare: Option<Result<String, String>>,
}

/// The member a signature chose: its URL and the legacy forms it took.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentChoice {
    /// The member value: the JWKS URL (or, with [`Legacy::OriginOnly`],
    /// the origin whose well-known directory holds the keys).
    pub url: String,
    /// The first legacy form on the way, if any.
    pub legacy: Option<Legacy>,
}

impl SignatureAgent {
    /// Parses the field's value (all lines joined): a Dictionary, else a
    /// bare String Item; `Err` names why it is neither (the request's
    /// headers do not parse: 400).
    pub fn parse(value: &[u8]) -> Result<SignatureAgent, String> {
        if let Ok(dict) = Parser::new(value).parse::<Dictionary>() {
            let members = dict.into_iter().map(|(key, entry)| member(key.as_str(), entry)).collect();
            return Ok(SignatureAgent { members, bare: None });
        }
        match Parser::new(value).parse::<Item>() {
            Ok(item) if item.params.is_empty() => match item.bare_item {
                BareItem::String(s) => {
                    Ok(SignatureAgent { members: Vec::new(), bare: Some(Ok(s.as_str().to_owned())) })
                }
                other => Err(format!("Signature-Agent is neither a dictionary nor a string (found {})", kind(&other))),
            },
            Ok(_) => Err("Signature-Agent is a string with parameters, not a dictionary".into()),
            Err(e) => Err(format!("Signature-Agent is not a structured-field dictionary: {e}")),
        }
    }

    /// The member the signature `label` covers: `covered_key` is the `key`
    /// parameter of its covered `"signature-agent"` component, `None` when
    /// it covers the whole field. `Err` says why the signature names no
    /// usable member (it is then invalid).
    pub fn choose(&self, covered_key: Option<&str>, label: &str) -> Result<AgentChoice, String> {
        let (url, mut legacy) = match (&self.bare, covered_key) {
            // A bare String is a one-member dictionary keyed by the label;
            // a signer of the old form covers it whole.
            (Some(url), None) => (url.clone(), Some(Legacy::BareString)),
            (Some(url), Some(k)) if k == label => (url.clone(), Some(Legacy::BareString)),
            (Some(_), Some(k)) => {
                return Err(format!(
                    "signature {label}: covers Signature-Agent member {k:?}, but the field is a bare string (read as member {label:?})"
                ))
            }
            (None, Some(k)) => match self.members.iter().find(|m| m.key == k) {
                Some(m) => (m.url.clone(), None),
                None => return Err(format!("signature {label}: Signature-Agent has no member {k:?}")),
            },
            (None, None) => {
                let m = self.members.iter().find(|m| m.key == label).or(match self.members.as_slice() {
                    [one] => Some(one),
                    _ => None,
                });
                match m {
                    Some(m) => (m.url.clone(), Some(Legacy::WholeField)),
                    None => {
                        return Err(format!(
                            "signature {label}: covers the whole Signature-Agent, which has no member {label:?} and not exactly one"
                        ))
                    }
                }
            }
        };
        let url = url.map_err(|why| format!("signature {label}: {why}"))?;
        if is_origin_only(&url) {
            legacy.get_or_insert(Legacy::OriginOnly);
        }
        Ok(AgentChoice { url, legacy })
    }
}

fn member(key: &str, entry: ListEntry) -> Member {
    let url = match entry {
        ListEntry::InnerList(_) => Err(format!("Signature-Agent member {key:?} is an inner list, not a URI string")),
        // -01: "a verifier MUST ignore a member that carries parameters".
        ListEntry::Item(item) if !item.params.is_empty() => {
            let names: Vec<&str> = item.params.keys().map(|k| k.as_str()).collect();
            tracing::debug!(member = key, parameters = ?names, "Signature-Agent member with parameters ignored");
            Err(format!(
                "Signature-Agent member {key:?} has parameters ({}), a -00 form draft-ietf-webbotauth-httpsig-protocol-01 says to ignore",
                names.join(", ")
            ))
        }
        ListEntry::Item(item) => match item.bare_item {
            BareItem::String(s) => Ok(s.as_str().to_owned()),
            other => Err(format!("Signature-Agent member {key:?} is not a string (found {})", kind(&other))),
        },
    };
    Member { key: key.to_owned(), url }
}

/// What kind of item `b` is, for an error message.
fn kind(b: &BareItem) -> &'static str {
    match b {
        BareItem::Integer(_) => "an integer",
        BareItem::Decimal(_) => "a decimal",
        BareItem::String(_) => "a string",
        BareItem::ByteSequence(_) => "a byte sequence",
        BareItem::Boolean(_) => "a boolean",
        BareItem::Token(_) => "a token",
        _ => "another type",
    }
}

/// Whether `url` names an origin only (`https://host[:port]`, with at most
/// a `/` path, no query): the legacy form read as the origin's well-known
/// directory.
pub fn is_origin_only(url: &str) -> bool {
    let Some(rest) = url.split_once("://").map(|(_, r)| r) else { return false };
    match rest.find(['/', '?', '#']) {
        None => true,
        Some(i) => &rest[i..] == "/",
    }
}

/// The identifier of a fetched JWKS URL (draft-ietf-webbotauth-httpsig-protocol-01):
/// the URL without its query and fragment, normalised per RFC 3986
/// sections 6.2.2 (case: scheme and host lower-cased, percent-encodings
/// upper-cased; percent-encoded unreserved characters decoded; dot
/// segments removed) and 6.2.3 (the scheme's default port dropped, an
/// empty path as `/`). Keys are looked up by (identifier, key id).
pub fn identifier(url: &str) -> Result<String, String> {
    let mut u = reqwest::Url::parse(url).map_err(|e| format!("{url:?} is not a URL: {e}"))?;
    u.set_query(None);
    u.set_fragment(None);
    // `Url` already lower-cases the scheme and host, drops the default
    // port, removes dot segments and gives an empty path as `/`.
    let path = normalise_percent(u.path());
    u.set_path(&path);
    Ok(u.to_string())
}

/// Upper-cases the hex of every percent-encoding and decodes those of
/// unreserved characters (RFC 3986 sections 2.3 and 6.2.2.2).
fn normalise_percent(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: Option<&u8>| c.and_then(|c| char::from(*c).to_digit(16));
        match (b[i], hex(b.get(i + 1)), hex(b.get(i + 2))) {
            (b'%', Some(h), Some(l)) => {
                let v = u8::try_from(h * 16 + l).unwrap_or(0);
                if v.is_ascii_alphanumeric() || matches!(v, b'-' | b'.' | b'_' | b'~') {
                    out.push(char::from(v));
                } else {
                    out.push_str(&format!("%{v:02X}"));
                }
                i += 3;
            }
            _ => {
                // `s` is a URL path: ASCII; a stray byte is kept as is.
                out.push(char::from(b[i]));
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choose(value: &str, key: Option<&str>, label: &str) -> Result<AgentChoice, String> {
        SignatureAgent::parse(value.as_bytes())?.choose(key, label)
    }

    fn ok(url: &str, legacy: Option<Legacy>) -> Result<AgentChoice, String> {
        Ok(AgentChoice { url: url.into(), legacy })
    }

    #[test]
    fn dictionary_members_are_chosen_by_the_covered_key() {
        let v = r#"a1="https://a.example/jwks.json", b2="https://b.example/keys""#;
        assert_eq!(choose(v, Some("b2"), "sig1"), ok("https://b.example/keys", None));
        assert_eq!(choose(v, Some("a1"), "sig2"), ok("https://a.example/jwks.json", None));
        assert_eq!(choose(v, Some("zz"), "sig1"), Err("signature sig1: Signature-Agent has no member \"zz\"".into()));
    }

    #[test]
    fn a_member_with_parameters_is_ignored() {
        let v = r#"sig1="https://a.example";type=directory, sig2="https://b.example/jwks""#;
        assert_eq!(
            choose(v, Some("sig1"), "sig1"),
            Err("signature sig1: Signature-Agent member \"sig1\" has parameters (type), a -00 form draft-ietf-webbotauth-httpsig-protocol-01 says to ignore".into())
        );
        assert_eq!(choose(v, Some("sig2"), "sig2"), ok("https://b.example/jwks", None));
    }

    #[test]
    fn members_that_are_not_strings_are_unusable() {
        assert_eq!(
            choose("sig1=1", Some("sig1"), "sig1"),
            Err("signature sig1: Signature-Agent member \"sig1\" is not a string (found an integer)".into())
        );
        assert!(choose(r#"sig1=("https://a.example")"#, Some("sig1"), "sig1").is_err_and(|e| e.contains("inner list")));
        assert!(choose("sig1=?1", Some("sig1"), "sig1").is_err_and(|e| e.contains("not a string")));
    }

    #[test]
    fn legacy_forms_are_read_and_named() {
        assert_eq!(
            choose(r#""https://a.example/jwks""#, None, "sig1"),
            ok("https://a.example/jwks", Some(Legacy::BareString))
        );
        assert_eq!(
            choose(r#""https://a.example/jwks""#, Some("sig1"), "sig1"),
            ok("https://a.example/jwks", Some(Legacy::BareString))
        );
        assert!(choose(r#""https://a.example/jwks""#, Some("x"), "sig1").is_err_and(|e| e.contains("bare string")));
        assert_eq!(
            choose(r#"sig1="https://a.example/jwks""#, None, "sig1"),
            ok("https://a.example/jwks", Some(Legacy::WholeField))
        );
        assert_eq!(
            choose(r#"x="https://a.example/jwks""#, None, "sig1"),
            ok("https://a.example/jwks", Some(Legacy::WholeField))
        );
        assert!(choose(r#"x="https://a", y="https://b""#, None, "sig1").is_err_and(|e| e.contains("not exactly one")));
        assert_eq!(
            choose(r#"sig1="https://chatgpt.com""#, Some("sig1"), "sig1"),
            ok("https://chatgpt.com", Some(Legacy::OriginOnly))
        );
        assert_eq!(
            choose(r#""https://chatgpt.com/""#, None, "sig1"),
            ok("https://chatgpt.com/", Some(Legacy::BareString))
        );
    }

    #[test]
    fn unparsable_fields_say_why() {
        assert!(SignatureAgent::parse(b"https://a.example").is_err());
        assert!(SignatureAgent::parse(b"\"unterminated").is_err());
        assert_eq!(
            SignatureAgent::parse(b"42"),
            Err("Signature-Agent is neither a dictionary nor a string (found an integer)".into())
        );
        assert!(SignatureAgent::parse(br#""https://a";x=1"#).is_err_and(|e| e.contains("parameters")));
    }

    #[test]
    fn origin_only_values() {
        for (url, want) in [
            ("https://chatgpt.com", true),
            ("https://chatgpt.com/", true),
            ("http://127.0.0.1:8080", true),
            ("https://chatgpt.com/jwks.json", false),
            ("https://chatgpt.com/?x", false),
            ("https://chatgpt.com?x", false),
            ("chatgpt.com", false),
        ] {
            assert_eq!(is_origin_only(url), want, "{url}");
        }
    }

    #[test]
    fn identifiers_are_normalised_per_rfc3986_section_6_2_2_and_6_2_3() {
        let rows = [
            ("https://A.Example:443/jwks?v=2", "https://a.example/jwks"),
            ("HTTPS://a.example/%7euser/%2fkeys", "https://a.example/~user/%2Fkeys"),
            ("https://a.example/a/./b/../jwks#frag", "https://a.example/a/jwks"),
            ("https://a.example", "https://a.example/"),
            ("https://a.example:8443/k", "https://a.example:8443/k"),
            ("https://a.example/%41%62", "https://a.example/Ab"),
        ];
        for (url, want) in rows {
            assert_eq!(identifier(url).as_deref(), Ok(want), "{url}");
        }
        assert!(identifier("not a url").is_err());
    }
}
