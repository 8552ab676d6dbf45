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
use crate::diag::{parse_duration, Diagnostic, Diagnostics, Locator};
use crate::identify::TokenMatcher;
use crate::pattern::Pattern;
use crate::policy::{
    AccessLogFormat, Enforce, Group, HtmlMode, OriginHeaderMode, Policy, ServerSettings, Settings, TagEntry,
    UpstreamSettings,
};
use crate::raw::{
    RawAgentsTxt, RawGroup, RawPolicy, RawRobotsTag, RawRobotsTxt, RawServer, RawUpstream, RawVerification,
};
use crate::render::{self, RobotsTxtExtras};
use crate::robots_tag::TagRules;
use crate::ruleset::RuleSet;
use crate::validate;
use crate::verification::{Cidr, VerificationSettings};

/// Largest robots.txt we publish (RFC 9309: parsers must handle 500 KiB).
pub const MAX_ROBOTS_TXT: usize = 500 * 1024;

/// Largest `server.max_connections`: each connection needs a file
/// descriptor, and no process limit goes much past a million.
pub const MAX_CONNECTIONS: usize = 1 << 20;

/// A loaded policy and its warnings.
#[derive(Debug)]
pub struct Loaded {
    /// The compiled policy.
    pub policy: Policy,
    /// Warnings (the policy is valid).
    pub warnings: Vec<Diagnostic>,
}

struct Ctx<'a> {
    loc: Locator<'a>,
    errors: Vec<Diagnostic>,
    warnings: Vec<Diagnostic>,
}

impl Ctx<'_> {
    fn err<T>(&mut self, span: &Spanned<T>, msg: impl Into<String>) {
        let d = self.loc.at(span.span().start, msg);
        self.errors.push(d);
    }
    fn err_at(&mut self, offset: usize, msg: impl Into<String>) {
        let d = self.loc.at(offset, msg);
        self.errors.push(d);
    }
    fn warn<T>(&mut self, span: &Spanned<T>, msg: impl Into<String>) {
        let d = self.loc.at(span.span().start, format!("warning: {}", msg.into()));
        self.warnings.push(d);
    }
    fn duration(&mut self, key: &str, v: Option<&Spanned<String>>, default: Duration) -> Duration {
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
    fn positive_duration(&mut self, key: &str, v: &Option<Spanned<String>>, default: Duration) -> Duration {
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

fn valid_host_port(s: &str) -> bool {
    match s.rsplit_once(':') {
        Some((host, port)) => !host.is_empty() && !host.contains('/') && port.parse::<u16>().is_ok_and(|p| p > 0),
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
            let msg = e.message().trim().to_string();
            return Err(Diagnostics(vec![cx.loc.at(offset, msg)]));
        }
    };
    let RawPolicy { server, upstream, robots_txt, group, robots_tag, agents_txt, verification } = raw;
    let server = compile_server(&mut cx, server.as_ref());
    let upstream = compile_upstream(&mut cx, upstream.as_ref(), &server);
    let (cache_max_age, extras) = compile_robots_txt(&mut cx, robots_txt.as_ref());
    let groups = compile_groups(&mut cx, &group);
    let tags = compile_tags(&mut cx, &robots_tag);
    let (agents_rules, agents_txt) = compile_agents_txt(&mut cx, agents_txt.as_ref());
    let verification = compile_verification(&mut cx, verification.as_ref());

    // Identification tokens and the `*` group.
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
    let policy = Policy {
        settings: Settings { server, upstream, cache_max_age, verification },
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
    };
    Ok(Loaded { policy, warnings: cx.warnings })
}

fn compile_server(cx: &mut Ctx<'_>, raw: Option<&Spanned<RawServer>>) -> ServerSettings {
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
        access_log_format: AccessLogFormat::Logfmt,
        ready_requires_upstream: false,
    };
    let Some(raw) = raw else { return s };
    let RawServer {
        listen,
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
        access_log_format,
        ready_requires_upstream,
    } = raw.get_ref();
    s.proxy_protocol = proxy_protocol.unwrap_or(false);
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
    if s.proxy_protocol && !s.tls_listen.is_empty() {
        cx.err(
            raw,
            "server.proxy_protocol applies to the plain listeners only: the PROXY header comes before TLS, so terminate TLS at the balancer or drop tls_listen",
        );
    }
    s
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
                    cx.err(s, format!("upstream.servers: `{}` is not host:port", s.get_ref()));
                }
            }
        }
    }
    u.tls = tls.unwrap_or(false);
    u.verify_cert = verify_cert.unwrap_or(true);
    u.sni = match sni {
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

fn compile_robots_txt(cx: &mut Ctx<'_>, raw: Option<&Spanned<RawRobotsTxt>>) -> (Duration, RobotsTxtExtras) {
    let mut extras = RobotsTxtExtras::default();
    let default_age = Duration::from_secs(3600);
    let Some(raw) = raw else { return (default_age, extras) };
    let RawRobotsTxt { sitemaps, cache_max_age, content_signal, acap } = raw.get_ref();
    for s in sitemaps.iter().flatten() {
        match validate::sitemap(s.get_ref()) {
            Ok(()) => extras.sitemaps.push(s.get_ref().clone()),
            Err(e) => cx.err(s, e),
        }
    }
    let age = cx.duration("robots_txt.cache_max_age", cache_max_age.as_ref(), default_age);
    if let Some(cs) = content_signal {
        match validate::content_signal(cs.get_ref()) {
            Ok(v) => extras.content_signal = Some(v),
            Err(e) => cx.err(cs, e),
        }
    }
    extras.acap = acap.unwrap_or(false);
    (age, extras)
}

/// Compiles the `[[group]]` tables in file order. A group whose every
/// category token is named explicitly in another group is checked but left
/// out (with a warning).
fn compile_groups(cx: &mut Ctx<'_>, raw: &[Spanned<RawGroup>]) -> Vec<Group> {
    let explicit = explicit_tokens(raw);
    // token (lowercase) -> offset of its first group
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut groups = Vec::new();
    for g in raw {
        if let Some(group) = compile_group(cx, g, &explicit, &mut seen) {
            groups.push(group);
        }
    }
    groups
}

/// Every token (lower-cased, `*` left out) named in some group's
/// `user_agents`. An explicit name wins over a category's expansion
/// wherever the two groups are in the file: `user_agents = ["GPTBot"]` next
/// to `categories = ["ai-training"]` is the natural way to treat one crawler
/// of a category differently, so the category group just leaves that token
/// out instead of reporting a duplicate.
fn explicit_tokens(raw: &[Spanned<RawGroup>]) -> HashSet<String> {
    raw.iter()
        .flat_map(|g| g.get_ref().user_agents.iter().flatten())
        .map(|t| t.get_ref().to_ascii_lowercase())
        .filter(|t| t != "*")
        .collect()
}

/// Compiles one group, reporting its errors and warnings in the order of
/// its keys' checks; `None` when the group is left out because category
/// overrides emptied it. `seen` maps each token (lower-cased) to the offset
/// of the first group that took it.
fn compile_group(
    cx: &mut Ctx<'_>,
    g: &Spanned<RawGroup>,
    explicit: &HashSet<String>,
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
    } = g.get_ref();
    let mut tokens = GroupTokens::default();
    add_user_agents(cx, seen, &mut tokens, user_agents.as_deref().unwrap_or_default());
    let overridden = expand_categories(cx, seen, explicit, &mut tokens, categories.as_deref().unwrap_or_default());
    let GroupTokens { tokens, in_group: _ } = tokens;
    if user_agents.as_ref().is_none_or(Vec::is_empty) && categories.as_ref().is_none_or(Vec::is_empty) {
        cx.err(g, "group: needs user_agents or categories");
    }
    // Every token of the categories is named explicitly elsewhere: a
    // group with no User-agent line cannot be published (its rules
    // would join the group above it in robots.txt).
    let empty_after_overrides = tokens.is_empty() && overridden > 0;
    if empty_after_overrides {
        cx.warn(g, "group: every token of its categories is named in user_agents of another group, so this group is empty and left out of robots.txt");
    }
    let (rules_src, compiled) =
        compile_rules(cx, allow.as_deref().unwrap_or_default(), disallow.as_deref().unwrap_or_default());
    let crawl_delay = compile_crawl_delay(cx, crawl_delay.as_ref());
    let (cu, cu_set) = compile_content_usage(cx, content_usage.as_deref().unwrap_or_default());
    let is_star = tokens.iter().any(|t| t == "*");
    let ad = compile_app_directives(cx, app_directives.as_deref().unwrap_or_default(), is_star);
    let enforce = compile_enforce(cx, enforce.as_ref(), is_star, &tokens);
    let block_status = compile_block_status(cx, block_status.as_ref());
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
        app_directives: ad,
        enforce,
        block_status,
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
            Ok(Some(w)) => cx.warn(ua, w),
            Err(e) => {
                cx.err(ua, e);
                continue;
            }
        }
        if tokens.in_group.contains(&t.to_ascii_lowercase()) {
            cx.warn(ua, format!("group.user_agents: `{t}` is listed twice in this group (tokens are case-insensitive); the repeat is ignored"));
            continue;
        }
        tokens.add(cx, seen, t, ua.span().start);
    }
}

/// Expands the group's `categories` into catalog tokens. A token named
/// explicitly in some group's `user_agents` is left out (see
/// [`explicit_tokens`]); a token another group already has is reported once
/// per category and earlier group. Returns how many tokens were left out for
/// explicit names.
fn expand_categories(
    cx: &mut Ctx<'_>,
    seen: &mut HashMap<String, usize>,
    explicit: &HashSet<String>,
    tokens: &mut GroupTokens,
    categories: &[Spanned<String>],
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
        for t in list {
            let lower = t.to_ascii_lowercase();
            if tokens.in_group.contains(&lower) {
                continue;
            }
            if explicit.contains(&lower) {
                overridden += 1;
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
                    cx.warn(c, w);
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
                    cx.warn(a, w);
                }
                ad.push((v.path, v.value));
            }
            Err(e) => cx.err(a, e),
        }
    }
    ad
}

/// The group's `enforce` mode (`off` when absent). `block` warns when it
/// cannot apply: on the `*` group (unidentified requests are never
/// blocked) and for robots.txt-only tokens, which no User-Agent header
/// carries (one warning per group).
fn compile_enforce(cx: &mut Ctx<'_>, enforce: Option<&Spanned<String>>, is_star: bool, tokens: &[String]) -> Enforce {
    match enforce {
        None => Enforce::Off,
        Some(e) => match e.get_ref().as_str() {
            "off" => Enforce::Off,
            "log" => Enforce::Log,
            "block" => {
                if is_star {
                    cx.warn(e, "group.enforce: `block` on the `*` group only blocks identified crawlers; requests naming no policy token are logged, never blocked");
                }
                // One warning per group (a category can bring several).
                let robots_only: Vec<String> =
                    tokens.iter().filter(|t| catalog::is_robots_only(t)).map(|t| format!("`{t}`")).collect();
                match robots_only.as_slice() {
                    [] => {}
                    [one] => cx.warn(e, format!("group.enforce: {one} never appears in a User-Agent header (a robots.txt-only token): robots.txt publishes it, but `block` cannot apply to it")),
                    many => cx.warn(e, format!("group.enforce: {} never appear in a User-Agent header (robots.txt-only tokens): robots.txt publishes them, but `block` cannot apply to them", many.join(", "))),
                }
                Enforce::Block
            }
            other => {
                cx.err(e, format!("group.enforce must be off, log or block, found `{other}`"));
                Enforce::Off
            }
        },
    }
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
                cx.err(&rule.action, format!("agents_txt.rules.action must be allow or disallow, found `{other}`"));
                continue;
            }
        };
        let path = rule.path.get_ref();
        if !path.starts_with('/') || path.contains(char::is_whitespace) {
            cx.err(
                &rule.path,
                format!(
                    "agents_txt.rules.path must start with `/` and contain no whitespace (write %20), found `{path}`"
                ),
            );
            continue;
        }
        let params = rule.params.iter().flatten().map(|(k, v)| (k.clone(), v.get_ref().clone())).collect();
        let candidate = AgentsRule { path: rule.path.get_ref().clone(), allow, params };
        // Check each rule alone so the error points at the rule.
        match agents_txt::render(&[], std::slice::from_ref(&candidate)) {
            Ok(_) => compiled.push(candidate),
            Err(e) => cx.err(r, format!("agents_txt.rules: this rule would make agents.txt fail its verifier: {e}")),
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

fn compile_verification(cx: &mut Ctx<'_>, raw: Option<&Spanned<RawVerification>>) -> VerificationSettings {
    let mut v = VerificationSettings::default();
    let Some(raw) = raw else { return v };
    v.enabled = true;
    let RawVerification { trusted_proxies } = raw.get_ref();
    for p in trusted_proxies.iter().flatten() {
        match p.get_ref().parse::<Cidr>() {
            Ok(c) => v.trusted_proxies.push(c),
            Err(e) => {
                cx.err(p, format!("verification.trusted_proxies: {e} (e.g. 10.0.0.0/8, 192.0.2.7 or 2001:db8::/32)"))
            }
        }
    }
    v
}
