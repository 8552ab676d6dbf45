//! A real `redis-server` (Debian package `redis-server`) on a free
//! 127.0.0.1 port for the shared-store tests: its own configuration file and
//! directory in a temporary directory, no persistence, an optional
//! `requirepass`, stopped on drop. [`RedisServer::stop`] and
//! [`RedisServer::start_again`] take it down and bring it back on the same
//! port; [`RedisServer::pause`] freezes it (SIGSTOP) for time-budget tests.
//!
//! [`RedisServer::command`] speaks RESP2 (the Redis serialization protocol,
//! <https://redis.io/docs/latest/develop/reference/protocol-spec/>) over a
//! plain TCP connection, so tests can read what the code under test stored
//! without a Redis client crate.
//!
//! ```no_run
//! let redis = crawlgate_testkit::redis::RedisServer::start();
//! assert_eq!(redis.command(&["PING"]), crawlgate_testkit::redis::Resp::Simple("PONG".into()));
//! let url = redis.url();
//! # drop(url);
//! ```

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::TempDir;

/// One RESP2 reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resp {
    /// `+OK`
    Simple(String),
    /// `-ERR ...`
    Error(String),
    /// `:1`
    Int(i64),
    /// `$3\r\nabc`, or `None` for the null bulk string `$-1`.
    Bulk(Option<Vec<u8>>),
    /// `*2 ...`, or `None` for the null array `*-1`.
    Array(Option<Vec<Resp>>),
}

impl Resp {
    /// The integer of an `Int` reply, or the number in a bulk string.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Resp::Int(n) => Some(*n),
            Resp::Bulk(Some(b)) => std::str::from_utf8(b).ok()?.parse().ok(),
            _ => None,
        }
    }

    /// The text of a bulk or simple string reply.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Resp::Simple(s) => Some(s),
            Resp::Bulk(Some(b)) => std::str::from_utf8(b).ok(),
            _ => None,
        }
    }
}

/// A running (or stopped) `redis-server` owned by one test.
#[derive(Debug)]
pub struct RedisServer {
    port: u16,
    password: Option<String>,
    dir: TempDir,
    child: Option<Child>,
}

impl RedisServer {
    /// Starts a server without a password.
    pub fn start() -> RedisServer {
        RedisServer::launch(None)
    }

    /// Starts a server that requires `password` (`requirepass`).
    pub fn start_with_password(password: &str) -> RedisServer {
        RedisServer::launch(Some(password.to_string()))
    }

    fn launch(password: Option<String>) -> RedisServer {
        let mut server = RedisServer { port: 0, password, dir: TempDir::new("redis"), child: None };
        // A free port can be taken between probing and binding; try again
        // on another one.
        for _ in 0..5 {
            server.port = free_port();
            if server.spawn() {
                return server;
            }
        }
        panic!("redis-server did not start (is the Debian package redis-server installed? scripts/prereqs test)");
    }

    /// Writes the configuration, starts the process and waits until it
    /// answers PING; false when it exited first (the port was taken).
    fn spawn(&mut self) -> bool {
        let mut conf = format!(
            "port {port}\nbind 127.0.0.1\nsave \"\"\nappendonly no\ndir {dir}\n\
             logfile {dir}/redis.log\ndaemonize no\nenable-debug-command local\n",
            port = self.port,
            dir = self.dir.path().display(),
        );
        if let Some(p) = &self.password {
            conf.push_str(&format!("requirepass {p}\n"));
        }
        let conf_path = self.dir.write("redis.conf", conf);
        let binary = if std::path::Path::new("/usr/bin/redis-server").exists() {
            "/usr/bin/redis-server"
        } else {
            "redis-server"
        };
        let child = Command::new(binary)
            .arg(&conf_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run redis-server: {e} (scripts/prereqs test installs it)"));
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(_)) = child.try_wait() {
                    self.child = None;
                    return false;
                }
            }
            if let Ok(Resp::Simple(pong)) = self.try_command(&["PING"]) {
                if pong == "PONG" {
                    return true;
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let log = std::fs::read_to_string(self.dir.join("redis.log")).unwrap_or_default();
        panic!("redis-server on port {} did not answer within 10 s; its log:\n{log}", self.port);
    }

    /// The port it listens on (the same across stop and start).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://127.0.0.1:<port>/`, with the password when it has one.
    pub fn url(&self) -> String {
        match &self.password {
            Some(p) => self.url_with_password(p),
            None => format!("redis://127.0.0.1:{}/", self.port),
        }
    }

    /// The URL with another password, for wrong-password tests.
    pub fn url_with_password(&self, password: &str) -> String {
        format!("redis://:{password}@127.0.0.1:{}/", self.port)
    }

    /// Sends one command (authenticating first when the server has a
    /// password) and returns the reply; panics when the server cannot be
    /// reached.
    pub fn command(&self, args: &[&str]) -> Resp {
        self.try_command(args).unwrap_or_else(|e| panic!("redis command {args:?} on port {}: {e}", self.port))
    }

    fn try_command(&self, args: &[&str]) -> std::io::Result<Resp> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port))?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        let mut reader = BufReader::new(stream.try_clone()?);
        if let Some(p) = &self.password {
            stream.write_all(&encode(&["AUTH", p]))?;
            let reply = read_reply(&mut reader)?;
            if reply != Resp::Simple("OK".into()) {
                return Err(std::io::Error::other(format!("AUTH answered {reply:?}")));
            }
        }
        stream.write_all(&encode(args))?;
        read_reply(&mut reader)
    }

    /// Kills the server (SIGKILL; nothing is persisted) and waits for it.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port after [`RedisServer::stop`]; the
    /// data is gone (no persistence).
    pub fn start_again(&mut self) {
        assert!(self.child.is_none(), "start_again on a running redis-server");
        // The port was ours a moment ago; a process grabbing it in between
        // fails the test, which is the honest outcome.
        assert!(self.spawn(), "redis-server could not bind port {} again", self.port);
    }

    /// Freezes the process (SIGSTOP): connections stay open, nothing answers.
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Thaws it after [`RedisServer::pause`] (SIGCONT).
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, sig: &str) {
        let child = self.child.as_ref().unwrap_or_else(|| panic!("redis-server is stopped"));
        let status = Command::new("kill")
            .arg(sig)
            .arg(child.id().to_string())
            .status()
            .unwrap_or_else(|e| panic!("kill {sig}: {e}"));
        assert!(status.success(), "kill {sig} failed");
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_ref() {
            // A paused server ignores SIGTERM but not SIGKILL; thaw it anyway
            // so nothing is left stopped if the kill races.
            let _ = Command::new("kill").arg("-CONT").arg(child.id().to_string()).status();
        }
        self.stop();
    }
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("cannot bind 127.0.0.1:0: {e}"));
    listener.local_addr().unwrap_or_else(|e| panic!("local_addr: {e}")).port()
}

/// A command as a RESP array of bulk strings.
pub fn encode(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Reads one RESP2 reply.
pub fn read_reply(r: &mut impl BufRead) -> std::io::Result<Resp> {
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "connection closed"));
    }
    let line = line.trim_end_matches("\r\n");
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, format!("bad RESP line {line:?}"));
    let (kind, rest) = line.split_at_checked(1).ok_or_else(bad)?;
    Ok(match kind {
        "+" => Resp::Simple(rest.to_string()),
        "-" => Resp::Error(rest.to_string()),
        ":" => Resp::Int(rest.parse().map_err(|_| bad())?),
        "$" => {
            let n: i64 = rest.parse().map_err(|_| bad())?;
            if n < 0 {
                Resp::Bulk(None)
            } else {
                let mut buf = vec![0; n as usize + 2];
                r.read_exact(&mut buf)?;
                buf.truncate(n as usize);
                Resp::Bulk(Some(buf))
            }
        }
        "*" => {
            let n: i64 = rest.parse().map_err(|_| bad())?;
            if n < 0 {
                Resp::Array(None)
            } else {
                let mut items = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    items.push(read_reply(r)?);
                }
                Resp::Array(Some(items))
            }
        }
        _ => return Err(bad()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resp_round_trip() {
        assert_eq!(encode(&["GET", "k"]), b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n");
        let mut input: &[u8] = b"*3\r\n:5\r\n$-1\r\n$2\r\nab\r\n";
        assert_eq!(
            read_reply(&mut input).unwrap(),
            Resp::Array(Some(vec![Resp::Int(5), Resp::Bulk(None), Resp::Bulk(Some(b"ab".to_vec()))]))
        );
        let mut input: &[u8] = b"-NOAUTH Authentication required.\r\n";
        assert_eq!(read_reply(&mut input).unwrap(), Resp::Error("NOAUTH Authentication required.".into()));
    }

    #[test]
    fn starts_stops_and_starts_again_on_the_same_port() {
        let mut redis = RedisServer::start();
        assert_eq!(redis.command(&["SET", "k", "v"]), Resp::Simple("OK".into()));
        assert_eq!(
            redis.command(&["CONFIG", "GET", "save"]).clone(),
            Resp::Array(Some(vec![Resp::Bulk(Some(b"save".to_vec())), Resp::Bulk(Some(Vec::new())),]))
        );
        let port = redis.port();
        redis.stop();
        assert!(redis.try_command(&["PING"]).is_err());
        redis.start_again();
        assert_eq!(redis.port(), port);
        // No persistence: the key is gone.
        assert_eq!(redis.command(&["GET", "k"]), Resp::Bulk(None));
    }

    #[test]
    fn password_is_required() {
        let redis = RedisServer::start_with_password("s3cret");
        assert_eq!(redis.command(&["PING"]), Resp::Simple("PONG".into()));
        let mut stream = TcpStream::connect(("127.0.0.1", redis.port())).unwrap();
        stream.write_all(&encode(&["PING"])).unwrap();
        let reply = read_reply(&mut BufReader::new(stream)).unwrap();
        assert!(matches!(&reply, Resp::Error(e) if e.starts_with("NOAUTH")), "{reply:?}");
        assert_eq!(redis.url(), format!("redis://:s3cret@127.0.0.1:{}/", redis.port()));
    }
}
