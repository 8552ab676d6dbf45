//! What the page says about itself, and the YAML front matter made of it:
//! the first `<title>`, `<base href>`, the canonical `<link>` and
//! `<meta name="robots">`, read until the front matter is written (when
//! the page opens its `main` or `article`, or the body is taken whole).

use lol_html::send::Element;

use super::links::{same_site, Base};
use super::Conv;
use crate::markdown::entities::decoded;
use crate::markdown::MAX_TITLE;

/// Longest `<meta name="robots">` text kept for the front matter.
const MAX_PAGE_ROBOTS: usize = 256;

impl Conv {
    /// `<base>`, the canonical `<link>`, `<meta name="robots">`: read until
    /// the front matter is written.
    pub(super) fn metadata(&mut self, name: &str, el: &Element<'_, '_>) {
        match name {
            "base" if !self.base_seen => {
                if let Some(href) = el.get_attribute("href") {
                    self.base_seen = true;
                    // Against the page's own URL, not a canonical one taken
                    // before it (HTML: the document base URL).
                    let mut base = Base::new(&self.page.url);
                    base.rebase(&href);
                    self.base = base;
                }
            }
            "link" if self.canonical.is_none() => {
                let canonical = el
                    .get_attribute("rel")
                    .is_some_and(|rel| rel.split_ascii_whitespace().any(|r| r.eq_ignore_ascii_case("canonical")));
                if canonical {
                    self.canonical = el.get_attribute("href").and_then(|h| self.base.absolute(&h));
                    // The page's own name for itself is what its links
                    // resolve against, when it names this site: the Host a
                    // client (or a front server) used may be an address
                    // of the proxy, and its scheme the inner hop's.
                    if let Some(c) =
                        self.canonical.as_deref().filter(|c| !self.base_seen && same_site(c, &self.page.url))
                    {
                        self.base = Base::new(c);
                    }
                }
            }
            "meta" => {
                let robots = el.get_attribute("name").is_some_and(|n| n.trim().eq_ignore_ascii_case("robots"));
                if robots {
                    if let Some(content) = el.get_attribute("content") {
                        let content = decoded(&content);
                        let content = content.trim();
                        if !content.is_empty() && self.page_robots.len() + content.len() + 2 <= MAX_PAGE_ROBOTS {
                            if !self.page_robots.is_empty() {
                                self.page_robots.push_str(", ");
                            }
                            self.page_robots.push_str(content);
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// A text chunk of a `<title>`: kept with its whitespace collapsed, up
    /// to [`MAX_TITLE`] bytes, until a title with text has closed or the
    /// front matter is written.
    pub(super) fn title_text(&mut self, raw: &str, last: bool) {
        if self.title_done || self.committed {
            return;
        }
        let mut t = std::mem::take(&mut self.scratch);
        t.clear();
        self.decode_chunk(raw, last, &mut t);
        let title = self.title.get_or_insert_with(String::new);
        for c in t.chars() {
            if title.len() + c.len_utf8() > MAX_TITLE {
                break;
            }
            if c.is_whitespace() {
                if !title.is_empty() && !title.ends_with(' ') {
                    title.push(' ');
                }
            } else {
                title.push(c);
            }
        }
        self.scratch = t;
    }

    /// Writes the front matter: from now on the Markdown goes out.
    pub(super) fn commit(&mut self) {
        if self.committed {
            return;
        }
        self.committed = true;
        let mut fm = String::from("---\n");
        if let Some(title) = self.title.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
            fm.push_str("title: ");
            yaml_quote(title, &mut fm);
            fm.push('\n');
        }
        let url = self.canonical.clone().unwrap_or_else(|| self.page.url.clone());
        if !url.is_empty() {
            fm.push_str("url: ");
            yaml_quote(&url, &mut fm);
            fm.push('\n');
        }
        let mut robots = self.page.robots.clone().unwrap_or_default();
        if !self.page_robots.is_empty() && !robots.eq_ignore_ascii_case(&self.page_robots) {
            if !robots.is_empty() {
                robots.push_str(", ");
            }
            robots.push_str(&self.page_robots);
        }
        if !robots.is_empty() {
            fm.push_str("robots: ");
            yaml_quote(&robots, &mut fm);
            fm.push('\n');
        }
        if let Some(cu) = self.page.content_usage.as_deref().filter(|c| !c.is_empty()) {
            fm.push_str("content-usage: ");
            yaml_quote(cu, &mut fm);
            fm.push('\n');
        }
        fm.push_str("---\n\n");
        fm.push_str(&self.out);
        self.out = fm;
    }
}

/// `s` as a YAML double-quoted scalar (YAML 1.2 section 7.3.1): `\` and
/// `"` escaped, and every character outside YAML's printable set (section
/// 5.1, `c-printable`: C0 controls but tab and line feed, DEL, the C1
/// controls U+0080..U+009F, U+FFFE and U+FFFF; a `str` holds no
/// surrogates) written as an escape, with the YAML 1.1 line breaks and the
/// byte order mark, so that no value can end the scalar or the front
/// matter, or make the document one a YAML parser refuses.
fn yaml_quote(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => push_escape(out, 'x', c as u32, 2),
            '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}' => push_escape(out, 'u', c as u32, 4),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `\xNN` or `\uNNNN`: `digits` uppercase hex digits of `n`.
fn push_escape(out: &mut String, kind: char, n: u32, digits: u32) {
    out.push('\\');
    out.push(kind);
    for i in (0..digits).rev() {
        let d = (n >> (4 * i)) & 0xf;
        out.push(char::from_digit(d, 16).map_or('0', |c| c.to_ascii_uppercase()));
    }
}

#[cfg(test)]
pub(crate) fn yaml(s: &str) -> String {
    let mut out = String::new();
    yaml_quote(s, &mut out);
    out
}
