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
