//! Signing keys for Web Bot Auth: pinned in the policy, or fetched over
//! HTTPS from the agent's `/.well-known/http-message-signatures-directory`
//! (a JWKS of media type `application/http-message-signatures-directory+json`,
//! draft-meunier-http-message-signatures-directory) and cached for their
//! lifetime.
//!
//! Keys are named by their JWK thumbprint (RFC 7638 with the OKP members of
//! RFC 8037 section 2), which is what the Web Bot Auth profile puts in
//! `keyid`. A key proves a token when it is pinned for that token, or when
//! it is listed in the directory of a host that a built-in catalog entry
//! names in `signature_agents` (e.g. `chatgpt.com` for `ChatGPT-User`);
//! other directories are fetched only with `any_agent`, and their keys
//! prove no token, unless their Signature Agent Card names one
//! ([`crate::directory`]). A card that names its keys by `jwks_uri`
//! instead of listing them has that JWKS fetched with the same bounds, and
//! its keys speak for the card's token only
//! ([`crate::directory::parse_card_jwks`]).
//!
//! Fetches are bounded (draft-meunier-web-bot-auth-architecture, verifier
//! rules) by `crawlgate_outbound`'s client: HTTPS only, no redirects, no
//! proxy, no private, loopback or link-local address (checked on the
//! resolved address), at most [`MAX_DIRECTORY_BYTES`] and
//! [`crate::directory::MAX_DIRECTORY_KEYS`] keys, cached for the response's
//! `max-age` within bounds (`crawlgate_outbound::fetch::cache_ttl`). A
//! failure is remembered for [`NEGATIVE_TTL`] (at most 5 minutes), and a
//! failed refresh keeps the keys already cached.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crawlgate_outbound::fetch::{self, FetchError, Options, Outbound, Reach, Refusal};
use crawlgate_outbound::jwk::parse_ed25519_jwk;
use ed25519_dalek::VerifyingKey;

use crate::directory::{self, Card, DirectoryKey, DirectorySignature};
use crate::ranges::{IpPrefix, RangeTable};
use crate::wba::base::unix_seconds;

/// At most this many `ips_uri` lists are fetched for one directory.
const MAX_CARD_LISTS: usize = 4;
/// At most this many card lists are kept in all (each up to
/// [`crate::lists::MAX_BODY`]); a new one past it is not fetched.
const MAX_CARD_LISTS_TOTAL: usize = 16;

/// An IP list a Signature Agent Card publishes (`ips_uri`): one more list
/// for the token the card binds.
#[derive(Clone, Debug)]
struct CardList {
    source: Arc<str>,
    table: Arc<RangeTable>,
}

/// The well-known path of a key directory.
pub const DIRECTORY_PATH: &str = "/.well-known/http-message-signatures-directory";

/// The media type of a key directory.
pub const DIRECTORY_MEDIA_TYPE: &str = "application/http-message-signatures-directory+json";

/// The largest directory body read.
pub const MAX_DIRECTORY_BYTES: usize = 64 * 1024;

/// How long a failed fetch is remembered before the next try (the draft
/// allows at most 5 minutes); a cached key set whose refresh failed is kept
/// and retried after as long.
pub const NEGATIVE_TTL: Duration = Duration::from_secs(30);
/// A keyid missing from a cached directory refetches it (key rotation), at
/// most this often.
const REFETCH_ON_MISS: Duration = Duration::from_secs(60);

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
    /// The longest `expires - created` accepted (draft-meunier-web-bot-auth-architecture
    /// advises a short window; default 5 minutes).
    pub max_validity: Duration,
    /// This site's authorities (`host` or `host:port`, lower-cased): a
    /// signature's covered `@authority` must be one of them. Empty: no
    /// signature is valid.
    pub authorities: Vec<String>,
    /// The derived components a signature must cover (`@target-uri`
    /// stands for `@authority`, `@scheme`, `@path` and `@query`).
    pub required_components: Vec<String>,
    /// Whether the directory of any `Signature-Agent` may be fetched, not
    /// only those of the hosts the built-in catalog lists
    /// (`signature_agents`). Off by default: the header is chosen by the
    /// client, so fetching any host lets clients make the proxy send
    /// requests anywhere.
    pub any_agent: bool,
    /// Whether directories on private, loopback or link-local addresses
    /// may be fetched (tests only).
    pub allow_private: bool,
}

impl Default for KeysConfig {
    fn default() -> KeysConfig {
        KeysConfig {
            pinned: Vec::new(),
            fetch_timeout: Duration::from_secs(2),
            cache_size: 256,
            max_skew: Duration::from_secs(60),
            allow_http: false,
            max_validity: Duration::from_secs(300),
            authorities: Vec::new(),
            required_components: ["@authority", "@method", "@path"].into_iter().map(str::to_owned).collect(),
            any_agent: false,
            allow_private: false,
        }
    }
}

/// Why the key configuration is invalid (a pinned JWK that does not parse).
#[derive(Clone, Debug, thiserror::Error)]
#[error("{0}")]
pub struct KeyError(pub String);

/// Where a key came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeySource {
    /// Pinned in the policy.
    Pinned,
    /// Listed in the key directory at this URL.
    Directory(String),
}

/// A public key that can check a signature, and what it proves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KnownKey {
    /// The key.
    pub key: VerifyingKey,
    /// The token it proves: the pinned key's, or the catalog's for the
    /// directory's host.
    pub token: Option<String>,
    /// Where it came from.
    pub source: KeySource,
    /// The Signature Agent Card members that describe it, if its directory
    /// has any.
    pub card: Option<Arc<Card>>,
}

/// The result of looking a keyid up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyLookup {
    /// The key is known.
    Found(Box<KnownKey>),
    /// The key could not be obtained; the reason says why.
    Unknown(String),
}

/// The keys known and cached; cheap to clone.
#[derive(Clone, Debug)]
pub struct Keys {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    pinned: HashMap<String, KnownKey>,
    fetch_timeout: Duration,
    cache_size: usize,
    max_skew: Duration,
    max_validity: Duration,
    authorities: Vec<String>,
    required_components: Vec<String>,
    any_agent: bool,
    /// Key directories, their cards' JWKS and IP lists: https only (http
    /// with `allow_http`), public addresses only (any with
    /// `allow_private`).
    outbound: Outbound,
    directories: Mutex<HashMap<String, DirEntry>>,
    /// Card IP lists by token (ASCII lowercase); replaced whole, read
    /// without a lock.
    card_lists: arc_swap::ArcSwap<HashMap<String, Vec<CardList>>>,
    inflight: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

#[derive(Clone, Debug)]
struct DirEntry {
    keys: Result<Arc<HashMap<String, DirectoryKey>>, String>,
    fetched: Instant,
    expires: Instant,
}

/// A directory to fetch, worked out from a `Signature-Agent` value.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Directory {
    /// The identifier: the cache key, and the source keys are found under.
    url: String,
    /// What is fetched (the identifier with the member's query).
    fetch: String,
    host: String,
    token: Option<String>,
    /// Whether it is a well-known key directory, held to its media type
    /// and to `kid` = thumbprint.
    well_known: bool,
}

impl Keys {
    /// Builds the key store from the pinned keys.
    pub fn new(config: KeysConfig) -> Result<Keys, KeyError> {
        let KeysConfig {
            pinned,
            fetch_timeout,
            cache_size,
            max_skew,
            allow_http,
            max_validity,
            authorities,
            required_components,
            any_agent,
            allow_private,
        } = config;
        let mut by_id = HashMap::new();
        for (i, p) in pinned.iter().enumerate() {
            let jwk: serde_json::Value = serde_json::from_str(&p.jwk)
                .map_err(|e| KeyError(format!("pinned key {} ({}): the JWK is not JSON: {e}", i + 1, p.token)))?;
            let parsed =
                parse_ed25519_jwk(&jwk).map_err(|e| KeyError(format!("pinned key {} ({}): {e}", i + 1, p.token)))?;
            let known =
                KnownKey { key: parsed.key, token: Some(p.token.clone()), source: KeySource::Pinned, card: None };
            if let Some(kid) = parsed.kid {
                by_id.insert(kid, known.clone());
            }
            by_id.insert(parsed.thumbprint, known);
        }
        // No redirects (the default): a redirect would send the fetch to a
        // place the checks above did not see. No proxy: the client names
        // the host, which the proxy would resolve unchecked.
        let options = Options { no_proxy: true, ..Options::default() };
        let outbound = Outbound::with_options(Reach { allow_http, allow_private }, fetch_timeout, options)
            .map_err(|e| KeyError(format!("key directories: {e}")))?;
        Ok(Keys {
            inner: Arc::new(Inner {
                pinned: by_id,
                fetch_timeout,
                cache_size: cache_size.max(1),
                max_skew,
                max_validity,
                authorities: authorities.iter().map(|a| a.to_ascii_lowercase()).collect(),
                required_components,
                any_agent,
                outbound,
                directories: Mutex::new(HashMap::new()),
                card_lists: arc_swap::ArcSwap::from_pointee(HashMap::new()),
                inflight: Mutex::new(HashMap::new()),
            }),
        })
    }

    /// The allowed clock skew for `created`/`expires`.
    pub fn max_skew(&self) -> Duration {
        self.inner.max_skew
    }

    /// The longest `expires - created` accepted.
    pub fn max_validity(&self) -> Duration {
        self.inner.max_validity
    }

    /// This site's authorities, lower-cased.
    pub fn authorities(&self) -> &[String] {
        &self.inner.authorities
    }

    /// Whether `http` key URLs are allowed (tests only).
    pub fn allows_http(&self) -> bool {
        self.inner.outbound.reach().allow_http
    }

    /// The derived components a signature must cover.
    pub fn required_components(&self) -> &[String] {
        &self.inner.required_components
    }

    /// The pinned key named `keyid` (its thumbprint or its JWK `kid`).
    pub fn pinned(&self, keyid: &str) -> Option<&KnownKey> {
        self.inner.pinned.get(keyid)
    }

    /// The number of directories cached (fetched or failed).
    pub fn cached_directories(&self) -> usize {
        lock(&self.inner.directories).len()
    }

    /// Looks `keyid` up without waiting: pinned keys, then the cached
    /// directory of `agent` (the `Signature-Agent` URL). `None` when only a
    /// directory fetch could tell.
    pub fn cached_key(&self, keyid: &str, agent: Option<&str>) -> Option<KeyLookup> {
        if let Some(k) = self.inner.pinned.get(keyid) {
            return Some(KeyLookup::Found(Box::new(k.clone())));
        }
        let Some(agent) = agent else {
            return Some(KeyLookup::Unknown(format!(
                "keyid {keyid:?} is not pinned and the request names no Signature-Agent"
            )));
        };
        let dir = match self.directory_for(agent) {
            Ok(d) => d,
            Err(reason) => return Some(KeyLookup::Unknown(reason)),
        };
        let entry = lock(&self.inner.directories).get(&dir.url).cloned()?;
        let now = Instant::now();
        if entry.expires <= now {
            return None;
        }
        match entry.keys {
            Err(reason) => Some(KeyLookup::Unknown(reason)),
            Ok(keys) => match keys.get(keyid) {
                Some(key) => Some(self.found(key, &dir)),
                None if now.duration_since(entry.fetched) < REFETCH_ON_MISS => {
                    Some(KeyLookup::Unknown(format!("keyid {keyid:?} is not in {}", dir.url)))
                }
                None => None,
            },
        }
    }

    /// Looks `keyid` up: pinned keys, then the directory of `agent` (the
    /// `Signature-Agent` URL), fetched if it is not cached. Concurrent
    /// fetches of one directory are coalesced; no lock is held across an
    /// await.
    pub async fn key(&self, keyid: &str, agent: Option<&str>) -> KeyLookup {
        if let Some(hit) = self.cached_key(keyid, agent) {
            return hit;
        }
        let Some(agent) = agent else {
            return KeyLookup::Unknown(format!("keyid {keyid:?} is not pinned"));
        };
        let dir = match self.directory_for(agent) {
            Ok(d) => d,
            Err(reason) => return KeyLookup::Unknown(reason),
        };
        let gate = lock(&self.inner.inflight).entry(dir.url.clone()).or_default().clone();
        let outcome = {
            let _turn = gate.lock().await;
            // Whoever held the gate before may have fetched it meanwhile.
            match self.cached_key(keyid, Some(agent)) {
                Some(hit) => hit,
                None => {
                    let entry = self.fetch(&dir).await;
                    let fetched = entry.keys.is_ok();
                    let entry = self.store(&dir.url, entry);
                    // In the background: the request waits for the
                    // directory only, never for the lists its cards name.
                    if let (true, Ok(keys), Ok(rt)) = (fetched, &entry.keys, tokio::runtime::Handle::try_current()) {
                        let (this, dir, keys) = (self.clone(), dir.clone(), keys.clone());
                        rt.spawn(async move { this.refresh_card_lists(&dir, &keys).await });
                    }
                    match entry.keys {
                        Err(reason) => KeyLookup::Unknown(reason),
                        Ok(keys) => match keys.get(keyid) {
                            Some(key) => self.found(key, &dir),
                            None => KeyLookup::Unknown(format!("keyid {keyid:?} is not in {}", dir.url)),
                        },
                    }
                }
            }
        };
        let mut inflight = lock(&self.inner.inflight);
        if inflight.get(&dir.url).is_some_and(|g| Arc::ptr_eq(g, &gate)) && Arc::strong_count(&gate) <= 2 {
            inflight.remove(&dir.url);
        }
        outcome
    }

    /// What to fetch for a `Signature-Agent` member URL, and the token its
    /// host speaks for: the URL itself as a JWKS
    /// (draft-ietf-webbotauth-httpsig-protocol-01), or for an origin-only
    /// value (the legacy form, [`crate::wba::agent::Legacy::OriginOnly`])
    /// that origin's well-known directory. The cache key is the fetched
    /// URL's identifier ([`crate::wba::agent::identifier`]).
    fn directory_for(&self, agent: &str) -> Result<Directory, String> {
        let reach = self.inner.outbound.reach();
        let url = reqwest::Url::parse(agent).map_err(|e| format!("Signature-Agent {agent:?} is not a URL: {e}"))?;
        if reach.check_scheme(&url).is_err() {
            let scheme = url.scheme();
            return Err(format!("Signature-Agent {agent:?}: the {scheme:?} scheme is not fetched (https only)"));
        }
        let host = url.host_str().ok_or_else(|| format!("Signature-Agent {agent:?} has no host"))?.to_ascii_lowercase();
        let token = token_for_agent_host(&host);
        if token.is_none() && !self.inner.any_agent {
            return Err(format!("Signature-Agent host {host:?} is not a known agent (no catalog entry lists it)"));
        }
        // An address literal never reaches the client's resolver: checked
        // here.
        if let Err(why) = reach.check_address(&url) {
            return Err(format!("Signature-Agent {agent:?}: {why}; directory not fetched"));
        }
        let well_known = crate::wba::agent::is_origin_only(agent);
        let fetch = if well_known {
            let origin = match url.port() {
                Some(p) => format!("{}://{host}:{p}", url.scheme()),
                None => format!("{}://{host}", url.scheme()),
            };
            format!("{origin}{DIRECTORY_PATH}")
        } else {
            url.to_string()
        };
        let well_known = well_known || url.path() == DIRECTORY_PATH;
        let url = crate::wba::agent::identifier(&fetch)?;
        Ok(Directory { url, fetch, host, token, well_known })
    }

    /// Caches `entry` and returns what is cached: a failed refresh of a
    /// directory whose keys are cached keeps those keys, retried after
    /// [`NEGATIVE_TTL`].
    fn store(&self, url: &str, mut entry: DirEntry) -> DirEntry {
        let mut dirs = lock(&self.inner.directories);
        if let (Err(reason), Some(DirEntry { keys: Ok(old), .. })) = (&entry.keys, dirs.get(url)) {
            tracing::info!(directory = url, error = %reason, "Key directory refresh failed; the cached keys are kept");
            entry.keys = Ok(old.clone());
        }
        if !dirs.contains_key(url) && dirs.len() >= self.inner.cache_size {
            let now = Instant::now();
            dirs.retain(|_, e| e.expires > now);
            if dirs.len() >= self.inner.cache_size {
                if let Some(oldest) = dirs.iter().min_by_key(|(_, e)| e.expires).map(|(k, _)| k.clone()) {
                    dirs.remove(&oldest);
                }
            }
        }
        dirs.insert(url.to_owned(), entry.clone());
        entry
    }

    async fn fetch(&self, dir: &Directory) -> DirEntry {
        let fetched = Instant::now();
        let url = dir.url.as_str();
        match self.fetch_directory(&dir.fetch, dir.well_known).await {
            Ok((keys, ttl)) => {
                tracing::debug!(directory = url, keys = keys.len(), ttl_s = ttl.as_secs(), "Fetched key directory");
                DirEntry { keys: Ok(Arc::new(keys)), fetched, expires: fetched + ttl }
            }
            Err(reason) => {
                tracing::info!(directory = url, error = %reason, "Key directory fetch failed");
                DirEntry { keys: Err(reason), fetched, expires: fetched + NEGATIVE_TTL }
            }
        }
    }
}

impl Keys {
    /// A directory key and the token it proves: its card's
    /// `rfc9309-product-token` when the card may name it (any token with
    /// `any_agent`, else one of the tokens whose catalog entries list the
    /// directory's host), else the catalog's token for the host.
    fn found(&self, key: &DirectoryKey, dir: &Directory) -> KeyLookup {
        KeyLookup::Found(Box::new(KnownKey {
            key: key.key,
            token: self.card_token(key, dir).map(str::to_owned).or_else(|| dir.token.clone()),
            source: KeySource::Directory(dir.url.clone()),
            card: key.card.clone(),
        }))
    }

    /// The token `key`'s card binds, when the card may name it.
    fn card_token<'k>(&self, key: &'k DirectoryKey, dir: &Directory) -> Option<&'k str> {
        key.card.as_ref().and_then(|c| c.token.as_deref()).filter(|t| {
            self.inner.any_agent || tokens_for_agent_host(&dir.host).iter().any(|c| c.eq_ignore_ascii_case(t))
        })
    }

    /// Fetches the `ips_uri` lists of the cards in a directory just
    /// fetched, for the tokens they may bind: with the lists' bounds (size,
    /// parse) and the directories' (timeout, public addresses only, no
    /// redirects). A list that fails keeps its previous copy.
    async fn refresh_card_lists(&self, dir: &Directory, keys: &HashMap<String, DirectoryKey>) {
        let mut wanted: Vec<(String, String)> = Vec::new();
        for k in keys.values() {
            let (Some(token), Some(uri)) =
                (self.card_token(k, dir), k.card.as_ref().and_then(|c| c.ips_uri.as_deref()))
            else {
                continue;
            };
            let pair = (token.to_ascii_lowercase(), uri.to_owned());
            if !wanted.contains(&pair) && wanted.len() < MAX_CARD_LISTS {
                wanted.push(pair);
            }
        }
        for (token, uri) in wanted {
            let known = self.inner.card_lists.load().values().flatten().any(|l| *l.source == *uri);
            let total: usize = self.inner.card_lists.load().values().map(Vec::len).sum();
            if !known && total >= MAX_CARD_LISTS_TOTAL {
                tracing::info!(
                    list = uri,
                    token,
                    "Signature Agent Card IP list not fetched: {MAX_CARD_LISTS_TOTAL} are kept already"
                );
                continue;
            }
            let fetched = match self.fetch_url_allowed(&uri) {
                Err(e) => Err(e),
                Ok(()) => {
                    tokio::time::timeout(self.inner.fetch_timeout, crate::lists::fetch(&self.inner.outbound, &uri))
                        .await
                        .unwrap_or_else(|_| Err("timed out".into()))
                        .and_then(|body| RangeTable::parse(&body).map_err(|e| e.to_string()))
                }
            };
            let table = match fetched {
                Ok(t) => t,
                Err(e) => {
                    tracing::info!(list = uri, token, error = %e, "Signature Agent Card IP list fetch failed");
                    continue;
                }
            };
            tracing::debug!(list = uri, token, prefixes = table.len(), "Fetched a Signature Agent Card IP list");
            let list = CardList { source: uri.as_str().into(), table: Arc::new(table) };
            self.inner.card_lists.rcu(|current| {
                let mut all = HashMap::clone(current);
                let lists = all.entry(token.clone()).or_default();
                lists.retain(|l| l.source != list.source);
                lists.push(list.clone());
                all
            });
        }
    }

    /// Whether a URL a card names (`ips_uri`, `jwks_uri`) may be fetched:
    /// https (http with `allow_http`), and an address literal only when
    /// public (a name is checked when it resolves, by the client's
    /// resolver).
    fn fetch_url_allowed(&self, uri: &str) -> Result<(), String> {
        match self.inner.outbound.reach().check(uri) {
            Ok(_) => Ok(()),
            Err(Refusal::Scheme(scheme)) => Err(format!("the {scheme:?} scheme is not fetched (https only)")),
            Err(why) => Err(why.to_string()),
        }
    }

    /// What the IP lists of the cards that bind `token` say about `ip`:
    /// `None` when no card published one, else the list and prefix that
    /// contain it, or `Some(None)` when none does.
    pub fn card_list_check(&self, token: &str, ip: std::net::IpAddr) -> Option<Option<(Arc<str>, IpPrefix)>> {
        let all = self.inner.card_lists.load();
        if all.is_empty() {
            return None;
        }
        let lists = all.get(&token.to_ascii_lowercase())?;
        Some(lists.iter().find_map(|l| l.table.lookup(ip).map(|p| (l.source.clone(), p))))
    }
}

/// Every token whose catalog entry lists `host` among its
/// `signature_agents` (ASCII case-insensitive).
pub fn tokens_for_agent_host(host: &str) -> Vec<String> {
    crawlgate_policy::verification::sources()
        .iter()
        .filter(|s| s.signature_agents.iter().any(|h| h.eq_ignore_ascii_case(host)))
        .flat_map(|s| s.tokens.iter().cloned())
        .collect()
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The token whose catalog entry lists `host` among its `signature_agents`
/// (ASCII case-insensitive), e.g. `chatgpt.com` -> `ChatGPT-User`.
pub fn token_for_agent_host(host: &str) -> Option<String> {
    crawlgate_policy::verification::sources()
        .iter()
        .find(|s| s.signature_agents.iter().any(|h| h.eq_ignore_ascii_case(host)))
        .and_then(|s| s.tokens.first().cloned())
}

/// Reads a key directory (a JWKS, RFC 7517 section 5): its Ed25519 keys by
/// thumbprint. Keys of other types are skipped.
pub fn parse_directory(body: &[u8]) -> Result<HashMap<String, VerifyingKey>, String> {
    Ok(directory::parse_directory_document(body)?.into_iter().map(|(id, k)| (id, k.key)).collect())
}

fn acceptable_media_type(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    essence == DIRECTORY_MEDIA_TYPE || essence == "application/json" || essence.ends_with("+json")
}

/// A fetched JSON document: its body, header and cache lifetime.
struct Document {
    body: Vec<u8>,
    headers: http::HeaderMap,
    ttl: Duration,
}

/// One GET of a directory, card or JWKS with the directory bounds: status
/// 200, a JSON media type, at most [`MAX_DIRECTORY_BYTES`] (the client
/// brings the rest: no redirects, public addresses only, its timeout).
async fn fetch_json(outbound: &Outbound, url: &str) -> Result<Document, String> {
    let accept = format!("{DIRECTORY_MEDIA_TYPE}, application/json;q=0.9");
    let resp = outbound.get(url, &accept, MAX_DIRECTORY_BYTES).await.map_err(|e| match e {
        FetchError::TooLarge { .. } => {
            format!("fetching {url}: the directory is larger than {MAX_DIRECTORY_BYTES} bytes")
        }
        // The error names the URL.
        other => format!("fetching {other}"),
    })?;
    if resp.status != 200 {
        return Err(format!("fetching {url}: status {}", resp.status));
    }
    let content_type = resp.header(http::header::CONTENT_TYPE).unwrap_or("");
    if !acceptable_media_type(content_type) {
        return Err(format!("fetching {url}: media type {content_type:?} is not {DIRECTORY_MEDIA_TYPE} or JSON"));
    }
    let ttl = fetch::cache_ttl(resp.header(http::header::CACHE_CONTROL));
    Ok(Document { body: resp.body, headers: resp.headers, ttl })
}

/// The `host[:port]` of a URL, as a response signature covers it.
fn url_authority(url: &str) -> String {
    reqwest::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(|h| u.port().map_or(h.to_owned(), |p| format!("{h}:{p}"))))
        .unwrap_or_default()
}

/// Checks the response signature of a document fetched from `url` with
/// the keys it lists (or its card's JWKS lists): a signed response is
/// trusted only when a signature verifies
/// (draft-meunier-http-message-signatures-directory).
fn check_response_signature(
    url: &str,
    headers: &http::HeaderMap,
    keys: &HashMap<String, DirectoryKey>,
    skew: Duration,
) -> Result<(), String> {
    let now = unix_seconds(std::time::SystemTime::now());
    let skew = i64::try_from(skew.as_secs()).unwrap_or(i64::MAX);
    match directory::verify_directory_response(headers, &url_authority(url), keys, now, skew) {
        DirectorySignature::Invalid { reason } => {
            Err(format!("{url}: the directory's response signature is invalid, not trusted: {reason}"))
        }
        DirectorySignature::Valid { keyid } => {
            tracing::debug!(directory = url, keyid, "Key directory response signature verified");
            Ok(())
        }
        DirectorySignature::Unsigned => Ok(()),
    }
}

impl Keys {
    /// Fetches the directory at `url` and, when it is a Signature Agent
    /// Card that names its keys by `jwks_uri`, that JWKS: both with the
    /// directory bounds ([`fetch_json`], [`Keys::fetch_url_allowed`]), the
    /// two within one `fetch_timeout`, cached for the shorter lifetime.
    ///
    /// A well-known directory (`well_known`) must have the directory media
    /// type, and a key whose `kid` is not its thumbprint is left out
    /// (draft-ietf-webbotauth-httpsig-protocol-01).
    async fn fetch_directory(
        &self,
        url: &str,
        well_known: bool,
    ) -> Result<(HashMap<String, DirectoryKey>, Duration), String> {
        let client = &self.inner.outbound;
        let skew = self.inner.max_skew;
        let fetch = async {
            let card = fetch_json(client, url).await?;
            if well_known {
                let content_type = card.headers.get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
                let essence = content_type.unwrap_or("").split(';').next().unwrap_or("").trim().to_ascii_lowercase();
                if essence != DIRECTORY_MEDIA_TYPE {
                    return Err(format!(
                        "fetching {url}: a well-known key directory must be {DIRECTORY_MEDIA_TYPE}, not {:?}",
                        content_type.unwrap_or("")
                    ));
                }
            }
            match directory::read_directory_document(&card.body, Some(url)).map_err(|e| format!("{url}: {e}"))? {
                directory::DirectoryDocument::Keys(mut keys) => {
                    if well_known {
                        for thumbprint in directory::kid_mismatches(&card.body) {
                            tracing::debug!(
                                directory = url,
                                thumbprint,
                                "Directory key whose kid is not its thumbprint left out"
                            );
                            keys.remove(&thumbprint);
                        }
                    }
                    check_response_signature(url, &card.headers, &keys, skew)?;
                    Ok((keys, card.ttl))
                }
                directory::DirectoryDocument::JwksUri { uri, card: members } => {
                    let jwks_url = reqwest::Url::parse(url)
                        .and_then(|base| base.join(&uri))
                        .map_err(|e| format!("{url}: jwks_uri {uri:?} is not a URL: {e}"))?
                        .to_string();
                    self.fetch_url_allowed(&jwks_url).map_err(|e| format!("{url}: jwks_uri {jwks_url}: {e}"))?;
                    let jwks = fetch_json(client, &jwks_url).await?;
                    let keys = directory::parse_card_jwks(&jwks.body, &members)
                        .map_err(|e| format!("{url}: jwks_uri {jwks_url}: {e}"))?;
                    // The card's own signature is made with a key its JWKS
                    // lists; the JWKS may sign its response as well.
                    check_response_signature(url, &card.headers, &keys, skew)?;
                    check_response_signature(&jwks_url, &jwks.headers, &keys, skew)?;
                    Ok((keys, card.ttl.min(jwks.ttl)))
                }
            }
        };
        // The client's own timeout covers each exchange; this one bounds
        // the whole (a card and its JWKS, a server that trickles the body).
        let timeout = self.inner.fetch_timeout;
        tokio::time::timeout(timeout, fetch)
            .await
            .unwrap_or_else(|_| Err(format!("fetching {url}: timed out after {} ms", timeout.as_millis())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directory_parse_skips_other_key_types() {
        let body = br#"{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"},{"kty":"OKP","crv":"Ed25519","x":"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs"}]}"#;
        let keys = parse_directory(body).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(keys.keys().collect::<Vec<_>>(), vec!["poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U"]);
        assert!(parse_directory(b"{}").is_err_and(|e| e.contains("no \"keys\" array")));
        assert!(parse_directory(b"\xff").is_err_and(|e| e.contains("not JSON")));
    }

    #[test]
    fn media_types() {
        assert!(acceptable_media_type("application/http-message-signatures-directory+json"));
        assert!(acceptable_media_type("Application/JSON; charset=utf-8"));
        assert!(!acceptable_media_type("text/html"));
        assert!(!acceptable_media_type(""));
    }

    #[test]
    fn agent_hosts_map_to_catalog_tokens() {
        assert_eq!(token_for_agent_host("chatgpt.com").as_deref(), Some("ChatGPT-User"));
        assert_eq!(token_for_agent_host("ChatGPT.com").as_deref(), Some("ChatGPT-User"));
        assert_eq!(token_for_agent_host("example.com"), None);
    }

    #[test]
    fn directory_urls_follow_the_agent_origin_and_scope() {
        let keys = Keys::new(KeysConfig::default()).unwrap_or_else(|e| panic!("{e}"));
        // -01: the member URL is the JWKS itself, its identifier without
        // the query.
        assert_eq!(
            keys.directory_for("https://ChatGPT.com:443/some/./keys?v=2"),
            Ok(Directory {
                url: "https://chatgpt.com/some/keys".into(),
                fetch: "https://chatgpt.com/some/keys?v=2".into(),
                host: "chatgpt.com".into(),
                token: Some("ChatGPT-User".into()),
                well_known: false,
            })
        );
        // The legacy origin-only value: the origin's well-known directory.
        for origin in ["https://chatgpt.com", "https://chatgpt.com/"] {
            assert_eq!(
                keys.directory_for(origin),
                Ok(Directory {
                    url: "https://chatgpt.com/.well-known/http-message-signatures-directory".into(),
                    fetch: "https://chatgpt.com/.well-known/http-message-signatures-directory".into(),
                    host: "chatgpt.com".into(),
                    token: Some("ChatGPT-User".into()),
                    well_known: true,
                }),
                "{origin}"
            );
        }
        assert_eq!(
            keys.directory_for("https://chatgpt.com/.well-known/http-message-signatures-directory")
                .map(|d| d.well_known),
            Ok(true)
        );
        assert!(keys.directory_for("http://chatgpt.com").is_err_and(|e| e.contains("https only")));
        assert!(keys.directory_for("https://evil.example").is_err_and(|e| e.contains("not a known agent")));
        assert!(keys.directory_for("not a url").is_err_and(|e| e.contains("not a URL")));
        // An address literal is checked here (it never reaches the
        // resolver): private ones are refused unless allowed.
        let public_only = Keys::new(KeysConfig { allow_http: true, any_agent: true, ..KeysConfig::default() })
            .unwrap_or_else(|e| panic!("{e}"));
        for agent in ["http://127.0.0.1:8080", "https://10.0.0.1", "https://[::1]:8443", "https://169.254.169.254"] {
            assert!(public_only.directory_for(agent).is_err_and(|e| e.contains("is not a public address")), "{agent}");
        }
        assert!(public_only.directory_for("https://8.8.8.8").is_ok());
        let open =
            Keys::new(KeysConfig { allow_http: true, any_agent: true, allow_private: true, ..KeysConfig::default() })
                .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            open.directory_for("http://127.0.0.1:8080").map(|d| d.url),
            Ok("http://127.0.0.1:8080/.well-known/http-message-signatures-directory".into())
        );
    }

    #[test]
    fn card_urls_are_refused_like_directories() {
        let strict = Keys::new(KeysConfig::default()).unwrap_or_else(|e| panic!("{e}"));
        let rows: &[(&str, Result<(), &str>)] = &[
            ("https://a.example/ips.json", Ok(())),
            ("https://8.8.8.8/jwks.json", Ok(())),
            ("http://a.example/ips.json", Err("the \"http\" scheme is not fetched (https only)")),
            ("ftp://a.example/ips.json", Err("the \"ftp\" scheme is not fetched (https only)")),
            ("file:///etc/passwd", Err("the \"file\" scheme is not fetched (https only)")),
            ("https://127.0.0.1/jwks.json", Err("127.0.0.1 is not a public address")),
            ("https://10.1.2.3/ips.json", Err("10.1.2.3 is not a public address")),
            ("https://169.254.169.254/latest", Err("169.254.169.254 is not a public address")),
            ("https://[::1]:8443/jwks.json", Err("::1 is not a public address")),
            ("https://[::ffff:192.168.0.1]/jwks.json", Err("::ffff:192.168.0.1 is not a public address")),
            ("not a url", Err("not a URL: relative URL without a base")),
        ];
        for (uri, want) in rows {
            assert_eq!(strict.fetch_url_allowed(uri), want.map_err(str::to_owned), "{uri}");
        }
        // The test-only allowances open exactly what they name.
        let open = Keys::new(KeysConfig { allow_http: true, allow_private: true, ..KeysConfig::default() })
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(open.fetch_url_allowed("http://127.0.0.1:8080/jwks.json"), Ok(()));
        assert!(open.fetch_url_allowed("ftp://127.0.0.1/x").is_err());
    }

    #[test]
    fn a_failed_refresh_keeps_the_cached_keys() {
        let keys = Keys::new(KeysConfig::default()).unwrap_or_else(|e| panic!("{e}"));
        let url = "https://chatgpt.com/.well-known/http-message-signatures-directory";
        let body = br#"{"keys":[{"kty":"OKP","crv":"Ed25519","x":"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs"}]}"#;
        let parsed = directory::parse_directory_document(body).unwrap_or_else(|e| panic!("{e}"));
        let now = Instant::now();
        // Fetched once, then expired.
        keys.store(url, DirEntry { keys: Ok(Arc::new(parsed.clone())), fetched: now, expires: now });
        // The refresh fails: the keys stay, retried after the negative TTL.
        let kept = keys.store(
            url,
            DirEntry { keys: Err("fetching: status 500".into()), fetched: now, expires: now + NEGATIVE_TTL },
        );
        assert_eq!(kept.keys.as_deref().ok(), Some(&parsed));
        let id = "poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";
        match keys.cached_key(id, Some("https://chatgpt.com")) {
            Some(KeyLookup::Found(k)) => assert_eq!(k.token.as_deref(), Some("ChatGPT-User")),
            other => panic!("{other:?}"),
        }
        // A directory never fetched before remembers its failure.
        let other = "https://example.net/.well-known/http-message-signatures-directory";
        let failed =
            keys.store(other, DirEntry { keys: Err("timed out".into()), fetched: now, expires: now + NEGATIVE_TTL });
        assert_eq!(failed.keys.err().as_deref(), Some("timed out"));
        assert!(NEGATIVE_TTL <= Duration::from_secs(300));
    }

    #[test]
    fn pinned_keys_are_found_by_thumbprint_and_kid() {
        let keys = Keys::new(KeysConfig {
            pinned: vec![PinnedKey {
                token: "ChatGPT-User".into(),
                jwk: r#"{"kty":"OKP","crv":"Ed25519","kid":"test-key-ed25519","x":"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs"}"#.into(),
            }],
            ..KeysConfig::default()
        })
        .unwrap_or_else(|e| panic!("{e}"));
        for id in ["poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U", "test-key-ed25519"] {
            match keys.cached_key(id, None) {
                Some(KeyLookup::Found(k)) => {
                    assert_eq!(k.token.as_deref(), Some("ChatGPT-User"));
                    assert_eq!(k.source, KeySource::Pinned);
                }
                other => panic!("{id}: {other:?}"),
            }
        }
        assert!(matches!(keys.cached_key("other", None), Some(KeyLookup::Unknown(_))));
        let bad = Keys::new(KeysConfig {
            pinned: vec![PinnedKey { token: "X".into(), jwk: "{".into() }],
            ..KeysConfig::default()
        });
        assert!(bad.is_err_and(|e| e.0.contains("pinned key 1 (X): the JWK is not JSON")));
    }
}
