//! Markdown for agents in the proxy: the request's negotiation
//! (`crawlgate_policy::markdown::negotiate`), and on the response the
//! AI-use guard, the header changes and the converter of `crawlgate-html`
//! as the response's body transform (`crate::html::Transform::Markdown`).
//! The decisions are the policy's; this module reads headers and writes
//! them.
//!
//! The Markdown has a validator of its own (`policy::markdown::markdown_etag`:
//! the page's tag with `-md`), and a Markdown request's `If-None-Match` /
//! `If-Match` carrying it is mapped back to the page's before it reaches
//! the origin, so a 304 (or 412) is the origin's answer for both
//! representations.
//!
//! A 304 to a Markdown request names the Markdown's tag only if the
//! AI-use guard would still let a 200 convert
//! (`policy::markdown::not_modified`); otherwise it keeps the page's
//! `ETag`, drops `Last-Modified` and says `x-markdown-refused`, so a copy
//! cached before a reload added `noai` is not revalidated.
//!
//! `x-markdown-tokens: N` is the estimate of the Markdown body sent: its
//! characters divided by four, rounded up (`MarkdownConverter::tokens`,
//! counted as the converter emits). The header must wait for the end of
//! the body, so on an HTTP/1.1 connection the service asks
//! `crate::conn::hold_for_markdown_tokens` to hold the converted response
//! from its status line on, and the body filter hands the estimate over
//! at the end (`crate::conn::markdown_tokens`); the connection adds the
//! line to the held header and writes the response at once. A priced
//! response held so is charged only then (`crate::payment::on_release`),
//! so a conversion that fails charges nothing. The hold is
//! bounded (`crate::conn::held::MAX_HELD_FOR_TOKENS`, 256 KiB of bytes sent,
//! after compression): a larger response goes out without the estimate,
//! streaming from there. HTTP/2 streams (no such connection), HEAD, 304s
//! and HTTP/1.0 clients get no estimate. HTTP/1.1 trailers reach few
//! clients, so they are not used.

use std::sync::Arc;

use crawlgate_html::markdown::{MarkdownConfig, MarkdownConverter, PageInfo};
use crawlgate_policy::markdown::{
    answer, guards, markdown_etag, not_modified, origin_precondition, Answer, Fields, NotModified, Precondition,
    UsageFix,
};
use crawlgate_policy::verification::Verification;
use crawlgate_policy::{Policy, UrlControls};
use http::header::{self, HeaderName};
use pingora::http::ResponseHeader;
use pingora::proxy::Session;
use pingora::Result;

use crate::html::{HtmlStream, Page, Transform};
use crawlgate_telemetry::metrics::{MarkdownFailure, Metrics, Passthrough};

/// Memory lol_html may use per converted response.
const MAX_MEMORY: usize = 4 << 20;

static X_MARKDOWN_REFUSED: HeaderName = HeaderName::from_static("x-markdown-refused");
static X_MARKDOWN_TOKENS: HeaderName = HeaderName::from_static("x-markdown-tokens");
static CONTENT_SIGNAL: HeaderName = HeaderName::from_static("content-signal");
static CONTENT_USAGE: HeaderName = HeaderName::from_static("content-usage");
static X_ROBOTS_TAG: HeaderName = HeaderName::from_static("x-robots-tag");
static ROBOTS_TAG: HeaderName = HeaderName::from_static("robots-tag");

/// The converter's settings of a policy, built once per snapshot.
pub fn config(policy: &Policy) -> Option<Arc<MarkdownConfig>> {
    let s = policy.settings().markdown.as_ref().filter(|s| s.enabled)?;
    Some(Arc::new(MarkdownConfig::from_settings(s, MAX_MEMORY)))
}

/// Rewrites `If-None-Match` and `If-Match` of a request that negotiated
/// Markdown for the origin (`policy::markdown::origin_precondition`); the
/// origin's copy of the request is made from this one.
pub fn origin_preconditions(req: &mut pingora::http::RequestHeader) {
    // With If-None-Match present the origin ignores If-Modified-Since (RFC
    // 9110 section 13.1.3); once the HTML's tags are dropped it would not,
    // and a date the client got with the HTML would answer the Markdown.
    if req.headers.contains_key(header::IF_NONE_MATCH) {
        req.remove_header(&header::IF_MODIFIED_SINCE);
    }
    for (name, if_match) in [(header::IF_NONE_MATCH, false), (header::IF_MATCH, true)] {
        let lines: Vec<String> =
            req.headers.get_all(&name).iter().map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()).collect();
        if lines.is_empty() {
            continue;
        }
        match origin_precondition(&lines.join(", "), if_match) {
            Precondition::Keep => {}
            Precondition::Remove => {
                req.remove_header(&name);
            }
            Precondition::Replace(value) => {
                // Built from the client's own tags: a valid field value.
                if req.insert_header(name.clone(), value).is_err() {
                    req.remove_header(&name);
                }
            }
        }
    }
}

/// The request's `Accept` field, its lines joined into one list (RFC 9110
/// section 5.3), for the decision's Markdown negotiation.
pub fn accept(req: &pingora::http::RequestHeader) -> Option<std::borrow::Cow<'_, str>> {
    let mut values = req.headers.get_all(header::ACCEPT).iter();
    let first = values.next().map(|v| String::from_utf8_lossy(v.as_bytes()));
    match (first, values.next()) {
        (Some(f), None) => Some(f),
        (Some(f), Some(second)) => {
            let mut all = vec![f.into_owned(), String::from_utf8_lossy(second.as_bytes()).into_owned()];
            all.extend(values.map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()));
            Some(std::borrow::Cow::Owned(all.join(", ")))
        }
        (None, _) => None,
    }
}

/// What the response side did.
pub enum Outcome {
    /// Converted: the stream to feed (`None` for a HEAD), boxed as the
    /// request context keeps it.
    Converted(Option<Box<HtmlStream>>),
    /// Served as it is (not a 2xx HTML page, refused by the guard, or a
    /// charset the converter cannot read).
    NotConverted,
}

/// The values of every line of a header, as text.
fn values(resp: &ResponseHeader, name: &HeaderName) -> Vec<String> {
    resp.headers.get_all(name).iter().map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()).collect()
}

/// Adds `Vary: Accept` to a 2xx HTML response of a path that converts (the
/// Markdown and the HTML both vary by it), merged with the origin's Vary,
/// and to a 304 there (RFC 9110 section 15.4.5: a 304 carries the Vary the
/// 200 would have; it has no Content-Type to tell HTML by).
pub fn vary(resp: &mut ResponseHeader) -> Result<()> {
    let not_modified = resp.status == http::StatusCode::NOT_MODIFIED;
    if !not_modified && (!resp.status.is_success() || !crate::html::is_html(resp)) {
        return Ok(());
    }
    let listed = resp.headers.get_all(header::VARY).iter().any(|v| {
        v.as_bytes().split(|b| *b == b',').any(|name| {
            let name = name.trim_ascii();
            name == b"*" || name.eq_ignore_ascii_case(b"accept")
        })
    });
    if !listed {
        resp.append_header(header::VARY, "Accept")?;
    }
    Ok(())
}

/// Who asks, as the AI-use guard reads it: the policy token the request
/// names and how far that was verified (`policy::markdown::guards`).
#[derive(Clone, Copy, Debug)]
pub struct Asker<'a> {
    /// The policy token the User-Agent names, if any.
    pub agent: Option<&'a str>,
    /// Its verification outcome.
    pub verification: Verification,
}

/// The robots and Content-Usage lines of a response, for the guard.
#[derive(Clone, Debug, Default)]
pub struct Lines {
    robots_tag: Vec<String>,
    x_robots_tag: Vec<String>,
    content_usage: Vec<String>,
}

impl Lines {
    /// The lines `resp` carries.
    pub fn of(resp: &ResponseHeader) -> Lines {
        Lines {
            robots_tag: values(resp, &ROBOTS_TAG),
            x_robots_tag: values(resp, &X_ROBOTS_TAG),
            content_usage: values(resp, &CONTENT_USAGE),
        }
    }

    /// These and `more` (restrictions add up).
    pub fn with(&self, more: &Lines) -> Lines {
        let join = |a: &[String], b: &[String]| a.iter().chain(b).cloned().collect();
        Lines {
            robots_tag: join(&self.robots_tag, &more.robots_tag),
            x_robots_tag: join(&self.x_robots_tag, &more.x_robots_tag),
            content_usage: join(&self.content_usage, &more.content_usage),
        }
    }

    /// As the guard reads them.
    pub fn fields(&self) -> Fields<'_, String> {
        Fields { robots_tag: &self.robots_tag, x_robots_tag: &self.x_robots_tag, content_usage: &self.content_usage }
    }
}

/// The request's Host as a base for links and a cache key: a plain
/// host[:port] (an `http` Authority without userinfo), else `None`.
pub fn page_host(req: &pingora::http::RequestHeader) -> Option<http::uri::Authority> {
    req.headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| req.uri.authority().map(|a| a.as_str()))
        .and_then(|h| h.parse::<http::uri::Authority>().ok())
        .filter(|a| !a.as_str().contains('@'))
}

/// The response side of a request that negotiated Markdown. Runs after
/// the policy's headers are on the response, so the guard sees the
/// Robots-Tag, X-Robots-Tag and Content-Usage in force (the origin's and
/// the policy's).
#[allow(clippy::too_many_arguments)]
pub fn start(
    session: &mut Session,
    resp: &mut ResponseHeader,
    policy: &Policy,
    config: Option<&Arc<MarkdownConfig>>,
    controls: &UrlControls,
    asker: Asker<'_>,
    metrics: &Metrics,
    path: &str,
    scheme: crawlgate_policy::scheme::Scheme,
) -> Result<Outcome> {
    let (Some(settings), Some(config)) = (policy.settings().markdown.as_ref(), config) else {
        return Ok(Outcome::NotConverted);
    };
    let agent = asker.agent;
    let guarded = guards(settings.ai_agents, agent, asker.verification);
    // The origin matched the page's tag the Markdown one was mapped to
    // (`negotiate`): the 304 names the Markdown's, if a 200 would still be
    // converted (`policy::markdown::not_modified`).
    if resp.status == http::StatusCode::NOT_MODIFIED {
        drop_origin_fields(resp);
        not_modified_validators(resp, guarded, agent, path)?;
        return Ok(Outcome::NotConverted);
    }
    let (encoding, charset) = match Page::of(resp, metrics, path) {
        Some(page) => (page.encoding, page.charset().map(str::to_string)),
        None => return Ok(Outcome::NotConverted),
    };
    drop_origin_fields(resp);
    let lines = Lines::of(resp);
    let no_images = match answer(guarded, agent, lines.fields()) {
        Answer::Refuse { why, content_usage } => {
            resp.insert_header(X_MARKDOWN_REFUSED.clone(), why.as_str())?;
            // One answer: no `ai-use=y` next to the rule that refused it.
            if let UsageFix::Replace(value) = content_usage {
                resp.insert_header(CONTENT_USAGE.clone(), value)?;
            }
            metrics.markdown().refused(why);
            tracing::debug!(path, refusal = why.as_str(), "Markdown refused for an AI agent; HTML served");
            return Ok(Outcome::NotConverted);
        }
        Answer::Convert { images } => !images,
    };
    let (robots, usage) = (&lines.x_robots_tag, &lines.content_usage);
    // The client's scheme (a trusted front server's that terminated TLS).
    let scheme = scheme.as_str();
    let host = page_host(session.req_header());
    // The Host a client sends only changes the links of its own response
    // (and of the cache entry keyed on that Host); one that is not a plain
    // host[:port] (`a@evil.example`, `evil.example/x?`) leaves the links
    // relative.
    let page = PageInfo {
        url: host.map_or_else(String::new, |host| format!("{scheme}://{host}{path}")),
        robots: (!robots.is_empty()).then(|| robots.join(", ")),
        content_usage: (!usage.is_empty()).then(|| usage.join(", ")),
        no_images,
    };
    let head = session.req_header().method == http::Method::HEAD;
    // A HEAD gets the headers the GET would, without the converter (its
    // lol_html rewriter and state) built only to be dropped.
    let converter = match head {
        true if readable_charset(charset.as_deref()) => None,
        false => match MarkdownConverter::new(config, page, charset.as_deref()) {
            Ok(c) => Some(c),
            Err(e) => {
                metrics.html_passthrough(Passthrough::Charset);
                metrics.markdown().failed(MarkdownFailure::Charset);
                tracing::info!(path, error = %e, "HTML served instead of Markdown: charset cannot be read");
                return Ok(Outcome::NotConverted);
            }
        },
        true => {
            metrics.html_passthrough(Passthrough::Charset);
            metrics.markdown().failed(MarkdownFailure::Charset);
            return Ok(Outcome::NotConverted);
        }
    };
    let signal = crawlgate_policy::markdown::content_signal(policy, controls);
    let stream = match converter {
        Some(c) => crate::html::begin(false, resp, encoding, Transform::Markdown(c), "markdown", true, None, metrics)?,
        None => {
            crate::html::adjust_headers(resp, encoding, true, None)?;
            None
        }
    };
    markdown_validator(resp)?;
    resp.insert_header(header::CONTENT_TYPE, "text/markdown; charset=utf-8")?;
    if let Some(signal) = signal {
        resp.insert_header(CONTENT_SIGNAL.clone(), signal)?;
    }
    Ok(Outcome::Converted(stream.map(Box::new)))
}

/// The validators of a 304 answering a Markdown request: the Markdown's
/// tag, or, when the AI-use guard now refuses the conversion, the page's
/// `ETag` without `Last-Modified` and with `x-markdown-refused`.
/// Drops an origin's own `x-markdown-tokens` and `x-markdown-refused`
/// from an HTML page (or its 304) negotiated as Markdown: only crawlgate
/// says what it converted or refused (an origin's value would come first,
/// or stand alone past the hold's bound, or refresh a cached copy).
fn drop_origin_fields(resp: &mut ResponseHeader) {
    resp.remove_header(&X_MARKDOWN_TOKENS);
    resp.remove_header(&X_MARKDOWN_REFUSED);
}

fn not_modified_validators(resp: &mut ResponseHeader, guarded: bool, agent: Option<&str>, path: &str) -> Result<()> {
    let lines = Lines::of(resp);
    let etag = resp.headers.get(header::ETAG).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    match not_modified(guarded, agent, lines.fields(), etag.as_deref()) {
        NotModified::Markdown(Some(tag)) => {
            resp.insert_header(header::ETAG, tag)?;
        }
        NotModified::Markdown(None) => {
            resp.remove_header(&header::ETAG);
        }
        NotModified::Refused(refusal) => {
            resp.remove_header(&header::LAST_MODIFIED);
            resp.insert_header(X_MARKDOWN_REFUSED.clone(), refusal.as_str())?;
            tracing::debug!(
                path,
                refusal = refusal.as_str(),
                "304 of a Markdown request refused by the guard; page validators kept"
            );
        }
    }
    Ok(())
}

/// Gives the response the Markdown's own validator in place of the page's
/// `ETag` (`policy::markdown::markdown_etag`); an `ETag` that is not one
/// entity-tag is removed rather than shared.
fn markdown_validator(resp: &mut ResponseHeader) -> Result<()> {
    let Some(etag) = resp.headers.get(header::ETAG) else { return Ok(()) };
    match markdown_etag(&String::from_utf8_lossy(etag.as_bytes())) {
        Some(tag) => {
            resp.insert_header(header::ETAG, tag)?;
        }
        None => {
            resp.remove_header(&header::ETAG);
        }
    }
    Ok(())
}

/// Whether the converter can read a body labelled `charset`: what
/// `MarkdownConverter::new` accepts (no label, or a label naming an
/// ASCII-compatible encoding), decided without building one.
fn readable_charset(charset: Option<&str>) -> bool {
    match charset.map(str::trim).filter(|l| !l.is_empty()) {
        None => true,
        Some(label) => encoding_rs::Encoding::for_label(label.as_bytes()).is_some_and(|e| e.is_ascii_compatible()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readable_charsets_are_those_the_converter_takes() {
        let config = Arc::new(MarkdownConfig::default());
        let labels = [
            None,
            Some(""),
            Some(" "),
            Some("utf-8"),
            Some("UTF-8"),
            Some("iso-8859-1"),
            Some("windows-1252"),
            Some("shift_jis"),
            Some("euc-jp"),
            Some("gb18030"),
            Some("utf-16"),
            Some("utf-16le"),
            Some("UTF-16BE"),
            Some("iso-2022-jp"),
            Some("replacement"),
            Some("x-user-defined"),
            Some("no-such-charset"),
        ];
        for label in labels {
            let built = MarkdownConverter::new(&config, PageInfo::default(), label).is_ok();
            assert_eq!(readable_charset(label), built, "{label:?}");
        }
    }
}
