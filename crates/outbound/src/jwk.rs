//! Public keys read from JWKs (RFC 7517), and the JWS signature check for
//! each algorithm accepted: `EdDSA` / `Ed25519` over an OKP Ed25519 key
//! (RFC 8037, RFC 9864, with ed25519-dalek), `ES256` over a P-256 key and
//! `RS256` over an RSA key of at least 2048 bits (RFC 7518 section 3, with
//! OpenSSL). A key checks only signatures of its own algorithm, so a token
//! cannot choose how its signature is read (an RSA key never checks an
//! `HS256` or `ES256` token).
//!
//! Web Bot Auth signs with Ed25519 only and names keys by their RFC 7638
//! thumbprint: [`parse_ed25519_jwk`]. License tokens (RSL) may use any of
//! the three: [`parse`].

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ed25519_dalek::VerifyingKey;
use openssl::bn::BigNum;
use openssl::ec::{EcGroup, EcKey};
use openssl::ecdsa::EcdsaSig;
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::{PKey, Public};
use openssl::rsa::Rsa;
use openssl::sign::Verifier;

/// The smallest RSA modulus accepted, in bits (RFC 7518 section 3.3).
pub const MIN_RSA_BITS: u32 = 2048;

/// A JWS algorithm accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Alg {
    /// Ed25519 (`EdDSA`, or the fully specified `Ed25519`).
    EdDsa,
    /// ECDSA over P-256 with SHA-256.
    Es256,
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    Rs256,
}

impl Alg {
    /// The algorithm a JWS header's `alg` names, if accepted.
    pub fn from_name(name: &str) -> Option<Alg> {
        match name {
            "EdDSA" | "Ed25519" => Some(Alg::EdDsa),
            "ES256" => Some(Alg::Es256),
            "RS256" => Some(Alg::Rs256),
            _ => None,
        }
    }
}

/// A public key and the one algorithm it checks.
#[derive(Clone, Debug)]
pub enum PublicKey {
    /// An Ed25519 key.
    Ed25519(VerifyingKey),
    /// A P-256 or RSA key.
    OpenSsl(Alg, PKey<Public>),
}

impl PublicKey {
    /// The algorithm it checks.
    pub fn alg(&self) -> Alg {
        match self {
            PublicKey::Ed25519(_) => Alg::EdDsa,
            PublicKey::OpenSsl(alg, _) => *alg,
        }
    }

    /// Whether `signature` (as the JWS carries it) signs `input` with
    /// `alg`; false for any other algorithm than the key's.
    pub fn verifies(&self, alg: Alg, input: &[u8], signature: &[u8]) -> bool {
        if alg != self.alg() {
            return false;
        }
        match self {
            PublicKey::Ed25519(key) => {
                let Ok(sig) = <[u8; 64]>::try_from(signature) else { return false };
                key.verify_strict(input, &ed25519_dalek::Signature::from_bytes(&sig)).is_ok()
            }
            PublicKey::OpenSsl(Alg::Es256, key) => {
                // JWS carries R || S (RFC 7518 section 3.4); OpenSSL wants DER.
                if signature.len() != 64 {
                    return false;
                }
                let der = BigNum::from_slice(&signature[..32])
                    .and_then(|r| BigNum::from_slice(&signature[32..]).map(|s| (r, s)))
                    .and_then(|(r, s)| EcdsaSig::from_private_components(r, s))
                    .and_then(|sig| sig.to_der());
                der.is_ok_and(|der| openssl_verify(key, input, &der))
            }
            PublicKey::OpenSsl(_, key) => openssl_verify(key, input, signature),
        }
    }
}

fn openssl_verify(key: &PKey<Public>, input: &[u8], signature: &[u8]) -> bool {
    Verifier::new(MessageDigest::sha256(), key).and_then(|mut v| v.verify_oneshot(signature, input)).unwrap_or(false)
}

fn member<'a>(jwk: &'a serde_json::Value, name: &str) -> Option<&'a str> {
    jwk.get(name).and_then(serde_json::Value::as_str)
}

/// The bytes of the base64url member `name` (trailing `=` tolerated).
fn b64(jwk: &serde_json::Value, name: &str) -> Result<Vec<u8>, String> {
    let v = member(jwk, name).ok_or_else(|| format!("the JWK has no \"{name}\""))?;
    URL_SAFE_NO_PAD.decode(v.trim_end_matches('=')).map_err(|_| format!("\"{name}\" is not base64url"))
}

/// Reads a signing key from a JWK: its id (`kid`, else for Ed25519 its
/// RFC 7638 thumbprint) and the key. A JWK whose `alg` names another
/// algorithm than its key type's is refused.
pub fn parse(jwk: &serde_json::Value) -> Result<(Option<String>, PublicKey), String> {
    if !jwk.is_object() {
        return Err("the JWK is not a JSON object".into());
    }
    let kid = member(jwk, "kid").map(str::to_owned);
    let key = match (member(jwk, "kty"), member(jwk, "crv")) {
        (Some("OKP"), _) => {
            let p = parse_ed25519_jwk(jwk)?;
            return Ok((kid.or(Some(p.thumbprint)), check_alg(jwk, PublicKey::Ed25519(p.key))?));
        }
        (Some("EC"), Some("P-256")) => {
            let (x, y) = (b64(jwk, "x")?, b64(jwk, "y")?);
            if x.len() != 32 || y.len() != 32 {
                return Err("a P-256 key's \"x\" and \"y\" are 32 bytes each".into());
            }
            let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).map_err(|e| e.to_string())?;
            let ec = BigNum::from_slice(&x)
                .and_then(|x| BigNum::from_slice(&y).map(|y| (x, y)))
                .and_then(|(x, y)| EcKey::from_public_key_affine_coordinates(&group, &x, &y))
                .map_err(|_| "\"x\", \"y\" is not a point of P-256".to_string())?;
            ec.check_key().map_err(|_| "\"x\", \"y\" is not a point of P-256".to_string())?;
            PublicKey::OpenSsl(Alg::Es256, PKey::from_ec_key(ec).map_err(|e| e.to_string())?)
        }
        (Some("EC"), crv) => return Err(format!("EC curve {crv:?} is not accepted (P-256)")),
        (Some("RSA"), _) => {
            let (n, e) = (b64(jwk, "n")?, b64(jwk, "e")?);
            let rsa = BigNum::from_slice(&n)
                .and_then(|n| BigNum::from_slice(&e).map(|e| (n, e)))
                .and_then(|(n, e)| Rsa::from_public_components(n, e))
                .map_err(|_| "\"n\", \"e\" is not an RSA key".to_string())?;
            if rsa.size() * 8 < MIN_RSA_BITS {
                return Err(format!("the RSA key has {} bits, fewer than {MIN_RSA_BITS}", rsa.size() * 8));
            }
            PublicKey::OpenSsl(Alg::Rs256, PKey::from_rsa(rsa).map_err(|e| e.to_string())?)
        }
        (kty, _) => return Err(format!("key type {kty:?} is not accepted (OKP, EC, RSA)")),
    };
    Ok((kid, check_alg(jwk, key)?))
}

fn check_alg(jwk: &serde_json::Value, key: PublicKey) -> Result<PublicKey, String> {
    match member(jwk, "alg") {
        Some(a) if Alg::from_name(a) != Some(key.alg()) => {
            Err(format!("the JWK's alg {a:?} does not fit its key type"))
        }
        _ => Ok(key),
    }
}

/// An Ed25519 public key read from a JWK.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedJwk {
    /// The key.
    pub key: VerifyingKey,
    /// Its RFC 7638 thumbprint (SHA-256, base64url without padding).
    pub thumbprint: String,
    /// The JWK's `kid`, if any.
    pub kid: Option<String>,
}

/// Reads an Ed25519 public key from a JWK (`kty` `OKP`, `crv` `Ed25519`,
/// `x`; RFC 8037 section 2).
pub fn parse_ed25519_jwk(jwk: &serde_json::Value) -> Result<ParsedJwk, String> {
    let Some(obj) = jwk.as_object() else {
        return Err("the JWK is not a JSON object".into());
    };
    match (member(jwk, "kty"), member(jwk, "crv")) {
        (Some("OKP"), Some("Ed25519")) => {}
        (kty, crv) => return Err(format!("not an Ed25519 key (kty {kty:?}, crv {crv:?}; want OKP, Ed25519)")),
    }
    let x = member(jwk, "x").ok_or("the JWK has no \"x\"")?;
    let bytes = URL_SAFE_NO_PAD.decode(x.trim_end_matches('=')).map_err(|e| format!("\"x\" is not base64url: {e}"))?;
    let raw: [u8; 32] =
        bytes.as_slice().try_into().map_err(|_| format!("\"x\" is {} bytes, an Ed25519 key is 32", bytes.len()))?;
    let key = VerifyingKey::from_bytes(&raw).map_err(|e| format!("\"x\" is not an Ed25519 point: {e}"))?;
    let kid = obj.get("kid").and_then(serde_json::Value::as_str).map(str::to_owned);
    Ok(ParsedJwk { key, thumbprint: ed25519_thumbprint(&key), kid })
}

/// The RFC 7638 JWK thumbprint of an Ed25519 key: SHA-256 over
/// `{"crv":"Ed25519","kty":"OKP","x":"<x>"}` (the required members in
/// lexicographic order, RFC 8037 section 2), base64url without padding.
pub fn ed25519_thumbprint(key: &VerifyingKey) -> String {
    crawlgate_policy::verification::ed25519_x_thumbprint(&URL_SAFE_NO_PAD.encode(key.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use openssl::pkey::Private;
    use openssl::sign::Signer;

    fn sign(key: &PKey<Private>, input: &[u8]) -> Vec<u8> {
        let mut s = Signer::new(MessageDigest::sha256(), key).unwrap_or_else(|e| panic!("{e}"));
        s.sign_oneshot_to_vec(input).unwrap_or_else(|e| panic!("{e}"))
    }

    fn ec_pair() -> (PKey<Private>, serde_json::Value) {
        let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).unwrap_or_else(|e| panic!("{e}"));
        let ec = EcKey::generate(&group).unwrap_or_else(|e| panic!("{e}"));
        let mut ctx = openssl::bn::BigNumContext::new().unwrap_or_else(|e| panic!("{e}"));
        let (mut x, mut y) =
            (BigNum::new().unwrap_or_else(|e| panic!("{e}")), BigNum::new().unwrap_or_else(|e| panic!("{e}")));
        ec.public_key().affine_coordinates(&group, &mut x, &mut y, &mut ctx).unwrap_or_else(|e| panic!("{e}"));
        let pad = |b: &BigNum| b.to_vec_padded(32).unwrap_or_else(|e| panic!("{e}"));
        let jwk = serde_json::json!({"kty": "EC", "crv": "P-256", "kid": "ec-1",
            "x": URL_SAFE_NO_PAD.encode(pad(&x)), "y": URL_SAFE_NO_PAD.encode(pad(&y))});
        (PKey::from_ec_key(ec).unwrap_or_else(|e| panic!("{e}")), jwk)
    }

    fn rsa_pair(bits: u32) -> (PKey<Private>, serde_json::Value) {
        let rsa = Rsa::generate(bits).unwrap_or_else(|e| panic!("{e}"));
        let jwk = serde_json::json!({"kty": "RSA", "kid": "rsa-1", "alg": "RS256",
            "n": URL_SAFE_NO_PAD.encode(rsa.n().to_vec()), "e": URL_SAFE_NO_PAD.encode(rsa.e().to_vec())});
        (PKey::from_rsa(rsa).unwrap_or_else(|e| panic!("{e}")), jwk)
    }

    #[test]
    fn es256_signatures_in_jws_form_verify() {
        let (private, jwk) = ec_pair();
        let (kid, key) = parse(&jwk).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((kid.as_deref(), key.alg()), (Some("ec-1"), Alg::Es256));
        let der = sign(&private, b"input");
        let sig = EcdsaSig::from_der(&der).unwrap_or_else(|e| panic!("{e}"));
        let mut raw = sig.r().to_vec_padded(32).unwrap_or_default();
        raw.extend(sig.s().to_vec_padded(32).unwrap_or_default());
        assert!(key.verifies(Alg::Es256, b"input", &raw));
        assert!(!key.verifies(Alg::Es256, b"other", &raw));
        assert!(!key.verifies(Alg::Es256, b"input", &der), "DER is not the JWS form");
        assert!(!key.verifies(Alg::Rs256, b"input", &raw), "an EC key checks only ES256");
    }

    #[test]
    fn rs256_signatures_verify_and_short_keys_are_refused() {
        let (private, jwk) = rsa_pair(2048);
        let (_, key) = parse(&jwk).unwrap_or_else(|e| panic!("{e}"));
        let sig = sign(&private, b"input");
        assert!(key.verifies(Alg::Rs256, b"input", &sig));
        assert!(!key.verifies(Alg::Rs256, b"inpuT", &sig));
        assert!(!key.verifies(Alg::EdDsa, b"input", &sig));
        let (_, short) = rsa_pair(1024);
        assert_eq!(parse(&short).err(), Some("the RSA key has 1024 bits, fewer than 2048".into()));
        let mut wrong_alg = jwk.clone();
        wrong_alg["alg"] = "ES256".into();
        assert_eq!(parse(&wrong_alg).err(), Some("the JWK's alg \"ES256\" does not fit its key type".into()));
    }

    #[test]
    fn unusable_jwks_are_refused_with_a_reason() {
        let cases = [
            (serde_json::json!("x"), "the JWK is not a JSON object"),
            (serde_json::json!({"kty": "oct", "k": "AA"}), "key type Some(\"oct\") is not accepted (OKP, EC, RSA)"),
            (
                serde_json::json!({"kty": "EC", "crv": "P-384", "x": "AA", "y": "AA"}),
                "EC curve Some(\"P-384\") is not accepted (P-256)",
            ),
            (
                serde_json::json!({"kty": "EC", "crv": "P-256", "x": "AA", "y": "AA"}),
                "a P-256 key's \"x\" and \"y\" are 32 bytes each",
            ),
            (
                serde_json::json!({"kty": "EC", "crv": "P-256", "x": URL_SAFE_NO_PAD.encode([1u8; 32]), "y": URL_SAFE_NO_PAD.encode([2u8; 32])}),
                "\"x\", \"y\" is not a point of P-256",
            ),
            (serde_json::json!({"kty": "RSA", "e": "AQAB"}), "the JWK has no \"n\""),
            (serde_json::json!({"kty": "OKP", "crv": "X25519", "x": "AA"}), "not an Ed25519 key"),
        ];
        for (jwk, want) in cases {
            let err = parse(&jwk).err().unwrap_or_else(|| panic!("{jwk} parsed"));
            assert!(err.contains(want), "{jwk}: {err}");
        }
    }

    #[test]
    fn rfc8037_thumbprint_example() {
        // RFC 8037 appendix A.3.
        let jwk = serde_json::json!({"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"});
        let parsed = parse_ed25519_jwk(&jwk).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(parsed.thumbprint, "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k");
    }

    #[test]
    fn rfc9421_test_key_thumbprint_is_the_web_bot_auth_keyid() {
        let jwk = serde_json::json!({"kty":"OKP","crv":"Ed25519","kid":"test-key-ed25519","x":"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs"});
        let parsed = parse_ed25519_jwk(&jwk).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(parsed.thumbprint, "poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U");
        assert_eq!(parsed.kid.as_deref(), Some("test-key-ed25519"));
    }

    #[test]
    fn bad_jwks_are_rejected_with_a_reason() {
        let cases = [
            (serde_json::json!([]), "not a JSON object"),
            (serde_json::json!({"kty":"RSA","n":"x","e":"AQAB"}), "not an Ed25519 key"),
            (serde_json::json!({"kty":"OKP","crv":"X25519","x":"AA"}), "not an Ed25519 key"),
            (serde_json::json!({"kty":"OKP","crv":"Ed25519"}), "has no \"x\""),
            (serde_json::json!({"kty":"OKP","crv":"Ed25519","x":"!!"}), "not base64url"),
            (serde_json::json!({"kty":"OKP","crv":"Ed25519","x":"AAAA"}), "is 3 bytes"),
        ];
        for (jwk, want) in cases {
            let err = parse_ed25519_jwk(&jwk).err().unwrap_or_else(|| panic!("{jwk} parsed"));
            assert!(err.contains(want), "{jwk}: {err}");
        }
    }
}
