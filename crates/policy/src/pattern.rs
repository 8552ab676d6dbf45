//! RFC 9309 patterns (section 2.2.3): `*` matches any sequence of
//! characters, a final `$` anchors the pattern at the end of the path;
//! everything else is compared in canonical form.

use crate::canonical::canonicalize_pattern;

/// Why a pattern cannot be used in a policy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PatternError {
    /// The pattern is empty.
    #[error("pattern is empty")]
    Empty,
    /// The pattern does not start with `/` or `*`.
    #[error("pattern `{0}` must start with '/' or '*'")]
    BadStart(String),
    /// The pattern contains a control character or whitespace.
    #[error("pattern `{0}` contains whitespace or a control character")]
    BadChar(String),
    /// The pattern contains `#`, which starts a comment in robots.txt (a
    /// reader would see a shorter pattern) and never occurs in a request
    /// path (it starts the fragment).
    #[error("pattern `{0}` contains '#', which starts a comment in robots.txt (write %23 for a literal '#')")]
    Hash(String),
}

/// One compiled Allow/Disallow (or path-scoped) pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    canonical: String,
    /// Literal pieces between `*`s (the `$` removed).
    pieces: Vec<String>,
    anchored: bool,
    /// The ASCII bytes the pattern's literal pieces contain: a path lacking
    /// one cannot match, which rejects most wildcard patterns without a
    /// substring search.
    bytes: ByteSet,
}

/// A set of ASCII bytes (bytes >= 0x80 are never members: canonical paths
/// and patterns are ASCII, and leaving them out can only keep a candidate).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ByteSet(u128);

impl ByteSet {
    pub(crate) fn of(s: &[u8]) -> ByteSet {
        ByteSet(s.iter().filter(|b| b.is_ascii()).fold(0, |m, &b| m | 1u128 << b))
    }

    pub(crate) fn is_subset_of(self, other: ByteSet) -> bool {
        self.0 & !other.0 == 0
    }
}

impl Pattern {
    /// Compiles a pattern as written in a policy: it must start with `/`
    /// or `*` and contain no whitespace or control characters.
    pub fn new(raw: &str) -> Result<Pattern, PatternError> {
        if raw.is_empty() {
            return Err(PatternError::Empty);
        }
        if !raw.starts_with('/') && !raw.starts_with('*') {
            return Err(PatternError::BadStart(raw.to_string()));
        }
        if raw.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(PatternError::BadChar(raw.to_string()));
        }
        if raw.contains('#') {
            return Err(PatternError::Hash(raw.to_string()));
        }
        Ok(Self::new_lenient(raw))
    }

    /// Compiles a pattern found in a robots.txt in the wild; never fails.
    pub fn new_lenient(raw: &str) -> Pattern {
        // `*` is the wildcard and a final `$` the anchor; a `$` anywhere
        // else is a literal character, compared as `%24`.
        let (body, anchored) = match raw.strip_suffix('$') {
            Some(b) => (b, true),
            None => (raw, false),
        };
        let body = canonicalize_pattern(body).replace('$', "%24");
        let pieces = body.split('*').map(str::to_owned).collect();
        let bytes = ByteSet::of(body.replace('*', "").as_bytes());
        let canonical = if anchored { format!("{body}$") } else { body };
        Pattern { pieces, anchored, canonical, bytes }
    }

    /// Compiles a pattern as Google's open-source parser reads it
    /// (`robots-test --as google` only; enforcement is RFC 9309): bytes
    /// above 0x7F are percent-encoded and the hex digits of an escape
    /// uppercased, but an escape of an unreserved character is not decoded,
    /// so `/%6Cogin` does not match `/login` (RFC 9309 section 2.2.2
    /// decodes it). Compare it with [`google_path`]s.
    pub fn new_google(raw: &str) -> Pattern {
        let (body, anchored) = match raw.strip_suffix('$') {
            Some(b) => (b, true),
            None => (raw, false),
        };
        let body = google_escape(body).replace('$', "%24");
        let pieces = body.split('*').map(str::to_owned).collect();
        let bytes = ByteSet::of(body.replace('*', "").as_bytes());
        let canonical = if anchored { format!("{body}$") } else { body };
        Pattern { pieces, anchored, canonical, bytes }
    }

    /// This pattern as an origin that resolves paths as IIS does compares
    /// it (`[server] origin_paths = "windows"`): see
    /// [`crate::canonical::fold_windows_target`].
    pub fn folded(&self) -> Pattern {
        Pattern::new_lenient(&crate::canonical::fold_pattern(&self.canonical))
    }

    /// The canonical form.
    pub fn as_str(&self) -> &str {
        &self.canonical
    }

    /// Octets of the canonical pattern: what "longest match" compares.
    pub fn specificity(&self) -> usize {
        self.canonical.len()
    }

    /// The literal text before the first `*` (every matching path starts
    /// with it).
    pub fn literal_prefix(&self) -> &str {
        self.pieces.first().map(String::as_str).unwrap_or("")
    }

    /// The bytes a path needs for a pattern with a `*` to match; empty for
    /// a pattern without one, whose whole literal a prefix comparison
    /// checks (see [`Pattern::literal_prefix`]).
    pub(crate) fn needed_bytes(&self) -> ByteSet {
        if self.pieces.len() > 1 {
            self.bytes
        } else {
            ByteSet::default()
        }
    }

    /// Whether the pattern matches an already canonical path and query.
    pub fn matches(&self, path: &str) -> bool {
        path.as_bytes().starts_with(self.pieces[0].as_bytes()) && self.matches_after_prefix(path.as_bytes())
    }

    /// [`Pattern::matches`] for a path known to start with the literal
    /// prefix (the rule trie has compared it already).
    pub(crate) fn matches_after_prefix(&self, p: &[u8]) -> bool {
        let n = self.pieces.len();
        let first = self.pieces[0].as_bytes();
        if n == 1 {
            return !self.anchored || p.len() == first.len();
        }
        let mut pos = first.len();
        let last = self.pieces[n - 1].as_bytes();
        for piece in &self.pieces[1..n - 1] {
            let piece = piece.as_bytes();
            match memchr::memmem::find(&p[pos..], piece) {
                Some(at) => pos += at + piece.len(),
                None => return false,
            }
        }
        if self.anchored {
            p.len() >= pos + last.len() && p.ends_with(last)
        } else {
            memchr::memmem::find(&p[pos..], last).is_some()
        }
    }
}

/// A pattern body as Google's parser escapes it (robots.cc
/// `MaybeEscapePattern`): bytes above 0x7F as `%XX`, existing escapes with
/// uppercase hex, nothing decoded.
fn google_escape(body: &str) -> String {
    let b = body.as_bytes();
    let mut out = String::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && b.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
            && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit)
        {
            out.push('%');
            out.push(char::from(b[i + 1].to_ascii_uppercase()));
            out.push(char::from(b[i + 2].to_ascii_uppercase()));
            i += 3;
        } else if b[i] >= 0x80 {
            out.push_str(&format!("%{:02X}", b[i]));
            i += 1;
        } else {
            out.push(char::from(b[i]));
            i += 1;
        }
    }
    out
}

/// A request path and query as Google's matcher compares it with
/// [`Pattern::new_google`] patterns: as written, escapes not decoded; `*`
/// and `$` written `%2A` and `%24` only because in a compiled pattern those
/// are the wildcard and the anchor.
pub fn google_path(path: &str) -> String {
    path.replace('*', "%2A").replace('$', "%24")
}

/// Whether `s` has a percent-escape of an unreserved character (RFC 3986
/// section 2.3), which RFC 9309 decodes and Google does not.
pub fn has_unreserved_escape(s: &str) -> bool {
    s.as_bytes().windows(3).any(|w| {
        w[0] == b'%'
            && w[1].is_ascii_hexdigit()
            && w[2].is_ascii_hexdigit()
            && std::str::from_utf8(&w[1..])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .is_some_and(|v| v.is_ascii_alphanumeric() || matches!(v, b'-' | b'.' | b'_' | b'~'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canonical::canonicalize;

    fn p(s: &str) -> Pattern {
        Pattern::new_lenient(s)
    }

    #[test]
    fn wildcards_and_anchor() {
        assert!(p("/fish*.php").matches("/fish.php"));
        assert!(p("/fish*.php").matches("/fishheads/catfish.php?parameters"));
        assert!(!p("/fish*.php").matches("/Fish.PHP"));
        assert!(p("/*.php$").matches("/filename.php"));
        assert!(!p("/*.php$").matches("/filename.php?parameters"));
        assert!(!p("/*.php$").matches("/filename.php5"));
        assert!(p("/fish$").matches("/fish"));
        assert!(!p("/fish$").matches("/fish/"));
        assert!(p("*").matches("/anything"));
        assert!(p("/a*b*c$").matches("/aXbYc"));
        assert!(!p("/a*b*c$").matches("/aXbYcd"));
        assert!(p("/a*bc$").matches("/abcbc"));
        assert!(p("/$").matches("/"));
        assert!(!p("/$").matches("/a"));
        // Escaped specials and a non-final `$` are literals.
        assert!(p("/x%2Ax").matches(&canonicalize("/x*x/abc")));
        assert!(p("/x$/abc").matches(&canonicalize("/x$/abcdef")));
        assert!(p("/x$/abc").matches(&canonicalize("/x%24/abcdef")));
        assert!(!p("/x$/abc").matches(&canonicalize("/x/abc")));
    }

    #[test]
    fn folded_patterns_match_folded_paths() {
        let folded = p("/Private/*.PHP$").folded();
        assert_eq!(folded.as_str(), "/private/*.php$");
        assert!(folded.matches("/private/a/b.php"));
        assert!(!folded.matches("/Private/a/b.PHP"));
        assert_eq!(p("/a$b\\C").folded().as_str(), "/a%24b/c");
    }

    /// `robots-test --as google`: escapes of unreserved characters stay
    /// escapes, in the pattern and the path; RFC 9309 decodes both.
    #[test]
    fn google_patterns_do_not_decode_unreserved_escapes() {
        let table: &[(&str, &str, bool, bool)] = &[
            // pattern, path, Google matches, RFC 9309 matches
            ("/login", "/%6Cogin", false, true),
            ("/%6Cogin", "/login", false, true),
            ("/%6cogin", "/%6Cogin", true, true),
            ("/%6Cogin", "/%6cogin", false, true),
            ("/caf\u{e9}", "/caf%C3%A9", true, true),
            ("/a$", "/a", true, true),
            ("/a$b", "/a$b", true, true),
            ("/*.php$", "/x/%2Ephp", false, true),
        ];
        for &(pat, path, google, rfc) in table {
            assert_eq!(Pattern::new_google(pat).matches(&google_path(path)), google, "google {pat} {path}");
            assert_eq!(p(pat).matches(&canonicalize(path)), rfc, "rfc {pat} {path}");
        }
        assert!(has_unreserved_escape("/%6Cogin"));
        assert!(has_unreserved_escape("/a%7e"));
        assert!(!has_unreserved_escape("/a%2F%20b"));
        assert!(!has_unreserved_escape("/a%6"));
    }

    #[test]
    fn policy_patterns_are_validated() {
        assert_eq!(Pattern::new(""), Err(PatternError::Empty));
        assert!(matches!(Pattern::new("private/"), Err(PatternError::BadStart(_))));
        assert!(matches!(Pattern::new("/a b"), Err(PatternError::BadChar(_))));
        assert!(Pattern::new("*.gif$").is_ok());
        assert!(matches!(Pattern::new("/a#b"), Err(PatternError::Hash(_))));
    }
}
