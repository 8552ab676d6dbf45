//! From the raw TOML to the compiled [`Policy`]: every key validated, every
//! error collected (with line and column) before anything is returned,
//! warnings kept apart.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::time::Duration;

use sha2::{Digest, Sha256};
use toml::Spanned;

use crate::agents_txt::{self, AgentsRule};
use crate::catalog;
use crate::client::{AddressHeader, ClientAddressSettings};
use crate::decision::Enforce;
use crate::diag::{parse_duration, Diagnostic, Diagnostics, Locator, Warning};
use crate::identify::TokenMatcher;
use crate::pattern::Pattern;
use crate::policy::{Group, HtmlMode, Policy, RobotsTxtExtras, TagEntry, TdmRule};
use crate::raw::{
    RawAgentsTxt, RawGroup, RawPolicy, RawRobotsTag, RawRobotsTxt, RawRsl, RawServer, RawTdmRep, RawUpstream,
    RawVerification,
};
use crate::raw::{RawDns, RawKey, RawSignatures};
use crate::render;
use crate::robots_tag::TagRules;
use crate::route::{OriginPaths, Upgrades};
use crate::ruleset::RuleSet;
use crate::settings::{
    AccessLogFormat, OriginHeaderMode, OriginRobotsMode, OriginRobotsSettings, ServerSettings, Settings,
    UpstreamSettings,
};
use crate::sf;
use crate::validate;
use crate::verification::{
    validate_ed25519_jwk, Cidr, Method, OnFailure, PinnedJwk, VerificationSettings, VerifyMode, REQUIRABLE_COMPONENTS,
};

mod limits;

/// Largest robots.txt we publish (RFC 9309: parsers must handle 500 KiB).
pub const MAX_ROBOTS_TXT: usize = 500 * 1024;

/// Largest `server.max_connections`: each connection needs a file
/// descriptor, and no process limit goes much past a million.
pub const MAX_CONNECTIONS: usize = 1 << 20;

/// Concurrent connections on the admin listener (besides the few kept
/// for health probes). A separate cap, so that a saturated proxy port
/// cannot starve `/healthz` and `/metrics`.
pub const ADMIN_CONNECTIONS: usize = 64;

/// A loaded policy and its warnings.
#[derive(Debug)]
pub struct Loaded {
    /// The compiled policy.
    pub policy: Policy,
    /// Warnings (the policy is valid), those `allow_warnings` acknowledges
    /// left out.
    pub warnings: Vec<Diagnostic>,
    /// How many warnings `allow_warnings` acknowledged.
    pub acknowledged: usize,
}

pub(crate) struct Ctx<'a> {
    loc: Locator<'a>,
    errors: Vec<Diagnostic>,
    warnings: Vec<Diagnostic>,
}

impl<'a> Ctx<'a> {
    pub(crate) fn err<T>(&mut self, span: &Spanned<T>, msg: impl Into<String>) {
        let d = self.loc.at(span.span().start, msg);
        self.errors.push(d);
    }
    pub(crate) fn err_at(&mut self, offset: usize, msg: impl Into<String>) {
        let d = self.loc.at(offset, msg);
        self.errors.push(d);
    }
    fn warn<T>(&mut self, span: &Spanned<T>, kind: Warning, msg: impl Into<String>) {
        self.warn_at(span.span().start, kind, msg);
    }
    fn warn_at(&mut self, offset: usize, kind: Warning, msg: impl Into<String>) {
        let mut d = self.loc.at(offset, msg);
        d.warning = Some(kind);
        self.warnings.push(d);
    }
    pub(crate) fn duration(&mut self, key: &str, v: Option<&Spanned<String>>, default: Duration) -> Duration {
        match v {
            None => default,
            Some(s) => match parse_duration(s.get_ref()) {
                Ok(d) => d,
                Err(e) => {
                    self.err(s, format!("{key}: {e}"));
                    default
                }
            },
        }
    }
    /// A duration that must not be zero: a zero client timeout would close
    /// every connection before its first request.
    pub(crate) fn positive_duration(&mut self, key: &str, v: &Option<Spanned<String>>, default: Duration) -> Duration {
        let d = self.duration(key, v.as_ref(), default);
        match v {
            Some(s) if d.is_zero() => {
                self.err(s, format!("{key} must be greater than zero, found `{}`", s.get_ref()));
                default
            }
            _ => d,
        }
    }
    fn line<T>(&self, s: &Spanned<T>) -> usize {
        self.loc.line_of(s.span().start)
    }
    /// A context over `source` alone, for the unit tests of one table's
    /// compile step.
    #[cfg(test)]
    pub(crate) fn for_test(file: &'a str, source: &'a str) -> Ctx<'a> {
        Ctx { loc: Locator::new(file, source), errors: Vec::new(), warnings: Vec::new() }
    }
    /// The errors so far, one per line.
    #[cfg(test)]
    pub(crate) fn error_text(&self) -> String {
        Diagnostics(self.errors.clone()).to_string()
    }
}

/// The proxy listener (`listen`, `tls_listen` or `admin`) that upstream
/// `server` names, if it names one: the same address, or a loopback address
/// on the port of a wildcard listener. A host name other than `localhost`
/// is not resolved here; the proxy's `Via` check catches such loops.
fn own_listener(server: &str, settings: &ServerSettings) -> Option<String> {
    let (host, port) = server.rsplit_once(':')?;
    let port: u16 = port.parse().ok()?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let ip: std::net::IpAddr = if host.eq_ignore_ascii_case("localhost") {
        std::net::Ipv4Addr::LOCALHOST.into()
    } else {
        host.parse().ok()?
    };
    settings
        .listen
        .iter()
        .chain(&settings.tls_listen)
        .chain(settings.admin.iter())
        .filter_map(|a| a.parse::<SocketAddr>().ok())
        .find(|l| {
            l.port() == port && (l.ip() == ip || (l.ip().is_unspecified() && (ip.is_loopback() || ip.is_unspecified())))
        })
        .map(|l| l.to_string())
}

/// Whether `s` is a host: an IPv6 address in brackets, or dot-separated
/// labels of letters, digits, `-` and `_` (an IPv4 address is one; a
/// final dot is allowed). Such a value is written as it is into a `Host`
/// header, a TLS server name, a URL of the served robots.txt or the
/// metrics, where a control character, a space, a `#` or a stray `:`
/// would break the line or the URL.
fn valid_host(s: &str) -> bool {
    if let Some(v6) = s.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
        return v6.parse::<std::net::Ipv6Addr>().is_ok();
    }
    let name = s.strip_suffix('.').unwrap_or(s);
    !name.is_empty()
        && name.split('.').all(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b)))
}

/// Whether `s` is a host (see [`valid_host`]) with an optional port.
fn valid_host_maybe_port(s: &str) -> bool {
    valid_host(s) || valid_host_port(s)
}

/// What to add to an error about host `s`: how to write a non-ASCII
/// (internationalized) host, which a `Host` header or a TLS server name
/// carries only in its ASCII form (RFC 5890 A-labels).
fn idn_hint(s: &str) -> &'static str {
    if s.is_ascii() {
        ""
    } else {
        " (write an internationalized host in its ASCII form, xn--...)"
    }
}

/// Whether `s` is `host:port` (see [`valid_host`]) with a port from 1.
fn valid_host_port(s: &str) -> bool {
    match s.rsplit_once(':') {
        Some((host, port)) => valid_host(host) && port.parse::<u16>().is_ok_and(|p| p > 0),
        None => false,
    }
}

/// Loads, validates and compiles a policy; `file_name` appears in every
/// diagnostic. Returns every error at once.
pub fn load(source: &str, file_name: &str) -> Result<Loaded, Diagnostics> {
    let mut cx = Ctx { loc: Locator::new(file_name, source), errors: Vec::new(), warnings: Vec::new() };
    let raw: RawPolicy = match toml::from_str(source) {
        Ok(r) => r,
        Err(e) => {
            let offset = e.span().map_or(0, |s| s.start);
            let msg = e.message().trim();
            let msg = crate::type_error::describe(source, offset, msg)
                .or_else(|| crate::type_error::describe_unknown(source, offset, msg))
                .unwrap_or_else(|| msg.to_string());
            return Err(Diagnostics(vec![cx.loc.at(offset, msg)]));
        }
    };
    let RawPolicy {
        server,
        upstream,
        robots_txt,
        group,
        robots_tag,
        agents_txt,
        verification,
        tdmrep,
        rsl,
        payment,
        allow_warnings,
        limits,
        markdown,
    } = raw;
    let allowed = compile_allow_warnings(&mut cx, allow_warnings.as_deref().unwrap_or_default());
    let raw_server_hosts = server.as_ref().and_then(|s| s.get_ref().hosts.clone());
    let raw_upstream_sni = upstream.as_ref().and_then(|u| u.get_ref().sni.as_ref()).map(|s| s.get_ref().clone());
    let raw_origin_host =
        robots_txt.as_ref().and_then(|r| r.get_ref().origin_host.as_ref()).map(|s| s.get_ref().clone());
    let legacy_proxies = verification.as_ref().and_then(|v| v.trusted_proxies.as_ref());
    let server = compile_server(&mut cx, server.as_ref(), legacy_proxies);
    let upstream = compile_upstream(&mut cx, upstream.as_ref(), &server);
    let (cache_max_age, mut extras, signal) = compile_robots_txt(&mut cx, robots_txt.as_ref());
    let origin_robots = compile_robots_origin(&mut cx, robots_txt.as_ref());
    let groups = compile_groups(&mut cx, &group);
    let tags = compile_tags(&mut cx, &robots_tag);
    let (agents_rules, agents_txt) = compile_agents_txt(&mut cx, agents_txt.as_ref());
    let site =
        site_hosts(&mut cx, raw_server_hosts.as_deref(), raw_upstream_sni.as_deref(), raw_origin_host.as_deref());
    let verification = compile_verification(&mut cx, verification.as_ref(), &groups, &site);
    let mut groups = groups;
    resolve_verify(&mut cx, &mut groups, &verification);
    if verification.enabled && server.client_address.trusted_proxies.is_empty() {
        block_without_trusted_proxies(&mut cx, &group);
    }
    let (tdm_rules, tdmrep_json) = compile_tdmrep(&mut cx, tdmrep.as_ref());
    let rsl = compile_rsl(&mut cx, rsl.as_ref(), extras.license.is_some());
    let mut limits = limits::compile_limits(&mut cx, limits.as_ref(), raw_server_hosts.as_deref());
    limits.any_group = groups.iter().any(|g| g.limit.is_some());
    let payment_cx = crate::payment::compile::Context {
        groups: &groups,
        sitemaps: &extras.sitemaps,
        verification: &verification,
        trusted_proxies: !server.client_address.trusted_proxies.is_empty(),
        site: &site,
    };
    let (payment, free_paths) = crate::payment::compile::payment(&mut cx, payment.as_ref(), &payment_cx);
    let markdown = markdown.map(|m| {
        let (settings, errors) = crate::markdown::compile(m.get_ref());
        for (at, msg) in errors {
            cx.err_at(at, msg);
        }
        settings
    });

    let (tokens, token_group, star_group) = token_index(&groups);
    let mut tag_tokens: Vec<String> = Vec::new();
    for t in &tags {
        for a in &t.agents {
            if !tag_tokens.iter().any(|x| x.eq_ignore_ascii_case(a)) {
                tag_tokens.push(a.clone());
            }
        }
    }
    // `*` first so the header reads `*;..., Token;...`.
    tag_tokens.sort_by_key(|t| t != "*");

    let content_signal_derived = matches!(signal, SignalSource::Derive(_));
    extras.content_signal = content_signal(&mut cx, signal, star_group.map(|i| &groups[i]));
    let robots_txt = render::robots_txt(file_name, &groups, star_group, &extras, &tags);
    if robots_txt.len() > MAX_ROBOTS_TXT {
        cx.err_at(
            0,
            format!(
                "generated robots.txt is {} bytes, over the {} byte (500 KiB) limit crawlers must parse",
                robots_txt.len(),
                MAX_ROBOTS_TXT
            ),
        );
    }
    if !cx.errors.is_empty() {
        cx.errors.sort_by_key(|d| (d.line, d.col));
        return Err(Diagnostics(cx.errors));
    }
    cx.warnings.sort_by_key(|d| (d.line, d.col));
    let before = cx.warnings.len();
    cx.warnings.retain(|d| d.warning.is_none_or(|w| !allowed.contains(&w)));
    let acknowledged = before - cx.warnings.len();
    let fold_paths = server.origin_paths == OriginPaths::Windows;
    let mut policy = Policy {
        settings: Settings { server, upstream, cache_max_age, verification, origin_robots, limits, payment, markdown },
        matcher: TokenMatcher::new(&tokens),
        groups,
        star_group,
        tokens,
        token_group,
        tags,
        tag_tokens,
        robots_txt,
        agents_rules,
        agents_txt,
        sha256: hex::encode(Sha256::digest(source.as_bytes())),
        tag_cache: Default::default(),
        tdm_rules,
        tdmrep_json,
        license_href: extras.license.clone().or_else(|| rsl.as_ref().map(|(p, _)| p.clone())),
        rsl,
        content_signal: extras.content_signal.clone(),
        content_signal_derived,
        robots_extras: extras,
        file_name: file_name.to_string(),
        free_paths,
    };
    if fold_paths {
        policy.fold_paths();
    }
    Ok(Loaded { policy, warnings: cx.warnings, acknowledged })
}

/// The warning kinds `allow_warnings` acknowledges; an unknown id is an
/// error listing the known ones.
fn compile_allow_warnings(cx: &mut Ctx<'_>, ids: &[Spanned<String>]) -> HashSet<Warning> {
    let mut out = HashSet::new();
    for id in ids {
        match Warning::from_id(id.get_ref()) {
            Some(w) => {
                out.insert(w);
            }
            None => {
                let known = Warning::ALL.iter().map(|w| w.id()).collect::<Vec<_>>().join(", ");
                cx.err(id, format!("allow_warnings: unknown warning id `{}` (known: {known})", id.get_ref()));
            }
        }
    }
    out
}

/// The identification tokens (without `*`) with their group indices, and
/// the `*` group, in group order.
pub(crate) fn token_index(groups: &[Group]) -> (Vec<String>, Vec<usize>, Option<usize>) {
    let mut tokens = Vec::new();
    let mut token_group = Vec::new();
    let mut star_group = None;
    for (gi, g) in groups.iter().enumerate() {
        for t in &g.tokens {
            if t == "*" {
                star_group = Some(gi);
            } else {
                tokens.push(t.clone());
                token_group.push(gi);
            }
        }
    }
    (tokens, token_group, star_group)
}

/// `[server]`; `legacy_proxies` is `[verification] trusted_proxies`, the
/// old place of `server.trusted_proxies`.
fn compile_server(
    cx: &mut Ctx<'_>,
    raw: Option<&Spanned<RawServer>>,
    legacy_proxies: Option<&Vec<Spanned<String>>>,
) -> ServerSettings {
    let mut s = ServerSettings {
        listen: vec!["0.0.0.0:8080".into()],
        h2c: false,
        tls_listen: Vec::new(),
        tls_cert: None,
        tls_key: None,
        admin: None,
        threads: 2,
        grace_period: Duration::from_secs(5),
        access_log: true,
        access_log_sample: 1.0,
        client_idle_timeout: Duration::from_secs(60),
        client_header_timeout: Duration::from_secs(10),
        client_body_timeout: Duration::from_secs(60),
        max_connections: 4096,
        proxy_protocol: false,
        client_address: ClientAddressSettings::default(),
        admin_auth_file: None,
        access_log_format: AccessLogFormat::Logfmt,
        ready_requires_upstream: false,
        admin_header_timeout: Duration::from_secs(5),
        admin_idle_timeout: Duration::from_secs(10),
        admin_connections_per_client: 16,
        upgrades: Upgrades::Websocket,
        origin_paths: OriginPaths::Standard,
    };
    let Some(raw) = raw else {
        s.client_address = compile_client_address(cx, None, None, legacy_proxies, false);
        return s;
    };
    let RawServer {
        listen,
        // The site's names: compiled with the signatures they bind
        // (`site_hosts`).
        hosts: _,
        h2c,
        tls_listen,
        tls_cert,
        tls_key,
        admin,
        threads,
        grace_period,
        access_log,
        access_log_sample,
        client_idle_timeout,
        client_header_timeout,
        client_body_timeout,
        max_connections,
        proxy_protocol,
        trusted_proxies,
        client_address_header,
        admin_auth_file,
        access_log_format,
        ready_requires_upstream,
        admin_header_timeout,
        admin_idle_timeout,
        admin_connections_per_client,
        upgrades,
        origin_paths,
    } = raw.get_ref();
    if let Some(u) = upgrades {
        match u.get_ref().as_str() {
            "websocket" => s.upgrades = Upgrades::Websocket,
            "all" => s.upgrades = Upgrades::All,
            "off" => s.upgrades = Upgrades::Off,
            other => cx.err(u, format!("server.upgrades: `{other}` is not websocket, all or off")),
        }
    }
    if let Some(o) = origin_paths {
        match o.get_ref().as_str() {
            "standard" => s.origin_paths = OriginPaths::Standard,
            "windows" => s.origin_paths = OriginPaths::Windows,
            other => cx.err(o, format!("server.origin_paths: `{other}` is not standard or windows")),
        }
    }
    s.proxy_protocol = proxy_protocol.unwrap_or(false);
    s.client_address = compile_client_address(
        cx,
        trusted_proxies.as_ref(),
        client_address_header.as_ref(),
        legacy_proxies,
        s.proxy_protocol,
    );
    s.ready_requires_upstream = ready_requires_upstream.unwrap_or(false);
    if let Some(f) = access_log_format {
        match f.get_ref().as_str() {
            "logfmt" => s.access_log_format = AccessLogFormat::Logfmt,
            "json" => s.access_log_format = AccessLogFormat::Json,
            other => cx.err(f, format!("server.access_log_format: `{other}` is not a format (logfmt or json)")),
        }
    }
    let addrs = |cx: &mut Ctx<'_>, key: &str, v: &Option<Vec<Spanned<String>>>| -> Option<Vec<String>> {
        v.as_ref().map(|list| {
            list.iter()
                .filter(|a| {
                    let ok = a.get_ref().parse::<SocketAddr>().is_ok();
                    if !ok {
                        cx.err(
                            a,
                            format!(
                                "server.{key}: `{}` is not a socket address (e.g. 0.0.0.0:8080 or [::]:8080)",
                                a.get_ref()
                            ),
                        );
                    }
                    ok
                })
                .map(|a| a.get_ref().clone())
                .collect()
        })
    };
    if let Some(l) = addrs(cx, "listen", listen) {
        s.listen = l;
    }
    if let Some(l) = addrs(cx, "tls_listen", tls_listen) {
        s.tls_listen = l;
    }
    // Only when nothing was written: an address already reported as invalid
    // needs no second error.
    let written = |v: &Option<Vec<Spanned<String>>>| v.as_ref().is_some_and(|l| !l.is_empty());
    if s.listen.is_empty() && s.tls_listen.is_empty() && !written(listen) && !written(tls_listen) {
        cx.err(raw, "server: no listener (set listen or tls_listen)");
    }
    s.h2c = h2c.unwrap_or(false);
    s.tls_cert = tls_cert.as_ref().map(|c| c.get_ref().clone());
    s.tls_key = tls_key.as_ref().map(|c| c.get_ref().clone());
    if !s.tls_listen.is_empty() && (s.tls_cert.is_none() || s.tls_key.is_none()) {
        cx.err(raw, "server.tls_listen needs tls_cert and tls_key");
    }
    if let Some(a) = admin {
        if a.get_ref().parse::<SocketAddr>().is_err() {
            cx.err(a, format!("server.admin: `{}` is not a socket address (e.g. 127.0.0.1:9090)", a.get_ref()));
        }
        if let Ok(admin) = a.get_ref().parse::<SocketAddr>() {
            let clash = s.listen.iter().chain(&s.tls_listen).filter_map(|l| l.parse::<SocketAddr>().ok()).find(|l| {
                l.port() == admin.port()
                    && (l.ip() == admin.ip() || l.ip().is_unspecified() || admin.ip().is_unspecified())
            });
            if let Some(l) = clash {
                cx.err(a, format!("server.admin: `{}` overlaps the proxy listener {l} (both would bind one port and split its traffic)", a.get_ref()));
            }
        }
        s.admin = Some(a.get_ref().clone());
    }
    if let Some(f) = admin_auth_file {
        if f.get_ref().trim().is_empty() {
            cx.err(f, "server.admin_auth_file: empty path");
        } else {
            s.admin_auth_file = Some(f.get_ref().clone());
        }
    }
    if let (Some(a), None) = (admin, &s.admin_auth_file) {
        if a.get_ref().parse::<SocketAddr>().is_ok_and(|addr| !addr.ip().is_loopback()) {
            cx.warn(
                a, Warning::AdminWithoutAuth,
                format!(
                    "server.admin: `{}` is not a loopback address and server.admin_auth_file is not set: anyone who can reach it can read the dashboard, /status and /metrics",
                    a.get_ref()
                ),
            );
        }
    }
    if let Some(t) = threads {
        match usize::try_from(*t.get_ref()) {
            Ok(n) if n >= 1 => s.threads = n,
            _ => cx.err(t, format!("server.threads must be at least 1, found {}", t.get_ref())),
        }
    }
    s.grace_period = cx.duration("server.grace_period", grace_period.as_ref(), s.grace_period);
    s.access_log = access_log.unwrap_or(true);
    if let Some(r) = access_log_sample {
        if !(0.0..=1.0).contains(r.get_ref()) {
            cx.err(r, format!("server.access_log_sample must be between 0 and 1, found {}", r.get_ref()));
        } else {
            s.access_log_sample = *r.get_ref();
        }
    }
    s.client_idle_timeout =
        cx.positive_duration("server.client_idle_timeout", client_idle_timeout, s.client_idle_timeout);
    s.client_header_timeout =
        cx.positive_duration("server.client_header_timeout", client_header_timeout, s.client_header_timeout);
    s.client_body_timeout =
        cx.positive_duration("server.client_body_timeout", client_body_timeout, s.client_body_timeout);
    if let Some(m) = max_connections {
        match usize::try_from(*m.get_ref()) {
            Ok(n) if (1..=MAX_CONNECTIONS).contains(&n) => s.max_connections = n,
            _ => cx.err(
                m,
                format!("server.max_connections must be between 1 and {MAX_CONNECTIONS}, found {}", m.get_ref()),
            ),
        }
    }
    s.admin_header_timeout =
        cx.positive_duration("server.admin_header_timeout", admin_header_timeout, s.admin_header_timeout);
    s.admin_idle_timeout = cx.positive_duration("server.admin_idle_timeout", admin_idle_timeout, s.admin_idle_timeout);
    if let Some(m) = admin_connections_per_client {
        match usize::try_from(*m.get_ref()) {
            Ok(n) if (1..=ADMIN_CONNECTIONS).contains(&n) => s.admin_connections_per_client = n,
            _ => cx.err(
                m,
                format!(
                    "server.admin_connections_per_client must be between 1 and {ADMIN_CONNECTIONS} (the admin listener's cap), found {}",
                    m.get_ref()
                ),
            ),
        }
    }
    if s.proxy_protocol && !s.tls_listen.is_empty() {
        cx.err(
            raw,
            "server.proxy_protocol applies to the plain listeners only: the PROXY header comes before TLS, so terminate TLS at the balancer or drop tls_listen",
        );
    }
    s
}

/// `server.trusted_proxies` (or, deprecated, `[verification]
/// trusted_proxies`) and `server.client_address_header`.
fn compile_client_address(
    cx: &mut Ctx<'_>,
    trusted_proxies: Option<&Vec<Spanned<String>>>,
    header: Option<&Spanned<String>>,
    legacy: Option<&Vec<Spanned<String>>>,
    proxy_protocol: bool,
) -> ClientAddressSettings {
    let mut c = ClientAddressSettings::default();
    let (key, list) = match (trusted_proxies, legacy) {
        (Some(list), Some(old)) => {
            let msg = "verification.trusted_proxies and server.trusted_proxies are both set: keep server.trusted_proxies only (the [verification] key is its deprecated old place)";
            match old.first() {
                Some(first) => cx.err(first, msg),
                None => cx.err_at(0, msg),
            }
            ("server.trusted_proxies", list)
        }
        (Some(list), None) => ("server.trusted_proxies", list),
        (None, Some(old)) => {
            let msg = "verification.trusted_proxies is deprecated: move it to [server] as trusted_proxies (it governs the client address for logs, decisions and the origin's X-Forwarded-For, with or without [verification])";
            match old.first() {
                Some(first) => cx.warn(first, Warning::DeprecatedKey, msg),
                None => cx.warn_at(0, Warning::DeprecatedKey, msg),
            }
            ("verification.trusted_proxies", old)
        }
        (None, None) => ("server.trusted_proxies", &Vec::new()),
    };
    for p in list {
        match p.get_ref().parse::<Cidr>() {
            Ok(cidr) => c.trusted_proxies.push(cidr),
            Err(e) => cx.err(p, format!("{key}: {e} (e.g. 10.0.0.0/8, 192.0.2.7 or 2001:db8::/32)")),
        }
    }
    if let Some(h) = header {
        match AddressHeader::from_name(h.get_ref()) {
            Some(AddressHeader::ProxyProtocol) if !proxy_protocol => cx.err(
                h,
                "server.client_address_header = \"proxy-protocol\" needs server.proxy_protocol = true: without it no PROXY header is read and every client would be the balancer's address",
            ),
            Some(choice) => c.header = choice,
            None => {
                let known = AddressHeader::ALL.map(|h| format!("\"{}\"", h.as_str())).join(", ");
                cx.err(h, format!("server.client_address_header: `{}` is not one of {known}", h.get_ref()));
            }
        }
    }
    c
}

#[cfg(test)]
mod client_address_tests {
    use super::*;

    const REST: &str = "[upstream]\nservers = [\"127.0.0.1:8000\"]\n";

    /// The compiled settings and warnings of `src` (+ an upstream), or its
    /// errors.
    fn load_client(src: &str) -> Result<(ClientAddressSettings, Vec<String>), String> {
        load(&format!("{src}{REST}"), "p.toml")
            .map(|l| {
                let w = l.warnings.iter().map(ToString::to_string).collect();
                (l.policy.settings().server.client_address.clone(), w)
            })
            .map_err(|e| e.to_string())
    }

    fn cidrs(list: &[&str]) -> Vec<Cidr> {
        list.iter().map(|c| c.parse().unwrap_or_else(|e| panic!("{e}"))).collect()
    }

    #[test]
    fn defaults_to_x_forwarded_for_and_no_trusted_proxy() {
        assert_eq!(load_client(""), Ok((ClientAddressSettings::default(), vec![])));
        assert_eq!(load_client("[server]\n"), Ok((ClientAddressSettings::default(), vec![])));
        assert_eq!(ClientAddressSettings::default().header, AddressHeader::XForwardedFor);
    }

    #[test]
    fn server_keys_parse() {
        let (c, w) = load_client(
            "[server]\ntrusted_proxies = [\"10.0.0.0/8\", \"2001:db8::1\"]\nclient_address_header = \"forwarded\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            c,
            ClientAddressSettings {
                trusted_proxies: cidrs(&["10.0.0.0/8", "2001:db8::1"]),
                header: AddressHeader::Forwarded
            }
        );
        assert!(w.is_empty(), "{w:?}");
        let (c, _) = load_client("[server]\nproxy_protocol = true\nclient_address_header = \"proxy-protocol\"\n")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.header, AddressHeader::ProxyProtocol);
    }

    #[test]
    fn the_old_place_still_loads_with_a_warning() {
        let src = "[verification]\ntrusted_proxies = [\"10.0.0.0/8\"]\n";
        let (c, w) = load_client(src).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.trusted_proxies, cidrs(&["10.0.0.0/8"]));
        assert_eq!(w, ["p.toml:2:20: warning[deprecated-key]: verification.trusted_proxies is deprecated: move it to [server] as trusted_proxies (it governs the client address for logs, decisions and the origin's X-Forwarded-For, with or without [verification])"]);
        // Acknowledged, it loads silently.
        let (_, w) =
            load_client(&format!("allow_warnings = [\"deprecated-key\"]\n{src}")).unwrap_or_else(|e| panic!("{e}"));
        assert!(w.is_empty(), "{w:?}");
    }

    #[test]
    fn rejected_with_position() {
        let cases = [
            (
                "[server]\ntrusted_proxies = [\"10.0.0.0/8\"]\n[verification]\ntrusted_proxies = [\"10.0.0.0/8\"]\n",
                "p.toml:4:20: verification.trusted_proxies and server.trusted_proxies are both set: keep server.trusted_proxies only (the [verification] key is its deprecated old place)",
            ),
            (
                "[server]\nclient_address_header = \"proxy-protocol\"\n",
                "p.toml:2:25: server.client_address_header = \"proxy-protocol\" needs server.proxy_protocol = true: without it no PROXY header is read and every client would be the balancer's address",
            ),
            (
                "[server]\nclient_address_header = \"X-Real-IP\"\n",
                "p.toml:2:25: server.client_address_header: `X-Real-IP` is not one of \"x-forwarded-for\", \"forwarded\", \"proxy-protocol\"",
            ),
            (
                "[server]\ntrusted_proxies = [\"10.0.0.0/33\"]\n",
                "p.toml:2:20: server.trusted_proxies: `10.0.0.0/33`: the prefix length must be 0 to 32 (e.g. 10.0.0.0/8, 192.0.2.7 or 2001:db8::/32)",
            ),
            (
                "[verification]\ntrusted_proxies = [\"nope\"]\n",
                "p.toml:2:20: verification.trusted_proxies: `nope` is not an IP address or CIDR prefix (e.g. 10.0.0.0/8, 192.0.2.7 or 2001:db8::/32)",
            ),
            (
                "[server]\nclient_address_header = 1\n",
                "p.toml:2:25: server.client_address_header: expected a string, e.g. client_address_header = \"x-forwarded-for\", found an integer",
            ),
        ];
        for (src, want) in cases {
            assert_eq!(load_client(src).map(|_| ()), Err(want.to_owned()), "{src}");
        }
    }
}

/// For a server written as a URL (`http://host:port`, `https://host`):
/// what to write instead, as a sentence to append to the error.
fn scheme_hint(server: &str) -> String {
    let lower = server.to_ascii_lowercase();
    let (rest, tls) = if lower.starts_with("http://") {
        (&server[7..], false)
    } else if lower.starts_with("https://") {
        (&server[8..], true)
    } else {
        return String::new();
    };
    let host_port = validate::shown(rest.split('/').next().unwrap_or(rest));
    let has_port = host_port.rsplit_once(':').is_some_and(|(h, p)| !h.ends_with(':') && p.parse::<u16>().is_ok());
    let host_port = if has_port { host_port } else { format!("{host_port}:{}", if tls { 443 } else { 80 }) };
    if tls {
        format!(": drop the scheme (`{host_port}`) and set upstream.tls = true for HTTPS to the origin")
    } else {
        format!(": drop the scheme (`{host_port}`); plain HTTP is the default (upstream.tls = true for HTTPS)")
    }
}

fn compile_upstream(cx: &mut Ctx<'_>, raw: Option<&Spanned<RawUpstream>>, server: &ServerSettings) -> UpstreamSettings {
    let mut u = UpstreamSettings {
        servers: Vec::new(),
        tls: false,
        sni: String::new(),
        verify_cert: true,
        connect_timeout: Duration::from_secs(5),
        read_timeout: Duration::from_secs(30),
        health_check_interval: Duration::from_secs(5),
        content_usage: OriginHeaderMode::Keep,
    };
    let Some(raw) = raw else {
        cx.err_at(0, "missing [upstream] table: the proxy needs upstream.servers");
        return u;
    };
    let RawUpstream {
        servers,
        tls,
        sni,
        verify_cert,
        connect_timeout,
        read_timeout,
        health_check_interval,
        content_usage,
    } = raw.get_ref();
    match servers {
        None => cx.err(raw, "upstream.servers is required (e.g. [\"127.0.0.1:8000\"])"),
        Some(list) if list.get_ref().is_empty() => cx.err(list, "upstream.servers needs at least one server"),
        Some(list) => {
            for s in list.get_ref() {
                if let Some(own) = own_listener(s.get_ref(), server) {
                    cx.err(s, format!("upstream.servers: `{}` is this proxy's own listener {own} (every request would loop back into it)", s.get_ref()));
                } else if valid_host_port(s.get_ref()) {
                    u.servers.push(s.get_ref().clone());
                } else {
                    cx.err(
                        s,
                        format!(
                            "upstream.servers: `{}` is not host:port{}{}",
                            validate::shown(s.get_ref()),
                            scheme_hint(s.get_ref()),
                            idn_hint(s.get_ref())
                        ),
                    );
                }
            }
        }
    }
    u.tls = tls.unwrap_or(false);
    u.verify_cert = verify_cert.unwrap_or(true);
    u.sni = match sni {
        // Sent as the TLS server name and the `Host` of the origin
        // robots.txt fetch, and the base of its relative sitemaps in the
        // served robots.txt.
        // Empty: no server name is sent.
        Some(s) if !s.get_ref().is_empty() && !valid_host(s.get_ref()) => {
            let v = s.get_ref();
            cx.err(s, format!("upstream.sni must be a host name, found `{}`{}", validate::shown(v), idn_hint(v)));
            String::new()
        }
        Some(s) => s.get_ref().clone(),
        None => u
            .servers
            .first()
            .and_then(|s| s.rsplit_once(':').map(|(h, _)| h.trim_start_matches('[').trim_end_matches(']').to_string()))
            .unwrap_or_default(),
    };
    u.connect_timeout = cx.duration("upstream.connect_timeout", connect_timeout.as_ref(), u.connect_timeout);
    u.read_timeout = cx.duration("upstream.read_timeout", read_timeout.as_ref(), u.read_timeout);
    for (key, value, raw) in [
        ("upstream.connect_timeout", u.connect_timeout, connect_timeout),
        ("upstream.read_timeout", u.read_timeout, read_timeout),
    ] {
        if let (true, Some(raw)) = (value.is_zero(), raw) {
            cx.err(raw, format!("{key} must be longer than 0s (0s would fail every request)"));
        }
    }
    u.health_check_interval =
        cx.duration("upstream.health_check_interval", health_check_interval.as_ref(), u.health_check_interval);
    if let Some(c) = content_usage {
        match c.get_ref().as_str() {
            "keep" => u.content_usage = OriginHeaderMode::Keep,
            "replace" => u.content_usage = OriginHeaderMode::Replace,
            other => cx.err(c, format!("upstream.content_usage must be keep or replace, found `{other}`")),
        }
    }
    u
}

/// Where the robots.txt `Content-Signal` comes from.
enum SignalSource {
    /// No `content_signal` key.
    None,
    /// Written in the policy (the value as published, the key's offset).
    Written(String, usize),
    /// `content_signal = "derive"` (the key's offset).
    Derive(usize),
}

fn compile_robots_txt(
    cx: &mut Ctx<'_>,
    raw: Option<&Spanned<RawRobotsTxt>>,
) -> (Duration, RobotsTxtExtras, SignalSource) {
    let mut extras = RobotsTxtExtras::default();
    let default_age = Duration::from_secs(3600);
    let Some(raw) = raw else { return (default_age, extras, SignalSource::None) };
    // The origin keys are compiled by `compile_robots_origin`.
    let RawRobotsTxt {
        sitemaps,
        cache_max_age,
        content_signal,
        acap,
        license,
        origin: _,
        origin_refresh: _,
        origin_timeout: _,
        origin_host: _,
        origin_max_groups: _,
    } = raw.get_ref();
    for s in sitemaps.iter().flatten() {
        match validate::sitemap(s.get_ref()) {
            Ok(()) => extras.sitemaps.push(s.get_ref().clone()),
            Err(e) => cx.err(s, e),
        }
    }
    let age = cx.duration("robots_txt.cache_max_age", cache_max_age.as_ref(), default_age);
    let mut signal = SignalSource::None;
    if let Some(cs) = content_signal {
        if cs.get_ref() == "derive" {
            signal = SignalSource::Derive(cs.span().start);
        } else {
            match validate::content_signal(cs.get_ref()) {
                Ok(v) => signal = SignalSource::Written(v, cs.span().start),
                Err(e)
                    if !cs.get_ref().contains('=') && validate::edit_distance(cs.get_ref().trim(), "derive") <= 2 =>
                {
                    cx.err(
                        cs,
                        format!("{e}; did you mean \"derive\" (the line derived from the `*` group's Content-Usage)?"),
                    )
                }
                Err(e) => cx.err(cs, e),
            }
        }
    }
    extras.acap = acap.unwrap_or(false);
    if let Some(l) = license {
        match validate::license(l.get_ref()) {
            Ok(()) => extras.license = Some(l.get_ref().clone()),
            Err(e) => cx.err(l, e),
        }
    }
    (age, extras, signal)
}

/// What the `*` group's Content-Usage says for the whole site: its entries
/// without a path or for `/` (or `/*`), combined with `n` winning.
fn site_content_usage(star: &Group) -> Option<String> {
    let root = star.content_usage.iter().filter(|(p, _)| matches!(p.as_deref(), None | Some("/") | Some("/*")));
    sf::combine_content_usage(root.map(|(_, v)| v.as_str()))
}

/// The robots.txt `Content-Signal` value: as written (with a warning where
/// it says otherwise than the `*` group's Content-Usage for the whole
/// site), or derived from that Content-Usage.
fn content_signal(cx: &mut Ctx<'_>, source: SignalSource, star: Option<&Group>) -> Option<String> {
    let usage = star.and_then(|g| site_content_usage(g).map(|u| (u, g.line)));
    match source {
        SignalSource::None => None,
        SignalSource::Derive(at) => {
            let derived = usage.as_ref().and_then(|(u, _)| sf::content_signal_from_usage(u));
            if derived.is_none() {
                cx.warn_at(at, Warning::ContentSignalUnderived, "robots_txt.content_signal = \"derive\": the `*` group states no train-ai, ai-use or search preference for the whole site (a content_usage without a path or for `/`), so robots.txt has no Content-Signal line");
            }
            derived
        }
        SignalSource::Written(value, at) => {
            if let Some((u, line)) = &usage {
                // `u` is canonical: `label=y, label=n`.
                let usage_pairs: Vec<(&str, bool)> =
                    u.split(", ").filter_map(|kv| kv.split_once('=').map(|(k, v)| (k, v == "y"))).collect();
                let mut ours = Vec::new();
                let mut theirs = Vec::new();
                for (key, allow) in validate::content_signal_pairs(&value) {
                    let Some((_, label)) = sf::CONTENT_SIGNAL_KEYS.iter().find(|(k, _)| *k == key) else { continue };
                    if let Some((_, a)) = usage_pairs.iter().find(|(l, _)| l == label) {
                        if *a != allow {
                            ours.push(format!("{key}={}", if allow { "yes" } else { "no" }));
                            theirs.push(format!("{label}={}", if *a { "y" } else { "n" }));
                        }
                    }
                }
                if !ours.is_empty() {
                    cx.warn_at(
                        at, Warning::ContentSignalMismatch,
                        format!(
                            "robots_txt.content_signal says {} but the `*` group's content_usage (group at line {line}) says {}; crawlers reading both get contradicting preferences (content_signal = \"derive\" publishes the group's)",
                            ours.join(", "),
                            theirs.join(", ")
                        ),
                    );
                }
            }
            signal_use_conflicts(cx, &value, at, usage.as_ref());
            Some(value)
        }
    }
}

/// Warns when a written Content-Signal's `use=` level contradicts what
/// the same line says with `ai-input` / `ai-train`, or what the `*`
/// group's site-wide Content-Usage says with `ai-use` / `train-ai`
/// ([`sf::SignalUse::contradictions`]).
fn signal_use_conflicts(cx: &mut Ctx<'_>, value: &str, at: usize, usage: Option<&(String, usize)>) {
    let Some(level) = validate::content_signal_use(value) else { return };
    let own = validate::content_signal_pairs(value);
    let own_of = |key: &str| own.iter().find(|(k, _)| *k == key).map(|(_, a)| *a);
    let mut found: Vec<String> = Vec::new();
    let own: Vec<String> = level
        .contradictions(own_of("ai-train"), own_of("ai-input"))
        .into_iter()
        .map(|label| {
            let (l, v) = label.split_once('=').unwrap_or((label, ""));
            let key = sf::CONTENT_SIGNAL_KEYS.iter().find(|(_, lab)| *lab == l).map_or(l, |(k, _)| *k);
            format!("{key}={}", if v == "y" { "yes" } else { "no" })
        })
        .collect();
    if !own.is_empty() {
        found.push(format!("{} (this line)", own.join(", ")));
    }
    if let Some((u, line)) = usage {
        let pairs: Vec<(&str, bool)> =
            u.split(", ").filter_map(|kv| kv.split_once('=').map(|(k, v)| (k, v == "y"))).collect();
        let of = |label: &str| pairs.iter().find(|(l, _)| *l == label).map(|(_, a)| *a);
        let theirs = level.contradictions(of("train-ai"), of("ai-use"));
        if !theirs.is_empty() {
            found.push(format!("{} (the `*` group's content_usage, group at line {line})", theirs.join(", ")));
        }
    }
    if !found.is_empty() {
        cx.warn_at(
            at,
            Warning::ContentSignalUseConflict,
            format!(
                "robots_txt.content_signal: use={} contradicts {}; use=immediate and use=reference grant AI use without training, use=full grants training too, and no level fits ai-use=n",
                level.as_str(),
                found.join(" and ")
            ),
        );
    }
}

/// `[tdmrep]`: the rules, most specific first (ties in file order), and
/// the rendered `/.well-known/tdmrep.json`.
fn compile_tdmrep(cx: &mut Ctx<'_>, raw: Option<&Spanned<RawTdmRep>>) -> (Vec<TdmRule>, Option<String>) {
    let Some(raw) = raw else { return (Vec::new(), None) };
    let RawTdmRep { rules } = raw.get_ref();
    let mut out: Vec<TdmRule> = Vec::new();
    for r in rules.iter().flatten() {
        let crate::raw::RawTdmRule { path, reservation, policy } = r.get_ref();
        let pattern = match validate::tdm_path(path.get_ref()) {
            Ok(p) => Some(p),
            Err(e) => {
                cx.err(path, e);
                None
            }
        };
        let reservation = match *reservation.get_ref() {
            0 => Some(0u8),
            1 => Some(1u8),
            other => {
                cx.err(reservation, format!("tdmrep.rules.reservation must be 0 or 1, found {other}"));
                None
            }
        };
        let policy = match policy {
            None => Some(None),
            Some(p) => match validate::tdm_policy(p.get_ref()) {
                Ok(()) if reservation == Some(0) => {
                    cx.err(p, "tdmrep.rules.policy applies only with reservation = 1 (W3C TDM Reservation Protocol: a TDM policy describes the terms of reserved rights)");
                    None
                }
                Ok(()) => Some(Some(std::sync::Arc::<str>::from(p.get_ref().as_str()))),
                Err(e) => {
                    cx.err(p, e);
                    None
                }
            },
        };
        if let (Some(pattern), Some(reservation), Some(policy)) = (pattern, reservation, policy) {
            if let Some(first) = out.iter().find(|o| o.path == *path.get_ref()) {
                cx.err(path, format!("tdmrep.rules.path: `{}` has two rules (one rule per path)", first.path));
                continue;
            }
            out.push(TdmRule { path: path.get_ref().clone(), pattern, reservation, policy });
        }
    }
    // Stable: equally specific rules keep their file order.
    out.sort_by_key(|r| std::cmp::Reverse(r.pattern.specificity()));
    let json = render::tdmrep_json(&out);
    (out, Some(json))
}

/// `[rsl]`: the path and the document served there; warns when robots.txt
/// does not point to it (`has_license`: `robots_txt.license` is set).
fn compile_rsl(cx: &mut Ctx<'_>, raw: Option<&Spanned<RawRsl>>, has_license: bool) -> Option<(String, String)> {
    let raw = raw?;
    let RawRsl { path, document } = raw.get_ref();
    let path_ok = match path {
        None => Some(crate::local_file::LocalFile::Rsl.path().to_string()),
        Some(p) => match validate::rsl_path(p.get_ref()) {
            Ok(()) if crate::local_file::LocalFile::at(p.get_ref()).is_some() => {
                cx.err(p, format!("rsl.path: `{}` is already served by crawlgate", p.get_ref()));
                None
            }
            Ok(()) => Some(p.get_ref().clone()),
            Err(e) => {
                cx.err(p, e);
                None
            }
        },
    };
    let doc = match validate::rsl_document(document.get_ref()) {
        Ok(d) => Some(d.to_string()),
        Err(e) => {
            cx.err(document, e);
            None
        }
    };
    let (path, doc) = (path_ok?, doc?);
    if !has_license {
        cx.warn(raw, Warning::RslWithoutLicense, format!("rsl: robots_txt.license is not set, so robots.txt has no License line pointing crawlers to {path} (set it to this document's absolute URL)"));
    }
    Some((path, doc))
}

/// `[robots_txt] origin`, `origin_refresh`, `origin_timeout` and
/// `origin_host`: whether and how the proxy fetches the origin's own
/// robots.txt to merge it.
fn compile_robots_origin(cx: &mut Ctx<'_>, raw: Option<&Spanned<RawRobotsTxt>>) -> OriginRobotsSettings {
    let mut o = OriginRobotsSettings {
        mode: OriginRobotsMode::Ignore,
        refresh: Duration::from_secs(600),
        timeout: Duration::from_secs(5),
        host: None,
        max_groups: 500,
    };
    let Some(raw) = raw else { return o };
    // The other keys are compiled by `compile_robots_txt`.
    let RawRobotsTxt { origin, origin_refresh, origin_timeout, origin_host, origin_max_groups, .. } = raw.get_ref();
    if let Some(n) = origin_max_groups {
        match usize::try_from(*n.get_ref()) {
            Ok(u) if u <= 100_000 => o.max_groups = u,
            _ => cx.err(n, format!("robots_txt.origin_max_groups must be between 0 and 100000, found {}", n.get_ref())),
        }
    }
    if let Some(m) = origin {
        match m.get_ref().as_str() {
            "ignore" => o.mode = OriginRobotsMode::Ignore,
            "merge" => o.mode = OriginRobotsMode::Merge,
            other => cx.err(m, format!("robots_txt.origin must be ignore or merge, found `{other}`")),
        }
    }
    o.refresh = cx.positive_duration("robots_txt.origin_refresh", origin_refresh, o.refresh);
    o.timeout = cx.positive_duration("robots_txt.origin_timeout", origin_timeout, o.timeout);
    if let Some(h) = origin_host {
        let v = h.get_ref();
        if !valid_host_maybe_port(v) {
            cx.err(h, format!("robots_txt.origin_host must be a host or host:port, found `{}`", v.escape_debug()));
        } else {
            o.host = Some(v.clone());
        }
    }
    if o.mode == OriginRobotsMode::Ignore {
        for key in
            [("origin_refresh", origin_refresh), ("origin_timeout", origin_timeout), ("origin_host", origin_host)]
        {
            if let (name, Some(v)) = key {
                cx.warn(
                    v,
                    Warning::OriginKeyUnused,
                    format!("robots_txt.{name} has no effect unless robots_txt.origin = \"merge\""),
                );
            }
        }
    }
    o
}

/// Compiles the `[[group]]` tables in file order. A group whose every
/// category token is named explicitly in another group is checked but left
/// out (with a warning).
fn compile_groups(cx: &mut Ctx<'_>, raw: &[Spanned<RawGroup>]) -> Vec<Group> {
    let explicit = explicit_tokens(raw);
    // token (lowercase) -> offset of its first group
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut groups = Vec::new();
    let mut offsets = Vec::new();
    for g in raw {
        if let Some(group) = compile_group(cx, g, &explicit, &mut seen) {
            groups.push(group);
            offsets.push(g.span().start);
        }
    }
    weaker_than_star(cx, &groups, &offsets);
    groups
}

/// Warns about each group that leaves its crawlers less restricted than
/// `*`. A crawler obeys only the group naming it (RFC 9309 section 2.2.1),
/// so a path `*` disallows and the group has no rule for is open to the
/// group's crawlers while closed to unnamed ones. Each `*` disallow pattern
/// is tried on one path it matches (its `*` wildcards matching nothing),
/// where `*` must decide disallow and the group must have no matching rule;
/// an explicit allow in the group is a choice and is not reported.
fn weaker_than_star(cx: &mut Ctx<'_>, groups: &[Group], offsets: &[usize]) {
    let Some(star) = groups.iter().find(|g| g.tokens.iter().any(|t| t == "*")) else { return };
    let samples: Vec<(&str, String)> = star
        .rules_src
        .iter()
        .filter(|(p, allow, _)| !allow && !p.is_empty())
        .map(|(p, _, _)| {
            let sample = p.replace('*', "");
            let sample = sample.strip_suffix('$').unwrap_or(&sample);
            let sample = if sample.starts_with('/') { sample.to_string() } else { format!("/{sample}") };
            (p.as_str(), crate::canonical::canonicalize(&sample).into_owned())
        })
        .filter(|(_, path)| star.rules.evaluate(path).is_some_and(|i| !star.rules.is_allow(i)))
        .collect();
    for (g, &at) in groups.iter().zip(offsets) {
        if g.tokens.iter().any(|t| t == "*") {
            continue;
        }
        let open: Vec<&str> =
            samples.iter().filter(|(_, path)| g.rules.evaluate(path).is_none()).map(|(p, _)| *p).collect();
        if open.is_empty() {
            continue;
        }
        let crawlers = quoted_list(&g.tokens, 5);
        let paths = quoted_list(&open, 3);
        let (these, may) =
            if g.tokens.len() == 1 { ("this crawler", "it may") } else { ("these crawlers", "they may") };
        cx.warn_at(
            at,
            Warning::WeakerThanStar,
            format!(
                "group `{}` ({crawlers}) has no rule for {paths}, which `*` disallows: a crawler obeys only the group naming it (RFC 9309 section 2.2.1), so {these} may fetch what unnamed crawlers may not; copy the disallow rules into this group, or allow the paths explicitly if {may} fetch them",
                g.name
            ),
        );
    }
}

/// `` `a`, `b`, `c` `` with at most `max` items, then `and N more`.
fn quoted_list<S: AsRef<str>>(items: &[S], max: usize) -> String {
    let mut out = items.iter().take(max).map(|t| format!("`{}`", t.as_ref())).collect::<Vec<_>>().join(", ");
    if items.len() > max {
        out.push_str(&format!(" and {} more", items.len() - max));
    }
    out
}

/// Every token (lower-cased, `*` left out) named in some group's
/// `user_agents`. An explicit name wins over a category's expansion
/// wherever the two groups are in the file: `user_agents = ["GPTBot"]` next
/// to `categories = ["ai-training"]` is the natural way to treat one crawler
/// of a category differently, so the category group just leaves that token
/// out instead of reporting a duplicate.
fn explicit_tokens(raw: &[Spanned<RawGroup>]) -> HashMap<String, Explicit> {
    let mut out = HashMap::new();
    for g in raw {
        let uas = g.get_ref().user_agents.iter().flatten();
        let name = g.get_ref().name.as_ref().map(|n| n.get_ref().clone());
        let first = g.get_ref().user_agents.iter().flatten().next().map(|t| t.get_ref().clone());
        let rules = RulesWritten::of(g.get_ref());
        for t in uas {
            let lower = t.get_ref().to_ascii_lowercase();
            if lower != "*" {
                let group = name.clone().or_else(|| first.clone()).unwrap_or_default();
                out.entry(lower).or_insert(Explicit { group, at: g.span().start, rules: rules.clone() });
            }
        }
    }
    out
}

/// The group that names a token explicitly in `user_agents`.
struct Explicit {
    /// Its name (`name`, else its first user agent).
    group: String,
    /// The offset of its `[[group]]` header.
    at: usize,
    /// Its rules as written.
    rules: RulesWritten,
}

/// A group's `allow` and `disallow` patterns as written.
#[derive(Clone, Default)]
struct RulesWritten {
    allow: Vec<String>,
    disallow: Vec<String>,
}

impl RulesWritten {
    fn of(g: &RawGroup) -> RulesWritten {
        let list = |v: &Option<Vec<Spanned<String>>>| v.iter().flatten().map(|p| p.get_ref().clone()).collect();
        RulesWritten { allow: list(&g.allow), disallow: list(&g.disallow) }
    }

    /// Whether these rules keep a crawler out of at least everything
    /// `other` keeps it out of, judged from the patterns as written: a
    /// disallow of everything with no allow, or every disallow of `other`
    /// and no allow `other` lacks.
    fn same_or_stricter_than(&self, other: &RulesWritten) -> bool {
        let all = self.allow.is_empty() && self.disallow.iter().any(|d| d == "/" || d == "/*");
        all || (other.disallow.iter().all(|d| self.disallow.contains(d))
            && self.allow.iter().all(|a| other.allow.contains(a)))
    }
}

/// Compiles one group, reporting its errors and warnings in the order of
/// its keys' checks; `None` when the group is left out because category
/// overrides emptied it. `seen` maps each token (lower-cased) to the offset
/// of the first group that took it.
fn compile_group(
    cx: &mut Ctx<'_>,
    g: &Spanned<RawGroup>,
    explicit: &HashMap<String, Explicit>,
    seen: &mut HashMap<String, usize>,
) -> Option<Group> {
    let RawGroup {
        name,
        user_agents,
        categories,
        allow,
        disallow,
        crawl_delay,
        content_usage,
        app_directives,
        enforce,
        block_status,
        verify,
        on_spoofed,
        on_unverified,
        rate,
        burst,
        enforce_crawl_delay,
        price,
        prices,
    } = g.get_ref();
    // The name is published as written: in the body of a 429, the
    // metrics' group label, the access log.
    if let Some(n) = name {
        if let Err(e) = validate::no_control("group.name", n.get_ref()) {
            cx.err(n, e);
        }
    }
    let mut tokens = GroupTokens::default();
    add_user_agents(cx, seen, &mut tokens, user_agents.as_deref().unwrap_or_default());
    let warned = cx.warnings.len();
    let overridden = expand_categories(
        cx,
        seen,
        explicit,
        &mut tokens,
        categories.as_deref().unwrap_or_default(),
        name.as_ref().map(|n| n.get_ref().as_str()),
        &RulesWritten::of(g.get_ref()),
    );
    let GroupTokens { tokens, in_group: _ } = tokens;
    if user_agents.as_ref().is_none_or(Vec::is_empty) && categories.as_ref().is_none_or(Vec::is_empty) {
        cx.err(g, "group: needs user_agents or categories");
    }
    // Every token of the categories is named explicitly elsewhere: a
    // group with no User-agent line cannot be published (its rules
    // would join the group above it in robots.txt).
    let empty_after_overrides = tokens.is_empty() && overridden > 0;
    if empty_after_overrides {
        // One warning says it all: the group is left out.
        let mut i = 0;
        cx.warnings.retain(|d| {
            i += 1;
            i <= warned || d.warning != Some(Warning::TokenLeavesCategory)
        });
        cx.warn(g, Warning::EmptyCategoryGroup, "group: every token of its categories is named in user_agents of another group, so this group is empty and left out of robots.txt");
    }
    let (rules_src, compiled) =
        compile_rules(cx, allow.as_deref().unwrap_or_default(), disallow.as_deref().unwrap_or_default());
    let written_delay = crawl_delay;
    let crawl_delay = compile_crawl_delay(cx, crawl_delay.as_ref());
    let limit = limits::compile_group_limit(
        cx,
        limits::GroupLimitKeys { rate, burst, enforce_crawl_delay, crawl_delay: written_delay.as_ref() },
        crawl_delay.as_deref(),
    );
    let (cu, cu_set) = compile_content_usage(cx, content_usage.as_deref().unwrap_or_default());
    let cu_combined = cu
        .iter()
        .map(|(path, value)| {
            // An entry without a path applies to `/`: the same path.
            let key = path.as_deref().unwrap_or("/");
            let same = cu.iter().filter(|(p, _)| p.as_deref().unwrap_or("/") == key).map(|(_, v)| v.as_str());
            sf::combine_content_usage(same).unwrap_or_else(|| value.clone())
        })
        .collect();
    let is_star = tokens.iter().any(|t| t == "*");
    let ad = compile_app_directives(cx, app_directives.as_deref().unwrap_or_default(), is_star);
    let can_disallow = rules_src.iter().any(|(p, allow, _)| !allow && !p.is_empty());
    let enforce_mode = compile_enforce(cx, enforce.as_ref(), is_star, can_disallow, &tokens);
    let block_status = compile_block_status(cx, block_status.as_ref());
    let charge_at = enforce.as_ref().filter(|_| mode_is_charge(enforce_mode)).map(|e| e.span().start);
    let charge =
        crate::payment::compile::group_charge(cx, charge_at, price.as_ref(), prices.as_deref().unwrap_or_default());
    let verify_written = compile_verify(cx, verify.as_ref());
    // A charge group answers a bad or missing signature itself (400
    // InvalidSignature, StrongAuthRequired) and forwards only what a valid
    // signature pays for, so its claims stay in the group by default.
    let spoofed_default = if charge_at.is_some() { OnFailure::Log } else { OnFailure::Anonymous };
    let on_spoofed = compile_on_failure(cx, "on_spoofed", on_spoofed.as_ref(), spoofed_default);
    let on_unverified_written = on_unverified.is_some();
    let on_unverified_at = on_unverified.clone();
    let on_unverified = compile_on_failure(cx, "on_unverified", on_unverified.as_ref(), OnFailure::Log);
    // A challenge asks for a signature: the group must accept one.
    if let (OnFailure::Challenge, Some(at)) = (on_unverified, &on_unverified_at) {
        if !verify_written.is_some_and(|(m, _)| m.allows(Method::Signature)) {
            cx.err(at, "group.on_unverified = \"challenge\" asks for a Web Bot Auth signature: the group needs verify = \"signature\" (or \"any\")");
        }
    }
    if empty_after_overrides {
        return None;
    }
    let name = name.as_ref().map(|n| n.get_ref().clone()).or_else(|| tokens.first().cloned()).unwrap_or_default();
    Some(Group {
        name,
        line: cx.line(g),
        tokens,
        rules: RuleSet::new(compiled),
        rules_src,
        crawl_delay,
        content_usage: cu,
        content_usage_set: cu_set,
        content_usage_combined: cu_combined,
        app_directives: ad,
        enforce: enforce_mode,
        block_status,
        charge,
        origin: false,
        verify: VerifyMode::None,
        verify_written,
        on_spoofed,
        on_unverified,
        on_unverified_written,
        limit,
        accept_signature: None,
    })
}

/// The tokens one group has taken so far.
#[derive(Default)]
struct GroupTokens {
    /// As written, in the order they were taken.
    tokens: Vec<String>,
    /// Lower-cased `tokens`, for the checks that run once per token.
    in_group: HashSet<String>,
}

impl GroupTokens {
    /// Takes token `t` (named at `at`) for this group, or reports a
    /// duplicate group when an earlier group has taken it (a token belongs
    /// to one group, matched case-insensitively).
    fn add(&mut self, cx: &mut Ctx<'_>, seen: &mut HashMap<String, usize>, t: &str, at: usize) {
        let lower = t.to_ascii_lowercase();
        if let Some(first) = seen.get(&lower) {
            let first = cx.loc.at(*first, "");
            cx.err_at(
                at,
                format!(
                    "group.user_agents: duplicate group for token `{t}` (first at {}:{}:{})",
                    first.file, first.line, first.col
                ),
            );
        } else {
            seen.insert(lower.clone(), at);
            self.in_group.insert(lower);
            self.tokens.push(t.to_string());
        }
    }
}

/// Takes the group's `user_agents`: each must be a product token (or `*`),
/// one with digits or dots with a warning; a repeat within the group is a
/// warning, not a duplicate group.
fn add_user_agents(
    cx: &mut Ctx<'_>,
    seen: &mut HashMap<String, usize>,
    tokens: &mut GroupTokens,
    user_agents: &[Spanned<String>],
) {
    for ua in user_agents {
        let t = ua.get_ref();
        match validate::user_agent(t) {
            Ok(None) => {}
            Ok(Some(w)) => cx.warn(ua, Warning::NonRfcToken, w),
            Err(e) => {
                cx.err(ua, e);
                continue;
            }
        }
        if t != "*" && catalog::lookup(t).is_none() {
            // Short tokens are a few edits from many others (`foobot`,
            // `DotBot`): two edits only from eight characters on.
            let max = if t.len() >= 8 { 2 } else { 1 };
            if let Some(near) = validate::closest(t, catalog::entries().iter().map(|e| e.token.as_str()), max) {
                cx.warn(ua, Warning::TokenTypo, format!("group.user_agents: `{t}` is not in the crawler catalog; did you mean `{near}`? (a misspelt token matches no crawler)"));
            }
        }
        if tokens.in_group.contains(&t.to_ascii_lowercase()) {
            cx.warn(ua, Warning::RepeatedToken, format!("group.user_agents: `{t}` is listed twice in this group (tokens are case-insensitive); the repeat is ignored"));
            continue;
        }
        tokens.add(cx, seen, t, ua.span().start);
    }
}

/// Expands the group's `categories` into catalog tokens. A token named
/// explicitly in some group's `user_agents` is left out (see
/// [`explicit_tokens`]), with one warning per category and group it joins;
/// a token another group already has is reported once per category and
/// earlier group. Returns how many tokens were left out for explicit names.
fn expand_categories(
    cx: &mut Ctx<'_>,
    seen: &mut HashMap<String, usize>,
    explicit: &HashMap<String, Explicit>,
    tokens: &mut GroupTokens,
    categories: &[Spanned<String>],
    group_name: Option<&str>,
    own: &RulesWritten,
) -> usize {
    let mut overridden = 0;
    for cat in categories {
        let Some(list) = catalog::tokens_in_category(cat.get_ref()) else {
            cx.err(
                cat,
                format!(
                    "group.categories: unknown category `{}` (known: {})",
                    cat.get_ref(),
                    catalog::CATEGORIES.join(", ")
                ),
            );
            continue;
        };
        // Tokens another group already got from a category: one error
        // per category and earlier group, not one per token.
        let mut clashes: Vec<(usize, Vec<&str>)> = Vec::new();
        // Tokens leaving for a group naming them: (that group, tokens).
        let mut leaving: Vec<(&Explicit, Vec<&str>)> = Vec::new();
        for t in list {
            let lower = t.to_ascii_lowercase();
            if tokens.in_group.contains(&lower) {
                continue;
            }
            if let Some(e) = explicit.get(&lower) {
                overridden += 1;
                match leaving.iter_mut().find(|(x, _)| x.at == e.at) {
                    Some((_, v)) => v.push(t),
                    None => leaving.push((e, vec![t])),
                }
                continue;
            }
            match seen.get(&lower).copied() {
                Some(first) => match clashes.iter_mut().find(|(f, _)| *f == first) {
                    Some((_, v)) => v.push(t),
                    None => clashes.push((first, vec![t])),
                },
                None => tokens.add(cx, seen, t, cat.span().start),
            }
        }
        for (joins, list) in leaving {
            // Moving to a group at least as strict loses no restriction.
            if joins.rules.same_or_stricter_than(own) {
                continue;
            }
            let at = cx.loc.at(joins.at, "");
            let this = group_name.map_or("this group".to_string(), |n| format!("this group (`{n}`)"));
            let (leave, follow) = if list.len() == 1 { ("leaves", "follows") } else { ("leave", "follow") };
            cx.warn(
                cat,
                Warning::TokenLeavesCategory,
                format!(
                    "group.categories: `{}` brings {}, named in user_agents of the group `{}` at {}:{}:{}: {} {leave} {this} and {follow} that group's rules only",
                    cat.get_ref(),
                    quoted_list(&list, list.len()),
                    joins.group,
                    at.file,
                    at.line,
                    at.col,
                    if list.len() == 1 { "it" } else { "they" },
                ),
            );
        }
        for (first, list) in clashes {
            let first = cx.loc.at(first, "");
            let names = list.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>().join(", ");
            cx.err(
                cat,
                format!(
                    "group.categories: `{}` brings {names}, already in the group at {}:{}:{} (a token belongs to one group; name it in user_agents to pick its group)",
                    cat.get_ref(),
                    first.file,
                    first.line,
                    first.col
                ),
            );
        }
    }
    overridden
}

/// A rule as written: `(pattern, allow, line)`.
type RuleSource = (String, bool, usize);

/// Compiles the group's `allow` and `disallow` patterns into the rules as
/// written and `(compiled pattern, allow)`, both in file order (what
/// robots.txt renders); an invalid pattern is reported and left out.
fn compile_rules(
    cx: &mut Ctx<'_>,
    allow: &[Spanned<String>],
    disallow: &[Spanned<String>],
) -> (Vec<RuleSource>, Vec<(Pattern, bool)>) {
    let mut rules_src = Vec::new();
    let mut compiled = Vec::new();
    for (list, is_allow) in [(allow, true), (disallow, false)] {
        for p in list {
            match validate::rule(is_allow, p.get_ref()) {
                Ok(pat) => {
                    rules_src.push((p.get_ref().clone(), is_allow, cx.line(p)));
                    compiled.push((pat, is_allow));
                }
                Err(e) => cx.err(p, e),
            }
        }
    }
    // The same pattern in both lists: RFC 9309 section 2.2.2 lets the
    // allow win (equal length, the least restrictive rule).
    for d in disallow {
        if let Some(a) = allow.iter().find(|a| a.get_ref() == d.get_ref()) {
            cx.warn(
                d,
                Warning::AllowDisallowSame,
                format!(
                    "group: `{}` is both allowed (line {}) and disallowed here; the allow wins (RFC 9309 section 2.2.2: of equally long rules the least restrictive applies), so this disallow has no effect",
                    d.get_ref(),
                    cx.line(a)
                ),
            );
        }
    }
    // File order for rendering: sort by line, stable.
    let mut order: Vec<usize> = (0..rules_src.len()).collect();
    order.sort_by_key(|&i| rules_src[i].2);
    let rules_src: Vec<_> = order.iter().map(|&i| rules_src[i].clone()).collect();
    let compiled: Vec<_> = order.iter().map(|&i| compiled[i].clone()).collect();
    (rules_src, compiled)
}

/// The group's `crawl_delay` as robots.txt writes it; `None` when absent
/// or invalid (reported).
fn compile_crawl_delay(cx: &mut Ctx<'_>, crawl_delay: Option<&Spanned<toml::Value>>) -> Option<String> {
    crawl_delay.and_then(|d| match validate::crawl_delay_value(d.get_ref()) {
        Ok(v) => Some(v),
        Err(e) => {
            cx.err(d, e);
            None
        }
    })
}

/// The group's `content_usage` entries as `(path as written or None,
/// canonical preferences)` with the rule set that picks the entry for a
/// path (an entry without a path applies to `/`). Validation warnings are
/// reported next to each entry.
fn compile_content_usage(
    cx: &mut Ctx<'_>,
    content_usage: &[Spanned<String>],
) -> (Vec<(Option<String>, String)>, RuleSet) {
    let mut cu = Vec::new();
    for c in content_usage {
        match validate::content_usage(c.get_ref()) {
            Ok(v) => {
                for w in v.warnings {
                    cx.warn(c, Warning::ContentUsageVocabulary, w);
                }
                cu.push((v.path, v.value));
            }
            Err(e) => cx.err(c, e),
        }
    }
    let cu_set =
        RuleSet::new(cu.iter().map(|(p, _)| (Pattern::new_lenient(p.as_deref().unwrap_or("/")), true)).collect());
    (cu, cu_set)
}

/// The group's `app_directives` entries as `(path as written or None,
/// canonical list)`; `is_star` tells the validator the group is `*`'s.
fn compile_app_directives(
    cx: &mut Ctx<'_>,
    app_directives: &[Spanned<String>],
    is_star: bool,
) -> Vec<(Option<String>, String)> {
    let mut ad = Vec::new();
    for a in app_directives {
        match validate::app_directives(a.get_ref(), is_star) {
            Ok(v) => {
                for w in v.warnings {
                    cx.warn(a, Warning::AppDirectivesNotStar, w);
                }
                ad.push((v.path, v.value));
            }
            Err(e) => cx.err(a, e),
        }
    }
    ad
}

/// The group's `enforce` mode (`off` when absent), with the warnings for
/// a mode that cannot apply: on the `*` group (its requests name no policy
/// token, and such requests are never blocked nor recorded as violations),
/// in a group that disallows nothing (`can_disallow` false), and `block`
/// on robots.txt-only tokens, which no User-Agent header carries (one
/// warning per group).
fn compile_enforce(
    cx: &mut Ctx<'_>,
    enforce: Option<&Spanned<String>>,
    is_star: bool,
    can_disallow: bool,
    tokens: &[String],
) -> Enforce {
    let Some(e) = enforce else { return Enforce::Off };
    let mode = match e.get_ref().as_str() {
        "off" => Enforce::Off,
        "log" => Enforce::Log,
        "block" => Enforce::Block,
        "charge" => Enforce::Charge,
        other => {
            cx.err(e, format!("group.enforce must be off, log, block or charge, found `{other}`"));
            return Enforce::Off;
        }
    };
    if mode == Enforce::Off {
        return mode;
    }
    if mode == Enforce::Charge {
        if is_star {
            cx.err(e, "group.enforce = \"charge\" cannot apply to the `*` group: its requests name no crawler, and only a crawler proven by its signature can be charged; name the crawlers in a group of their own");
        }
        return mode;
    }
    let m = mode.as_str();
    if is_star {
        cx.warn(e, Warning::EnforceOnStar, format!("group.enforce: `{m}` on the `*` group has no effect: its requests name no policy token (browsers, unknown clients), and those are never blocked nor recorded as violations; name the crawlers in a group of their own to enforce on them"));
    } else if !can_disallow {
        cx.warn(e, Warning::EnforceWithoutRules, format!("group.enforce: `{m}` has nothing to act on: the group has no disallow rule; add disallow rules or remove enforce"));
    }
    if mode == Enforce::Block {
        let robots_only: Vec<String> =
            tokens.iter().filter(|t| catalog::is_robots_only(t)).map(|t| format!("`{t}`")).collect();
        match robots_only.as_slice() {
            [] => {}
            [one] => cx.warn(e, Warning::RobotsOnlyToken, format!("group.enforce: {one} never appears in a User-Agent header (a robots.txt-only token): robots.txt publishes it, but `block` cannot apply to it")),
            many => cx.warn(e, Warning::RobotsOnlyToken, format!("group.enforce: {} never appear in a User-Agent header (robots.txt-only tokens): robots.txt publishes them, but `block` cannot apply to them", many.join(", "))),
        }
    }
    mode
}

/// Whether a compiled `enforce` charges.
fn mode_is_charge(mode: Enforce) -> bool {
    mode == Enforce::Charge
}

/// The group's `block_status` (403 when absent or invalid): a 4xx or 5xx
/// status.
fn compile_block_status(cx: &mut Ctx<'_>, block_status: Option<&Spanned<i64>>) -> u16 {
    match block_status {
        None => 403,
        Some(s) => match u16::try_from(*s.get_ref()) {
            Ok(v) if (400..=599).contains(&v) => v,
            _ => {
                cx.err(s, format!("group.block_status must be a 4xx or 5xx status, found {}", s.get_ref()));
                403
            }
        },
    }
}

fn compile_tags(cx: &mut Ctx<'_>, raw: &[Spanned<RawRobotsTag>]) -> Vec<TagEntry> {
    let mut out = Vec::new();
    for t in raw {
        let RawRobotsTag { path, agents, rules, header, html } = t.get_ref();
        let pattern = match Pattern::new(path.get_ref()) {
            Ok(p) => p,
            Err(e) => {
                cx.err(path, format!("robots_tag.path: {e}"));
                continue;
            }
        };
        let agents: Vec<String> = match agents {
            None => vec!["*".to_string()],
            Some(list) => list
                .iter()
                .filter(|a| match validate::agent_token("robots_tag.agents", a.get_ref()) {
                    Ok(()) => true,
                    Err(e) => {
                        cx.err(a, e);
                        false
                    }
                })
                .map(|a| a.get_ref().clone())
                .collect(),
        };
        let mut ok_rules = Vec::new();
        for r in rules {
            match TagRules::new(vec![("*".to_string(), vec![r.get_ref().clone()])]) {
                Ok(_) => ok_rules.push(r.get_ref().clone()),
                Err(e) => cx.err(r, format!("robots_tag.rules: {e}")),
            }
        }
        if rules.is_empty() {
            cx.err(t, "robots_tag.rules: at least one rule is needed");
        }
        for a in &agents {
            if a != "*" {
                if let Err(e) = TagRules::new(vec![(a.clone(), vec!["noindex".to_string()])]) {
                    cx.err(t, format!("robots_tag.agents: {e}"));
                }
            }
        }
        let html = match html {
            None => None,
            Some(h) => match h.get_ref().as_str() {
                "off" => Some(None),
                "inject" => Some(Some(HtmlMode::Inject)),
                "audit" => Some(Some(HtmlMode::Audit)),
                "enforce" => Some(Some(HtmlMode::Enforce)),
                other => {
                    cx.err(h, format!("robots_tag.html must be off, inject, audit or enforce, found `{other}`"));
                    None
                }
            },
        };
        out.push(TagEntry {
            path: path.get_ref().clone(),
            pattern,
            agents,
            rules: ok_rules,
            header: header.unwrap_or(true),
            html,
        });
    }
    out
}

fn compile_agents_txt(cx: &mut Ctx<'_>, raw: Option<&Spanned<RawAgentsTxt>>) -> (usize, Option<String>) {
    let Some(raw) = raw else { return (0, None) };
    let RawAgentsTxt { enabled, rules } = raw.get_ref();
    let mut compiled = Vec::new();
    for r in rules.iter().flatten() {
        let rule = r.get_ref();
        let allow = match rule.action.get_ref().to_ascii_lowercase().as_str() {
            "allow" => true,
            "disallow" => false,
            other => {
                cx.err(
                    &rule.action,
                    format!("agents_txt.rules.action must be allow or disallow, found `{}`", validate::shown(other)),
                );
                continue;
            }
        };
        let path = rule.path.get_ref();
        if !path.starts_with('/') || path.contains(char::is_whitespace) {
            cx.err(
                &rule.path,
                format!(
                    "agents_txt.rules.path must start with `/` and contain no whitespace (write %20), found `{}`",
                    validate::shown(path)
                ),
            );
            continue;
        }
        // The verifier below refuses them too, but at the rule and with the
        // character unescaped in the message: a parameter's own position.
        let mut params_ok = true;
        for (k, v) in rule.params.iter().flatten() {
            let e = validate::no_control("agents_txt.rules.params", k)
                .and_then(|()| validate::no_control(&format!("agents_txt.rules.params.{k}"), v.get_ref()));
            if let Err(e) = e {
                cx.err(v, e);
                params_ok = false;
            }
        }
        if !params_ok {
            continue;
        }
        let params = rule.params.iter().flatten().map(|(k, v)| (k.clone(), v.get_ref().clone())).collect();
        let candidate = AgentsRule { path: rule.path.get_ref().clone(), allow, params };
        // Check each rule alone so the error points at the rule.
        match agents_txt::render(&[], std::slice::from_ref(&candidate)) {
            Ok(_) => compiled.push(candidate),
            Err(e) => cx.err(
                r,
                format!(
                    "agents_txt.rules: this rule would make agents.txt fail its verifier: {}",
                    validate::shown(&e.to_string())
                ),
            ),
        }
    }
    if !enabled.unwrap_or(true) {
        return (0, None);
    }
    let count = compiled.len();
    match agents_txt::render(&[("version", "1.0"), ("generated-by", "crawlgate")], &compiled) {
        Ok(text) => (count, Some(text)),
        Err(e) => {
            cx.err(raw, format!("agents_txt: {e}"));
            (0, None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UPSTREAM: &str = "[upstream]\nservers = [\"127.0.0.1:8000\"]\n";

    fn server(keys: &str) -> Result<ServerSettings, String> {
        let src = format!("[server]\n{keys}\n{UPSTREAM}");
        load(&src, "p.toml").map(|l| l.policy.settings().server.clone()).map_err(|e| e.to_string())
    }

    #[test]
    fn client_limits_default() {
        let s = server("").unwrap();
        assert_eq!(s.client_idle_timeout, Duration::from_secs(60));
        assert_eq!(s.client_header_timeout, Duration::from_secs(10));
        assert_eq!(s.client_body_timeout, Duration::from_secs(60));
        assert_eq!(s.max_connections, 4096);
    }

    #[test]
    fn client_limits_parse() {
        let s = server(
            "client_idle_timeout = \"1500ms\"\nclient_header_timeout = \"2s\"\nclient_body_timeout = \"1m\"\n\
             max_connections = 50",
        )
        .unwrap();
        assert_eq!(s.client_idle_timeout, Duration::from_millis(1500));
        assert_eq!(s.client_header_timeout, Duration::from_secs(2));
        assert_eq!(s.client_body_timeout, Duration::from_secs(60));
        assert_eq!(s.max_connections, 50);
    }

    #[test]
    fn admin_limits_default_and_parse() {
        let s = server("").unwrap();
        assert_eq!(s.admin_header_timeout, Duration::from_secs(5));
        assert_eq!(s.admin_connections_per_client, 16);
        assert_eq!(s.admin_idle_timeout, Duration::from_secs(10));
        let s =
            server("admin_header_timeout = \"800ms\"\nadmin_connections_per_client = 64\nadmin_idle_timeout = \"2s\"")
                .unwrap();
        assert_eq!(s.admin_header_timeout, Duration::from_millis(800));
        assert_eq!(s.admin_idle_timeout, Duration::from_secs(2));
        assert_eq!(
            server("admin_idle_timeout = \"0s\"").unwrap_err(),
            "p.toml:2:22: server.admin_idle_timeout must be greater than zero, found `0s`"
        );
        assert_eq!(s.admin_connections_per_client, 64);
        assert_eq!(
            server("admin_header_timeout = \"0s\"\nadmin_connections_per_client = 65").unwrap_err(),
            "p.toml:2:24: server.admin_header_timeout must be greater than zero, found `0s`\n\
             p.toml:3:32: server.admin_connections_per_client must be between 1 and 64 (the admin listener's cap), found 65"
        );
        assert_eq!(
            server("admin_connections_per_client = 0").unwrap_err(),
            "p.toml:2:32: server.admin_connections_per_client must be between 1 and 64 (the admin listener's cap), found 0"
        );
    }

    #[test]
    fn client_limits_rejected_with_position() {
        let err = server(
            "client_idle_timeout = \"0s\"\nclient_header_timeout = \"ten\"\nclient_body_timeout = \"0ms\"\n\
             max_connections = 0",
        )
        .unwrap_err();
        assert_eq!(
            err,
            "p.toml:2:23: server.client_idle_timeout must be greater than zero, found `0s`\n\
             p.toml:3:25: server.client_header_timeout: `ten` is not a duration (use e.g. 500ms, 30s, 5m, 1h, 2d)\n\
             p.toml:4:23: server.client_body_timeout must be greater than zero, found `0ms`\n\
             p.toml:5:19: server.max_connections must be between 1 and 1048576, found 0"
        );
        assert_eq!(
            server("max_connections = -3").unwrap_err(),
            "p.toml:2:19: server.max_connections must be between 1 and 1048576, found -3"
        );
    }
}

/// The hosts this site is known by when `verification.signatures.authorities`
/// is not written: `server.hosts`, else `upstream.sni` and
/// `robots_txt.origin_host` as written (a server address alone names the
/// origin, not the site).
fn site_hosts(
    cx: &mut Ctx<'_>,
    hosts: Option<&[Spanned<String>]>,
    sni: Option<&str>,
    origin_host: Option<&str>,
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    if let Some(hosts) = hosts {
        for h in hosts {
            match validate_authority(h.get_ref()) {
                Ok(norm) if !out.contains(&norm) => out.push(norm),
                Ok(_) => {}
                Err(e) => cx.err(h, format!("server.hosts: {e}")),
            }
        }
        return out;
    }
    for h in [sni, origin_host].into_iter().flatten() {
        let h = h.trim().to_ascii_lowercase();
        if !h.is_empty() && !out.contains(&h) {
            out.push(h);
        }
    }
    out
}

/// The `[verification]` table; without it nothing is verified. `groups`
/// are the compiled groups, whose tokens a list override may name; `site`
/// the hosts signatures are bound to unless `authorities` names them.
fn compile_verification(
    cx: &mut Ctx<'_>,
    raw: Option<&RawVerification>,
    groups: &[Group],
    site: &[String],
) -> VerificationSettings {
    let mut v = VerificationSettings::default();
    let Some(raw) = raw else { return v };
    v.enabled = true;
    // `trusted_proxies` is read by `compile_server`, its new place.
    let RawVerification {
        trusted_proxies: _,
        refresh,
        fetch_timeout,
        state_dir,
        lists,
        dns,
        signatures,
        keys,
        observe_catalog,
    } = raw;
    if let Some(o) = observe_catalog {
        match o.get_ref().as_str() {
            "verify" => v.observe_catalog = true,
            "off" => v.observe_catalog = false,
            other => cx.err(o, format!("verification.observe_catalog must be \"verify\" or \"off\", found `{other}`")),
        }
    }
    v.refresh = cx.positive_duration("verification.refresh", refresh, v.refresh);
    v.fetch_timeout = cx.positive_duration("verification.fetch_timeout", fetch_timeout, v.fetch_timeout);
    if let Some(d) = state_dir {
        if d.get_ref().starts_with('/') {
            v.state_dir = Some(d.get_ref().clone());
        } else {
            cx.err(d, format!("verification.state_dir must be an absolute path, found `{}`", d.get_ref()));
        }
    }
    for (token, sources) in lists.iter().flatten() {
        let known = catalog::lookup(token.get_ref()).is_some()
            || groups.iter().any(|g| g.tokens.iter().any(|t| t.eq_ignore_ascii_case(token.get_ref())));
        if !known {
            cx.err(
                token,
                format!("verification.lists: `{}` is neither a catalog token nor a token of a group", token.get_ref()),
            );
        }
        let mut out = Vec::new();
        for src in sources {
            let s = src.get_ref();
            if s.starts_with("https://") || s.starts_with("http://") || s.starts_with('/') {
                out.push(s.clone());
            } else {
                cx.err(
                    src,
                    format!(
                        "verification.lists.{}: `{s}` must be an http(s) URL or an absolute file path",
                        token.get_ref()
                    ),
                );
            }
        }
        v.lists.push((token.get_ref().clone(), out));
    }
    if let Some(dns) = dns {
        let RawDns { nameservers, timeout, cache_size } = dns.get_ref();
        for ns in nameservers.iter().flatten() {
            let parsed = ns
                .get_ref()
                .parse::<SocketAddr>()
                .or_else(|_| ns.get_ref().parse::<std::net::IpAddr>().map(|ip| SocketAddr::new(ip, 53)));
            match parsed {
                Ok(a) => v.dns.nameservers.push(a),
                Err(_) => cx.err(
                    ns,
                    format!("verification.dns.nameservers: `{}` is not an IP address or IP:PORT", ns.get_ref()),
                ),
            }
        }
        v.dns.timeout = cx.positive_duration("verification.dns.timeout", timeout, v.dns.timeout);
        v.dns.cache_size = cache_size_of(cx, "verification.dns.cache_size", cache_size.as_ref(), v.dns.cache_size);
    }
    v.signatures.authorities = site.to_vec();
    if let Some(sig) = signatures {
        let RawSignatures {
            max_skew,
            directory_timeout,
            cache_size,
            allow_http_directories,
            any_directory_host,
            authorities,
            max_validity,
            required_components,
            replay_cache_size,
            allow_private_directories,
        } = sig.get_ref();
        let s = &mut v.signatures;
        if let Some(list) = authorities {
            s.authorities = Vec::new();
            s.authorities_written = true;
            for a in list {
                match validate_authority(a.get_ref()) {
                    Ok(norm) => s.authorities.push(norm),
                    Err(e) => cx.err(a, format!("verification.signatures.authorities: {e}")),
                }
            }
        }
        s.max_validity = cx.positive_duration("verification.signatures.max_validity", max_validity, s.max_validity);
        if s.max_validity > Duration::from_secs(24 * 3600) {
            if let Some(m) = max_validity {
                cx.err(
                    m,
                    format!(
                        "verification.signatures.max_validity must be at most 24h (the draft's limit), found `{}`",
                        m.get_ref()
                    ),
                );
            }
        }
        if let Some(list) = required_components {
            s.required_components = Vec::new();
            for c in list {
                if REQUIRABLE_COMPONENTS.contains(&c.get_ref().as_str()) {
                    s.required_components.push(c.get_ref().clone());
                } else {
                    cx.err(
                        c,
                        format!(
                            "verification.signatures.required_components: `{}` is not one of {}",
                            c.get_ref(),
                            REQUIRABLE_COMPONENTS.join(", ")
                        ),
                    );
                }
            }
            if !s.required_components.iter().any(|c| c == "@authority" || c == "@target-uri") {
                s.required_components.insert(0, "@authority".to_owned());
            }
        }
        s.replay_cache_size = cache_size_of(
            cx,
            "verification.signatures.replay_cache_size",
            replay_cache_size.as_ref(),
            s.replay_cache_size,
        );
        if let Some(a) = any_directory_host {
            s.any_directory_host = *a.get_ref();
            if *a.get_ref() {
                cx.warn(a, Warning::AnyDirectoryHost, "verification.signatures.any_directory_host: the key directory of any Signature-Agent host is fetched, so clients choose which public host the proxy connects to, and a directory's card may bind its keys to any token; for tests only");
            }
        }
        s.max_skew = cx.duration("verification.signatures.max_skew", max_skew.as_ref(), s.max_skew);
        s.directory_timeout =
            cx.positive_duration("verification.signatures.directory_timeout", directory_timeout, s.directory_timeout);
        s.cache_size = cache_size_of(cx, "verification.signatures.cache_size", cache_size.as_ref(), s.cache_size);
        if let Some(a) = allow_private_directories {
            s.allow_private_directories = *a.get_ref();
            if *a.get_ref() {
                cx.warn(a, Warning::PrivateKeyDirectories, "verification.signatures.allow_private_directories: key directories on private, loopback and link-local addresses are fetched, so a client's Signature-Agent can make the proxy connect to internal services; for tests only");
            }
        }
        if let Some(a) = allow_http_directories {
            s.allow_http_directories = *a.get_ref();
            if *a.get_ref() {
                cx.warn(a, Warning::HttpKeyDirectories, "verification.signatures.allow_http_directories: key directories may be fetched over plain HTTP, where anyone on the path can replace the keys; for tests only");
            }
        }
    }
    for k in keys.iter().flatten() {
        let RawKey { token, jwk } = k.get_ref();
        if let Err(e) = validate_ed25519_jwk(jwk.get_ref()) {
            cx.err(jwk, format!("verification.keys.jwk: {e} (an Ed25519 JWK: {{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"<32 bytes base64url>\"}})"));
        }
        v.keys.push(PinnedJwk { token: token.get_ref().clone(), jwk: jwk.get_ref().clone() });
    }
    let signable = !v.keys.is_empty() || groups.iter().any(|g| g.tokens.iter().any(|t| v.has_signature_source(t)));
    if v.signatures.authorities.is_empty() && signable && !v.signatures.authorities_written {
        let at = signatures.as_ref().map_or(0, |s| s.span().start);
        cx.warn_at(at, Warning::UnboundSignatures, "verification.signatures.authorities: nothing names this site's host (no authorities, server.hosts, upstream.sni or robots_txt.origin_host), so no Web Bot Auth signature can be bound to it and every one is invalid; name the hosts the proxy serves");
    }
    v
}

/// A `host` or `host:port` (an IPv6 host in brackets), lower-cased.
fn validate_authority(a: &str) -> Result<String, String> {
    let lower = a.to_ascii_lowercase();
    let host = match lower.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some((h, port))
                if h.parse::<std::net::Ipv6Addr>().is_ok()
                    && (port.is_empty() || port.strip_prefix(':').is_some_and(|p| p.parse::<u16>().is_ok())) =>
            {
                return Ok(lower)
            }
            _ => return Err(format!("`{a}` is not a host or host:port")),
        },
        None => match lower.rsplit_once(':') {
            Some((h, p)) if p.parse::<u16>().is_ok() => h.to_owned(),
            Some(_) => return Err(format!("`{a}` is not a host or host:port")),
            None => lower.clone(),
        },
    };
    let ok = !host.is_empty()
        && host.split('.').all(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'));
    if ok {
        Ok(lower)
    } else {
        Err(format!("`{a}` is not a host or host:port"))
    }
}

/// A cache size: 1 to 10 million entries.
fn cache_size_of(cx: &mut Ctx<'_>, key: &str, v: Option<&Spanned<i64>>, default: usize) -> usize {
    match v {
        None => default,
        Some(n) => match usize::try_from(*n.get_ref()) {
            Ok(u) if (1..=10_000_000).contains(&u) => u,
            _ => {
                cx.err(n, format!("{key} must be between 1 and 10000000, found {}", n.get_ref()));
                default
            }
        },
    }
}

/// The group's `verify` as written, if valid.
fn compile_verify(cx: &mut Ctx<'_>, v: Option<&Spanned<String>>) -> Option<(VerifyMode, usize)> {
    let v = v?;
    match VerifyMode::parse(v.get_ref()) {
        Some(m) => Some((m, v.span().start)),
        None => {
            cx.err(v, format!("group.verify must be none, ip, rdns, signature or any, found `{}`", v.get_ref()));
            None
        }
    }
}

/// Warns at each `on_spoofed = "block"` / `on_unverified = "block"` when no
/// proxy is trusted: behind a load balancer every request comes from its
/// address, so every real crawler's claim fails and is blocked.
fn block_without_trusted_proxies(cx: &mut Ctx<'_>, raw: &[Spanned<RawGroup>]) {
    for g in raw {
        let g = g.get_ref();
        for (key, v) in [("on_spoofed", &g.on_spoofed), ("on_unverified", &g.on_unverified)] {
            if let Some(v) = v.as_ref().filter(|v| v.get_ref() == "block") {
                cx.warn(
                    v,
                    Warning::BlockWithoutTrustedProxies,
                    format!(
                        "group.{key} = \"block\" while server.trusted_proxies is empty: behind a load balancer or CDN every request comes from its address, so every real crawler fails verification and gets a 403 (a deindexing trap); list the balancer's addresses in server.trusted_proxies, or acknowledge this warning if clients connect directly"
                    ),
                );
            }
        }
    }
}

/// The group's `on_spoofed` or `on_unverified`.
/// `challenge` only for `on_unverified`: a spoofed claim was already
/// signed, or proven false another way.
fn compile_on_failure(cx: &mut Ctx<'_>, key: &str, v: Option<&Spanned<String>>, default: OnFailure) -> OnFailure {
    let Some(v) = v else { return default };
    let challenge = key == "on_unverified";
    match OnFailure::parse(v.get_ref()) {
        Some(OnFailure::Challenge) if !challenge => {}
        Some(f) => return f,
        None => {}
    }
    let allowed = if challenge { "block, log, anonymous or challenge" } else { "block, log or anonymous" };
    cx.err(v, format!("group.{key} must be {allowed}, found `{}`", v.get_ref()));
    default
}

/// Each group's effective `verify`: none without a `[verification]` table;
/// else as written (an `ip` or `rdns` that no token of the group can satisfy
/// is an error), else `any` when some token has a source and `none` when
/// none has.
fn resolve_verify(cx: &mut Ctx<'_>, groups: &mut [Group], v: &VerificationSettings) {
    for g in groups.iter_mut() {
        let tokens: Vec<&String> = g.tokens.iter().filter(|t| *t != "*").collect();
        g.verify = match g.verify_written {
            _ if !v.enabled => VerifyMode::None,
            Some((mode, at)) => {
                let (lacks, what) = match mode {
                    VerifyMode::Ip => (tokens.iter().all(|t| v.ip_lists_for(t).is_empty()), "a published or configured IP list; add one under [verification.lists] or choose another method"),
                    VerifyMode::Rdns => (tokens.iter().all(|t| v.rdns_for(t).is_empty()), "documented reverse DNS domains; choose another method"),
                    _ => (false, ""),
                };
                if lacks {
                    let names: Vec<String> = tokens.iter().map(|t| format!("`{t}`")).collect();
                    let names = if names.is_empty() { "`*`".to_string() } else { names.join(", ") };
                    cx.err_at(
                        at,
                        format!("group.verify = \"{}\": no token of this group ({names}) has {what}", mode.as_str()),
                    );
                }
                mode
            }
            None if tokens.iter().any(|t| v.has_source(t)) => VerifyMode::Any,
            None => VerifyMode::None,
        };
        // A client controls its own reverse zone: a PTR that never answers
        // makes a claim `unverified`, and `log` would then give a spoofer
        // the group. Where rDNS is the only method, an unanswered lookup
        // proves nothing, so the default treats it like a spoofed claim.
        let methods = v.methods_for(tokens.iter().map(|t| t.as_str()), g.verify);
        if !g.on_unverified_written && methods == [Method::Rdns] {
            g.on_unverified = OnFailure::Anonymous;
        }
        if g.on_unverified == OnFailure::Challenge && v.enabled {
            let keyids: Vec<String> = v
                .keys
                .iter()
                .filter(|k| tokens.iter().any(|t| t.eq_ignore_ascii_case(&k.token)))
                .filter_map(|k| crate::verification::ed25519_jwk_thumbprint(&k.jwk))
                .collect();
            let keyid = match keyids.as_slice() {
                [one] => Some(one.as_str()),
                _ => None,
            };
            g.accept_signature = Some(crate::verification::accept_signature(&v.signatures.required_components, keyid));
        }
    }
}

#[cfg(test)]
mod verification_tests {
    use super::*;

    fn errors(src: &str) -> String {
        match load(src, "v.toml") {
            Ok(_) => String::from("ok"),
            Err(e) => e.to_string(),
        }
    }

    const BASE: &str = "[upstream]\nservers = [\"127.0.0.1:8000\"]\n";

    #[test]
    fn a_sub_table_alone_opens_verification() {
        let src = format!("{BASE}\n[verification.dns]\ntimeout = \"300ms\"\n");
        let loaded = load(&src, "v.toml").unwrap_or_else(|e| panic!("{e}"));
        let v = &loaded.policy.settings().verification;
        assert!(v.enabled);
        assert_eq!(v.dns.timeout, Duration::from_millis(300));
    }

    #[test]
    fn settings_parse_with_defaults() {
        let src = format!(
            "{BASE}[verification]\nrefresh = \"1h\"\nstate_dir = \"/var/lib/crawlgate\"\n[verification.lists]\nGPTBot = [\"https://example.com/g.json\", \"/etc/crawlgate/gptbot.txt\"]\n[verification.dns]\nnameservers = [\"127.0.0.1:5353\", \"::1\"]\ntimeout = \"200ms\"\n[verification.signatures]\nmax_skew = \"30s\"\nauthorities = [\"WWW.example.com\", \"example.com:8443\"]\n[[verification.keys]]\ntoken = \"ExampleBot\"\njwk = '{{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs\"}}'\n[[group]]\nuser_agents = [\"GPTBot\", \"ExampleBot\"]\n[[group]]\nuser_agents = [\"ClaudeBot\"]\n"
        );
        let loaded = load(&src, "v.toml").unwrap_or_else(|e| panic!("{e}"));
        let v = &loaded.policy.settings().verification;
        assert!(v.enabled);
        assert_eq!(v.refresh, Duration::from_secs(3600));
        assert_eq!(v.fetch_timeout, Duration::from_secs(10));
        assert_eq!(v.state_dir.as_deref(), Some("/var/lib/crawlgate"));
        assert_eq!(v.ip_lists_for("gptbot"), ["https://example.com/g.json", "/etc/crawlgate/gptbot.txt"]);
        assert_eq!(
            v.dns.nameservers.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["127.0.0.1:5353", "[::1]:53"]
        );
        assert_eq!((v.dns.timeout, v.dns.cache_size), (Duration::from_millis(200), 10_000));
        assert_eq!(v.signatures.max_skew, Duration::from_secs(30));
        assert_eq!(v.signatures.authorities, ["www.example.com", "example.com:8443"]);
        assert_eq!(v.signatures.max_validity, Duration::from_secs(300));
        assert_eq!(v.signatures.required_components, ["@authority", "@method", "@path"]);
        assert_eq!(v.signatures.replay_cache_size, 100_000);
        assert!(!v.signatures.any_directory_host);
        assert_eq!(v.keys.len(), 1);
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        let p = &loaded.policy;
        assert_eq!(p.claim("GPTBot").map(|c| c.verify), Some(VerifyMode::Any));
        assert_eq!(p.claim("ClaudeBot").map(|c| c.verify), Some(VerifyMode::None));
    }

    #[test]
    fn errors_have_positions() {
        let cases: &[(&str, &str)] = &[
            (
                "[verification]\n[[group]]\nuser_agents = [\"ClaudeBot\", \"ExampleBot\"]\nverify = \"ip\"\n",
                "v.toml:6:10: group.verify = \"ip\": no token of this group (`ClaudeBot`, `ExampleBot`) has a published or configured IP list; add one under [verification.lists] or choose another method",
            ),
            (
                "[verification]\n[[group]]\nuser_agents = [\"GPTBot\"]\nverify = \"rdns\"\n",
                "v.toml:6:10: group.verify = \"rdns\": no token of this group (`GPTBot`) has documented reverse DNS domains; choose another method",
            ),
            (
                "[verification]\n[[group]]\nuser_agents = [\"GPTBot\"]\nverify = \"dns\"\non_spoofed = \"deny\"\non_unverified = \"allow\"\n",
                "v.toml:6:10: group.verify must be none, ip, rdns, signature or any, found `dns`\nv.toml:7:14: group.on_spoofed must be block, log or anonymous, found `deny`\nv.toml:8:17: group.on_unverified must be block, log, anonymous or challenge, found `allow`",
            ),
            (
                "[verification]\nrefresh = \"0s\"\nstate_dir = \"state\"\n[verification.lists]\nNoSuchBot = [\"ftp://x\"]\n[[group]]\nuser_agents = [\"*\"]\n",
                "v.toml:4:11: verification.refresh must be greater than zero, found `0s`\nv.toml:5:13: verification.state_dir must be an absolute path, found `state`\nv.toml:7:1: verification.lists: `NoSuchBot` is neither a catalog token nor a token of a group\nv.toml:7:14: verification.lists.NoSuchBot: `ftp://x` must be an http(s) URL or an absolute file path",
            ),
            (
                "[verification]\n[verification.dns]\nnameservers = [\"dns.example\"]\ncache_size = 0\n[[verification.keys]]\ntoken = \"GPTBot\"\njwk = '{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"AAAA\"}'\n[[group]]\nuser_agents = [\"*\"]\n",
                "v.toml:5:16: verification.dns.nameservers: `dns.example` is not an IP address or IP:PORT\nv.toml:6:14: verification.dns.cache_size must be between 1 and 10000000, found 0\nv.toml:9:7: verification.keys.jwk: `x` must be 32 bytes, found 3 (an Ed25519 JWK: {\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"<32 bytes base64url>\"})",
            ),
        ];
        for (src, want) in cases {
            assert_eq!(errors(&format!("{BASE}{src}")), *want, "{src}");
        }
    }

    /// `observe_catalog`: which catalog crawlers the policy does not name
    /// get a claim to verify (with the catalog's methods), per setting.
    #[test]
    fn observe_catalog_names_the_claims_of_unnamed_catalog_crawlers() {
        let group = "[[group]]\nuser_agents = [\"GPTBot\"]\n";
        let rows: &[(&str, Option<VerifyMode>, Option<VerifyMode>)] = &[
            // No [verification]: nothing is verified.
            ("", None, None),
            // The default: PerplexityBot (unnamed) with "any"; GPTBot is the
            // policy's, verified as its group says, never as observed.
            ("[verification]\n", Some(VerifyMode::Any), None),
            ("[verification]\nobserve_catalog = \"verify\"\n", Some(VerifyMode::Any), None),
            ("[verification]\nobserve_catalog = \"off\"\n", None, None),
        ];
        for (table, perplexity, gptbot) in rows {
            let loaded = load(&format!("{BASE}{table}{group}"), "v.toml").unwrap_or_else(|e| panic!("{e}"));
            let p = &loaded.policy;
            let got =
                (p.observed_claim("PerplexityBot").map(|c| c.verify), p.observed_claim("GPTBot").map(|c| c.verify));
            assert_eq!(got, (*perplexity, *gptbot), "{table}");
            assert_eq!(p.observed_claim("PerplexityBot").map(|c| c.agent), perplexity.map(|_| "PerplexityBot"));
            // What the proxy and `explain` ask: observed only when the
            // request's own claim verified nothing.
            let ua = "Mozilla/5.0 (compatible; PerplexityBot/1.0)";
            let observed = p.observation(ua, crate::verification::Verification::NotApplicable);
            assert_eq!(
                observed.map(|(t, c)| (t, c.map(|c| c.verify))),
                Some(("PerplexityBot", *perplexity)),
                "{table}"
            );
            assert_eq!(p.observation(ua, crate::verification::Verification::Unverified), None);
            assert_eq!(p.observation("curl/8.5.0", crate::verification::Verification::NotApplicable), None);
        }
        assert_eq!(
            errors(&format!("{BASE}[verification]\nobserve_catalog = \"block\"\n{group}")),
            "v.toml:4:19: verification.observe_catalog must be \"verify\" or \"off\", found `block`"
        );
    }

    #[test]
    fn http_directories_warn() {
        let src = format!("{BASE}[verification]\n[verification.signatures]\nallow_http_directories = true\n[[group]]\nuser_agents = [\"*\"]\n");
        let loaded = load(&src, "v.toml").unwrap_or_else(|e| panic!("{e}"));
        let w: Vec<String> = loaded.warnings.iter().map(ToString::to_string).collect();
        assert_eq!(w, ["v.toml:5:26: warning[http-key-directories]: verification.signatures.allow_http_directories: key directories may be fetched over plain HTTP, where anyone on the path can replace the keys; for tests only"]);
    }

    #[test]
    fn any_directory_host_warns_on_its_own() {
        let src = format!("{BASE}[verification]\n[verification.signatures]\nauthorities = [\"a.example\"]\nany_directory_host = true\n[[group]]\nuser_agents = [\"*\"]\n");
        let loaded = load(&src, "v.toml").unwrap_or_else(|e| panic!("{e}"));
        let w: Vec<String> = loaded.warnings.iter().map(ToString::to_string).collect();
        assert_eq!(w, ["v.toml:6:22: warning[any-directory-host]: verification.signatures.any_directory_host: the key directory of any Signature-Agent host is fetched, so clients choose which public host the proxy connects to, and a directory's card may bind its keys to any token; for tests only"]);
        let v = &loaded.policy.settings().verification.signatures;
        assert!(v.any_directory_host && !v.allow_http_directories);
    }

    #[test]
    fn private_key_directories_warn() {
        let src = format!("{BASE}[verification]\n[verification.signatures]\nauthorities = [\"a.example\"]\nallow_private_directories = true\n[[group]]\nuser_agents = [\"*\"]\n");
        let loaded = load(&src, "v.toml").unwrap_or_else(|e| panic!("{e}"));
        let w: Vec<String> = loaded.warnings.iter().map(ToString::to_string).collect();
        assert_eq!(w, ["v.toml:6:29: warning[private-key-directories]: verification.signatures.allow_private_directories: key directories on private, loopback and link-local addresses are fetched, so a client's Signature-Agent can make the proxy connect to internal services; for tests only"]);
        assert!(loaded.policy.settings().verification.signatures.allow_private_directories);
        let off = format!("{BASE}[verification]\n[verification.signatures]\nauthorities = [\"a.example\"]\n[[group]]\nuser_agents = [\"*\"]\n");
        let loaded = load(&off, "v.toml").unwrap_or_else(|e| panic!("{e}"));
        assert!(!loaded.policy.settings().verification.signatures.allow_private_directories);
    }

    #[test]
    fn signatures_are_bound_to_the_site() {
        let key = "[[verification.keys]]\ntoken = \"ExampleBot\"\njwk = '{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs\"}'\n[[group]]\nuser_agents = [\"*\"]\n";
        // Nothing names the site: a warning, and no signature can be valid.
        let loaded = load(&format!("{BASE}[verification]\n{key}"), "v.toml").unwrap_or_else(|e| panic!("{e}"));
        let w: Vec<String> = loaded.warnings.iter().map(ToString::to_string).collect();
        assert_eq!(w, ["v.toml:1:1: warning[unbound-signatures]: verification.signatures.authorities: nothing names this site's host (no authorities, server.hosts, upstream.sni or robots_txt.origin_host), so no Web Bot Auth signature can be bound to it and every one is invalid; name the hosts the proxy serves"]);
        assert!(loaded.policy.settings().verification.signatures.authorities.is_empty());
        // upstream.sni and robots_txt.origin_host as written name it.
        let src = format!("{}sni = \"WWW.Example.com\"\n[robots_txt]\norigin = \"merge\"\norigin_host = \"example.com\"\n[verification]\n{key}", BASE.trim_end());
        let src = src.replacen("sni", "\nsni", 1);
        let loaded = load(&src, "v.toml").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(loaded.policy.settings().verification.signatures.authorities, ["www.example.com", "example.com"]);
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        // server.hosts, when written, names it alone.
        let src = format!("[server]\nhosts = [\"www.example.com\", \"Example.com:8443\"]\n{src}");
        let loaded = load(&src, "v.toml").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            loaded.policy.settings().verification.signatures.authorities,
            ["www.example.com", "example.com:8443"]
        );
        let err = load(&format!("[server]\nhosts = [\"a/b\"]\n{BASE}"), "v.toml").err().map(|e| e.to_string());
        assert_eq!(err.as_deref(), Some("v.toml:2:10: server.hosts: `a/b` is not a host or host:port"));
        // Bad values.
        let src = format!("{BASE}[verification]\n[verification.signatures]\nauthorities = [\"a b\", \"h:x\", \"[::1]:8443\"]\nmax_validity = \"2d\"\nrequired_components = [\"@path\", \"content-digest\"]\nreplay_cache_size = 0\n");
        let err = load(&src, "v.toml").err().map(|e| e.to_string()).unwrap_or_default();
        assert_eq!(err, "v.toml:5:16: verification.signatures.authorities: `a b` is not a host or host:port\nv.toml:5:23: verification.signatures.authorities: `h:x` is not a host or host:port\nv.toml:6:16: verification.signatures.max_validity must be at most 24h (the draft's limit), found `2d`\nv.toml:7:33: verification.signatures.required_components: `content-digest` is not one of @authority, @method, @path, @query, @scheme, @target-uri\nv.toml:8:21: verification.signatures.replay_cache_size must be between 1 and 10000000, found 0");
        // Required components: @authority is always in.
        let src = format!("{BASE}[verification]\n[verification.signatures]\nauthorities = [\"a.example\"]\nrequired_components = [\"@path\"]\n");
        let loaded = load(&src, "v.toml").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(loaded.policy.settings().verification.signatures.required_components, ["@authority", "@path"]);
    }
}

#[cfg(test)]
mod published_value_tests {
    use super::*;

    const UPSTREAM: &str = "[upstream]\nservers = [\"127.0.0.1:8000\"]\n";

    fn errors(src: &str) -> String {
        match load(src, "p.toml") {
            Ok(_) => String::from("ok"),
            Err(e) => e.to_string(),
        }
    }

    /// A value written into a header, a served file, the 429 body or the
    /// metrics as it is (or trimmed first, which would hide the character)
    /// is refused at its key when it holds a control character.
    #[test]
    fn control_characters_are_refused_where_written() {
        let key = "[verification]\nstate_dir = \"/s\"\n[[verification.keys]]\ntoken = \"ExampleBot\"\njwk = '{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs\"}'\n";
        let cases: Vec<(String, &str)> = vec![
            (
                format!("{UPSTREAM}[[group]]\nname = \"ai\\r\"\nuser_agents = [\"*\"]\n"),
                "p.toml:4:8: group.name: `ai\\r` contains a control character",
            ),
            (
                format!("{UPSTREAM}tls = true\nsni = \"www.example.com\\r\\nDisallow: /\"\n"),
                "p.toml:4:7: upstream.sni must be a host name, found `www.example.com\\r\\nDisallow: /`",
            ),
            (
                format!("{UPSTREAM}[robots_txt]\norigin = \"merge\"\norigin_host = \"www.example.com#x\"\n"),
                "p.toml:5:15: robots_txt.origin_host must be a host or host:port, found `www.example.com#x`",
            ),
            (
                "[upstream]\nservers = [\"origin\\u0000.internal:80\"]\n".to_string(),
                "p.toml:2:12: upstream.servers: `origin\\0.internal:80` is not host:port",
            ),
            (
                "[upstream]\nservers = [\"https://bücher.example:8443/\"]\n".to_string(),
                "p.toml:2:12: upstream.servers: `https://bücher.example:8443/` is not host:port: drop the scheme (`bücher.example:8443`) and set upstream.tls = true for HTTPS to the origin (write an internationalized host in its ASCII form, xn--...)",
            ),
            (
                format!("{UPSTREAM}sni = \"bücher.example\"\n"),
                "p.toml:3:7: upstream.sni must be a host name, found `bücher.example` (write an internationalized host in its ASCII form, xn--...)",
            ),
            (
                format!("{UPSTREAM}[robots_txt]\ncache_max_age = \"1h\\r\"\n"),
                "p.toml:4:17: robots_txt.cache_max_age: `1h\\r` contains a control character",
            ),
            (
                format!("{UPSTREAM}[robots_txt]\nlicense = \"https://e.example/licencé.xml\"\n"),
                "p.toml:4:11: robots_txt.license: `https://e.example/licencé.xml` contains a non-ASCII character, which the Link header cannot carry (percent-encode the path; write an internationalized host as xn--...)",
            ),
            (
                format!("{UPSTREAM}[[group]]\nuser_agents = [\"*\"]\ncontent_usage = [\"train-ai=n\\r\"]\n"),
                "p.toml:5:18: group.content_usage: `train-ai=n\\r` contains a control character",
            ),
            (
                format!("{UPSTREAM}[[group]]\nuser_agents = [\"*\"]\napp_directives = [\"/x\\tfoo\"]\n"),
                "p.toml:5:19: group.app_directives: `/x\\tfoo` contains a control character",
            ),
            (
                format!("{UPSTREAM}[[group]]\nuser_agents = [\"GPTBot\"]\nrate = \"2/s\\n\"\n"),
                "p.toml:5:8: group.rate: `2/s\\n` contains a control character",
            ),
            (
                format!("{UPSTREAM}{key}[[group]]\nuser_agents = [\"ExampleBot\"]\nenforce = \"charge\"\nprice = \"USD 0.01\\r\"\n"),
                "p.toml:11:9: group.price: `USD 0.01\\r` contains a control character",
            ),
            (
                format!("{UPSTREAM}[[robots_tag]]\npath = \"/\"\nrules = [\"noindex\", \"max-snippet:\\r50\"]\n"),
                "p.toml:5:21: robots_tag.rules: rule `max-snippet:\\r50` contains a control character",
            ),
            (
                format!("{UPSTREAM}[agents_txt]\nrules = [{{ path = \"/a\", action = \"allow\\r\" }}]\n"),
                "p.toml:4:34: agents_txt.rules.action must be allow or disallow, found `allow\\r`",
            ),
            (
                format!("{UPSTREAM}[agents_txt]\nrules = [{{ path = \"/a\", action = \"allow\", params = {{ limit = \"5\\r\" }} }}]\n"),
                "p.toml:4:62: agents_txt.rules.params.limit: `5\\r` contains a control character",
            ),
            (
                format!("{UPSTREAM}[agents_txt]\nrules = [{{ path = \"/a\\u0000\", action = \"allow\" }}]\n"),
                "p.toml:4:10: agents_txt.rules: this rule would make agents.txt fail its verifier: line 1: malformed directive `/a\\0 ALLOW`: path `/a\\0` has characters outside URI syntax",
            ),
            (
                format!("{UPSTREAM}[rsl]\ndocument = \"\"\"\n<rsl>\n  <x>\\u0000</x>\n</rsl>\n\"\"\"\n"),
                "p.toml:4:12: rsl.document: line 2 of the document contains a control character (`\\0`); only tab, CR and LF may appear in the document",
            ),
        ];
        for (src, want) in &cases {
            assert_eq!(errors(src), *want, "{src}");
        }
    }

    #[test]
    fn hosts_are_names_or_addresses() {
        for ok in ["example.com", "www.example.com.", "origin_1.internal", "192.0.2.1", "[::1]", "localhost"] {
            assert!(valid_host(ok), "{ok}");
        }
        for bad in ["", ".", "a..b", "[::1", "::1", "a:b:c", "example.com:443", "ex ample.com", "bücher.example", "a#b"]
        {
            assert!(!valid_host(bad), "{bad:?}");
        }
        assert!(valid_host_maybe_port("example.com:8080") && valid_host_maybe_port("[::1]:8080"));
        assert!(!valid_host_maybe_port("example.com:0") && !valid_host_maybe_port("a:b:c"));
        assert_eq!(
            errors(&format!("{UPSTREAM}sni = \"[::1\"\n")),
            "p.toml:3:7: upstream.sni must be a host name, found `[::1`"
        );
        assert_eq!(errors(&format!("{UPSTREAM}sni = \"\"\n")), "ok");
    }

    /// The policy file's name is in robots.txt's first comment: a line
    /// break in it stays in that comment.
    #[test]
    fn the_file_name_cannot_add_a_line_to_robots_txt() {
        let loaded = load(UPSTREAM, "/etc/p\nDisallow: x.toml").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            loaded.policy.robots_txt(),
            "# robots.txt generated by crawlgate from p\\nDisallow: x.toml; edit the policy, not this file.\n"
        );
    }
}
