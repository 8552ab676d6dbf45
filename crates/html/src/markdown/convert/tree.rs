//! The stack of open elements. lol_html runs an end-tag handler only for
//! an end tag that is written, so the implied ends of HTML's tree
//! construction (a `<p>` closed by the next block, an `<li>` by the next
//! item, a cell by the next cell) are applied here, in the simplified form
//! documented on [`Conv::implicit_close`]. What an element writes is
//! `effects`' part; this module decides when it opens and closes.

use lol_html::send::Element;

use super::tags::{closes_p, in_head, Tag};
use super::{Conv, Effect, Open, Selection, Sep};
use crate::markdown::MAX_DEPTH;

impl Conv {
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

    pub(super) fn pop_to(&mut self, index: usize) {
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
}
