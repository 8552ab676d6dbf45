//! Writes a client connection holds back instead of sending as Pingora
//! writes them: the end of a chunked rewrite, coalesced into one write,
//! and a converted Markdown response held whole from its status line on,
//! so that `x-markdown-tokens` can go in its header.
//!
//! [`Held`] is that state and its rules, apart from any socket: the stream
//! wrapper (the proxy's `conn::guarded::Guarded`) asks it whether a write is held
//! ([`Held::takes`]), whether a flush sends anything ([`Held::flush_waits`])
//! and has it write what it holds ([`Held::poll_release`]); the session
//! functions of `super` set it from the proxy's hooks through a shared
//! reference (hence the atomics).
//!
//! A whole hold may also wait for an [`Approval`] (a charge committed once
//! the conversion finished): nothing of it leaves until the approval
//! resolves, and what it resolves to decides whether the response leaves
//! (with more header lines) or another goes out in its place.

use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, AtomicU8, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::task::{ready, Context, Poll};

use tokio::io::AsyncWrite;

/// The last chunk of a chunked body (RFC 9112 section 7.1), which Pingora
/// writes on its own when a chunked response ends.
pub const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// The most a response's end held by `coalesce_response_end` keeps in
/// memory; past it the held bytes go out and the rest is written as
/// Pingora writes it.
pub const MAX_COALESCED: usize = 64 * 1024;

/// The most a converted Markdown response held from its header on
/// (`hold_for_markdown_tokens`) keeps in memory, per connection. The
/// estimate goes in the header, which must wait for the end of the body;
/// the bound keeps that wait from buffering a whole large page (the issue
/// forbids it): past it the held bytes go out without the estimate and the
/// rest streams. Most converted pages are far below it (the converter keeps
/// the main content only).
pub const MAX_HELD_FOR_TOKENS: usize = 256 * 1024;

/// [`Held::markdown`]: no Markdown hold.
const MD_NONE: u8 = 0;
/// [`Held::markdown`]: held from the header on, the end of the body not
/// reached yet; flushes send nothing, not even one after a last chunk.
const MD_WAITING: u8 = 1;
/// [`Held::markdown`]: the body filter has seen the end and left the
/// estimate in [`Held::tokens`]; the release adds it to the header.
const MD_ESTIMATED: u8 = 2;

/// What a whole hold waits for before any of it leaves
/// (`release_after`): polled by the connection when the hold would be
/// released (the flush of its last chunk, or its bound), it resolves once
/// to what the release does.
pub type Approval = Pin<Box<dyn Future<Output = Release> + Send>>;

/// What a whole hold waiting for an [`Approval`] does once it resolves.
#[derive(Debug)]
pub enum Release {
    /// Leaves, with these field lines (each `name: value\r\n`) added to
    /// its header.
    With(Vec<u8>),
    /// Never leaves: this whole response, with this status, goes out in its
    /// place, and the connection ends after it.
    Instead(u16, Vec<u8>),
}

/// [`Held::fate`]: the hold leaves as it is.
const FREE: u8 = 0;
/// [`Held::fate`]: a whole hold that leaves only once its approval resolves.
const AWAITING: u8 = 1;
/// [`Held::fate`]: a whole hold that never leaves (its response failed
/// before its approval, or the approval refused it): what it holds and
/// what is still written of it are dropped, a response put in its place
/// goes out, and the connection ends.
const DROPPED: u8 = 2;

/// The parts of a gated hold set through a shared reference.
#[derive(Default)]
struct Gate {
    /// The approval, until it resolves or the hold is dropped.
    approval: Option<Approval>,
    /// The response to send in place of a dropped hold, until it is taken
    /// into the buffer.
    instead: Option<Vec<u8>>,
}

impl fmt::Debug for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gate")
            .field("approval", &self.approval.is_some())
            .field("instead", &self.instead.as_ref().map(Vec::len))
            .finish()
    }
}

/// What a connection holds of the response being written.
#[derive(Debug, Default)]
pub struct Held {
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
    /// `FREE`, `AWAITING` or `DROPPED`.
    fate: AtomicU8,
    gate: Mutex<Gate>,
    /// The status of the response sent in place of a dropped hold (0: none).
    instead: AtomicU16,
}

impl Held {
    /// Holds what is written from here to the flush of the last chunk
    /// (`coalesce_response_end`).
    pub fn coalesce_end(&self) {
        self.coalesce.store(true, Ordering::Relaxed);
    }

    /// Ends the hold without a last chunk: the next flush sends what is
    /// held (`end_coalescing`), unless it awaits an approval: then its
    /// approval is dropped without being polled further, and what is held
    /// never leaves (when nothing is, the hold is simply over, and the
    /// error is written as usual).
    pub fn end(&self) {
        if self.fate.load(Ordering::Relaxed) == AWAITING {
            self.gate().approval = None;
            let fate = if self.buf.is_empty() { FREE } else { DROPPED };
            self.fate.store(fate, Ordering::Relaxed);
        }
        self.markdown.store(MD_NONE, Ordering::Relaxed);
        self.coalesce.store(false, Ordering::Relaxed);
    }

    /// Holds the whole response about to be written, from its status line
    /// on, for its Markdown estimate (`hold_for_markdown_tokens`).
    pub fn hold_whole(&self) {
        self.markdown.store(MD_WAITING, Ordering::Relaxed);
        self.coalesce.store(true, Ordering::Relaxed);
    }

    /// Gives a whole hold its estimate (`markdown_tokens`); false when the
    /// hold is over or was never taken.
    pub fn set_tokens(&self, tokens: u64) -> bool {
        self.tokens.store(tokens, Ordering::Relaxed);
        self.markdown.compare_exchange(MD_WAITING, MD_ESTIMATED, Ordering::Relaxed, Ordering::Relaxed).is_ok()
    }

    /// Makes a whole hold waiting for the end of its body wait for
    /// `approval` too (`release_after`); false, `approval` dropped, when
    /// there is no such hold.
    pub fn release_after(&self, approval: Approval) -> bool {
        if self.markdown.load(Ordering::Relaxed) != MD_WAITING || self.fate.load(Ordering::Relaxed) != FREE {
            return false;
        }
        self.gate().approval = Some(approval);
        self.fate.store(AWAITING, Ordering::Relaxed);
        true
    }

    /// Puts `response` (whose status is `status`) in the place of a hold
    /// that never leaves (`send_instead`); false when there is none or a
    /// response is there already.
    pub fn send_instead(&self, status: u16, response: Vec<u8>) -> bool {
        if self.fate.load(Ordering::Relaxed) != DROPPED
            || self.instead.compare_exchange(0, status, Ordering::Relaxed, Ordering::Relaxed).is_err()
        {
            return false;
        }
        self.gate().instead = Some(response);
        true
    }

    /// The status of the response sent in place of a held one, if any.
    pub fn sent_instead(&self) -> Option<u16> {
        Some(self.instead.load(Ordering::Relaxed)).filter(|s| *s != 0)
    }

    /// Whether the connection must end after this response: a held one
    /// never left, so what the client waits for is not what it would read.
    pub fn ends_connection(&self) -> bool {
        self.fate.load(Ordering::Relaxed) == DROPPED
    }

    /// Whether a write of `len` more bytes is held (or dropped, for a hold
    /// that never leaves).
    pub fn takes(&self, len: usize) -> bool {
        self.fate.load(Ordering::Relaxed) == DROPPED
            || (self.coalesce.load(Ordering::Relaxed) && self.buf.len().saturating_add(len) <= self.bound())
    }

    /// Holds `buf` (which [`Held::takes`]).
    pub fn push(&mut self, buf: &[u8]) {
        if self.fate.load(Ordering::Relaxed) == DROPPED {
            return;
        }
        self.reserve(buf.len());
        self.buf.extend_from_slice(buf);
        self.last_chunk = buf == LAST_CHUNK;
    }

    /// Holds `bufs`, `len` bytes in all (which [`Held::takes`]).
    pub fn push_vectored(&mut self, bufs: &[io::IoSlice<'_>], len: usize) {
        if self.fate.load(Ordering::Relaxed) == DROPPED {
            return;
        }
        self.reserve(len);
        for b in bufs {
            self.buf.extend_from_slice(b);
        }
        self.last_chunk = false;
    }

    /// Whether a flush now sends nothing: while coalescing, a flush before
    /// the last chunk's; for a whole hold, any flush before the end of its
    /// body (a data chunk could read like a last chunk).
    pub fn flush_waits(&self) -> bool {
        self.coalesce.load(Ordering::Relaxed)
            && (!self.last_chunk || self.markdown.load(Ordering::Relaxed) == MD_WAITING)
    }

    /// Whether a whole response is held for its estimate: a read does not
    /// release it (Pingora reads the client while that response streams, a
    /// request body or its check that the client is still there).
    pub fn holds_whole(&self) -> bool {
        self.markdown.load(Ordering::Relaxed) != MD_NONE
    }

    /// Nothing is held and nothing will be: a release has nothing to do.
    pub fn is_idle(&mut self) -> bool {
        self.buf.is_empty() && !self.coalesce.load(Ordering::Relaxed) && self.gate_mut().instead.is_none()
    }

    /// Whether a release would write anything: bytes are held (not for an
    /// approval still awaited), or a response goes in a held one's place.
    pub fn has_output(&mut self) -> bool {
        match self.fate.load(Ordering::Relaxed) {
            AWAITING => false,
            DROPPED => self.gate_mut().instead.is_some() || (self.sent_instead().is_some() && !self.buf.is_empty()),
            _ => !self.buf.is_empty(),
        }
    }

    fn gate(&self) -> MutexGuard<'_, Gate> {
        self.gate.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn gate_mut(&mut self) -> &mut Gate {
        self.gate.get_mut().unwrap_or_else(PoisonError::into_inner)
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
    /// hold's header first) and stops holding. A hold awaiting its
    /// approval first waits for it; one that never leaves writes only the
    /// response put in its place.
    pub fn poll_release<W>(&mut self, cx: &mut Context<'_>, out: &mut W) -> Poll<io::Result<()>>
    where
        W: AsyncWrite + Unpin + ?Sized,
    {
        if self.fate.load(Ordering::Relaxed) == AWAITING {
            ready!(self.poll_approval(cx));
        }
        if self.fate.load(Ordering::Relaxed) == DROPPED {
            self.markdown.store(MD_NONE, Ordering::Relaxed);
            if let Some(response) = self.gate_mut().instead.take() {
                self.buf = response;
                self.at = 0;
            } else if self.sent_instead().is_none() {
                // Held bytes of the dropped response (once the response in
                // its place is taken, they are that one's, partly written).
                self.buf = Vec::new();
                self.at = 0;
            }
        }
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

    /// Polls the approval of a whole hold; once resolved, the hold is free
    /// (its header given the approval's lines) or dropped (the approval's
    /// response put in its place).
    fn poll_approval(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let gate = self.gate.get_mut().unwrap_or_else(PoisonError::into_inner);
        let Some(approval) = gate.approval.as_mut() else {
            self.fate.store(FREE, Ordering::Relaxed);
            return Poll::Ready(());
        };
        let release = ready!(approval.as_mut().poll(cx));
        gate.approval = None;
        match release {
            Release::With(lines) => {
                splice_lines(&mut self.buf, &lines);
                self.fate.store(FREE, Ordering::Relaxed);
            }
            Release::Instead(status, response) => {
                gate.instead = Some(response);
                self.instead.store(status, Ordering::Relaxed);
                self.fate.store(DROPPED, Ordering::Relaxed);
            }
        }
        Poll::Ready(())
    }
}

/// Adds `x-markdown-tokens: <tokens>` as the last field line of the
/// response header at the start of `held` (before the empty line that
/// ends it, RFC 9112 section 2.1). Returns false, `held` unchanged, when
/// `held` does not start with a whole HTTP/1 status line and header.
fn splice_tokens(held: &mut Vec<u8>, tokens: u64) -> bool {
    let mut line = [0u8; 48];
    let mut cur = io::Cursor::new(&mut line[..]);
    if io::Write::write_fmt(&mut cur, format_args!("x-markdown-tokens: {tokens}\r\n")).is_err() {
        return false;
    }
    let n = cur.position() as usize;
    splice_lines(held, &line[..n])
}

/// Adds `lines` (whole field lines) at the end of the response header at
/// the start of `held`; false, `held` unchanged, when `held` does not start
/// with a whole HTTP/1 status line and header.
fn splice_lines(held: &mut Vec<u8>, lines: &[u8]) -> bool {
    if !held.starts_with(b"HTTP/1.") {
        return false;
    }
    let Some(end) = memchr::memmem::find(held, b"\r\n\r\n") else { return false };
    let at = end + 2;
    // Exactly the lines' room: a splice into a full buffer would double it.
    held.reserve_exact(lines.len());
    held.splice(at..at, lines.iter().copied());
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

    /// Polls a release into `out` once.
    fn poll_once(held: &mut Held, out: &mut Vec<u8>) -> Poll<io::Result<()>> {
        held.poll_release(&mut Context::from_waker(std::task::Waker::noop()), out)
    }

    /// A whole hold of a short response, its end reached and estimated.
    fn ended_hold() -> Held {
        let held = Held::default();
        held.hold_whole();
        held
    }

    const HEAD: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-type: text/markdown\r\n\r\n";

    /// An approval that resolves to what is sent on `tx`, and holds a
    /// count of `alive` while it exists.
    fn approval(alive: &std::sync::Arc<()>) -> (tokio::sync::oneshot::Sender<Release>, Approval) {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let alive = alive.clone();
        let fut = async move {
            let _alive = alive;
            rx.await.unwrap_or(Release::With(Vec::new()))
        };
        (tx, Box::pin(fut))
    }

    /// A hold waiting for its approval sends nothing, even at its end, until
    /// the approval resolves; then it leaves whole with the approval's
    /// lines and the estimate in its header.
    #[test]
    fn an_approved_hold_leaves_with_the_approval_lines() {
        let alive = std::sync::Arc::new(());
        let mut held = ended_hold();
        let (tx, approval) = approval(&alive);
        assert!(held.release_after(approval));
        for part in [HEAD, b"2\r\nhi\r\n", LAST_CHUNK] {
            assert!(held.takes(part.len()));
            held.push(part);
        }
        assert!(held.set_tokens(7) && !held.flush_waits() && !held.has_output());
        let mut out = Vec::new();
        assert!(poll_once(&mut held, &mut out).is_pending() && out.is_empty(), "released before approval");
        assert!(tx.send(Release::With(b"crawler-charged: USD 0.01\r\n".to_vec())).is_ok());
        assert!(matches!(poll_once(&mut held, &mut out), Poll::Ready(Ok(()))));
        let want = "HTTP/1.1 200 OK\r\ncontent-type: text/markdown\r\ncrawler-charged: USD 0.01\r\nx-markdown-tokens: 7\r\n\r\n2\r\nhi\r\n0\r\n\r\n";
        assert_eq!(String::from_utf8_lossy(&out), want);
        assert_eq!(std::sync::Arc::strong_count(&alive), 1, "the approval is dropped once resolved");
        assert!(held.is_idle() && !held.ends_connection() && held.sent_instead().is_none());
        // The next response is not held.
        assert!(!held.takes(1));
    }

    /// An approval that refuses puts its response in the held one's place:
    /// nothing of the held response leaves, later writes of it are
    /// dropped, and the connection ends.
    #[test]
    fn a_refused_hold_never_leaves() {
        let alive = std::sync::Arc::new(());
        let mut held = ended_hold();
        let (tx, approval) = approval(&alive);
        assert!(held.release_after(approval));
        held.push(HEAD);
        held.push(LAST_CHUNK);
        assert!(held.set_tokens(1));
        assert!(tx.send(Release::Instead(500, b"HTTP/1.1 500 Internal Server Error\r\n\r\n".to_vec())).is_ok());
        let mut out = Vec::new();
        assert!(matches!(poll_once(&mut held, &mut out), Poll::Ready(Ok(()))));
        assert_eq!(out, b"HTTP/1.1 500 Internal Server Error\r\n\r\n");
        assert!(held.ends_connection() && held.sent_instead() == Some(500));
        let sent = out.len();
        assert!(held.takes(3));
        held.push(b"0\r\n");
        assert!(matches!(poll_once(&mut held, &mut out), Poll::Ready(Ok(()))));
        assert_eq!(out.len(), sent, "nothing more is written");
        assert!(!held.send_instead(502, b"x".to_vec()), "one response in its place");
    }

    /// A hold whose response fails before its approval resolved never
    /// leaves: the approval is dropped unpolled (nothing charged), and an
    /// error response may take its place.
    #[test]
    fn a_hold_ended_before_its_approval_drops_both() {
        let alive = std::sync::Arc::new(());
        assert!(!Held::default().release_after(Box::pin(async { Release::With(Vec::new()) })), "no hold taken");
        // Ended before anything was written: the error is written as usual.
        let (_tx, first) = approval(&alive);
        let mut unwritten = ended_hold();
        assert!(unwritten.release_after(first));
        unwritten.end();
        assert_eq!(std::sync::Arc::strong_count(&alive), 1, "the approval is dropped");
        assert!(!unwritten.ends_connection() && !unwritten.takes(1) && unwritten.is_idle());
        let mut held = ended_hold();
        let (_tx, gate) = approval(&alive);
        assert!(held.release_after(gate));
        held.push(HEAD);
        held.push(b"5\r\nhello\r\n");
        held.end();
        assert_eq!(std::sync::Arc::strong_count(&alive), 1, "the approval is dropped");
        assert!(held.ends_connection() && !held.has_output());
        let mut out = Vec::new();
        assert!(matches!(poll_once(&mut held, &mut out), Poll::Ready(Ok(()))));
        assert!(out.is_empty(), "{}", String::from_utf8_lossy(&out));
        assert!(held.send_instead(502, b"HTTP/1.1 502 Bad Gateway\r\n\r\n".to_vec()));
        assert!(held.has_output() && !held.is_idle());
        assert!(matches!(poll_once(&mut held, &mut out), Poll::Ready(Ok(()))));
        assert_eq!(out, b"HTTP/1.1 502 Bad Gateway\r\n\r\n");
        assert_eq!(held.sent_instead(), Some(502));
        // An uncharged hold ended the same way leaves as it was written.
        let mut free = ended_hold();
        free.push(HEAD);
        free.end();
        assert!(!free.ends_connection() && !free.send_instead(502, Vec::new()));
        assert_eq!(release(&mut free), HEAD);
    }

    /// Past the bound, a hold's approval is asked before the first byte
    /// leaves: the header gets its lines (no estimate: the end is not
    /// known yet) and the rest streams.
    #[test]
    fn a_hold_past_its_bound_is_approved_before_it_leaves() {
        let alive = std::sync::Arc::new(());
        let mut held = ended_hold();
        let (tx, approval) = approval(&alive);
        assert!(held.release_after(approval));
        held.push(HEAD);
        assert!(!held.takes(MAX_HELD_FOR_TOKENS));
        let mut out = Vec::new();
        assert!(poll_once(&mut held, &mut out).is_pending() && out.is_empty());
        assert!(tx.send(Release::With(b"a: b\r\n".to_vec())).is_ok());
        assert!(matches!(poll_once(&mut held, &mut out), Poll::Ready(Ok(()))));
        assert_eq!(String::from_utf8_lossy(&out), "HTTP/1.1 200 OK\r\ncontent-type: text/markdown\r\na: b\r\n\r\n");
        assert!(!held.set_tokens(3) && !held.takes(1) && !held.ends_connection());
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
