//! HTTP requests to the services payment depends on (a license server's
//! JWKS, an x402 facilitator): https only, no redirects, a deadline over
//! the whole exchange, a bounded body, and never to a private, loopback or
//! link-local address unless the operator allows it (for a service on this
//! host, and for tests). Host names are checked after resolution, by the
//! client's own resolver, so a name that resolves to 127.0.0.1 is refused
//! like the literal address.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use crawlgate_identity::directory::{is_public, PublicOnly};

/// What an [`Outbound`] client may reach.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reach {
    /// Plain `http://` URLs are allowed (tests only).
    pub allow_http: bool,
    /// Private, loopback, link-local and other non-global addresses are
    /// allowed.
    pub allow_private: bool,
}

/// A response read within the bounds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fetched {
    /// The status code.
    pub status: u16,
    /// `Content-Type`, if any.
    pub content_type: Option<String>,
    /// `Cache-Control`, if any.
    pub cache_control: Option<String>,
    /// The body.
    pub body: Vec<u8>,
}

/// Why an exchange failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct FetchError {
    /// The deadline passed (as opposed to a refusal or a bad answer).
    pub timed_out: bool,
    /// What happened, naming the URL.
    pub message: String,
}

impl From<String> for FetchError {
    fn from(message: String) -> FetchError {
        FetchError { timed_out: false, message }
    }
}

/// A client for one service; cheap to clone.
#[derive(Clone, Debug)]
pub struct Outbound {
    client: reqwest::Client,
    reach: Reach,
    timeout: Duration,
}

impl Outbound {
    /// A client whose every exchange ends within `timeout`.
    pub fn new(reach: Reach, timeout: Duration) -> Result<Outbound, String> {
        let mut builder = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none());
        if !reach.allow_private {
            builder = builder.dns_resolver(Arc::new(PublicOnly));
        }
        let client = builder
            .timeout(timeout)
            .connect_timeout(timeout)
            .user_agent(concat!("crawlgate/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        Ok(Outbound { client, reach, timeout })
    }

    /// The deadline of one exchange.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Whether `url` may be requested: its scheme, and a literal IP
    /// address (which the resolver never sees).
    pub fn check_url(&self, url: &str) -> Result<reqwest::Url, String> {
        let parsed = reqwest::Url::parse(url).map_err(|e| format!("{url:?} is not a URL: {e}"))?;
        match parsed.scheme() {
            "https" => {}
            "http" if self.reach.allow_http => {}
            other => return Err(format!("{url}: the {other:?} scheme is not allowed (https only)")),
        }
        let host = parsed.host_str().ok_or_else(|| format!("{url}: no host"))?;
        let literal = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
        if let Ok(ip) = literal.parse::<IpAddr>() {
            if !self.reach.allow_private && !is_public(ip) {
                return Err(format!("{url}: {ip} is not a public address"));
            }
        }
        Ok(parsed)
    }

    /// `GET url` with `accept`, reading at most `max_bytes` of body.
    pub async fn get(&self, url: &str, accept: &str, max_bytes: usize) -> Result<Fetched, FetchError> {
        let parsed = self.check_url(url).map_err(FetchError::from)?;
        let request = self.client.get(parsed).header(reqwest::header::ACCEPT, accept);
        self.exchange(url, request, max_bytes).await
    }

    /// `POST url` with a JSON body, reading at most `max_bytes` of body.
    pub async fn post_json(&self, url: &str, body: Vec<u8>, max_bytes: usize) -> Result<Fetched, FetchError> {
        let parsed = self.check_url(url).map_err(FetchError::from)?;
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
        let failed = |e: reqwest::Error| FetchError {
            timed_out: e.is_timeout(),
            message: format!("{url}: {}", error_chain(&e)),
        };
        let exchange = async {
            let mut resp = request.send().await.map_err(failed)?;
            let header = |name| resp.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
            let content_type = header(reqwest::header::CONTENT_TYPE);
            let cache_control = header(reqwest::header::CACHE_CONTROL);
            let status = resp.status().as_u16();
            if resp.content_length().is_some_and(|n| n > max_bytes as u64) {
                return Err(format!("{url}: the body is larger than {max_bytes} bytes").into());
            }
            let mut body = Vec::new();
            while let Some(chunk) = resp.chunk().await.map_err(failed)? {
                if body.len() + chunk.len() > max_bytes {
                    return Err(format!("{url}: the body is larger than {max_bytes} bytes").into());
                }
                body.extend_from_slice(&chunk);
            }
            Ok(Fetched { status, content_type, cache_control, body })
        };
        // The client's timeout covers each phase; this one also bounds a
        // server that trickles its body.
        tokio::time::timeout(self.timeout, exchange).await.unwrap_or_else(|_| {
            Err(FetchError {
                timed_out: true,
                message: format!("{url}: timed out after {} ms", self.timeout.as_millis()),
            })
        })
    }
}

/// The error and its sources, so "error sending request" says why.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_global_addresses_are_public() {
        for ip in [
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "127.0.0.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "198.18.0.1",
            "192.0.0.8",
            "240.0.0.1",
            "::1",
            "::",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "ff02::1",
            "2001:db8::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a00:1",
        ] {
            let ip: IpAddr = ip.parse().unwrap_or_else(|e| panic!("{ip}: {e}"));
            assert!(!is_public(ip), "{ip} counted as public");
        }
        for ip in ["93.184.216.34", "1.1.1.1", "2606:4700::1111", "::ffff:8.8.8.8"] {
            let ip: IpAddr = ip.parse().unwrap_or_else(|e| panic!("{ip}: {e}"));
            assert!(is_public(ip), "{ip} counted as private");
        }
    }

    #[test]
    fn urls_are_checked_before_any_connection() {
        let strict = Outbound::new(Reach { allow_http: false, allow_private: false }, Duration::from_secs(1))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(strict.check_url("https://example.com/jwks.json").is_ok());
        let err = |o: &Outbound, u: &str| o.check_url(u).err().unwrap_or_else(|| panic!("{u} allowed"));
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
        assert!(err.message.contains("not public"), "{err}");
        assert!(!err.timed_out);
    }
}
