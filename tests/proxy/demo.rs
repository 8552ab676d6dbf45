//! `crawlgate demo --config FILE`: the operator's policy in front of the
//! embedded sample origin, its upstream replaced (and said so).

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crawlgate_e2e::crawlgate_bin;
use crawlgate_e2e::proxy::{free_port, wait_for};
use crawlgate_testkit::TempDir;

use crate::support::{get, BROWSER_UA, GPTBOT_UA};

/// The demo process, stopped (SIGINT, then SIGKILL) when dropped.
struct Demo(Child);

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg("-INT").arg(self.0.id().to_string()).status();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn demo_runs_the_operators_policy_in_front_of_the_sample_origin() {
    let dir = TempDir::new("demo-config");
    let (listen, admin) = (free_port(), free_port());
    // An upstream nothing answers on: the demo must not use it.
    let policy = format!(
        "[server]\nlisten = [\"127.0.0.1:{listen}\"]\nadmin = \"127.0.0.1:{admin}\"\ngrace_period = \"1s\"\n\n\
         [upstream]\nservers = [\"192.0.2.1:80\"]\n\n\
         [[group]]\nuser_agents = [\"GPTBot\"]\ndisallow = [\"/\"]\nenforce = \"block\"\n"
    );
    let path = dir.join("mine.toml");
    std::fs::write(&path, policy).unwrap_or_else(|e| panic!("write policy: {e}"));
    let child = Command::new(crawlgate_bin())
        .arg("demo")
        .arg("--config")
        .arg(&path)
        .env_remove("CRAWLGATE_CONFIG")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn crawlgate demo: {e}"));
    let mut demo = Demo(child);
    let url = |p: &str| format!("http://127.0.0.1:{listen}{p}");
    wait_for("the demo to listen", Duration::from_secs(20), || {
        std::net::TcpStream::connect(("127.0.0.1", listen)).ok()
    });
    let page = get(&url("/"), BROWSER_UA);
    assert_eq!(page.status(), 200);
    assert!(page.text().unwrap_or_default().contains("<title>Sample origin</title>"));
    assert_eq!(get(&url("/"), GPTBOT_UA).status(), 403);
    let robots = get(&url("/robots.txt"), BROWSER_UA).text().unwrap_or_default();
    assert!(robots.ends_with("\n\nUser-agent: GPTBot\nDisallow: /\n"), "{robots}");
    // The banner says where requests go and that the file's upstream is replaced.
    let _ = Command::new("kill").arg("-INT").arg(demo.0.id().to_string()).status();
    let mut out = String::new();
    if let Some(mut s) = demo.0.stdout.take() {
        let _ = s.read_to_string(&mut out);
    }
    let first = out.lines().next().unwrap_or_default();
    let origin = first
        .strip_prefix(&format!("crawlgate demo: proxy http://127.0.0.1:{listen} -> sample origin http://"))
        .and_then(|r| r.strip_suffix(&format!(", admin http://127.0.0.1:{admin}")))
        .unwrap_or_else(|| panic!("unexpected banner:\n{out}"));
    assert!(origin.starts_with("127.0.0.1:"), "{out}");
    assert_eq!(
        out.lines().nth(1),
        Some(
            format!(
                "policy: {} (its upstream 192.0.2.1:80 is replaced by the sample origin; the file is not watched: \
                 restart to apply edits)",
                path.display()
            )
            .as_str()
        ),
        "{out}"
    );
    // The dashboard's URL, and an `explain` line that runs as printed
    // (the binary by its path: `cargo run` puts no crawlgate on PATH).
    assert!(out.contains(&format!("\nDashboard: http://127.0.0.1:{admin}/ (open it in a browser)\n")), "{out}");
    let explain = out
        .lines()
        .map(str::trim)
        .find(|l| l.contains(" explain --config "))
        .unwrap_or_else(|| panic!("no explain line:\n{out}"));
    let words: Vec<&str> = explain.split_whitespace().collect();
    assert_eq!(words[1..], ["explain", "--config", &path.display().to_string(), "-A", "GPTBot/1.2", "/"], "{explain}");
    let ran = Command::new(words[0]).args(&words[1..]).output().unwrap_or_else(|e| panic!("run `{explain}`: {e}"));
    let text = String::from_utf8_lossy(&ran.stdout);
    assert!(text.contains("403"), "`{explain}` printed:\n{text}{}", String::from_utf8_lossy(&ran.stderr));
}
