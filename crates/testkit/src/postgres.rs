//! A real PostgreSQL server (Debian package `postgresql`) on a free
//! 127.0.0.1 port for the ledger tests: `initdb` into a temporary
//! directory, a superuser `crawlgate` with a password, stopped on drop.
//! [`PgServer::kill`] takes it down with SIGKILL (the postmaster and every
//! backend, as a crash would) and [`PgServer::start_again`] brings it back
//! on the same port and data, through PostgreSQL's crash recovery;
//! [`PgServer::pause`] freezes it (SIGSTOP) for time-bound tests.
//!
//! The binaries are found in `/usr/lib/postgresql/<version>/bin` (the
//! newest version there), else on `PATH`. PostgreSQL refuses to run as
//! root: a test running as root runs them as the `postgres` user (made by
//! the Debian package), else `nobody`.
//!
//! The data directory runs with `fsync = off`: a SIGKILL of the server
//! loses nothing the kernel has, which is what the tests kill; only a
//! power loss would, and no test makes one.
//!
//! [`PgServer::query`] runs SQL through `psql` and returns its unaligned
//! output, so tests can count rows without a client crate.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::TempDir;

/// The password of the `crawlgate` superuser.
pub const PASSWORD: &str = "ledger-test-password";

/// A running (or killed) `postgres` owned by one test.
#[derive(Debug)]
pub struct PgServer {
    port: u16,
    bin: PathBuf,
    dir: TempDir,
    /// The user the server runs as, when the test runs as root.
    user: Option<(u32, u32)>,
    child: Option<Child>,
}

impl PgServer {
    /// Initialises a cluster and starts the server.
    pub fn start() -> PgServer {
        let bin = bin_dir();
        let dir = TempDir::new("postgres");
        let user = if is_root() { Some(unprivileged()) } else { None };
        let data = dir.join("data");
        std::fs::create_dir(&data).unwrap_or_else(|e| panic!("cannot create {}: {e}", data.display()));
        let pwfile = dir.write("pwfile", PASSWORD);
        if let Some((uid, gid)) = user {
            for p in [dir.path().to_path_buf(), data.clone(), pwfile.clone()] {
                std::os::unix::fs::chown(&p, Some(uid), Some(gid))
                    .unwrap_or_else(|e| panic!("chown {}: {e}", p.display()));
            }
        }
        let mut initdb = Command::new(bin.join("initdb"));
        initdb
            .arg("-D")
            .arg(&data)
            .args(["-U", "crawlgate", "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--no-sync"])
            .arg(format!("--pwfile={}", pwfile.display()))
            .stdin(Stdio::null());
        if let Some((uid, gid)) = user {
            initdb.uid(uid).gid(gid);
        }
        let out = initdb.output().unwrap_or_else(|e| {
            panic!("cannot run initdb: {e} (scripts/prereqs test installs the Debian package postgresql)")
        });
        assert!(
            out.status.success(),
            "initdb failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let mut server = PgServer { port: 0, bin, dir, user, child: None };
        // A free port can be taken between probing and binding; try again
        // on another one.
        for _ in 0..5 {
            server.port = free_port();
            if server.spawn() {
                return server;
            }
        }
        panic!("postgres did not start; its log:\n{}", server.log());
    }

    /// Starts the process on `self.port` and waits until it accepts
    /// connections; false when it exited first (the port was taken).
    fn spawn(&mut self) -> bool {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("postgres.log"))
            .unwrap_or_else(|e| panic!("postgres.log: {e}"));
        let err = log.try_clone().unwrap_or_else(|e| panic!("postgres.log: {e}"));
        let mut cmd = Command::new(self.bin.join("postgres"));
        cmd.arg("-D")
            .arg(self.dir.join("data"))
            .args(["-p", &self.port.to_string(), "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"])
            .args(["-c", "full_page_writes=off", "-c", "max_connections=50"])
            .arg("-k")
            .arg(self.dir.path())
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err);
        if let Some((uid, gid)) = self.user {
            cmd.uid(uid).gid(gid);
        }
        let child = cmd.spawn().unwrap_or_else(|e| panic!("cannot run postgres: {e}"));
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(_)) = child.try_wait() {
                    self.child = None;
                    return false;
                }
            }
            let ready = Command::new(self.bin.join("pg_isready"))
                .args(["-q", "-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", "crawlgate"])
                .status()
                .is_ok_and(|s| s.success());
            if ready {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("postgres on port {} was not ready within 30 s; its log:\n{}", self.port, self.log());
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("postgres.log")).unwrap_or_default()
    }

    /// The port it listens on (the same across kill and start).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `postgres://crawlgate:<password>@127.0.0.1:<port>/postgres`.
    pub fn url(&self) -> String {
        format!("postgres://crawlgate:{PASSWORD}@127.0.0.1:{}/postgres", self.port)
    }

    /// The URL without the password (it then comes from a file or
    /// `PGPASSWORD`).
    pub fn url_without_password(&self) -> String {
        format!("postgres://crawlgate@127.0.0.1:{}/postgres", self.port)
    }

    /// Runs `sql` with `psql` and returns its output (unaligned, tuples
    /// only: `1|a` lines). Panics when psql fails.
    pub fn query(&self, sql: &str) -> String {
        let out = Command::new(self.bin.join("psql"))
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(["-U", "crawlgate", "-d", "postgres", "-c", sql])
            .env("PGPASSWORD", PASSWORD)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("cannot run psql: {e}"));
        assert!(out.status.success(), "psql {sql}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim_end().to_string()
    }

    /// SIGKILL to the postmaster and every backend, as a crash; waits
    /// until they are gone.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let all = server_pids(child.id());
            signal(&all, "-KILL");
            let _ = child.wait();
            // Wait until no backend is left, or the next postmaster finds
            // their shared memory in use.
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline && all.iter().any(|p| std::path::Path::new(&format!("/proc/{p}")).exists())
            {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    /// Starts it again on the same port and data after [`PgServer::kill`].
    pub fn start_again(&mut self) {
        assert!(self.child.is_none(), "the server is running");
        assert!(self.spawn(), "postgres did not start again on port {}; its log:\n{}", self.port, self.log());
    }

    /// Freezes the server (SIGSTOP to every process): connections stay
    /// open and nothing answers.
    pub fn pause(&self) {
        if let Some(child) = &self.child {
            signal(&server_pids(child.id()), "-STOP");
        }
    }

    /// Undoes [`PgServer::pause`].
    pub fn resume(&self) {
        if let Some(child) = &self.child {
            signal(&server_pids(child.id()), "-CONT");
        }
    }
}

/// The postmaster `pid` and its children (each backend makes itself a
/// session leader, so a process group does not reach them), from /proc.
fn server_pids(pid: u32) -> Vec<u32> {
    let mut out = vec![pid];
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(child) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        // `pid (comm) state ppid ...`; comm may hold spaces, so after the last ')'.
        let ppid = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
        if ppid == Some(pid) {
            out.push(child);
        }
    }
    out
}

fn signal(pids: &[u32], sig: &str) {
    let mut cmd = Command::new("kill");
    cmd.arg(sig).arg("--");
    for p in pids {
        cmd.arg(p.to_string());
    }
    let _ = cmd.stderr(Stdio::null()).status();
}

impl Drop for PgServer {
    fn drop(&mut self) {
        self.resume();
        self.kill();
    }
}

/// The directory of `initdb` and `postgres`: the newest
/// `/usr/lib/postgresql/<version>/bin`, else the one on `PATH`.
fn bin_dir() -> PathBuf {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("postgres").exists().then_some((v, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return bin;
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .find(|d| d.join("initdb").exists() && d.join("postgres").exists())
        .unwrap_or_else(|| {
            panic!("PostgreSQL's initdb and postgres are not installed (scripts/prereqs test installs the Debian package postgresql)")
        })
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.trim_ascii() == b"0")
}

/// The uid and gid of `postgres`, else `nobody`, from /etc/passwd.
fn unprivileged() -> (u32, u32) {
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    for name in ["postgres", "nobody"] {
        for line in passwd.lines() {
            let f: Vec<&str> = line.split(':').collect();
            if f.len() > 3 && f[0] == name {
                if let (Ok(uid), Ok(gid)) = (f[2].parse(), f[3].parse()) {
                    return (uid, gid);
                }
            }
        }
    }
    panic!("running as root, and neither a postgres nor a nobody user to run PostgreSQL as")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("no free port: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_is_killed_and_starts_again_with_its_data() {
        let mut pg = PgServer::start();
        pg.query("CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (1), (2);");
        assert_eq!(pg.query("SELECT sum(n) FROM t"), "3");
        let port = pg.port();
        pg.kill();
        assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
        pg.start_again();
        assert_eq!(pg.port(), port);
        assert_eq!(pg.query("SELECT sum(n) FROM t"), "3");
    }
}
