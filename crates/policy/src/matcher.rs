//! RFC 9309 pattern matching: the canonical percent-encoding of paths and
//! patterns, compiled patterns (`*` wildcards, a trailing `$` anchor), rule
//! sets that find the deciding rule (longest match, allow wins ties) through
//! a prefix trie, and the normalisation of request targets the proxy
//! decides on.

use std::borrow::Cow;

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
}

/// A request target the proxy may decide on and forward (RFC 9112 section
/// 3.2): origin-form, absolute-form with an `http`/`https` scheme, or
/// asterisk-form with OPTIONS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestTarget<'a> {
    /// The canonical path and query the policy decides on.
    pub canonical: Cow<'a, str>,
    /// The target to send upstream instead of the client's, when the two
    /// differ: the origin-form of an absolute-form target, or a target
    /// without its fragment. `None`: forward the client's target unchanged,
    /// which is origin-form and resolves to the canonical path.
    pub forward: Option<Cow<'a, str>>,
}

/// Classifies a raw request target and returns what the decision is made
/// on and what is forwarded, so that the two name the same resource on any
/// origin. Anything that is not origin-form, absolute-form (`http(s)://`)
/// or asterisk-form with OPTIONS is an error (the proxy answers 400): an
/// origin may resolve `private/x`, `%2Fprivate/x` or `x:/private/x` to
/// `/private/x` while no rule could be applied to it.
///
/// Asterisk-form is decided as `/` (a crawler kept out of the whole site is
/// kept out of server-wide OPTIONS too) and forwarded as `*`.
pub fn classify_request_target(raw: &[u8], is_options: bool) -> Result<RequestTarget<'_>, PathError> {
    let raw = std::str::from_utf8(raw).map_err(|_| PathError::NotUtf8)?;
    if raw == "*" {
        return if is_options {
            Ok(RequestTarget { canonical: Cow::Borrowed("/"), forward: None })
        } else {
            Err(PathError::AsteriskForm)
        };
    }
    if raw.starts_with('/') {
        let canonical = normalize_request_target(raw)?;
        let forward = raw.find('#').map(|i| Cow::Borrowed(&raw[..i]));
        return Ok(RequestTarget { canonical, forward });
    }
    for scheme in ["http://", "https://"] {
        if raw.get(..scheme.len()).is_some_and(|s| s.eq_ignore_ascii_case(scheme)) {
            let rest = &raw[scheme.len()..];
            let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
            if end == 0 {
                return Err(PathError::NoHost);
            }
            let tail = &rest[end..];
            let tail = tail.find('#').map_or(tail, |i| &tail[..i]);
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
struct ByteSet(u128);

impl ByteSet {
    fn of(s: &[u8]) -> ByteSet {
        ByteSet(s.iter().filter(|b| b.is_ascii()).fold(0, |m, &b| m | 1u128 << b))
    }

    fn is_subset_of(self, other: ByteSet) -> bool {
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
        let body = canonical(body, true).replace('$', "%24");
        let pieces = body.split('*').map(str::to_owned).collect();
        let bytes = ByteSet::of(body.replace('*', "").as_bytes());
        let canonical = if anchored { format!("{body}$") } else { body };
        Pattern { pieces, anchored, canonical, bytes }
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

    /// Whether the pattern matches an already canonical path and query.
    pub fn matches(&self, path: &str) -> bool {
        path.as_bytes().starts_with(self.pieces[0].as_bytes()) && self.matches_after_prefix(path.as_bytes())
    }

    /// [`Pattern::matches`] for a path known to start with the literal
    /// prefix (the rule trie has compared it already).
    fn matches_after_prefix(&self, p: &[u8]) -> bool {
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

/// A radix trie node over the rules' literal prefixes.
#[derive(Debug, Default, Clone)]
struct Node {
    /// `(first byte of the edge, child)`, sorted by byte.
    children: Vec<(u8, u32)>,
    /// The rest of the edge into this node: the bytes after its first one
    /// (a chain of nodes without rules or branches, collapsed so a lookup
    /// compares them at once instead of stepping byte by byte).
    label: Box<[u8]>,
    /// Rules whose literal prefix ends here, best first.
    rules: Vec<Candidate>,
}

/// A rule as the trie holds it: enough to pass over it without reading
/// its pattern.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    rule: u32,
    /// Its precedence rank (lower is better).
    rank: u32,
    /// Bytes a path needs for the pattern to match; empty for a pattern
    /// without `*`, whose literal the trie has compared already.
    needs: ByteSet,
}

/// `s.starts_with(prefix)` as an inlined loop: labels are a few bytes, for
/// which a call to `memcmp` costs more than the comparison.
#[inline]
fn has_prefix(s: &[u8], prefix: &[u8]) -> bool {
    prefix.len() <= s.len() && s.iter().zip(prefix).all(|(a, b)| a == b)
}

/// Collapses the byte trie `trie` (root 0, children sorted) into a radix
/// trie: every chain of nodes with one child and no rules becomes a label.
fn compress(trie: &[Node]) -> Vec<Node> {
    let mut out = vec![Node { rules: trie[0].rules.clone(), ..Node::default() }];
    let mut stack = vec![(0usize, 0usize)];
    while let Some((t, o)) = stack.pop() {
        for &(b, c) in &trie[t].children {
            let mut c = c as usize;
            let mut label = Vec::new();
            while trie[c].rules.is_empty() && trie[c].children.len() == 1 {
                let (next_b, next) = trie[c].children[0];
                label.push(next_b);
                c = next as usize;
            }
            out.push(Node { children: Vec::new(), label: label.into_boxed_slice(), rules: trie[c].rules.clone() });
            let n = out.len() - 1;
            out[o].children.push((b, n as u32));
            stack.push((c, n));
        }
    }
    out
}

/// A compiled set of rules `(pattern, allow)`.
#[derive(Debug, Clone, Default)]
pub struct RuleSet {
    patterns: Vec<Pattern>,
    allow: Vec<bool>,
    nodes: Vec<Node>,
}

impl RuleSet {
    /// Compiles rules; `evaluate` returns indices into `rules`.
    pub fn new(rules: Vec<(Pattern, bool)>) -> RuleSet {
        let mut order: Vec<usize> = (0..rules.len()).collect();
        order.sort_by(|&a, &b| {
            rules[b].0.specificity().cmp(&rules[a].0.specificity()).then(rules[b].1.cmp(&rules[a].1)).then(a.cmp(&b))
        });
        // Precedence rank per rule: lower is better (longer, then allow).
        let mut rank = vec![0u32; rules.len()];
        for (r, &i) in order.iter().enumerate() {
            rank[i] = u32::try_from(r).unwrap_or(u32::MAX);
        }
        let mut nodes = vec![Node::default()];
        for &i in &order {
            let mut at = 0usize;
            for &b in rules[i].0.literal_prefix().as_bytes() {
                let next = match nodes[at].children.iter().find(|(c, _)| *c == b) {
                    Some(&(_, n)) => n as usize,
                    None => {
                        nodes.push(Node::default());
                        let n = nodes.len() - 1;
                        nodes[at].children.push((b, n as u32));
                        n
                    }
                };
                at = next;
            }
            let p = &rules[i].0;
            let needs = if p.pieces.len() > 1 { p.bytes } else { ByteSet::default() };
            nodes[at].rules.push(Candidate { rule: i as u32, rank: rank[i], needs });
        }
        for n in &mut nodes {
            n.children.sort_unstable();
        }
        let nodes = compress(&nodes);
        let (patterns, allow) = rules.into_iter().unzip();
        RuleSet { patterns, allow, nodes }
    }

    /// Number of rules.
    pub fn len(&self) -> usize {
        self.patterns.len()
    }

    /// Whether there are no rules.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// The pattern of rule `i`.
    pub fn pattern(&self, i: usize) -> &Pattern {
        &self.patterns[i]
    }

    /// Whether rule `i` allows.
    pub fn is_allow(&self, i: usize) -> bool {
        self.allow[i]
    }

    /// The deciding rule for an already canonical path and query: the
    /// longest matching pattern, allow winning ties; `None` when no rule
    /// matches. No allocation.
    pub fn evaluate(&self, path: &str) -> Option<usize> {
        if self.patterns.is_empty() {
            return None;
        }
        // (rule, rank) of the best match so far.
        let mut best: Option<(u32, u32)> = None;
        // Computed on first use: most nodes on the way hold no wildcard rule.
        let mut path_bytes: Option<ByteSet> = None;
        let mut consider = |node: &Node| {
            for c in &node.rules {
                if best.is_some_and(|(_, rank)| rank <= c.rank) {
                    // Rules in a node are best-first: nothing later wins.
                    break;
                }
                if c.needs != ByteSet::default()
                    && !c.needs.is_subset_of(*path_bytes.get_or_insert_with(|| ByteSet::of(path.as_bytes())))
                {
                    continue;
                }
                if self.patterns[c.rule as usize].matches_after_prefix(path.as_bytes()) {
                    best = Some((c.rule, c.rank));
                    break;
                }
            }
        };
        let bytes = path.as_bytes();
        let (mut at, mut pos) = (0usize, 0usize);
        consider(&self.nodes[0]);
        while let Some(&b) = bytes.get(pos) {
            let node = &self.nodes[at];
            let Ok(k) = node.children.binary_search_by_key(&b, |&(c, _)| c) else { break };
            let child = node.children[k].1 as usize;
            // Nodes collapsed into the label held no rules: a path that
            // leaves the label reaches no further rule.
            if !has_prefix(&bytes[pos + 1..], &self.nodes[child].label) {
                break;
            }
            pos += 1 + self.nodes[child].label.len();
            at = child;
            consider(&self.nodes[at]);
        }
        best.map(|(rule, _)| rule as usize)
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Pattern {
        Pattern::new_lenient(s)
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
    fn longest_match_and_allow_ties() {
        let rules = RuleSet::new(vec![(p("/p"), true), (p("/"), false)]);
        assert_eq!(rules.evaluate("/page"), Some(0));
        let rules = RuleSet::new(vec![(p("/folder"), true), (p("/folder"), false)]);
        assert_eq!(rules.evaluate("/folder/page"), Some(0));
        let rules = RuleSet::new(vec![(p("/page"), true), (p("/*.htm"), false)]);
        assert_eq!(rules.evaluate("/page.htm"), Some(1));
        let rules = RuleSet::new(vec![(p("/$"), true), (p("/"), false)]);
        assert_eq!(rules.evaluate("/"), Some(0));
        assert_eq!(rules.evaluate("/page.htm"), Some(1));
        assert_eq!(RuleSet::new(vec![(p("/x"), false)]).evaluate("/y"), None);
    }

    #[test]
    fn trie_finds_wildcard_rules_too() {
        let mut rules = Vec::new();
        for i in 0..300 {
            rules.push((p(&format!("/section{i}/")), i % 2 == 0));
        }
        rules.push((p("/*.bak$"), false));
        rules.push((p("/section7/*/private"), false));
        let set = RuleSet::new(rules);
        assert_eq!(set.evaluate("/section12/x"), Some(12));
        assert_eq!(set.evaluate("/section7/a/private"), Some(301));
        assert_eq!(set.evaluate("/elsewhere/x.bak"), Some(300));
        assert_eq!(set.evaluate("/elsewhere/x"), None);
    }

    #[test]
    fn policy_patterns_are_validated() {
        assert_eq!(Pattern::new(""), Err(PatternError::Empty));
        assert!(matches!(Pattern::new("private/"), Err(PatternError::BadStart(_))));
        assert!(matches!(Pattern::new("/a b"), Err(PatternError::BadChar(_))));
        assert!(Pattern::new("*.gif$").is_ok());
        assert!(matches!(Pattern::new("/a#b"), Err(PatternError::Hash(_))));
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
            ("/p#frag", false, Ok(("/p", Some("/p")))),
            ("http://h/private/x", false, Ok(("/private/x", Some("/private/x")))),
            ("HTTPS://h:8443/a/./b?c#d", false, Ok(("/a/b?c", Some("/a/./b?c")))),
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
}
