//! The scheme the client used (`http` or `https`), told to the origin in
//! `X-Forwarded-Proto` and used for the absolute URLs crawlgate writes
//! (Markdown's `url:` and links).
//!
//! Behind a front server that terminates TLS (nginx, a cloud balancer),
//! crawlgate's own connection is plain HTTP while the client's was HTTPS;
//! only the front server knows. So a trusted proxy's word is kept, in the
//! same header family the policy reads the client address from
//! (`server.client_address_header`): `Forwarded` `proto=` (RFC 7239
//! section 5.4) when it names `forwarded`, else the de facto
//! `X-Forwarded-Proto`. From anyone else the connection's own scheme is
//! the answer, so a client cannot choose it. A trusted proxy must
//! therefore write (overwrite) the field itself: nginx passes a client's
//! `X-Forwarded-Proto` through unless told `proxy_set_header
//! X-Forwarded-Proto $scheme;`.

use crate::client::{AddressHeader, ClientAddressSettings};
use std::net::IpAddr;

/// `http` or `https`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// Plain HTTP.
    Http,
    /// HTTP over TLS.
    Https,
}

impl Scheme {
    /// The scheme as URLs and `X-Forwarded-Proto` write it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }

    /// `http` or `https` in any case, with optional white space; anything
    /// else (`ws`, `https, http`, empty) is `None`.
    fn parse(value: &[u8]) -> Option<Scheme> {
        let value = value.trim_ascii();
        if value.eq_ignore_ascii_case(b"https") {
            Some(Scheme::Https)
        } else if value.eq_ignore_ascii_case(b"http") {
            Some(Scheme::Http)
        } else {
            None
        }
    }
}

/// The field a trusted peer states the scheme in (lowercase): `forwarded`
/// when the client address is read from `Forwarded`, else
/// `x-forwarded-proto` (with `X-Forwarded-For` and with the PROXY
/// protocol, whose header carries no scheme).
pub const fn scheme_field(settings: &ClientAddressSettings) -> &'static str {
    match settings.header {
        AddressHeader::Forwarded => "forwarded",
        AddressHeader::XForwardedFor | AddressHeader::ProxyProtocol => "x-forwarded-proto",
    }
}

/// The client's scheme for a request from `peer` that came in over TLS
/// (`tls`) or not, with the field lines (in order) of [`scheme_field`]:
/// a trusted peer's statement when it makes one, else the connection's.
/// Of several values (`https, http` or two lines) the last is read: the
/// one the trusted peer itself wrote, nearest to crawlgate (a front
/// server that appends would otherwise let its client choose the first).
pub fn request_scheme(peer: Option<IpAddr>, tls: bool, lines: &[&[u8]], settings: &ClientAddressSettings) -> Scheme {
    let own = if tls { Scheme::Https } else { Scheme::Http };
    if !peer.is_some_and(|p| settings.is_trusted_proxy(crate::client::unmap(p))) {
        return own;
    }
    let stated = match settings.header {
        AddressHeader::Forwarded => last_forwarded_proto(lines),
        AddressHeader::XForwardedFor | AddressHeader::ProxyProtocol => {
            lines.last().and_then(|l| l.split(|b| *b == b',').next_back()).and_then(Scheme::parse)
        }
    };
    stated.unwrap_or(own)
}

/// The `proto=` of the last element of `Forwarded` (RFC 7239 section 4;
/// the value may be quoted), `None` when that element has none.
fn last_forwarded_proto(lines: &[&[u8]]) -> Option<Scheme> {
    let element = lines.last()?.split(|b| *b == b',').next_back()?;
    element.split(|b| *b == b';').find_map(|pair| {
        let eq = pair.iter().position(|b| *b == b'=')?;
        let (key, value) = (&pair[..eq], &pair[eq + 1..]);
        if !key.trim_ascii().eq_ignore_ascii_case(b"proto") {
            return None;
        }
        let value = value.trim_ascii();
        let value = value.strip_prefix(b"\"").and_then(|v| v.strip_suffix(b"\"")).unwrap_or(value);
        Scheme::parse(value)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(trusted: &[&str], header: AddressHeader) -> ClientAddressSettings {
        ClientAddressSettings {
            trusted_proxies: trusted.iter().map(|t| t.parse().unwrap_or_else(|e| panic!("{e}"))).collect(),
            header,
        }
    }

    #[test]
    fn a_trusted_peer_states_the_scheme_anyone_else_gets_the_connections() {
        use AddressHeader::{Forwarded as Fwd, ProxyProtocol as Pp, XForwardedFor as Xff};
        use Scheme::{Http, Https};
        let trusted = ["127.0.0.1/32", "10.0.0.0/8"];
        #[rustfmt::skip]
        let cases: &[(&str, bool, &[&str], AddressHeader, Scheme)] = &[
            // Trusted, X-Forwarded-Proto.
            ("127.0.0.1", false, &["https"], Xff, Https),
            ("127.0.0.1", false, &["HTTPS"], Xff, Https),
            ("127.0.0.1", false, &[" https "], Xff, Https),
            ("10.1.2.3", false, &["https"], Xff, Https),
            ("127.0.0.1", true, &["http"], Xff, Http),
            ("127.0.0.1", false, &["http"], Xff, Http),
            ("127.0.0.1", false, &[], Xff, Http),
            ("127.0.0.1", true, &[], Xff, Https),
            // The last value: the trusted peer's own.
            ("127.0.0.1", false, &["http, https"], Xff, Https),
            ("127.0.0.1", false, &["https, http"], Xff, Http),
            ("127.0.0.1", false, &["http", "https"], Xff, Https),
            // Not a scheme: the connection's.
            ("127.0.0.1", false, &["ws"], Xff, Http),
            ("127.0.0.1", true, &["javascript"], Xff, Https),
            ("127.0.0.1", false, &[""], Xff, Http),
            ("127.0.0.1", false, &["https;x"], Xff, Http),
            ("127.0.0.1", false, &["https\u{0}"], Xff, Http),
            ("::ffff:127.0.0.1", false, &["https"], Xff, Https),
            ("127.0.0.1", false, &["https"], Pp, Https),
            // Forwarded: proto= of the last element.
            ("127.0.0.1", false, &["for=192.0.2.1;proto=https"], Fwd, Https),
            ("127.0.0.1", false, &["for=192.0.2.1;Proto=\"HTTPS\";by=x"], Fwd, Https),
            ("127.0.0.1", false, &["for=192.0.2.1;proto=https, for=10.0.0.2"], Fwd, Http),
            ("127.0.0.1", false, &["for=192.0.2.1;proto=http", "for=10.0.0.2;proto=https"], Fwd, Https),
            ("127.0.0.1", true, &["for=192.0.2.1"], Fwd, Https),
            ("127.0.0.1", false, &["proto=gopher"], Fwd, Http),
            // Untrusted (or no address): never read.
            ("192.0.2.9", false, &["https"], Xff, Http),
            ("192.0.2.9", true, &["http"], Xff, Https),
            ("192.0.2.9", false, &["for=1.2.3.4;proto=https"], Fwd, Http),
        ];
        for &(peer, tls, lines, header, want) in cases {
            let lines: Vec<&[u8]> = lines.iter().map(|l| l.as_bytes()).collect();
            let peer: IpAddr = peer.parse().unwrap_or_else(|e| panic!("{peer}: {e}"));
            let got = request_scheme(Some(peer), tls, &lines, &settings(&trusted, header));
            assert_eq!(got, want, "{peer} tls={tls} {lines:?} {header:?}");
        }
        let nobody = settings(&[], Xff);
        assert_eq!(
            request_scheme(Some("127.0.0.1".parse().unwrap_or_else(|e| panic!("{e}"))), false, &[b"https"], &nobody),
            Http
        );
        assert_eq!(request_scheme(None, false, &[b"https"], &settings(&trusted, Xff)), Http);
        assert_eq!(request_scheme(None, true, &[], &settings(&trusted, Xff)), Https);
    }

    #[test]
    fn the_field_follows_the_address_header() {
        assert_eq!(scheme_field(&settings(&[], AddressHeader::XForwardedFor)), "x-forwarded-proto");
        assert_eq!(scheme_field(&settings(&[], AddressHeader::ProxyProtocol)), "x-forwarded-proto");
        assert_eq!(scheme_field(&settings(&[], AddressHeader::Forwarded)), "forwarded");
        assert_eq!(Scheme::Https.as_str(), "https");
        assert_eq!(Scheme::Http.as_str(), "http");
    }
}
