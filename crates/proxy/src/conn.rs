//! Client connection limits around a Pingora HTTP app: a cap on concurrent
//! connections and the idle, header and body timeouts of `[server]`; on
//! the admin listener also a cap per client address and a few slots over
//! the cap that only health probes may use.
//!
//! Pingora alone leaves a kept-alive HTTP/1 connection open for ever: after
//! the first request its session switches to an unbounded keep-alive wait
//! (an HTTP/1.1 request without `Connection` gets "keep-alive, no timeout"),
//! and that setting is carried to every reused session. Its header read
//! timeout is also per read, so a client sending one byte every few seconds
//! is never cut off. [`ConnApp`] therefore runs the HTTP/1 keep-alive loop
//! itself, telling the stream where each request starts, and reads through
//! [`Guarded`], which enforces the idle deadline before every request and
//! one total deadline for each request header. Request bodies use Pingora's per-read
//! timeout (nginx's `client_body_timeout` semantics). HTTP/2 connections
//! get Pingora's `h2_idle_timeout` and a deadline for their preface only.

use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll, Waker};
use std::time::Duration;

use async_trait::async_trait;
use pingora::apps::{HttpServerApp, ServerApp};
use pingora::protocols::http::ServerSession;
use pingora::protocols::{
    GetProxyDigest, GetSocketDigest, GetTimingDigest, Peek, Shutdown, SocketDigest, Ssl, Stream, UniqueID,
    UniqueIDType, ALPN,
};
use pingora::server::ShutdownWatch;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::sync::Semaphore;
use tokio::time::{Instant, Sleep};

use crate::metrics::ConnMetrics;

mod admission;
mod header_end;

use admission::*;
use header_end::*;

/// The HTTP/2 connection preface (RFC 9113 section 3.4).
const H2_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Sent when a request header did not arrive in time (RFC 9110 section
/// 15.5.9), before the connection is closed.
pub const REQUEST_TIMEOUT: &[u8] = b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";

/// Sent to a connection over the cap (RFC 9110 section 15.6.4), before it
/// is closed.
pub const SERVICE_UNAVAILABLE: &[u8] =
    b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\nRetry-After: 1\r\n\r\n";

/// How long a closing connection may take to receive its 408 or 503 and
/// have its unread input drained. Closing a socket with unread input sends
/// a reset, which can destroy the response before the client reads it.
const LINGER: Duration = Duration::from_secs(1);

/// At most this many refused connections linger at once; past it, a
/// refused connection is closed without a response.
const MAX_LINGERING_REFUSALS: usize = 64;

/// How long a connection in a probe slot has, from its accept, to send a
/// whole request header naming a probe path. Load balancer and Kubernetes
/// probes send theirs at once.
const PROBE_DEADLINE: Duration = Duration::from_secs(1);

/// The longest request line a probe slot waits for; a longer one is not a
/// probe.
const PROBE_LINE_MAX: usize = 256;

/// The client limits of one listener kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Wait for the first byte of a request, new or kept alive; also the
    /// HTTP/2 idle timeout.
    pub idle: Duration,
    /// From a request's first byte to the end of its header.
    pub header: Duration,
    /// Between two reads of a request body.
    pub body: Duration,
    /// Concurrent connections.
    pub max_connections: usize,
}

/// A [`ServerApp`] that caps concurrent connections and enforces
/// [`Limits`] around the HTTP app `A`.
pub struct ConnApp<A> {
    app: Arc<A>,
    limits: Limits,
    slots: Arc<Semaphore>,
    refusals: Arc<Semaphore>,
    metrics: Arc<ConnMetrics>,
    /// Set when connections from trusted peers start with a PROXY protocol
    /// header: says whether a peer is trusted.
    proxy_protocol: Option<TrustedPeer>,
    /// Connections allowed over the cap for health probes only.
    probes: Option<Probes>,
    /// Concurrent connections allowed from one client address.
    per_client: Option<Arc<PerClient>>,
}

impl<A> ConnApp<A> {
    /// Wraps `app`.
    pub fn new(app: A, limits: Limits, metrics: ConnMetrics) -> ConnApp<A> {
        ConnApp {
            app: Arc::new(app),
            limits,
            slots: Arc::new(Semaphore::new(limits.max_connections)),
            refusals: Arc::new(Semaphore::new(MAX_LINGERING_REFUSALS)),
            metrics: Arc::new(metrics),
            proxy_protocol: None,
            probes: None,
            per_client: None,
        }
    }

    /// Keeps `slots` connections beyond the cap for `GET` and `HEAD` of
    /// `paths` (one request each, its header within [`PROBE_DEADLINE`]).
    pub fn with_probe_slots(mut self, slots: usize, paths: &'static [&'static str]) -> ConnApp<A> {
        self.probes = Some(Probes { slots: Arc::new(Semaphore::new(slots)), paths });
        self
    }

    /// Refuses a connection from a client address that has `limit` open
    /// (the socket's peer: this listener reads no PROXY protocol header).
    pub fn with_per_client_limit(mut self, limit: usize) -> ConnApp<A> {
        self.per_client = Some(Arc::new(PerClient { limit, open: Default::default() }));
        self
    }

    /// Reads a PROXY protocol header from every connection whose peer
    /// `trusted` accepts, and takes its source as the peer address.
    pub fn with_proxy_protocol(mut self, trusted: TrustedPeer) -> ConnApp<A> {
        self.proxy_protocol = Some(trusted);
        self
    }
}

/// Holds a connection's place under the cap and its gauge count.
struct Slot {
    _permit: tokio::sync::OwnedSemaphorePermit,
    metrics: Arc<ConnMetrics>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.metrics.open.dec();
    }
}

#[async_trait]
impl<A> ServerApp for ConnApp<A>
where
    A: HttpServerApp + Send + Sync + 'static,
{
    async fn process_new(self: &Arc<Self>, stream: Stream, shutdown: &ShutdownWatch) -> Option<Stream> {
        let peer = stream.get_socket_digest().and_then(|d| d.peer_addr().and_then(|a| a.as_inet()).map(|a| a.ip()));
        let _client = match (&self.per_client, peer) {
            (Some(table), Some(ip)) => match table.admit(ip) {
                Some(slot) => Some(slot),
                None => {
                    self.metrics.refused.inc();
                    self.refuse(stream).await;
                    return None;
                }
            },
            _ => None,
        };
        let Ok(permit) = self.slots.clone().try_acquire_owned() else {
            if let Some(probes) = &self.probes {
                if let Ok(permit) = probes.slots.clone().try_acquire_owned() {
                    self.metrics.open.inc();
                    let _slot = Slot { _permit: permit, metrics: self.metrics.clone() };
                    self.serve_probe(stream, probes.paths, shutdown).await;
                    return None;
                }
            }
            self.metrics.refused.inc();
            self.refuse(stream).await;
            return None;
        };
        self.metrics.open.inc();
        let _slot = Slot { _permit: permit, metrics: self.metrics.clone() };
        self.serve(stream, shutdown).await;
        None
    }

    async fn cleanup(&self) {
        ServerApp::cleanup(self.app.as_ref()).await;
    }
}

impl<A> ConnApp<A>
where
    A: HttpServerApp + Send + Sync + 'static,
{
    /// Answers a connection over the cap with a 503 and closes it; an HTTP/2
    /// connection (ALPN), or any while too many refusals linger, is closed
    /// without a word.
    async fn refuse(&self, mut stream: Stream) {
        if matches!(stream.selected_alpn_proto(), Some(ALPN::H2)) {
            return;
        }
        let Ok(_lingering) = self.refusals.try_acquire() else { return };
        let _ = tokio::time::timeout(LINGER, async {
            stream.write_all(SERVICE_UNAVAILABLE).await?;
            stream.flush().await?;
            AsyncWriteExt::shutdown(&mut stream).await?;
            let mut sink = [0u8; 1024];
            while stream.read(&mut sink).await? > 0 {}
            Ok::<(), io::Error>(())
        })
        .await;
    }

    /// A connection in a probe slot: served like any other if its request
    /// line, read within [`PROBE_DEADLINE`], names a probe (one request,
    /// then closed), refused as over the cap otherwise.
    async fn serve_probe(&self, mut stream: Stream, paths: &[&str], shutdown: &ShutdownWatch) {
        let deadline = Instant::now() + PROBE_DEADLINE;
        let mut head = Vec::new();
        let line = tokio::time::timeout_at(deadline, async {
            let mut buf = [0u8; PROBE_LINE_MAX];
            loop {
                let n = stream.read(&mut buf).await?;
                if n == 0 {
                    return Ok(ProbeLine::Other);
                }
                head.extend_from_slice(&buf[..n]);
                match probe_line(&head, paths) {
                    ProbeLine::Partial => {}
                    seen => return Ok::<_, io::Error>(seen),
                }
            }
        })
        .await;
        if !matches!(line, Ok(Ok(ProbeLine::Probe))) {
            self.metrics.refused.inc();
            self.refuse(stream).await;
            return;
        }
        // The rest of the header within what is left of the deadline; the
        // bytes read so far are handed to Pingora first.
        let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
        let limits = Limits { idle: left, header: left, body: left, ..self.limits };
        let mut io = Guarded::new(stream, limits, self.metrics.clone());
        io.prefetched = head;
        self.serve_h1(Box::new(io), shutdown, true).await;
    }

    async fn serve(self: &Arc<Self>, mut stream: Stream, shutdown: &ShutdownWatch) {
        let proxied = match &self.proxy_protocol {
            Some(trusted) => match self.proxy_header(&mut stream, trusted).await {
                Ok(digest) => digest,
                Err(e) => {
                    tracing::debug!(error = %e, "Closed a connection without a valid PROXY protocol header");
                    return;
                }
            },
            None => None,
        };
        let mut io = Guarded::new(stream, self.limits, self.metrics.clone());
        io.socket_digest = proxied;
        let h2 = if io.get_ssl_digest().is_some() {
            matches!(io.selected_alpn_proto(), Some(ALPN::H2))
        } else if self.app.server_options().is_some_and(|o| o.h2c) {
            let mut preface = [0u8; H2_PREFACE.len()];
            match io.try_peek(&mut preface).await {
                Ok(peeked) => peeked && preface == *H2_PREFACE,
                Err(_) => return,
            }
        } else {
            false
        };
        if h2 {
            // Pingora's own HTTP/2 path: it finds the same protocol, and its
            // `h2_idle_timeout` closes the connection between streams.
            io.expect_preface();
            let _ = ServerApp::process_new(&self.app, Box::new(io), shutdown).await;
        } else {
            self.serve_h1(Box::new(io), shutdown, false).await;
        }
    }

    /// Reads the PROXY protocol header of a trusted peer's connection
    /// (within the header timeout) and returns a socket digest whose peer is
    /// the header's source; `None` keeps the socket's own peer (an untrusted
    /// peer, whose bytes are HTTP, or a `LOCAL` header).
    async fn proxy_header(&self, stream: &mut Stream, trusted: &TrustedPeer) -> io::Result<Option<Arc<SocketDigest>>> {
        let peer = stream.get_socket_digest().and_then(|d| d.peer_addr().and_then(|a| a.as_inet()).map(|a| a.ip()));
        if !peer.is_some_and(|p| trusted(p)) {
            return Ok(None);
        }
        let header = tokio::time::timeout(self.limits.header, crate::proxy_protocol::read(stream))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "PROXY protocol header timed out"))??;
        match header {
            crate::proxy_protocol::Header::Local => Ok(None),
            crate::proxy_protocol::Header::Proxied(addr) => {
                let digest = SocketDigest::from_raw_fd(stream.id());
                let _ = digest.peer_addr.set(Some(pingora::protocols::l4::socket::SocketAddr::Inet(addr)));
                Ok(Some(Arc::new(digest)))
            }
        }
    }

    /// The HTTP/1 keep-alive loop, as Pingora runs it, except that every
    /// session gets the idle and body timeouts and the stream is told where
    /// each request starts. With `once`, one request without keep-alive.
    async fn serve_h1(&self, mut io: Box<Guarded>, shutdown: &ShutdownWatch, once: bool) {
        let options = self.app.server_options();
        let mut settings = None;
        // One receiver per connection (a clone touches the channel's shared
        // state, which every connection's request would contend on).
        let mut down = shutdown.clone();
        loop {
            // Pingora's session and request future take tens of kilobytes;
            // a connection that has not sent a byte holds none of it. A
            // shutdown closes connections waiting here at once.
            tokio::select! {
                biased;
                waited = io.wait_for_request() => {
                    if waited.is_err() {
                        return;
                    }
                }
                _ = down.wait_for(|down| *down) => return,
            }
            let mut session = ServerSession::new_http1(io);
            match settings {
                Some(s) => pingora::apps::HttpPersistentSettings::apply_to_session(s, &mut session),
                None => session.set_keepalive_reuses_remaining(options.and_then(|o| o.keepalive_request_limit)),
            }
            // Keep-alive without Pingora's own wait limit (`Some(0)`): that
            // limit is per read and in whole seconds, and would also cut a
            // header paused for longer than the idle timeout without a 408.
            // The stream's idle and header deadlines bound every wait.
            session.set_keepalive(if once || *shutdown.borrow() { None } else { Some(0) });
            session.set_read_timeout(Some(self.limits.body));
            let Some(reused) = self.app.process_new_http(session, shutdown).await else { return };
            if once {
                return;
            }
            let (stream, next) = reused.consume();
            let Ok(mut guarded) = stream.into_any().downcast::<Guarded>() else { return };
            guarded.expect_request();
            io = guarded;
            settings = next;
        }
    }
}

/// What the connection is waiting for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// The first byte of a request, until the idle deadline.
    Idle,
    /// The end of a request header, until the header deadline.
    Header,
    /// This many more bytes of the HTTP/2 preface, until the deadline.
    Preface(usize),
    /// Nothing this stream times: a request body (Pingora's per-read
    /// timeout), a response, an upgraded connection, HTTP/2 frames.
    Open,
    /// A deadline passed: every read fails.
    Expired(Expired),
    /// A 408 is being written, then the connection shut down and drained.
    Closing { sent: usize, shut: bool },
    /// The 408 was written (or could not be) and the connection shut down.
    Closed,
}

/// Which deadline passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expired {
    Idle,
    Header,
    Preface,
}

impl Expired {
    fn error(self) -> io::Error {
        let what = match self {
            Expired::Idle => "client idle timeout",
            Expired::Header => "client header timeout",
            Expired::Preface => "client HTTP/2 preface timeout",
        };
        io::Error::new(io::ErrorKind::TimedOut, what)
    }
}

/// How many bytes of the next request are read while waiting for it (kept
/// in the connection until Pingora reads them).
const PREFETCH: usize = 1024;

/// The last chunk of a chunked body (RFC 9112 section 7.1), which Pingora
/// writes on its own when a chunked response ends.
const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// The most a response's end held by [`coalesce_response_end`] keeps in
/// memory; past it the held bytes go out and the rest is written as
/// Pingora writes it.
const MAX_COALESCED: usize = 64 * 1024;

/// The most a converted Markdown response held from its header on
/// ([`hold_for_markdown_tokens`]) keeps in memory, per connection. The
/// estimate goes in the header, which must wait for the end of the body;
/// the bound keeps that wait from buffering a whole large page (the issue
/// forbids it): past it the held bytes go out without the estimate and the
/// rest streams. Most converted pages are far below it (the converter keeps
/// the main content only).
pub const MAX_HELD_FOR_TOKENS: usize = 256 * 1024;

/// [`Guarded::markdown`]: no Markdown hold.
const MD_NONE: u8 = 0;
/// [`Guarded::markdown`]: held from the header on, the end of the body not
/// reached yet; flushes send nothing, not even one after a last chunk.
const MD_WAITING: u8 = 1;
/// [`Guarded::markdown`]: the body filter has seen the end and left the
/// estimate in [`Guarded::tokens`]; the release adds it to the header.
const MD_ESTIMATED: u8 = 2;

/// The longest absolute-form request header read whole before Pingora
/// parses it, so that its `Host` can be set from its target; a longer one
/// is left to Pingora.
const MAX_ABSOLUTE_FORM_HEADER: usize = 64 * 1024;

/// A client stream that fails reads with `TimedOut` once the deadline of
/// its phase has passed. Every other part of Pingora's `IO` is delegated.
pub struct Guarded {
    inner: Stream,
    phase: Phase,
    deadline: Instant,
    /// Follows `deadline` only when a read has to wait
    /// ([`Guarded::poll_timer`]): a request whose header arrives in one
    /// read never touches the timer wheel.
    timer: Pin<Box<Sleep>>,
    header_end: HeaderEnd,
    /// Bytes past a request header were read (a body or a pipelined
    /// request) on this connection, so a next request may already be
    /// buffered.
    read_ahead: bool,
    limits: Limits,
    metrics: Arc<ConnMetrics>,
    /// The peer a PROXY protocol header named, in place of the socket's.
    socket_digest: Option<Arc<SocketDigest>>,
    /// The first bytes of the next request, read while waiting for it and
    /// handed to Pingora before anything else is read (`prefetched[at..]`).
    prefetched: Vec<u8>,
    at: usize,
    /// Set by [`coalesce_response_end`]: what Pingora writes and flushes
    /// is held in `held` until the last chunk of the response is flushed,
    /// then written at once.
    coalesce: AtomicBool,
    /// Bytes held while coalescing; `held[held_at..]` are not written yet.
    held: Vec<u8>,
    held_at: usize,
    /// The last write held was the last chunk.
    last_chunk: bool,
    /// Where a hold from the header on ([`hold_for_markdown_tokens`]) is:
    /// `MD_NONE`, `MD_WAITING` or `MD_ESTIMATED`. Set only with `coalesce`,
    /// cleared with it.
    markdown: AtomicU8,
    /// The `x-markdown-tokens` estimate once `markdown` is `MD_ESTIMATED`.
    tokens: AtomicU64,
}

/// Makes the HTTP/1 client connection of `session` send the end of the
/// current chunked response in one write: its body filter has seen the
/// end of the stream, so Pingora writes the rest (the header if it has not
/// gone yet, the last data chunk and the last chunk) right after, and each
/// of its flushes would be a system call and a packet of its own. Held
/// bytes go out when the last chunk is flushed, before the next read, at
/// shutdown, or when more than [`MAX_COALESCED`] bytes would be held.
/// Returns whether the connection is one of [`ConnApp`]'s (not HTTP/2).
pub fn coalesce_response_end(session: &ServerSession) -> bool {
    set_coalescing(session, true)
}

/// Ends [`coalesce_response_end`]'s hold without a last chunk: the next
/// flush sends what is held. For a response that fails after its end
/// reached the body filter (Pingora's error answer has no last chunk).
pub fn end_coalescing(session: &ServerSession) {
    set_coalescing(session, false);
}

/// Makes the HTTP/1 client connection of `session` hold the whole response
/// about to be written, from its status line on, so that
/// [`markdown_tokens`] can add `x-markdown-tokens` to its header: the
/// header, every chunk and the last chunk then leave in one write when the
/// last chunk is flushed. Called from `response_filter`, before Pingora
/// writes the header. Past [`MAX_HELD_FOR_TOKENS`] the held bytes go out
/// without the estimate and the rest streams; a failed response, the next
/// read, a shutdown or a drop send what is held as
/// [`coalesce_response_end`]'s hold does. Returns whether the connection
/// is one of [`ConnApp`]'s (HTTP/2 streams have none, and no estimate).
pub fn hold_for_markdown_tokens(session: &ServerSession) -> bool {
    guarded(session).is_some_and(|g| {
        g.hold_for_tokens();
        true
    })
}

/// Hands the connection held by [`hold_for_markdown_tokens`] the estimate
/// of the converted body, whose end the body filter has reached: the flush
/// of the last chunk writes the held response with `x-markdown-tokens:
/// <tokens>` as the last line of its header. Returns false when the hold
/// is over (its bound was passed: the header is out already) or was never
/// taken.
pub fn markdown_tokens(session: &ServerSession, tokens: u64) -> bool {
    guarded(session).is_some_and(|g| g.set_tokens(tokens))
}

fn set_coalescing(session: &ServerSession, on: bool) -> bool {
    guarded(session).is_some_and(|g| {
        if !on {
            g.markdown.store(MD_NONE, Ordering::Relaxed);
        }
        g.coalesce.store(on, Ordering::Relaxed);
        true
    })
}

/// The connection under an HTTP/1 session, if it is one of [`ConnApp`]'s.
fn guarded(session: &ServerSession) -> Option<&Guarded> {
    session.stream()?.as_ref().as_any().downcast_ref::<Guarded>()
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

impl fmt::Debug for Guarded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Guarded").field("inner", &self.inner).field("phase", &self.phase).finish()
    }
}

impl Guarded {
    /// [`hold_for_markdown_tokens`] on this connection.
    fn hold_for_tokens(&self) {
        self.markdown.store(MD_WAITING, Ordering::Relaxed);
        self.coalesce.store(true, Ordering::Relaxed);
    }

    /// [`markdown_tokens`] on this connection.
    fn set_tokens(&self, tokens: u64) -> bool {
        self.tokens.store(tokens, Ordering::Relaxed);
        self.markdown.compare_exchange(MD_WAITING, MD_ESTIMATED, Ordering::Relaxed, Ordering::Relaxed).is_ok()
    }

    /// A new connection, waiting for its first request.
    fn new(inner: Stream, limits: Limits, metrics: Arc<ConnMetrics>) -> Guarded {
        let deadline = Instant::now() + limits.idle;
        Guarded {
            inner,
            phase: Phase::Idle,
            deadline,
            timer: Box::pin(tokio::time::sleep_until(deadline)),
            header_end: HeaderEnd::default(),
            read_ahead: false,
            limits,
            metrics,
            socket_digest: None,
            prefetched: Vec::new(),
            at: 0,
            coalesce: AtomicBool::new(false),
            held: Vec::new(),
            held_at: 0,
            last_chunk: false,
            markdown: AtomicU8::new(MD_NONE),
            tokens: AtomicU64::new(0),
        }
    }

    /// Whether a write of `len` more bytes is held ([`coalesce_response_end`]).
    fn holds(&self, len: usize) -> bool {
        self.coalesce.load(Ordering::Relaxed) && self.held.len().saturating_add(len) <= self.bound()
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
    /// ([`Guarded::holds`] has checked that `len` fits under it).
    fn reserve_held(&mut self, len: usize) {
        let want = self.held.len() + len;
        if want > self.held.capacity() {
            let cap = self.held.capacity().saturating_mul(2).min(self.bound()).max(want);
            self.held.reserve_exact(cap - self.held.len());
        }
    }

    /// Writes the held bytes to the stream below and stops coalescing.
    fn poll_release(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.held_at == 0 && self.markdown.swap(MD_NONE, Ordering::Relaxed) == MD_ESTIMATED {
            splice_tokens(&mut self.held, self.tokens.load(Ordering::Relaxed));
        }
        while self.held_at < self.held.len() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.held[self.held_at..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.held_at += n;
        }
        if self.held_at > 0 {
            // Not kept for the next response: an idle connection holds no
            // buffer.
            self.held = Vec::new();
            self.held_at = 0;
        }
        self.last_chunk = false;
        self.markdown.store(MD_NONE, Ordering::Relaxed);
        self.coalesce.store(false, Ordering::Relaxed);
        Poll::Ready(Ok(()))
    }

    /// Sends whatever is held, before a read or a shutdown.
    fn poll_send_held(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.held.is_empty() && !self.coalesce.load(Ordering::Relaxed) {
            return Poll::Ready(Ok(()));
        }
        ready!(self.poll_release(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    /// Sets the deadline of the current phase; the timer follows when a
    /// read waits.
    fn arm(&mut self, deadline: Instant) {
        self.deadline = deadline;
    }

    /// Polls the timer at the current deadline. Moving a registered timer
    /// later is lock-free in tokio; only an earlier deadline re-registers.
    fn poll_timer(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if self.timer.deadline() != self.deadline {
            self.timer.as_mut().reset(self.deadline);
        }
        self.timer.as_mut().poll(cx)
    }

    /// The previous exchange is done: wait for the next request.
    fn expect_request(&mut self) {
        self.phase = Phase::Idle;
        self.header_end = HeaderEnd::default();
        self.arm(Instant::now() + self.limits.idle);
    }

    /// Waits, within the idle deadline, until the client has sent the
    /// first bytes of a request, and keeps them for Pingora's first read.
    /// Reading rather than peeking costs no extra system call per request
    /// (a peek would be followed by Pingora's own read of the same bytes).
    async fn wait_for_request(&mut self) -> io::Result<()> {
        std::future::poll_fn(|cx| self.poll_send_held(cx)).await?;
        // Bytes read past a request may hold the next ones, which Pingora
        // keeps and parses without reading the socket again; how many it
        // still holds is not visible here, so such a connection is no
        // longer pre-waited (its reads keep the idle deadline).
        if self.phase != Phase::Idle || self.read_ahead || self.at < self.prefetched.len() {
            return Ok(());
        }
        let mut first = [0u8; PREFETCH];
        let mut buf = ReadBuf::new(&mut first);
        // The connection's own timer, not a new one per request.
        let read = std::future::poll_fn(|cx| match Pin::new(&mut self.inner).poll_read(cx, &mut buf) {
            Poll::Ready(r) => Poll::Ready(Some(r)),
            Poll::Pending => self.poll_timer(cx).map(|()| None),
        })
        .await;
        match read {
            Some(Ok(())) if buf.filled().is_empty() => Err(io::ErrorKind::UnexpectedEof.into()),
            Some(Ok(())) => {
                self.prefetched.clear();
                self.prefetched.extend_from_slice(buf.filled());
                self.at = 0;
                // An absolute-form target whose authority differs from Host
                // gets that authority as its Host (RFC 9112 section 3.2.2),
                // so that the request is decided and logged, not refused by
                // Pingora before any hook runs: its whole header is read
                // first (origin-form requests, nearly all, are not held).
                if crawlgate_policy::canonical::starts_absolute_form(&self.prefetched) {
                    self.read_whole_header().await?;
                    if let Some(fixed) = crawlgate_policy::canonical::host_from_absolute_form(&self.prefetched) {
                        self.prefetched = fixed;
                    }
                }
                Ok(())
            }
            Some(Err(e)) => Err(e),
            None => Err(self.expire()),
        }
    }

    /// Reads on until the request header begun in `prefetched` is whole
    /// there, within the header timeout (counted from now, as its first
    /// byte has just arrived) and [`MAX_ABSOLUTE_FORM_HEADER`]. The phase
    /// is the header's from here: Pingora's reads of these bytes keep this
    /// deadline, and one that passes gets the usual 408 on Pingora's next
    /// read. A connection closed first is Pingora's to notice too.
    async fn read_whole_header(&mut self) -> io::Result<()> {
        self.phase = Phase::Header;
        self.header_end = HeaderEnd::default();
        self.arm(Instant::now() + self.limits.header);
        let mut end = HeaderEnd::default();
        if end.feed(&self.prefetched).is_some() {
            return Ok(());
        }
        let mut more = [0u8; PREFETCH];
        while self.prefetched.len() < MAX_ABSOLUTE_FORM_HEADER {
            let mut buf = ReadBuf::new(&mut more);
            let read = std::future::poll_fn(|cx| match Pin::new(&mut self.inner).poll_read(cx, &mut buf) {
                Poll::Ready(r) => Poll::Ready(Some(r)),
                Poll::Pending => self.poll_timer(cx).map(|()| None),
            })
            .await;
            match read {
                Some(Ok(())) if !buf.filled().is_empty() => {
                    self.prefetched.extend_from_slice(buf.filled());
                    if end.feed(buf.filled()).is_some() {
                        return Ok(());
                    }
                }
                Some(Err(e)) => return Err(e),
                Some(Ok(())) | None => return Ok(()),
            }
        }
        Ok(())
    }

    /// An HTTP/2 connection: its preface must arrive within the idle and
    /// header timeouts of the connection's start; after it, Pingora's
    /// HTTP/2 idle timeout applies.
    fn expect_preface(&mut self) {
        self.phase = Phase::Preface(H2_PREFACE.len());
        let deadline = self.deadline + self.limits.header;
        self.arm(deadline);
    }

    fn expire(&mut self) -> io::Error {
        let expired = match self.phase {
            Phase::Header => {
                self.metrics.header_timeouts.inc();
                Expired::Header
            }
            Phase::Preface(_) => {
                self.metrics.preface_timeouts.inc();
                Expired::Preface
            }
            _ => {
                self.metrics.idle_timeouts.inc();
                Expired::Idle
            }
        };
        self.phase = Phase::Expired(expired);
        expired.error()
    }

    /// Moves the phase on after `data` was read.
    fn observe(&mut self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        match self.phase {
            Phase::Idle => {
                self.phase = Phase::Header;
                self.header_end = HeaderEnd::default();
                self.arm(Instant::now() + self.limits.header);
                self.header_bytes(data);
            }
            Phase::Header => self.header_bytes(data),
            Phase::Preface(left) => {
                let left = left.saturating_sub(data.len());
                self.phase = if left == 0 { Phase::Open } else { Phase::Preface(left) };
            }
            // A body, or a pipelined request read with the one before.
            Phase::Open => self.read_ahead = true,
            Phase::Expired(_) | Phase::Closing { .. } | Phase::Closed => {}
        }
    }

    /// Header bytes: past the header's end the request is open, and bytes
    /// after the end in the same read may be the next pipelined request.
    fn header_bytes(&mut self, data: &[u8]) {
        if let Some(end) = self.header_end.feed(data) {
            self.phase = Phase::Open;
            self.read_ahead |= end < data.len();
        }
    }

    /// A read's deadline passed: the read fails, after a 408 when it was
    /// a request header's. The 408 goes out here rather than when the app
    /// shuts the stream down: not every app does (Pingora's `ServeHttp`
    /// apps, such as the admin listener, drop a stream whose header read
    /// failed).
    fn poll_expired(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let err = self.expire();
        if self.phase != Phase::Expired(Expired::Header) {
            return Poll::Ready(Err(err));
        }
        self.arm(Instant::now() + LINGER);
        self.poll_close_with_408(cx, 0, false).map(|_| Err(err))
    }

    /// Writes the 408, shuts the write side down and drains what the
    /// client still sends, all within [`LINGER`].
    fn poll_close_with_408(&mut self, cx: &mut Context<'_>, sent: usize, shut: bool) -> Poll<io::Result<()>> {
        let done = self.poll_408_steps(cx, sent, shut);
        if done.is_ready() {
            self.phase = Phase::Closed;
        }
        done
    }

    fn poll_408_steps(&mut self, cx: &mut Context<'_>, mut sent: usize, mut shut: bool) -> Poll<io::Result<()>> {
        loop {
            let step = if sent < REQUEST_TIMEOUT.len() {
                match Pin::new(&mut self.inner).poll_write(cx, &REQUEST_TIMEOUT[sent..]) {
                    Poll::Ready(Ok(n)) if n > 0 => {
                        sent += n;
                        continue;
                    }
                    Poll::Ready(_) => return Poll::Ready(Ok(())),
                    Poll::Pending => Poll::Pending,
                }
            } else if !shut {
                match Pin::new(&mut self.inner).poll_shutdown(cx) {
                    Poll::Ready(Ok(())) => {
                        shut = true;
                        continue;
                    }
                    Poll::Ready(Err(_)) => return Poll::Ready(Ok(())),
                    Poll::Pending => Poll::Pending,
                }
            } else {
                let mut sink = [0u8; 1024];
                let mut buf = ReadBuf::new(&mut sink);
                match Pin::new(&mut self.inner).poll_read(cx, &mut buf) {
                    Poll::Ready(Ok(())) if !buf.filled().is_empty() => continue,
                    Poll::Ready(_) => return Poll::Ready(Ok(())),
                    Poll::Pending => Poll::Pending,
                }
            };
            self.phase = Phase::Closing { sent, shut };
            return match self.poll_timer(cx) {
                Poll::Ready(()) => Poll::Ready(Ok(())),
                Poll::Pending => step,
            };
        }
    }
}

impl AsyncRead for Guarded {
    /// Sends held bytes first, except a response held for its Markdown
    /// estimate: Pingora reads the client while that response streams (a
    /// request body, or its check that the client is still there), and the
    /// response's own end releases it.
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.markdown.load(Ordering::Relaxed) == MD_NONE {
            ready!(this.poll_send_held(cx))?;
        }
        if this.at < this.prefetched.len() {
            let n = buf.remaining().min(this.prefetched.len() - this.at);
            let (from, to) = (this.at, this.at + n);
            buf.put_slice(&this.prefetched[from..to]);
            this.at = to;
            let bytes = std::mem::take(&mut this.prefetched);
            this.observe(&bytes[from..to]);
            this.prefetched = bytes;
            return Poll::Ready(Ok(()));
        }
        match this.phase {
            Phase::Open => return Pin::new(&mut this.inner).poll_read(cx, buf),
            Phase::Closing { sent, shut } => {
                return this.poll_close_with_408(cx, sent, shut).map(|_| Err(Expired::Header.error()))
            }
            Phase::Expired(e) => return Poll::Ready(Err(e.error())),
            Phase::Closed => return Poll::Ready(Err(io::ErrorKind::NotConnected.into())),
            Phase::Idle | Phase::Header | Phase::Preface(_) => {}
        }
        // Checked before reading: a client that trickles bytes never lets a
        // read wait long enough for the timer to fire.
        if Instant::now() >= this.deadline {
            return this.poll_expired(cx);
        }
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                this.observe(&buf.filled()[before..]);
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => match this.poll_timer(cx) {
                Poll::Ready(()) => this.poll_expired(cx),
                Poll::Pending => Poll::Pending,
            },
        }
    }
}

impl AsyncWrite for Guarded {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.holds(buf.len()) {
            this.reserve_held(buf.len());
            this.held.extend_from_slice(buf);
            this.last_chunk = buf == LAST_CHUNK;
            return Poll::Ready(Ok(buf.len()));
        }
        ready!(this.poll_release(cx))?;
        Pin::new(&mut this.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let len = bufs.iter().fold(0usize, |n, b| n.saturating_add(b.len()));
        if this.holds(len) {
            this.reserve_held(len);
            for b in bufs {
                this.held.extend_from_slice(b);
            }
            this.last_chunk = false;
            return Poll::Ready(Ok(len));
        }
        ready!(this.poll_release(cx))?;
        Pin::new(&mut this.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    /// While coalescing, a flush before the last chunk's sends nothing; a
    /// response held for its Markdown estimate also waits for the end of
    /// its body (a data chunk could read like a last chunk).
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.coalesce.load(Ordering::Relaxed)
            && (!this.last_chunk || this.markdown.load(Ordering::Relaxed) == MD_WAITING)
        {
            return Poll::Ready(Ok(()));
        }
        ready!(this.poll_release(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    /// After a header timeout, answers 408 before shutting down (Pingora
    /// shuts the stream down after a failed header read).
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match this.phase {
            Phase::Expired(Expired::Header) => {
                this.arm(Instant::now() + LINGER);
                this.poll_close_with_408(cx, 0, false)
            }
            Phase::Closing { sent, shut } => this.poll_close_with_408(cx, sent, shut),
            Phase::Closed => Poll::Ready(Ok(())),
            _ => {
                ready!(this.poll_release(cx))?;
                Pin::new(&mut this.inner).poll_shutdown(cx)
            }
        }
    }
}

impl Drop for Guarded {
    /// Held bytes of a response cut short (Pingora gave up on it before its
    /// last chunk) get one try to leave without waiting.
    fn drop(&mut self) {
        if !self.held.is_empty() {
            let mut cx = Context::from_waker(Waker::noop());
            let _ = self.poll_send_held(&mut cx);
        }
    }
}

#[async_trait]
impl Shutdown for Guarded {
    async fn shutdown(&mut self) {
        if matches!(self.phase, Phase::Expired(Expired::Header) | Phase::Closing { .. } | Phase::Closed) {
            let _ = AsyncWriteExt::shutdown(self).await;
        } else {
            let _ = std::future::poll_fn(|cx| self.poll_release(cx)).await;
            Shutdown::shutdown(self.inner.as_mut()).await;
        }
    }
}

#[async_trait]
impl Peek for Guarded {
    /// Bounded by the idle and header timeouts together: Pingora's peek for
    /// the HTTP/2 preface waits for all of its 24 bytes.
    async fn try_peek(&mut self, buf: &mut [u8]) -> io::Result<bool> {
        if self.phase != Phase::Idle {
            return self.inner.try_peek(buf).await;
        }
        let until = self.deadline + self.limits.header;
        match tokio::time::timeout_at(until, self.inner.try_peek(buf)).await {
            Ok(r) => r,
            Err(_) => Err(self.expire()),
        }
    }
}

impl UniqueID for Guarded {
    fn id(&self) -> UniqueIDType {
        self.inner.id()
    }
}

impl Ssl for Guarded {
    fn get_ssl(&self) -> Option<&pingora::protocols::tls::TlsRef> {
        self.inner.get_ssl()
    }

    fn get_ssl_digest(&self) -> Option<Arc<pingora::protocols::tls::SslDigest>> {
        self.inner.get_ssl_digest()
    }

    fn selected_alpn_proto(&self) -> Option<ALPN> {
        self.inner.selected_alpn_proto()
    }
}

impl GetTimingDigest for Guarded {
    fn get_timing_digest(&self) -> Vec<Option<pingora::protocols::TimingDigest>> {
        self.inner.get_timing_digest()
    }

    fn get_read_pending_time(&self) -> Duration {
        self.inner.get_read_pending_time()
    }

    fn get_write_pending_time(&self) -> Duration {
        self.inner.get_write_pending_time()
    }
}

impl GetProxyDigest for Guarded {
    fn get_proxy_digest(&self) -> Option<Arc<pingora::protocols::raw_connect::ProxyDigest>> {
        self.inner.get_proxy_digest()
    }

    fn set_proxy_digest(&mut self, digest: pingora::protocols::raw_connect::ProxyDigest) {
        self.inner.set_proxy_digest(digest);
    }
}

impl GetSocketDigest for Guarded {
    fn get_socket_digest(&self) -> Option<Arc<pingora::protocols::SocketDigest>> {
        self.socket_digest.clone().or_else(|| self.inner.get_socket_digest())
    }

    fn set_socket_digest(&mut self, digest: pingora::protocols::SocketDigest) {
        self.inner.set_socket_digest(digest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The admin listener's per-client limit counts IPv4 addresses one by
    /// one and IPv6 addresses by their /64; an IPv4-mapped address is its
    /// IPv4 address.
    #[test]
    fn per_client_limit_groups_ipv6_by_64() {
        let ip = |s: &str| -> std::net::IpAddr { s.parse().unwrap_or_else(|e| panic!("{s}: {e}")) };
        let table = Arc::new(PerClient { limit: 2, open: Default::default() });
        let a = table.admit(ip("2001:db8:1:2::1"));
        let b = table.admit(ip("2001:db8:1:2:ffff:ffff:ffff:ffff"));
        assert!(a.is_some() && b.is_some());
        assert!(table.admit(ip("2001:db8:1:2:abcd::9")).is_none(), "a third address of the same /64");
        let other = table.admit(ip("2001:db8:1:3::1"));
        assert!(other.is_some(), "the next /64 is another client");
        let v4 = [table.admit(ip("192.0.2.1")), table.admit(ip("::ffff:192.0.2.1"))];
        assert!(v4.iter().all(Option::is_some));
        assert!(table.admit(ip("192.0.2.1")).is_none(), "the mapped address counted as the IPv4 one");
        assert!(table.admit(ip("192.0.2.2")).is_some(), "IPv4 addresses are counted one by one");
        drop(a);
        assert!(table.admit(ip("2001:db8:1:2::7")).is_some(), "a closed connection gives its slot back");
        assert_eq!(
            ["2001:db8:1:2:3:4:5:6", "::ffff:10.0.0.1", "10.0.0.1", "::1"].map(|s| client_key(ip(s)).to_string()),
            ["2001:db8:1:2::", "10.0.0.1", "10.0.0.1", "::"]
        );
    }

    /// A client connection over a real socket, and its peer.
    async fn guarded_pair() -> (Guarded, tokio::net::TcpStream) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("bind: {e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("addr: {e}"));
        let client = tokio::net::TcpStream::connect(addr).await.unwrap_or_else(|e| panic!("connect: {e}"));
        let (server, _) = listener.accept().await.unwrap_or_else(|e| panic!("accept: {e}"));
        let gauge = prometheus::IntGauge::new("open", "open").unwrap_or_else(|e| panic!("{e}"));
        let counter = || prometheus::IntCounter::new("c", "c").unwrap_or_else(|e| panic!("{e}"));
        let metrics = ConnMetrics {
            open: gauge,
            refused: counter(),
            idle_timeouts: counter(),
            header_timeouts: counter(),
            preface_timeouts: counter(),
        };
        let second = Duration::from_secs(1);
        let limits = Limits { idle: second, header: second, body: second, max_connections: 1 };
        let stream: Stream = Box::new(pingora::protocols::l4::stream::Stream::from(server));
        (Guarded::new(stream, limits, Arc::new(metrics)), client)
    }

    /// What the peer has received: what arrives within 200 ms (a send on
    /// loopback arrives before it returns; the wait covers the runtime's
    /// readiness).
    async fn sent(peer: &tokio::net::TcpStream) -> Vec<u8> {
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(Ok(())) = tokio::time::timeout(Duration::from_millis(200), peer.readable()).await {
            match peer.try_read(&mut buf) {
                Ok(0) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => break,
            }
        }
        out
    }

    /// While a response's end is coalesced, Pingora's flushes of the header
    /// and of a data chunk send nothing; the flush after the last chunk
    /// sends all of it at once, and later writes go out as flushed again.
    #[tokio::test]
    async fn a_coalesced_response_end_leaves_with_its_last_chunk() {
        let (mut conn, peer) = guarded_pair().await;
        let parts: [&[u8]; 3] =
            [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", b"5\r\nhello\r\n", LAST_CHUNK];
        conn.coalesce.store(true, Ordering::Relaxed);
        for part in &parts[..2] {
            assert!(conn.write_all(part).await.is_ok() && conn.flush().await.is_ok());
            assert_eq!(sent(&peer).await, b"", "sent before the last chunk");
        }
        assert!(conn.write_all(LAST_CHUNK).await.is_ok() && conn.flush().await.is_ok());
        // Loopback delivers a send before it returns.
        assert_eq!(sent(&peer).await, parts.concat());
        assert!(!conn.coalesce.load(Ordering::Relaxed) && conn.held.is_empty());
        assert!(conn.write_all(b"more").await.is_ok() && conn.flush().await.is_ok());
        assert_eq!(sent(&peer).await, b"more");
    }

    /// Held bytes never wait for a last chunk that does not come: a read
    /// (the next request) or a shutdown sends them first.
    #[tokio::test]
    async fn held_bytes_leave_before_a_read_or_a_shutdown() {
        let (mut conn, peer) = guarded_pair().await;
        conn.phase = Phase::Open;
        conn.coalesce.store(true, Ordering::Relaxed);
        assert!(conn.write_all(b"held").await.is_ok() && conn.flush().await.is_ok());
        assert_eq!(sent(&peer).await, b"");
        assert!(peer.try_write(b"GET").is_ok());
        let mut buf = [0u8; 8];
        let n = conn.read(&mut buf).await.unwrap_or_else(|e| panic!("read: {e}"));
        assert_eq!(&buf[..n], b"GET");
        assert_eq!(sent(&peer).await, b"held");
        conn.coalesce.store(true, Ordering::Relaxed);
        assert!(conn.write_all(b"bye").await.is_ok() && conn.flush().await.is_ok());
        assert_eq!(sent(&peer).await, b"");
        assert!(AsyncWriteExt::shutdown(&mut conn).await.is_ok());
        assert_eq!(sent(&peer).await, b"bye");
    }

    /// Past `MAX_COALESCED` the held bytes go out and the rest is written
    /// as it comes.
    #[tokio::test]
    async fn coalescing_is_bounded() {
        let (mut conn, peer) = guarded_pair().await;
        conn.coalesce.store(true, Ordering::Relaxed);
        let big = vec![b'a'; MAX_COALESCED];
        assert!(conn.write_all(b"head").await.is_ok());
        assert!(conn.write_all(&big).await.is_ok() && conn.flush().await.is_ok());
        assert!(!conn.coalesce.load(Ordering::Relaxed) && conn.held.is_empty());
        let mut got = Vec::new();
        for _ in 0..1000 {
            got.extend(sent(&peer).await);
            if got.len() >= big.len() + 4 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert!(got.len() == big.len() + 4 && got.starts_with(b"head"), "{} bytes", got.len());
    }

    /// Everything the peer receives until `want` bytes have come (or two
    /// seconds pass): a large write may arrive in several reads.
    async fn received(peer: &tokio::net::TcpStream, want: usize) -> Vec<u8> {
        let mut got = Vec::new();
        let until = Instant::now() + Duration::from_secs(2);
        while got.len() < want && Instant::now() < until {
            got.extend(sent(peer).await);
        }
        got
    }

    /// Holds `conn` for a Markdown estimate (what `hold_for_markdown_tokens`
    /// does on a session).
    fn hold_whole(conn: &Guarded) {
        conn.hold_for_tokens();
    }

    /// What `markdown_tokens` does on a session.
    fn estimate(conn: &Guarded, tokens: u64) -> bool {
        conn.set_tokens(tokens)
    }

    /// A response held from its header on leaves with its last chunk, the
    /// estimate as the header's last line, the body as written; flushes
    /// before the end send nothing, even one after a data chunk that reads
    /// like a last chunk.
    #[tokio::test]
    async fn a_held_markdown_response_leaves_with_its_estimate() {
        let (mut conn, peer) = guarded_pair().await;
        hold_whole(&conn);
        let head: &[u8] =
            b"HTTP/1.1 200 OK\r\ncontent-type: text/markdown; charset=utf-8\r\ntransfer-encoding: chunked\r\n\r\n";
        let chunks: [&[u8]; 4] = [b"5\r\n", LAST_CHUNK, b"\r\n", b"3\r\n# a\r\n"];
        assert!(conn.write_all(head).await.is_ok() && conn.flush().await.is_ok());
        for c in chunks {
            assert!(conn.write_all(c).await.is_ok() && conn.flush().await.is_ok());
            assert_eq!(sent(&peer).await, b"", "sent before the end");
        }
        assert!(estimate(&conn, 42));
        assert!(conn.write_all(LAST_CHUNK).await.is_ok() && conn.flush().await.is_ok());
        let want = [
            b"HTTP/1.1 200 OK\r\ncontent-type: text/markdown; charset=utf-8\r\ntransfer-encoding: chunked\r\nx-markdown-tokens: 42\r\n\r\n".as_slice(),
            b"5\r\n0\r\n\r\n\r\n3\r\n# a\r\n0\r\n\r\n",
        ]
        .concat();
        // One write: all of it is there at the first read.
        assert_eq!(sent(&peer).await, want);
        assert!(!conn.coalesce.load(Ordering::Relaxed) && conn.held.is_empty());
        assert_eq!(conn.markdown.load(Ordering::Relaxed), MD_NONE);
        // The next response is not held, and gets no estimate.
        assert!(conn.write_all(b"HTTP/1.1 204 No Content\r\n\r\n").await.is_ok() && conn.flush().await.is_ok());
        assert_eq!(sent(&peer).await, b"HTTP/1.1 204 No Content\r\n\r\n");
    }

    /// Past `MAX_HELD_FOR_TOKENS` before the end, the held bytes go out as
    /// they were written (no estimate), the rest streams in order, and the
    /// estimate given at the end changes nothing; the end is coalesced as
    /// any chunked rewrite's.
    #[tokio::test]
    async fn a_markdown_response_past_the_bound_streams_without_an_estimate() {
        let (mut conn, peer) = guarded_pair().await;
        hold_whole(&conn);
        let head: &[u8] = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n";
        let big: Vec<u8> = (0..MAX_HELD_FOR_TOKENS).map(|i| b"abcdefgh"[i % 8]).collect();
        assert!(conn.write_all(head).await.is_ok() && conn.flush().await.is_ok());
        assert_eq!(sent(&peer).await, b"");
        assert!(conn.write_all(&big).await.is_ok() && conn.flush().await.is_ok());
        assert!(!conn.coalesce.load(Ordering::Relaxed) && conn.held.is_empty());
        let got = received(&peer, head.len() + big.len()).await;
        assert!(got == [head, &big].concat(), "{} bytes", got.len());
        assert!(!estimate(&conn, 7), "the hold is over");
        conn.coalesce.store(true, Ordering::Relaxed);
        assert!(conn.write_all(b"tail").await.is_ok() && conn.flush().await.is_ok());
        assert_eq!(sent(&peer).await, b"");
        assert!(conn.write_all(LAST_CHUNK).await.is_ok() && conn.flush().await.is_ok());
        assert_eq!(sent(&peer).await, [b"tail".as_slice(), LAST_CHUNK].concat());
    }

    /// A held Markdown response cut short (no estimate, no last chunk)
    /// leaves as it was written once the hold is ended (a failed
    /// response), at shutdown or when the connection is dropped. A read
    /// while it streams (Pingora's check that the client is still there)
    /// does not release it.
    #[tokio::test]
    async fn a_markdown_hold_cut_short_sends_its_bytes_unchanged() {
        let (mut conn, peer) = guarded_pair().await;
        conn.phase = Phase::Open;
        let head: &[u8] = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n";
        hold_whole(&conn);
        assert!(conn.write_all(head).await.is_ok() && conn.flush().await.is_ok());
        conn.markdown.store(MD_NONE, Ordering::Relaxed);
        conn.coalesce.store(false, Ordering::Relaxed);
        assert!(conn.flush().await.is_ok());
        assert_eq!(sent(&peer).await, head);
        hold_whole(&conn);
        assert!(conn.write_all(head).await.is_ok() && conn.flush().await.is_ok());
        assert!(peer.try_write(b"GET").is_ok());
        let mut buf = [0u8; 8];
        let n = conn.read(&mut buf).await.unwrap_or_else(|e| panic!("read: {e}"));
        assert_eq!((&buf[..n], sent(&peer).await.as_slice()), (b"GET".as_slice(), b"".as_slice()));
        assert!(estimate(&conn, 5), "still held");
        assert!(AsyncWriteExt::shutdown(&mut conn).await.is_ok());
        // The estimate was known: the header says it.
        assert_eq!(
            sent(&peer).await,
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\nx-markdown-tokens: 5\r\n\r\n3\r\nabc\r\n"
        );
        let (mut conn, peer) = guarded_pair().await;
        hold_whole(&conn);
        assert!(conn.write_all(head).await.is_ok() && conn.flush().await.is_ok());
        drop(conn);
        assert_eq!(sent(&peer).await, head);
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

    #[test]
    fn header_end() {
        let ends = |parts: &[&[u8]]| {
            let mut h = HeaderEnd::default();
            parts.iter().any(|p| h.feed(p).is_some())
        };
        assert!(ends(&[b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"]));
        assert!(ends(&[b"GET / HTTP/1.1\r\nHost: a\r", b"\n", b"\r", b"\n"]));
        assert!(ends(&[b"GET / HTTP/1.1\nHost: a\n\n"]));
        assert!(ends(&[b"GET / HTTP/1.1\r\n\r\nbody"]));
        assert!(!ends(&[b"GET / HTTP/1.1\r\nHost: a\r\n"]));
        assert!(!ends(&[b"\r\n\r\n", b"\r\n"]));
        assert!(ends(&[b"\r\n\r\nGET / HTTP/1.1\r\n", b"\r\n"]));
        assert!(!ends(&[b"GET / HTTP/1.1\r\nX: a\r\r\n"]));
    }

    #[test]
    fn probe_lines() {
        let paths = &["/healthz", "/readyz"];
        let cases: &[(&[u8], ProbeLine)] = &[
            (b"GET /healthz HTTP/1.1\r\n", ProbeLine::Probe),
            (b"HEAD /readyz HTTP/1.0\r\nHost: a\r\n\r\n", ProbeLine::Probe),
            (b"GET /readyz?verbose=1 HTTP/1.1\n", ProbeLine::Probe),
            (b"\r\nGET /healthz HTTP/1.1\r\n", ProbeLine::Probe),
            (b"GET /healthz HTTP/1.1", ProbeLine::Partial),
            (b"", ProbeLine::Partial),
            (b"\r\n", ProbeLine::Partial),
            (b"GET /metrics HTTP/1.1\r\n", ProbeLine::Other),
            (b"POST /healthz HTTP/1.1\r\n", ProbeLine::Other),
            (b"GET /healthzz HTTP/1.1\r\n", ProbeLine::Other),
            (b"GET /healthz/x HTTP/1.1\r\n", ProbeLine::Other),
            (b"GET  /healthz HTTP/1.1\r\n", ProbeLine::Other),
            (b"GET /healthz HTTP/2.0\r\n", ProbeLine::Other),
            (b"GET /healthz\r\n", ProbeLine::Other),
            (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", ProbeLine::Other),
        ];
        for (head, want) in cases {
            assert_eq!(probe_line(head, paths), *want, "{}", String::from_utf8_lossy(head));
        }
        let long = [b"GET /".as_slice(), &[b'a'; PROBE_LINE_MAX]].concat();
        assert_eq!(probe_line(&long, paths), ProbeLine::Other);
        let blank = b"\r\n".repeat(PROBE_LINE_MAX);
        assert_eq!(probe_line(&blank, paths), ProbeLine::Other);
    }

    /// The line-at-a-time search agrees with the byte-at-a-time definition
    /// on every split of every short input over the bytes that matter.
    #[test]
    fn header_end_agrees_with_the_byte_definition() {
        let alphabet: &[u8] = b"\r\nG ";
        let mut inputs: Vec<Vec<u8>> = vec![Vec::new()];
        for _ in 0..7 {
            let next: Vec<Vec<u8>> =
                inputs.iter().flat_map(|i| alphabet.iter().map(move |&b| [i.as_slice(), &[b]].concat())).collect();
            inputs.extend(next);
        }
        for input in &inputs {
            for cut in 0..=input.len() {
                let (a, b) = input.split_at(cut);
                let (mut fast, mut slow) = (HeaderEnd::default(), HeaderEnd::default());
                let f = fast.feed(a).map(|e| e as isize).or_else(|| fast.feed(b).map(|e| (e + cut) as isize));
                let s =
                    slow.feed_bytes(a).map(|e| e as isize).or_else(|| slow.feed_bytes(b).map(|e| (e + cut) as isize));
                assert_eq!(f, s, "{input:?} cut at {cut}");
            }
        }
    }
}
