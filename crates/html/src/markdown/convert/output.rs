//! Writing the Markdown: the block break and line prefixes (quotes, list
//! items) owed before content, pending spaces and hard breaks, heading
//! markers, inline wrappers opened when content follows, and text with
//! Markdown's special characters escaped. Output goes to a held `pre`
//! block, the open table cell or the body.

use super::code::MAX_PRE_HELD;
use super::{Container, Conv, Sep};

impl Conv {
    pub(super) fn request(&mut self, sep: Sep) {
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
    pub(super) fn ensure_content(&mut self) {
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

    pub(super) fn flush_sep(&mut self) {
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

    pub(super) fn write_prefix(&mut self, blank: bool) {
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
    pub(super) fn w(&mut self, s: &str) {
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
    pub(super) fn flush_bang(&mut self, link_follows: bool) {
        if self.bang {
            self.bang = false;
            self.out.push_str(if link_follows { "\\!" } else { "!" });
        }
    }

    /// Text with Markdown's special characters escaped: everywhere the
    /// ones that start emphasis, code, links and HTML (and `|` in a table
    /// cell); at the start of a line the ones that start a heading, a
    /// quote, a list item, a setext underline or a fence.
    pub(super) fn push_escaped(&mut self, word: &str) {
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
