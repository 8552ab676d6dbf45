//! A tiny HTTP/1.1 server on 127.0.0.1 for tests that need something to
//! fetch from: fixed routes (path -> status, content type, body) that a
//! test changes while the server runs, a request count per path, and a
//! route that closes the connection without answering. Every response
//! carries `Content-Length` and `Connection: close` (RFC 9112 section 9.6).
//!
//! ```
//! let server = crawlgate_testkit::serve::Server::start();
//! server.set("/a.json", 200, "application/json", r#"{"prefixes": []}"#);
//! let url = server.url("/a.json");
//! # drop(url);
//! server.stop();
//! ```

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

/// What a route answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// A complete response.
    Respond {
        /// Status code.
        status: u16,
        /// `Content-Type` value.
        content_type: String,
        /// The body.
        body: Vec<u8>,
    },
    /// Read the request, then close the connection without a byte.
    Close,
}

#[derive(Default)]
struct Shared {
    routes: Mutex<HashMap<String, Reply>>,
    hits: Mutex<HashMap<String, usize>>,
    stopping: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Changes the routes of a running [`Server`] and reads its counts; cheap
/// to clone and usable from any thread.
#[derive(Clone)]
pub struct Handle {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl Handle {
    /// The server's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Makes `path` (the request target, query included) answer `status`
    /// with `body`.
    pub fn set(&self, path: &str, status: u16, content_type: &str, body: impl Into<Vec<u8>>) {
        let reply = Reply::Respond { status, content_type: content_type.to_string(), body: body.into() };
        self.set_reply(path, reply);
    }

    /// Makes `path` answer `reply`.
    pub fn set_reply(&self, path: &str, reply: Reply) {
        lock(&self.shared.routes).insert(path.to_string(), reply);
    }

    /// Removes `path`; it then answers 404.
    pub fn remove(&self, path: &str) {
        lock(&self.shared.routes).remove(path);
    }

    /// How many requests for `path` were read so far.
    pub fn hits(&self, path: &str) -> usize {
        lock(&self.shared.hits).get(path).copied().unwrap_or(0)
    }
}

/// The server; stopped by [`Server::stop`] or on drop.
pub struct Server {
    handle: Handle,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Listens on 127.0.0.1 on a free port, with no routes (everything 404).
    pub fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("bind 127.0.0.1:0: {e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("local_addr: {e}"));
        let shared = Arc::new(Shared::default());
        let accept_shared = shared.clone();
        let thread = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if accept_shared.stopping.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let shared = accept_shared.clone();
                std::thread::spawn(move || serve_one(conn, &shared));
            }
        });
        Server { handle: Handle { addr, shared }, thread: Some(thread) }
    }

    /// A handle to change routes from elsewhere.
    pub fn handle(&self) -> Handle {
        self.handle.clone()
    }

    /// Stops accepting connections and waits for the accept loop to end
    /// (connections being answered finish on their own threads).
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        let Some(thread) = self.thread.take() else { return };
        self.handle.shared.stopping.store(true, Ordering::SeqCst);
        // Wakes the blocking accept; the loop then sees the flag.
        let _ = TcpStream::connect_timeout(&self.handle.addr, Duration::from_secs(5));
        let _ = thread.join();
    }
}

impl std::ops::Deref for Server {
    type Target = Handle;

    fn deref(&self) -> &Handle {
        &self.handle
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Reads one request head and answers it.
fn serve_one(mut conn: TcpStream, shared: &Shared) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
        if head.len() > 64 * 1024 {
            return;
        }
    }
    let text = String::from_utf8_lossy(&head);
    let target = text.split_whitespace().nth(1).unwrap_or("").to_string();
    *lock(&shared.hits).entry(target.clone()).or_insert(0) += 1;
    let reply = lock(&shared.routes).get(&target).cloned();
    let (status, content_type, body) = match reply {
        Some(Reply::Close) => return,
        Some(Reply::Respond { status, content_type, body }) => (status, content_type, body),
        None => (404, "text/plain".to_string(), b"not found\n".to_vec()),
    };
    let mut out = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        reason(status),
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(&body);
    let _ = conn.write_all(&out);
    let _ = conn.flush();
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(addr: SocketAddr, path: &str) -> Vec<u8> {
        crate::http::exchange(
            addr,
            format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes(),
            Duration::from_secs(10),
        )
    }

    #[test]
    fn routes_change_counts_and_stop() {
        let server = Server::start();
        let addr = server.addr();
        server.set("/a", 200, "text/plain", "one");
        assert_eq!(
            get(addr, "/a"),
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\nConnection: close\r\n\r\none"
        );
        let handle = server.handle();
        handle.set("/a", 500, "text/plain", "");
        assert_eq!(
            get(addr, "/a"),
            b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        );
        handle.set_reply("/a", Reply::Close);
        assert_eq!(get(addr, "/a"), b"");
        handle.remove("/a");
        assert!(get(addr, "/a").starts_with(b"HTTP/1.1 404 Not Found\r\n"));
        assert_eq!(server.hits("/a"), 4);
        assert_eq!(server.hits("/b"), 0);
        server.stop();
        assert!(TcpStream::connect(addr).is_err(), "still listening on {addr}");
    }
}
