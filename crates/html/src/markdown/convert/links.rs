//! Link and image addresses: made absolute against the page URL or its
//! `<base href>` (WHATWG URL), the schemes that are not a place to go
//! left out, and the characters a Markdown link destination would misread
//! percent-encoded.

use url::Url;

use crate::markdown::entities::decoded;

/// What relative addresses resolve against.
pub(super) struct Base {
    url: Option<Url>,
    /// `scheme://host[:port]` of an http(s) `url`: an absolute-path link
    /// is this plus the path (see [`is_plain_absolute_path`]).
    origin: Option<String>,
}

impl Base {
    /// The page's URL, until a `<base href>` says otherwise.
    pub(super) fn new(page_url: &str) -> Base {
        let url = Url::parse(page_url).ok();
        Base { origin: url.as_ref().and_then(origin_of), url }
    }

    /// The page's `<base href>`, resolved against the page URL; left as it
    /// was when it does not parse.
    pub(super) fn rebase(&mut self, href: &str) {
        let href = decoded(href);
        if let Some(b) =
            self.url.as_ref().and_then(|b| b.join(href.trim()).ok()).or_else(|| Url::parse(href.trim()).ok())
        {
            self.origin = origin_of(&b);
            self.url = Some(b);
        }
    }

    /// A link or image address made absolute; `None` for an empty one and
    /// for the schemes that are not a place to go (`javascript:`,
    /// `vbscript:`, `data:`).
    pub(super) fn absolute(&self, raw: &str) -> Option<String> {
        let decoded_raw;
        let raw = if raw.contains('&') {
            decoded_raw = decoded(raw);
            decoded_raw.as_str()
        } else {
            raw
        };
        let raw = raw.trim_matches(|c: char| c.is_ascii_whitespace());
        if raw.is_empty() {
            return None;
        }
        if let Some(origin) = self.origin.as_deref().filter(|_| is_plain_absolute_path(raw)) {
            let mut dest = String::with_capacity(origin.len() + raw.len() + 8);
            dest.push_str(origin);
            push_destination(raw, &mut dest);
            return Some(dest);
        }
        let scheme = raw.split_once(':').map(|(s, _)| s.to_ascii_lowercase());
        if matches!(scheme.as_deref(), Some("javascript" | "vbscript" | "data")) {
            return None;
        }
        // A URL parser drops tabs and newlines (`java&#9;script:`): the
        // scheme is checked again on what it made of the address.
        let url = match self.url.as_ref().and_then(|b| b.join(raw).ok()) {
            Some(u) if matches!(u.scheme(), "javascript" | "vbscript" | "data") => return None,
            Some(u) => u.to_string(),
            None if raw.contains(['\t', '\n', '\r']) => return None,
            None => raw.to_string(),
        };
        let mut dest = String::with_capacity(url.len());
        push_destination(&url, &mut dest);
        Some(dest)
    }
}

/// Whether a page's canonical URL may be what its links resolve against:
/// an http(s) URL with a host and no credentials, naming the site the page
/// was requested from. The same site is the same host, or one a subdomain
/// of the other (`www.example.com` and `example.com`); a request to an IP
/// address or `localhost`, or without a host, names no site, and the
/// canonical's is taken. A syndicated page whose canonical names another
/// publisher keeps its links on this site.
pub(super) fn same_site(canonical: &str, page_url: &str) -> bool {
    let Ok(c) = Url::parse(canonical) else { return false };
    let Some(host) = c.host_str().filter(|_| matches!(c.scheme(), "http" | "https")) else { return false };
    if !c.username().is_empty() || c.password().is_some() {
        return false;
    }
    let page = Url::parse(page_url).ok();
    let Some(page_host) = page.as_ref().and_then(|p| p.host()) else { return true };
    let page_host = match page_host {
        url::Host::Domain(d) if !d.eq_ignore_ascii_case("localhost") => d.to_ascii_lowercase(),
        _ => return true,
    };
    let host = host.to_ascii_lowercase();
    let within = |a: &str, b: &str| a.len() > b.len() && a.ends_with(b) && a.as_bytes()[a.len() - b.len() - 1] == b'.';
    host == page_host || within(&host, &page_host) || within(&page_host, &host)
}

/// Link destination characters Markdown would misread, percent-encoded.
fn push_destination(url: &str, dest: &mut String) {
    for c in url.chars() {
        match c {
            ' ' => dest.push_str("%20"),
            '(' => dest.push_str("%28"),
            ')' => dest.push_str("%29"),
            '<' => dest.push_str("%3C"),
            '>' => dest.push_str("%3E"),
            c => dest.push(c),
        }
    }
}

/// `scheme://host[:port]` of an http(s) URL with a host.
fn origin_of(base: &Url) -> Option<String> {
    (matches!(base.scheme(), "http" | "https") && base.has_host())
        .then(|| base[..url::Position::BeforePath].to_string())
}

/// Whether `href` is a path from the root that a URL parser keeps as it
/// is when it joins it to an http(s) base (WHATWG URL): one `/` first, only
/// characters no percent-encode set of the path, query or fragment holds,
/// no `%` (`%2e` is a dot), no `\` (a slash there), no `.` or `..`
/// segment. Joining one is then the base's origin and the path, without
/// running the parser.
fn is_plain_absolute_path(href: &str) -> bool {
    let b = href.as_bytes();
    b.first() == Some(&b'/')
        && b.get(1) != Some(&b'/')
        && b.iter().all(|&c| c.is_ascii_alphanumeric() || b"-._~/!$&()*+,;=:@?#".contains(&c))
        && !href.split(['/', '?', '#']).any(|seg| seg == "." || seg == "..")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The joins taken without the URL parser give what it gives.
    #[test]
    fn plain_absolute_paths_join_as_the_parser_does() {
        let hrefs = [
            "/",
            "/more",
            "/a/b/c.html",
            "/a//b",
            "/a/b/",
            "/a?x=1&y=2",
            "/a?",
            "/a#",
            "/a#f?g#h",
            "/a?q=../x",
            "/p;a=b,c:d@e!f$g*h+i~j",
            "/a(1)",
            "/.well-known/x",
            "/a/b..",
            "/a/..b",
            "/a.",
            "/_-~",
            "/a/./b",
            "/a/../b",
            "/.",
            "/..",
            "/a/.",
            "/a/..",
            "//host/x",
            "/a b",
            "/a%2e",
            "/a\\b",
            "/é",
            "/a'b",
            "/a?x='y'",
            "/a`b",
            "/a{b}",
            "/a|b",
            "/a^b",
            "/a[b]",
            "/a\"b",
            "/a\tb",
        ];
        for base in ["https://www.example.com/dir/page.html?q#f", "http://user:pw@EXAMPLE.com:8080/x", "https://h/"] {
            let url = Url::parse(base).unwrap();
            let origin = origin_of(&url).unwrap();
            for href in hrefs {
                if is_plain_absolute_path(href) {
                    assert_eq!(format!("{origin}{href}"), url.join(href).unwrap().to_string(), "{base} {href}");
                }
            }
        }
        assert!(is_plain_absolute_path("/more"));
        let sites = [
            ("https://www.example.com/p", "http://www.example.com/p", true),
            ("https://www.example.com/p", "http://example.com/p", true),
            ("https://example.com/p", "http://www.EXAMPLE.com/p", true),
            ("https://www.example.com/p", "http://127.0.0.1:21100/p", true),
            ("https://www.example.com/p", "http://[::1]:8080/p", true),
            ("https://www.example.com/p", "http://localhost:8080/p", true),
            ("https://www.example.com/p", "", true),
            ("https://other.example/p", "http://www.example.com/p", false),
            ("https://badexample.com/p", "http://example.com/p", false),
            ("https://u:p@www.example.com/p", "http://www.example.com/p", false),
            ("ftp://www.example.com/p", "http://www.example.com/p", false),
            ("javascript:alert(1)", "http://127.0.0.1/p", false),
            ("not a url", "http://127.0.0.1/p", false),
        ];
        for (canonical, page, want) in sites {
            assert_eq!(same_site(canonical, page), want, "{canonical} {page}");
        }
        assert!(!is_plain_absolute_path("/a/../b"));
        assert!(!is_plain_absolute_path("//host/x"));
        assert!(origin_of(&Url::parse("file:///etc/x").unwrap()).is_none());
        assert!(origin_of(&Url::parse("mailto:a@b").unwrap()).is_none());
    }
}
