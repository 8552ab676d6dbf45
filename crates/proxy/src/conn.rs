//! Client connection limits around a Pingora HTTP app: a cap on concurrent
//! connections and the idle, header and body timeouts of `[server]`; on
//! the admin listener also a cap per client address and a few slots over
//! the cap that only health probes may use (taken once a request line names
//! a probe; the per-client cap never refuses a probe).
//!
//! Pingora alone leaves a kept-alive HTTP/1 connection open for ever: after
//! the first request its session switches to an unbounded keep-alive wait
//! (an HTTP/1.1 request without `Connection` gets "keep-alive, no timeout"),
//! and that setting is carried to every reused session. Its header read
//! timeout is also per read, so a client sending one byte every few seconds
//! is never cut off. [`ConnApp`] therefore runs the HTTP/1 keep-alive loop
//! itself, telling the stream where each request starts, and reads through
//! the stream wrapper of `guarded`, which enforces the idle deadline before
//! every request and one total deadline for each request header. Request
//! bodies use Pingora's per-read timeout (nginx's `client_body_timeout`
//! semantics). HTTP/2 connections get Pingora's `h2_idle_timeout` and a
//! deadline for their preface only.
//!
//! The same stream holds writes back when the proxy's hooks ask it to
//! (`held`, through the session functions below): the end of a chunked
//! rewrite leaves in one write, and a converted Markdown response waits
//! whole for its `x-markdown-tokens`. Who may connect at all (the
//! per-client cap, the probe slots) is `admission`.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use pingora::apps::{HttpServerApp, ServerApp};
use pingora::protocols::http::ServerSession;
use pingora::protocols::{Peek, SocketDigest, Ssl, Stream, ALPN};
use pingora::server::ShutdownWatch;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Semaphore;
use tokio::time::Instant;

use crawlgate_telemetry::metrics::ConnMetrics;

mod admission;
mod guarded;

use admission::*;
pub use crawlgate_wire::held::{Approval, Release};
use guarded::{guarded, Guarded};

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

/// At most this many connections over a cap have their request line read
/// at once, to find the probes among them; past it, one is refused at once.
const MAX_PROBE_READS: usize = 64;

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
    /// `paths` (one request each, its header within [`PROBE_DEADLINE`]);
    /// such a probe is never refused by the per-client cap either.
    pub fn with_probe_slots(mut self, slots: usize, paths: &'static [&'static str]) -> ConnApp<A> {
        self.probes = Some(Probes {
            slots: Arc::new(Semaphore::new(slots)),
            reading: Arc::new(Semaphore::new(MAX_PROBE_READS)),
            paths,
        });
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
        // `None` when the client is over its cap.
        let client = match (&self.per_client, peer) {
            (Some(table), Some(ip)) => table.admit(ip).map(Some),
            _ => Some(None),
        };
        let admitted = client.and_then(|c| Some((c, self.slots.clone().try_acquire_owned().ok()?)));
        let Some((_client, permit)) = admitted else {
            // Over a cap: only a probe gets in, and a slot is taken only
            // once its request line names one.
            match &self.probes {
                Some(probes) => self.serve_probe(stream, probes, shutdown).await,
                None => {
                    self.metrics.refused.inc();
                    self.refuse(stream).await;
                }
            }
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

    /// A connection over a cap: its request line is read within
    /// [`PROBE_DEADLINE`] (under one of [`MAX_PROBE_READS`], holding no
    /// slot); one that names a probe is served in a probe slot (or, when
    /// they are all busy, a free slot under the cap: a client over its own
    /// cap), one request, then closed. Anything else is refused as over
    /// the cap.
    async fn serve_probe(&self, mut stream: Stream, probes: &Probes, shutdown: &ShutdownWatch) {
        let Ok(_reading) = probes.reading.try_acquire() else {
            self.metrics.refused.inc();
            self.refuse(stream).await;
            return;
        };
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
                match probe_line(&head, probes.paths) {
                    ProbeLine::Partial => {}
                    seen => return Ok::<_, io::Error>(seen),
                }
            }
        })
        .await;
        let permit = match line {
            Ok(Ok(ProbeLine::Probe)) => {
                probes.slots.clone().try_acquire_owned().or_else(|_| self.slots.clone().try_acquire_owned()).ok()
            }
            _ => None,
        };
        let Some(permit) = permit else {
            self.metrics.refused.inc();
            self.refuse(stream).await;
            return;
        };
        self.metrics.open.inc();
        let _slot = Slot { _permit: permit, metrics: self.metrics.clone() };
        // The rest of the header within what is left of the deadline; the
        // bytes read so far are handed to Pingora first.
        let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
        let limits = Limits { idle: left, header: left, body: left, ..self.limits };
        let io = Guarded::new(stream, limits, self.metrics.clone()).with_prefetched(head);
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
        let mut io = Guarded::new(stream, self.limits, self.metrics.clone()).with_peer(proxied);
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
        let header = tokio::time::timeout(self.limits.header, crawlgate_wire::proxy_protocol::read(stream))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "PROXY protocol header timed out"))??;
        match header {
            crawlgate_wire::proxy_protocol::Header::Local => Ok(None),
            crawlgate_wire::proxy_protocol::Header::Proxied(addr) => {
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

/// Makes the HTTP/1 client connection of `session` send the end of the
/// current chunked response in one write: its body filter has seen the
/// end of the stream, so Pingora writes the rest (the header if it has not
/// gone yet, the last data chunk and the last chunk) right after, and each
/// of its flushes would be a system call and a packet of its own. Held
/// bytes go out when the last chunk is flushed, before the next read, at
/// shutdown, or when more than 64 KiB would be held.
/// Returns whether the connection is one of [`ConnApp`]'s (not HTTP/2).
pub fn coalesce_response_end(session: &ServerSession) -> bool {
    guarded(session).is_some_and(|g| {
        g.held.coalesce_end();
        true
    })
}

/// Ends [`coalesce_response_end`]'s hold without a last chunk: the next
/// flush sends what is held. For a response that fails after its end
/// reached the body filter (Pingora's error answer has no last chunk).
/// A hold still awaiting its approval ([`release_after`]) never leaves:
/// its approval is dropped, and [`send_instead`] may put the error in its
/// place.
pub fn end_coalescing(session: &ServerSession) {
    if let Some(g) = guarded(session) {
        g.held.end();
    }
}

/// Makes the HTTP/1 client connection of `session` hold the whole response
/// about to be written, from its status line on, so that
/// [`markdown_tokens`] can add `x-markdown-tokens` to its header: the
/// header, every chunk and the last chunk then leave in one write when the
/// last chunk is flushed. Called from `response_filter`, before Pingora
/// writes the header. Past `crawlgate_wire::held::MAX_HELD_FOR_TOKENS` (256 KiB) the held bytes go out
/// without the estimate and the rest streams; a failed response, the next
/// read, a shutdown or a drop send what is held as
/// [`coalesce_response_end`]'s hold does. Returns whether the connection
/// is one of [`ConnApp`]'s (HTTP/2 streams have none, and no estimate).
pub fn hold_for_markdown_tokens(session: &ServerSession) -> bool {
    guarded(session).is_some_and(|g| {
        g.held.hold_whole();
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
    guarded(session).is_some_and(|g| g.held.set_tokens(tokens))
}

/// Makes the whole response held by [`hold_for_markdown_tokens`] wait for
/// `approval` too: the connection polls it when the response would leave
/// (the flush of its last chunk, or past the hold's bound) and sends the
/// response with the approval's field lines added to its header, or sends
/// the approval's response in its place and closes. A response that fails
/// first ([`end_coalescing`]) never leaves and its approval is dropped
/// without being polled further; so is one whose connection goes first.
/// Returns false, `approval` dropped unpolled, when no such hold was taken.
pub fn release_after(session: &ServerSession, approval: Approval) -> bool {
    guarded(session).is_some_and(|g| g.held.release_after(approval))
}

/// Sends `response` (a whole HTTP/1.1 response whose status is `status`,
/// closing the connection) in place of a held response that never left
/// (see [`release_after`]); the connection ends after it. Returns false
/// when there is none: the response is Pingora's to write.
pub fn send_instead(session: &ServerSession, status: u16, response: Vec<u8>) -> bool {
    guarded(session).is_some_and(|g| g.held.send_instead(status, response))
}

/// The status of the response sent in place of the one Pingora wrote on
/// this connection (a held response that never left), if any.
pub fn sent_instead(session: &ServerSession) -> Option<u16> {
    guarded(session).and_then(|g| g.held.sent_instead())
}
