//! Responses the proxy writes itself: robots.txt / agents.txt (with ETag,
//! 304 and HEAD), enforcement blocks, bad requests and upstream errors.

use bytes::Bytes;
use crawlgate_policy::verification::{Method, Verification};
use crawlgate_policy::BlockReason;
use http::header;
use pingora::http::ResponseHeader;
use pingora::proxy::Session;
use pingora::Result;
use sha2::{Digest, Sha256};

/// A file the proxy answers itself, rendered once per policy load.
pub struct StaticFile {
    /// Exact bytes served.
    pub body: Bytes,
    /// Strong ETag (quoted), derived from the bytes.
    pub etag: String,
    /// The 200 response header, built once per snapshot and cloned per
    /// request (building one costs an allocation per header).
    pub ok_header: ResponseHeader,
}

impl StaticFile {
    pub(crate) fn new(text: &str, cache_control: &str) -> pingora::Result<StaticFile> {
        StaticFile::typed(text, cache_control, "text/plain; charset=utf-8")
    }

    /// A file served with `content_type` (tdmrep.json, the RSL document).
    pub(crate) fn typed(text: &str, cache_control: &str, content_type: &str) -> pingora::Result<StaticFile> {
        let digest = Sha256::digest(text.as_bytes());
        let etag = format!("\"{}\"", hex::encode(&digest[..12]));
        let body = Bytes::copy_from_slice(text.as_bytes());
        let mut ok_header = static_header(&etag, cache_control, body.len())?;
        ok_header.insert_header(header::CONTENT_TYPE, content_type)?;
        Ok(StaticFile { body, etag, ok_header })
    }
}

/// Writes a complete response. HEAD requests get the headers (with the
/// `Content-Length` the body would have) and no body.
pub async fn write(
    session: &mut Session,
    status: u16,
    headers: &[(http::HeaderName, &str)],
    body: Bytes,
) -> Result<()> {
    let mut resp = ResponseHeader::build(status, Some(headers.len() + 2))?;
    for (name, value) in headers {
        resp.insert_header(name.clone(), *value)?;
    }
    resp.insert_header(header::CONTENT_LENGTH, body.len().to_string())?;
    let head = session.req_header().method == http::Method::HEAD;
    let no_body = head || body.is_empty() || status == 304;
    session.write_response_header(Box::new(resp), no_body).await?;
    if !no_body {
        session.write_response_body(Some(body), true).await?;
    }
    Ok(())
}

/// A whole response the proxy writes itself, kept as a value: written to
/// a session, or turned into the bytes sent in place of a held response
/// (`crate::conn::send_instead`).
pub struct Reply {
    /// The status.
    pub status: u16,
    /// Its fields (`Content-Length` is added).
    pub headers: Vec<(http::HeaderName, String)>,
    /// Its body.
    pub body: Bytes,
}

impl Reply {
    /// A short plain-text response that is never cached (as [`plain`]).
    pub fn plain(status: u16, text: String) -> Reply {
        let headers = vec![
            (header::CONTENT_TYPE, "text/plain; charset=utf-8".to_string()),
            (header::CACHE_CONTROL, "no-store".to_string()),
        ];
        Reply { status, headers, body: Bytes::from(text) }
    }

    /// Writes it to `session` (see [`write`]).
    pub async fn write(self, session: &mut Session) -> Result<()> {
        let headers: Vec<(http::HeaderName, &str)> =
            self.headers.iter().map(|(n, v)| (n.clone(), v.as_str())).collect();
        write(session, self.status, &headers, self.body).await
    }

    /// The response as HTTP/1.1 bytes, closing the connection after it
    /// (it goes out where another response was expected). A field whose
    /// value could not be sent is left out.
    pub fn wire(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(256 + self.body.len());
        let Ok(mut resp) = ResponseHeader::build(self.status, Some(self.headers.len() + 3)) else {
            out.extend_from_slice(
                b"HTTP/1.1 500 Internal Server Error\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
            );
            return out;
        };
        for (name, value) in &self.headers {
            let _ = resp.append_header(name.clone(), value.as_str());
        }
        let _ = resp.insert_header(header::DATE, pingora::protocols::http::date::get_cached_date());
        let _ = resp.insert_header(header::CONTENT_LENGTH, self.body.len().to_string());
        let _ = resp.insert_header(header::CONNECTION, "close");
        let reason = resp.status.canonical_reason().unwrap_or("");
        out.extend_from_slice(format!("HTTP/1.1 {} {reason}\r\n", self.status).as_bytes());
        resp.header_to_h1_wire(&mut out);
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&self.body);
        out
    }
}

/// Whether an `If-None-Match` header value matches `etag` (weak comparison,
/// RFC 9110 13.1.2).
pub fn etag_matches(if_none_match: &[u8], etag: &str) -> bool {
    let strip = |t: &str| t.trim().trim_start_matches("W/").to_owned();
    let ours = strip(etag);
    String::from_utf8_lossy(if_none_match)
        .split(',')
        .any(|candidate| candidate.trim() == "*" || strip(candidate) == ours)
}

/// Answers `/robots.txt` or `/agents.txt` from the snapshot: 200, 304 on a
/// matching `If-None-Match`, 405 for methods other than GET and HEAD.
/// Returns the status written.
pub async fn static_file(session: &mut Session, file: &StaticFile, cache_control: &str) -> Result<u16> {
    let method = &session.req_header().method;
    if method != http::Method::GET && method != http::Method::HEAD {
        let body = Bytes::from_static(b"405 Method Not Allowed: use GET or HEAD\n");
        write(session, 405, &[(header::ALLOW, "GET, HEAD"), (header::CONTENT_TYPE, "text/plain; charset=utf-8")], body)
            .await?;
        return Ok(405);
    }
    let not_modified = session
        .req_header()
        .headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .any(|v| etag_matches(v.as_bytes(), &file.etag));
    if not_modified {
        let mut resp = ResponseHeader::build(304, Some(2))?;
        resp.insert_header(header::ETAG, &file.etag)?;
        resp.insert_header(header::CACHE_CONTROL, cache_control)?;
        session.write_response_header(Box::new(resp), true).await?;
        return Ok(304);
    }
    let head = session.req_header().method == http::Method::HEAD;
    session.write_response_header(Box::new(file.ok_header.clone()), head).await?;
    if !head {
        session.write_response_body(Some(file.body.clone()), true).await?;
    }
    Ok(200)
}

/// The 200 header of a static file (see [`static_file`]).
pub fn static_header(etag: &str, cache_control: &str, len: usize) -> Result<ResponseHeader> {
    let mut resp = ResponseHeader::build(200, Some(4))?;
    resp.insert_header(header::CONTENT_TYPE, "text/plain; charset=utf-8")?;
    resp.insert_header(header::ETAG, etag)?;
    resp.insert_header(header::CACHE_CONTROL, cache_control)?;
    resp.insert_header(header::CONTENT_LENGTH, len.to_string())?;
    Ok(resp)
}

/// A short plain-text response that is never cached.
pub async fn plain(session: &mut Session, status: u16, text: String) -> Result<()> {
    write(
        session,
        status,
        &[(header::CONTENT_TYPE, "text/plain; charset=utf-8"), (header::CACHE_CONTROL, "no-store")],
        Bytes::from(text),
    )
    .await
}

/// The Web Bot Auth challenge: 403 with `Accept-Signature` (RFC 9421
/// section 5.1), asking the agent to sign its request.
pub async fn challenge(session: &mut Session, accept_signature: &str, text: String) -> Result<()> {
    write(
        session,
        403,
        &[
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
            (http::HeaderName::from_static("accept-signature"), accept_signature),
        ],
        Bytes::from(text),
    )
    .await
}

/// The body of a Web Bot Auth challenge.
pub fn challenge_body(token: &str, accept_signature: &str) -> String {
    format!(
        "403 Forbidden\n\nThis request claims to be {token}, and this site asks {token} to prove it with a Web Bot Auth signature (HTTP Message Signatures, RFC 9421): sign the request as Accept-Signature asks and send it again.\nAccept-Signature: {accept_signature}\n"
    )
}

/// The body of an enforcement block: states the true reason, a robots.txt
/// rule or a claimed identity that failed verification, and points to
/// /robots.txt.
pub fn block_body(status: u16, reason: BlockReason, token: &str, path: &str, verification: Verification) -> String {
    let title = http::StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason()).unwrap_or("Blocked");
    let why = match (reason, verification) {
        (BlockReason::Spoofed, Verification::Spoofed(method)) => format!(
            "This request claims to be {token}, but {} (verification: spoofed by {method}).",
            spoof_evidence(method, token)
        ),
        (BlockReason::Spoofed, _) => format!("This request claims to be {token}, and the claim is proven false."),
        (BlockReason::Unverified, _) => format!(
            "This request claims to be {token}, and the claim could not be verified (verification: unverified); the site blocks unverified claims."
        ),
        _ => format!("This site's robots.txt disallows {path} for {token}, and the site enforces it."),
    };
    format!("{status} {title}\n\n{why}\nSee /robots.txt for what {token} may fetch.\n")
}

/// What a failed verification method showed, in words.
fn spoof_evidence(method: Method, token: &str) -> String {
    match method {
        Method::Ip => format!("its address is not one of {token}'s"),
        Method::Rdns => format!("its address's reverse DNS name does not confirm {token}"),
        Method::Signature => format!("its Web Bot Auth signature does not prove {token}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_on_the_wire_is_whole_and_closes() {
        let reply = Reply {
            status: 402,
            headers: vec![(http::HeaderName::from_static("payment-required"), "e30=".into())],
            body: Bytes::from_static(b"pay\n"),
        };
        let wire = String::from_utf8(reply.wire()).unwrap_or_else(|e| panic!("{e}"));
        assert!(wire.starts_with("HTTP/1.1 402 Payment Required\r\npayment-required: e30=\r\nDate: "), "{wire}");
        assert!(wire.ends_with(" GMT\r\nContent-Length: 4\r\nConnection: close\r\n\r\npay\n"), "{wire}");
        let bad = Reply { status: 502, headers: vec![(header::LINK, "a\r\nb".into())], body: Bytes::new() };
        assert!(!String::from_utf8_lossy(&bad.wire()).to_ascii_lowercase().contains("link"));
    }

    #[test]
    fn etag_comparison_is_weak_and_handles_lists() {
        assert!(etag_matches(b"\"abc\"", "\"abc\""));
        assert!(etag_matches(b"W/\"abc\"", "\"abc\""));
        assert!(etag_matches(b"\"x\", \"abc\"", "\"abc\""));
        assert!(etag_matches(b"*", "\"abc\""));
        assert!(!etag_matches(b"\"abd\"", "\"abc\""));
        assert!(!etag_matches(b"", "\"abc\""));
    }

    #[test]
    fn block_body_names_token_and_robots_txt() {
        assert_eq!(
            block_body(403, BlockReason::Robots, "GPTBot", "/private/x", Verification::NotApplicable),
            "403 Forbidden\n\nThis site's robots.txt disallows /private/x for GPTBot, and the site enforces it.\nSee /robots.txt for what GPTBot may fetch.\n"
        );
        assert_eq!(
            block_body(403, BlockReason::Spoofed, "bingbot", "/search", Verification::Spoofed(Method::Ip)),
            "403 Forbidden\n\nThis request claims to be bingbot, but its address is not one of bingbot's (verification: spoofed by ip).\nSee /robots.txt for what bingbot may fetch.\n"
        );
        assert_eq!(
            block_body(429, BlockReason::Unverified, "GPTBot", "/a", Verification::Unverified),
            "429 Too Many Requests\n\nThis request claims to be GPTBot, and the claim could not be verified (verification: unverified); the site blocks unverified claims.\nSee /robots.txt for what GPTBot may fetch.\n"
        );
    }
}
