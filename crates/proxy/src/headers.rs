//! Response headers from the URL-level controls: `Robots-Tag` and
//! `X-Robots-Tag` merged with the origin's (the merge itself is the policy
//! crate's), and `Content-Usage`.
//!
//! Content-Usage: an origin's own header is kept unless the policy says
//! `upstream.content_usage = "replace"`; the origin knows its content best,
//! and the policy's value is a site-wide default.

use crawlgate_policy::robots_tag::{merge_robots_tag, merge_x_robots_tag};
use crawlgate_policy::{OriginHeaderMode, UrlControls};
use pingora::http::ResponseHeader;
use pingora::Result;

const ROBOTS_TAG: &str = "robots-tag";
const X_ROBOTS_TAG: &str = "x-robots-tag";
const CONTENT_USAGE: &str = "content-usage";

/// Adds the policy's headers to a proxied response. Upstream values that
/// are not structured fields are passed on verbatim, never dropped.
pub fn apply(resp: &mut ResponseHeader, controls: &UrlControls, content_usage: OriginHeaderMode) -> Result<()> {
    if let Some(ours) = controls.robots_tag.as_deref() {
        let upstream = values(resp, ROBOTS_TAG);
        let refs: Vec<&[u8]> = upstream.iter().map(Vec::as_slice).collect();
        let merged = merge_robots_tag(&refs, Some(ours));
        replace(resp, ROBOTS_TAG, merged)?;
    }
    if !controls.x_robots_tag.is_empty() {
        let upstream = values(resp, X_ROBOTS_TAG);
        let refs: Vec<&[u8]> = upstream.iter().map(Vec::as_slice).collect();
        let merged = merge_x_robots_tag(&refs, &controls.x_robots_tag);
        replace(resp, X_ROBOTS_TAG, merged)?;
    }
    if let Some(cu) = controls.content_usage.as_deref() {
        let origin_has = resp.headers.contains_key(CONTENT_USAGE);
        if !origin_has || content_usage == OriginHeaderMode::Replace {
            resp.insert_header(CONTENT_USAGE, cu)?;
        }
    }
    Ok(())
}

fn values(resp: &ResponseHeader, name: &str) -> Vec<Vec<u8>> {
    resp.headers.get_all(name).iter().map(|v| v.as_bytes().to_vec()).collect()
}

fn replace(resp: &mut ResponseHeader, name: &'static str, lines: Vec<Vec<u8>>) -> Result<()> {
    resp.remove_header(name);
    for line in lines {
        match http::HeaderValue::from_bytes(&line) {
            Ok(v) => {
                resp.append_header(name, v)?;
            }
            Err(_) => tracing::debug!(header = name, "Dropped a merged header line that is not a valid field value"),
        }
    }
    Ok(())
}
