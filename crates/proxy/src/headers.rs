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
        merge_header(resp, ROBOTS_TAG, &[ours], |upstream| merge_robots_tag(upstream, Some(ours)))?;
    }
    if !controls.x_robots_tag.is_empty() {
        merge_header(resp, X_ROBOTS_TAG, &controls.x_robots_tag, |upstream| {
            merge_x_robots_tag(upstream, &controls.x_robots_tag)
        })?;
    }
    if let Some(cu) = controls.content_usage.as_deref() {
        let origin_has = resp.headers.contains_key(CONTENT_USAGE);
        if !origin_has || content_usage == OriginHeaderMode::Replace {
            resp.insert_header(CONTENT_USAGE, cu)?;
        }
    }
    Ok(())
}

/// Sets header `name` to the policy's lines `ours` merged with the origin's
/// by `merge`. Most origins send neither header: the policy's lines are
/// then the merge's result as they are (they are already in its canonical
/// form; `tests::no_upstream_value_is_the_policys_own` holds us to it),
/// which saves parsing and serialising them on every response.
fn merge_header<S: AsRef<str>>(
    resp: &mut ResponseHeader,
    name: &'static str,
    ours: &[S],
    merge: impl FnOnce(&[&[u8]]) -> Vec<Vec<u8>>,
) -> Result<()> {
    if !resp.headers.contains_key(name) {
        for line in ours {
            resp.append_header(name, line.as_ref())?;
        }
        return Ok(());
    }
    let upstream = values(resp, name);
    let refs: Vec<&[u8]> = upstream.iter().map(Vec::as_slice).collect();
    replace(resp, name, merge(&refs))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crawlgate_policy::robots_tag::TagRules;

    /// The fast path in `apply` (no upstream header: insert the policy's
    /// values as they are) gives what the merge gives.
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
            .unwrap_or_else(|e| panic!("{e}"));
            let ours = rules.robots_tag_value().unwrap_or_else(|| panic!("{set:?}: no value"));
            assert_eq!(merge_robots_tag(&[], Some(&ours)), vec![ours.clone().into_bytes()], "{set:?}");
            let lines = rules.x_robots_tag_values();
            let want: Vec<Vec<u8>> = lines.iter().map(|l| l.clone().into_bytes()).collect();
            assert_eq!(merge_x_robots_tag(&[], &lines), want, "{set:?}");
        }
    }
}
