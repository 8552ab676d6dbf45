//! Code: `pre` blocks as fenced code (the language from a
//! `class="language-x"`), held until they close to choose a fence longer
//! than any backtick run in them, and inline `code` in a backtick span
//! likewise (CommonMark, "Fenced code blocks" and "Code spans").

use lol_html::send::Element;

use super::{Conv, Sep};

/// Markdown of a `pre` block held to choose its fence, in bytes; past it
/// the block streams behind the fence chosen so far.
pub(super) const MAX_PRE_HELD: usize = 64 * 1024;

impl Conv {
    pub(super) fn pre_language(&mut self, el: &Element<'_, '_>) {
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

    pub(super) fn pre_text(&mut self, t: &str) {
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
    pub(super) fn release_pre(&mut self) {
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

    pub(super) fn close_code(&mut self) {
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
