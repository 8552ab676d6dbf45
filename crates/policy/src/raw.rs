//! The policy file exactly as written: serde types mirroring the TOML,
//! unknown keys rejected. Nothing outside the crate sees these.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

type S<T> = Spanned<T>;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPolicy {
    pub server: Option<S<RawServer>>,
    pub upstream: Option<S<RawUpstream>>,
    pub robots_txt: Option<S<RawRobotsTxt>>,
    #[serde(default)]
    pub group: Vec<S<RawGroup>>,
    #[serde(default)]
    pub robots_tag: Vec<S<RawRobotsTag>>,
    pub agents_txt: Option<S<RawAgentsTxt>>,
    // Not spanned: toml cannot span a table that only dotted sub-tables
    // open (`[verification.dns]` alone).
    pub verification: Option<RawVerification>,
    pub tdmrep: Option<S<RawTdmRep>>,
    pub rsl: Option<S<RawRsl>>,
    // Not spanned, like `verification`: its sub-tables may open it alone.
    pub payment: Option<crate::payment::raw::RawPayment>,
    pub allow_warnings: Option<Vec<S<String>>>,
    pub limits: Option<S<RawLimits>>,
    pub markdown: Option<S<crate::markdown::RawMarkdown>>,
    // Not spanned, like `verification`: `[classes.training]` may open it
    // alone.
    pub classes: Option<BTreeMap<S<String>, S<RawClassEntry>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawServer {
    pub listen: Option<Vec<S<String>>>,
    pub hosts: Option<Vec<S<String>>>,
    pub h2c: Option<bool>,
    pub tls_listen: Option<Vec<S<String>>>,
    pub tls_cert: Option<S<String>>,
    pub tls_key: Option<S<String>>,
    pub admin: Option<S<String>>,
    pub threads: Option<S<i64>>,
    pub grace_period: Option<S<String>>,
    pub access_log: Option<bool>,
    pub access_log_sample: Option<S<f64>>,
    pub client_idle_timeout: Option<S<String>>,
    pub client_header_timeout: Option<S<String>>,
    pub client_body_timeout: Option<S<String>>,
    pub max_connections: Option<S<i64>>,
    pub proxy_protocol: Option<bool>,
    pub trusted_proxies: Option<Vec<S<String>>>,
    pub client_address_header: Option<S<String>>,
    pub admin_auth_file: Option<S<String>>,
    pub access_log_format: Option<S<String>>,
    pub ready_requires_upstream: Option<bool>,
    pub admin_header_timeout: Option<S<String>>,
    pub admin_idle_timeout: Option<S<String>>,
    pub admin_connections_per_client: Option<S<i64>>,
    pub upgrades: Option<S<String>>,
    pub origin_paths: Option<S<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawUpstream {
    pub servers: Option<S<Vec<S<String>>>>,
    pub tls: Option<bool>,
    pub sni: Option<S<String>>,
    pub verify_cert: Option<bool>,
    pub connect_timeout: Option<S<String>>,
    pub read_timeout: Option<S<String>>,
    pub health_check_interval: Option<S<String>>,
    pub content_usage: Option<S<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRobotsTxt {
    pub sitemaps: Option<Vec<S<String>>>,
    pub cache_max_age: Option<S<String>>,
    pub content_signal: Option<S<String>>,
    pub acap: Option<bool>,
    pub origin: Option<S<String>>,
    pub origin_refresh: Option<S<String>>,
    pub origin_timeout: Option<S<String>>,
    pub origin_host: Option<S<String>>,
    pub origin_max_groups: Option<S<i64>>,
    pub license: Option<S<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawGroup {
    pub name: Option<S<String>>,
    pub user_agents: Option<Vec<S<String>>>,
    pub categories: Option<Vec<S<String>>>,
    pub allow: Option<Vec<S<String>>>,
    pub disallow: Option<Vec<S<String>>>,
    pub crawl_delay: Option<S<toml::Value>>,
    pub content_usage: Option<Vec<S<String>>>,
    pub app_directives: Option<Vec<S<String>>>,
    pub enforce: Option<S<String>>,
    pub block_status: Option<S<i64>>,
    pub verify: Option<S<String>>,
    pub on_spoofed: Option<S<String>>,
    pub on_unverified: Option<S<String>>,
    pub rate: Option<S<String>>,
    pub burst: Option<S<i64>>,
    pub enforce_crawl_delay: Option<S<bool>>,
    pub rate_mode: Option<S<String>>,
    pub rate_max_delay: Option<S<String>>,
    pub price: Option<S<String>>,
    pub prices: Option<Vec<S<crate::payment::raw::RawPathPrice>>>,
    pub rates: Option<Vec<S<RawPathRate>>>,
}

/// One `[[group.rates]]` entry.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPathRate {
    pub paths: Vec<S<String>>,
    pub rate: S<String>,
    pub burst: Option<S<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRobotsTag {
    pub path: S<String>,
    pub agents: Option<Vec<S<String>>>,
    pub rules: Vec<S<String>>,
    pub header: Option<bool>,
    pub html: Option<S<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAgentsTxt {
    pub enabled: Option<bool>,
    pub rules: Option<Vec<S<RawAgentsRule>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAgentsRule {
    pub path: S<String>,
    pub action: S<String>,
    pub params: Option<BTreeMap<String, S<String>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawVerification {
    pub trusted_proxies: Option<Vec<S<String>>>,
    pub refresh: Option<S<String>>,
    pub fetch_timeout: Option<S<String>>,
    pub state_dir: Option<S<String>>,
    pub lists: Option<BTreeMap<S<String>, Vec<S<String>>>>,
    pub dns: Option<S<RawDns>>,
    pub signatures: Option<S<RawSignatures>>,
    pub keys: Option<Vec<S<RawKey>>>,
    pub observe_catalog: Option<S<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawDns {
    pub nameservers: Option<Vec<S<String>>>,
    pub timeout: Option<S<String>>,
    pub cache_size: Option<S<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSignatures {
    pub max_skew: Option<S<String>>,
    pub directory_timeout: Option<S<String>>,
    pub cache_size: Option<S<i64>>,
    pub allow_http_directories: Option<S<bool>>,
    pub any_directory_host: Option<S<bool>>,
    pub authorities: Option<Vec<S<String>>>,
    pub max_validity: Option<S<String>>,
    pub required_components: Option<Vec<S<String>>>,
    pub replay_cache_size: Option<S<i64>>,
    pub allow_private_directories: Option<S<bool>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawKey {
    pub token: S<String>,
    pub jwk: S<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTdmRep {
    pub rules: Option<Vec<S<RawTdmRule>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTdmRule {
    pub path: S<String>,
    pub reservation: S<i64>,
    pub policy: Option<S<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRsl {
    pub path: Option<S<String>>,
    pub document: S<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLimits {
    pub store: Option<S<String>>,
    pub key_prefix: Option<S<String>>,
    pub timeout: Option<S<String>>,
    pub ipv4_prefix: Option<S<i64>>,
    pub ipv6_prefix: Option<S<i64>>,
    pub max_keys: Option<S<i64>>,
}

/// One `[classes]` entry: `training = "block"` (a string: `block`, `log`,
/// `allow`, or `mixed_purpose`'s value) or a table of a group's keys.
#[derive(Debug)]
pub(crate) enum RawClassEntry {
    Short(String),
    Table(Box<RawClass>),
}

impl<'de> Deserialize<'de> for RawClassEntry {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Entry;
        impl<'de> serde::de::Visitor<'de> for Entry {
            type Value = RawClassEntry;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string (\"block\", \"log\" or \"allow\") or a table (enforce, rate, price, ...)")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<RawClassEntry, E> {
                Ok(RawClassEntry::Short(v.to_string()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, m: A) -> Result<RawClassEntry, A::Error> {
                RawClass::deserialize(serde::de::value::MapAccessDeserializer::new(m))
                    .map(|t| RawClassEntry::Table(Box::new(t)))
            }
        }
        d.deserialize_any(Entry)
    }
}

/// `[classes.<name>]`: the keys of a group that make sense for every
/// crawler of a class.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawClass {
    pub enforce: Option<S<String>>,
    pub allow: Option<Vec<S<String>>>,
    pub disallow: Option<Vec<S<String>>>,
    pub block_status: Option<S<i64>>,
    pub verify: Option<S<String>>,
    pub on_spoofed: Option<S<String>>,
    pub on_unverified: Option<S<String>>,
    pub rate: Option<S<String>>,
    pub burst: Option<S<i64>>,
    pub price: Option<S<String>>,
}
