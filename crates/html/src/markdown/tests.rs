#![allow(clippy::panic, clippy::unwrap_used)]
use super::*;

fn md(html: &str) -> String {
    let cfg = Arc::new(MarkdownConfig::default());
    let page = PageInfo { url: "https://example.com/a/b.html".into(), robots: None, content_usage: None };
    String::from_utf8(markdown_all(&cfg, page, None, html.as_bytes()).unwrap()).unwrap()
}

/// The body after the front matter.
fn body(html: &str) -> String {
    let all = md(html);
    let rest = all.strip_prefix("---\n").unwrap();
    let end = rest.find("---\n\n").unwrap();
    rest[end + 5..].to_string()
}

#[test]
fn blocks_and_inlines() {
    assert_eq!(body("<h1>Title</h1><p>Hello <b>bold</b> and <i>it</i>.</p>"), "# Title\n\nHello **bold** and *it*.\n");
    assert_eq!(body("<p>a<br>b</p><hr><p>c</p>"), "a\\\nb\n\n---\n\nc\n");
    assert_eq!(body("<p><b> x </b>y</p>"), " **x** y\n".trim_start());
}

#[test]
fn front_matter_values_are_yaml_escaped() {
    assert_eq!(convert::yaml("a \"b\" \\ c\nd\u{2028}\u{1}"), "\"a \\\"b\\\" \\\\ c\\nd\\u2028\\x01\"");
    let cfg = Arc::new(MarkdownConfig::default());
    let page = PageInfo {
        url: "https://e.example/p".into(),
        robots: Some("noai".into()),
        content_usage: Some("train-ai=n".into()),
    };
    let out = markdown_all(&cfg, page, None, b"<title>T\n\"1\"</title><p>x</p>").unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "---\ntitle: \"T \\\"1\\\"\"\nurl: \"https://e.example/p\"\nrobots: \"noai\"\ncontent-usage: \"train-ai=n\"\n---\n\nx\n"
    );
}

#[test]
fn a_main_past_the_window_does_not_select() {
    let filler = "<p>filler text</p>".repeat(SELECTION_WINDOW / 4);
    let page = format!("<body>{filler}<main><p>main</p></main><p>after</p></body>");
    let cfg = Arc::new(MarkdownConfig::default());
    let mut conv = MarkdownConverter::new(&cfg, PageInfo::default(), None).unwrap();
    let mut out = Vec::new();
    let mut most_held = 0;
    for chunk in page.as_bytes().chunks(4096) {
        let got = conv.write(chunk);
        if got.is_empty() {
            most_held += chunk.len();
        }
        out.extend_from_slice(&got);
    }
    out.extend_from_slice(&conv.finish());
    let out = String::from_utf8(out).unwrap();
    assert!(out.ends_with("filler text\n\nmain\n\nafter\n"), "{}", &out[out.len() - 60..]);
    assert_eq!(out.matches("filler text").count(), SELECTION_WINDOW / 4);
    // Output started before the page ended: what was held stayed bounded.
    assert!(most_held <= 2 * SELECTION_WINDOW, "{most_held}");
    // Within the window, main wins.
    assert_eq!(body("<p>before</p><main><p>main</p></main><p>after</p>"), "main\n");
}

#[test]
fn utf16_and_unknown_charsets() {
    let cfg = Arc::new(MarkdownConfig::default());
    assert!(MarkdownConverter::new(&cfg, PageInfo::default(), Some("utf-16le")).is_err());
    assert!(MarkdownConverter::new(&cfg, PageInfo::default(), Some("no-such")).is_err());
    let mut conv = MarkdownConverter::new(&cfg, PageInfo::default(), None).unwrap();
    let mut out = conv.write(b"\xFF");
    out.extend(conv.write(b"\xFE<\0p\0>\0"));
    out.extend(conv.finish());
    assert_eq!(conv.bail(), Some(&crate::Bail::Utf16Bom));
    assert_eq!(String::from_utf8(out).unwrap(), "---\n---\n\n");
}

#[test]
fn token_estimate() {
    assert_eq!(estimate_tokens(""), 0);
    assert_eq!(estimate_tokens("abcd"), 1);
    assert_eq!(estimate_tokens("abcde"), 2);
    assert_eq!(estimate_tokens("東京東京"), 1);
}

/// The converter's count, kept as its output leaves chunk by chunk, is the
/// estimate of the whole output, multi-byte characters counted once (a
/// character split between two input chunks too).
#[test]
fn the_converter_counts_the_characters_it_emits() {
    let cfg = Arc::new(MarkdownConfig::default());
    let page =
        "<title>東京</title><main><h1>Café ☕</h1><p>naïve <b>東京</b> text</p><ul><li>a</li></ul></main>".repeat(3);
    for size in [1, 2, 3, 7, page.len()] {
        let mut conv = MarkdownConverter::new(&cfg, PageInfo::default(), None).unwrap();
        let mut out = Vec::new();
        for chunk in page.as_bytes().chunks(size) {
            out.extend(conv.write(chunk));
        }
        out.extend(conv.finish());
        let out = String::from_utf8(out).unwrap();
        assert_eq!(conv.tokens(), estimate_tokens(&out), "chunks of {size}: {out:?}");
        assert_eq!(conv.tokens(), out.chars().count().div_ceil(4));
    }
    let mut conv = MarkdownConverter::new(&cfg, PageInfo::default(), None).unwrap();
    assert_eq!(conv.tokens(), 0);
    let out = [conv.write(b"<p>abcd</p>"), conv.finish()].concat();
    // "---\n---\n\nabcd\n": 14 characters.
    assert_eq!((String::from_utf8(out).unwrap().as_str(), conv.tokens()), ("---\n---\n\nabcd\n", 4));
}

#[test]
fn deep_nesting_is_bounded() {
    let page = format!("{}deep{}", "<div>".repeat(MAX_DEPTH * 3), "</div>".repeat(MAX_DEPTH * 3));
    assert_eq!(body(&page), "deep\n");
}

/// A script address hidden from the scheme check by a tab or newline
/// (which a URL parser drops) is still no link target.
#[test]
fn script_schemes_split_by_whitespace_are_dropped() {
    assert_eq!(
        body("<p><a href=\"java&#9;script:alert(1)\">a</a> <a href=\"JaVa&#10;script:x\">b</a> <img src=\"da&#13;ta:x\" alt=\"c\"></p>"),
        "a b\n"
    );
}

/// `!` right before a link's `[` would make it an image: it is escaped,
/// in the body and in a table cell, and only there.
#[test]
fn a_bang_before_a_link_is_escaped() {
    assert_eq!(body("<p>Wow!<a href=\"/x\">link</a></p>"), "Wow\\![link](https://example.com/x)\n");
    assert_eq!(body("<p>Wow! <a href=\"/x\">link</a> yes!</p>"), "Wow! [link](https://example.com/x) yes!\n");
    assert_eq!(body("<p>Hi!<img src=\"/i.png\" alt=\"i\"></p>"), "Hi!![i](https://example.com/i.png)\n");
    assert_eq!(
        body("<table><tr><td>Go!<a href=\"/x\">l</a></td></tr></table>"),
        "| Go\\![l](https://example.com/x) |\n| --- |\n"
    );
    // The `!` is held across a chunk boundary until what follows is known.
    let cfg = Arc::new(MarkdownConfig::default());
    let mut conv = MarkdownConverter::new(&cfg, PageInfo::default(), None).unwrap();
    let mut out = conv.write(b"<p>Wow!");
    out.extend(conv.write(b"<a href=\"https://e.example/\">l</a></p>"));
    out.extend(conv.finish());
    assert_eq!(String::from_utf8(out).unwrap(), "---\n---\n\nWow\\![l](https://e.example/)\n");
}

/// A line of three backticks in a `pre` does not end its fence: the fence
/// is longer than any backtick run in the block.
#[test]
fn a_code_fence_outlasts_the_backticks_in_its_block() {
    assert_eq!(body("<pre>a\n```\nb</pre>"), "````\na\n```\nb\n````\n");
    assert_eq!(body("<pre>x `` y</pre>"), "```\nx `` y\n```\n");
    assert_eq!(body("<pre class=\"language-md\">`````\n</pre>"), "``````md\n`````\n``````\n");
    // A block past the held bound streams behind the fence chosen so far.
    let long = "x\n".repeat(40 * 1024);
    let out = body(&format!("<pre>```\n{long}````\n</pre>"));
    assert!(out.starts_with("````\n```\nx\n"), "{}", &out[..20]);
    assert!(out.ends_with("x\n````\n````\n"), "{}", &out[out.len() - 20..]);
}

/// `hidden` and `aria-hidden="true"` drop an element, whatever their case
/// and spacing, found by lol_html's selector matching or, without it, by
/// the element handler.
#[test]
fn hidden_elements_are_dropped() {
    let html =
        "<p>a <span HIDDEN>b</span><img hidden src=\"/x.png\" alt=\"x\"> c <span aria-hidden=\" TRUE \">d</span>\
                <span aria-hidden=\"false\">e</span> <span data-hidden=\"1\">f</span> <b hidden=\"\">g</b>\
                <div hidden><p>h</p></div>i</p>";
    let want = "---\n---\n\na c e f\n\ni\n";
    assert_eq!(body(html), want.trim_start_matches("---\n---\n\n"));
    let cfg = Arc::new(MarkdownConfig::default());
    for selector in [MAYBE_HIDDEN.as_ref(), None] {
        assert!(MAYBE_HIDDEN.is_some());
        let mut conv = MarkdownConverter::build(&cfg, PageInfo::default(), None, selector).unwrap();
        let mut out = conv.write(html.as_bytes());
        out.extend(conv.finish());
        assert_eq!(String::from_utf8(out).unwrap(), want);
    }
}
