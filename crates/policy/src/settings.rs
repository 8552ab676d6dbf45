//! The settings the proxy reads, compiled from `[server]`, `[upstream]`
//! and `[robots_txt] origin*` and gathered with the other tables' in
//! [`Settings`].

use std::time::Duration;

/// How an origin's own `Content-Usage` header is treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OriginHeaderMode {
    /// The origin's header wins.
    Keep,
    /// The policy's value replaces it.
    Replace,
}

/// `[server]`.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerSettings {
    /// Plain HTTP listeners.
    pub listen: Vec<String>,
    /// HTTP/2 prior knowledge on plain listeners.
    pub h2c: bool,
    /// TLS listeners.
    pub tls_listen: Vec<String>,
    /// Certificate path.
    pub tls_cert: Option<String>,
    /// Key path.
    pub tls_key: Option<String>,
    /// Admin listener.
    pub admin: Option<String>,
    /// Worker threads.
    pub threads: usize,
    /// Graceful shutdown wait.
    pub grace_period: Duration,
    /// Access log on or off.
    pub access_log: bool,
    /// Fraction of requests logged.
    pub access_log_sample: f64,
    /// How long a client connection may wait for the first byte of a
    /// request, new or kept alive (and an HTTP/2 connection with no open
    /// stream stays open).
    pub client_idle_timeout: Duration,
    /// Total time from a request's first byte to the end of its header.
    pub client_header_timeout: Duration,
    /// Longest wait between two reads of a request body.
    pub client_body_timeout: Duration,
    /// Concurrent client connections on the proxy listeners.
    pub max_connections: usize,
    /// Whether connections from a trusted proxy start with a PROXY protocol
    /// v1 or v2 header (HAProxy's PROXY protocol specification).
    pub proxy_protocol: bool,
    /// `trusted_proxies` and `client_address_header`: whose forwarded
    /// client address is believed, and from which header.
    pub client_address: crate::client::ClientAddressSettings,
    /// File holding the admin listener's bearer token or `user:password`.
    pub admin_auth_file: Option<String>,
    /// How access log lines are written.
    pub access_log_format: AccessLogFormat,
    /// Whether `/readyz` also needs a healthy upstream server.
    pub ready_requires_upstream: bool,
    /// The admin listener's total time from a request's first byte to the
    /// end of its header (shorter than the proxy's: a probe or a scrape
    /// sends its header at once).
    pub admin_header_timeout: Duration,
    /// How long an admin connection may wait for its next request (the
    /// admin listener's keep-alive), shorter than the proxy's idle
    /// timeout: an idle admin connection holds one of 64 slots.
    pub admin_idle_timeout: Duration,
    /// Concurrent admin connections from one client address, so that one
    /// client cannot fill the admin listener's cap.
    pub admin_connections_per_client: usize,
    /// Which protocol upgrades a request may ask the origin for.
    pub upgrades: crate::route::Upgrades,
    /// How the origin resolves paths (case, `\`): how paths are compared.
    pub origin_paths: crate::route::OriginPaths,
}

/// `server.access_log_format`: the encoding of an access log line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessLogFormat {
    /// `key=value` pairs separated by spaces (logfmt).
    Logfmt,
    /// One JSON object per line.
    Json,
}

impl AccessLogFormat {
    /// Its name in the policy file.
    pub const fn as_str(self) -> &'static str {
        match self {
            AccessLogFormat::Logfmt => "logfmt",
            AccessLogFormat::Json => "json",
        }
    }
}

/// `[upstream]`.
#[derive(Clone, Debug, PartialEq)]
pub struct UpstreamSettings {
    /// `host:port` servers.
    pub servers: Vec<String>,
    /// TLS to the origin.
    pub tls: bool,
    /// SNI and certificate name.
    pub sni: String,
    /// Verify the origin's certificate.
    pub verify_cert: bool,
    /// Connect timeout.
    pub connect_timeout: Duration,
    /// Read timeout.
    pub read_timeout: Duration,
    /// Health check period (zero: off).
    pub health_check_interval: Duration,
    /// What happens to an origin's own Content-Usage.
    pub content_usage: OriginHeaderMode,
}

/// What the proxy does with the origin's own robots.txt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OriginRobotsMode {
    /// Not fetched: /robots.txt is the policy's alone.
    Ignore,
    /// Fetched and merged ([`Policy::merge_origin`](crate::Policy::merge_origin)).
    Merge,
}

/// `[robots_txt] origin*`: fetching the origin's robots.txt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OriginRobotsSettings {
    /// `ignore` or `merge`.
    pub mode: OriginRobotsMode,
    /// How often it is fetched again.
    pub refresh: Duration,
    /// Time limit of one fetch.
    pub timeout: Duration,
    /// `Host` of the fetch; `None`: `upstream.sni` with TLS, else the
    /// upstream server as written.
    pub host: Option<String>,
    /// Most origin groups merged (`origin_max_groups`); past it they are
    /// left out and listed as a conflict.
    pub max_groups: usize,
}

/// Settings the proxy reads.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// `[server]`.
    pub server: ServerSettings,
    /// `[upstream]`.
    pub upstream: UpstreamSettings,
    /// `max-age` of /robots.txt and /agents.txt.
    pub cache_max_age: Duration,
    /// `[verification]`.
    pub verification: crate::verification::VerificationSettings,
    /// `[robots_txt] origin*`.
    pub origin_robots: OriginRobotsSettings,
    /// `[limits]`.
    pub limits: crate::limits::LimitSettings,
    /// `[payment]`.
    pub payment: crate::payment::PaymentSettings,
    /// `[markdown]` (`None`: no table, no conversion).
    pub markdown: Option<crate::markdown::MarkdownSettings>,
}
