//! What an operator reads: one access log line per request (logfmt and
//! JSON), the reload outcome lines, a port in use, readiness, and a
//! SIGTERM that does not wait for nothing.

use std::net::{SocketAddr, TcpListener};
use std::process::{Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crawlgate_e2e::origin::{open_gate, Body, Origin, Route};
use crawlgate_e2e::proxy::{base_policy, free_port, wait_for, Proxy};
use crawlgate_testkit::TempDir;

use crate::support::{client, get, BROWSER_UA, POLICY};

// An upper bound for polls only (they return as soon as the line shows): long
// enough for a start on a loaded 2-core machine.
const DEADLINE: Duration = Duration::from_secs(60);

fn addr() -> SocketAddr {
    format!("127.0.0.1:{}", free_port()).parse().unwrap()
}

/// The access log lines (logfmt) in `log`.
fn access_lines(log: &str) -> Vec<String> {
    log.lines().filter(|l| l.starts_with("time=")).map(str::to_owned).collect()
}

/// `line` with the values that change from run to run replaced: time,
/// request_id, duration_ms, and the origin's port.
fn normalized(line: &str, origin: SocketAddr) -> String {
    line.split(' ')
        .map(|field| match field.split_once('=') {
            Some(("time", _)) => "time=T".to_string(),
            Some(("request_id", _)) => "request_id=ID".to_string(),
            Some(("duration_ms", v)) => {
                let three = v.split_once('.').is_some_and(|(_, d)| d.len() == 3);
                format!("duration_ms={}", if three { "D" } else { v })
            }
            _ => field.replace(&origin.to_string(), "ORIGIN"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Waits for the `n`th access line and returns it normalized.
fn nth_line(proxy: &Proxy, n: usize, origin: SocketAddr) -> String {
    let line = wait_for(&format!("access line {n} in\n{}", proxy.log()), DEADLINE, || {
        access_lines(&proxy.log()).get(n).cloned()
    });
    normalized(&line, origin)
}

#[test]
fn one_access_line_per_request_for_each_decision() {
    let origin = Origin::start(vec![
        ("/", Route::ok("text/plain", "ok\n")),
        ("/private/x", Route::ok("text/plain", "private x\n")),
    ]);
    let proxy = Proxy::start(origin.addr, POLICY);
    let o = origin.addr;
    let host = proxy.addr.to_string();

    assert_eq!(get(&proxy.url("/"), BROWSER_UA).status(), 200);
    assert_eq!(
        nth_line(&proxy, 0, o),
        format!(
            "time=T request_id=ID client_ip=127.0.0.1 method=GET host={host} path=/ protocol=HTTP/1.1 status=200 \
             bytes_sent=3 user_agent=\"{BROWSER_UA}\" group=* decision=allow upstream=ORIGIN upstream_status=200 \
             duration_ms=D"
        )
    );

    // A client naming no policy token is never a violation: the `*`
    // group's deciding rule is shown, the decision is allow.
    assert_eq!(get(&proxy.url("/private/x"), "SomeCrawler/1.0").status(), 200);
    assert_eq!(
        nth_line(&proxy, 1, o),
        format!(
            "time=T request_id=ID client_ip=127.0.0.1 method=GET host={host} path=/private/x protocol=HTTP/1.1 \
             status=200 bytes_sent=10 user_agent=SomeCrawler/1.0 group=* decision=allow rule=/private/ line=20 \
             upstream=ORIGIN upstream_status=200 duration_ms=D"
        )
    );

    let blocked = get(&proxy.url("/x"), "GPTBot/1.2");
    assert_eq!(blocked.status(), 403);
    let blocked_len = blocked.bytes().map(|b| b.len()).unwrap_or(0);
    assert_eq!(
        nth_line(&proxy, 2, o),
        format!(
            "time=T request_id=ID client_ip=127.0.0.1 method=GET host={host} path=/x protocol=HTTP/1.1 status=403 \
             bytes_sent={blocked_len} user_agent=GPTBot/1.2 agent=GPTBot group=GPTBot decision=block reason=robots \
             violation=true rule=/ line=26 duration_ms=D"
        )
    );

    let robots = get(&proxy.url("/robots.txt"), "GPTBot/1.2");
    let robots_len = robots.bytes().map(|b| b.len()).unwrap_or(0);
    assert_eq!(
        nth_line(&proxy, 3, o),
        format!(
            "time=T request_id=ID client_ip=127.0.0.1 method=GET host={host} path=/robots.txt protocol=HTTP/1.1 \
             status=200 bytes_sent={robots_len} user_agent=GPTBot/1.2 agent=GPTBot group=GPTBot decision=local \
             local=robots.txt duration_ms=D"
        )
    );

    let raw = crawlgate_testkit::http::exchange(
        proxy.addr,
        b"GET /two-agents HTTP/1.1\r\nHost: a\r\nUser-Agent: a\r\nUser-Agent: b\r\nConnection: close\r\n\r\n",
        DEADLINE,
    );
    let raw = String::from_utf8_lossy(&raw).into_owned();
    assert!(raw.starts_with("HTTP/1.1 400"), "{raw}");
    let body_len = raw.split_once("\r\n\r\n").map_or(0, |(_, b)| b.len());
    assert_eq!(
        nth_line(&proxy, 4, o),
        format!(
            "time=T request_id=ID client_ip=127.0.0.1 method=GET host=a path=/two-agents protocol=HTTP/1.1 \
             status=400 bytes_sent={body_len} decision=reject reason=bad-request local=bad-request duration_ms=D"
        )
    );

    // One line per request, and the violation is not a second line.
    std::thread::sleep(Duration::from_millis(200));
    let log = proxy.log();
    assert_eq!(access_lines(&log).len(), 5, "{log}");
    assert!(!log.contains("Request for a path robots.txt disallows"), "{log}");
    assert!(!log.contains("?"), "Debug output in the log:\n{log}");
}

#[test]
fn an_origin_failure_is_one_line() {
    let dead: SocketAddr = addr();
    let proxy = Proxy::start(dead, "");
    assert_eq!(get(&proxy.url("/"), BROWSER_UA).status(), 502);
    let line = nth_line(&proxy, 0, dead);
    assert!(
        line.starts_with(&format!(
            "time=T request_id=ID client_ip=127.0.0.1 method=GET host={} path=/ protocol=HTTP/1.1 status=502 \
             bytes_sent=56 user_agent=\"{BROWSER_UA}\" decision=allow upstream=ORIGIN duration_ms=D error=\"",
            proxy.addr
        )),
        "{line}"
    );
    std::thread::sleep(Duration::from_millis(200));
    let log = proxy.log();
    let about_it: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("Fail to proxy") || l.contains("Request to the origin") || l.starts_with("time="))
        .collect();
    assert_eq!(about_it.len(), 1, "{log}");
}

#[test]
fn json_access_log() {
    let origin = Origin::start(vec![("/", Route::ok("text/plain", "ok\n"))]);
    let proxy = Proxy::start(origin.addr, "");
    std::fs::write(
        &proxy.policy_path,
        std::fs::read_to_string(&proxy.policy_path)
            .unwrap()
            .replace("[server]\n", "[server]\naccess_log_format = \"json\"\n"),
    )
    .unwrap();
    wait_for("the reload", DEADLINE, || proxy.log().contains("Policy reloaded").then_some(()));
    let resp = client().get(proxy.url("/?b=\"c\"")).header("User-Agent", "Bot \"quoted\"\\1").send().unwrap();
    assert_eq!(resp.status(), 200);
    let line = wait_for("a JSON access line", DEADLINE, || {
        proxy.log().lines().find(|l| l.starts_with("{\"time\":")).map(str::to_owned)
    });
    let keys: Vec<String> = line
        .trim_start_matches('{')
        .split(",\"")
        .map(|kv| kv.trim_start_matches('"').split('"').next().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        keys,
        [
            "time",
            "request_id",
            "client_ip",
            "method",
            "host",
            "path",
            "protocol",
            "status",
            "bytes_sent",
            "user_agent",
            "decision",
            "upstream",
            "upstream_status",
            "duration_ms"
        ]
    );
    let v: serde_json::Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
    assert_eq!(v["user_agent"], "Bot \"quoted\"\\1");
    assert_eq!(v["path"], "/?b=%22c%22");
    assert_eq!(v["status"], 200);
    assert!(v["duration_ms"].is_f64());
}

#[test]
fn every_reload_attempt_logs_one_outcome_line() {
    let origin = Origin::start(vec![("/", Route::ok("text/plain", "ok\n"))]);
    let proxy = Proxy::start(origin.addr, "");
    let outcome_lines =
        |log: &str| -> Vec<String> { log.lines().filter(|l| l.contains(" outcome=")).map(str::to_owned).collect() };
    proxy.signal("HUP");
    let lines = wait_for("the unchanged line", DEADLINE, || Some(outcome_lines(&proxy.log())).filter(|l| l.len() == 1));
    assert!(
        lines[0].contains(
            "Policy file matches the running policy; nothing to reload trigger=\"sighup\" outcome=\"unchanged\" generation=1 sha256=\""
        ),
        "{}",
        lines[0]
    );

    let base = std::fs::read_to_string(&proxy.policy_path).unwrap();
    std::fs::write(
        &proxy.policy_path,
        format!("{base}[[group]]\nuser_agents = [\"ExampleBot\"]\ndisallow = [\"/a/\"]\n"),
    )
    .unwrap();
    let lines = wait_for("the applied line", DEADLINE, || Some(outcome_lines(&proxy.log())).filter(|l| l.len() == 2));
    let sha = status(&proxy)["content_sha256"].as_str().unwrap_or_default()[..12].to_string();
    assert!(
        lines[1].contains(&format!(
            "Policy reloaded trigger=\"file\" outcome=\"success\" generation=2 sha256=\"{sha}\" elapsed_ms="
        )),
        "{}",
        lines[1]
    );

    std::fs::write(
        &proxy.policy_path,
        format!("{base}[[group]]\nuser_agents = [\"Bad Bot\"]\ndisallow = [\"nope\"]\n"),
    )
    .unwrap();
    let lines = wait_for("the failed line", DEADLINE, || Some(outcome_lines(&proxy.log())).filter(|l| l.len() == 3));
    assert!(
        lines[2].contains(
            "Policy reload failed; the running policy stays in force trigger=\"file\" outcome=\"failure\" errors=2 generation=2"
        ),
        "{}\n{}",
        lines[2],
        proxy.log()
    );
}

/// Runs `crawlgate run` on `policy` and waits (at most 20 s) for it to exit.
fn run_to_exit(policy: &str) -> (Option<i32>, String) {
    let dir = TempDir::new("oplog");
    let path = dir.join("crawlgate.toml");
    std::fs::write(&path, policy).unwrap();
    let mut child = Command::new(crawlgate_e2e::crawlgate_bin())
        .args(["run", "--config"])
        .arg(&path)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            return (status.code(), err);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return (None, "still running after 20 s".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_busy_port_ends_run_with_an_error() {
    let held = TcpListener::bind("127.0.0.1:0").unwrap();
    let busy = held.local_addr().unwrap();
    let (code, err) = run_to_exit(&base_policy(busy, addr(), addr()));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(&format!("cannot listen on {busy} (server.listen): Address already in use (os error 98)")),
        "{err}"
    );
    let (code, err) = run_to_exit(&base_policy(addr(), busy, addr()));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(&format!("cannot listen on {busy} (server.admin): Address already in use")), "{err}");
    drop(held);
}

fn status(proxy: &Proxy) -> serde_json::Value {
    let text = client().get(proxy.admin_url("/status")).send().and_then(|r| r.text()).unwrap_or_default();
    serde_json::from_str(&text).unwrap_or(serde_json::Value::Null)
}

fn readyz(proxy: &Proxy) -> (u16, String) {
    client()
        .get(proxy.admin_url("/readyz"))
        .send()
        .map(|r| (r.status().as_u16(), r.text().unwrap_or_default()))
        .unwrap_or((0, String::new()))
}

#[test]
fn readiness_follows_the_origin_only_when_asked() {
    let origin = Origin::start(vec![("/", Route::ok("text/plain", "ok\n"))]);
    let (listen, admin) = (addr(), addr());
    let policy = base_policy(listen, admin, origin.addr)
        .replace("health_check_interval = \"0s\"", "health_check_interval = \"100ms\"");
    let proxy = Proxy::start_with(listen, admin, &policy);
    wait_for("ready", DEADLINE, || (readyz(&proxy).0 == 200).then_some(()));
    let origin_addr = origin.addr;
    origin.stop();
    drop(origin);
    wait_for("the origin reported down", DEADLINE, || {
        let s = status(&proxy);
        (s["upstreams"][0]["healthy"] == false).then_some(())
    });
    // Health changes name the server by its address, never a Debug dump.
    let down = format!("Upstream server {origin_addr} becomes unhealthy");
    wait_for(&down, DEADLINE, || proxy.log().contains(&down).then_some(()));
    assert!(!proxy.log().contains("Backend {"), "{}", proxy.log());
    // Default: a dead origin does not take the replica out; robots.txt is served.
    assert_eq!(readyz(&proxy), (200, "ready\n".to_string()));
    assert_eq!(get(&proxy.url("/robots.txt"), BROWSER_UA).status(), 200);
    std::fs::write(&proxy.policy_path, policy.replace("[server]\n", "[server]\nready_requires_upstream = true\n"))
        .unwrap();
    let not_ready = wait_for("not ready", DEADLINE, || Some(readyz(&proxy)).filter(|r| r.0 == 503));
    assert_eq!(not_ready.1, "not ready: no healthy upstream (server.ready_requires_upstream)\n");
}

#[test]
fn sigterm_exits_when_idle_and_lets_a_request_in_flight_finish() {
    let gate = Arc::new((Mutex::new(false), Condvar::new()));
    let origin = Origin::start(vec![
        ("/", Route::ok("text/plain", "ok\n")),
        (
            "/slow",
            Route::ok("text/plain", "").body(Body::Gated {
                first: b"first ".to_vec(),
                rest: b"rest\n".to_vec(),
                gate: gate.clone(),
                sized: true,
            }),
        ),
    ]);
    let grace = |listen, admin| {
        base_policy(listen, admin, origin.addr).replace("grace_period = \"1s\"", "grace_period = \"10s\"")
    };

    // Idle: exits well inside the 10 s grace period.
    let (listen, admin) = (addr(), addr());
    let mut proxy = Proxy::start_with(listen, admin, &grace(listen, admin));
    assert_eq!(get(&proxy.url("/"), BROWSER_UA).status(), 200);
    let sent = Instant::now();
    proxy.signal("TERM");
    let exited =
        wait_for("the idle proxy to exit", Duration::from_secs(12), || (!proxy.is_running()).then(|| sent.elapsed()));
    assert!(exited < Duration::from_secs(8), "idle SIGTERM took {exited:?} with a 10 s grace period");

    // In flight: the response completes after SIGTERM.
    let (listen, admin) = (addr(), addr());
    let mut proxy = Proxy::start_with(listen, admin, &grace(listen, admin));
    let url = proxy.url("/slow");
    let request = std::thread::spawn(move || {
        let resp = get(&url, BROWSER_UA);
        (resp.status().as_u16(), resp.text().unwrap_or_default())
    });
    wait_for("the origin to get the request", DEADLINE, || {
        origin.seen().iter().any(|s| s.target == "/slow").then_some(())
    });
    proxy.signal("TERM");
    std::thread::sleep(Duration::from_millis(300));
    assert!(proxy.is_running(), "exited with a request in flight");
    open_gate(&gate);
    assert_eq!(request.join().unwrap(), (200, "first rest\n".to_string()));
    wait_for("the proxy to exit", Duration::from_secs(12), || (!proxy.is_running()).then_some(()));
}

#[test]
fn metrics_exist_from_the_start_and_describe_the_build_policy_and_process() {
    let origin = Origin::start(vec![("/", Route::ok("text/plain", "ok\n"))]);
    let proxy = Proxy::start(origin.addr, POLICY);
    let sha = status(&proxy)["content_sha256"].as_str().unwrap_or_default().to_string();
    let text = proxy.metrics();
    for series in [
        "crawlgate_responses_total{status_class=\"1xx\"} 0",
        "crawlgate_responses_total{status_class=\"5xx\"} 0",
        "crawlgate_requests_total{agent=\"GPTBot\",decision=\"blocked\"} 0",
        "crawlgate_requests_total{agent=\"other\",decision=\"violation_logged\"} 0",
        "crawlgate_robots_fetches_total{agent=\"ExampleBot\",file=\"agents.txt\"} 0",
        "crawlgate_upstream_responses_total{class=\"error\"} 0",
        "crawlgate_violations_total{agent=\"GPTBot\",group=\"GPTBot\"} 0",
        "crawlgate_violations_total{agent=\"other\",group=\"*\"} 0",
        "crawlgate_policy_last_reload_successful 1",
        &format!("crawlgate_policy_info{{sha256=\"{sha}\"}} 1"),
    ] {
        assert!(text.lines().any(|l| l == series), "{series} missing in\n{text}");
    }
    let build = text.lines().find(|l| l.starts_with("crawlgate_build_info{")).unwrap_or_default();
    assert!(
        build.starts_with("crawlgate_build_info{commit=\"")
            && build.ends_with(&format!("version=\"{}\"}} 1", env!("CARGO_PKG_VERSION"))),
        "{build}"
    );
    for name in
        ["process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds", "process_start_time_seconds"]
    {
        let value: f64 = proxy.metric(name).and_then(|v| v.parse().ok()).unwrap_or(-1.0);
        assert!(value > 0.0 || name == "process_cpu_seconds_total" && value == 0.0, "{name} = {value}");
    }

    assert_eq!(get(&proxy.url("/"), BROWSER_UA).status(), 200);
    assert_eq!(get(&proxy.url("/x"), "GPTBot/1.2").status(), 403);
    assert_eq!(proxy.metric("crawlgate_responses_total{status_class=\"2xx\"}").as_deref(), Some("1"));
    assert_eq!(proxy.metric("crawlgate_responses_total{status_class=\"4xx\"}").as_deref(), Some("1"));

    // A failed reload: the gauge says so; a good one replaces the policy's series.
    let base = std::fs::read_to_string(&proxy.policy_path).unwrap();
    std::fs::write(&proxy.policy_path, format!("{base}[[group]]\nuser_agents = [\"Bad Bot\"]\n")).unwrap();
    wait_for("the failure gauge", DEADLINE, || {
        (proxy.metric("crawlgate_policy_last_reload_successful").as_deref() == Some("0")).then_some(())
    });
    std::fs::write(&proxy.policy_path, format!("{base}\n# edited\n")).unwrap();
    wait_for("the success gauge", DEADLINE, || {
        (proxy.metric("crawlgate_policy_last_reload_successful").as_deref() == Some("1")).then_some(())
    });
    let new_sha = status(&proxy)["content_sha256"].as_str().unwrap_or_default().to_string();
    assert_ne!(new_sha, sha);
    let infos: Vec<String> =
        proxy.metrics().lines().filter(|l| l.starts_with("crawlgate_policy_info{")).map(str::to_owned).collect();
    assert_eq!(infos, [format!("crawlgate_policy_info{{sha256=\"{new_sha}\"}} 1")]);
}

/// A reload signal sent while the proxy is still starting (before its
/// watcher listens for SIGHUP) neither ends the process, SIGHUP's default
/// action, nor is lost: it reloads once the watcher runs.
#[test]
fn sighup_during_startup_is_a_reload() {
    let dir = TempDir::new("early-hup");
    let path = dir.write("crawlgate.toml", base_policy(addr(), addr(), addr()));
    let log = std::fs::File::create(dir.join("stderr.log")).unwrap();
    let mut child = Command::new(crawlgate_e2e::crawlgate_bin())
        .args(["run", "--config"])
        .arg(&path)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    // Long before the listeners and the watcher are up.
    std::thread::sleep(Duration::from_millis(30));
    let sent = Command::new("kill").args(["-HUP", &child.id().to_string()]).status().unwrap();
    assert!(sent.success());
    let line = wait_for("the reload outcome line", DEADLINE, || {
        let err = std::fs::read_to_string(dir.join("stderr.log")).unwrap_or_default();
        err.lines().find(|l| l.contains(" outcome=")).map(str::to_owned)
    });
    assert!(line.contains("trigger=\"sighup\" outcome=\"unchanged\""), "{line}");
    assert!(child.try_wait().unwrap().is_none(), "the proxy exited after an early SIGHUP");
    let _ = Command::new("kill").args(["-INT", &child.id().to_string()]).status();
    let _ = child.wait();
}
