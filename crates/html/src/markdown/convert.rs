//! [`Conv`]: the state of one conversion, driven by lol_html's element and
//! text handlers. It keeps its own stack of open elements because lol_html
//! runs an end-tag handler only for an end tag that is written: the
//! implied ends of HTML's tree construction (a `<p>` closed by the next
//! block, an `<li>` by the next item, a cell by the next cell) are applied
//! here, in the simplified form documented on [`Conv::implicit_close`].

use std::sync::Arc;

use lol_html::html_content::TextType;
use lol_html::send::Element;
use url::Url;

use super::entities::{cut_reference_len, decode_into};
use super::{MarkdownConfig, PageInfo, MAX_DEPTH, MAX_INLINE_CODE, MAX_TITLE, SELECTION_WINDOW};

/// Longest `<meta name="robots">` text kept for the front matter.
const MAX_PAGE_ROBOTS: usize = 256;

/// Markdown of a `pre` block held to choose its fence, in bytes; past it
/// the block streams behind the fence chosen so far.
const MAX_PRE_HELD: usize = 64 * 1024;

/// The element names the implied-end rules look at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tag {
    A,
    Body,
    Button,
    Caption,
    Dd,
    Dl,
    Dt,
    Head,
    Heading,
    Html,
    Li,
    List,
    P,
    Table,
    Cell,
    Tr,
    Section,
    Template,
    Other,
}

impl Tag {
    fn of(name: &str) -> Tag {
        match name {
            "a" => Tag::A,
            "body" => Tag::Body,
            "button" => Tag::Button,
            "caption" => Tag::Caption,
            "dd" => Tag::Dd,
            "dl" => Tag::Dl,
            "dt" => Tag::Dt,
            "head" => Tag::Head,
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => Tag::Heading,
            "html" => Tag::Html,
            "li" => Tag::Li,
            "ul" | "ol" | "menu" => Tag::List,
            "p" => Tag::P,
            "table" => Tag::Table,
            "td" | "th" => Tag::Cell,
            "tr" => Tag::Tr,
            "thead" | "tbody" | "tfoot" => Tag::Section,
            "template" => Tag::Template,
            _ => Tag::Other,
        }
    }

    /// Where a search for an open element to close stops (HTML's "button
    /// scope", reduced to the elements that matter here).
    fn is_scope_boundary(self) -> bool {
        matches!(self, Tag::Html | Tag::Table | Tag::Cell | Tag::Caption | Tag::Template | Tag::Button)
    }
}

/// Start tags that close an open `<p>` (WHATWG HTML, "in body" insertion
/// mode).
fn closes_p(name: &str) -> bool {
    matches!(
        name,
        "address"
            | "article"
            | "aside"
            | "blockquote"
            | "center"
            | "dd"
            | "details"
            | "dialog"
            | "dir"
            | "div"
            | "dl"
            | "dt"
            | "fieldset"
            | "figcaption"
            | "figure"
            | "footer"
            | "form"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "header"
            | "hgroup"
            | "hr"
            | "li"
            | "listing"
            | "main"
            | "menu"
            | "nav"
            | "ol"
            | "p"
            | "pre"
            | "search"
            | "section"
            | "summary"
            | "table"
            | "ul"
            | "xmp"
    )
}

/// Elements that may stand in `<head>`; any other element ends it.
fn in_head(name: &str) -> bool {
    matches!(name, "base" | "link" | "meta" | "noscript" | "script" | "style" | "template" | "title")
}

/// What an open element does to the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Effect {
    None,
    Head,
    Title,
    /// A `main` or `article` being converted in selection mode.
    Select,
    Block,
    Heading,
    List,
    Item,
    Quote,
    Pre,
    Code,
    Frame,
    Table,
    NestedTable,
    Row,
    Cell,
    Caption,
}

struct Open {
    id: u32,
    tag: Tag,
    effect: Effect,
    /// Dropped with its content (the drop set, `hidden`, `aria-hidden`).
    drops: bool,
    /// Its open effect ran (and so its close effect runs).
    active: bool,
}

/// Separation owed before the next content.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Sep {
    None,
    Line,
    Blank,
}

/// What prefixes the lines of a block.
enum Container {
    Quote,
    List { ordered: bool, next: u64 },
    Item { marker: String, emitted: bool },
}

/// An inline wrapper: written when content follows, closed at its end or
/// at a block break (and opened again after it).
struct Frame {
    open: &'static str,
    close: String,
    opened: bool,
}

struct Pre {
    lang: String,
    fence: bool,
    started: bool,
    at_line_start: bool,
    /// The block's Markdown while its fence is not written yet: the fence
    /// must be longer than any backtick run in the content (CommonMark's
    /// closing fence is a line of at least as many backticks).
    held: Option<String>,
    /// The fence written (or to write) around the block.
    fence_len: usize,
}

#[derive(Default)]
struct Table {
    rows: Vec<Vec<String>>,
    row: Option<Vec<String>>,
    cell: Option<String>,
    cut: bool,
    held: usize,
    cols: usize,
    streaming: bool,
    written: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Selection {
    /// No `main` or `article` yet: the converted body is held.
    Undecided,
    /// One opened: only their content is converted.
    Selected,
    /// The whole body is converted.
    Whole,
}

/// The state of one conversion.
pub(crate) struct Conv {
    cfg: Arc<MarkdownConfig>,
    page: PageInfo,
    base: Option<Url>,
    /// `scheme://host[:port]` of an http(s) `base`: an absolute-path link
    /// is this plus the path (see [`is_plain_absolute_path`]).
    base_origin: Option<String>,
    base_seen: bool,
    title: Option<String>,
    title_done: bool,
    canonical: Option<String>,
    page_robots: String,

    out: String,
    committed: bool,
    selection: Selection,

    stack: Vec<Open>,
    next_id: u32,
    dropping: u32,
    head: u32,
    in_title: u32,
    selected: u32,

    sep: Sep,
    wrote_any: bool,
    inline_started: bool,
    pending_space: bool,
    pending_break: bool,
    heading: Option<u8>,
    heading_written: bool,
    /// Markdown line-start state: 0 nothing written on the line yet, 1 only
    /// digits, 2 anything else.
    lead: u8,
    containers: Vec<Container>,
    /// The fewest containers open since the last content: a blank line
    /// before the next content carries only their prefixes (a quote that
    /// opens after a paragraph does not prefix the blank line between).
    shared_depth: usize,
    frames: Vec<Frame>,
    pre: Option<Pre>,
    code: Option<String>,
    table: Option<Table>,
    table_nest: u32,
    caption: u32,

    /// The next element has `hidden` or `aria-hidden="true"` (set by the
    /// handler of those attributes, which runs first).
    hide_next: bool,
    /// No such handler: the element handler looks at the attributes.
    check_hidden: bool,
    /// A `!` ending the last text, not written yet: it is escaped when a
    /// link's `[` follows (`![` would start an image).
    bang: bool,
    /// The end of the last text chunk when it may be a character reference
    /// cut by a chunk boundary.
    tail: String,
    scratch: String,
}

const fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c')
}

/// The bytes [`Conv::inline_rest`] stops at: whitespace and the characters
/// escaped everywhere outside a table cell (see [`escape_into`]).
static INLINE_SPECIAL: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        t[i] = is_ws(b) || matches!(b, b'\\' | b'`' | b'*' | b'_' | b'[' | b']' | b'<');
        i += 1;
    }
    t
};

impl Conv {
    pub(crate) fn new(cfg: Arc<MarkdownConfig>, page: PageInfo) -> Conv {
        let base = Url::parse(&page.url).ok();
        Conv {
            cfg,
            page,
            base_origin: base.as_ref().and_then(origin_of),
            base,
            base_seen: false,
            title: None,
            title_done: false,
            canonical: None,
            page_robots: String::new(),
            out: String::new(),
            committed: false,
            selection: Selection::Undecided,
            stack: Vec::new(),
            next_id: 0,
            dropping: 0,
            head: 0,
            in_title: 0,
            selected: 0,
            sep: Sep::None,
            wrote_any: false,
            inline_started: false,
            pending_space: false,
            pending_break: false,
            heading: None,
            heading_written: false,
            lead: 0,
            containers: Vec::new(),
            shared_depth: 0,
            frames: Vec::new(),
            pre: None,
            code: None,
            table: None,
            table_nest: 0,
            caption: 0,
            hide_next: false,
            check_hidden: false,
            bang: false,
            tail: String::new(),
            scratch: String::new(),
        }
    }

    /// Content is not converted here: in a dropped element, in the head,
    /// or outside `main`/`article` once one has been seen.
    fn hidden(&self) -> bool {
        self.dropping > 0 || self.head > 0 || (self.selection == Selection::Selected && self.selected == 0)
    }

    fn in_cell(&self) -> bool {
        self.caption == 0 && self.table.as_ref().is_some_and(|t| t.cell.is_some())
    }

    // ---- elements ----

    /// A start tag; returns the id its end-tag handler reports when the
    /// element was pushed.
    pub(crate) fn start(&mut self, el: &Element<'_, '_>) -> Option<u32> {
        let name = el.tag_name();
        let tag = Tag::of(&name);
        self.implicit_close(tag, &name);
        // `head` counts the `head` elements on the stack.
        if self.head > 0 && !in_head(&name) {
            if let Some(i) = self.stack.iter().rposition(|e| e.tag == Tag::Head) {
                self.pop_to(i);
            }
        }
        if !self.committed {
            self.metadata(&name, el);
        }
        let hidden_attribute = if self.check_hidden {
            el.has_attribute("hidden")
                || el.get_attribute("aria-hidden").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
        } else {
            std::mem::take(&mut self.hide_next)
        };
        let drops = hidden_attribute || self.cfg.drop.contains(&name);
        if (name == "main" || name == "article") && !drops && self.dropping == 0 && self.head == 0 {
            match self.selection {
                Selection::Undecided => self.select(),
                Selection::Selected => {}
                Selection::Whole => {}
            }
        }
        let hidden = self.hidden();
        if !el.can_have_content() {
            if !hidden && !drops {
                self.void(&name, el);
            }
            return None;
        }
        if self.stack.len() >= MAX_DEPTH {
            return None;
        }
        let effect = match name.as_str() {
            "head" => Effect::Head,
            "title" => Effect::Title,
            "main" | "article" if self.selection == Selection::Selected && !drops && self.dropping == 0 => {
                Effect::Select
            }
            _ if drops || hidden => Effect::None,
            _ => self.open_effect(&name, tag, el),
        };
        if effect == Effect::None && !drops && tag == Tag::Other {
            // Nothing to undo at its end and nothing the implied-end rules
            // look for (a span, an unknown element, any element in dropped
            // content): no stack entry, no end-tag handler to allocate.
            return None;
        }
        match effect {
            Effect::Head => self.head += 1,
            Effect::Title => self.in_title += 1,
            Effect::Select => {
                self.selected += 1;
                self.request(Sep::Blank);
            }
            _ => {}
        }
        if drops {
            self.dropping += 1;
        }
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        self.stack.push(Open { id, tag, effect, drops, active: !hidden && !drops });
        Some(id)
    }

    /// The element whose start tag comes next is hidden.
    pub(crate) fn hide_next(&mut self) {
        self.hide_next = true;
    }

    /// Hidden elements are found by the element handler itself.
    pub(crate) fn check_hidden_attributes(&mut self) {
        self.check_hidden = true;
    }

    /// An end tag written in the page.
    pub(crate) fn end(&mut self, id: u32) {
        if let Some(i) = self.stack.iter().rposition(|e| e.id == id) {
            self.pop_to(i);
        }
    }

    fn pop_to(&mut self, index: usize) {
        while self.stack.len() > index {
            if let Some(e) = self.stack.pop() {
                self.close(e);
            }
        }
    }

    /// The start tags that end open elements, simplified from HTML's tree
    /// construction: a block start closes an open `p` (up to a table cell
    /// or similar boundary), `li` an open `li` of the same list, `dt`/`dd`
    /// an open `dt`/`dd`, `tr` an open row, `td`/`th` an open cell,
    /// `thead`/`tbody`/`tfoot` an open section, a heading a heading that
    /// is the current element, `a` an open `a`, `body` the head.
    fn implicit_close(&mut self, tag: Tag, name: &str) {
        if closes_p(name) {
            if let Some(i) = self.find(|t| t == Tag::P, Tag::is_scope_boundary) {
                self.pop_to(i);
            }
        }
        let found = match tag {
            Tag::Li => self.find(|t| t == Tag::Li, |t| t == Tag::List || t.is_scope_boundary()),
            Tag::Dt | Tag::Dd => {
                self.find(|t| matches!(t, Tag::Dt | Tag::Dd), |t| t == Tag::Dl || t.is_scope_boundary())
            }
            Tag::Tr => self
                .find(|t| t == Tag::Tr, |t| t == Tag::Table)
                .or_else(|| self.find(|t| t == Tag::Cell, |t| t == Tag::Table)),
            Tag::Cell => self.find(|t| t == Tag::Cell, |t| matches!(t, Tag::Tr | Tag::Table)),
            Tag::Section => self.find(|t| matches!(t, Tag::Section | Tag::Tr | Tag::Cell), |t| t == Tag::Table),
            Tag::Heading => (self.stack.last().map(|e| e.tag) == Some(Tag::Heading)).then(|| self.stack.len() - 1),
            Tag::A => self.find(|t| t == Tag::A, Tag::is_scope_boundary),
            Tag::Body => self.find(|t| t == Tag::Head, |_| false),
            _ => None,
        };
        if let Some(i) = found {
            self.pop_to(i);
        }
    }

    fn find(&self, target: impl Fn(Tag) -> bool, stop: impl Fn(Tag) -> bool) -> Option<usize> {
        for (i, e) in self.stack.iter().enumerate().rev() {
            if target(e.tag) {
                return Some(i);
            }
            if stop(e.tag) {
                return None;
            }
        }
        None
    }

    /// `<base>`, the canonical `<link>`, `<meta name="robots">`: read until
    /// the front matter is written.
    fn metadata(&mut self, name: &str, el: &Element<'_, '_>) {
        match name {
            "base" if !self.base_seen => {
                if let Some(href) = el.get_attribute("href") {
                    self.base_seen = true;
                    let href = decoded(&href);
                    if let Some(b) = self
                        .base
                        .as_ref()
                        .and_then(|b| b.join(href.trim()).ok())
                        .or_else(|| Url::parse(href.trim()).ok())
                    {
                        self.base_origin = origin_of(&b);
                        self.base = Some(b);
                    }
                }
            }
            "link" if self.canonical.is_none() => {
                let canonical = el
                    .get_attribute("rel")
                    .is_some_and(|rel| rel.split_ascii_whitespace().any(|r| r.eq_ignore_ascii_case("canonical")));
                if canonical {
                    self.canonical = el.get_attribute("href").and_then(|h| self.absolute(&h));
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

    /// The first `main` or `article`: what was held is dropped and only
    /// their content is converted from now on.
    fn select(&mut self) {
        self.selection = Selection::Selected;
        self.out.clear();
        self.bang = false;
        self.sep = Sep::None;
        self.wrote_any = false;
        self.inline_started = false;
        self.pending_space = false;
        self.pending_break = false;
        self.heading = None;
        self.heading_written = false;
        self.lead = 0;
        self.containers.clear();
        self.shared_depth = 0;
        self.frames.clear();
        self.pre = None;
        self.code = None;
        self.table = None;
        self.table_nest = 0;
        self.caption = 0;
        for e in &mut self.stack {
            e.active = false;
        }
        self.commit();
    }

    /// A link or image address made absolute; `None` for an empty one and
    /// for the schemes that are not a place to go (`javascript:`,
    /// `vbscript:`, `data:`).
    fn absolute(&self, raw: &str) -> Option<String> {
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
        if let Some(origin) = self.base_origin.as_deref().filter(|_| is_plain_absolute_path(raw)) {
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
        let url = match self.base.as_ref().and_then(|b| b.join(raw).ok()) {
            Some(u) if matches!(u.scheme(), "javascript" | "vbscript" | "data") => return None,
            Some(u) => u.to_string(),
            None if raw.contains(['\t', '\n', '\r']) => return None,
            None => raw.to_string(),
        };
        let mut dest = String::with_capacity(url.len());
        push_destination(&url, &mut dest);
        Some(dest)
    }

    fn void(&mut self, name: &str, el: &Element<'_, '_>) {
        match name {
            "br" => {
                if let Some(pre) = self.pre.as_ref() {
                    if pre.fence || pre.started {
                        self.pre_text("\n");
                    }
                } else if self.code.is_some() || self.in_cell() || self.heading.is_some() {
                    self.space();
                } else if self.inline_started && self.sep == Sep::None {
                    self.pending_break = true;
                    self.pending_space = false;
                }
            }
            "hr" if self.pre.is_none() && self.code.is_none() => {
                if self.in_cell() {
                    self.space();
                } else {
                    self.request(Sep::Blank);
                    self.flush_sep();
                    self.w("---");
                    self.wrote_any = true;
                    self.inline_started = true;
                    self.request(Sep::Blank);
                }
            }
            "img" if self.pre.is_none() && self.code.is_none() => {
                let Some(src) = el.get_attribute("src").and_then(|s| self.absolute(&s)) else { return };
                let alt = el.get_attribute("alt").map(|a| decoded(&a)).unwrap_or_default();
                self.ensure_content();
                self.w("![");
                let mut collapsed = String::with_capacity(alt.len());
                for word in alt.split(|c: char| c.is_ascii_whitespace()).filter(|w| !w.is_empty()) {
                    if !collapsed.is_empty() {
                        collapsed.push(' ');
                    }
                    collapsed.push_str(word);
                }
                let in_cell = self.in_cell();
                let mut esc = String::with_capacity(collapsed.len());
                for c in collapsed.chars() {
                    if matches!(c, '\\' | '[' | ']') || (c == '|' && in_cell) {
                        esc.push('\\');
                    }
                    esc.push(c);
                }
                self.w(&esc);
                self.w("](");
                self.w(&src);
                self.w(")");
            }
            _ => {}
        }
    }

    fn open_effect(&mut self, name: &str, tag: Tag, el: &Element<'_, '_>) -> Effect {
        if self.pre.is_some() {
            if name == "code" {
                self.pre_language(el);
            }
            return Effect::None;
        }
        if self.code.is_some() {
            return Effect::None;
        }
        match name {
            "p" | "div" | "section" | "header" | "hgroup" | "figure" | "figcaption" | "address" | "details"
            | "summary" | "center" | "fieldset" | "legend" | "search" | "dialog" | "main" | "article" | "dd" => {
                self.request(Sep::Blank);
                Effect::Block
            }
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                self.request(Sep::Blank);
                if !self.in_cell() {
                    self.heading = Some(name.as_bytes()[1] - b'0');
                    self.heading_written = false;
                }
                Effect::Heading
            }
            "ul" | "ol" | "menu" | "dl" => {
                let nested = self.containers.iter().any(|c| matches!(c, Container::Item { .. }));
                self.request(if nested { Sep::Line } else { Sep::Blank });
                let start = el.get_attribute("start").and_then(|s| s.trim().parse::<u64>().ok()).unwrap_or(1);
                self.containers.push(Container::List { ordered: name == "ol", next: start });
                Effect::List
            }
            "li" => {
                self.request(Sep::Line);
                let marker = match self.containers.last_mut() {
                    Some(Container::List { ordered: true, next }) => {
                        let m = format!("{next}. ");
                        *next = next.saturating_add(1);
                        m
                    }
                    _ => "- ".to_string(),
                };
                self.containers.push(Container::Item { marker, emitted: false });
                Effect::Item
            }
            "dt" => {
                self.request(Sep::Blank);
                self.frames.push(Frame { open: "**", close: "**".into(), opened: false });
                Effect::Frame
            }
            "blockquote" => {
                self.request(Sep::Blank);
                self.containers.push(Container::Quote);
                Effect::Quote
            }
            "pre" | "listing" | "xmp" | "plaintext" => {
                if self.in_cell() {
                    return Effect::None;
                }
                self.request(Sep::Blank);
                self.pre = Some(Pre {
                    lang: String::new(),
                    fence: false,
                    started: false,
                    at_line_start: true,
                    held: None,
                    fence_len: 3,
                });
                self.pre_language(el);
                Effect::Pre
            }
            "code" | "kbd" | "samp" | "tt" => {
                self.code = Some(String::new());
                Effect::Code
            }
            "a" => match el.get_attribute("href").and_then(|h| self.absolute(&h)) {
                Some(url) => {
                    let mut close = String::with_capacity(url.len() + 3);
                    close.push_str("](");
                    close.push_str(&url);
                    close.push(')');
                    self.frames.push(Frame { open: "[", close, opened: false });
                    Effect::Frame
                }
                None => Effect::None,
            },
            "em" | "i" | "cite" | "dfn" | "var" => self.frame("*"),
            "strong" | "b" => self.frame("**"),
            "del" | "s" | "strike" => self.frame("~~"),
            "q" => self.frame("\""),
            "table" => {
                if self.table.is_some() {
                    self.table_nest += 1;
                    self.space();
                    return Effect::NestedTable;
                }
                self.request(Sep::Blank);
                self.table = Some(Table::default());
                Effect::Table
            }
            "caption" if self.table.is_some() && self.table_nest == 0 => {
                self.caption += 1;
                self.request(Sep::Blank);
                Effect::Caption
            }
            _ if tag == Tag::Tr || tag == Tag::Cell => {
                if self.table.is_none() {
                    self.request(Sep::Blank);
                    return Effect::Block;
                }
                if self.table_nest > 0 || self.caption > 0 {
                    self.space();
                    return Effect::None;
                }
                if tag == Tag::Tr {
                    self.finish_row();
                    if let Some(t) = self.table.as_mut() {
                        t.row = Some(Vec::new());
                    }
                    Effect::Row
                } else {
                    self.finish_cell();
                    self.pending_space = false;
                    if let Some(t) = self.table.as_mut() {
                        t.row.get_or_insert_with(Vec::new);
                        t.cell = Some(String::new());
                    }
                    Effect::Cell
                }
            }
            _ => Effect::None,
        }
    }

    fn frame(&mut self, marker: &'static str) -> Effect {
        self.frames.push(Frame { open: marker, close: marker.into(), opened: false });
        Effect::Frame
    }

    fn pre_language(&mut self, el: &Element<'_, '_>) {
        let Some(pre) = self.pre.as_mut() else { return };
        if pre.fence || !pre.lang.is_empty() {
            return;
        }
        let Some(class) = el.get_attribute("class") else { return };
        for c in class.split_ascii_whitespace() {
            if let Some(lang) = c.strip_prefix("language-").or_else(|| c.strip_prefix("lang-")) {
                if !lang.is_empty()
                    && lang.len() <= 32
                    && lang.bytes().all(|b| b.is_ascii_alphanumeric() || b"+-_.#".contains(&b))
                {
                    pre.lang = lang.to_string();
                    return;
                }
            }
        }
    }

    fn close(&mut self, e: Open) {
        if e.drops {
            self.dropping -= 1;
        }
        match e.effect {
            Effect::Head => self.head -= 1,
            Effect::Title => {
                self.in_title -= 1;
                self.title_done = self.title.is_some();
            }
            Effect::Select => {
                self.selected -= 1;
                if self.selected == 0 {
                    self.close_all_frames();
                }
                self.request(Sep::Blank);
            }
            _ if !e.active => {}
            Effect::Block | Effect::Caption => {
                if e.effect == Effect::Caption {
                    self.caption -= 1;
                }
                self.request(Sep::Blank);
            }
            Effect::Heading => {
                self.close_all_frames();
                self.heading = None;
                self.request(Sep::Blank);
            }
            Effect::List => {
                self.pop_container();
                self.request(Sep::Blank);
            }
            Effect::Item => {
                self.pop_container();
                self.request(Sep::Line);
            }
            Effect::Quote => {
                self.pop_container();
                self.request(Sep::Blank);
            }
            Effect::Pre => {
                if self.pre.as_ref().is_some_and(|p| p.fence) {
                    if self.pre.as_ref().is_some_and(|p| !p.at_line_start) {
                        self.w("\n");
                        self.write_prefix(false);
                    }
                    self.release_pre();
                    if let Some(pre) = self.pre.take() {
                        self.w(&"`".repeat(pre.fence_len));
                        self.inline_started = true;
                    }
                }
                self.pre = None;
                self.request(Sep::Blank);
            }
            Effect::Code => self.close_code(),
            Effect::Frame => {
                if let Some(f) = self.frames.pop() {
                    if f.opened {
                        self.w(&f.close);
                    }
                }
                if e.tag == Tag::Dt {
                    self.request(Sep::Blank);
                }
            }
            Effect::NestedTable => {
                self.table_nest -= 1;
                self.space();
            }
            Effect::Row => self.finish_row(),
            Effect::Cell => self.finish_cell(),
            Effect::Table => {
                self.finish_row();
                self.flush_rows();
                self.table = None;
                self.request(Sep::Blank);
            }
            Effect::None => {}
        }
    }

    fn pop_container(&mut self) {
        self.containers.pop();
        self.shared_depth = self.shared_depth.min(self.containers.len());
    }

    fn close_all_frames(&mut self) {
        for i in (0..self.frames.len()).rev() {
            if self.frames[i].opened {
                self.frames[i].opened = false;
                let close = std::mem::take(&mut self.frames[i].close);
                self.w(&close);
                self.frames[i].close = close;
            }
        }
    }

    // ---- tables ----

    fn finish_cell(&mut self) {
        let Some(t) = self.table.as_mut() else { return };
        let Some(mut cell) = t.cell.take() else { return };
        cell.truncate(cell.trim_end().len());
        cell.drain(..cell.len() - cell.trim_start().len());
        t.held += cell.len() + 3;
        t.cut = false;
        t.row.get_or_insert_with(Vec::new).push(cell);
    }

    fn finish_row(&mut self) {
        self.finish_cell();
        let Some(t) = self.table.as_mut() else { return };
        let Some(row) = t.row.take() else { return };
        if row.is_empty() {
            return;
        }
        if t.streaming {
            self.write_row(row);
            return;
        }
        t.cols = t.cols.max(row.len());
        t.rows.push(row);
        if t.held > self.cfg.max_table_bytes {
            t.streaming = true;
            self.flush_rows();
        }
    }

    fn flush_rows(&mut self) {
        let rows = match self.table.as_mut() {
            Some(t) => std::mem::take(&mut t.rows),
            None => return,
        };
        for row in rows {
            self.write_row(row);
        }
    }

    fn write_row(&mut self, row: Vec<String>) {
        let Some(t) = self.table.as_mut() else { return };
        let cols = t.cols.max(row.len());
        let first = t.written == 0;
        let header_cols = t.cols.max(1);
        t.written += 1;
        t.held = 0;
        self.request(Sep::Line);
        self.flush_sep();
        self.w("|");
        for i in 0..cols {
            self.w(" ");
            if let Some(cell) = row.get(i) {
                self.w(cell);
            }
            self.w(" |");
        }
        self.wrote_any = true;
        self.inline_started = true;
        if first {
            self.request(Sep::Line);
            self.flush_sep();
            self.w("|");
            for _ in 0..header_cols {
                self.w(" --- |");
            }
        }
        self.wrote_any = true;
        self.inline_started = true;
    }

    // ---- text ----

    /// A text chunk; `last` ends its text node.
    pub(crate) fn text(&mut self, raw: &str, kind: TextType, last: bool) {
        if self.in_title > 0 {
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
            return;
        }
        if self.hidden() || matches!(kind, TextType::RawText | TextType::ScriptData) {
            self.tail.clear();
            return;
        }
        if self.table.is_some() && !self.in_cell() && self.caption == 0 {
            self.tail.clear();
            return;
        }
        // Most text has no character reference to decode (nor a tail of
        // one held from the last chunk) and no no-break space: it is
        // converted where lol_html left it.
        if self.pre.is_none() && self.code.is_none() && self.tail.is_empty() {
            // lol_html ends every text node with an empty chunk.
            if raw.is_empty() {
                return;
            }
            // `C2` starts a no-break space in UTF-8.
            let plain = match kind {
                TextType::PlainText => memchr::memchr(0xC2, raw.as_bytes()).is_none(),
                _ => memchr::memchr2(b'&', 0xC2, raw.as_bytes()).is_none(),
            };
            if plain {
                self.inline_text(raw);
                return;
            }
        }
        let mut t = std::mem::take(&mut self.scratch);
        t.clear();
        if kind == TextType::PlainText {
            t.push_str(raw);
        } else {
            self.decode_chunk(raw, last, &mut t);
        }
        if t.contains('\u{a0}') {
            t = t.replace('\u{a0}', " ");
        }
        if self.pre.is_some() {
            self.pre_text(&t);
        } else if let Some(code) = self.code.as_mut() {
            for c in t.chars() {
                if code.len() + c.len_utf8() > MAX_INLINE_CODE {
                    break;
                }
                if c.is_ascii_whitespace() {
                    if !code.ends_with(' ') {
                        code.push(' ');
                    }
                } else {
                    code.push(c);
                }
            }
        } else {
            self.inline_text(&t);
        }
        self.scratch = t;
    }

    /// `raw` with the held tail before it, decoded into `out`; a new tail
    /// is held back unless the text node ends here.
    fn decode_chunk(&mut self, raw: &str, last: bool, out: &mut String) {
        let joined;
        let text = if self.tail.is_empty() {
            raw
        } else {
            self.tail.push_str(raw);
            joined = std::mem::take(&mut self.tail);
            joined.as_str()
        };
        let keep = if last { 0 } else { cut_reference_len(text) };
        let (now, later) = text.split_at(text.len() - keep);
        decode_into(now, out);
        self.tail.clear();
        self.tail.push_str(later);
    }

    fn inline_text(&mut self, t: &str) {
        let mut rest = t;
        while !rest.is_empty() {
            let ws = rest.bytes().take_while(|&b| is_ws(b)).count();
            if ws > 0 {
                self.space();
                rest = &rest[ws..];
                continue;
            }
            let len = rest.bytes().take_while(|&b| !is_ws(b)).count();
            self.ensure_content();
            self.push_escaped(&rest[..len]);
            rest = &rest[len..];
            if !self.in_cell() {
                self.inline_rest(rest);
                return;
            }
        }
    }

    /// The rest of a text chunk after a word written to the body: what
    /// [`Conv::inline_text`] does word by word, in one pass. Content is
    /// under way (no block break owed, every inline wrapper open, not at a
    /// line start), so a run of whitespace between words is one space and
    /// only the characters that start emphasis, code, links and HTML are
    /// escaped; whitespace at the end is owed as a pending space.
    fn inline_rest(&mut self, rest: &str) {
        let end = rest.bytes().rposition(|b| !is_ws(b)).map_or(0, |i| i + 1);
        let body = &rest[..end];
        if !body.is_empty() {
            // `body` starts with whitespace: the space goes out first.
            self.flush_bang(false);
            let out = &mut self.out;
            out.reserve(body.len());
            let bytes = body.as_bytes();
            let (mut i, mut from) = (0, 0);
            while i < bytes.len() {
                let b = bytes[i];
                if !INLINE_SPECIAL[b as usize] {
                    i += 1;
                    continue;
                }
                out.push_str(&body[from..i]);
                if is_ws(b) {
                    out.push(' ');
                    i += 1;
                    while i < bytes.len() && is_ws(bytes[i]) {
                        i += 1;
                    }
                } else {
                    out.push('\\');
                    out.push(b as char);
                    i += 1;
                }
                from = i;
            }
            out.push_str(&body[from..]);
            self.lead = 2;
            if body.ends_with('!') {
                self.out.pop();
                self.bang = true;
            }
        }
        if end < rest.len() {
            self.space();
        }
    }

    fn space(&mut self) {
        if let Some(code) = self.code.as_mut() {
            if !code.is_empty() && !code.ends_with(' ') {
                code.push(' ');
            }
        } else if self.in_cell() {
            if self.table.as_ref().and_then(|t| t.cell.as_ref()).is_some_and(|c| !c.is_empty()) {
                self.pending_space = true;
            }
        } else if self.inline_started && self.sep == Sep::None {
            self.pending_space = true;
        }
    }

    fn pre_text(&mut self, t: &str) {
        let Some(pre) = self.pre.as_mut() else { return };
        let mut t = t;
        if !pre.started {
            pre.started = true;
            t = t.strip_prefix("\r\n").or_else(|| t.strip_prefix('\n')).unwrap_or(t);
        }
        if t.is_empty() {
            return;
        }
        if !pre.fence {
            pre.fence = true;
            self.request(Sep::Blank);
            self.flush_sep();
            if let Some(pre) = self.pre.as_mut() {
                pre.held = Some(String::new());
            }
            self.write_prefix(false);
            self.wrote_any = true;
            self.inline_started = true;
        }
        let mut lines = t.split('\n');
        if let Some(first) = lines.next() {
            self.pre_segment(first);
        }
        for line in lines {
            self.w("\n");
            self.write_prefix(false);
            self.pre_segment(line);
        }
    }

    fn pre_segment(&mut self, s: &str) {
        let s = s.strip_suffix('\r').unwrap_or(s);
        if let Some(pre) = self.pre.as_mut() {
            if s.is_empty() {
                pre.at_line_start = self.lead == 0;
                return;
            }
            pre.at_line_start = false;
        }
        self.w(s);
    }

    /// Writes the opening fence of the held `pre` block and what it held;
    /// from now on its content goes straight out. The fence is one
    /// backtick longer than the longest run in the content so far (at
    /// least three); a block held past [`MAX_PRE_HELD`] keeps that fence
    /// for the rest of it.
    fn release_pre(&mut self) {
        let Some(pre) = self.pre.as_mut() else { return };
        let Some(held) = pre.held.take() else { return };
        pre.fence_len = longest_backtick_run(&held).max(2) + 1;
        let lang = std::mem::take(&mut pre.lang);
        let fence = "`".repeat(pre.fence_len);
        self.w(&fence);
        self.w(&lang);
        self.w("\n");
        self.w(&held);
    }

    fn close_code(&mut self) {
        let Some(code) = self.code.take() else { return };
        if code.starts_with(' ') {
            self.space();
        }
        let content = code.trim_matches(' ');
        if content.is_empty() {
            return;
        }
        let fence = "`".repeat(longest_backtick_run(content) + 1);
        let pad = if content.starts_with('`') || content.ends_with('`') { " " } else { "" };
        let content = if self.in_cell() { content.replace('|', "\\|") } else { content.to_string() };
        self.ensure_content();
        self.w(&fence);
        self.w(pad);
        self.w(&content);
        self.w(pad);
        self.w(&fence);
        if code.ends_with(' ') {
            self.space();
        }
    }

    // ---- output ----

    fn request(&mut self, sep: Sep) {
        if self.pre.is_some() || self.code.is_some() {
            return;
        }
        if self.in_cell() {
            self.space();
            return;
        }
        if self.heading_written {
            // A block inside a heading ends the heading's line: Markdown
            // headings hold one line of inline content.
            self.heading = None;
        }
        self.sep = self.sep.max(sep);
    }

    /// Writes what is owed before content: the block break and line
    /// prefix, a pending space or hard break, the heading marker, and the
    /// inline wrappers not opened yet.
    fn ensure_content(&mut self) {
        if self.in_cell() {
            let nonempty = self.table.as_ref().and_then(|t| t.cell.as_ref()).is_some_and(|c| !c.is_empty());
            if self.pending_space && nonempty {
                self.w(" ");
            }
            self.pending_space = false;
        } else {
            if self.sep != Sep::None || !self.wrote_any {
                self.flush_sep();
            } else if self.pending_space {
                self.w(" ");
            }
            self.pending_space = false;
            if self.pending_break {
                self.pending_break = false;
                self.w("\\\n");
                self.write_prefix(false);
            }
            if let Some(level) = self.heading.filter(|_| !self.heading_written) {
                self.heading_written = true;
                for _ in 0..level {
                    self.w("#");
                }
                self.w(" ");
            }
        }
        for i in 0..self.frames.len() {
            if !self.frames[i].opened {
                self.frames[i].opened = true;
                let open = self.frames[i].open;
                self.w(open);
            }
        }
        if !self.in_cell() {
            self.wrote_any = true;
            self.inline_started = true;
        }
    }

    fn flush_sep(&mut self) {
        self.close_all_frames();
        if self.wrote_any {
            self.w("\n");
            if self.sep == Sep::Blank {
                self.write_prefix(true);
                self.w("\n");
            }
        }
        self.write_prefix(false);
        self.shared_depth = self.containers.len();
        self.sep = Sep::None;
        self.pending_space = false;
        self.pending_break = false;
        self.inline_started = false;
        self.heading_written = false;
    }

    fn write_prefix(&mut self, blank: bool) {
        let mut p = String::new();
        let upto = if blank { self.shared_depth.min(self.containers.len()) } else { self.containers.len() };
        for c in &mut self.containers[..upto] {
            match c {
                Container::Quote => p.push_str("> "),
                Container::List { .. } => {}
                Container::Item { marker, emitted } => {
                    if blank || *emitted {
                        p.extend(std::iter::repeat_n(' ', marker.len()));
                    } else {
                        p.push_str(marker);
                        *emitted = true;
                    }
                }
            }
        }
        if blank {
            p.truncate(p.trim_end().len());
        }
        self.w(&p);
        self.lead = 0;
    }

    /// Raw output: to the held `pre` block, the open table cell or the
    /// body.
    fn w(&mut self, s: &str) {
        if let Some(held) = self.pre.as_mut().and_then(|p| p.held.as_mut()) {
            held.push_str(s);
            if !s.is_empty() {
                self.lead = 2;
            }
            if held.len() > MAX_PRE_HELD {
                self.release_pre();
            }
            return;
        }
        if self.in_cell() {
            let max = self.cfg.max_table_bytes;
            if let Some(t) = self.table.as_mut() {
                if let Some(cell) = t.cell.as_mut() {
                    if s.starts_with('[') && cell.ends_with('!') {
                        cell.pop();
                        cell.push_str("\\!");
                    }
                    if cell.len() + s.len() <= max {
                        cell.push_str(s);
                    } else if !t.cut {
                        t.cut = true;
                        cell.push('\u{2026}');
                    }
                }
            }
            return;
        }
        if !s.is_empty() {
            self.lead = 2;
        }
        self.flush_bang(s.starts_with('['));
        self.out.push_str(s);
    }

    /// Writes a held `!`, escaped when a link's `[` follows.
    fn flush_bang(&mut self, link_follows: bool) {
        if self.bang {
            self.bang = false;
            self.out.push_str(if link_follows { "\\!" } else { "!" });
        }
    }

    /// Text with Markdown's special characters escaped: everywhere the
    /// ones that start emphasis, code, links and HTML (and `|` in a table
    /// cell); at the start of a line the ones that start a heading, a
    /// quote, a list item, a setext underline or a fence.
    fn push_escaped(&mut self, word: &str) {
        if self.in_cell() {
            // Cells are bounded by `w`; they are rare enough to take the
            // slow path.
            let mut s = String::with_capacity(word.len() + 4);
            let mut lead = 2;
            escape_into(word, &mut lead, true, &mut s);
            self.w(&s);
            return;
        }
        if !word.is_empty() {
            self.flush_bang(false);
            escape_into(word, &mut self.lead, false, &mut self.out);
            if word.ends_with('!') {
                self.out.pop();
                self.bang = true;
            }
        }
    }

    // ---- the response ----

    /// Writes the front matter: from now on the Markdown goes out.
    fn commit(&mut self) {
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

    /// The Markdown ready to go out.
    pub(crate) fn take(&mut self) -> String {
        if self.selection == Selection::Undecided && self.out.len() > SELECTION_WINDOW {
            self.selection = Selection::Whole;
            self.commit();
        }
        if self.committed {
            // The next chunk's Markdown is about as long: its buffer is
            // allocated once instead of grown from nothing.
            let len = self.out.len();
            std::mem::replace(&mut self.out, String::with_capacity(len))
        } else {
            String::new()
        }
    }

    /// The document ended: every open element closes, the front matter is
    /// written if it was not, the body ends with a newline.
    pub(crate) fn finish(&mut self) {
        self.pop_to(0);
        self.close_code();
        if self.selection == Selection::Undecided {
            self.selection = Selection::Whole;
        }
        if self.wrote_any {
            self.close_all_frames();
            self.flush_bang(false);
            self.out.push('\n');
        }
        self.commit();
    }
}

/// Appends `word` to `out` with Markdown's special characters escaped;
/// `lead` is the line-start state, kept across calls.
fn escape_into(word: &str, lead: &mut u8, in_cell: bool, out: &mut String) {
    let plain =
        *lead == 2 && !word.bytes().any(|b| matches!(b, b'\\' | b'`' | b'*' | b'_' | b'[' | b']' | b'<' | b'|'));
    if plain {
        out.push_str(word);
        return;
    }
    for c in word.chars() {
        let escape = matches!(c, '\\' | '`' | '*' | '_' | '[' | ']' | '<')
            || (c == '|' && in_cell)
            || (*lead == 0 && matches!(c, '#' | '>' | '-' | '+' | '=' | '~' | '|'))
            || (*lead == 1 && matches!(c, '.' | ')'));
        if escape {
            out.push('\\');
        }
        out.push(c);
        *lead = if (*lead == 0 || *lead == 1) && c.is_ascii_digit() { 1 } else { 2 };
    }
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

/// The longest run of backticks in `s`.
fn longest_backtick_run(s: &str) -> usize {
    let mut longest = 0;
    let mut run = 0;
    for b in s.bytes() {
        run = if b == b'`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    longest
}

/// `s` with its character references decoded.
fn decoded(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    decode_into(s, &mut out);
    out
}

/// `s` as a YAML double-quoted scalar (YAML 1.2 section 7.3.1): `\` and
/// `"` escaped, control characters and the YAML 1.1 line breaks as
/// escapes, so that no value can end the scalar or the front matter.
fn yaml_quote(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => out.push_str(&format!("\\x{:02X}", c as u32)),
            '\u{85}' | '\u{2028}' | '\u{2029}' | '\u{feff}' => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
pub(crate) fn yaml(s: &str) -> String {
    let mut out = String::new();
    yaml_quote(s, &mut out);
    out
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
        assert!(!is_plain_absolute_path("/a/../b"));
        assert!(!is_plain_absolute_path("//host/x"));
        assert!(origin_of(&Url::parse("file:///etc/x").unwrap()).is_none());
        assert!(origin_of(&Url::parse("mailto:a@b").unwrap()).is_none());
    }
}
