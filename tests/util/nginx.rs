//! A real nginx for the end-to-end suite (Debian's nginx-light, which
//! `scripts/prereqs` installs): `daemon off; master_process off;`, on a
//! free 127.0.0.1 port, everything it writes in its own temporary
//! directory; killed when dropped.

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crawlgate_testkit::temp::TempDir;

use crate::proxy::{free_port, wait_for};

/// The nginx binary, or a failure that says how to get it.
pub fn nginx_bin() -> PathBuf {
    let found = ["/usr/sbin/nginx", "/usr/bin/nginx"].into_iter().map(PathBuf::from).find(|p| p.is_file());
    found.unwrap_or_else(|| panic!("nginx is not installed: run scripts/prereqs (it installs Debian's nginx-light)"))
}

/// A running nginx.
pub struct Nginx {
    /// Where it listens.
    pub addr: SocketAddr,
    child: Option<Child>,
    dir: TempDir,
}

impl Nginx {
    /// Starts nginx with the lines `http(addr, dir)` returns inside its
    /// `http` block (the `server` blocks: `addr` is the port to listen on,
    /// `dir` its temporary directory).
    pub fn start(http: impl FnOnce(SocketAddr, &Path) -> String) -> Nginx {
        let bin = nginx_bin();
        let dir = TempDir::new("nginx");
        let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap_or_else(|e| panic!("{e}"));
        let d = dir.path().display();
        // Builds without a module reject its temp path directive.
        let configure = Command::new(&bin).arg("-V").output().map(|o| o.stderr).unwrap_or_default();
        let configure = String::from_utf8_lossy(&configure);
        let temp: String = ["fastcgi", "uwsgi", "scgi"]
            .into_iter()
            .filter(|m| !configure.contains(&format!("--without-http_{m}_module")))
            .map(|m| format!("    {m}_temp_path {d}/{m};\n"))
            .collect();
        let conf = format!(
            "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log info;\n\
             events {{ worker_connections 64; }}\n\
             http {{\n    access_log off;\n    client_body_temp_path {d}/body;\n    proxy_temp_path {d}/proxy;\n{temp}{}}}\n",
            http(addr, dir.path())
        );
        let conf_path = dir.write("nginx.conf", conf);
        let child = Command::new(&bin)
            .arg("-p")
            .arg(dir.path())
            .arg("-e")
            .arg(dir.join("error.log"))
            .arg("-c")
            .arg(&conf_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", bin.display()));
        let mut nginx = Nginx { addr, child: Some(child), dir };
        let started = wait_for("nginx to listen", Duration::from_secs(10), || {
            if let Some(status) = nginx.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                return Some(Err(status));
            }
            TcpStream::connect(addr).is_ok().then_some(Ok(()))
        });
        if let Err(status) = started {
            panic!("nginx exited with {status}; error log:\n{}", nginx.error_log());
        }
        nginx
    }

    /// Its temporary directory (nginx.conf, error.log, and whatever a
    /// test serves from it).
    pub fn dir(&self) -> &TempDir {
        &self.dir
    }

    /// What it logged.
    pub fn error_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
