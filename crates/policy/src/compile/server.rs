//! `[server]`: the listeners, the admin endpoint, client limits and the
//! client address (`trusted_proxies`, `client_address_header`).

use std::net::SocketAddr;
use std::time::Duration;

use toml::Spanned;

use super::ctx::Ctx;
use crate::client::{AddressHeader, ClientAddressSettings};
use crate::diag::Warning;
use crate::raw::RawServer;
use crate::route::{OriginPaths, Upgrades};
use crate::settings::{AccessLogFormat, ServerSettings};
use crate::verification::Cidr;

/// Largest `server.max_connections`: each connection needs a file
/// descriptor, and no process limit goes much past a million.
pub const MAX_CONNECTIONS: usize = 1 << 20;

/// Concurrent connections on the admin listener (besides the few kept
/// for health probes). A separate cap, so that a saturated proxy port
/// cannot starve `/healthz` and `/metrics`.
pub const ADMIN_CONNECTIONS: usize = 64;

/// `[server]`; `legacy_proxies` is `[verification] trusted_proxies`, the
/// old place of `server.trusted_proxies`.
pub(super) fn compile_server(
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
    use crate::load;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load;

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
