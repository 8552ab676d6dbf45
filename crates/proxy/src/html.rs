//! Glue between the proxy and the body transforms of HTML responses:
//! decides whether a response is taken ([`Page::of`]), adjusts its headers
//! (no Content-Length or an exact one, chunked, weak ETag: [`begin`]),
//! decodes a compressed body in bounded pieces (`crate::decode`) and feeds
//! the body to the response's [`Transform`] (today the robots `<meta>`
//! rewriter of `crawlgate-html`: [`start`]).

use std::borrow::Cow;
use std::sync::{Arc, Mutex, RwLock};

use bytes::{Bytes, BytesMut};
use crawlgate_html::decode::{Decoder, Encoding};
use crawlgate_html::markdown::MarkdownConverter;
use crawlgate_html::{Config, RewritePlan, Rewriter};
use crawlgate_policy::{HtmlMode, HtmlPlan};
use http::header::{self, HeaderName};
use pingora::http::ResponseHeader;
use pingora::{Error, ErrorSource, ErrorType, Result};

use crawlgate_telemetry::events::rewrite;
use crawlgate_telemetry::metrics::{Metrics, Passthrough};

/// Memory lol_html may use per response before it bails out to
/// pass-through.
const MAX_MEMORY: usize = 4 << 20;

/// How many distinct HTML plans a snapshot keeps prepared. A policy has one
/// per combination of matching `[[robots_tag]]` entries that rewrite HTML;
/// past this (hardly possible) the rest are prepared per response.
const PLANS_LIMIT: usize = 64;

/// The rewrite plans of one policy snapshot: one [`RewritePlan`] per
/// [`HtmlPlan`] (what the policy wants for a URL), built on first use and
/// shared by every response after that (building one formats the metas
/// and the rule table).
#[derive(Default)]
pub struct RewritePlans(RwLock<Vec<(Arc<HtmlPlan>, RewritePlan)>>);

impl RewritePlans {
    /// The rewrite plan for `plan`. The policy memoises its plans, so the
    /// pointer comparison almost always decides; equal plans built apart
    /// share one too.
    pub fn get(&self, plan: &Arc<HtmlPlan>) -> RewritePlan {
        let same = |k: &Arc<HtmlPlan>| Arc::ptr_eq(k, plan) || **k == **plan;
        if let Ok(list) = self.0.read() {
            if let Some((_, p)) = list.iter().find(|(k, _)| same(k)) {
                return p.clone();
            }
        }
        let config = Config { mode: plan.mode, directives: plan.directives.clone(), max_memory: MAX_MEMORY };
        let built = RewritePlan::with_head(&config, &plan.head);
        if let Ok(mut list) = self.0.write() {
            if list.len() < PLANS_LIMIT && !list.iter().any(|(k, _)| same(k)) {
                list.push((plan.clone(), built.clone()));
            }
        }
        built
    }
}

/// The error type of a response failed while decoding its body, for
/// `fail_to_proxy` and the error log to tell it apart.
pub const DECODE_ABORTED: ErrorType = ErrorType::Custom("decompression aborted");

/// Headers carrying a digest of the body (RFC 9530, RFC 3230, RFC 1864):
/// dropped from a rewritten response, whose bytes they no longer describe.
static DIGEST_HEADERS: [HeaderName; 4] = [
    HeaderName::from_static("content-digest"),
    HeaderName::from_static("repr-digest"),
    HeaderName::from_static("digest"),
    HeaderName::from_static("content-md5"),
];

/// One response being rewritten.
pub struct HtmlStream {
    /// The transform and the decoder of a compressed body: `Send`, not
    /// `Sync`.
    inner: Mutex<Inner>,
    mode: &'static str,
    bailed: bool,
    /// The response is sent chunked (its length was not known).
    chunked: bool,
}

struct Inner {
    transform: Transform,
    decoder: Option<Decoder>,
}

/// The body length of a response framed by Content-Length alone.
fn content_length(resp: &ResponseHeader) -> Option<usize> {
    if resp.headers.contains_key(header::TRANSFER_ENCODING) {
        return None;
    }
    let mut values = resp.headers.get_all(header::CONTENT_LENGTH).iter();
    let value = values.next()?;
    if values.next().is_some() {
        return None;
    }
    std::str::from_utf8(value.as_bytes()).ok()?.trim().parse().ok()
}

/// Whether a response's Content-Type is HTML.
pub fn is_html(resp: &ResponseHeader) -> bool {
    resp.headers.get(header::CONTENT_TYPE).is_some_and(|v| html_content_type(&String::from_utf8_lossy(v.as_bytes())).0)
}

/// `(media type is HTML, charset label)` of a Content-Type value.
fn html_content_type(value: &str) -> (bool, Option<&str>) {
    let mut parts = value.split(';');
    let media = parts.next().unwrap_or("").trim();
    // XHTML is XML: lol_html parses it as HTML and the injected void
    // `<meta>` (and any inserted `<head>`) would break well-formedness, so
    // XHTML passes through untouched (the Robots-Tag header still applies).
    let is_html = media.eq_ignore_ascii_case("text/html");
    let charset = parts.find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim().eq_ignore_ascii_case("charset").then(|| v.trim().trim_matches('"'))
    });
    (is_html, charset)
}

/// The single coding of a response to decode before rewriting: `Ok(None)`
/// for an identity body, `Err(())` for codings this proxy does not decode
/// (unknown ones, several in a row, or several field lines).
fn content_coding(resp: &ResponseHeader) -> std::result::Result<Option<Encoding>, ()> {
    let mut values = resp.headers.get_all(header::CONTENT_ENCODING).iter();
    let Some(value) = values.next() else { return Ok(None) };
    if values.next().is_some() {
        return Err(());
    }
    if value.as_bytes().trim_ascii().eq_ignore_ascii_case(b"identity") {
        return Ok(None);
    }
    Encoding::from_header(value.as_bytes()).map(Some).ok_or(())
}

/// Whether a Vary field value lists `Accept-Encoding` (or is `*`).
fn varies_on_encoding(resp: &ResponseHeader) -> bool {
    resp.headers.get_all(header::VARY).iter().any(|v| {
        v.as_bytes().split(|b| *b == b',').any(|name| {
            let name = name.trim_ascii();
            name == b"*" || name.eq_ignore_ascii_case(b"accept-encoding")
        })
    })
}

/// What every body transform needs to know of a response it may take:
/// found by [`Page::of`].
pub struct Page<'r> {
    /// The Content-Type value (HTML).
    content_type: Cow<'r, str>,
    /// The one content coding to decode first, if any.
    pub encoding: Option<Encoding>,
}

impl<'r> Page<'r> {
    /// The page a body transform can take, or `None`: not 2xx (or a 204, or
    /// a 206 byte range), not HTML, or in a coding this proxy does not
    /// decode (counted and logged).
    pub fn of(resp: &'r ResponseHeader, metrics: &Metrics, path: &str) -> Option<Page<'r>> {
        // 206: a byte range of the origin's body is not a page to rewrite; it
        // passes through (the Robots-Tag header still applies).
        if !resp.status.is_success() || matches!(resp.status.as_u16(), 204 | 206) {
            return None;
        }
        let content_type =
            resp.headers.get(header::CONTENT_TYPE).map(|v| String::from_utf8_lossy(v.as_bytes())).unwrap_or_default();
        if !html_content_type(&content_type).0 {
            return None;
        }
        match content_coding(resp) {
            Ok(encoding) => Some(Page { content_type, encoding }),
            Err(()) => {
                metrics.html_passthrough(Passthrough::Encoding);
                let values: Vec<_> = resp
                    .headers
                    .get_all(header::CONTENT_ENCODING)
                    .iter()
                    .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                    .collect();
                tracing::info!(path, encoding = %values.join(", "), "HTML left unchanged: content encoding cannot be decoded");
                None
            }
        }
    }

    /// The Content-Type's charset label, if any.
    pub fn charset(&self) -> Option<&str> {
        html_content_type(&self.content_type).1
    }
}

/// A body transform of one response: bytes in, bytes out, chunk by chunk,
/// after [`HtmlStream`] has decoded the body. One variant per kind of
/// rewrite; [`HtmlStream`] and [`begin`] are shared by all of them.
pub enum Transform {
    /// The robots `<meta>` rewriter (`html = "inject" | "audit" |
    /// "enforce"`).
    Robots(Rewriter),
    /// The HTML to Markdown converter (`[markdown]`).
    Markdown(MarkdownConverter),
}

impl Transform {
    /// The output for `chunk`.
    fn write(&mut self, chunk: Bytes) -> Bytes {
        match self {
            Transform::Robots(rw) => rw.write_bytes(chunk),
            Transform::Markdown(md) => Bytes::from(md.write(&chunk)),
        }
    }

    /// End of input: the rest of the output.
    fn finish(&mut self) -> Bytes {
        match self {
            Transform::Robots(rw) => rw.finish(),
            Transform::Markdown(md) => Bytes::from(md.finish()),
        }
    }

    /// Counts and logs what the chunks so far gave (findings, a bail-out).
    /// `bailed` is set once a bail-out was reported.
    fn report(&mut self, mode: &'static str, metrics: &Metrics, path: &str, end_of_stream: bool, bailed: &mut bool) {
        match self {
            Transform::Robots(rw) => rewrite::report_robots(rw, mode, metrics, path, end_of_stream, bailed),
            Transform::Markdown(md) => rewrite::report_markdown(md, metrics, path, end_of_stream, bailed),
        }
    }
}

/// Adds `Vary: Accept-Encoding` unless the response varies on it already:
/// a transformed body is compressed for a client that asks (RFC 9110
/// section 12.5.5: every variant names the fields it was selected by).
pub fn vary_on_encoding(resp: &mut ResponseHeader) -> Result<()> {
    if !varies_on_encoding(resp) {
        resp.append_header(header::VARY, "Accept-Encoding")?;
    }
    Ok(())
}

/// Sets up the robots meta rewrite for a response to a GET (`head`: to a
/// HEAD, whose headers are adjusted alike), or returns `None` when
/// it does not apply: see [`Page::of`], plus a charset lol_html cannot
/// rewrite (passed through, logged). A gzip, deflate or br body is decoded
/// for the rewriter (the origin was asked for identity, but may not
/// comply); such a response loses its Content-Encoding and is sent chunked.
pub fn start(
    head: bool,
    resp: &mut ResponseHeader,
    plan: &Arc<HtmlPlan>,
    plans: &RewritePlans,
    metrics: &Metrics,
    path: &str,
) -> Result<Option<HtmlStream>> {
    let Some(page) = Page::of(resp, metrics, path) else { return Ok(None) };
    let (encoding, charset) = (page.encoding, page.charset());
    let labelled = charset.is_some();
    let mut rewriter = match Rewriter::with_plan(&plans.get(plan), charset) {
        Ok(r) => r,
        Err(e) => {
            metrics.html_passthrough(Passthrough::Charset);
            tracing::info!(path, error = %e, "HTML left unchanged: charset cannot be rewritten");
            return Ok(None);
        }
    };
    // Audit changes no byte (a decoded body still changes). Inject knows by
    // how much the body grows before it has seen it (`fix_growth`).
    // Without a charset label the body may start with a UTF-16 byte order
    // mark: see `begin`.
    let changes = plan.mode != HtmlMode::Audit;
    let growth = match changes && encoding.is_none() && labelled && content_length(resp).is_some() {
        true => rewriter.fix_growth(),
        false => None,
    };
    begin(head, resp, encoding, Transform::Robots(rewriter), plan.mode.as_str(), changes, growth, metrics)
}

/// Adjusts the headers of a response whose body `transform` takes and
/// returns the stream that feeds it, or `None` for a `head` request (the
/// headers the GET would get, no body). `changes`: the transform changes bytes of the
/// body; `growth`: it makes the body exactly this many bytes longer (a
/// Content-Length response then keeps one). `encoding`: the body's coding,
/// decoded before the transform.
#[allow(clippy::too_many_arguments)]
pub fn begin(
    head: bool,
    resp: &mut ResponseHeader,
    encoding: Option<Encoding>,
    transform: Transform,
    mode: &'static str,
    changes: bool,
    growth: Option<usize>,
    metrics: &Metrics,
) -> Result<Option<HtmlStream>> {
    let chunked = adjust_headers(resp, encoding, changes, growth)?;
    if head {
        return Ok(None);
    }
    metrics.html_rewrite(mode);
    let decoder = encoding.map(Decoder::new);
    Ok(Some(HtmlStream { inner: Mutex::new(Inner { transform, decoder }), mode, bailed: false, chunked }))
}

/// The header changes of a response whose body a transform takes (see
/// [`begin`]): framing, ranges, digests, a weak ETag, the removed coding.
/// Alone for a HEAD, which gets the headers a GET would and no transform.
/// Returns whether the body is now sent chunked.
pub fn adjust_headers(
    resp: &mut ResponseHeader,
    encoding: Option<Encoding>,
    changes: bool,
    growth: Option<usize>,
) -> Result<bool> {
    let mut chunked = false;
    // A decoded body changes even when the transform changes nothing.
    if changes || encoding.is_some() {
        // A known growth keeps a Content-Length response one, which saves
        // the chunked framing and lets pingora send a small page in one
        // write instead of three (header, chunk, last chunk). Otherwise
        // (enforce, or no length from the origin): no Content-Length,
        // chunked (pingora's h1 writer would otherwise close the
        // connection). Either way byte ranges of the origin's body no longer
        // apply, and the ETag is no longer byte-exact. A decoded body's
        // length is not known before it is decoded. Without a charset label
        // the body may start with a UTF-16 byte order mark, which the
        // rewriter passes through untouched: padding it to a promised length
        // would add bytes to a page it must not change, so such a response
        // gets no growth and is sent chunked.
        let length = match encoding {
            None => growth.and_then(|g| Some(content_length(resp)?.checked_add(g)? as u64)),
            Some(_) => None,
        };
        match length {
            Some(n) => resp.insert_header(header::CONTENT_LENGTH, n)?,
            None => {
                resp.remove_header(&header::CONTENT_LENGTH);
                resp.insert_header(header::TRANSFER_ENCODING, "chunked")?;
                chunked = true;
            }
        }
        resp.remove_header(&header::ACCEPT_RANGES);
        // Digests of the origin's bytes no longer match the body.
        let present = crate::headers::present(&resp.headers, &DIGEST_HEADERS);
        for name in crate::headers::named(present, &DIGEST_HEADERS) {
            resp.remove_header(name);
        }
        if let Some(etag) = resp.headers.get(header::ETAG) {
            if !etag.as_bytes().starts_with(b"W/") {
                let weak = [b"W/".as_slice(), etag.as_bytes()].concat();
                let weak = http::HeaderValue::from_bytes(&weak)
                    .map_err(|e| Error::because(ErrorType::InternalError, "weak ETag", e))?;
                resp.insert_header(header::ETAG, weak)?;
            }
        }
    }
    if encoding.is_some() {
        resp.remove_header(&header::CONTENT_ENCODING);
        // The client's Accept-Encoding still selects what it gets: the
        // rewritten body is compressed again for a client that asks.
        vary_on_encoding(resp)?;
    }
    Ok(chunked)
}

/// The body chunks one call of the body filter hands on, joined: one chunk
/// is passed as it is, several are copied into one buffer (their total is
/// bounded by the decoder's per-chunk ratio limit).
#[derive(Default)]
struct Joined {
    first: Option<Bytes>,
    rest: Option<BytesMut>,
}

impl Joined {
    fn push(&mut self, b: Bytes) {
        if b.is_empty() {
            return;
        }
        if let Some(rest) = self.rest.as_mut() {
            rest.extend_from_slice(&b);
        } else if let Some(first) = self.first.take() {
            let mut rest = BytesMut::with_capacity(first.len() + b.len());
            rest.extend_from_slice(&first);
            rest.extend_from_slice(&b);
            self.rest = Some(rest);
        } else {
            self.first = Some(b);
        }
    }

    fn into_bytes(self) -> Bytes {
        match (self.first, self.rest) {
            (_, Some(rest)) => rest.freeze(),
            (Some(first), None) => first,
            (None, None) => Bytes::new(),
        }
    }
}

impl HtmlStream {
    /// Whether the response is sent chunked: its end (the rest of the body
    /// and the last chunk) is worth writing at once
    /// (`crate::conn::coalesce_response_end`).
    pub fn chunked(&self) -> bool {
        self.chunked
    }

    /// The `x-markdown-tokens` estimate of what a Markdown conversion has
    /// emitted so far (`None` for the robots rewriter).
    pub fn markdown_tokens(&mut self) -> Option<u64> {
        match &unpoison(&mut self.inner).transform {
            Transform::Markdown(md) => Some(md.tokens() as u64),
            Transform::Robots(_) => None,
        }
    }

    /// The `x-markdown-tokens` estimate of a Markdown conversion that
    /// converted the whole page (`None` for the robots rewriter, or after
    /// a bail-out).
    pub fn markdown_complete(&mut self) -> Option<u64> {
        match &unpoison(&mut self.inner).transform {
            Transform::Markdown(md) if md.bail().is_none() => Some(md.tokens() as u64),
            _ => None,
        }
    }

    /// Replaces a body chunk with the rewriter's output. A compressed body
    /// is decoded piece by piece, each piece rewritten before the next is
    /// decoded. An error (the decoded body breaks a limit of
    /// `crate::decode`, or is not valid) fails the response: once its
    /// header is out, Pingora cuts it short (HTTP/1.1: the connection
    /// closes before the last chunk; HTTP/2: the stream is reset with
    /// CANCEL). Pingora writes the header together with the body chunks
    /// that arrived with it, so a failure among those leaves the header
    /// unsent, and `fail_to_proxy` answers 502 instead. The abort gets a
    /// log line of its own only when `access_logged` is false; otherwise
    /// it is the `error` of the request's access log line.
    pub fn filter(
        &mut self,
        body: &mut Option<Bytes>,
        end_of_stream: bool,
        metrics: &Metrics,
        path: &str,
        access_logged: bool,
    ) -> Result<()> {
        let Inner { transform, decoder } = unpoison(&mut self.inner);
        let mut out = Joined::default();
        let decoded = match decoder {
            None => {
                if let Some(chunk) = body.take() {
                    out.push(transform.write(chunk));
                }
                Ok(())
            }
            Some(decoder) => {
                if let Some(chunk) = body.take() {
                    decoder.push(chunk);
                }
                let mut result = Ok(());
                loop {
                    match decoder.next_piece() {
                        Ok(Some(piece)) => out.push(transform.write(piece)),
                        Ok(None) => break,
                        Err(e) => {
                            result = Err(e);
                            break;
                        }
                    }
                }
                match result {
                    Ok(()) if end_of_stream => decoder.finish(),
                    r => r,
                }
            }
        };
        if let Err(e) = decoded {
            metrics.decompression_aborted(e.reason());
            if !access_logged {
                tracing::warn!(path, reason = e.reason(), error = %e, "Compressed HTML aborted: its body cannot be decoded within the limits");
            }
            return Err(Error::create(
                DECODE_ABORTED,
                ErrorSource::Upstream,
                Some(format!("HTML body from the origin: {e}").into()),
                None,
            ));
        }
        if end_of_stream {
            out.push(transform.finish());
        }
        transform.report(self.mode, metrics, path, end_of_stream, &mut self.bailed);
        let out = out.into_bytes();
        *body = if out.is_empty() && !end_of_stream { None } else { Some(out) };
        Ok(())
    }
}

/// A mutex-free accessor for the html stream: the rewriter is `Send` but not
/// `Sync`, so it sits in a `Mutex` and is reached with `get_mut`.
fn unpoison<T>(m: &mut Mutex<T>) -> &mut T {
    match m.get_mut() {
        Ok(v) => v,
        Err(poisoned) => poisoned.into_inner(),
    }
}

#[cfg(test)]
mod tests {
    use super::{html_content_type, HtmlMode, HtmlPlan, Passthrough, RewritePlans, PLANS_LIMIT};
    use std::sync::Arc;

    fn plan(rule: &str) -> Arc<HtmlPlan> {
        Arc::new(HtmlPlan {
            mode: HtmlMode::Inject,
            directives: vec![("*".into(), vec![rule.into()])],
            metas: vec![],
            head: vec![],
        })
    }

    #[test]
    fn plans_are_prepared_once_and_bounded() {
        let plans = RewritePlans::default();
        let a = plan("noindex");
        let _ = plans.get(&a);
        let _ = plans.get(&a.clone());
        // Equal but built apart: the same entry.
        let _ = plans.get(&plan("noindex"));
        let _ = plans.get(&plan("nosnippet"));
        assert_eq!(plans.0.read().map(|l| l.len()).unwrap_or(0), 2);
        for i in 0..PLANS_LIMIT + 10 {
            let _ = plans.get(&plan(&format!("max-snippet:{i}")));
        }
        assert_eq!(plans.0.read().map(|l| l.len()).unwrap_or(0), PLANS_LIMIT);
    }

    #[test]
    fn passthrough_reasons_are_distinct_labels() {
        let all = [Passthrough::Encoding, Passthrough::Charset, Passthrough::Utf16, Passthrough::BailOut];
        let labels: Vec<&str> = all.iter().map(|r| r.as_str()).collect();
        assert_eq!(labels, ["encoding", "charset", "utf-16", "bail-out"]);
    }

    #[test]
    fn content_type_parsing() {
        assert_eq!(html_content_type("text/html; charset=UTF-8"), (true, Some("UTF-8")));
        assert_eq!(html_content_type("Text/HTML"), (true, None));
        assert_eq!(html_content_type("text/html;charset=\"iso-8859-1\""), (true, Some("iso-8859-1")));
        assert_eq!(html_content_type("application/xhtml+xml; charset=utf-8"), (false, Some("utf-8")));
        assert!(!html_content_type("text/plain; charset=utf-8").0);
        assert!(!html_content_type("").0);
    }
}
