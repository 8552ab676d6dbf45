//! Host and authority syntax shared by the tables that name a host
//! (`upstream`, `robots_txt.origin_host`, `server.hosts`, the signature
//! authorities and the `[limits]` sites).

/// Whether `s` is a host: an IPv6 address in brackets, or dot-separated
/// labels of letters, digits, `-` and `_` (an IPv4 address is one; a
/// final dot is allowed). Such a value is written as it is into a `Host`
/// header, a TLS server name, a URL of the served robots.txt or the
/// metrics, where a control character, a space, a `#` or a stray `:`
/// would break the line or the URL.
pub(super) fn valid_host(s: &str) -> bool {
    if let Some(v6) = s.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
        return v6.parse::<std::net::Ipv6Addr>().is_ok();
    }
    let name = s.strip_suffix('.').unwrap_or(s);
    !name.is_empty()
        && name.split('.').all(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b)))
}

/// Whether `s` is a host (see [`valid_host`]) with an optional port.
pub(super) fn valid_host_maybe_port(s: &str) -> bool {
    valid_host(s) || valid_host_port(s)
}

/// What to add to an error about host `s`: how to write a non-ASCII
/// (internationalized) host, which a `Host` header or a TLS server name
/// carries only in its ASCII form (RFC 5890 A-labels).
pub(super) fn idn_hint(s: &str) -> &'static str {
    if s.is_ascii() {
        ""
    } else {
        " (write an internationalized host in its ASCII form, xn--...)"
    }
}

/// Whether `s` is `host:port` (see [`valid_host`]) with a port from 1.
pub(super) fn valid_host_port(s: &str) -> bool {
    match s.rsplit_once(':') {
        Some((host, port)) => valid_host(host) && port.parse::<u16>().is_ok_and(|p| p > 0),
        None => false,
    }
}

/// A `host` or `host:port` (an IPv6 host in brackets), lower-cased.
pub(super) fn validate_authority(a: &str) -> Result<String, String> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load;

    const UPSTREAM: &str = "[upstream]\nservers = [\"127.0.0.1:8000\"]\n";

    fn errors(src: &str) -> String {
        match load(src, "p.toml") {
            Ok(_) => String::from("ok"),
            Err(e) => e.to_string(),
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
}
