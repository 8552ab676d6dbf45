//! `[verification]`, the hosts signatures are bound to, and each group's
//! `verify`, `on_spoofed` and `on_unverified`.

use std::net::SocketAddr;
use std::time::Duration;

use toml::Spanned;

use super::ctx::Ctx;
use super::hosts::validate_authority;
use crate::catalog;
use crate::diag::Warning;
use crate::policy::Group;
use crate::raw::{RawDns, RawGroup, RawKey, RawSignatures, RawVerification};
use crate::verification::{
    validate_ed25519_jwk, Method, OnFailure, PinnedJwk, VerificationSettings, VerifyMode, REQUIRABLE_COMPONENTS,
};

/// The hosts this site is known by when `verification.signatures.authorities`
/// is not written: `server.hosts`, else `upstream.sni` and
/// `robots_txt.origin_host` as written (a server address alone names the
/// origin, not the site).
pub(super) fn site_hosts(
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
pub(super) fn compile_verification(
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
pub(super) fn compile_verify(cx: &mut Ctx<'_>, v: Option<&Spanned<String>>) -> Option<(VerifyMode, usize)> {
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
pub(super) fn block_without_trusted_proxies(cx: &mut Ctx<'_>, raw: &[Spanned<RawGroup>]) {
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

/// warning[address-checks-behind-proxy]: some group is verified by its
/// client's address (an IP list or reverse DNS can prove one of its
/// tokens), `server.trusted_proxies` is empty, and the policy itself says a
/// proxy is in front: `server.client_address_header` is written (at it),
/// or an `[upstream]` server is a Kubernetes Service name (`NAME.NS.svc`,
/// `NAME.NS.svc.cluster.local`, with or without a port: the pod is reached
/// through a Service or an Ingress; at the `[verification]` header). The
/// client address is then the proxy's, so every real crawler's address
/// check fails (`spoofed(ip)`, `spoofed(rdns)`).
pub(super) fn address_checks_behind_proxy(
    cx: &mut Ctx<'_>,
    groups: &[Group],
    v: &VerificationSettings,
    address_header: Option<&Spanned<String>>,
    servers: &[Spanned<String>],
) {
    let by_address = groups.iter().any(|g| {
        let tokens = g.tokens.iter().filter(|t| *t != "*").map(String::as_str);
        v.methods_for(tokens, g.verify).iter().any(|m| matches!(m, Method::Ip | Method::Rdns))
    });
    if !v.enabled || !by_address {
        return;
    }
    const FIX: &str = "list the proxy's addresses in server.trusted_proxies (behind a Kubernetes Ingress, the \
                       pod network, e.g. \"10.0.0.0/8\"), or acknowledge this warning if clients connect directly";
    if let Some(h) = address_header {
        cx.warn(
            h,
            Warning::AddressChecksBehindProxy,
            format!(
                "server.client_address_header is set, so a proxy is in front, but server.trusted_proxies is empty: \
                 the header is never read and every request's address is the proxy's, so IP and reverse DNS \
                 verification find every real crawler spoofed; {FIX}"
            ),
        );
        return;
    }
    let service = servers.iter().find(|s| {
        let host = s.get_ref().rsplit_once(':').map_or(s.get_ref().as_str(), |(h, _)| h).trim_end_matches('.');
        host.ends_with(".svc") || host.ends_with(".svc.cluster.local")
    });
    if let Some(s) = service {
        let at = table_header(cx.loc.source(), "verification").unwrap_or(s.span().start);
        cx.warn_at(
            at,
            Warning::AddressChecksBehindProxy,
            format!(
                "[verification] checks client addresses (IP lists, reverse DNS) while server.trusted_proxies is \
                 empty, and upstream `{}` is a Kubernetes Service: behind an Ingress or a load balancer every \
                 request comes from its address, so every real crawler is found spoofed; {FIX}",
                s.get_ref()
            ),
        );
    }
}

/// The offset of the first `[name]` or `[name.` table header in `source`.
fn table_header(source: &str, name: &str) -> Option<usize> {
    let mut offset = 0;
    for line in source.split_inclusive('\n') {
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix('[').and_then(|r| r.trim_start().strip_prefix(name)) {
            if rest.starts_with([']', '.']) {
                return Some(offset + line.len() - t.len());
            }
        }
        offset += line.len();
    }
    None
}

/// The group's `on_spoofed` or `on_unverified`.
/// `challenge` only for `on_unverified`: a spoofed claim was already
/// signed, or proven false another way.
pub(super) fn compile_on_failure(
    cx: &mut Ctx<'_>,
    key: &str,
    v: Option<&Spanned<String>>,
    default: OnFailure,
) -> OnFailure {
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
pub(super) fn resolve_verify(cx: &mut Ctx<'_>, groups: &mut [Group], v: &VerificationSettings) {
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
        // draft-ietf-webbotauth-httpsig-protocol-01: a site that requires a
        // signature asks for one, 403 with Accept-Signature.
        if !g.on_unverified_written && g.verify == VerifyMode::Signature {
            g.on_unverified = OnFailure::Challenge;
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
mod tests {
    use super::*;
    use crate::load;

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
