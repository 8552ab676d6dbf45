//! Text: character references decoded (also across chunk boundaries), the
//! page's whitespace collapsed as a browser renders it, no-break spaces
//! read as spaces, and the words written to the body, a table cell, a
//! `pre` block or an inline code span. Text that is not converted (in a
//! dropped element, the head, script and style, between a table's cells)
//! is left out.

use lol_html::html_content::TextType;

use super::{Conv, Sep};
use crate::markdown::entities::{cut_reference_len, decode_into};
use crate::markdown::MAX_INLINE_CODE;

const fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c')
}

/// The bytes [`Conv::inline_rest`] stops at: whitespace and the characters
/// escaped everywhere outside a table cell (see `output::escape_into`).
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
    /// A text chunk; `last` ends its text node.
    pub(crate) fn text(&mut self, raw: &str, kind: TextType, last: bool) {
        if self.in_title > 0 {
            self.title_text(raw, last);
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
    pub(super) fn decode_chunk(&mut self, raw: &str, last: bool, out: &mut String) {
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

    pub(super) fn space(&mut self) {
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
}
