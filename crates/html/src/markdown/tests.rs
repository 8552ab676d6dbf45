#![allow(clippy::panic, clippy::unwrap_used)]
use super::*;

fn md(html: &str) -> String {
    let cfg = Arc::new(MarkdownConfig::default());
    let page =
        PageInfo { url: "https://example.com/a/b.html".into(), robots: None, content_usage: None, no_images: false };
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
        no_images: false,
    };
    let out = markdown_all(&cfg, page, None, b"<title>T\n\"1\"</title><p>x</p>").unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "---\ntitle: \"T \\\"1\\\"\"\nurl: \"https://e.example/p\"\nrobots: \"noai\"\ncontent-usage: \"train-ai=n\"\n---\n\nx\n"
    );
}

/// Every character YAML forbids in a document (YAML 1.2 section 5.1),
/// and the ones that would end the scalar, come back from a real YAML
/// parser as they went in: the front matter of a page titled with them
/// parses, and its title is the page's.
#[test]
fn front_matter_parses_back_with_a_yaml_parser() {
    let mut hostile: Vec<String> = vec![
        "a\"b".into(),
        "\"".into(),
        "\\".into(),
        "a\\\"b".into(),
        "ends with \\".into(),
        "---".into(),
        "x: y # z".into(),
        "\u{2028}\u{2029}\u{feff}\u{85}".into(),
    ];
    let forbidden = (0u32..0x20).chain(0x7f..=0x9f).chain([0xfffe, 0xffff]);
    for c in forbidden.filter_map(char::from_u32) {
        hostile.push(format!("t{c}t"));
    }
    hostile.push((0u32..0x20).chain(0x7f..=0x9f).filter_map(char::from_u32).collect());
    for s in &hostile {
        let doc = format!("v: {}\n", convert::yaml(s));
        let parsed: std::collections::BTreeMap<String, String> =
            serde_yaml::from_str(&doc).unwrap_or_else(|e| panic!("{s:?}: {e}\n{doc}"));
        assert_eq!(parsed.get("v"), Some(s), "{doc}");
    }
    let cfg = Arc::new(MarkdownConfig::default());
    for title in &hostile {
        let page = PageInfo {
            url: format!("https://e.example/{}", title.len()),
            robots: Some(title.clone()),
            content_usage: Some(title.clone()),
            no_images: false,
        };
        // The title as the converter keeps it: whitespace collapsed, ends
        // trimmed; character references carry the characters a page could
        // not hold raw.
        let escaped: String = title.chars().map(|c| format!("&#x{:X};", c as u32)).collect();
        let html = format!("<title>{escaped}</title><p>x</p>");
        let out = String::from_utf8(markdown_all(&cfg, page, None, html.as_bytes()).unwrap()).unwrap();
        let yaml = out.strip_prefix("---\n").and_then(|r| r.split_once("---\n\n")).map(|(y, _)| y).unwrap();
        let parsed: std::collections::BTreeMap<String, String> =
            serde_yaml::from_str(yaml).unwrap_or_else(|e| panic!("{title:?}: {e}\n{yaml}"));
        assert_eq!(parsed.get("robots"), Some(title), "{yaml}");
        assert_eq!(parsed.get("content-usage"), Some(title), "{yaml}");
        // The title: a character reference to NUL or a C1 control is
        // replaced by the HTML rules (WHATWG HTML, numeric character
        // reference end state); what the converter made of it comes back.
        let kept = parsed.get("title").map(String::as_str);
        assert!(kept.is_some_and(|t| !t.is_empty()) || title.trim().is_empty(), "{title:?}: {yaml}");
    }
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

/// Links resolve against the page's canonical URL when it names the site
/// asked (or the request named none: an address), against `<base href>`
/// over both, and against the request's URL otherwise.
#[test]
fn links_resolve_against_canonical_or_base() {
    let cfg = Arc::new(MarkdownConfig::default());
    let convert = |url: &str, head: &str| {
        let page = PageInfo { url: url.into(), robots: None, content_usage: None, no_images: false };
        let html = format!(
            "<head>{head}</head><main><p><a href=\"/authors/jane\">Jane</a> <img src=\"i.png\" alt=\"i\"></p></main>"
        );
        let out = String::from_utf8(markdown_all(&cfg, page, None, html.as_bytes()).unwrap()).unwrap();
        out.rsplit("---\n\n").next().unwrap_or_default().to_string()
    };
    let canonical = "<link rel=\"canonical\" href=\"https://www.example.com/news/a\">";
    let rows: &[(&str, &str, &str)] = &[
        (
            "http://127.0.0.1:21100/news/a",
            canonical,
            "[Jane](https://www.example.com/authors/jane) ![i](https://www.example.com/news/i.png)\n",
        ),
        (
            "http://www.example.com/news/a",
            canonical,
            "[Jane](https://www.example.com/authors/jane) ![i](https://www.example.com/news/i.png)\n",
        ),
        (
            "http://example.com/news/a",
            canonical,
            "[Jane](https://www.example.com/authors/jane) ![i](https://www.example.com/news/i.png)\n",
        ),
        // Another publisher's canonical (a syndicated page): this site's links.
        (
            "https://mirror.example/news/a",
            canonical,
            "[Jane](https://mirror.example/authors/jane) ![i](https://mirror.example/news/i.png)\n",
        ),
        // Credentials in the canonical: not taken.
        (
            "http://127.0.0.1/news/a",
            "<link rel=\"canonical\" href=\"https://u:p@www.example.com/x/\">",
            "[Jane](http://127.0.0.1/authors/jane) ![i](http://127.0.0.1/news/i.png)\n",
        ),
        // <base href> wins, before or after the canonical, and resolves
        // against the page's own URL.
        (
            "http://127.0.0.1/news/a",
            "<base href=\"/static/\"><link rel=\"canonical\" href=\"https://www.example.com/news/a\">",
            "[Jane](http://127.0.0.1/authors/jane) ![i](http://127.0.0.1/static/i.png)\n",
        ),
        (
            "http://127.0.0.1/news/a",
            "<link rel=\"canonical\" href=\"https://www.example.com/news/a\"><base href=\"/static/\">",
            "[Jane](http://127.0.0.1/authors/jane) ![i](http://127.0.0.1/static/i.png)\n",
        ),
        ("http://127.0.0.1/news/a", "", "[Jane](http://127.0.0.1/authors/jane) ![i](http://127.0.0.1/news/i.png)\n"),
    ];
    for (url, head, want) in rows {
        assert_eq!(convert(url, head), *want, "{url} {head}");
    }
}

/// `noimageai` for the agent: the text is converted, the images left out.
#[test]
fn no_images_leaves_images_out() {
    let cfg = Arc::new(MarkdownConfig::default());
    let html = b"<main><p>a <img src=\"/i.png\" alt=\"I\"> b</p></main>";
    let page = |no_images| PageInfo { url: "https://e.example/p".into(), no_images, ..PageInfo::default() };
    let with = String::from_utf8(markdown_all(&cfg, page(false), None, html).unwrap()).unwrap();
    let without = String::from_utf8(markdown_all(&cfg, page(true), None, html).unwrap()).unwrap();
    assert_eq!(with, "---\nurl: \"https://e.example/p\"\n---\n\na ![I](https://e.example/i.png) b\n");
    assert_eq!(without, "---\nurl: \"https://e.example/p\"\n---\n\na b\n");
}
