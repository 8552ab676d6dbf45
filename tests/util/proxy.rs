//! Runs the real `crawlgate run` process on 127.0.0.1 with a policy written
//! to a temporary directory, and stops it when dropped.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crawlgate_testkit::TempDir;

use crate::crawlgate_bin;

/// A free port on 127.0.0.1 for a proxy to listen on.
///
/// Asking the kernel for one (`bind :0`, then release) raced: the kernel
/// could hand the same port to another test's origin or proxy before ours
/// bound it, and the readiness check then talked to the wrong process (a
/// 404 where a 504 was expected). Ports come instead from below the
/// kernel's ephemeral range, where `bind :0` and client sockets never land,
/// each handed out once per test process, in a block chosen by process id
/// so that two test processes rarely share one; a port found busy is
/// skipped.
pub fn free_port() -> u16 {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    const BLOCK: usize = 1000;
    let ephemeral_start = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next().and_then(|p| p.parse::<usize>().ok()))
        .unwrap_or(32768);
    // Blocks of BLOCK ports from 10000 up to the ephemeral range.
    let blocks = ephemeral_start.saturating_sub(10_000) / BLOCK;
    if blocks == 0 {
        return TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("no free port");
    }
    let base = 10_000 + (std::process::id() as usize % blocks) * BLOCK;
    for _ in 0..BLOCK {
        let port = (base + NEXT.fetch_add(1, Ordering::Relaxed) % BLOCK) as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port in 127.0.0.1:{base}..{}", base + BLOCK)
}

/// Polls `f` every 20 ms until it returns `Some`, or panics with `what`
/// after `timeout`.
pub fn wait_for<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        if Instant::now() > deadline {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A running proxy process.
pub struct Proxy {
    /// The proxy listener.
    pub addr: SocketAddr,
    /// The admin listener.
    pub admin: SocketAddr,
    /// The policy file it runs (edit it to test reloads).
    pub policy_path: PathBuf,
    /// Its directory, removed when the proxy is dropped.
    pub dir: TempDir,
    child: Option<Child>,
    log_path: PathBuf,
}

/// The `[server]` and `[upstream]` sections for a test proxy; tests append
/// their own groups and controls.
pub fn base_policy(listen: SocketAddr, admin: SocketAddr, origin: SocketAddr) -> String {
    format!(
        "[server]\nlisten = [\"{listen}\"]\nadmin = \"{admin}\"\nthreads = 2\ngrace_period = \"1s\"\n\n\
         [upstream]\nservers = [\"{origin}\"]\nconnect_timeout = \"1s\"\nread_timeout = \"2s\"\nhealth_check_interval = \"0s\"\n\n"
    )
}

impl Proxy {
    /// Starts `crawlgate run` on `base_policy(..) + rules` in front of
    /// `origin` and waits until both listeners answer.
    pub fn start(origin: SocketAddr, rules: &str) -> Proxy {
        let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let admin: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let policy = base_policy(addr, admin, origin) + rules;
        Self::start_with(addr, admin, &policy)
    }

    /// Starts `crawlgate run` on a complete policy text.
    pub fn start_with(addr: SocketAddr, admin: SocketAddr, policy: &str) -> Proxy {
        let dir = TempDir::new("proxy");
        let policy_path = dir.join("crawlgate.toml");
        std::fs::write(&policy_path, policy).expect("write policy");
        let log_path = dir.join("crawlgate.log");
        let log = std::fs::File::create(&log_path).expect("log file");
        let log2 = log.try_clone().expect("log file");
        let child = Command::new(crawlgate_bin())
            .args(["run", "--config"])
            .arg(&policy_path)
            .env("RUST_LOG", "info")
            .env_remove("CRAWLGATE_CONFIG")
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log2))
            .spawn()
            .expect("spawn crawlgate");
        let mut proxy = Proxy { addr, admin, policy_path, dir, child: Some(child), log_path };
        let started = wait_for("the proxy to listen", Duration::from_secs(20), || {
            if let Some(status) = proxy.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                return Some(Err(status));
            }
            (TcpStream::connect(addr).is_ok() && TcpStream::connect(admin).is_ok()).then_some(Ok(()))
        });
        if let Err(status) = started {
            panic!("crawlgate exited with {status} before listening; log:\n{}", proxy.log());
        }
        proxy
    }

    /// `http://addr` + path.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// `http://admin` + path.
    pub fn admin_url(&self, path: &str) -> String {
        format!("http://{}{}", self.admin, path)
    }

    /// The admin listener's `/metrics` text ("" when it does not answer).
    pub fn metrics(&self) -> String {
        reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .and_then(|c| c.get(self.admin_url("/metrics")).send())
            .and_then(|r| r.text())
            .unwrap_or_default()
    }

    /// The value of one sample in `/metrics`: `series` is the metric name
    /// with its labels as the Prometheus text format writes them
    /// (`crawlgate_x_total{a="b"}`); `None` when there is no such sample.
    pub fn metric(&self, series: &str) -> Option<String> {
        self.metrics().lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ').map(|v| v.trim().to_owned()))
    }

    /// Everything the process logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// Sends a signal (`HUP`, `INT`, ...) with kill(1).
    pub fn signal(&self, sig: &str) {
        if let Some(child) = self.child.as_ref() {
            let _ = Command::new("kill").arg(format!("-{sig}")).arg(child.id().to_string()).status();
        }
    }

    /// The process id.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// A `/proc/<pid>/status` field in kB (`VmHWM`, `VmRSS`).
    pub fn memory_kb(&self, field: &str) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()?)).ok()?;
        status
            .lines()
            .find(|l| l.starts_with(field))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        self.child.as_mut().is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SIGINT: Pingora's fast shutdown.
            let _ = Command::new("kill").arg("-INT").arg(child.id().to_string()).status();
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
