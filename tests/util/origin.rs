//! A real HTTP/1.1 origin server for the end-to-end tests: std threads on
//! 127.0.0.1, routes with fixed, chunked, slow or generated bodies, and a
//! record of every request it received.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

/// How a route sends its body.
#[allow(missing_docs)]
#[derive(Clone)]
pub enum Body {
    /// `Content-Length` and the bytes.
    Fixed(Vec<u8>),
    /// `Transfer-Encoding: chunked`, one HTTP chunk per element.
    Chunked(Vec<Vec<u8>>),
    /// After `first`, waits until the test opens the gate (so a test can
    /// see bytes arrive before the origin finishes). Chunked, or with a
    /// `Content-Length` when `sized`.
    Gated { first: Vec<u8>, rest: Vec<u8>, gate: Arc<(Mutex<bool>, std::sync::Condvar)>, sized: bool },
    /// `total` bytes generated on the fly: `head`, then `filler` repeated,
    /// then `tail` (never held in memory at once). Chunked, or with a
    /// `Content-Length` when `sized`.
    Generated { head: Vec<u8>, filler: Vec<u8>, tail: Vec<u8>, total: usize, sized: bool },
    /// Never answers (for gateway timeouts).
    Hang,
    /// A `Content-Length` of `declared` bytes, `sent` of them, then the
    /// connection closed: an origin that stops mid-body.
    Truncated { declared: usize, sent: Vec<u8> },
    /// `Content-Length` and the bytes, except once: the first request for
    /// the route on a connection that already served one closes that
    /// connection unanswered (a proxy's pooled connection dropped under
    /// it, which it retries); `dropped` tells the test it happened.
    DropOnceOnReuse { body: Vec<u8>, dropped: Arc<AtomicBool> },
}

/// One route's response.
#[derive(Clone)]
pub struct Route {
    /// Status code.
    pub status: u16,
    /// Extra headers.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Body,
}

impl Route {
    /// A 200 with a content type and a fixed body.
    pub fn ok(content_type: &str, body: impl Into<Vec<u8>>) -> Route {
        Route {
            status: 200,
            headers: vec![("Content-Type".into(), content_type.into())],
            body: Body::Fixed(body.into()),
        }
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Route {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Replaces the body.
    pub fn body(mut self, body: Body) -> Route {
        self.body = body;
        self
    }
}

/// What the origin saw of one request.
#[derive(Clone, Debug)]
pub struct Seen {
    /// Method.
    pub method: String,
    /// Request target as received.
    pub target: String,
    /// Headers, names lowercased.
    pub headers: Vec<(String, String)>,
}

impl Seen {
    /// First value of a header.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// A running origin; stops when dropped.
pub struct Origin {
    /// Where it listens.
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Origin {
    /// Starts an origin with `routes` (exact path match, query ignored;
    /// other paths get 404).
    pub fn start(routes: Vec<(&str, Route)>) -> Origin {
        Self::start_on("127.0.0.1:0", routes)
    }

    /// Starts an origin on a given address (to restart one on the same port).
    pub fn start_on(addr: &str, routes: Vec<(&str, Route)>) -> Origin {
        let listener = TcpListener::bind(addr).unwrap_or_else(|e| panic!("bind origin {addr}: {e}"));
        let addr = listener.local_addr().expect("origin addr");
        listener.set_nonblocking(true).expect("nonblocking");
        let routes: Arc<HashMap<String, Route>> =
            Arc::new(routes.into_iter().map(|(p, r)| (p.to_string(), r)).collect());
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (stop2, seen2) = (stop.clone(), seen.clone());
        thread::spawn(move || {
            while !stop2.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let (routes, seen, stop) = (routes.clone(), seen2.clone(), stop2.clone());
                        thread::spawn(move || {
                            let _ = serve(stream, &routes, &seen, &stop);
                        });
                    }
                    Err(_) => thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Origin { addr, stop, seen }
    }

    /// Every request received so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Stops accepting and closes connections as they finish.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl Drop for Origin {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Opens the gate of a `Body::Gated` route.
pub fn open_gate(gate: &Arc<(Mutex<bool>, std::sync::Condvar)>) {
    let (lock, cv) = &**gate;
    if let Ok(mut g) = lock.lock() {
        *g = true;
    }
    cv.notify_all();
}

fn write_chunk(out: &mut dyn Write, data: &[u8]) -> std::io::Result<()> {
    if data.is_empty() {
        return Ok(());
    }
    write!(out, "{:x}\r\n", data.len())?;
    out.write_all(data)?;
    out.write_all(b"\r\n")
}

fn serve(
    stream: TcpStream,
    routes: &HashMap<String, Route>,
    seen: &Mutex<Vec<Seen>>,
    stop: &AtomicBool,
) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_millis(200)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut out = stream;
    let mut served = 0usize;
    loop {
        let mut line = String::new();
        loop {
            match reader.read_line(&mut line) {
                Ok(0) => return Ok(()),
                Ok(_) => break,
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                    if stop.load(Ordering::Relaxed) {
                        return Ok(());
                    }
                }
                Err(e) => return Err(e),
            }
        }
        if stop.load(Ordering::Relaxed) {
            // A stopped origin answers nothing, even on kept-alive connections.
            return Ok(());
        }
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or("").to_string();
        let target = parts.next().unwrap_or("/").to_string();
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h)? == 0 {
                return Ok(());
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
            }
        }
        let len: usize =
            headers.iter().find(|(k, _)| k == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
        let mut body = vec![0; len];
        reader.read_exact(&mut body)?;
        if let Ok(mut s) = seen.lock() {
            s.push(Seen { method: method.clone(), target: target.clone(), headers });
        }
        let path = target.split('?').next().unwrap_or("/");
        let route = routes.get(path).cloned().unwrap_or(Route {
            status: 404,
            headers: vec![("Content-Type".into(), "text/plain".into())],
            body: Body::Fixed(b"origin: not found\n".to_vec()),
        });
        if let Body::DropOnceOnReuse { dropped, .. } = &route.body {
            if served > 0 && !dropped.swap(true, Ordering::SeqCst) {
                return Ok(());
            }
        }
        served += 1;
        if matches!(route.body, Body::Hang) {
            while !stop.load(Ordering::Relaxed) {
                thread::sleep(Duration::from_millis(20));
            }
            return Ok(());
        }
        let mut head = format!("HTTP/1.1 {} X\r\n", route.status);
        for (k, v) in &route.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        let head_only = method == "HEAD" || route.status == 304 || route.status == 204;
        let sized = match &route.body {
            Body::Fixed(b) | Body::DropOnceOnReuse { body: b, .. } => Some(b.len()),
            Body::Gated { first, rest, sized: true, .. } => Some(first.len() + rest.len()),
            Body::Generated { total, sized: true, .. } => Some(*total),
            Body::Truncated { declared, .. } => Some(*declared),
            _ => None,
        };
        // Writes one piece of a streamed body in the route's framing.
        let piece = |out: &mut dyn Write, data: &[u8]| {
            if sized.is_some() {
                out.write_all(data)
            } else {
                write_chunk(out, data)
            }
        };
        let last = |out: &mut dyn Write| if sized.is_some() { Ok(()) } else { out.write_all(b"0\r\n\r\n") };
        match &route.body {
            _ if sized.is_some() => head.push_str(&format!("Content-Length: {}\r\n\r\n", sized.unwrap_or(0))),
            _ if head_only => head.push_str("\r\n"),
            _ => head.push_str("Transfer-Encoding: chunked\r\n\r\n"),
        }
        out.write_all(head.as_bytes())?;
        if !head_only {
            match &route.body {
                Body::Fixed(b) | Body::DropOnceOnReuse { body: b, .. } => out.write_all(b)?,
                Body::Chunked(chunks) => {
                    for c in chunks {
                        write_chunk(&mut out, c)?;
                        out.flush()?;
                    }
                    out.write_all(b"0\r\n\r\n")?;
                }
                Body::Gated { first, rest, gate, .. } => {
                    piece(&mut out, first)?;
                    out.flush()?;
                    let (lock, cv) = &**gate;
                    let mut open = lock.lock().map_err(|_| std::io::Error::other("poisoned"))?;
                    while !*open {
                        open = cv.wait(open).map_err(|_| std::io::Error::other("poisoned"))?;
                    }
                    drop(open);
                    piece(&mut out, rest)?;
                    last(&mut out)?;
                }
                Body::Hang => {}
                Body::Truncated { sent, .. } => {
                    out.write_all(sent)?;
                    out.flush()?;
                    let _ = out.shutdown(std::net::Shutdown::Both);
                    return Ok(());
                }
                Body::Generated { head, filler, tail, total, .. } => {
                    piece(&mut out, head)?;
                    let mut sent = head.len() + tail.len();
                    let block: Vec<u8> = filler
                        .iter()
                        .copied()
                        .cycle()
                        .take(64 * 1024 / filler.len().max(1) * filler.len().max(1))
                        .collect();
                    while sent < *total {
                        let n = block.len().min(*total - sent);
                        piece(&mut out, &block[..n])?;
                        sent += n;
                    }
                    piece(&mut out, tail)?;
                    last(&mut out)?;
                }
            }
        }
        out.flush()?;
    }
}
