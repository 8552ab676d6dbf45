//! HTTP requests to the services crawlgate depends on (a license server's
//! JWKS, an x402 facilitator, a Web Bot Auth key directory, a published IP
//! list). By default: https only, no redirects, a deadline over the whole
//! exchange, a bounded body, and never a private, loopback or link-local
//! address unless the caller allows it ([`Reach`]). Host names are checked
//! after resolution, by the client's own resolver
//! ([`crate::address::PublicOnly`]), so a name that resolves to 127.0.0.1
//! is refused like the literal address. A caller whose job differs says
//! how with [`Options`].

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::address::{is_public, PublicOnly};

/// The User-Agent of every request (the purpose of [`Options`] is added).
const USER_AGENT: &str = concat!("crawlgate/", env!("CARGO_PKG_VERSION"));

/// How long a fetched key set is cached when it sends no `max-age`.
pub const DEFAULT_TTL: Duration = Duration::from_secs(3600);
/// The shortest a fetched key set is cached, whatever it says.
pub const MIN_TTL: Duration = Duration::from_secs(60);
/// The longest a fetched key set is cached, whatever it says.
pub const MAX_TTL: Duration = Duration::from_secs(24 * 3600);

/// What an [`Outbound`] client may reach.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reach {
    /// Plain `http://` URLs are allowed (tests, and IP lists the operator
    /// names).
    pub allow_http: bool,
    /// Private, loopback, link-local and other non-global addresses are
    /// allowed.
    pub allow_private: bool,
}

/// Why a URL may not be requested.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// It does not parse.
    #[error("not a URL: {0}")]
    NotAUrl(String),
    /// Its scheme is not https (nor http when allowed).
    #[error("the {0:?} scheme is not allowed (https only)")]
    Scheme(String),
    /// It names no host.
    #[error("no host")]
    NoHost,
    /// Its host is an address literal that is not public.
    #[error("{0} is not a public address")]
    NotPublic(IpAddr),
}

impl Reach {
    /// Whether `url` may be requested: its scheme, and a literal IP
    /// address (which the resolver never sees).
    pub fn check(&self, url: &str) -> Result<reqwest::Url, Refusal> {
        let parsed = reqwest::Url::parse(url).map_err(|e| Refusal::NotAUrl(e.to_string()))?;
        self.check_scheme(&parsed)?;
        self.check_address(&parsed)?;
        Ok(parsed)
    }

    /// Whether `url`'s scheme may be requested: https, or http with
    /// `allow_http`.
    pub fn check_scheme(&self, url: &reqwest::Url) -> Result<(), Refusal> {
        match url.scheme() {
            "https" => Ok(()),
            "http" if self.allow_http => Ok(()),
            other => Err(Refusal::Scheme(other.to_owned())),
        }
    }

    /// Whether `url`'s host may be requested: an address literal only when
    /// public or `allow_private` (a name is checked when it resolves).
    pub fn check_address(&self, url: &reqwest::Url) -> Result<(), Refusal> {
        let host = url.host_str().ok_or(Refusal::NoHost)?;
        let literal = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
        match literal.parse::<IpAddr>() {
            Ok(ip) if !self.allow_private && !is_public(ip) => Err(Refusal::NotPublic(ip)),
            _ => Ok(()),
        }
    }
}

/// Where a client departs from the defaults, for a caller whose job asks
/// for it. The default is the strictest: no redirects, the proxy of the
/// environment (`HTTPS_PROXY`) used, no purpose named.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Redirects are followed (at most 10). Off by default, since a
    /// redirect sends the request where [`Reach::check`] did not look; the
    /// published IP lists follow them, their URLs being the operator's
    /// choice and their hosts free to move a file.
    pub follow_redirects: bool,
    /// No proxy is used, whatever the environment says. Web Bot Auth key
    /// directories set it: their host is the client's choice, and through
    /// a proxy it would be the proxy that resolves it, unchecked.
    pub no_proxy: bool,
    /// What the requests are for, added to the User-Agent in parentheses
    /// (`crawlgate/0.1.0 (IP list refresh)`) for the other side's logs.
    pub purpose: Option<&'static str>,
}

/// A response read within the bounds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fetched {
    /// The status code.
    pub status: u16,
    /// The header fields (a key directory's response signature is in them).
    pub headers: http::HeaderMap,
    /// The body.
    pub body: Vec<u8>,
}

impl Fetched {
    /// The value of the header field `name`, if present and visible ASCII.
    pub fn header(&self, name: impl http::header::AsHeaderName) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// Why an exchange failed; each message names the URL.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FetchError {
    /// The URL may not be requested; nothing was sent.
    #[error("{}", refused(.url, .why))]
    Refused {
        /// The URL.
        url: String,
        /// Why not.
        why: Refusal,
    },
    /// The connection, the request or the reading of the body failed
    /// (a name that resolves only to addresses that are not public too).
    #[error("{url}: {detail}")]
    Failed {
        /// The URL.
        url: String,
        /// The error and its causes.
        detail: String,
        /// Whether the client's own timeout ended it.
        timed_out: bool,
    },
    /// The body is larger than the caller reads.
    #[error("{url}: the body is larger than {max} bytes")]
    TooLarge {
        /// The URL.
        url: String,
        /// The most bytes read.
        max: usize,
    },
    /// The deadline over the whole exchange passed.
    #[error("{url}: timed out after {} ms", .after.as_millis())]
    TimedOut {
        /// The URL.
        url: String,
        /// The deadline.
        after: Duration,
    },
}

fn refused(url: &str, why: &Refusal) -> String {
    match why {
        Refusal::NotAUrl(e) => format!("{url:?} is not a URL: {e}"),
        other => format!("{url}: {other}"),
    }
}

impl FetchError {
    /// Whether a deadline ended the exchange (as opposed to a refusal or a
    /// bad answer).
    pub fn timed_out(&self) -> bool {
        match self {
            FetchError::Failed { timed_out, .. } => *timed_out,
            FetchError::TimedOut { .. } => true,
            FetchError::Refused { .. } | FetchError::TooLarge { .. } => false,
        }
    }
}

/// Why a client could not be built (its TLS backend, say).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("cannot build the HTTP client: {0}")]
pub struct ClientError(String);

/// A client for one kind of service; cheap to clone.
#[derive(Clone, Debug)]
pub struct Outbound {
    client: reqwest::Client,
    reach: Reach,
    timeout: Duration,
}

impl Outbound {
    /// A client with the default [`Options`] whose every exchange ends
    /// within `timeout`.
    pub fn new(reach: Reach, timeout: Duration) -> Result<Outbound, ClientError> {
        Outbound::with_options(reach, timeout, Options::default())
    }

    /// A client whose every exchange ends within `timeout`, departing from
    /// the defaults as `options` say.
    pub fn with_options(reach: Reach, timeout: Duration, options: Options) -> Result<Outbound, ClientError> {
        let Options { follow_redirects, no_proxy, purpose } = options;
        let redirect =
            if follow_redirects { reqwest::redirect::Policy::default() } else { reqwest::redirect::Policy::none() };
        let mut builder = reqwest::Client::builder().redirect(redirect);
        if !reach.allow_private {
            builder = builder.dns_resolver(Arc::new(PublicOnly));
        }
        if no_proxy {
            builder = builder.no_proxy();
        }
        let agent = match purpose {
            Some(p) => format!("{USER_AGENT} ({p})"),
            None => USER_AGENT.to_owned(),
        };
        let client = builder
            .timeout(timeout)
            .connect_timeout(timeout)
            .user_agent(agent)
            .build()
            .map_err(|e| ClientError(error_chain(&e)))?;
        Ok(Outbound { client, reach, timeout })
    }

    /// The deadline of one exchange.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// What the client may reach.
    pub fn reach(&self) -> Reach {
        self.reach
    }

    /// Whether `url` may be requested ([`Reach::check`]).
    pub fn check_url(&self, url: &str) -> Result<reqwest::Url, FetchError> {
        self.reach.check(url).map_err(|why| FetchError::Refused { url: url.to_owned(), why })
    }

    /// `GET url` with `accept`, reading at most `max_bytes` of body.
    pub async fn get(&self, url: &str, accept: &str, max_bytes: usize) -> Result<Fetched, FetchError> {
        let parsed = self.check_url(url)?;
        let request = self.client.get(parsed).header(reqwest::header::ACCEPT, accept);
        self.exchange(url, request, max_bytes).await
    }

    /// `POST url` with a JSON body, reading at most `max_bytes` of body.
    pub async fn post_json(&self, url: &str, body: Vec<u8>, max_bytes: usize) -> Result<Fetched, FetchError> {
        let parsed = self.check_url(url)?;
        let request = self
            .client
            .post(parsed)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, "application/json")
            .body(body);
        self.exchange(url, request, max_bytes).await
    }

    async fn exchange(
        &self,
        url: &str,
        request: reqwest::RequestBuilder,
        max_bytes: usize,
    ) -> Result<Fetched, FetchError> {
        let failed = |e: reqwest::Error| FetchError::Failed {
            url: url.to_owned(),
            detail: error_chain(&e),
            timed_out: e.is_timeout(),
        };
        let too_large = || FetchError::TooLarge { url: url.to_owned(), max: max_bytes };
        let exchange = async {
            let mut resp = request.send().await.map_err(failed)?;
            let status = resp.status().as_u16();
            let headers = resp.headers().clone();
            if resp.content_length().is_some_and(|n| n > max_bytes as u64) {
                return Err(too_large());
            }
            let mut body = Vec::new();
            while let Some(chunk) = resp.chunk().await.map_err(failed)? {
                if body.len() + chunk.len() > max_bytes {
                    return Err(too_large());
                }
                body.extend_from_slice(&chunk);
            }
            Ok(Fetched { status, headers, body })
        };
        // The client's timeout covers each phase; this one also bounds a
        // server that trickles its body.
        tokio::time::timeout(self.timeout, exchange)
            .await
            .unwrap_or_else(|_| Err(FetchError::TimedOut { url: url.to_owned(), after: self.timeout }))
    }
}

/// How long a fetched key set may be cached: `Cache-Control: max-age`
/// (RFC 9111 section 5.2.2.1), clamped to [`MIN_TTL`] and [`MAX_TTL`];
/// `no-store`/`no-cache` get the minimum, none [`DEFAULT_TTL`].
pub fn cache_ttl(cache_control: Option<&str>) -> Duration {
    let Some(cc) = cache_control else {
        return DEFAULT_TTL;
    };
    let mut ttl = DEFAULT_TTL;
    for directive in cc.split(',') {
        let d = directive.trim().to_ascii_lowercase();
        if d == "no-store" || d == "no-cache" {
            return MIN_TTL;
        }
        if let Some(v) = d.strip_prefix("max-age=") {
            ttl = v.trim_matches('"').parse::<u64>().map(Duration::from_secs).unwrap_or(DEFAULT_TTL);
        }
    }
    ttl.clamp(MIN_TTL, MAX_TTL)
}

/// An error and its sources, joined with `: ` (reqwest's own message names
/// only the URL; the cause is in the chain).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.ends_with(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked_before_any_connection() {
        let strict = Outbound::new(Reach { allow_http: false, allow_private: false }, Duration::from_secs(1))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(strict.check_url("https://example.com/jwks.json").is_ok());
        let err = |o: &Outbound, u: &str| {
            o.check_url(u).err().map(|e| e.to_string()).unwrap_or_else(|| panic!("{u} allowed"))
        };
        assert!(err(&strict, "http://example.com/").contains("the \"http\" scheme is not allowed"));
        assert!(err(&strict, "https://127.0.0.1/").contains("127.0.0.1 is not a public address"));
        assert!(err(&strict, "https://[::1]:8443/").contains("::1 is not a public address"));
        assert!(err(&strict, "https://169.254.169.254/latest").contains("not a public address"));
        assert!(err(&strict, "file:///etc/passwd").contains("\"file\" scheme"));
        assert!(err(&strict, "nope").contains("is not a URL"));
        let open = Outbound::new(Reach { allow_http: true, allow_private: true }, Duration::from_secs(1))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(open.check_url("http://127.0.0.1:9/").is_ok());
    }

    #[tokio::test]
    async fn names_resolving_to_private_addresses_are_refused() {
        let strict = Outbound::new(Reach { allow_http: true, allow_private: false }, Duration::from_secs(2))
            .unwrap_or_else(|e| panic!("{e}"));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
        let port = listener.local_addr().unwrap_or_else(|e| panic!("{e}")).port();
        let err = strict
            .get(&format!("http://localhost:{port}/jwks.json"), "application/json", 1024)
            .await
            .err()
            .unwrap_or_else(|| panic!("localhost was fetched"));
        assert!(err.to_string().contains("not public"), "{err}");
        assert!(!err.timed_out());
    }

    #[test]
    fn ttl_honours_max_age_within_bounds() {
        assert_eq!(cache_ttl(None), DEFAULT_TTL);
        assert_eq!(cache_ttl(Some("public, max-age=600")), Duration::from_secs(600));
        assert_eq!(cache_ttl(Some("max-age=1")), MIN_TTL);
        assert_eq!(cache_ttl(Some("max-age=99999999")), MAX_TTL);
        assert_eq!(cache_ttl(Some("no-store")), MIN_TTL);
        assert_eq!(cache_ttl(Some("max-age=junk")), DEFAULT_TTL);
    }
}
