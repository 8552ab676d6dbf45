//! HTML to Markdown for agents that ask for it (`Accept: text/markdown`),
//! streaming through lol_html: bytes of HTML in, Markdown out as the chunks
//! arrive, never the whole page held.
//!
//! The output starts with YAML front matter (title, URL, the robots rules in
//! force, the Content-Usage that applies), then the page as CommonMark with
//! GitHub tables: headings, paragraphs, links and images made absolute
//! against the page URL or its `<base href>`, nested lists, emphasis, inline
//! code, fenced `pre` (language from `class="language-x"`), blockquotes,
//! tables, hard line breaks and thematic breaks. The elements of
//! [`MarkdownConfig::drop`], `[hidden]` and `[aria-hidden="true"]` are left
//! out with their content. Text is decoded (character references, the
//! page's charset), its whitespace collapsed as a browser renders it, and
//! Markdown's special characters are escaped.
//!
//! What is converted, decided as the page streams: until the first `<main>`
//! or `<article>` opens, the converted body is held back (at most
//! [`SELECTION_WINDOW`] bytes of Markdown). When one opens, what was held is
//! dropped and from then on only the content of `main` and `article`
//! elements is converted (every one of them, in document order). When the
//! page ends without one, or the held Markdown outgrows the window, the
//! whole body is converted: a page that has not opened its `main` within
//! that much converted text is taken whole.
//!
//! Bounds per response: the held window; one table held at a time, at most
//! [`MarkdownConfig::max_table_bytes`] of Markdown, after which its rows are
//! written as they close with the columns known so far (and a single cell is
//! cut at that size); inline code held until it closes, at most
//! [`MAX_INLINE_CODE`] bytes; a `pre` block until it closes, at most
//! 64 KiB, to give it a fence longer than any backtick run in it (past
//! that, the rest streams behind the fence chosen so far); the title, at
//! most [`MAX_TITLE`]; an element
//! stack of at most [`MAX_DEPTH`] entries (deeper elements are read as
//! plain spans). lol_html's own memory is capped by
//! [`MarkdownConfig::max_memory`]; past it the conversion stops and what was
//! converted is what the client gets.
//!
//! Not handled: `&nbsp;` collapses like a space; a `noai` in the page's
//! own `<meta name="robots">` reaches the front matter but cannot stop a
//! conversion whose headers are already sent (the proxy decides from the
//! headers).

mod convert;
mod entities;

use std::borrow::Cow;
use std::sync::{Arc, LazyLock, Mutex};

use lol_html::html_content::TextChunk;
use lol_html::send::{DocumentContentHandlers, Element, ElementContentHandlers, HtmlRewriter};
use lol_html::{OutputSink, Selector};

use crate::rewriter::{base_settings, encoding_for, utf16_bom};
use crate::slots::lock;
use crate::{Bail, Unsupported};
use convert::Conv;

/// Converted Markdown held back while the page has not opened a `main` or
/// `article` yet, in bytes; past it the whole page is converted.
pub const SELECTION_WINDOW: usize = 64 * 1024;

/// Longest inline `code` kept, in bytes; the rest of it is left out (its
/// backtick fence depends on its whole content, so it is held until it
/// closes).
pub const MAX_INLINE_CODE: usize = 4 * 1024;

/// Longest title kept for the front matter, in bytes.
pub const MAX_TITLE: usize = 1024;

/// Deepest element nesting followed; deeper elements count as spans.
pub const MAX_DEPTH: usize = 512;

/// The elements dropped with their content unless the policy names its own
/// set.
pub use crawlgate_policy::markdown::DEFAULT_DROP;

/// The policy's side of a conversion, built once per policy load.
#[derive(Clone, Debug)]
pub struct MarkdownConfig {
    /// Lowercase element names dropped with their content.
    pub drop: Vec<String>,
    /// Markdown of one table held to align its columns, in bytes.
    pub max_table_bytes: usize,
    /// lol_html memory limit in bytes.
    pub max_memory: usize,
}

impl Default for MarkdownConfig {
    fn default() -> MarkdownConfig {
        MarkdownConfig {
            drop: DEFAULT_DROP.iter().map(|s| s.to_string()).collect(),
            max_table_bytes: 64 * 1024,
            max_memory: 4 << 20,
        }
    }
}

impl MarkdownConfig {
    /// The converter's side of the policy's `[markdown]` table.
    pub fn from_settings(s: &crawlgate_policy::markdown::MarkdownSettings, max_memory: usize) -> MarkdownConfig {
        MarkdownConfig { drop: s.drop.clone(), max_table_bytes: s.max_table_bytes, max_memory }
    }
}

/// What the caller knows about the page for the front matter.
#[derive(Clone, Debug, Default)]
pub struct PageInfo {
    /// The absolute URL the page was requested at: links resolve against it
    /// (or the page's `<base href>`), and it is the front matter's `url`
    /// unless the page names a canonical URL.
    pub url: String,
    /// The robots rules the proxy applies to the page (its `X-Robots-Tag`
    /// value), if any; the page's own `<meta name="robots">` is added.
    pub robots: Option<String>,
    /// The Content-Usage value that applies, if any.
    pub content_usage: Option<String>,
    /// Leave the page's images out (its robots rules say `noimageai` to
    /// the agent asking).
    pub no_images: bool,
}

/// The handler's selector, `*`, parsed once per process.
static EVERY_ELEMENT: LazyLock<Option<Selector>> = LazyLock::new(|| "*".parse().ok());

/// The elements that may be hidden (`hidden`, `aria-hidden`): lol_html's
/// selector matching finds them in the tag it has read, where a lookup in
/// every element's handler would allocate the attribute's name for each.
static MAYBE_HIDDEN: LazyLock<Option<Selector>> = LazyLock::new(|| "[hidden], [aria-hidden]".parse().ok());

/// lol_html's output, unused: the Markdown is built by the handlers.
struct Discard;

impl OutputSink for Discard {
    fn handle_chunk(&mut self, _: &[u8]) {}
}

/// A streaming HTML to Markdown converter for one response. `Send`, not
/// `Sync`.
pub struct MarkdownConverter {
    inner: Option<HtmlRewriter<'static, Discard>>,
    state: Arc<Mutex<Conv>>,
    bail: Option<Bail>,
    /// Whether the start of the body has been checked for a UTF-16 byte
    /// order mark, and its first byte while the second has not come.
    sniffed: bool,
    held: Option<u8>,
    /// Characters of Markdown returned so far, for [`MarkdownConverter::tokens`].
    chars: usize,
    /// Bytes of Markdown returned so far.
    bytes: usize,
}

impl MarkdownConverter {
    /// A converter for a body in `charset` (the Content-Type label, if any;
    /// without one, a `<meta charset>` in the page is honoured).
    pub fn new(
        config: &Arc<MarkdownConfig>,
        page: PageInfo,
        charset: Option<&str>,
    ) -> Result<MarkdownConverter, Unsupported> {
        MarkdownConverter::build(config, page, charset, MAYBE_HIDDEN.as_ref())
    }

    /// [`MarkdownConverter::new`] with the selector of the maybe hidden
    /// elements; without one, the element handler reads every element's
    /// attributes.
    fn build(
        config: &Arc<MarkdownConfig>,
        page: PageInfo,
        charset: Option<&str>,
        maybe_hidden: Option<&'static Selector>,
    ) -> Result<MarkdownConverter, Unsupported> {
        let encoding = encoding_for(charset)?;
        let max_memory = config.max_memory;
        let state = Arc::new(Mutex::new(Conv::new(config.clone(), page)));
        let s = state.clone();
        let on_element = move |el: &mut Element<'_, '_>| -> lol_html::HandlerResult {
            let id = lock(&s).start(el);
            if let (Some(id), Some(handlers)) = (id, el.end_tag_handlers()) {
                let s = s.clone();
                handlers.push(Box::new(move |_end| {
                    lock(&s).end(id);
                    Ok(())
                }));
            }
            Ok(())
        };
        let s = state.clone();
        let on_maybe_hidden = move |el: &mut Element<'_, '_>| -> lol_html::HandlerResult {
            if el.has_attribute("hidden")
                || el.get_attribute("aria-hidden").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
            {
                lock(&s).hide_next();
            }
            Ok(())
        };
        let s = state.clone();
        let on_text = move |t: &mut TextChunk<'_>| -> lol_html::HandlerResult {
            lock(&s).text(t.as_str(), t.text_type(), t.last_in_text_node());
            Ok(())
        };
        let mut settings = base_settings(max_memory, encoding)
            .append_document_content_handler(DocumentContentHandlers::default().text(on_text));
        // Registered first, so it runs before the handler of every element.
        match maybe_hidden {
            Some(maybe_hidden) => {
                settings = settings.append_element_content_handler((
                    Cow::Borrowed(maybe_hidden),
                    ElementContentHandlers::default().element(on_maybe_hidden),
                ));
            }
            None => lock(&state).check_hidden_attributes(),
        }
        if let Some(every) = EVERY_ELEMENT.as_ref() {
            settings = settings.append_element_content_handler((
                Cow::Borrowed(every),
                ElementContentHandlers::default().element(on_element),
            ));
        }
        Ok(MarkdownConverter {
            inner: Some(HtmlRewriter::new(settings, Discard)),
            state,
            bail: None,
            sniffed: false,
            held: None,
            chars: 0,
            bytes: 0,
        })
    }

    /// Feeds one chunk of HTML; returns the Markdown ready so far (often
    /// empty while the converter holds output back).
    pub fn write(&mut self, chunk: &[u8]) -> Vec<u8> {
        if !self.sniffed {
            let held = self.held.take();
            let mut start = Vec::with_capacity(2);
            start.extend(held);
            start.extend_from_slice(&chunk[..chunk.len().min(2)]);
            match start.as_slice() {
                [] => return Vec::new(),
                [b] => {
                    self.held = Some(*b);
                    return Vec::new();
                }
                bom if utf16_bom(bom).is_some() => {
                    self.sniffed = true;
                    self.stop(Bail::Utf16Bom);
                    return self.take();
                }
                [_, ..] => {
                    self.sniffed = true;
                    if let Some(b) = held {
                        self.feed(&[b]);
                    }
                }
            }
        }
        self.feed(chunk);
        self.take()
    }

    fn feed(&mut self, chunk: &[u8]) {
        if let Some(rw) = self.inner.as_mut() {
            if let Err(e) = rw.write(chunk) {
                self.stop(Bail::Rewriting(e.to_string()));
            }
        }
    }

    fn stop(&mut self, why: Bail) {
        self.inner = None;
        self.bail.get_or_insert(why);
    }

    fn take(&mut self) -> Vec<u8> {
        let out = lock(&self.state).take();
        self.counted(out)
    }

    /// Counts the characters of `out` on its way to the caller: the output
    /// is counted once, as it leaves, and never held for it.
    fn counted(&mut self, out: String) -> Vec<u8> {
        self.chars += out.chars().count();
        self.bytes += out.len();
        out.into_bytes()
    }

    /// Ends the document; returns the rest of the Markdown.
    pub fn finish(&mut self) -> Vec<u8> {
        if let Some(b) = self.held.take() {
            self.sniffed = true;
            self.feed(&[b]);
        }
        if let Some(rw) = self.inner.take() {
            if let Err(e) = rw.end() {
                self.bail.get_or_insert(Bail::Rewriting(e.to_string()));
            }
        }
        let out = {
            let mut st = lock(&self.state);
            st.finish();
            st.take()
        };
        self.counted(out)
    }

    /// The `x-markdown-tokens` estimate of the Markdown returned so far
    /// ([`estimate_tokens`] of it, counted as it was returned): after
    /// [`MarkdownConverter::finish`], that of the whole output.
    pub fn tokens(&self) -> usize {
        tokens_of(self.chars)
    }

    /// Bytes of Markdown returned so far.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Why the conversion stopped early, if it did.
    pub fn bail(&self) -> Option<&Bail> {
        self.bail.as_ref()
    }
}

/// Converts a whole document at once (tests, benchmarks, `explain`).
pub fn markdown_all(
    config: &Arc<MarkdownConfig>,
    page: PageInfo,
    charset: Option<&str>,
    input: &[u8],
) -> Result<Vec<u8>, Unsupported> {
    let mut conv = MarkdownConverter::new(config, page, charset)?;
    let mut out = conv.write(input);
    out.extend_from_slice(&conv.finish());
    Ok(out)
}

/// The `x-markdown-tokens` estimate of a Markdown text: its characters
/// divided by four, rounded up (the rule of thumb OpenAI documents for
/// English text with its tokenizers).
pub fn estimate_tokens(markdown: &str) -> usize {
    tokens_of(markdown.chars().count())
}

/// The estimate of `chars` characters of Markdown: a quarter, rounded up.
fn tokens_of(chars: usize) -> usize {
    chars.div_ceil(4)
}

#[cfg(test)]
mod tests;
