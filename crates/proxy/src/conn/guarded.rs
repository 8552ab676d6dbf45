//! The client stream of a [`super::ConnApp`] connection: [`Guarded`]
//! enforces the idle, header and HTTP/2 preface deadlines on reads (with
//! the 408 of a header that did not arrive in time), keeps the first bytes
//! of the next request read while waiting for it, routes writes through
//! the connection's held writes (`super::held`), and delegates the rest of
//! Pingora's `IO` to the socket.

use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll, Waker};
use std::time::Duration;

use async_trait::async_trait;
use pingora::protocols::http::ServerSession;
use pingora::protocols::{
    GetProxyDigest, GetSocketDigest, GetTimingDigest, Peek, Shutdown, SocketDigest, Ssl, Stream, UniqueID,
    UniqueIDType, ALPN,
};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::time::{Instant, Sleep};

use super::{Limits, H2_PREFACE, LINGER, REQUEST_TIMEOUT};
use crawlgate_telemetry::metrics::ConnMetrics;
use crawlgate_wire::header_end::HeaderEnd;
use crawlgate_wire::held::Held;

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

/// The longest absolute-form request header read whole before Pingora
/// parses it, so that its `Host` can be set from its target; a longer one
/// is left to Pingora.
const MAX_ABSOLUTE_FORM_HEADER: usize = 64 * 1024;

/// A client stream that fails reads with `TimedOut` once the deadline of
/// its phase has passed, and holds writes as [`Held`] says. Every other
/// part of Pingora's `IO` is delegated.
pub(super) struct Guarded {
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
    /// What is held of the response being written.
    pub(super) held: Held,
}

/// The connection under an HTTP/1 session, if it is one of
/// [`super::ConnApp`]'s.
pub(super) fn guarded(session: &ServerSession) -> Option<&Guarded> {
    session.stream()?.as_ref().as_any().downcast_ref::<Guarded>()
}

impl fmt::Debug for Guarded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Guarded").field("inner", &self.inner).field("phase", &self.phase).finish()
    }
}

impl Guarded {
    /// A new connection, waiting for its first request.
    pub(super) fn new(inner: Stream, limits: Limits, metrics: Arc<ConnMetrics>) -> Guarded {
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
            held: Held::default(),
        }
    }

    /// Hands Pingora `head` (bytes of the next request read already)
    /// before anything else is read.
    pub(super) fn with_prefetched(mut self, head: Vec<u8>) -> Guarded {
        self.prefetched = head;
        self.at = 0;
        self
    }

    /// Names `digest`'s peer (a PROXY protocol header's source) in place of
    /// the socket's.
    pub(super) fn with_peer(mut self, digest: Option<Arc<SocketDigest>>) -> Guarded {
        self.socket_digest = digest;
        self
    }

    /// Writes the held bytes to the stream below and stops holding.
    fn poll_release(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.held.poll_release(cx, &mut self.inner)
    }

    /// Sends whatever is held, before a read or a shutdown.
    fn poll_send_held(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.held.is_idle() {
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
    pub(super) fn expect_request(&mut self) {
        self.phase = Phase::Idle;
        self.header_end = HeaderEnd::default();
        self.arm(Instant::now() + self.limits.idle);
    }

    /// Waits, within the idle deadline, until the client has sent the
    /// first bytes of a request, and keeps them for Pingora's first read.
    /// Reading rather than peeking costs no extra system call per request
    /// (a peek would be followed by Pingora's own read of the same bytes).
    pub(super) async fn wait_for_request(&mut self) -> io::Result<()> {
        std::future::poll_fn(|cx| self.poll_send_held(cx)).await?;
        if self.held.ends_connection() {
            return Err(io::ErrorKind::ConnectionAborted.into());
        }
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
    pub(super) fn expect_preface(&mut self) {
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
        if !this.held.holds_whole() {
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
    /// A write the hold does not take releases what is held first; a
    /// release that ends in a response that never leaves (its approval
    /// refused it) takes, and drops, the rest of it too.
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if !this.held.takes(buf.len()) {
            ready!(this.poll_release(cx))?;
            if !this.held.takes(buf.len()) {
                return Pin::new(&mut this.inner).poll_write(cx, buf);
            }
        }
        this.held.push(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let len = bufs.iter().fold(0usize, |n, b| n.saturating_add(b.len()));
        if !this.held.takes(len) {
            ready!(this.poll_release(cx))?;
            if !this.held.takes(len) {
                return Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
            }
        }
        this.held.push_vectored(bufs, len);
        Poll::Ready(Ok(len))
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    /// While coalescing, a flush before the last chunk's sends nothing; a
    /// response held for its Markdown estimate also waits for the end of
    /// its body (a data chunk could read like a last chunk).
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.held.flush_waits() {
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
    /// last chunk) get one try to leave without waiting, as does a response
    /// put in the place of a held one; a hold still awaiting its approval
    /// never leaves (its approval is dropped with it).
    fn drop(&mut self) {
        if self.held.has_output() {
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
    use crawlgate_wire::held::{Release, LAST_CHUNK, MAX_COALESCED, MAX_HELD_FOR_TOKENS};
    use tokio::io::AsyncReadExt;

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
        conn.held.coalesce_end();
        for part in &parts[..2] {
            assert!(conn.write_all(part).await.is_ok() && conn.flush().await.is_ok());
            assert_eq!(sent(&peer).await, b"", "sent before the last chunk");
        }
        assert!(conn.write_all(LAST_CHUNK).await.is_ok() && conn.flush().await.is_ok());
        // Loopback delivers a send before it returns.
        assert_eq!(sent(&peer).await, parts.concat());
        assert!(conn.held.is_idle());
        assert!(conn.write_all(b"more").await.is_ok() && conn.flush().await.is_ok());
        assert_eq!(sent(&peer).await, b"more");
    }

    /// Held bytes never wait for a last chunk that does not come: a read
    /// (the next request) or a shutdown sends them first.
    #[tokio::test]
    async fn held_bytes_leave_before_a_read_or_a_shutdown() {
        let (mut conn, peer) = guarded_pair().await;
        conn.phase = Phase::Open;
        conn.held.coalesce_end();
        assert!(conn.write_all(b"held").await.is_ok() && conn.flush().await.is_ok());
        assert_eq!(sent(&peer).await, b"");
        assert!(peer.try_write(b"GET").is_ok());
        let mut buf = [0u8; 8];
        let n = conn.read(&mut buf).await.unwrap_or_else(|e| panic!("read: {e}"));
        assert_eq!(&buf[..n], b"GET");
        assert_eq!(sent(&peer).await, b"held");
        conn.held.coalesce_end();
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
        conn.held.coalesce_end();
        let big = vec![b'a'; MAX_COALESCED];
        assert!(conn.write_all(b"head").await.is_ok());
        assert!(conn.write_all(&big).await.is_ok() && conn.flush().await.is_ok());
        assert!(conn.held.is_idle());
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
        conn.held.hold_whole();
    }

    /// What `markdown_tokens` does on a session.
    fn estimate(conn: &Guarded, tokens: u64) -> bool {
        conn.held.set_tokens(tokens)
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
        assert!(conn.held.is_idle());
        assert!(!conn.held.holds_whole());
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
        assert!(conn.held.is_idle());
        let got = received(&peer, head.len() + big.len()).await;
        assert!(got == [head, &big].concat(), "{} bytes", got.len());
        assert!(!estimate(&conn, 7), "the hold is over");
        conn.held.coalesce_end();
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
        conn.held.end();
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

    /// A held response awaiting its approval (its charge) never leaves
    /// when the connection goes first; one refused leaves nothing but the
    /// response sent in its place, and the connection ends after it.
    #[tokio::test]
    async fn a_held_response_leaves_only_once_approved() {
        let head: &[u8] = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n";
        let (mut conn, peer) = guarded_pair().await;
        hold_whole(&conn);
        assert!(conn.held.release_after(Box::pin(std::future::pending())));
        assert!(conn.write_all(head).await.is_ok() && conn.flush().await.is_ok());
        drop(conn);
        assert_eq!(sent(&peer).await, b"");
        let refused: &[u8] = b"HTTP/1.1 500 Internal Server Error\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
        let (mut conn, peer) = guarded_pair().await;
        hold_whole(&conn);
        assert!(conn.held.release_after(Box::pin(async { Release::Instead(500, refused.to_vec()) })));
        assert!(conn.write_all(head).await.is_ok() && conn.flush().await.is_ok());
        assert!(estimate(&conn, 2));
        assert!(conn.write_all(LAST_CHUNK).await.is_ok() && conn.flush().await.is_ok());
        assert_eq!(sent(&peer).await, refused);
        assert!(conn.wait_for_request().await.is_err(), "the connection ends");
    }

    /// A held response refused when it outgrew its hold (its approval asked
    /// before its first byte leaves) sends only the response in its place:
    /// not the write that outgrew the hold, nor any later one.
    #[tokio::test]
    async fn a_held_response_refused_past_its_bound_sends_nothing_of_it() {
        let refused: &[u8] = b"HTTP/1.1 402 Payment Required\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
        let (mut conn, peer) = guarded_pair().await;
        hold_whole(&conn);
        assert!(conn.held.release_after(Box::pin(async { Release::Instead(402, refused.to_vec()) })));
        let head: &[u8] = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n";
        assert!(conn.write_all(head).await.is_ok() && conn.flush().await.is_ok());
        let big = vec![b'a'; MAX_HELD_FOR_TOKENS];
        assert!(conn.write_all(&big).await.is_ok() && conn.flush().await.is_ok());
        assert!(conn.write_all(b"tail").await.is_ok() && conn.write_all(LAST_CHUNK).await.is_ok());
        assert!(conn.flush().await.is_ok());
        assert_eq!(received(&peer, refused.len() + 1).await, refused);
        assert!(conn.wait_for_request().await.is_err(), "the connection ends");
    }
}
