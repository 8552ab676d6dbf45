//! What the request phase reads of a request and its connection (client
//! address, `Host`, `User-Agent`, `Upgrade`, the wire target), and the
//! small answers the hooks share (compression, error classes, the access
//! log's protocol name).

use super::*;

/// The client of this request: the socket peer (or the PROXY protocol
/// source), or the address a trusted proxy forwarded in the header the
/// policy names (`policy::client::client_address`).
pub(super) fn client_addr(session: &Session, snap: &Snapshot) -> Option<ClientAddr> {
    let peer = session.client_addr()?.as_inet()?.ip();
    let settings = &snap.policy.settings().server.client_address;
    if !settings.is_trusted_proxy(peer) {
        return Some(client_address(peer, &[], settings));
    }
    Some(client_address(peer, &address_lines(session.req_header(), settings), settings))
}

/// The client's scheme: the connection's, or a trusted proxy's statement
/// (`policy::scheme::request_scheme`).
pub(super) fn request_scheme(session: &Session, snap: &Snapshot) -> crawlgate_policy::scheme::Scheme {
    let tls = session.digest().is_some_and(|d| d.ssl_digest.is_some());
    let peer = session.client_addr().and_then(|a| a.as_inet()).map(|a| a.ip());
    let settings = &snap.policy.settings().server.client_address;
    let field = crawlgate_policy::scheme::scheme_field(settings);
    // Only the last line counts (the trusted peer's own): no list per request.
    let last = session.req_header().headers.get_all(field).iter().next_back().map(|v| v.as_bytes());
    crawlgate_policy::scheme::request_scheme(peer, tls, last.as_slice(), settings)
}

/// The field lines of the address header `settings` names (none when the
/// PROXY protocol carries the address).
pub(super) fn address_lines<'r>(req: &'r RequestHeader, settings: &ClientAddressSettings) -> Vec<&'r [u8]> {
    match settings.header.field() {
        Some(name) => req.headers.get_all(name).iter().map(|v| v.as_bytes()).collect(),
        None => Vec::new(),
    }
}

/// The request's `Host` (or HTTP/2 `:authority`), for limits per site.
pub(super) fn request_host(req: &RequestHeader) -> Option<&str> {
    req.headers.get(header::HOST).and_then(|h| h.to_str().ok()).or_else(|| req.uri.authority().map(|a| a.as_str()))
}

/// The request's `Upgrade` field lines.
pub(super) fn upgrade_field(req: &RequestHeader) -> UpgradeField<'_> {
    let mut lines = req.headers.get_all(header::UPGRADE).iter();
    match (lines.next(), lines.next()) {
        (None, _) => UpgradeField::Absent,
        (Some(v), None) => UpgradeField::One(v.as_bytes()),
        (Some(_), Some(_)) => UpgradeField::Many,
    }
}

/// The request's `User-Agent` field lines, decoded when there is one
/// (borrowed when it is UTF-8, as it nearly always is: `from_utf8` checks
/// ASCII a word at a time, `from_utf8_lossy` a character at a time).
pub(super) fn user_agent(req: &RequestHeader) -> (usize, Cow<'_, str>) {
    let mut lines = req.headers.get_all(header::USER_AGENT).iter();
    match (lines.next(), lines.next()) {
        (None, _) => (0, Cow::Borrowed("")),
        (Some(v), None) => match std::str::from_utf8(v.as_bytes()) {
            Ok(text) => (1, Cow::Borrowed(text)),
            Err(_) => (1, String::from_utf8_lossy(v.as_bytes())),
        },
        (Some(_), Some(_)) => (2, Cow::Borrowed("")),
    }
}

/// The HTTP/1 request line's target when it contains a `#`, which Pingora
/// removed from the target it parsed (`RequestHeader::set_raw_path`).
/// `None` for the common case and for HTTP/2, whose `:path` reaches the
/// proxy already parsed.
pub(super) fn client_target_with_fragment(session: &Session) -> Option<Bytes> {
    let h1 = session.as_downstream().as_http1()?;
    let header = h1.get_headers_raw_bytes();
    let target = crawlgate_policy::canonical::request_line_target(&header)?;
    memchr::memchr(b'#', target)?;
    Some(header.slice_ref(target))
}

/// The violation event of a decision that robots.txt disallows.
pub(super) fn violation<'a>(decision: &Decision<'a>) -> Violation<'a> {
    Violation { agent: decision.crawler().unwrap_or(OTHER_AGENT), group: decision.group.map_or("", |g| g.name) }
}

/// Why a charged response that ended with `e` is void: a failure of the
/// origin (it stopped mid-body, its body could not be read) or of the
/// proxy (a body it could not convert), never of the client: a client that
/// goes away mid-body keeps its charge, with the bytes it was sent.
pub(super) fn void_reason(e: &Error) -> Option<String> {
    match e.esource() {
        ErrorSource::Downstream => None,
        ErrorSource::Upstream => Some(format!("origin: {}", e.etype().as_str())),
        ErrorSource::Internal | ErrorSource::Unset => Some(format!("proxy: {}", e.etype().as_str())),
    }
}

/// The access log's name of an HTTP version.
pub(super) fn protocol(version: http::Version) -> &'static str {
    match version {
        http::Version::HTTP_09 => "HTTP/0.9",
        http::Version::HTTP_10 => "HTTP/1.0",
        http::Version::HTTP_2 => "HTTP/2",
        http::Version::HTTP_3 => "HTTP/3",
        _ => "HTTP/1.1",
    }
}

/// Whether an error means no connection to the origin could be made.
pub(super) fn unreachable(etype: &ErrorType) -> bool {
    matches!(
        etype,
        ErrorType::ConnectTimedout
            | ErrorType::ConnectRefused
            | ErrorType::ConnectNoRoute
            | ErrorType::ConnectError
            | ErrorType::TLSHandshakeFailure
            | ErrorType::TLSHandshakeTimedout
            | ErrorType::InvalidCert
            | ErrorType::HandshakeError
            | ErrorType::SocketError
    )
}

/// gzip/br level for rewritten responses.
pub(super) const COMPRESSION_LEVEL: u32 = 5;

/// Whether the client's Accept-Encoding names a coding other than
/// `identity` (RFC 9110 section 12.5.3). Pingora's compression module
/// compresses nothing for any other client, so it is not switched on for
/// one (it would still read the response's headers).
pub(super) fn accepts_coding(req: &RequestHeader) -> bool {
    req.headers.get_all(header::ACCEPT_ENCODING).iter().any(|v| {
        v.as_bytes().split(|b| *b == b',').any(|item| {
            let coding = item.split(|b| *b == b';').next().unwrap_or_default().trim_ascii();
            !coding.is_empty() && !coding.eq_ignore_ascii_case(b"identity")
        })
    })
}

/// Switches response compression on or off for this response. A policy
/// that rewrites no HTML, or a client that accepts no coding, never turned
/// it on (`early_request_filter`).
pub(super) fn compress(session: &mut Session, snap: &Snapshot, on: bool) {
    if !snap.rewrites_bodies || !accepts_coding(session.req_header()) {
        return;
    }
    if let Some(c) = session.downstream_modules_ctx.get_mut::<ResponseCompression>() {
        if c.is_header_phase() {
            c.adjust_level(if on { COMPRESSION_LEVEL } else { 0 });
        }
    }
}
