//! What each element writes: a void element (`br`, `hr`, `img`) at once,
//! any other when it opens (a block break, a heading marker, a list item's
//! marker, an inline wrapper, a fence, a table) and when it closes.

use lol_html::send::Element;

use super::tags::Tag;
use super::{Container, Conv, Effect, Frame, Open, Pre, Sep, Table};
use crate::markdown::entities::decoded;

impl Conv {
    pub(super) fn void(&mut self, name: &str, el: &Element<'_, '_>) {
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
            "img" if self.pre.is_none() && self.code.is_none() && !self.page.no_images => {
                let Some(src) = el.get_attribute("src").and_then(|s| self.base.absolute(&s)) else { return };
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

    pub(super) fn open_effect(&mut self, name: &str, tag: Tag, el: &Element<'_, '_>) -> Effect {
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
            "a" => match el.get_attribute("href").and_then(|h| self.base.absolute(&h)) {
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

    pub(super) fn close(&mut self, e: Open) {
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

    pub(super) fn close_all_frames(&mut self) {
        for i in (0..self.frames.len()).rev() {
            if self.frames[i].opened {
                self.frames[i].opened = false;
                let close = std::mem::take(&mut self.frames[i].close);
                self.w(&close);
                self.frames[i].close = close;
            }
        }
    }
}
