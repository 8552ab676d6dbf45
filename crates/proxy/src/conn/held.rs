//! Writes a client connection holds back instead of sending as Pingora
//! writes them: the end of a chunked rewrite, coalesced into one write,
//! and a converted Markdown response held whole from its status line on,
//! so that `x-markdown-tokens` can go in its header.
//!
//! [`Held`] is that state and its rules, apart from any socket: the stream
//! wrapper (`super::guarded::Guarded`) asks it whether a write is held
//! ([`Held::takes`]), whether a flush sends anything ([`Held::flush_waits`])
//! and has it write what it holds ([`Held::poll_release`]); the session
//! functions of `super` set it from the proxy's hooks through a shared
//! reference (hence the atomics).

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::task::{ready, Context, Poll};

use tokio::io::AsyncWrite;

/// The last chunk of a chunked body (RFC 9112 section 7.1), which Pingora
/// writes on its own when a chunked response ends.
pub(super) const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// The most a response's end held by `coalesce_response_end` keeps in
/// memory; past it the held bytes go out and the rest is written as
/// Pingora writes it.
pub(super) const MAX_COALESCED: usize = 64 * 1024;

/// The most a converted Markdown response held from its header on
/// (`hold_for_markdown_tokens`) keeps in memory, per connection. The
/// estimate goes in the header, which must wait for the end of the body;
/// the bound keeps that wait from buffering a whole large page (the issue
/// forbids it): past it the held bytes go out without the estimate and the
/// rest streams. Most converted pages are far below it (the converter keeps
/// the main content only).
pub(super) const MAX_HELD_FOR_TOKENS: usize = 256 * 1024;

/// [`Held::markdown`]: no Markdown hold.
const MD_NONE: u8 = 0;
/// [`Held::markdown`]: held from the header on, the end of the body not
/// reached yet; flushes send nothing, not even one after a last chunk.
const MD_WAITING: u8 = 1;
/// [`Held::markdown`]: the body filter has seen the end and left the
/// estimate in [`Held::tokens`]; the release adds it to the header.
const MD_ESTIMATED: u8 = 2;

/// What a connection holds of the response being written.
#[derive(Debug, Default)]
pub(super) struct Held {
    /// Set by `coalesce_response_end`: what Pingora writes and flushes is
    /// held in `buf` until the last chunk of the response is flushed, then
    /// written at once.
    coalesce: AtomicBool,
    /// Bytes held while coalescing; `buf[at..]` are not written yet.
    buf: Vec<u8>,
    at: usize,
    /// The last write held was the last chunk.
    last_chunk: bool,
    /// Where a hold from the header on (`hold_for_markdown_tokens`) is:
    /// `MD_NONE`, `MD_WAITING` or `MD_ESTIMATED`. Set only with `coalesce`,
    /// cleared with it.
    markdown: AtomicU8,
    /// The `x-markdown-tokens` estimate once `markdown` is `MD_ESTIMATED`.
    tokens: AtomicU64,
}

impl Held {
    /// Holds what is written from here to the flush of the last chunk
    /// (`coalesce_response_end`).
    pub(super) fn coalesce_end(&self) {
        self.coalesce.store(true, Ordering::Relaxed);
    }

    /// Ends the hold without a last chunk: the next flush sends what is
    /// held (`end_coalescing`).
    pub(super) fn end(&self) {
        self.markdown.store(MD_NONE, Ordering::Relaxed);
        self.coalesce.store(false, Ordering::Relaxed);
    }

    /// Holds the whole response about to be written, from its status line
    /// on, for its Markdown estimate (`hold_for_markdown_tokens`).
    pub(super) fn hold_whole(&self) {
        self.markdown.store(MD_WAITING, Ordering::Relaxed);
        self.coalesce.store(true, Ordering::Relaxed);
    }

    /// Gives a whole hold its estimate (`markdown_tokens`); false when the
    /// hold is over or was never taken.
    pub(super) fn set_tokens(&self, tokens: u64) -> bool {
        self.tokens.store(tokens, Ordering::Relaxed);
        self.markdown.compare_exchange(MD_WAITING, MD_ESTIMATED, Ordering::Relaxed, Ordering::Relaxed).is_ok()
    }

    /// Whether a write of `len` more bytes is held.
    pub(super) fn takes(&self, len: usize) -> bool {
        self.coalesce.load(Ordering::Relaxed) && self.buf.len().saturating_add(len) <= self.bound()
    }

    /// Holds `buf` (which [`Held::takes`]).
    pub(super) fn push(&mut self, buf: &[u8]) {
        self.reserve(buf.len());
        self.buf.extend_from_slice(buf);
        self.last_chunk = buf == LAST_CHUNK;
    }

    /// Holds `bufs`, `len` bytes in all (which [`Held::takes`]).
    pub(super) fn push_vectored(&mut self, bufs: &[io::IoSlice<'_>], len: usize) {
        self.reserve(len);
        for b in bufs {
            self.buf.extend_from_slice(b);
        }
        self.last_chunk = false;
    }

    /// Whether a flush now sends nothing: while coalescing, a flush before
    /// the last chunk's; for a whole hold, any flush before the end of its
    /// body (a data chunk could read like a last chunk).
    pub(super) fn flush_waits(&self) -> bool {
        self.coalesce.load(Ordering::Relaxed)
            && (!self.last_chunk || self.markdown.load(Ordering::Relaxed) == MD_WAITING)
    }

    /// Whether a whole response is held for its estimate: a read does not
    /// release it (Pingora reads the client while that response streams, a
    /// request body or its check that the client is still there).
    pub(super) fn holds_whole(&self) -> bool {
        self.markdown.load(Ordering::Relaxed) != MD_NONE
    }

    /// Nothing is held and nothing will be: a release has nothing to do.
    pub(super) fn is_idle(&self) -> bool {
        self.buf.is_empty() && !self.coalesce.load(Ordering::Relaxed)
    }

    /// No bytes are held.
    pub(super) fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The most the current hold keeps.
    fn bound(&self) -> usize {
        match self.markdown.load(Ordering::Relaxed) {
            MD_NONE => MAX_COALESCED,
            _ => MAX_HELD_FOR_TOKENS,
        }
    }

    /// Makes room for `len` more held bytes: doubling, so that a response
    /// held whole is not copied once per write, but never past the bound
    /// ([`Held::takes`] has checked that `len` fits under it).
    fn reserve(&mut self, len: usize) {
        let want = self.buf.len() + len;
        if want > self.buf.capacity() {
            let cap = self.buf.capacity().saturating_mul(2).min(self.bound()).max(want);
            self.buf.reserve_exact(cap - self.buf.len());
        }
    }

    /// Writes the held bytes to `out` (the estimate spliced into a whole
    /// hold's header first) and stops holding.
    pub(super) fn poll_release<W>(&mut self, cx: &mut Context<'_>, out: &mut W) -> Poll<io::Result<()>>
    where
        W: AsyncWrite + Unpin + ?Sized,
    {
        if self.at == 0 && self.markdown.swap(MD_NONE, Ordering::Relaxed) == MD_ESTIMATED {
            splice_tokens(&mut self.buf, self.tokens.load(Ordering::Relaxed));
        }
        while self.at < self.buf.len() {
            let n = ready!(Pin::new(&mut *out).poll_write(cx, &self.buf[self.at..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.at += n;
        }
        if self.at > 0 {
            // Not kept for the next response: an idle connection holds no
            // buffer.
            self.buf = Vec::new();
            self.at = 0;
        }
        self.last_chunk = false;
        self.markdown.store(MD_NONE, Ordering::Relaxed);
        self.coalesce.store(false, Ordering::Relaxed);
        Poll::Ready(Ok(()))
    }

    /// Whether the end is being coalesced (or a whole response held).
    #[cfg(test)]
    pub(super) fn coalescing(&self) -> bool {
        self.coalesce.load(Ordering::Relaxed)
    }
}

/// Adds `x-markdown-tokens: <tokens>` as the last field line of the
/// response header at the start of `held` (before the empty line that
/// ends it, RFC 9112 section 2.1). Returns false, `held` unchanged, when
/// `held` does not start with a whole HTTP/1 status line and header.
fn splice_tokens(held: &mut Vec<u8>, tokens: u64) -> bool {
    if !held.starts_with(b"HTTP/1.") {
        return false;
    }
    let Some(end) = memchr::memmem::find(held, b"\r\n\r\n") else { return false };
    let mut line = [0u8; 48];
    let mut cur = io::Cursor::new(&mut line[..]);
    if io::Write::write_fmt(&mut cur, format_args!("x-markdown-tokens: {tokens}\r\n")).is_err() {
        return false;
    }
    let n = cur.position() as usize;
    let at = end + 2;
    // Exactly the line's room: a splice into a full buffer would double it.
    held.reserve_exact(n);
    held.splice(at..at, line[..n].iter().copied());
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Releases `held` into a buffer (which never makes a write wait).
    fn release(held: &mut Held) -> Vec<u8> {
        let mut out = Vec::new();
        let mut cx = Context::from_waker(std::task::Waker::noop());
        match held.poll_release(&mut cx, &mut out) {
            Poll::Ready(Ok(())) => out,
            other => panic!("release: {other:?}"),
        }
    }

    /// The rules alone, without a socket: a whole hold takes every write
    /// under its bound, no flush sends it before the estimate and the last
    /// chunk, and its release adds the estimate and leaves nothing held.
    #[test]
    fn a_whole_hold_waits_for_its_estimate_and_last_chunk() {
        let mut held = Held::default();
        assert!(!held.takes(1) && held.is_idle());
        held.hold_whole();
        for part in [b"HTTP/1.1 200 OK\r\n\r\n".as_slice(), b"2\r\nhi\r\n", LAST_CHUNK] {
            assert!(held.takes(part.len()) && held.flush_waits());
            held.push(part);
        }
        assert!(held.holds_whole() && held.flush_waits(), "no estimate yet");
        assert!(held.set_tokens(1) && !held.flush_waits());
        assert_eq!(release(&mut held), b"HTTP/1.1 200 OK\r\nx-markdown-tokens: 1\r\n\r\n2\r\nhi\r\n0\r\n\r\n");
        assert!(held.is_idle() && !held.holds_whole() && !held.set_tokens(2));
        // Past the bound a write is not taken: the caller releases first.
        held.hold_whole();
        assert!(held.takes(MAX_HELD_FOR_TOKENS) && !held.takes(MAX_HELD_FOR_TOKENS + 1));
        held.end();
        assert!(held.is_idle() && !held.takes(1));
    }

    /// A coalesced end waits for the last chunk only, within its own bound.
    #[test]
    fn a_coalesced_end_waits_for_the_last_chunk() {
        let mut held = Held::default();
        held.coalesce_end();
        assert!(held.takes(MAX_COALESCED) && !held.takes(MAX_COALESCED + 1));
        held.push(b"5\r\nhello\r\n");
        assert!(held.flush_waits() && !held.holds_whole());
        held.push(LAST_CHUNK);
        assert!(!held.flush_waits());
        assert_eq!(release(&mut held), b"5\r\nhello\r\n0\r\n\r\n");
        assert!(held.is_idle());
    }

    #[test]
    fn the_estimate_goes_before_the_header_end() {
        let mut held = b"HTTP/1.1 200 OK\r\nA: b\r\n\r\n4\r\n\r\n\r\n\r\n".to_vec();
        assert!(splice_tokens(&mut held, 0));
        assert_eq!(held, b"HTTP/1.1 200 OK\r\nA: b\r\nx-markdown-tokens: 0\r\n\r\n4\r\n\r\n\r\n\r\n");
        let mut held = b"HTTP/1.1 200 OK\r\n\r\n".to_vec();
        assert!(splice_tokens(&mut held, u64::MAX));
        assert_eq!(held, b"HTTP/1.1 200 OK\r\nx-markdown-tokens: 18446744073709551615\r\n\r\n");
        for not_a_head in [b"5\r\nhello\r\n\r\n".as_slice(), b"HTTP/1.1 200 OK\r\nA: b\r\n", b""] {
            let mut held = not_a_head.to_vec();
            assert!(!splice_tokens(&mut held, 3));
            assert_eq!(held, not_a_head);
        }
    }
}
