//! The canonical form RFC 9309 compares paths and patterns in (octets
//! outside US-ASCII percent-encoded, unreserved characters decoded, hex
//! digits upper-case), and the classification and normalisation of the
//! request targets the proxy decides on (RFC 9112 section 3.2).

use std::borrow::Cow;

/// Why a request target cannot be decided on (the proxy answers 400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PathError {
    /// Not origin-form (`/path`) or absolute-form (`http://host/path`).
    #[error("request target must start with '/' or be an absolute http(s) URL")]
    NotOriginForm,
    /// A `%` not followed by two hex digits.
    #[error("invalid percent-escape at byte {0}")]
    BadEscape(usize),
    /// A control character in the target.
    #[error("control character at byte {0}")]
    ControlChar(usize),
    /// Asterisk-form (`*`) with a method other than OPTIONS (RFC 9112
    /// section 3.2.4).
    #[error("asterisk-form target '*' is only valid with OPTIONS")]
    AsteriskForm,
    /// The target's bytes are not UTF-8.
    #[error("request target is not valid UTF-8")]
    NotUtf8,
    /// An absolute-form target without a host (`http:///x`).
    #[error("absolute-form target has no host")]
    NoHost,
    /// A `#` in the target: RFC 9112 section 3.2 request-target has no
    /// fragment, so a client that sends one means something no rule names.
    #[error("request target contains '#' (a fragment is not part of a request target)")]
    Fragment,
}

/// A request target the proxy may decide on and forward (RFC 9112 section
/// 3.2): origin-form, absolute-form with an `http`/`https` scheme, or
/// asterisk-form with OPTIONS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestTarget<'a> {
    /// The canonical path and query the policy decides on.
    pub canonical: Cow<'a, str>,
    /// The target to send upstream instead of the client's, when the two
    /// differ: the origin-form of an absolute-form target. `None`: forward
    /// the client's target unchanged, which is origin-form and resolves to
    /// the canonical path.
    pub forward: Option<Cow<'a, str>>,
}

/// Classifies a raw request target and returns what the decision is made
/// on and what is forwarded, so that the two name the same resource on any
/// origin. Anything that is not origin-form, absolute-form (`http(s)://`)
/// or asterisk-form with OPTIONS is an error (the proxy answers 400): an
/// origin may resolve `private/x`, `%2Fprivate/x` or `x:/private/x` to
/// `/private/x` while no rule could be applied to it. So is a target with a
/// `#` anywhere (`#/private/x`, `/p#f`): a request target has no fragment.
///
/// Asterisk-form is decided as `/` (a crawler kept out of the whole site is
/// kept out of server-wide OPTIONS too) and forwarded as `*`.
pub fn classify_request_target(raw: &[u8], is_options: bool) -> Result<RequestTarget<'_>, PathError> {
    let raw = std::str::from_utf8(raw).map_err(|_| PathError::NotUtf8)?;
    if memchr::memchr(b'#', raw.as_bytes()).is_some() {
        return Err(PathError::Fragment);
    }
    if raw == "*" {
        return if is_options {
            Ok(RequestTarget { canonical: Cow::Borrowed("/"), forward: None })
        } else {
            Err(PathError::AsteriskForm)
        };
    }
    if raw.starts_with('/') {
        return Ok(RequestTarget { canonical: normalize_request_target(raw)?, forward: None });
    }
    for scheme in ["http://", "https://"] {
        if raw.get(..scheme.len()).is_some_and(|s| s.eq_ignore_ascii_case(scheme)) {
            let rest = &raw[scheme.len()..];
            let end = rest.find(['/', '?']).unwrap_or(rest.len());
            if end == 0 {
                return Err(PathError::NoHost);
            }
            let tail = &rest[end..];
            let forward = match tail.as_bytes().first() {
                Some(b'/') => Cow::Borrowed(tail),
                _ => Cow::Owned(format!("/{tail}")),
            };
            let canonical = Cow::Owned(normalize_request_target(&forward)?.into_owned());
            return Ok(RequestTarget { canonical, forward: Some(forward) });
        }
    }
    Err(PathError::NotOriginForm)
}

/// The request-target of an HTTP/1 request header, as the request line
/// (RFC 9112 section 3) carries it: the bytes between the method and the
/// version. Empty lines before the request line are skipped (section 2.2).
/// `None` when the header has no such line. The proxy reads it because
/// its HTTP library drops a fragment from the target it hands on, and a
/// target with `#` must be refused, not decided without it.
pub fn request_line_target(header: &[u8]) -> Option<&[u8]> {
    let start = header.iter().position(|&b| b != b'\r' && b != b'\n')?;
    let rest = &header[start..];
    let line = &rest[..memchr::memchr(b'\n', rest).unwrap_or(rest.len())];
    let mut parts = line.split(|&b| b == b' ');
    let _method = parts.next()?;
    let target = parts.next()?;
    parts.next()?;
    Some(target)
}

/// Whether the HTTP/1 request begun in `buf` has an absolute-form target
/// (`http://` or `https://`, any case), judged from its request line's
/// first bytes: the proxy reads such a request's whole header before
/// handing it on, for [`host_from_absolute_form`].
pub fn starts_absolute_form(buf: &[u8]) -> bool {
    let Some(start) = buf.iter().position(|&b| b != b'\r' && b != b'\n') else { return false };
    let rest = &buf[start..];
    let Some(space) = memchr::memchr2(b' ', b'\n', rest) else { return false };
    if rest[space] != b' ' {
        return false;
    }
    let target = &rest[space + 1..];
    // At least `http:` seen, so that `/http://` or `htt...` is not taken.
    ["http://", "https://"].iter().any(|scheme| {
        let n = target.len().min(scheme.len());
        n >= 5 && target[..n].eq_ignore_ascii_case(&scheme.as_bytes()[..n])
    })
}

/// An HTTP/1 request header (and whatever follows it in `buf`) with its
/// `Host` field set to the authority of its absolute-form target, when the
/// two differ: RFC 9112 section 3.2.2 has the target's authority win and
/// the `Host` field ignored. `None` when nothing is to change: an
/// origin-form target, no or several `Host` lines, an authority with
/// userinfo or a backslash, or a header not complete in `buf`. The proxy's
/// HTTP library refuses such a request with a 400 of its own, before any
/// of crawlgate's hooks runs (so with no access log line); with the field
/// replaced it is decided and logged like any other.
pub fn host_from_absolute_form(buf: &[u8]) -> Option<Vec<u8>> {
    let target = request_line_target(buf)?;
    let scheme = ["http://", "https://"]
        .into_iter()
        .find(|s| target.get(..s.len()).is_some_and(|t| t.eq_ignore_ascii_case(s.as_bytes())))?;
    let rest = &target[scheme.len()..];
    let authority = &rest[..rest.iter().position(|&b| matches!(b, b'/' | b'?' | b'#')).unwrap_or(rest.len())];
    if authority.is_empty() || authority.iter().any(|&b| matches!(b, b'@' | b'\\' | b' ' | b'\t')) {
        return None;
    }
    // The header's lines after the request line, up to the empty line.
    let line_start = buf.iter().position(|&b| b != b'\r' && b != b'\n')?;
    let mut at = line_start + memchr::memchr(b'\n', &buf[line_start..])? + 1;
    let mut host: Option<(usize, usize)> = None;
    loop {
        let end = at + memchr::memchr(b'\n', &buf[at..])?;
        let line = &buf[at..end];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            break;
        }
        if line.len() > 5 && line[..5].eq_ignore_ascii_case(b"host:") {
            if host.is_some() {
                return None;
            }
            host = Some((at + 5, at + line.len()));
        }
        at = end + 1;
    }
    let (from, to) = host?;
    if buf[from..to].trim_ascii() == authority {
        return None;
    }
    let mut out = Vec::with_capacity(buf.len() + authority.len());
    out.extend_from_slice(&buf[..from]);
    out.push(b' ');
    out.extend_from_slice(authority);
    out.extend_from_slice(&buf[to..]);
    Some(out)
}

/// Normalises a request target into the canonical path and query the
/// policy decides on, so that no spelling reaches a blocked resource:
///
/// - absolute-form targets (`http://host/p`) keep their path and query;
///   a fragment is dropped; an empty path is `/`;
/// - percent-escapes are canonicalised (unreserved characters decoded, hex
///   upper-case); `%2F` is decoded to `/` too, because most origins and
///   frameworks decode it before routing; an invalid escape is an error;
/// - `\` counts as `/` (as in WHATWG URL parsing and IIS);
/// - `;` path parameters are removed from each segment (as servlet
///   containers do before routing: `/secret;x/y` is `/secret/y`);
/// - repeated slashes collapse to one (as most origins resolve them);
/// - dot segments are removed (RFC 3986 5.2.4), including encoded dots.
///
/// The query is canonicalised but otherwise kept. The proxy forwards an
/// origin-form target as the client sent it (see
/// [`classify_request_target`] for the other forms).
pub fn normalize_request_target(raw: &str) -> Result<Cow<'_, str>, PathError> {
    if is_plain_path(raw.as_bytes()) {
        return Ok(Cow::Borrowed(raw));
    }
    normalize_slow(raw)
}

/// Whether `s` is a path that is already canonical at a glance, the common
/// case: `/` then only unreserved characters and `/` (RFC 3986 section
/// 2.3), no empty, `.` or `..` segment. One pass over the bytes; anything
/// else takes the full normalisation, which returns such a path unchanged.
fn is_plain_path(s: &[u8]) -> bool {
    if s.first() != Some(&b'/') {
        return false;
    }
    // The previous byte and the length of the current segment's run of dots
    // (`None` once the segment has another byte).
    let mut prev = 0u8;
    let mut dots = Some(0usize);
    for &b in s {
        match b {
            b'/' => {
                if prev == b'/' || matches!(dots, Some(1 | 2)) {
                    return false;
                }
                dots = Some(0);
            }
            b'.' => dots = dots.map(|d| d + 1),
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'~' => dots = None,
            _ => return false,
        }
        prev = b;
    }
    !matches!(dots, Some(1 | 2))
}

fn normalize_slow(raw: &str) -> Result<Cow<'_, str>, PathError> {
    let mut target = raw;
    for scheme in ["http://", "https://"] {
        // `get`: a target starting with a multi-byte character is no scheme.
        if target.get(..scheme.len()).is_some_and(|s| s.eq_ignore_ascii_case(scheme)) {
            let rest = &target[scheme.len()..];
            target = match rest.find(['/', '?', '#']) {
                Some(i) if rest.as_bytes()[i] == b'/' => &rest[i..],
                Some(i) => {
                    // `http://host?q` or `http://host#f`: empty path, and the
                    // same checks and fragment removal as any other target.
                    return normalize_request_target(&format!("/{}", &rest[i..])).map(|t| Cow::Owned(t.into_owned()));
                }
                None => "/",
            };
        }
    }
    if !target.starts_with('/') {
        return Err(PathError::NotOriginForm);
    }
    let target = target.split('#').next().unwrap_or("/");
    if let Some(i) = target.bytes().position(|b| b < 0x20 || b == 0x7f) {
        return Err(PathError::ControlChar(i));
    }
    let bytes = target.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'%'
            && !(bytes.get(i + 1).copied().and_then(hex_val).is_some()
                && bytes.get(i + 2).copied().and_then(hex_val).is_some())
        {
            return Err(PathError::BadEscape(i));
        }
    }
    let (path, query) = match target.find('?') {
        Some(i) => (&target[..i], Some(&target[i..])),
        None => (target, None),
    };
    let fast = is_canonical(path.as_bytes(), false)
        && !path.contains("//")
        && !path.contains(['\\', ';'])
        && !path.contains("%2F")
        && !path.split('/').any(|s| s == "." || s == "..")
        && query.is_none_or(|q| is_canonical(q.as_bytes(), false));
    if fast {
        return Ok(Cow::Borrowed(target));
    }
    normalize_owned(target.to_string())
}

fn normalize_owned(target: String) -> Result<Cow<'static, str>, PathError> {
    let (path, query) = match target.find('?') {
        Some(i) => (&target[..i], Some(&target[i..])),
        None => (target.as_str(), None),
    };
    let decoded = canonicalize(path).replace("%2F", "/").replace('\\', "/");
    let mut out: Vec<&str> = Vec::new();
    let segments: Vec<&str> = decoded.split('/').collect();
    let last = segments.len().saturating_sub(1);
    let mut trailing_slash = false;
    for (i, seg) in segments.iter().enumerate().skip(1) {
        let seg = seg.split(';').next().unwrap_or("");
        match seg {
            "" => trailing_slash = i == last,
            "." => trailing_slash = i == last,
            ".." => {
                out.pop();
                trailing_slash = i == last;
            }
            s => {
                out.push(s);
                trailing_slash = false;
            }
        }
    }
    let mut result = String::with_capacity(decoded.len() + query.map_or(0, str::len));
    for s in &out {
        result.push('/');
        result.push_str(s);
    }
    if out.is_empty() || trailing_slash {
        result.push('/');
    }
    if let Some(q) = query {
        result.push_str(&canonicalize(q));
    }
    Ok(Cow::Owned(result))
}

/// The canonical target as an origin that resolves paths as IIS does reads
/// it (`[server] origin_paths = "windows"`): `%5C` in the path is a `/`
/// like `\` (dot segments and repeated slashes are resolved again after
/// it), and ASCII letters are lower case outside percent-escapes, whose hex
/// digits stay upper case as in the canonical form. The policy's patterns
/// are folded the same way when it loads ([`fold_pattern`]), so the two
/// compare as such an origin would. Borrowed when nothing changes.
pub fn fold_windows_target(canonical: &str) -> Cow<'_, str> {
    let (path, query) = canonical.split_at(canonical.find('?').unwrap_or(canonical.len()));
    let separated: Cow<'_, str> = if memchr::memmem::find(path.as_bytes(), b"%5C").is_some() {
        match normalize_request_target(&path.replace("%5C", "\\")) {
            Ok(p) => Cow::Owned(format!("{p}{query}")),
            // Unreachable for a canonical target (its escapes are valid and
            // it has no control character); deciding unfolded is the
            // fallback, never a panic.
            Err(_) => Cow::Borrowed(canonical),
        }
    } else {
        Cow::Borrowed(canonical)
    };
    if !has_upper_case(&separated) {
        return separated;
    }
    Cow::Owned(lower_case(&separated))
}

/// A pattern's canonical form folded as [`fold_windows_target`] folds a
/// request target: `\` and `%5C` are `/`, ASCII letters lower case outside
/// percent-escapes.
pub(crate) fn fold_pattern(canonical: &str) -> String {
    lower_case(&canonical.replace('\\', "/").replace("%5C", "/"))
}

/// Folds the case of a path in place as [`fold_windows_target`] does.
pub(crate) fn fold_case_in_place(path: &mut String) {
    if has_upper_case(path) {
        *path = lower_case(path);
    }
}

/// Whether `s` has an ASCII upper-case letter outside percent-escapes.
fn has_upper_case(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => i += 3,
            c if c.is_ascii_uppercase() => return true,
            _ => i += 1,
        }
    }
    false
}

/// `s` with ASCII letters lower case, except the two characters after each
/// `%` (the hex digits of an escape).
fn lower_case(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut escape = 0;
    for c in s.chars() {
        if escape > 0 {
            escape -= 1;
            out.push(c);
        } else if c == '%' {
            escape = 2;
            out.push(c);
        } else {
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// The RFC 9309 canonical form of a path (and query) or pattern: octets
/// outside US-ASCII percent-encoded (UTF-8), `%XX` of unreserved characters
/// decoded, hex digits upper-case. A `%` that starts no valid escape is
/// kept. Borrowed when the input is already canonical.
///
/// In a path, literal `*` and `$` are encoded (`%2A`, `%24`) so they can
/// only match the same escaped characters in a pattern.
pub fn canonicalize(path_and_query: &str) -> Cow<'_, str> {
    canonical(path_and_query, false)
}

/// The canonical form of a pattern's body (its final `$` anchor removed):
/// as [`canonicalize`], but `*` and `$` are kept as written, because in a
/// pattern they are the wildcard and the anchor.
pub(crate) fn canonicalize_pattern(body: &str) -> Cow<'_, str> {
    canonical(body, true)
}

fn canonical(path_and_query: &str, pattern: bool) -> Cow<'_, str> {
    let bytes = path_and_query.as_bytes();
    if is_canonical(bytes, pattern) {
        return Cow::Borrowed(path_and_query);
    }
    let mut out = String::with_capacity(bytes.len() + 8);
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%' {
            if let (Some(h), Some(l)) =
                (bytes.get(i + 1).copied().and_then(hex_val), bytes.get(i + 2).copied().and_then(hex_val))
            {
                let v = h * 16 + l;
                if unreserved(v) {
                    out.push(v as char);
                } else {
                    out.push('%');
                    out.push(HEX[usize::from(h)] as char);
                    out.push(HEX[usize::from(l)] as char);
                }
                i += 3;
                continue;
            }
            out.push('%');
        } else if b >= 0x80 || (!pattern && (b == b'*' || b == b'$')) {
            out.push('%');
            out.push(HEX[usize::from(b >> 4)] as char);
            out.push(HEX[usize::from(b & 15)] as char);
        } else {
            out.push(b as char);
        }
        i += 1;
    }
    Cow::Owned(out)
}

/// Whether `s` is already in canonical form (so no allocation is needed).
/// In a path, `*` and `$` are data, so they are compared as `%2A`/`%24`.
fn is_canonical(s: &[u8], pattern: bool) -> bool {
    // The common case, checked with vectorised scans: nothing to look at.
    let special = if pattern { memchr::memchr(b'%', s) } else { memchr::memchr3(b'%', b'*', b'$', s) };
    if special.is_none() && s.is_ascii() {
        return true;
    }
    let mut i = 0;
    while i < s.len() {
        let b = s[i];
        if b >= 0x80 || (!pattern && (b == b'*' || b == b'$')) {
            return false;
        }
        if b == b'%' {
            if let (Some(h), Some(l)) =
                (s.get(i + 1).copied().and_then(hex_val), s.get(i + 2).copied().and_then(hex_val))
            {
                if unreserved(h * 16 + l) || s[i + 1].is_ascii_lowercase() || s[i + 2].is_ascii_lowercase() {
                    return false;
                }
                i += 3;
                continue;
            }
        }
        i += 1;
    }
    true
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

fn hex_val(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one-pass check only accepts what the full normalisation
    /// returns unchanged.
    #[test]
    fn plain_paths_are_their_own_canonical_form() {
        let parts = ["/", "a", ".", "..", "Z9", "-_~", "%41", "?", "#", ";", "//", "\\", "*", "é"];
        let mut cases = vec![String::new()];
        for _ in 0..5 {
            let next: Vec<String> = cases.iter().flat_map(|c| parts.iter().map(move |p| format!("{c}{p}"))).collect();
            cases.extend(next);
        }
        let mut plain = 0;
        for c in &cases {
            if is_plain_path(c.as_bytes()) {
                plain += 1;
                assert_eq!(normalize_slow(c).as_deref(), Ok(c.as_str()), "{c:?}");
            }
            assert_eq!(normalize_request_target(c), normalize_slow(c), "{c:?}");
        }
        assert!(plain > 1000, "{plain}");
        assert!(is_plain_path(b"/small.html") && is_plain_path(b"/a/b.c/..d/") && is_plain_path(b"/"));
        assert!(!is_plain_path(b"/a/../b") && !is_plain_path(b"/a/.") && !is_plain_path(b"/a//b"));
    }

    #[test]
    fn canonical_form() {
        for (input, want) in [
            ("/a%2fb", "/a%2Fb"),
            ("/%7Efoo", "/~foo"),
            ("/%41%42", "/AB"),
            ("/caf\u{e9}", "/caf%C3%A9"),
            ("/a b", "/a b"),
            ("/%zz", "/%zz"),
            ("/%", "/%"),
            ("/already%20ok", "/already%20ok"),
            ("/a*b$", "/a%2Ab%24"),
        ] {
            assert_eq!(canonicalize(input), want, "{input}");
        }
        assert!(matches!(canonicalize("/plain/path?q=1"), Cow::Borrowed(_)));
    }

    #[test]
    fn request_targets_cannot_hide_a_path() {
        for (raw, want) in [
            ("/secret/x", "/secret/x"),
            ("/a/../secret/x", "/secret/x"),
            ("/a/%2e%2e/secret/x", "/secret/x"),
            ("/a/%2E%2E/secret/x", "/secret/x"),
            ("/./secret/x", "/secret/x"),
            ("/../../secret/x", "/secret/x"),
            ("//secret//x", "/secret/x"),
            ("/%73ecret/x", "/secret/x"),
            ("/secret%2fx", "/secret/x"),
            ("/secret%2Fx", "/secret/x"),
            ("/a\\..\\secret\\x", "/secret/x"),
            ("/x/..", "/"),
            ("/x/.", "/x/"),
            ("/secret;jsessionid=1/x", "/secret/x"),
            ("/PRIVATE", "/PRIVATE"),
            ("/a?b=%41&c", "/a?b=A&c"),
            ("/a#frag", "/a"),
            ("http://example.com/secret/x?q", "/secret/x?q"),
            ("HTTPS://example.com", "/"),
            ("http://example.com?q=1", "/?q=1"),
            ("/caf\u{e9}", "/caf%C3%A9"),
        ] {
            assert_eq!(normalize_request_target(raw).as_deref(), Ok(want), "{raw}");
        }
        assert!(matches!(normalize_request_target("/plain/path?q=1"), Ok(Cow::Borrowed(_))));
        assert_eq!(normalize_request_target("*"), Err(PathError::NotOriginForm));
        assert_eq!(normalize_request_target("example.com:443"), Err(PathError::NotOriginForm));
        assert_eq!(normalize_request_target("/%zz"), Err(PathError::BadEscape(1)));
        assert_eq!(normalize_request_target("/a%"), Err(PathError::BadEscape(2)));
        assert_eq!(normalize_request_target("/a\u{0}b"), Err(PathError::ControlChar(2)));
    }

    #[test]
    fn request_targets_are_classified() {
        type Row = (&'static str, bool, Result<(&'static str, Option<&'static str>), PathError>);
        let rows: &[Row] = &[
            ("/private/x", false, Ok(("/private/x", None))),
            ("/a/../private/x?q=1", false, Ok(("/private/x?q=1", None))),
            ("/p#frag", false, Err(PathError::Fragment)),
            ("#/private/x", false, Err(PathError::Fragment)),
            ("/p?q#", false, Err(PathError::Fragment)),
            ("http://h/private/x", false, Ok(("/private/x", Some("/private/x")))),
            ("HTTPS://h:8443/a/./b?c", false, Ok(("/a/b?c", Some("/a/./b?c")))),
            ("HTTPS://h:8443/a/./b?c#d", false, Err(PathError::Fragment)),
            ("http://h#/private/x", false, Err(PathError::Fragment)),
            ("http://h", false, Ok(("/", Some("/")))),
            ("http://h?q", false, Ok(("/?q", Some("/?q")))),
            ("*", true, Ok(("/", None))),
            ("*", false, Err(PathError::AsteriskForm)),
            ("private/x", false, Err(PathError::NotOriginForm)),
            ("%2Fprivate/x", false, Err(PathError::NotOriginForm)),
            ("x:/private/x", false, Err(PathError::NotOriginForm)),
            ("ftp://h/private/x", false, Err(PathError::NotOriginForm)),
            ("//h/private/x", false, Ok(("/h/private/x", None))),
            ("http:///private/x", false, Err(PathError::NoHost)),
            ("\\private\\x", false, Err(PathError::NotOriginForm)),
            ("h:80", false, Err(PathError::NotOriginForm)),
            ("", false, Err(PathError::NotOriginForm)),
        ];
        for (raw, options, want) in rows {
            let got = classify_request_target(raw.as_bytes(), *options)
                .map(|t| (t.canonical.into_owned(), t.forward.map(Cow::into_owned)));
            let want = want.clone().map(|(c, f)| (c.to_string(), f.map(str::to_string)));
            assert_eq!(got, want, "{raw:?}");
        }
        assert_eq!(classify_request_target(b"/\xff", false), Err(PathError::NotUtf8));
    }

    #[test]
    fn windows_targets_fold_case_and_backslashes() {
        for (canonical, want) in [
            ("/private/x", "/private/x"),
            ("/PRIVATE/x", "/private/x"),
            ("/Private/X?Q=A", "/private/x?q=a"),
            ("/private%5Cx", "/private/x"),
            ("/public%5C..%5Cprivate%5Cx", "/private/x"),
            ("/public/..%5CPRIVATE", "/private"),
            ("/a%5C%5Cb", "/a/b"),
            ("/caf%C3%A9/%2A", "/caf%C3%A9/%2A"),
            ("/CAF%C3%A9", "/caf%C3%A9"),
            ("/a?x=%5C", "/a?x=%5C"),
        ] {
            // What the proxy hands on is canonical first.
            let canonical = normalize_request_target(canonical).unwrap_or_else(|e| panic!("{canonical}: {e}"));
            assert_eq!(fold_windows_target(&canonical), want, "{canonical}");
        }
        assert!(matches!(fold_windows_target("/plain/path?q=1"), Cow::Borrowed(_)));
        for (pattern, want) in [
            ("/Private/", "/private/"),
            ("/a\\B*.PHP$", "/a/b*.php$"),
            ("/x%5Cy%2A", "/x/y%2A"),
            ("/%C3%A9", "/%C3%A9"),
        ] {
            assert_eq!(fold_pattern(pattern), want, "{pattern}");
        }
    }

    #[test]
    fn absolute_form_is_seen_from_the_first_bytes() {
        for (buf, want) in [
            (&b"GET http://h/ HTTP/1.1\r\n"[..], true),
            (b"\r\nGET HTTPS://h", true),
            (b"GET http:", true),
            (b"GET https:/", true),
            (b"GET /http://h HTTP/1.1", false),
            (b"GET htt", false),
            (b"GET ftp://h/ HTTP/1.1", false),
            (b"GET\nhttp://h", false),
            (b"PRI * HTTP/2.0\r\n", false),
            (b"", false),
        ] {
            assert_eq!(starts_absolute_form(buf), want, "{}", String::from_utf8_lossy(buf));
        }
    }

    #[test]
    fn absolute_form_authority_replaces_host() {
        let fixed = |h: &str| host_from_absolute_form(h.as_bytes()).map(|v| String::from_utf8_lossy(&v).into_owned());
        let rows: &[(&str, Option<&str>)] = &[
            (
                "GET https://other.test:1/private/x?q=1 HTTP/1.1\r\nHost: site.test\r\nUser-Agent: a\r\n\r\nBODY",
                Some("GET https://other.test:1/private/x?q=1 HTTP/1.1\r\nHost: other.test:1\r\nUser-Agent: a\r\n\r\nBODY"),
            ),
            ("GET http://o.test HTTP/1.1\nhost:site.test\n\n", Some("GET http://o.test HTTP/1.1\nhost: o.test\n\n")),
            ("GET HTTP://o.test?q HTTP/1.1\r\nHOST: x\r\n\r\n", Some("GET HTTP://o.test?q HTTP/1.1\r\nHOST: o.test\r\n\r\n")),
            // Already the same, origin-form, no Host, two Hosts, userinfo,
            // an incomplete header: unchanged (Pingora decides).
            ("GET http://site.test/a HTTP/1.1\r\nHost: site.test\r\n\r\n", None),
            ("GET /a HTTP/1.1\r\nHost: site.test\r\n\r\n", None),
            ("GET http://o.test/a HTTP/1.1\r\nX-Host: site.test\r\n\r\n", None),
            ("GET http://o.test/a HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", None),
            ("GET http://u@o.test/a HTTP/1.1\r\nHost: site.test\r\n\r\n", None),
            ("GET http://o.test\\a/ HTTP/1.1\r\nHost: site.test\r\n\r\n", None),
            ("GET http:///a HTTP/1.1\r\nHost: site.test\r\n\r\n", None),
            ("GET http://o.test/a HTTP/1.1\r\nHost: site.test\r\n", None),
        ];
        for (header, want) in rows {
            assert_eq!(fixed(header).as_deref(), *want, "{header:?}");
        }
    }

    #[test]
    fn request_line_targets() {
        let rows: &[(&[u8], Option<&[u8]>)] = &[
            (b"GET #/private/x HTTP/1.1\r\nHost: h\r\n\r\n", Some(b"#/private/x")),
            (b"\r\nGET /a#b HTTP/1.1\r\n\r\n", Some(b"/a#b")),
            (b"GET /a HTTP/1.0\n\n", Some(b"/a")),
            (b"GET http://h/p HTTP/1.1", Some(b"http://h/p")),
            (b"GET /a\r\n\r\n", None),
            (b"\r\n", None),
            (b"", None),
        ];
        for (header, want) in rows {
            assert_eq!(request_line_target(header), *want, "{}", String::from_utf8_lossy(header));
        }
    }
}
