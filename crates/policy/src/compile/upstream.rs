//! `[upstream]`: the origin servers and how the proxy connects to them.

use std::net::SocketAddr;
use std::time::Duration;

use toml::Spanned;

use super::ctx::Ctx;
use super::hosts::{idn_hint, valid_host, valid_host_port};
use crate::raw::RawUpstream;
use crate::settings::{OriginHeaderMode, ServerSettings, UpstreamSettings};
use crate::validate;

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

/// `[upstream]`; `server` is the compiled `[server]`, whose listeners an
/// upstream server must not name.
pub(super) fn compile_upstream(
    cx: &mut Ctx<'_>,
    raw: Option<&Spanned<RawUpstream>>,
    server: &ServerSettings,
) -> UpstreamSettings {
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
