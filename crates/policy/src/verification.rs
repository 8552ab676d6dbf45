//! Verified crawler identity as policy data: the outcome of checking that a
//! request really comes from the crawler its `User-Agent` (or signature)
//! names, the per-group settings that act on it, and the built-in table of
//! where each operator publishes its evidence (`data/verification.json`,
//! see `data/README.md`).
//!
//! The checks themselves (published IP ranges, forward-confirmed reverse
//! DNS, Web Bot Auth signatures) do I/O and live in `crawlgate-identity`;
//! this module only names their results, so routing stays pure.

mod outcome;

pub use self::outcome::{ReplayFinding, SignatureFinding, SignatureOutcome};

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;
use std::sync::LazyLock;
use std::time::Duration;

/// An address prefix in CIDR notation (RFC 4632; RFC 4291 section 2.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Cidr {
    addr: IpAddr,
    len: u8,
}

impl Cidr {
    /// Whether `ip` is inside the prefix. An IPv4-mapped IPv6 address
    /// (`::ffff:192.0.2.1`) is compared as the IPv4 address it maps.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(a)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.len)).unwrap_or(0);
                u32::from(net) & mask == u32::from(a) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(a)) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(self.len)).unwrap_or(0);
                u128::from(net) & mask == u128::from(a) & mask
            }
            _ => false,
        }
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

impl FromStr for Cidr {
    type Err = String;

    /// `ADDR/LEN`, or a bare address (a /32 or /128).
    fn from_str(s: &str) -> Result<Cidr, String> {
        let (a, l) = s.split_once('/').map_or((s, None), |(a, l)| (a, Some(l)));
        let addr: IpAddr = a.parse().map_err(|_| format!("`{s}` is not an IP address or CIDR prefix"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let len = match l {
            None => max,
            Some(l) => match l.parse::<u8>() {
                Ok(n) if n <= max => n,
                _ => return Err(format!("`{s}`: the prefix length must be 0 to {max}")),
            },
        };
        Ok(Cidr { addr, len })
    }
}

/// The compiled `[verification]` table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerificationSettings {
    /// Whether the table is present: without it nothing is verified and every
    /// group trusts the User-Agent.
    pub enabled: bool,
    /// How often the published IP lists are refreshed (default 24 h).
    pub refresh: Duration,
    /// Timeout of one list fetch (default 10 s).
    pub fetch_timeout: Duration,
    /// Where fetched lists are persisted; `None` keeps them in memory only.
    pub state_dir: Option<String>,
    /// `[verification.lists]`: per token (as written), the lists (URLs or
    /// absolute paths) that replace the built-in ones.
    pub lists: Vec<(String, Vec<String>)>,
    /// `[verification.dns]`.
    pub dns: DnsSettings,
    /// `[verification.signatures]`.
    pub signatures: SignatureSettings,
    /// `[[verification.keys]]`: Web Bot Auth keys pinned in the policy.
    pub keys: Vec<PinnedJwk>,
    /// `observe_catalog`: whether a catalog crawler the policy does not
    /// name is verified with the catalog's methods, for the counts only
    /// (`"verify"`, the default) or not at all (`"off"`).
    pub observe_catalog: bool,
}

/// The resolver used for forward-confirmed reverse DNS.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DnsSettings {
    /// Nameservers; empty means the system's resolv.conf.
    pub nameservers: Vec<SocketAddr>,
    /// Budget of one whole check, PTR plus forward (default 500 ms).
    pub timeout: Duration,
    /// Cached addresses (default 10000).
    pub cache_size: usize,
}

/// Web Bot Auth signature checking.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignatureSettings {
    /// Allowed clock skew on `created` and `expires` (default 60 s).
    pub max_skew: Duration,
    /// Timeout of one key directory fetch (default 10 s).
    pub directory_timeout: Duration,
    /// Cached key directories (default 1000).
    pub cache_size: usize,
    /// Whether key directories may be fetched over plain HTTP, from the
    /// hosts otherwise allowed (tests only).
    pub allow_http_directories: bool,
    /// Whether the key directory of any `Signature-Agent` host may be
    /// fetched, not only the catalog's (public addresses only unless
    /// `allow_private_directories`).
    pub any_directory_host: bool,
    /// The authorities (`host` or `host:port`, lower-cased) a signature's
    /// covered `@authority` must name: this site. Empty: no signature is
    /// valid (draft-meunier-web-bot-auth-architecture: the covered
    /// authority is the verifier's own).
    pub authorities: Vec<String>,
    /// Whether `authorities` came from the policy's own `authorities` key
    /// (else from `upstream.sni` or `robots_txt.origin_host`).
    pub authorities_written: bool,
    /// The longest `expires - created` accepted (default 300 s).
    pub max_validity: Duration,
    /// The derived components every signature must cover (default
    /// `@authority`, `@method`, `@path`; `@target-uri` stands for
    /// `@authority`, `@scheme`, `@path` and `@query`).
    pub required_components: Vec<String>,
    /// How many verified signatures are remembered to refuse replays
    /// (default 100000).
    pub replay_cache_size: usize,
    /// Whether key directories on private, loopback or link-local
    /// addresses may be fetched (tests only; default false).
    pub allow_private_directories: bool,
}

/// The components a signature must cover by default.
pub const DEFAULT_REQUIRED_COMPONENTS: [&str; 3] = ["@authority", "@method", "@path"];

/// The components `required_components` may name.
pub const REQUIRABLE_COMPONENTS: [&str; 6] = ["@authority", "@method", "@path", "@query", "@scheme", "@target-uri"];

/// A key pinned in `[[verification.keys]]`, validated at load as an Ed25519
/// JWK (RFC 8037 section 2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PinnedJwk {
    /// The token the key proves.
    pub token: String,
    /// The JWK as written (JSON).
    pub jwk: String,
}

impl Default for VerificationSettings {
    /// The defaults of every key; `enabled` is false (no table).
    fn default() -> VerificationSettings {
        VerificationSettings {
            enabled: false,
            refresh: Duration::from_secs(24 * 60 * 60),
            fetch_timeout: Duration::from_secs(10),
            state_dir: None,
            lists: Vec::new(),
            dns: DnsSettings { nameservers: Vec::new(), timeout: Duration::from_millis(500), cache_size: 10_000 },
            signatures: SignatureSettings {
                max_skew: Duration::from_secs(60),
                directory_timeout: Duration::from_secs(10),
                cache_size: 1000,
                allow_http_directories: false,
                any_directory_host: false,
                authorities: Vec::new(),
                authorities_written: false,
                max_validity: Duration::from_secs(300),
                required_components: DEFAULT_REQUIRED_COMPONENTS.iter().map(|c| (*c).to_owned()).collect(),
                replay_cache_size: 100_000,
                allow_private_directories: false,
            },
            keys: Vec::new(),
            observe_catalog: true,
        }
    }
}

impl VerificationSettings {
    /// The IP lists that prove `token`: the configured override, else the
    /// built-in source's lists (empty when there are none).
    pub fn ip_lists_for(&self, token: &str) -> Vec<String> {
        match self.lists.iter().find(|(t, _)| t.eq_ignore_ascii_case(token)) {
            Some((_, l)) => l.clone(),
            None => source_for(token).map(|s| s.ip_lists.clone()).unwrap_or_default(),
        }
    }

    /// The reverse DNS domains that prove `token` (built-in).
    pub fn rdns_for(&self, token: &str) -> &'static [String] {
        source_for(token).map_or(&[], |s| s.rdns.as_slice())
    }

    /// Whether a signature can prove `token`: a pinned key or a built-in
    /// `Signature-Agent`.
    pub fn has_signature_source(&self, token: &str) -> bool {
        self.keys.iter().any(|k| k.token.eq_ignore_ascii_case(token))
            || source_for(token).is_some_and(|s| !s.signature_agents.is_empty())
    }

    /// Whether any method has a source for `token`.
    pub fn has_source(&self, token: &str) -> bool {
        !self.ip_lists_for(token).is_empty() || !self.rdns_for(token).is_empty() || self.has_signature_source(token)
    }
}

impl VerificationSettings {
    /// The methods that can prove some token of `tokens` under `mode`, in
    /// the order the verifier tries them (signature, ip, rdns).
    pub fn methods_for<'a>(&self, tokens: impl IntoIterator<Item = &'a str> + Clone, mode: VerifyMode) -> Vec<Method> {
        let has = |m: Method| {
            mode.allows(m)
                && tokens.clone().into_iter().any(|t| match m {
                    Method::Signature => self.has_signature_source(t),
                    Method::Ip => !self.ip_lists_for(t).is_empty(),
                    Method::Rdns => !self.rdns_for(t).is_empty(),
                })
        };
        [Method::Signature, Method::Ip, Method::Rdns].into_iter().filter(|m| has(*m)).collect()
    }
}

/// How a claim was proven (or disproven).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// The address is in the operator's published IP ranges.
    Ip,
    /// Forward-confirmed reverse DNS under one of the operator's domains.
    Rdns,
    /// A valid Web Bot Auth signature (RFC 9421 with the webbotauth profile).
    Signature,
}

impl Method {
    /// The label used in logs, metrics and `explain`.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Ip => "ip",
            Method::Rdns => "rdns",
            Method::Signature => "signature",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The outcome of verifying one request's claimed identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verification {
    /// Nothing to verify: the request names no token that the group's
    /// `verify` setting applies to (browsers, `verify = "none"`).
    NotApplicable,
    /// The claim is proven by this method.
    Verified(Method),
    /// Nothing could tell: no published source, a lookup timed out, a key
    /// directory could not be fetched.
    Unverified,
    /// The request claims the token and is proven not to be it (by this
    /// method: an address outside every published range, a PTR or forward
    /// name that does not confirm, an invalid signature).
    Spoofed(Method),
}

impl Verification {
    /// The bounded label used in logs and metrics: `none`, `verified`,
    /// `unverified` or `spoofed`.
    pub fn label(self) -> &'static str {
        match self {
            Verification::NotApplicable => "none",
            Verification::Verified(_) => "verified",
            Verification::Unverified => "unverified",
            Verification::Spoofed(_) => "spoofed",
        }
    }
}

impl Default for Verification {
    /// Nothing verified.
    fn default() -> Verification {
        Verification::NotApplicable
    }
}

impl fmt::Display for Verification {
    /// `none`, `verified(ip)`, `unverified`, `spoofed(rdns)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verification::Verified(m) | Verification::Spoofed(m) => write!(f, "{}({m})", self.label()),
            _ => f.write_str(self.label()),
        }
    }
}

/// A group's `verify` setting: which methods may prove its crawlers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum VerifyMode {
    /// Trust the User-Agent (no verification).
    #[default]
    None,
    /// Published IP ranges only.
    Ip,
    /// Forward-confirmed reverse DNS only.
    Rdns,
    /// Web Bot Auth signatures only.
    Signature,
    /// Whatever the operator publishes: any method that can prove it.
    Any,
}

impl VerifyMode {
    /// Every mode, in the order the policy documents them.
    pub const ALL: [VerifyMode; 5] =
        [VerifyMode::None, VerifyMode::Ip, VerifyMode::Rdns, VerifyMode::Signature, VerifyMode::Any];

    /// The policy spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            VerifyMode::None => "none",
            VerifyMode::Ip => "ip",
            VerifyMode::Rdns => "rdns",
            VerifyMode::Signature => "signature",
            VerifyMode::Any => "any",
        }
    }

    /// The mode spelled `s`.
    pub fn parse(s: &str) -> Option<VerifyMode> {
        VerifyMode::ALL.into_iter().find(|m| m.as_str() == s)
    }

    /// Whether `method` may prove a claim under this mode.
    pub fn allows(self, method: Method) -> bool {
        match self {
            VerifyMode::None => false,
            VerifyMode::Any => true,
            VerifyMode::Ip => method == Method::Ip,
            VerifyMode::Rdns => method == Method::Rdns,
            VerifyMode::Signature => method == Method::Signature,
        }
    }
}

/// What a group does with a request whose claim is spoofed or unverified.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnFailure {
    /// Answer with the group's `block_status`.
    Block,
    /// Apply the group as usual and log the outcome.
    Log,
    /// Treat the request like one with no token (the `*` group).
    Anonymous,
    /// Ask for a Web Bot Auth signature: 403 with `Accept-Signature`
    /// (RFC 9421 section 5.1). Only for `on_unverified` of a group whose
    /// `verify` allows signatures.
    Challenge,
}

impl OnFailure {
    /// Every choice.
    pub const ALL: [OnFailure; 4] = [OnFailure::Block, OnFailure::Log, OnFailure::Anonymous, OnFailure::Challenge];

    /// The policy spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            OnFailure::Block => "block",
            OnFailure::Log => "log",
            OnFailure::Anonymous => "anonymous",
            OnFailure::Challenge => "challenge",
        }
    }

    /// The choice spelled `s`.
    pub fn parse(s: &str) -> Option<OnFailure> {
        OnFailure::ALL.into_iter().find(|m| m.as_str() == s)
    }
}

/// The `Accept-Signature` value (RFC 9421 section 5.1) that asks for a Web
/// Bot Auth signature: one member `sig1` covering `components` (the
/// site's `required_components`) and its own `Signature-Agent` member
/// (`"signature-agent";key="sig1"`, draft-ietf-webbotauth-httpsig-protocol-01),
/// asking for `created` and `expires`
/// (RFC 9421 section 5.1: a boolean parameter asks the signer to include
/// it), the Ed25519 algorithm, the key `keyid` when one is known for the
/// token, and `tag="web-bot-auth"`.
pub fn accept_signature(components: &[String], keyid: Option<&str>) -> String {
    let mut covered: Vec<String> = components.iter().map(|c| format!("\"{c}\"")).collect();
    covered.push("\"signature-agent\";key=\"sig1\"".to_owned());
    let mut out = format!("sig1=({});created;expires", covered.join(" "));
    if let Some(k) = keyid {
        out.push_str(&format!(";keyid=\"{k}\""));
    }
    out.push_str(";alg=\"ed25519\";tag=\"web-bot-auth\"");
    out
}

/// What a request whose Web Bot Auth signature fields cannot be parsed
/// (`unparsable`: why) gets, for the `verify` mode of the group it claims
/// (`None`: it claims no token). draft-meunier-web-bot-auth-architecture's
/// verifier rules answer such headers with 400: here when the group
/// verifies by signature only, where a signature is the one way in and a
/// malformed one is the client's error to report rather than a spoofing to
/// serve the `*` group. Elsewhere (another mode, no claim) the request goes
/// on, its signature counted `invalid` like any wrong one.
pub fn check_signature_fields(claimed: Option<VerifyMode>, unparsable: Option<&str>) -> Result<(), crate::BadRequest> {
    match (claimed, unparsable) {
        (Some(VerifyMode::Signature), Some(why)) => Err(crate::BadRequest::UnparsableSignature(why.to_owned())),
        _ => Ok(()),
    }
}

/// The RFC 7638 thumbprint of an Ed25519 JWK (the `keyid` Web Bot Auth
/// uses): base64url of SHA-256 over `{"crv":"Ed25519","kty":"OKP","x":..}`;
/// `None` for a JWK without an `x` string.
pub fn ed25519_jwk_thumbprint(jwk: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(jwk).ok()?;
    Some(ed25519_x_thumbprint(v.get("x")?.as_str()?))
}

/// The RFC 7638 thumbprint of the Ed25519 key whose `x` member (RFC 8037
/// section 2, unpadded base64url) is `x`: SHA-256 over the required members
/// in lexicographic order, base64url without padding. The one copy:
/// `crawlgate-identity` names the keys it reads with it too.
pub fn ed25519_x_thumbprint(x: &str) -> String {
    use sha2::Digest as _;
    let canonical = format!(r#"{{"crv":"Ed25519","kty":"OKP","x":"{x}"}}"#);
    base64url(&sha2::Sha256::digest(canonical.as_bytes()))
}

/// Unpadded base64url (RFC 4648 section 5).
fn base64url(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// Checks a pinned key: a JSON object with `kty` `OKP`, `crv` `Ed25519` and
/// an `x` of 32 bytes in unpadded base64url (RFC 8037 section 2).
pub fn validate_ed25519_jwk(jwk: &str) -> Result<(), String> {
    let v: serde_json::Value = serde_json::from_str(jwk).map_err(|e| format!("not JSON: {e}"))?;
    let field = |k: &str| v.get(k).and_then(serde_json::Value::as_str);
    if field("kty") != Some("OKP") {
        return Err("`kty` must be \"OKP\"".into());
    }
    if field("crv") != Some("Ed25519") {
        return Err("`crv` must be \"Ed25519\"".into());
    }
    let x = field("x").ok_or("`x` is missing")?;
    match base64url_len(x) {
        Some(32) => Ok(()),
        Some(n) => Err(format!("`x` must be 32 bytes, found {n}")),
        None => Err("`x` is not unpadded base64url".into()),
    }
}

/// The decoded length of unpadded base64url text (RFC 4648 section 5), if
/// valid: canonical, as `crawlgate-identity` reads a key (unused bits of
/// the last character zero, section 3.5).
fn base64url_len(s: &str) -> Option<usize> {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(s).ok().map(|bytes| bytes.len())
}

/// Where one operator publishes the evidence for some of its tokens.
#[derive(Debug, Clone, serde::Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// Who runs the crawlers.
    pub operator: String,
    /// The operator's documentation of how to verify them.
    pub source: String,
    /// The tokens these lists and domains prove (catalog spelling).
    pub tokens: Vec<String>,
    /// URLs of published IP range lists (`{"prefixes": [...]}` JSON).
    pub ip_lists: Vec<String>,
    /// Domain suffixes for forward-confirmed reverse DNS.
    pub rdns: Vec<String>,
    /// `Signature-Agent` hosts whose key directory proves these tokens.
    #[serde(default)]
    pub signature_agents: Vec<String>,
}

const EMBEDDED: &str = include_str!("../data/verification.json");

// Validated by the unit tests below, so the empty fallback is reached only
// by a build whose tests fail; it keeps a policy load from panicking.
static SOURCES: LazyLock<Vec<Source>> = LazyLock::new(|| serde_json::from_str(EMBEDDED).unwrap_or_default());

/// Every built-in verification source.
pub fn sources() -> &'static [Source] {
    &SOURCES
}

/// The built-in source for `token` (ASCII case-insensitive), if its operator
/// publishes one.
pub fn source_for(token: &str) -> Option<&'static Source> {
    SOURCES.iter().find(|s| s.tokens.iter().any(|t| t.eq_ignore_ascii_case(token)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_signature_asks_for_the_required_components() {
        let c = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let rows: &[(&[&str], Option<&str>, &str)] = &[
            (
                &DEFAULT_REQUIRED_COMPONENTS,
                None,
                r#"sig1=("@authority" "@method" "@path" "signature-agent";key="sig1");created;expires;alg="ed25519";tag="web-bot-auth""#,
            ),
            (
                &["@target-uri"],
                Some("poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U"),
                r#"sig1=("@target-uri" "signature-agent";key="sig1");created;expires;keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";alg="ed25519";tag="web-bot-auth""#,
            ),
        ];
        for (components, keyid, want) in rows {
            let got = accept_signature(&c(components), *keyid);
            assert_eq!(got, *want);
            // A valid RFC 9651 dictionary, as RFC 9421 section 5.1 defines the field.
            assert!(sfv::Parser::new(got.as_bytes()).parse::<sfv::Dictionary>().is_ok(), "{got}");
        }
    }

    #[test]
    fn unparsable_signatures_get_400_only_where_a_signature_is_required() {
        let why = "Signature-Input is not a structured-field dictionary";
        let refused = Err(crate::BadRequest::UnparsableSignature(why.to_owned()));
        let rows = [
            (Some(VerifyMode::Signature), Some(why), refused.clone()),
            (Some(VerifyMode::Signature), None, Ok(())),
            (Some(VerifyMode::Any), Some(why), Ok(())),
            (Some(VerifyMode::Ip), Some(why), Ok(())),
            (Some(VerifyMode::Rdns), Some(why), Ok(())),
            (Some(VerifyMode::None), Some(why), Ok(())),
            (None, Some(why), Ok(())),
        ];
        for (claimed, unparsable, want) in rows {
            assert_eq!(check_signature_fields(claimed, unparsable), want, "{claimed:?} {unparsable:?}");
        }
        assert_eq!(
            refused.err().map(|e| e.to_string()).as_deref(),
            Some("the Signature / Signature-Input header fields cannot be parsed (RFC 9421 section 4, RFC 9651): Signature-Input is not a structured-field dictionary")
        );
    }

    #[test]
    fn thumbprints_match_rfc_8037_and_the_rfc_9421_test_key() {
        // RFC 8037 appendix A.3.
        assert_eq!(
            ed25519_jwk_thumbprint(
                r#"{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}"#
            )
            .as_deref(),
            Some("kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k")
        );
        assert_eq!(
            ed25519_jwk_thumbprint(
                r#"{"kty":"OKP","crv":"Ed25519","x":"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs"}"#
            )
            .as_deref(),
            Some("poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U")
        );
        assert_eq!(ed25519_jwk_thumbprint("{}"), None);
        assert_eq!(base64url(b""), "");
        assert_eq!(base64url(b"f"), "Zg");
        assert_eq!(base64url(b"fo"), "Zm8");
        assert_eq!(base64url(b"foo"), "Zm9v");
        assert_eq!(base64url(&[0xfb, 0xff]), "-_8");
    }

    #[test]
    fn embedded_sources_parse_and_name_catalog_tokens() {
        let v: Vec<Source> = serde_json::from_str(EMBEDDED).unwrap_or_else(|e| panic!("verification.json: {e}"));
        assert_eq!(v.len(), sources().len());
        for s in &v {
            assert!(s.source.starts_with("https://"), "{}", s.source);
            assert!(!s.ip_lists.is_empty() || !s.rdns.is_empty() || !s.signature_agents.is_empty());
            for u in &s.ip_lists {
                assert!(u.starts_with("https://"), "{u}");
            }
            for t in &s.tokens {
                assert!(crate::catalog::lookup(t).is_some(), "{t} is not in the catalog");
            }
        }
    }

    #[test]
    fn cidr_parse_and_contains() {
        let c: Cidr = "10.0.0.0/8".parse().unwrap_or_else(|e| panic!("{e}"));
        assert!(c.contains("10.255.0.1".parse().unwrap_or_else(|e| panic!("{e}"))));
        assert!(c.contains("::ffff:10.1.2.3".parse().unwrap_or_else(|e| panic!("{e}"))));
        assert!(!c.contains("11.0.0.1".parse().unwrap_or_else(|e| panic!("{e}"))));
        let one: Cidr = "192.0.2.7".parse().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(one.to_string(), "192.0.2.7/32");
        let all: Cidr = "::/0".parse().unwrap_or_else(|e| panic!("{e}"));
        assert!(all.contains("2001:db8::1".parse().unwrap_or_else(|e| panic!("{e}"))));
        assert_eq!("10.0.0.0/33".parse::<Cidr>(), Err("`10.0.0.0/33`: the prefix length must be 0 to 32".into()));
        assert_eq!("ten/8".parse::<Cidr>(), Err("`ten/8` is not an IP address or CIDR prefix".into()));
    }

    #[test]
    fn jwk_validation() {
        let good = r#"{"kty":"OKP","crv":"Ed25519","x":"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs"}"#;
        assert_eq!(validate_ed25519_jwk(good), Ok(()));
        assert_eq!(validate_ed25519_jwk("{"), Err("not JSON: EOF while parsing an object at line 1 column 1".into()));
        assert_eq!(validate_ed25519_jwk(&good.replace("OKP", "EC")), Err("`kty` must be \"OKP\"".into()));
        assert_eq!(validate_ed25519_jwk(&good.replace("Ed25519", "X25519")), Err("`crv` must be \"Ed25519\"".into()));
        assert_eq!(validate_ed25519_jwk(&good.replace("JrQLj5P_", "")), Err("`x` must be 32 bytes, found 26".into()));
        assert_eq!(validate_ed25519_jwk(&good.replace("JrQL", "Jr+L")), Err("`x` is not unpadded base64url".into()));
        assert_eq!(validate_ed25519_jwk(r#"{"kty":"OKP","crv":"Ed25519"}"#), Err("`x` is missing".into()));
    }

    #[test]
    fn modes_and_labels() {
        assert!(VerifyMode::Any.allows(Method::Rdns));
        assert!(!VerifyMode::Ip.allows(Method::Rdns));
        assert!(!VerifyMode::None.allows(Method::Ip));
        assert_eq!(VerifyMode::parse("signature"), Some(VerifyMode::Signature));
        assert_eq!(OnFailure::parse("anonymous"), Some(OnFailure::Anonymous));
        assert_eq!(Verification::Verified(Method::Ip).to_string(), "verified(ip)");
        assert_eq!(Verification::Spoofed(Method::Rdns).to_string(), "spoofed(rdns)");
        assert_eq!(Verification::Unverified.to_string(), "unverified");
        assert_eq!(Verification::NotApplicable.to_string(), "none");
    }

    #[test]
    fn methods_by_token_and_mode() {
        let v = VerificationSettings { enabled: true, ..VerificationSettings::default() };
        let rows: &[(&[&str], VerifyMode, &[Method])] = &[
            (&["Googlebot"], VerifyMode::Any, &[Method::Ip, Method::Rdns]),
            (&["Googlebot"], VerifyMode::Rdns, &[Method::Rdns]),
            (&["YandexBot"], VerifyMode::Any, &[Method::Rdns]),
            (&["Baiduspider", "Amazonbot"], VerifyMode::Any, &[Method::Rdns]),
            (&["YandexBot", "GPTBot"], VerifyMode::Any, &[Method::Ip, Method::Rdns]),
            (&["ChatGPT-User"], VerifyMode::Any, &[Method::Signature, Method::Ip]),
            (&["ClaudeBot"], VerifyMode::Any, &[]),
            (&["Googlebot"], VerifyMode::None, &[]),
        ];
        for (tokens, mode, want) in rows {
            assert_eq!(v.methods_for(tokens.iter().copied(), *mode), *want, "{tokens:?} {mode:?}");
        }
    }

    #[test]
    fn lookup_is_case_insensitive() {
        assert_eq!(source_for("googlebot").map(|s| s.rdns.len()), Some(3));
        assert_eq!(source_for("GPTBot").map(|s| s.ip_lists[0].as_str()), Some("https://openai.com/gptbot.json"));
        assert!(source_for("ClaudeBot").is_none());
    }
}
