//! Which converted pages the Markdown cache may keep and which requests it
//! may answer (issue 37: Markdown once per version of a page). Pure
//! decisions over header values; the proxy keeps the entries and asks the
//! origin to revalidate them.
//!
//! The cache is a shared cache in RFC 9111's sense: one entry answers many
//! clients. So it stores only what the origin marks as the same for
//! everybody, and never anything paid for:
//! - the request: a GET without `Cookie` or `Authorization` (RFC 9111
//!   section 3.5: a shared cache does not reuse a response to an
//!   authenticated request), without preconditions or a `Range` (those
//!   go to the origin as they are), and not priced (a paid page is the
//!   payer's alone);
//! - the response: a 200 with a validator (`ETag` or `Last-Modified`: every
//!   reuse is revalidated by a conditional request, so no freshness is
//!   computed), no `Cache-Control: private` or `no-store` (section 5.2.2),
//!   no `Set-Cookie`, and a `Vary` of at most `Accept` and
//!   `Accept-Encoding` (the two the proxy itself varies on; any other
//!   field, `*` included, may select per-client content).

/// Why a request is not answered from the cache, or a response not kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotCached {
    /// Not a GET.
    Method,
    /// The request is priced (charged, or states its price).
    Priced,
    /// The request carries `Cookie` or `Authorization`.
    Credentials,
    /// The request carries a precondition or a `Range`.
    Conditional,
    /// The response is not a 200.
    Status,
    /// The response has neither `ETag` nor `Last-Modified`.
    NoValidator,
    /// `Cache-Control: private` or `no-store`.
    CacheControl,
    /// The response sets a cookie.
    SetCookie,
    /// The response varies on a field other than `Accept` and
    /// `Accept-Encoding`.
    Vary,
}

/// The request-side facts.
#[derive(Clone, Copy, Debug, Default)]
pub struct Request {
    /// The method is GET.
    pub get: bool,
    /// The verdict prices the request.
    pub priced: bool,
    /// A `Cookie` or `Authorization` field is present.
    pub credentials: bool,
    /// An `If-*` precondition or a `Range` field is present.
    pub conditional: bool,
}

/// Whether the cache may answer (and later keep the answer to) a request
/// that negotiated Markdown.
pub fn request(r: Request) -> Result<(), NotCached> {
    let Request { get, priced, credentials, conditional } = r;
    if !get {
        Err(NotCached::Method)
    } else if priced {
        Err(NotCached::Priced)
    } else if credentials {
        Err(NotCached::Credentials)
    } else if conditional {
        Err(NotCached::Conditional)
    } else {
        Ok(())
    }
}

/// The response-side facts: the origin's fields as they reached the
/// proxy (before the proxy's own `Vary` is added).
#[derive(Clone, Copy, Debug)]
pub struct Response<'a, S: AsRef<str>> {
    /// Its status code.
    pub status: u16,
    /// `ETag`, if any.
    pub etag: Option<&'a str>,
    /// `Last-Modified`, if any.
    pub last_modified: Option<&'a str>,
    /// `Cache-Control` lines.
    pub cache_control: &'a [S],
    /// `Vary` lines.
    pub vary: &'a [S],
    /// A `Set-Cookie` field is present.
    pub set_cookie: bool,
}

/// What a conditional request revalidating an entry sends.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Validators {
    /// For `If-None-Match`.
    pub etag: Option<String>,
    /// For `If-Modified-Since`.
    pub last_modified: Option<String>,
}

/// Whether a converted response may be kept, and with which validators it
/// is revalidated.
pub fn storable<S: AsRef<str>>(r: Response<'_, S>) -> Result<Validators, NotCached> {
    let Response { status, etag, last_modified, cache_control, vary, set_cookie } = r;
    if status != 200 {
        return Err(NotCached::Status);
    }
    let directives = || cache_control.iter().flat_map(|l| l.as_ref().split(','));
    if directives().any(|d| {
        let name = d.split('=').next().unwrap_or("").trim();
        name.eq_ignore_ascii_case("private") || name.eq_ignore_ascii_case("no-store")
    }) {
        return Err(NotCached::CacheControl);
    }
    if set_cookie {
        return Err(NotCached::SetCookie);
    }
    let other_vary = vary
        .iter()
        .flat_map(|l| l.as_ref().split(','))
        .map(str::trim)
        .any(|f| !(f.is_empty() || f.eq_ignore_ascii_case("accept") || f.eq_ignore_ascii_case("accept-encoding")));
    if other_vary {
        return Err(NotCached::Vary);
    }
    let clean = |v: Option<&str>| v.map(str::trim).filter(|v| !v.is_empty() && v.len() <= 1024).map(str::to_string);
    let validators = Validators { etag: clean(etag), last_modified: clean(last_modified) };
    if validators.etag.is_none() && validators.last_modified.is_none() {
        return Err(NotCached::NoValidator);
    }
    Ok(validators)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_the_cache_answers() {
        let ok = Request { get: true, ..Request::default() };
        assert_eq!(request(ok), Ok(()));
        assert_eq!(request(Request { get: false, ..ok }), Err(NotCached::Method));
        assert_eq!(request(Request { priced: true, ..ok }), Err(NotCached::Priced));
        assert_eq!(request(Request { credentials: true, ..ok }), Err(NotCached::Credentials));
        assert_eq!(request(Request { conditional: true, ..ok }), Err(NotCached::Conditional));
        assert_eq!(request(Request { priced: true, credentials: true, ..ok }), Err(NotCached::Priced));
    }

    #[test]
    fn responses_the_cache_keeps() {
        type Case<'a> =
            (u16, Option<&'a str>, Option<&'a str>, &'a [&'a str], &'a [&'a str], bool, Result<(), NotCached>);
        let cases: &[Case<'_>] = &[
            (200, Some("\"p1\""), None, &[], &[], false, Ok(())),
            (200, None, Some("Sun, 29 Nov 2026 03:00:00 GMT"), &[], &[], false, Ok(())),
            (200, None, None, &[], &[], false, Err(NotCached::NoValidator)),
            (200, Some("  "), None, &[], &[], false, Err(NotCached::NoValidator)),
            (203, Some("\"p1\""), None, &[], &[], false, Err(NotCached::Status)),
            (206, Some("\"p1\""), None, &[], &[], false, Err(NotCached::Status)),
            (200, Some("\"p1\""), None, &["max-age=60, Private"], &[], false, Err(NotCached::CacheControl)),
            (200, Some("\"p1\""), None, &["public", "no-store"], &[], false, Err(NotCached::CacheControl)),
            (200, Some("\"p1\""), None, &["private=\"set-cookie\""], &[], false, Err(NotCached::CacheControl)),
            // no-cache: reuse after revalidation, which every hit does.
            (200, Some("\"p1\""), None, &["no-cache, max-age=0"], &[], false, Ok(())),
            (200, Some("\"p1\""), None, &[], &[], true, Err(NotCached::SetCookie)),
            (200, Some("\"p1\""), None, &[], &["Accept-Encoding", "accept"], false, Ok(())),
            (200, Some("\"p1\""), None, &[], &["Accept, Cookie"], false, Err(NotCached::Vary)),
            (200, Some("\"p1\""), None, &[], &["*"], false, Err(NotCached::Vary)),
            (200, Some("\"p1\""), None, &[], &["User-Agent"], false, Err(NotCached::Vary)),
        ];
        for (status, etag, lm, cc, vary, set_cookie, want) in cases {
            let r = Response {
                status: *status,
                etag: *etag,
                last_modified: *lm,
                cache_control: cc,
                vary,
                set_cookie: *set_cookie,
            };
            assert_eq!(storable(r).map(|_| ()), *want, "{r:?}");
        }
        let r = Response {
            status: 200,
            etag: Some(" \"p1\" "),
            last_modified: Some("Sun, 29 Nov 2026 03:00:00 GMT"),
            cache_control: &[] as &[&str],
            vary: &[],
            set_cookie: false,
        };
        assert_eq!(
            storable(r),
            Ok(Validators { etag: Some("\"p1\"".into()), last_modified: Some("Sun, 29 Nov 2026 03:00:00 GMT".into()) })
        );
    }
}
