//! [`Conv`]: the state of one conversion, driven by lol_html's element and
//! text handlers, and its life: built per response, the first `main` or
//! `article` selecting, the Markdown taken as it is ready, the end of the
//! document.
//!
//! The work is split by concern over the child modules, each an `impl
//! Conv` block or plain functions: `tree` (the stack of open elements and
//! HTML's implied ends), `effects` (what each element writes when it opens
//! and closes), `text` (text chunks), `code` (`pre` blocks and inline
//! code), `tables`, `output` (block breaks, line prefixes, inline wrappers,
//! escaping), `head` (the page's metadata and the front matter), `links`
//! (link addresses) and `tags` (the element names the implied ends look
//! at). The state is defined here, so that its fields stay private to
//! this module and those.

mod code;
mod effects;
mod head;
mod links;
mod output;
mod tables;
mod tags;
mod text;
mod tree;

use std::sync::Arc;

use super::{MarkdownConfig, PageInfo, SELECTION_WINDOW};
use links::Base;
use tags::Tag;

// The front matter test of `markdown::tests` quotes through it.
#[cfg(test)]
pub(crate) use head::yaml;

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
    /// What links resolve against: the page URL, then its `<base href>`.
    base: Base,
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

impl Conv {
    pub(crate) fn new(cfg: Arc<MarkdownConfig>, page: PageInfo) -> Conv {
        Conv {
            cfg,
            base: Base::new(&page.url),
            page,
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
    pub(super) fn hidden(&self) -> bool {
        self.dropping > 0 || self.head > 0 || (self.selection == Selection::Selected && self.selected == 0)
    }

    /// Output goes to the open table cell.
    pub(super) fn in_cell(&self) -> bool {
        self.caption == 0 && self.table.as_ref().is_some_and(|t| t.cell.is_some())
    }

    /// The first `main` or `article`: what was held is dropped and only
    /// their content is converted from now on.
    pub(super) fn select(&mut self) {
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
