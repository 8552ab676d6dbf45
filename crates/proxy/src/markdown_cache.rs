//! The cache of converted Markdown (issue 37 item 2): a page converted once
//! per version. One cache per snapshot (a reload or an origin merge starts
//! an empty one), bounded by `[markdown] cache_bytes`, least recently used
//! out first.
//!
//! Keyed by the scheme, the Host, the target sent to the origin and the
//! policy generation: never across hosts (the links and `url:` are made
//! from them) or policies. The variant (images left out for `noimageai`)
//! is kept in the entry and must match the request's. What may be kept or
//! answered is `policy::markdown_cache` (no credentials, no preconditions,
//! nothing priced, no `private` / `no-store`, no `Set-Cookie`, a `Vary`
//! of at most Accept and Accept-Encoding).
//!
//! A hit is never served on its own word: the request goes to the origin
//! as a conditional GET with the page's validators (`If-None-Match`,
//! `If-Modified-Since`), through a connector of the cache's own, from
//! `request_filter`; a 304 serves the entry (the AI-use guard run again
//! with the 304's robots and Content-Usage fields added to the stored
//! ones), anything else drops it and the request is proxied as a miss.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use crawlgate_policy::markdown::{answer, Answer, Fields};
use crawlgate_policy::markdown_cache::Validators;
use http::header::{self, HeaderName};
use pingora::connectors::http::Connector;
use pingora::http::{RequestHeader, ResponseHeader};
use pingora::upstreams::peer::HttpPeer;

use crate::markdown::Lines;

/// The longest a revalidation may take before the request is proxied as a
/// miss.
const REVALIDATE_TIMEOUT: Duration = Duration::from_secs(10);

/// What identifies an entry.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct Key {
    /// `http` or `https`: the client's scheme.
    pub scheme: &'static str,
    /// The request's Host (a plain host[:port]), lowercase.
    pub host: String,
    /// The target sent to the origin (path and query).
    pub target: String,
    /// The snapshot's policy generation.
    pub generation: u64,
}

/// One converted page.
pub struct Entry {
    /// The Markdown response's header as it was sent (no framing fields).
    pub header: ResponseHeader,
    /// The Markdown.
    pub body: Bytes,
    /// Its `x-markdown-tokens` estimate.
    pub tokens: u64,
    /// The page's validators, for the conditional request.
    pub validators: Validators,
    /// The robots and Content-Usage lines the guard passed it with.
    pub lines: Lines,
    /// Whether its images were kept.
    pub images: bool,
}

impl Entry {
    /// Bytes it is counted for: the body and the header's fields.
    fn size(&self, key: &Key) -> usize {
        let fields: usize = self.header.headers.iter().map(|(n, v)| n.as_str().len() + v.len() + 4).sum();
        self.body.len() + fields + key.host.len() + key.target.len() + 64
    }
}

struct Slot {
    entry: Arc<Entry>,
    tick: u64,
    size: usize,
}

#[derive(Default)]
struct Lru {
    map: HashMap<Key, Slot>,
    order: BTreeMap<u64, Key>,
    tick: u64,
    bytes: usize,
}

/// The cache of one snapshot.
pub struct MarkdownCache {
    lru: Mutex<Lru>,
    max_bytes: usize,
    connector: Connector,
}

impl MarkdownCache {
    /// A cache of at most `max_bytes`; `None` for 0.
    pub fn new(max_bytes: usize) -> Option<MarkdownCache> {
        (max_bytes > 0).then(|| MarkdownCache { lru: Mutex::default(), max_bytes, connector: Connector::new(None) })
    }

    /// The largest entry kept: an eighth of the bound.
    pub fn max_entry(&self) -> usize {
        self.max_bytes / 8
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Lru> {
        self.lru.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The entry of `key`, marked as used.
    pub fn get(&self, key: &Key) -> Option<Arc<Entry>> {
        let mut lru = self.lock();
        lru.tick += 1;
        let tick = lru.tick;
        let slot = lru.map.get_mut(key)?;
        let old = std::mem::replace(&mut slot.tick, tick);
        let entry = slot.entry.clone();
        lru.order.remove(&old);
        lru.order.insert(tick, key.clone());
        Some(entry)
    }

    /// Keeps `entry` under `key` (replacing one there), evicting the least
    /// recently used past the bound; returns the bytes and entries held.
    pub fn insert(&self, key: Key, entry: Entry) -> (usize, usize) {
        let size = entry.size(&key);
        let mut lru = self.lock();
        if size > self.max_entry() {
            return (lru.bytes, lru.map.len());
        }
        lru.tick += 1;
        let tick = lru.tick;
        if let Some(old) = lru.map.remove(&key) {
            lru.order.remove(&old.tick);
            lru.bytes -= old.size;
        }
        while lru.bytes + size > self.max_bytes {
            let Some((_, victim)) = lru.order.pop_first() else { break };
            if let Some(old) = lru.map.remove(&victim) {
                lru.bytes -= old.size;
            }
        }
        lru.order.insert(tick, key.clone());
        lru.map.insert(key, Slot { entry: Arc::new(entry), tick, size });
        lru.bytes += size;
        (lru.bytes, lru.map.len())
    }

    /// Drops the entry of `key`; returns the bytes and entries held.
    pub fn remove(&self, key: &Key) -> (usize, usize) {
        let mut lru = self.lock();
        if let Some(old) = lru.map.remove(key) {
            lru.order.remove(&old.tick);
            lru.bytes -= old.size;
        }
        (lru.bytes, lru.map.len())
    }

    /// Asks the origin whether `entry` is still the page: `Some(304's
    /// header)` when it is; `None` for any other answer, an error or the
    /// timeout. `req` is the request as the origin would get it.
    pub async fn revalidate(&self, peer: &HttpPeer, mut req: RequestHeader, entry: &Entry) -> Option<ResponseHeader> {
        for name in [header::IF_NONE_MATCH, header::IF_MODIFIED_SINCE, header::IF_MATCH, header::RANGE] {
            req.remove_header(&name);
        }
        req.insert_header(header::ACCEPT_ENCODING, "identity").ok()?;
        if let Some(etag) = entry.validators.etag.as_deref() {
            req.insert_header(header::IF_NONE_MATCH, etag).ok()?;
        }
        if let Some(date) = entry.validators.last_modified.as_deref() {
            req.insert_header(header::IF_MODIFIED_SINCE, date).ok()?;
        }
        let ask = async {
            let (mut session, _) = self.connector.get_http_session(peer).await.ok()?;
            session.write_request_header(Box::new(req)).await.ok()?;
            session.finish_request_body().await.ok()?;
            let status = loop {
                session.read_response_header().await.ok()?;
                let status = session.response_header().map_or(0, |h| h.status.as_u16());
                if !(100..200).contains(&status) {
                    break status;
                }
            };
            let header = session.response_header().cloned();
            if status == 304 {
                // No body: the connection can serve the next request.
                self.connector.release_http_session(session, peer, None).await;
                header
            } else {
                None
            }
        };
        tokio::time::timeout(REVALIDATE_TIMEOUT, ask).await.ok().flatten()
    }
}

/// Fields a 304 carries that update the stored response (RFC 9111 section
/// 4.3.4), besides the robots ones the guard reads.
static UPDATED: [HeaderName; 3] = [header::DATE, header::CACHE_CONTROL, header::EXPIRES];

/// The response a 304 lets the entry give, or `None` when the guard now
/// refuses it (the 304's robots or Content-Usage fields are added to the
/// stored ones) or its images variant is not the entry's.
pub fn hit(entry: &Entry, not_modified: &ResponseHeader, guarded: bool, agent: Option<&str>) -> Option<ResponseHeader> {
    let fresh = Lines::of(not_modified);
    let lines = entry.lines.with(&fresh);
    match answer(guarded, agent, lines.fields()) {
        Answer::Convert { images } if images == entry.images => {}
        _ => return None,
    }
    let mut resp = entry.header.clone();
    for name in &UPDATED {
        if let Some(v) = not_modified.headers.get(name) {
            resp.insert_header(name.clone(), v.clone()).ok()?;
        }
    }
    resp.insert_header(header::CONTENT_LENGTH, entry.body.len()).ok()?;
    resp.insert_header(HeaderName::from_static("x-markdown-tokens"), entry.tokens).ok()?;
    Some(resp)
}

/// Whether the stored lines alone let `agent` have the entry.
pub fn passes(entry: &Entry, guarded: bool, agent: Option<&str>) -> bool {
    let f: Fields<'_, String> = entry.lines.fields();
    matches!(answer(guarded, agent, f), Answer::Convert { images } if images == entry.images)
}

/// The header kept for an entry: the response as sent, without its
/// framing and coding fields (a hit is framed by its length, and coded for
/// its own client).
pub fn stored_header(resp: &ResponseHeader) -> ResponseHeader {
    let mut h = resp.clone();
    for name in [header::CONTENT_LENGTH, header::TRANSFER_ENCODING, header::CONTENT_ENCODING, header::CONNECTION] {
        h.remove_header(&name);
    }
    h.remove_header("x-markdown-tokens");
    h
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn key(target: &str) -> Key {
        Key { scheme: "https", host: "www.example.com".into(), target: target.into(), generation: 1 }
    }

    fn entry(body: usize) -> Entry {
        Entry {
            header: ResponseHeader::build(200, None).unwrap(),
            body: Bytes::from(vec![b'x'; body]),
            tokens: 1,
            validators: Validators { etag: Some("\"p1\"".into()), last_modified: None },
            lines: Lines::default(),
            images: true,
        }
    }

    #[test]
    fn bounded_by_bytes_least_recently_used_out() {
        let cache = MarkdownCache::new(8000).unwrap();
        let size = entry(900).size(&key("/a"));
        cache.insert(key("/a"), entry(900));
        cache.insert(key("/b"), entry(900));
        assert!(cache.get(&key("/a")).is_some());
        // 8000 bytes hold eight of these: the ninth evicts /b, the least
        // recently used.
        for t in ["/c", "/d", "/e", "/f", "/g", "/h"] {
            cache.insert(key(t), entry(900));
        }
        let (bytes, n) = cache.insert(key("/i"), entry(900));
        assert_eq!((bytes, n), (8 * size, 8));
        assert!(cache.get(&key("/b")).is_none());
        assert!(cache.get(&key("/a")).is_some());
        // Over an eighth of the bound: not kept.
        cache.insert(key("/big"), entry(1001));
        assert!(cache.get(&key("/big")).is_none());
        // Another host, another generation: other entries.
        let other = Key { host: "evil.example".into(), ..key("/a") };
        assert!(cache.get(&other).is_none());
        assert!(cache.get(&Key { generation: 2, ..key("/a") }).is_none());
        assert_eq!(cache.remove(&key("/a")), (7 * size, 7));
        assert!(MarkdownCache::new(0).is_none());
    }
}
