//! A Web Bot Auth test signer: builds `Signature-Input`, `Signature` and
//! `Signature-Agent` headers for a request (RFC 9421 with the profile of
//! draft-ietf-webbotauth-httpsig-protocol-01, [`SignOptions::draft01`], and
//! the older forms for the legacy paths), and the JSON of a key directory
//! (draft-meunier-http-message-signatures-directory) that serves its keys.
//!
//! It writes the signature base itself, independently of the verifier in
//! `crawlgate-identity`, so a test that signs here and verifies there checks
//! both against RFC 9421 section 2.5.

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use ed25519_dalek::{Signer as _, SigningKey};
use sha2::{Digest, Sha256};

/// The private key `test-key-ed25519` of RFC 9421 appendix B.1.4, which the
/// webbotauth drafts' examples also use.
pub const RFC9421_ED25519_SECRET: [u8; 32] = [
    0x9f, 0x83, 0x62, 0xf8, 0x7a, 0x48, 0x4a, 0x95, 0x4e, 0x6e, 0x74, 0x0c, 0x5b, 0x4c, 0x0e, 0x84, 0x22, 0x91, 0x39,
    0xa2, 0x0a, 0xa8, 0xab, 0x56, 0xff, 0x66, 0x58, 0x6f, 0x6a, 0x7d, 0x29, 0xc5,
];

/// The `Signature-Agent` URL [`SignOptions::web_bot_auth`] names: a JWKS
/// on a host no catalog entry lists (never fetched by a default verifier).
pub const DEFAULT_AGENT: &str = "https://agent.example/jwks.json";

/// A request as the signer sees it.
#[derive(Clone, Debug)]
pub struct Request {
    /// The method, e.g. `GET`.
    pub method: String,
    /// The scheme for `@scheme` and `@target-uri`.
    pub scheme: String,
    /// The authority (Host), e.g. `example.com`.
    pub authority: String,
    /// The request target in origin form, e.g. `/path?q=1`.
    pub target: String,
    /// Header fields (name, value) other than the signature fields.
    pub headers: Vec<(String, String)>,
}

impl Request {
    /// A `GET` over https for `authority` and `target`, with no headers.
    pub fn get(authority: &str, target: &str) -> Request {
        Request {
            method: "GET".into(),
            scheme: "https".into(),
            authority: authority.into(),
            target: target.into(),
            headers: Vec::new(),
        }
    }
}

/// A covered component.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Component {
    /// A derived component, e.g. `@authority`, `@path`, `@method`.
    Derived(String),
    /// A header field (lower-case name), its lines trimmed and joined.
    Header(String),
    /// A member of a dictionary header field (`;key=`).
    HeaderKey(String, String),
}

impl Component {
    /// A derived component by name (with the `@`).
    pub fn derived(name: &str) -> Component {
        Component::Derived(name.into())
    }

    fn identifier(&self) -> String {
        match self {
            Component::Derived(n) | Component::Header(n) => format!("\"{n}\""),
            Component::HeaderKey(n, k) => format!("\"{n}\";key=\"{k}\""),
        }
    }
}

/// The form of the `Signature-Agent` header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Agent {
    /// `Signature-Agent: <label>="<url>"` (a dictionary, newer drafts),
    /// covered as `"signature-agent";key="<label>"`.
    Dictionary(String),
    /// `Signature-Agent: "<url>"` (a string, older senders), covered as
    /// `"signature-agent"`.
    String(String),
    /// draft-ietf-webbotauth-httpsig-protocol-01: `Signature-Agent:
    /// <key>="<url>"`, the URL of a JWKS, covered as
    /// `"signature-agent";key="<key>"`.
    Member {
        /// The dictionary key (any name; the label is usual).
        key: String,
        /// The JWKS URL.
        url: String,
    },
    /// The field exactly as given (several members, parameters, ...),
    /// covered as `"signature-agent";key="<covered_key>"`, or whole when
    /// `covered_key` is `None`.
    Raw {
        /// The field value.
        value: String,
        /// The member the signature covers.
        covered_key: Option<String>,
    },
}

/// What to sign and how.
#[derive(Clone, Debug)]
pub struct SignOptions {
    /// The label, e.g. `sig1`.
    pub label: String,
    /// Covered components, in order. `signature-agent` is appended when an
    /// agent is set and `cover_agent` is true.
    pub components: Vec<Component>,
    /// `created` (Unix seconds).
    pub created: i64,
    /// `expires` (Unix seconds); omitted when `None`.
    pub expires: Option<i64>,
    /// `tag`; omitted when `None`.
    pub tag: Option<String>,
    /// `nonce`; omitted when `None`.
    pub nonce: Option<String>,
    /// `alg`; omitted when `None`.
    pub alg: Option<String>,
    /// `keyid` instead of the key's thumbprint; omitted when `Some("")`.
    pub keyid: Option<String>,
    /// The `Signature-Agent` header to send.
    pub agent: Option<Agent>,
    /// Whether `signature-agent` is covered when `agent` is set.
    pub cover_agent: bool,
}

impl SignOptions {
    /// The Web Bot Auth profile: `@authority` covered, `tag="web-bot-auth"`,
    /// `alg="ed25519"`, valid from `created` for `valid_for` seconds, and
    /// the `Signature-Agent` member `sig1` = [`DEFAULT_AGENT`] covered (a
    /// signed request carries one, draft-ietf-webbotauth-httpsig-protocol-01;
    /// a pinned key is found whatever it names).
    pub fn web_bot_auth(created: i64, valid_for: i64) -> SignOptions {
        SignOptions {
            label: "sig1".into(),
            components: vec![Component::derived("@authority")],
            created,
            expires: Some(created + valid_for),
            tag: Some("web-bot-auth".into()),
            nonce: Some("bm9uY2UtZm9yLXRlc3Rz".into()),
            alg: Some("ed25519".into()),
            keyid: None,
            agent: Some(Agent::Member { key: "sig1".into(), url: DEFAULT_AGENT.into() }),
            cover_agent: true,
        }
    }

    /// The same with a `Signature-Agent` in dictionary form under the label.
    pub fn with_agent(mut self, url: &str) -> SignOptions {
        self.agent = Some(Agent::Dictionary(url.into()));
        self
    }

    /// A signature as draft-ietf-webbotauth-httpsig-protocol-01 describes
    /// it: label `sig1` covering `@authority`, `@method`, `@path` and its
    /// own `Signature-Agent` member `sig1`, whose value is `jwks_url` (the
    /// JWKS that lists the key); `created`, `expires` = `created` +
    /// `valid_for`, `keyid` = the RFC 7638 thumbprint, `alg="ed25519"`,
    /// `tag="web-bot-auth"`, a nonce.
    pub fn draft01(created: i64, valid_for: i64, jwks_url: &str) -> SignOptions {
        let mut o = SignOptions::web_bot_auth(created, valid_for);
        o.components = ["@authority", "@method", "@path"].into_iter().map(Component::derived).collect();
        o.agent = Some(Agent::Member { key: "sig1".into(), url: jwks_url.into() });
        o
    }
}

/// The signature header fields to add to a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedHeaders {
    /// `Signature-Input` value.
    pub signature_input: String,
    /// `Signature` value.
    pub signature: String,
    /// `Signature-Agent` value, if any.
    pub signature_agent: Option<String>,
    /// The signature base that was signed.
    pub base: String,
}

impl SignedHeaders {
    /// The fields as (name, value) pairs.
    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        let mut v = vec![("Signature-Input", self.signature_input.clone()), ("Signature", self.signature.clone())];
        if let Some(a) = &self.signature_agent {
            v.push(("Signature-Agent", a.clone()));
        }
        v
    }
}

/// An Ed25519 signing key.
#[derive(Clone, Debug)]
pub struct Signer {
    key: SigningKey,
}

impl Signer {
    /// The key with this 32-byte secret.
    pub fn from_secret(secret: [u8; 32]) -> Signer {
        Signer { key: SigningKey::from_bytes(&secret) }
    }

    /// A deterministic key derived from `seed` (distinct seeds, distinct keys).
    pub fn from_seed(seed: u8) -> Signer {
        let secret: [u8; 32] = Sha256::digest([b"crawlgate-test-key-".as_slice(), &[seed]].concat()).into();
        Signer::from_secret(secret)
    }

    /// RFC 9421's `test-key-ed25519`.
    pub fn rfc9421() -> Signer {
        Signer::from_secret(RFC9421_ED25519_SECRET)
    }

    /// The public key's 32 bytes.
    pub fn public_key(&self) -> [u8; 32] {
        self.key.verifying_key().to_bytes()
    }

    /// The public key, base64url (the JWK `x`).
    pub fn x(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.key.verifying_key().as_bytes())
    }

    /// The RFC 7638 JWK thumbprint, the Web Bot Auth `keyid`.
    pub fn keyid(&self) -> String {
        let canonical = format!(r#"{{"crv":"Ed25519","kty":"OKP","x":"{}"}}"#, self.x());
        URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()))
    }

    /// The public key as a JWK (JSON text).
    pub fn jwk(&self) -> String {
        format!(r#"{{"kty":"OKP","crv":"Ed25519","x":"{}"}}"#, self.x())
    }

    /// Signs `req`.
    pub fn sign(&self, req: &Request, opts: &SignOptions) -> SignedHeaders {
        let (agent_header, agent_component) = match &opts.agent {
            None => (None, None),
            Some(Agent::Dictionary(url)) => (
                Some(format!("{}=\"{url}\"", opts.label)),
                Some(Component::HeaderKey("signature-agent".into(), opts.label.clone())),
            ),
            Some(Agent::String(url)) => (Some(format!("\"{url}\"")), Some(Component::Header("signature-agent".into()))),
            Some(Agent::Member { key, url }) => {
                (Some(format!("{key}=\"{url}\"")), Some(Component::HeaderKey("signature-agent".into(), key.clone())))
            }
            Some(Agent::Raw { value, covered_key }) => (
                Some(value.clone()),
                Some(match covered_key {
                    Some(k) => Component::HeaderKey("signature-agent".into(), k.clone()),
                    None => Component::Header("signature-agent".into()),
                }),
            ),
        };
        let mut components = opts.components.clone();
        if let Some(c) = agent_component.filter(|_| opts.cover_agent) {
            components.push(c);
        }
        let mut headers = req.headers.clone();
        if let Some(a) = &agent_header {
            headers.push(("signature-agent".into(), a.clone()));
        }
        let mut base = String::new();
        for c in &components {
            base.push_str(&c.identifier());
            base.push_str(": ");
            base.push_str(&component_value(req, &headers, c));
            base.push('\n');
        }
        let mut params = format!("({})", components.iter().map(Component::identifier).collect::<Vec<_>>().join(" "));
        params.push_str(&format!(";created={}", opts.created));
        if let Some(e) = opts.expires {
            params.push_str(&format!(";expires={e}"));
        }
        match opts.keyid.as_deref() {
            Some("") => {}
            Some(k) => params.push_str(&format!(";keyid=\"{k}\"")),
            None => params.push_str(&format!(";keyid=\"{}\"", self.keyid())),
        }
        if let Some(a) = &opts.alg {
            params.push_str(&format!(";alg=\"{a}\""));
        }
        if let Some(n) = &opts.nonce {
            params.push_str(&format!(";nonce=\"{n}\""));
        }
        if let Some(t) = &opts.tag {
            params.push_str(&format!(";tag=\"{t}\""));
        }
        base.push_str("\"@signature-params\": ");
        base.push_str(&params);
        let signature = self.key.sign(base.as_bytes());
        SignedHeaders {
            signature_input: format!("{}={params}", opts.label),
            signature: format!("{}=:{}:", opts.label, STANDARD.encode(signature.to_bytes())),
            signature_agent: agent_header,
            base,
        }
    }
}

fn component_value(req: &Request, headers: &[(String, String)], c: &Component) -> String {
    let (path, query) = match req.target.split_once('?') {
        Some((p, q)) => (p.to_owned(), Some(q.to_owned())),
        None => (req.target.clone(), None),
    };
    let lines = |name: &str| {
        headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_owned())
            .collect::<Vec<_>>()
    };
    match c {
        Component::Derived(n) => match n.as_str() {
            "@method" => req.method.clone(),
            "@authority" => req.authority.to_ascii_lowercase(),
            "@scheme" => req.scheme.clone(),
            "@target-uri" => format!("{}://{}{}", req.scheme, req.authority.to_ascii_lowercase(), req.target),
            "@request-target" => req.target.clone(),
            "@path" => path,
            "@query" => format!("?{}", query.unwrap_or_default()),
            other => panic!("the test signer does not derive {other}"),
        },
        Component::Header(n) => lines(n).join(", "),
        Component::HeaderKey(n, k) => {
            let joined = lines(n).join(", ");
            joined
                .split(',')
                .map(str::trim)
                .find_map(|m| m.strip_prefix(&format!("{k}=")).map(str::to_owned))
                .unwrap_or_else(|| panic!("header {n} has no member {k}"))
        }
    }
}

impl Signer {
    /// The `Signature-Input` and `Signature` of a key directory's response
    /// (draft-meunier-http-message-signatures-directory): covers
    /// `"@authority";req` (the directory's `authority`), tagged
    /// `http-message-signatures-directory`, labelled `binding0`.
    pub fn sign_directory(&self, authority: &str, created: i64, expires: i64) -> (String, String) {
        let params = format!(
            "(\"@authority\";req);created={created};keyid=\"{}\";alg=\"ed25519\";expires={expires};tag=\"http-message-signatures-directory\"",
            self.keyid()
        );
        let base = format!("\"@authority\";req: {}\n\"@signature-params\": {params}", authority.to_ascii_lowercase());
        let signature = self.key.sign(base.as_bytes());
        (format!("binding0={params}"), format!("binding0=:{}:", STANDARD.encode(signature.to_bytes())))
    }
}

/// The JSON of a Signature Agent Card (draft-meunier-webbotauth-registry)
/// listing these signers' keys under `jwks`, with `members` (JSON object
/// members, e.g. `"rfc9309-product-token":"GPTBot"`) in its `web_bot_auth`
/// object.
pub fn card_json(signers: &[&Signer], members: &str) -> String {
    let keys: Vec<String> = signers.iter().map(|s| s.jwk()).collect();
    format!(r#"{{"client_name":"Test agent","web_bot_auth":{{{members}}},"jwks":{{"keys":[{}]}}}}"#, keys.join(","))
}

/// The JSON of a key directory (a JWKS) listing these signers' public keys.
pub fn directory_json(signers: &[&Signer]) -> String {
    let keys: Vec<String> = signers.iter().map(|s| s.jwk()).collect();
    format!(r#"{{"keys":[{}]}}"#, keys.join(","))
}

/// What a [`DirectoryServer`] answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirectoryResponse {
    /// The status code.
    pub status: u16,
    /// `Content-Type`.
    pub content_type: String,
    /// `Cache-Control`, if any.
    pub cache_control: Option<String>,
    /// The body.
    pub body: String,
    /// More header fields (e.g. the response's own signature).
    pub headers: Vec<(String, String)>,
}

impl DirectoryResponse {
    /// A 200 with the directory media type and `Cache-Control: max-age=3600`.
    pub fn ok(body: String) -> DirectoryResponse {
        DirectoryResponse {
            status: 200,
            content_type: "application/http-message-signatures-directory+json".into(),
            cache_control: Some("max-age=3600".into()),
            body,
            headers: Vec::new(),
        }
    }
}

/// A key directory served over plain HTTP on 127.0.0.1 (for verifiers
/// configured to allow it), counting the requests it answers. Stopped on
/// drop.
pub struct DirectoryServer {
    addr: std::net::SocketAddr,
    hits: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    response: std::sync::Arc<std::sync::Mutex<DirectoryResponse>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl DirectoryServer {
    /// Starts serving `response` for every request.
    pub fn start(response: DirectoryResponse) -> DirectoryServer {
        use std::io::{Read, Write};
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("addr");
        let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let response = std::sync::Arc::new(std::sync::Mutex::new(response));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (h, r, s) = (hits.clone(), response.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::SeqCst) {
                let mut conn = match listener.accept() {
                    Ok((c, _)) => c,
                    Err(_) => {
                        std::thread::sleep(std::time::Duration::from_millis(5));
                        continue;
                    }
                };
                let _ = conn.set_nonblocking(false);
                let _ = conn.set_read_timeout(Some(std::time::Duration::from_secs(5)));
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match conn.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                h.fetch_add(1, Ordering::SeqCst);
                let resp = r.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
                let mut out = format!(
                    "HTTP/1.1 {} X\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n",
                    resp.status,
                    resp.content_type,
                    resp.body.len()
                );
                if let Some(cc) = &resp.cache_control {
                    out.push_str(&format!("Cache-Control: {cc}\r\n"));
                }
                for (name, value) in &resp.headers {
                    out.push_str(&format!("{name}: {value}\r\n"));
                }
                out.push_str("\r\n");
                out.push_str(&resp.body);
                let _ = conn.write_all(out.as_bytes());
            }
        });
        DirectoryServer { addr, hits, response, stop, thread: Some(thread) }
    }

    /// The server's address.
    pub fn addr(&self) -> std::net::SocketAddr {
        self.addr
    }

    /// The `Signature-Agent` URL that points at this server.
    pub fn agent_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// How many requests it has answered.
    pub fn hits(&self) -> usize {
        self.hits.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Answers `response` from now on.
    pub fn set_response(&self, response: DirectoryResponse) {
        *self.response.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = response;
    }
}

impl Drop for DirectoryServer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
