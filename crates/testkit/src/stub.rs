//! A small HTTP/1.1 server on 127.0.0.1 whose answers a closure computes
//! from the whole request (method, target, headers, body read by
//! `Content-Length`): the base of the test doubles of outside services.
//! Every response carries `Content-Length` and `Connection: close`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// A request as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StubRequest {
    /// The method.
    pub method: String,
    /// The request target.
    pub target: String,
    /// Header fields, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

/// What to answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StubReply {
    /// A response after `delay`.
    Respond {
        /// Status code.
        status: u16,
        /// Header fields besides `Content-Length` and `Connection`.
        headers: Vec<(String, String)>,
        /// The body.
        body: Vec<u8>,
        /// Waited before answering.
        delay: Duration,
    },
    /// Close the connection without a byte.
    Close,
}

impl StubReply {
    /// A JSON response.
    pub fn json(status: u16, body: &serde_json::Value) -> StubReply {
        StubReply::Respond {
            status,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: body.to_string().into_bytes(),
            delay: Duration::ZERO,
        }
    }
}

type Handler = dyn Fn(&StubRequest) -> StubReply + Send + Sync;

/// The server; stopped on drop.
pub struct StubServer {
    addr: SocketAddr,
    stopping: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl StubServer {
    /// Listens on a free port of 127.0.0.1 and answers with `handler`.
    pub fn start(handler: impl Fn(&StubRequest) -> StubReply + Send + Sync + 'static) -> StubServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("bind 127.0.0.1:0: {e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("local_addr: {e}"));
        let stopping = Arc::new(AtomicBool::new(false));
        let handler: Arc<Handler> = Arc::new(handler);
        let flag = stopping.clone();
        let thread = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if flag.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let handler = handler.clone();
                std::thread::spawn(move || serve_one(conn, &*handler));
            }
        });
        StubServer { addr, stopping, thread: Some(thread) }
    }

    /// The server's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for StubServer {
    fn drop(&mut self) {
        let Some(thread) = self.thread.take() else { return };
        self.stopping.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(5));
        let _ = thread.join();
    }
}

fn serve_one(mut conn: TcpStream, handler: &Handler) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        match conn.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
        if buf.len() > 64 * 1024 {
            return;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or("").split_whitespace();
    let method = first.next().unwrap_or("").to_string();
    let target = first.next().unwrap_or("").to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length = headers.iter().find(|(n, _)| n == "content-length").and_then(|(_, v)| v.parse::<usize>().ok());
    let mut body = buf[head_end..].to_vec();
    let want = length.unwrap_or(0).min(1 << 20);
    while body.len() < want {
        match conn.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => body.extend_from_slice(&chunk[..n]),
        }
    }
    body.truncate(want);
    let request = StubRequest { method, target, headers, body };
    match handler(&request) {
        StubReply::Close => {}
        StubReply::Respond { status, headers, body, delay } => {
            std::thread::sleep(delay);
            let mut out = format!("HTTP/1.1 {status} Stub\r\n");
            for (n, v) in headers {
                out.push_str(&format!("{n}: {v}\r\n"));
            }
            out.push_str(&format!("Content-Length: {}\r\nConnection: close\r\n\r\n", body.len()));
            let mut out = out.into_bytes();
            out.extend_from_slice(&body);
            let _ = conn.write_all(&out);
            let _ = conn.flush();
        }
    }
}
