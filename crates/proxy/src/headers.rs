//! Response headers from the URL-level controls: `Robots-Tag` and
//! `X-Robots-Tag` merged with the origin's (the merge itself is the policy
//! crate's), and `Content-Usage`.
//!
//! Content-Usage: an origin's own header is kept unless the policy says
//! `upstream.content_usage = "replace"`; the origin knows its content best,
//! and the policy's value is a site-wide default.
//!
//! `tdm-reservation` / `tdm-policy` (W3C TDM Reservation Protocol): an
//! origin that sends either keeps its own statement, and the policy's pair
//! is left out of the headers and of the page's head.

use crawlgate_policy::robots_tag::{is_structured_list, merge_robots_tag, merge_x_robots_tag};
use std::sync::Arc;

use crawlgate_policy::{HtmlPlan, OriginHeaderMode, UrlControls};
use http::HeaderName;
use pingora::http::ResponseHeader;
use pingora::Result;

// Names, not strings: a string is parsed on every lookup. Pingora's
// inserts take `name.as_str()` (a `&'static str` costs no copy there).
static ROBOTS_TAG: HeaderName = HeaderName::from_static("robots-tag");
static X_ROBOTS_TAG: HeaderName = HeaderName::from_static("x-robots-tag");
static CONTENT_USAGE: HeaderName = HeaderName::from_static("content-usage");
static TDM_RESERVATION: HeaderName = HeaderName::from_static("tdm-reservation");
static TDM_POLICY: HeaderName = HeaderName::from_static("tdm-policy");

/// The fields the policy writes, in [`OriginFields`]'s bit order (the
/// `F_` indices).
static POLICY_FIELDS: [&HeaderName; 5] = [&ROBOTS_TAG, &X_ROBOTS_TAG, &CONTENT_USAGE, &TDM_RESERVATION, &TDM_POLICY];
const F_ROBOTS_TAG: usize = 0;
const F_X_ROBOTS_TAG: usize = 1;
const F_CONTENT_USAGE: usize = 2;
const F_TDM_RESERVATION: usize = 3;
const F_TDM_POLICY: usize = 4;

/// Which of `names` (at most 32) `map` carries, bit `i` for `names[i]`,
/// found in one pass over its names: a lookup or removal of a custom name
/// hashes it, and most messages carry none of these.
pub fn present<N: std::borrow::Borrow<HeaderName>>(map: &http::HeaderMap, names: &[N]) -> u32 {
    let mut bits = 0;
    for name in map.keys() {
        if let Some(i) = names.iter().position(|n| n.borrow() == name) {
            bits |= 1 << i;
        }
    }
    bits
}

/// The members of `names` whose bit [`present`] set in `bits`.
pub fn named<N>(bits: u32, names: &[N]) -> impl Iterator<Item = &N> {
    names.iter().enumerate().filter(move |(i, _)| bits & (1 << i) != 0).map(|(_, n)| n)
}

/// Which of the fields the policy writes ([`POLICY_FIELDS`]) the origin's
/// response carries, found in one pass over its names: a lookup of a
/// custom name hashes it, and most responses carry none of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OriginFields(u8);

impl OriginFields {
    /// The policy's fields in `resp`, as the origin sent it.
    pub fn of(resp: &ResponseHeader) -> OriginFields {
        // Five fields: the bits fit.
        OriginFields(present(&resp.headers, &POLICY_FIELDS) as u8)
    }

    /// Whether the origin sent `POLICY_FIELDS[i]`.
    fn has(self, i: usize) -> bool {
        self.0 & (1 << i) != 0
    }

    /// Whether the origin's response states its own TDM reservation.
    pub fn states_tdm(self) -> bool {
        self.0 & (1 << F_TDM_RESERVATION | 1 << F_TDM_POLICY) != 0
    }
}

/// `plan` without its TDMRep metas, for a response whose origin states its
/// own TDM reservation; `None` when nothing is left to insert.
pub fn without_tdm_metas(plan: &HtmlPlan) -> Option<Arc<HtmlPlan>> {
    let head: Vec<_> =
        plan.head.iter().filter(|h| !h.unless.iter().any(|u| u == "meta:tdm-reservation")).cloned().collect();
    if head.is_empty() && plan.directives.is_empty() {
        return None;
    }
    Some(Arc::new(HtmlPlan { head, ..plan.clone() }))
}

/// Adds the policy's headers to a proxied response. Upstream values that
/// are not structured fields are passed on verbatim, never dropped.
/// `origin`: [`OriginFields::of`] the response before this call.
pub fn apply(
    resp: &mut ResponseHeader,
    controls: &UrlControls,
    content_usage: OriginHeaderMode,
    origin: OriginFields,
) -> Result<()> {
    let origin_robots_tag = origin.has(F_ROBOTS_TAG);
    if let Some(ours) = controls.robots_tag.as_deref() {
        merge_header(resp, &ROBOTS_TAG, origin_robots_tag, &[ours], |upstream| merge_robots_tag(upstream, Some(ours)))?;
        if origin_robots_tag {
            move_unstructured_robots_tag(resp)?;
        }
    }
    if !controls.x_robots_tag.is_empty() {
        // Moving the origin's legacy Robots-Tag lines may have added some.
        let has = origin.has(F_X_ROBOTS_TAG) || (origin_robots_tag && resp.headers.contains_key(&X_ROBOTS_TAG));
        merge_header(resp, &X_ROBOTS_TAG, has, &controls.x_robots_tag, |upstream| {
            merge_x_robots_tag(upstream, &controls.x_robots_tag)
        })?;
    }
    if let Some(cu) = controls.content_usage.as_deref() {
        if !origin.has(F_CONTENT_USAGE) || content_usage == OriginHeaderMode::Replace {
            resp.insert_header(CONTENT_USAGE.as_str(), cu)?;
        }
    }
    if let Some(reservation) = controls.tdm_reservation {
        if !origin.states_tdm() {
            resp.insert_header(TDM_RESERVATION.as_str(), if reservation == 1 { "1" } else { "0" })?;
            if let Some(policy) = controls.tdm_policy.as_deref() {
                resp.insert_header(TDM_POLICY.as_str(), policy)?;
            }
        }
    }
    Ok(())
}

/// Connection-specific headers a proxy must not forward (RFC 9110 section
/// 7.6.1), beside those the origin names in `Connection`. `Upgrade` is kept
/// on a 101, where it names the protocol switched to. Names, not strings:
/// a string would be parsed on every response.
static HOP_BY_HOP: [HeaderName; 7] = [
    http::header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    HeaderName::from_static("proxy-connection"),
    http::header::TE,
    http::header::TRAILER,
    http::header::UPGRADE,
    http::header::PROXY_AUTHENTICATE,
];

/// Headers that frame the body: Pingora reads them to forward the body, so
/// `Connection` cannot make us remove them.
static FRAMING: [HeaderName; 2] = [http::header::CONTENT_LENGTH, http::header::TRANSFER_ENCODING];

/// Removes the origin's hop-by-hop headers from a response before it is
/// forwarded: the fields listed in `Connection` and the fixed set in
/// [`HOP_BY_HOP`]. Pingora writes its own `Connection` for HTTP/1.1.
pub fn strip_hop_by_hop(resp: &mut ResponseHeader) {
    for name in connection_options(resp) {
        if !FRAMING.contains(&name) {
            resp.remove_header(&name);
        }
    }
    let switching = resp.status == http::StatusCode::SWITCHING_PROTOCOLS;
    for name in &HOP_BY_HOP {
        let kept = switching && (name == http::header::CONNECTION || name == http::header::UPGRADE);
        if !kept && resp.headers.contains_key(name) {
            resp.remove_header(name);
        }
    }
}

/// The header names listed in the response's `Connection` fields, other
/// than the fixed hop-by-hop set (the usual `keep-alive` and `close` are
/// that set or no field name, and cost no allocation).
fn connection_options(resp: &ResponseHeader) -> Vec<HeaderName> {
    resp.headers
        .get_all(http::header::CONNECTION)
        .iter()
        .flat_map(|v| v.as_bytes().split(|&b| b == b','))
        .map(<[u8]>::trim_ascii)
        .filter(|n| !n.eq_ignore_ascii_case(b"keep-alive") && !n.eq_ignore_ascii_case(b"close"))
        .filter_map(|n| HeaderName::from_bytes(n).ok())
        .filter(|n| !HOP_BY_HOP.contains(n))
        .collect()
}

/// Sets header `name` to the policy's lines `ours` merged with the origin's
/// by `merge`. Most origins send neither header: the policy's lines are
/// then the merge's result as they are (they are already in its canonical
/// form; `tests::no_upstream_value_is_the_policys_own` holds us to it),
/// which saves parsing and serialising them on every response.
fn merge_header<S: AsRef<str>>(
    resp: &mut ResponseHeader,
    name: &'static HeaderName,
    present: bool,
    ours: &[S],
    merge: impl FnOnce(&[&[u8]]) -> Vec<Vec<u8>>,
) -> Result<()> {
    if !present {
        for line in ours {
            resp.append_header(name.as_str(), line.as_ref())?;
        }
        return Ok(());
    }
    let upstream = values(resp, name);
    let refs: Vec<&[u8]> = upstream.iter().map(Vec::as_slice).collect();
    replace(resp, name, merge(&refs))
}

/// Moves `Robots-Tag` lines that are not structured-field Lists (legacy
/// values such as `googlebot: noindex`) to `X-Robots-Tag`, whose readers
/// accept that syntax, so that `Robots-Tag` stays one valid List holding
/// the policy's directives.
fn move_unstructured_robots_tag(resp: &mut ResponseHeader) -> Result<()> {
    let lines = values(resp, &ROBOTS_TAG);
    if lines.iter().all(|l| is_structured_list(l)) {
        return Ok(());
    }
    let (structured, legacy): (Vec<Vec<u8>>, Vec<Vec<u8>>) = lines.into_iter().partition(|l| is_structured_list(l));
    replace(resp, &ROBOTS_TAG, structured)?;
    for line in legacy {
        if let Ok(v) = http::HeaderValue::from_bytes(&line) {
            resp.append_header(X_ROBOTS_TAG.as_str(), v)?;
        }
    }
    Ok(())
}

fn values(resp: &ResponseHeader, name: &HeaderName) -> Vec<Vec<u8>> {
    resp.headers.get_all(name).iter().map(|v| v.as_bytes().to_vec()).collect()
}

fn replace(resp: &mut ResponseHeader, name: &'static HeaderName, lines: Vec<Vec<u8>>) -> Result<()> {
    resp.remove_header(name);
    for line in lines {
        match http::HeaderValue::from_bytes(&line) {
            Ok(v) => {
                resp.append_header(name.as_str(), v)?;
            }
            Err(_) => {
                tracing::debug!(header = name.as_str(), "Dropped a merged header line that is not a valid field value")
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crawlgate_policy::robots_tag::TagRules;

    /// The fast path in `apply` (no upstream header: insert the policy's
    /// values as they are) gives what the merge gives.
    fn names(resp: &ResponseHeader) -> Vec<String> {
        let mut v: Vec<String> = resp.headers.keys().map(|k| k.as_str().to_owned()).collect();
        v.sort();
        v
    }

    #[test]
    fn hop_by_hop_headers_are_removed() {
        let mut resp = ResponseHeader::build(200, None).unwrap();
        for (k, v) in [
            ("Connection", "X-Secret, close"),
            ("connection", " X-Other ,Content-Length,transfer-encoding"),
            ("X-Secret", "s"),
            ("X-Other", "o"),
            ("X-Kept", "k"),
            ("Keep-Alive", "timeout=5"),
            ("Proxy-Connection", "keep-alive"),
            ("TE", "trailers"),
            ("Trailer", "X-Checksum"),
            ("Upgrade", "h2c"),
            ("Proxy-Authenticate", "Basic"),
            ("Content-Length", "5"),
        ] {
            resp.append_header(k.to_owned(), v).unwrap();
        }
        strip_hop_by_hop(&mut resp);
        assert_eq!(names(&resp), ["content-length", "x-kept"]);

        let mut switching = ResponseHeader::build(101, None).unwrap();
        for (k, v) in [("Connection", "upgrade"), ("Upgrade", "websocket"), ("Keep-Alive", "timeout=5")] {
            switching.append_header(k.to_owned(), v).unwrap();
        }
        strip_hop_by_hop(&mut switching);
        assert_eq!(names(&switching), ["connection", "upgrade"]);

        // Without Connection, the fixed set still goes; without any, nothing.
        let mut bare = ResponseHeader::build(200, None).unwrap();
        for (k, v) in [("Keep-Alive", "timeout=5"), ("TE", "trailers"), ("X-Kept", "k"), ("Content-Length", "5")] {
            bare.append_header(k.to_owned(), v).unwrap();
        }
        strip_hop_by_hop(&mut bare);
        assert_eq!(names(&bare), ["content-length", "x-kept"]);
        strip_hop_by_hop(&mut bare);
        assert_eq!(names(&bare), ["content-length", "x-kept"]);
    }

    #[test]
    fn origin_fields_are_found_in_one_pass() {
        let mut resp = ResponseHeader::build(200, None).unwrap();
        for (k, v) in
            [("Content-Type", "text/html"), ("ROBOTS-TAG", "noarchive"), ("TDM-Policy", "https://a.example/p")]
        {
            resp.append_header(k.to_owned(), v).unwrap();
        }
        let origin = OriginFields::of(&resp);
        assert_eq!(origin, OriginFields(0b10001));
        assert!(origin.has(F_ROBOTS_TAG) && !origin.has(F_X_ROBOTS_TAG) && !origin.has(F_CONTENT_USAGE));
        assert!(origin.states_tdm());
        let bare = OriginFields::of(&ResponseHeader::build(200, None).unwrap());
        assert_eq!(bare, OriginFields(0));
        assert!(!bare.states_tdm());
    }

    /// A legacy Robots-Tag line of the origin moves to X-Robots-Tag, and
    /// the policy's X-Robots-Tag lines are merged with it there.
    #[test]
    fn moved_legacy_lines_are_merged_with_the_policys() {
        let mut resp = ResponseHeader::build(200, None).unwrap();
        resp.append_header("Robots-Tag".to_owned(), "googlebot: noindex").unwrap();
        let controls = UrlControls {
            robots_tag: Some("*;nosnippet".into()),
            x_robots_tag: vec!["nosnippet".into()],
            ..Default::default()
        };
        let origin = OriginFields::of(&resp);
        apply(&mut resp, &controls, OriginHeaderMode::Keep, origin).unwrap();
        let lines = |name: &HeaderName| -> Vec<Vec<u8>> {
            resp.headers.get_all(name).iter().map(|v| v.as_bytes().to_vec()).collect()
        };
        assert_eq!(lines(&ROBOTS_TAG), vec![b"*;nosnippet".to_vec()]);
        assert_eq!(lines(&X_ROBOTS_TAG), merge_x_robots_tag(&[b"googlebot: noindex"], &controls.x_robots_tag));
    }

    #[test]
    fn no_upstream_value_is_the_policys_own() {
        let sets: &[&[(&str, &[&str])]] = &[
            &[("*", &["noindex"])],
            &[("*", &["noindex", "NoSnippet", "max-snippet:50"]), ("GPTBot", &["noai"])],
            &[("*", &["unavailable_after: 2026-12-31", "max-image-preview:large"]), ("CCBot", &["noai", "noimageai"])],
            &[("Google-Extended", &["noai"]), ("*", &["nofollow"])],
        ];
        for set in sets {
            let rules = TagRules::new(
                set.iter().map(|(t, r)| (t.to_string(), r.iter().map(|s| s.to_string()).collect())).collect(),
            )
            .unwrap();
            let ours = rules.robots_tag_value().unwrap_or_else(|| panic!("{set:?}: no value"));
            assert_eq!(merge_robots_tag(&[], Some(&ours)), vec![ours.clone().into_bytes()], "{set:?}");
            let lines = rules.x_robots_tag_values();
            let want: Vec<Vec<u8>> = lines.iter().map(|l| l.clone().into_bytes()).collect();
            assert_eq!(merge_x_robots_tag(&[], &lines), want, "{set:?}");
        }
    }
}
