//! The proxy's response-header work on any header set an origin can send:
//! `strip_hop_by_hop` then `apply`, in the order of the response filter.
//! The module is `crates/proxy/src/headers.rs` itself, compiled here.
//!
//! Input: byte 0 chooses the status (200 or 101), the Content-Usage mode
//! and whether the policy has X-Robots-Tag lines and a Content-Usage
//! value; byte 1 the policy's `*` rules, byte 2 a product token's; the rest
//! is header lines `name:value` split at `\n`. A name that is one digit
//! stands for a header the code treats specially (`0` is `robots-tag`).
//!
//! What must hold:
//! - nothing panics, `apply` never fails (an origin's header is passed
//!   on, never turned into a 500);
//! - after `strip_hop_by_hop` no header named in `Connection` (but the
//!   framing headers) and no fixed hop-by-hop header is left, except
//!   `Connection` and `Upgrade` on a 101;
//! - when the policy sets Robots-Tag, the field's lines joined by `, ` are
//!   one RFC 9651 List, holding each of the policy's tokens with each of
//!   its rules; an origin line that is not a List is in X-Robots-Tag;
//! - the origin's X-Robots-Tag lines are all still there, and the policy's
//!   lines are present;
//! - Content-Usage is the policy's when the origin sent none or the mode is
//!   `replace`, and the origin's lines unchanged otherwise.

#![no_main]

// The proxy uses functions of the module this target does not exercise.
#[allow(dead_code)]
#[path = "../../crates/proxy/src/headers.rs"]
mod headers;

use crawlgate_policy::robots_tag::{is_structured_list, TagRules};
use crawlgate_policy::{OriginHeaderMode, UrlControls};
use http::{HeaderName, HeaderValue};
use libfuzzer_sys::fuzz_target;
use pingora::http::ResponseHeader;

const NAMES: [&str; 10] = [
    "robots-tag",
    "x-robots-tag",
    "content-usage",
    "connection",
    "keep-alive",
    "upgrade",
    "te",
    "content-length",
    "transfer-encoding",
    "x-secret",
];
const HOP_BY_HOP: [&str; 7] =
    ["connection", "keep-alive", "proxy-connection", "te", "trailer", "upgrade", "proxy-authenticate"];
const RULES: [&str; 8] =
    ["noindex", "nofollow", "nosnippet", "noai", "max-snippet:50", "max-image-preview:standard", "noarchive", "all"];
const TOKENS: [&str; 4] = ["GPTBot", "googlebot", "CCBot", "Google-Extended"];

fn values(resp: &ResponseHeader, name: &str) -> Vec<Vec<u8>> {
    resp.headers.get_all(name).iter().map(|v| v.as_bytes().to_vec()).collect()
}

fuzz_target!(|data: &[u8]| {
    let &[flags, star, other, ref lines @ ..] = data else { return };
    let status = if flags & 1 != 0 { 101 } else { 200 };
    let mode = if flags & 2 != 0 { OriginHeaderMode::Replace } else { OriginHeaderMode::Keep };
    let pick =
        |mask: u8| RULES.iter().enumerate().filter(move |(i, _)| mask & (1 << i) != 0).map(|(_, r)| r.to_string());
    let mut entries = vec![("*".to_string(), pick(star).collect::<Vec<_>>())];
    if flags & 4 != 0 {
        entries.push((TOKENS[usize::from(flags >> 6)].to_string(), pick(other).collect()));
    }
    let Ok(rules) = TagRules::new(entries) else { unreachable!("RULES and TOKENS are valid") };
    let controls = UrlControls {
        robots_tag: rules.robots_tag_value(),
        x_robots_tag: if flags & 8 != 0 { rules.x_robots_tag_values() } else { Vec::new() },
        content_usage: (flags & 16 != 0).then(|| "train-ai=n".to_string()),
        html: None,
        tdm_reservation: (flags & 32 != 0).then_some(1),
        tdm_policy: None,
    };

    let Ok(mut resp) = ResponseHeader::build(status, None) else { unreachable!("200 and 101 are valid") };
    for line in lines.split(|&b| b == b'\n') {
        let Some(colon) = line.iter().position(|&b| b == b':') else { continue };
        let (name, value) = (&line[..colon], &line[colon + 1..]);
        let name = match name {
            [d @ b'0'..=b'9'] => HeaderName::from_static(NAMES[usize::from(d - b'0')]),
            _ => match HeaderName::from_bytes(name) {
                Ok(n) => n,
                // No HTTP parser hands such a name on.
                Err(_) => continue,
            },
        };
        let Ok(value) = HeaderValue::from_bytes(value) else { continue };
        if resp.append_header(name, value).is_err() {
            return;
        }
    }
    let origin = resp.clone();

    headers::strip_hop_by_hop(&mut resp);
    let switching = status == 101;
    for name in HOP_BY_HOP {
        if !(switching && matches!(name, "connection" | "upgrade")) {
            assert!(!resp.headers.contains_key(name), "hop-by-hop {name} left");
        }
    }
    for v in origin.headers.get_all(http::header::CONNECTION) {
        for n in v.as_bytes().split(|&b| b == b',').map(<[u8]>::trim_ascii) {
            let Ok(n) = HeaderName::from_bytes(n) else { continue };
            let kept = matches!(n.as_str(), "content-length" | "transfer-encoding")
                || (switching && matches!(n.as_str(), "connection" | "upgrade"));
            assert!(kept || !resp.headers.contains_key(&n), "{n} named in Connection left");
        }
    }
    let stripped = resp.clone();

    let origin_fields = headers::OriginFields::of(&resp);
    if let Err(e) = headers::apply(&mut resp, &controls, mode, origin_fields) {
        panic!("apply failed: {e}");
    }

    let robots = values(&resp, "robots-tag");
    let x_robots = values(&resp, "x-robots-tag");
    if let Some(ours) = &controls.robots_tag {
        let joined = robots.join(&b", "[..]);
        let Ok(text) = std::str::from_utf8(&joined) else { panic!("Robots-Tag is not UTF-8: {joined:?}") };
        let list = sfv::Parser::new(text)
            .parse::<sfv::List>()
            .unwrap_or_else(|e| panic!("Robots-Tag {text:?} is not a List: {e}"));
        let Ok(policy) = sfv::Parser::new(ours.as_str()).parse::<sfv::List>() else {
            panic!("the policy's Robots-Tag {ours:?} is not a List")
        };
        for entry in &policy {
            let sfv::ListEntry::Item(want) = entry else { continue };
            let Some(tok) = want.bare_item.as_token() else { continue };
            // Every member for the token, not only the first: an origin line
            // with a member that is not a token passes on as it came, so the
            // token may appear again before the merged line.
            let members: Vec<&sfv::Item> = list
                .iter()
                .filter_map(|e| match e {
                    sfv::ListEntry::Item(i) => Some(i),
                    sfv::ListEntry::InnerList(_) => None,
                })
                .filter(|i| i.bare_item.as_token().is_some_and(|t| t.as_str().eq_ignore_ascii_case(tok.as_str())))
                .collect();
            assert!(!members.is_empty(), "policy token {tok:?} missing from Robots-Tag {text:?}");
            for (k, _) in &want.params {
                assert!(
                    members.iter().any(|m| m.params.get(k).is_some()),
                    "rule {k:?} of {tok:?} missing from Robots-Tag {text:?}"
                );
            }
        }
        for line in values(&stripped, "robots-tag") {
            if !is_structured_list(&line) {
                assert!(x_robots.contains(&line), "legacy Robots-Tag {line:?} not moved to X-Robots-Tag");
            }
        }
    } else {
        assert_eq!(robots, values(&stripped, "robots-tag"), "Robots-Tag changed without a policy value");
    }
    for line in values(&stripped, "x-robots-tag") {
        assert!(x_robots.contains(&line), "origin X-Robots-Tag {line:?} dropped");
    }
    let norm =
        |v: &[u8]| String::from_utf8_lossy(v).split_whitespace().collect::<Vec<_>>().join(" ").to_ascii_lowercase();
    for line in &controls.x_robots_tag {
        let want = norm(line.as_bytes());
        assert!(x_robots.iter().any(|l| norm(l) == want), "policy X-Robots-Tag {line:?} missing");
    }
    if controls.x_robots_tag.is_empty() && controls.robots_tag.is_none() {
        assert_eq!(x_robots, values(&stripped, "x-robots-tag"), "X-Robots-Tag changed without a policy value");
    }
    let origin_cu = values(&stripped, "content-usage");
    let cu = values(&resp, "content-usage");
    match &controls.content_usage {
        Some(ours) if origin_cu.is_empty() || mode == OriginHeaderMode::Replace => {
            assert_eq!(cu, vec![ours.as_bytes().to_vec()], "Content-Usage is not the policy's");
        }
        _ => assert_eq!(cu, origin_cu, "the origin's Content-Usage changed"),
    }
});
