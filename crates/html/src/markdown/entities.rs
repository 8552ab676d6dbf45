//! HTML character references in text (WHATWG HTML, "Named character
//! references"): numeric references and the named ones pages use in
//! practice. lol_html hands text over as written; the converter decodes it.
//!
//! Not the full table of 2,231 names: the Latin-1 set, the typographic
//! punctuation and the common symbols and arrows. A name not in this table
//! stays as written (`&foo;`), which Markdown renders the same way an HTML
//! renderer would have done for an unknown name.

/// `(name, text)`, sorted by name for a binary search.
const NAMED: &[(&str, &str)] = &[
    ("AElig", "\u{c6}"),
    ("Aacute", "\u{c1}"),
    ("Acirc", "\u{c2}"),
    ("Agrave", "\u{c0}"),
    ("Alpha", "\u{391}"),
    ("Aring", "\u{c5}"),
    ("Atilde", "\u{c3}"),
    ("Auml", "\u{c4}"),
    ("Beta", "\u{392}"),
    ("Ccedil", "\u{c7}"),
    ("Dagger", "\u{2021}"),
    ("Delta", "\u{394}"),
    ("ETH", "\u{d0}"),
    ("Eacute", "\u{c9}"),
    ("Ecirc", "\u{ca}"),
    ("Egrave", "\u{c8}"),
    ("Euml", "\u{cb}"),
    ("Gamma", "\u{393}"),
    ("Iacute", "\u{cd}"),
    ("Icirc", "\u{ce}"),
    ("Igrave", "\u{cc}"),
    ("Iuml", "\u{cf}"),
    ("Lambda", "\u{39b}"),
    ("Ntilde", "\u{d1}"),
    ("OElig", "\u{152}"),
    ("Oacute", "\u{d3}"),
    ("Ocirc", "\u{d4}"),
    ("Ograve", "\u{d2}"),
    ("Omega", "\u{3a9}"),
    ("Oslash", "\u{d8}"),
    ("Otilde", "\u{d5}"),
    ("Ouml", "\u{d6}"),
    ("Phi", "\u{3a6}"),
    ("Pi", "\u{3a0}"),
    ("Prime", "\u{2033}"),
    ("Psi", "\u{3a8}"),
    ("Scaron", "\u{160}"),
    ("Sigma", "\u{3a3}"),
    ("THORN", "\u{de}"),
    ("Theta", "\u{398}"),
    ("Uacute", "\u{da}"),
    ("Ucirc", "\u{db}"),
    ("Ugrave", "\u{d9}"),
    ("Uuml", "\u{dc}"),
    ("Yacute", "\u{dd}"),
    ("Yuml", "\u{178}"),
    ("aacute", "\u{e1}"),
    ("acirc", "\u{e2}"),
    ("acute", "\u{b4}"),
    ("aelig", "\u{e6}"),
    ("agrave", "\u{e0}"),
    ("alpha", "\u{3b1}"),
    ("amp", "&"),
    ("apos", "'"),
    ("aring", "\u{e5}"),
    ("asymp", "\u{2248}"),
    ("atilde", "\u{e3}"),
    ("auml", "\u{e4}"),
    ("bdquo", "\u{201e}"),
    ("beta", "\u{3b2}"),
    ("brvbar", "\u{a6}"),
    ("bull", "\u{2022}"),
    ("ccedil", "\u{e7}"),
    ("cedil", "\u{b8}"),
    ("cent", "\u{a2}"),
    ("check", "\u{2713}"),
    ("copy", "\u{a9}"),
    ("curren", "\u{a4}"),
    ("dagger", "\u{2020}"),
    ("darr", "\u{2193}"),
    ("deg", "\u{b0}"),
    ("delta", "\u{3b4}"),
    ("divide", "\u{f7}"),
    ("eacute", "\u{e9}"),
    ("ecirc", "\u{ea}"),
    ("egrave", "\u{e8}"),
    ("emsp", "\u{2003}"),
    ("ensp", "\u{2002}"),
    ("epsilon", "\u{3b5}"),
    ("equiv", "\u{2261}"),
    ("eta", "\u{3b7}"),
    ("eth", "\u{f0}"),
    ("euml", "\u{eb}"),
    ("euro", "\u{20ac}"),
    ("frac12", "\u{bd}"),
    ("frac14", "\u{bc}"),
    ("frac34", "\u{be}"),
    ("gamma", "\u{3b3}"),
    ("ge", "\u{2265}"),
    ("gt", ">"),
    ("harr", "\u{2194}"),
    ("hellip", "\u{2026}"),
    ("iacute", "\u{ed}"),
    ("icirc", "\u{ee}"),
    ("iexcl", "\u{a1}"),
    ("igrave", "\u{ec}"),
    ("infin", "\u{221e}"),
    ("iquest", "\u{bf}"),
    ("iuml", "\u{ef}"),
    ("kappa", "\u{3ba}"),
    ("lambda", "\u{3bb}"),
    ("laquo", "\u{ab}"),
    ("larr", "\u{2190}"),
    ("ldquo", "\u{201c}"),
    ("le", "\u{2264}"),
    ("lsaquo", "\u{2039}"),
    ("lsquo", "\u{2018}"),
    ("lt", "<"),
    ("macr", "\u{af}"),
    ("mdash", "\u{2014}"),
    ("micro", "\u{b5}"),
    ("middot", "\u{b7}"),
    ("minus", "\u{2212}"),
    ("mu", "\u{3bc}"),
    ("nbsp", "\u{a0}"),
    ("ndash", "\u{2013}"),
    ("ne", "\u{2260}"),
    ("not", "\u{ac}"),
    ("ntilde", "\u{f1}"),
    ("nu", "\u{3bd}"),
    ("oacute", "\u{f3}"),
    ("ocirc", "\u{f4}"),
    ("oelig", "\u{153}"),
    ("ograve", "\u{f2}"),
    ("omega", "\u{3c9}"),
    ("ordf", "\u{aa}"),
    ("ordm", "\u{ba}"),
    ("oslash", "\u{f8}"),
    ("otilde", "\u{f5}"),
    ("ouml", "\u{f6}"),
    ("para", "\u{b6}"),
    ("permil", "\u{2030}"),
    ("phi", "\u{3c6}"),
    ("pi", "\u{3c0}"),
    ("plusmn", "\u{b1}"),
    ("pound", "\u{a3}"),
    ("prime", "\u{2032}"),
    ("psi", "\u{3c8}"),
    ("quot", "\""),
    ("raquo", "\u{bb}"),
    ("rarr", "\u{2192}"),
    ("rdquo", "\u{201d}"),
    ("reg", "\u{ae}"),
    ("rho", "\u{3c1}"),
    ("rsaquo", "\u{203a}"),
    ("rsquo", "\u{2019}"),
    ("sbquo", "\u{201a}"),
    ("scaron", "\u{161}"),
    ("sect", "\u{a7}"),
    ("shy", "\u{ad}"),
    ("sigma", "\u{3c3}"),
    ("sup1", "\u{b9}"),
    ("sup2", "\u{b2}"),
    ("sup3", "\u{b3}"),
    ("szlig", "\u{df}"),
    ("tau", "\u{3c4}"),
    ("theta", "\u{3b8}"),
    ("thinsp", "\u{2009}"),
    ("thorn", "\u{fe}"),
    ("tilde", "\u{2dc}"),
    ("times", "\u{d7}"),
    ("trade", "\u{2122}"),
    ("uacute", "\u{fa}"),
    ("uarr", "\u{2191}"),
    ("ucirc", "\u{fb}"),
    ("ugrave", "\u{f9}"),
    ("uml", "\u{a8}"),
    ("uuml", "\u{fc}"),
    ("yacute", "\u{fd}"),
    ("yen", "\u{a5}"),
    ("yuml", "\u{ff}"),
    ("zwj", "\u{200d}"),
    ("zwnj", "\u{200c}"),
];

/// Names an HTML parser also decodes without the `;` (the legacy ones
/// pages still write that way).
const LEGACY: &[&str] = &["amp", "copy", "gt", "lt", "nbsp", "quot", "reg"];

/// Longest reference this decoder reads, `&` to `;` included: a text
/// chunk ending in an `&` and fewer bytes than this, without a `;` or a
/// space, may be a reference cut by a chunk boundary and is held back.
pub(crate) const MAX_REFERENCE: usize = 12;

/// How many bytes at the end of `text` may be the start of a reference cut
/// by a chunk boundary (0 when none).
pub(crate) fn cut_reference_len(text: &str) -> usize {
    match text.rfind('&') {
        Some(at) if text.len() - at < MAX_REFERENCE => {
            let tail = &text[at + 1..];
            if tail.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'#') {
                text.len() - at
            } else {
                0
            }
        }
        _ => 0,
    }
}

/// Appends `text` to `out` with its character references decoded.
pub(crate) fn decode_into(text: &str, out: &mut String) {
    let mut rest = text;
    while let Some(at) = memchr::memchr(b'&', rest.as_bytes()) {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        match reference(after) {
            Some((decoded, used)) => {
                out.push_str(&decoded);
                rest = &after[used..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
}

/// `s` with its character references decoded.
pub(crate) fn decoded(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    decode_into(s, &mut out);
    out
}

/// The reference at the start of `s` (after the `&`): its text and how
/// many bytes of `s` it used.
fn reference(s: &str) -> Option<(String, usize)> {
    let bytes = s.as_bytes();
    if bytes.first() == Some(&b'#') {
        let (hex, start) = match bytes.get(1) {
            Some(b'x' | b'X') => (true, 2),
            _ => (false, 1),
        };
        let digits =
            bytes[start..].iter().take_while(|b| if hex { b.is_ascii_hexdigit() } else { b.is_ascii_digit() }).count();
        if digits == 0 {
            return None;
        }
        let end = start + digits;
        let value = u32::from_str_radix(&s[start..end.min(start + 8)], if hex { 16 } else { 10 }).unwrap_or(u32::MAX);
        let used = if bytes.get(end) == Some(&b';') { end + 1 } else { end };
        // WHATWG: 0, surrogates and values past U+10FFFF become U+FFFD.
        let ch = char::from_u32(value).filter(|&c| c != '\0').unwrap_or('\u{fffd}');
        return Some((ch.to_string(), used));
    }
    let len = bytes.iter().take(MAX_REFERENCE).take_while(|b| b.is_ascii_alphanumeric()).count();
    let name = &s[..len];
    if bytes.get(len) == Some(&b';') {
        if let Ok(i) = NAMED.binary_search_by(|(n, _)| n.cmp(&name)) {
            return Some((NAMED[i].1.to_string(), len + 1));
        }
    }
    LEGACY
        .iter()
        .find(|l| name.starts_with(**l))
        .and_then(|l| NAMED.binary_search_by(|(n, _)| n.cmp(l)).ok().map(|i| (NAMED[i].1.to_string(), l.len())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(s: &str) -> String {
        let mut out = String::new();
        decode_into(s, &mut out);
        out
    }

    #[test]
    fn table_is_sorted() {
        assert!(NAMED.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn references() {
        assert_eq!(decode("a &amp; b &lt;c&gt; &eacute;t&eacute;"), "a & b <c> été");
        assert_eq!(decode("&#233;&#xE9;&#XE9;&#0;&#xD800;&#99999999999;"), "ééé\u{fffd}\u{fffd}\u{fffd}");
        assert_eq!(decode("&amp &copy2024 &ampx;"), "& ©2024 &x;");
        assert_eq!(decode("&unknown; & &; &#; &#x;"), "&unknown; & &; &#; &#x;");
        assert_eq!(decode("R&D"), "R&D");
    }

    #[test]
    fn cut_references() {
        assert_eq!(cut_reference_len("a &am"), 3);
        assert_eq!(cut_reference_len("a &#23"), 4);
        assert_eq!(cut_reference_len("a &"), 1);
        assert_eq!(cut_reference_len("a & b"), 0);
        assert_eq!(cut_reference_len("a &amp;"), 0);
        assert_eq!(cut_reference_len("a &abcdefghijklmnop"), 0);
    }
}
