//! The Markdown cache in the hooks (`crate::markdown_cache`): the lookup
//! and revalidation in `request_filter`, the collection of a converted
//! page in the response phases.

use super::*;

use crate::markdown::Lines;
use crate::markdown_cache::{Entry, Key};
use crawlgate_policy::markdown::{answer, guards, Answer};
use crawlgate_policy::markdown_cache::{request as may_use, storable, Request, Response, Validators};

/// What a request negotiating Markdown holds for the cache: its key,
/// then the converted page on its way there.
pub(super) enum Md {
    Key(Key),
    Collect(Collect),
}

/// A converted page on its way to the cache.
pub(super) struct Collect {
    key: Key,
    validators: Validators,
    header: Option<Box<ResponseHeader>>,
    lines: Lines,
    images: bool,
    body: Vec<u8>,
    max: usize,
}

/// Fields that make a request a precondition or a range (the origin
/// judges those).
static CONDITIONAL: [header::HeaderName; 6] = [
    header::IF_NONE_MATCH,
    header::IF_MODIFIED_SINCE,
    header::IF_MATCH,
    header::IF_UNMODIFIED_SINCE,
    header::IF_RANGE,
    header::RANGE,
];

impl Gate {
    /// `request_filter`, after the forwarding fields, for a request that
    /// negotiated Markdown: the key it is cached under (kept for the
    /// response phases), and when an entry passes the guard and the
    /// origin answers its conditional GET with 304, the entry written to
    /// the client. `Ok(true)`: answered here.
    pub(super) async fn markdown_from_cache(&self, session: &mut Session, ctx: &mut Ctx) -> Result<bool> {
        let Some(cache) = ctx.snap.md_cache.clone().filter(|_| ctx.markdown == Negotiation::Markdown) else {
            return Ok(false);
        };
        let req = session.req_header();
        let facts = Request {
            get: req.method == http::Method::GET,
            priced: ctx.pay.is_some() || ctx.cache == CacheRule::Private,
            credentials: req.headers.contains_key(header::COOKIE) || req.headers.contains_key(header::AUTHORIZATION),
            conditional: CONDITIONAL.iter().any(|n| req.headers.contains_key(n)),
        };
        if may_use(facts).is_err() {
            return Ok(false);
        }
        let Some(host) = crate::markdown::page_host(req) else { return Ok(false) };
        let target = ctx.forward.clone().unwrap_or_else(|| String::from_utf8_lossy(req.raw_path()).into_owned());
        let key = Key {
            scheme: ctx.scheme.as_str(),
            host: host.as_str().to_ascii_lowercase(),
            target,
            generation: ctx.snap.generation,
        };
        let entry = cache.get(&key);
        ctx.md = Some(Box::new(Md::Key(key.clone())));
        let metrics = self.shared.metrics.markdown();
        let Some(entry) = entry else {
            metrics.cache_lookup(false);
            return Ok(false);
        };
        let Some(md) = ctx.snap.policy.settings().markdown.as_ref() else { return Ok(false) };
        let agent = ctx.agent.map(|a| ctx.snap.policy.agent_name(a));
        let guarded = guards(md.ai_agents, agent, ctx.verification);
        if !crate::markdown_cache::passes(&entry, guarded, agent) {
            metrics.cache_lookup(false);
            return Ok(false);
        }
        let Some((peer, addr)) = ctx.snap.upstream.peer() else { return Ok(false) };
        let mut upstream = session.req_header().clone();
        if let Some(target) = ctx.forward.as_deref() {
            upstream.set_raw_path(target.as_bytes())?;
        }
        let revalidated = cache.revalidate(&peer, upstream, &entry).await;
        let resp = revalidated.as_ref().and_then(|nm| crate::markdown_cache::hit(&entry, nm, guarded, agent));
        let Some(resp) = resp else {
            // Changed (or refused, or the origin did not answer): proxied
            // as a miss, and the response may replace the entry.
            if revalidated.is_none() {
                let (bytes, n) = cache.remove(&key);
                metrics.cache_size(bytes, n);
            }
            metrics.cache_lookup(false);
            return Ok(false);
        };
        metrics.cache_lookup(true);
        metrics.served(entry.body.len() as u64, entry.tokens);
        ctx.md = None;
        ctx.upstream = Some(addr);
        ctx.upstream_status = Some(304);
        compress(session, &ctx.snap, true);
        session.write_response_header(Box::new(resp), false).await?;
        session.write_response_body(Some(entry.body.clone()), true).await?;
        Ok(true)
    }

    /// `response_filter`, before the conversion starts: whether the page
    /// may be kept, and with which validators (the origin's, before the
    /// Markdown's own replaces them).
    pub(super) fn markdown_storable(&self, resp: &ResponseHeader, ctx: &Ctx) -> Option<Validators> {
        if !matches!(ctx.md.as_deref(), Some(Md::Key(_))) {
            return None;
        }
        let text = |name: header::HeaderName| -> Vec<String> {
            resp.headers.get_all(name).iter().map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()).collect()
        };
        let (etag, modified) = (text(header::ETAG), text(header::LAST_MODIFIED));
        let (cache_control, vary) = (text(header::CACHE_CONTROL), text(header::VARY));
        storable(Response {
            status: resp.status.as_u16(),
            etag: etag.first().map(String::as_str),
            last_modified: modified.first().map(String::as_str),
            cache_control: &cache_control,
            vary: &vary,
            set_cookie: resp.headers.contains_key(header::SET_COOKIE),
        })
        .ok()
    }

    /// `response_filter`, after a conversion started: what collects it.
    pub(super) fn markdown_collect(&self, resp: &ResponseHeader, ctx: &Ctx, validators: Validators) -> Option<Box<Md>> {
        let (Some(Md::Key(key)), Some(cache), Some(md)) =
            (ctx.md.as_deref(), ctx.snap.md_cache.as_ref(), ctx.snap.policy.settings().markdown.as_ref())
        else {
            return None;
        };
        let lines = Lines::of(resp);
        let agent = ctx.agent.map(|a| ctx.snap.policy.agent_name(a));
        let guarded = guards(md.ai_agents, agent, ctx.verification);
        let Answer::Convert { images } = answer(guarded, agent, lines.fields()) else { return None };
        Some(Box::new(Md::Collect(Collect {
            key: key.clone(),
            validators,
            header: None,
            lines,
            images,
            body: Vec::new(),
            max: cache.max_entry(),
        })))
    }

    /// `response_filter`, at its end: the header as the client gets it.
    pub(super) fn markdown_header(resp: &ResponseHeader, ctx: &mut Ctx) {
        if let Some(Md::Collect(c)) = ctx.md.as_deref_mut() {
            c.header = Some(Box::new(crate::markdown_cache::stored_header(resp)));
        }
    }

    /// `response_body_filter`, after the converter: the Markdown of this
    /// chunk, and at the end the entry, when the conversion finished.
    pub(super) fn markdown_body(&self, body: &Option<Bytes>, end: bool, ctx: &mut Ctx) {
        let Some(Md::Collect(c)) = ctx.md.as_deref_mut() else { return };
        if let Some(b) = body {
            if c.body.len() + b.len() > c.max {
                ctx.md = None;
                return;
            }
            c.body.extend_from_slice(b);
        }
        if !end {
            return;
        }
        let complete = ctx.html.as_mut().and_then(|h| h.markdown_complete());
        let (Some(md), Some(cache)) = (ctx.md.take(), ctx.snap.md_cache.as_ref()) else { return };
        let Md::Collect(c) = *md else { return };
        let (Some(tokens), Some(header)) = (complete, c.header) else { return };
        let entry = Entry {
            header: *header,
            body: Bytes::from(c.body),
            tokens,
            validators: c.validators,
            lines: c.lines,
            images: c.images,
        };
        let (bytes, n) = cache.insert(c.key, entry);
        self.shared.metrics.markdown().cache_size(bytes, n);
    }
}
