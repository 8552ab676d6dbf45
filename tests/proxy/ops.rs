//! Operations: hot reload (every way a file changes), a broken policy that
//! changes nothing, reload under load, `/metrics`, `/status`, `/healthz`
//! and `/readyz`.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crawlgate_e2e::origin::{Origin, Route};
use crawlgate_e2e::proxy::{base_policy, free_port, wait_for, Proxy};
use crawlgate_testkit::TempDir;

use crate::support::{client, get};

// An upper bound for polls only (they return as soon as the line shows): long
// enough for a start on a loaded 2-core machine.
const DEADLINE: Duration = Duration::from_secs(60);

fn addr() -> SocketAddr {
    format!("127.0.0.1:{}", free_port()).parse().unwrap()
}

/// Policy version `n`: ExampleBot may not fetch `/v{n}/`.
fn version(base: &str, n: usize) -> String {
    format!("{base}[[group]]\nuser_agents = [\"ExampleBot\"]\ndisallow = [\"/v{n}/\"]\nenforce = \"block\"\n")
}

fn status(proxy: &Proxy) -> serde_json::Value {
    let text = client().get(proxy.admin_url("/status")).send().and_then(|r| r.text()).unwrap_or_default();
    serde_json::from_str(&text).unwrap_or(serde_json::Value::Null)
}

fn robots(proxy: &Proxy) -> String {
    get(&proxy.url("/robots.txt"), "t").text().unwrap_or_default()
}

/// Waits until version `n` is live: in robots.txt, in enforcement and in /status.
fn assert_live(proxy: &Proxy, n: usize, generation: u64) {
    wait_for(&format!("policy v{n} in robots.txt"), DEADLINE, || {
        robots(proxy).contains(&format!("/v{n}/")).then_some(())
    });
    assert_eq!(get(&proxy.url(&format!("/v{n}/x")), "ExampleBot/1.0").status(), 403);
    assert_eq!(status(proxy)["generation"], generation);
    assert_eq!(status(proxy)["last_error"], serde_json::Value::Null);
}

fn origin() -> Origin {
    Origin::start(vec![("/", Route::ok("text/plain", "ok\n"))])
}

fn start(origin: &Origin) -> (Proxy, String) {
    let (listen, admin) = (addr(), addr());
    let base = base_policy(listen, admin, origin.addr);
    let proxy = Proxy::start_with(listen, admin, &version(&base, 0));
    (proxy, base)
}

#[test]
fn every_kind_of_file_change_is_picked_up() {
    let origin = origin();
    let (proxy, base) = start(&origin);
    assert_live(&proxy, 0, 1);
    let path = proxy.policy_path.clone();

    // 1. In-place write (truncate and write the same inode).
    std::fs::write(&path, version(&base, 1)).unwrap();
    assert_live(&proxy, 1, 2);

    // 2. An editor's write-to-temp-and-rename.
    let tmp = proxy.dir.join(".crawlgate.toml.swp");
    std::fs::write(&tmp, version(&base, 2)).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
    assert_live(&proxy, 2, 3);

    // 3. `cp` over the file.
    let elsewhere_dir = TempDir::new("cp");
    let elsewhere = elsewhere_dir.join("new.toml");
    std::fs::write(&elsewhere, version(&base, 3)).unwrap();
    let cp = std::process::Command::new("cp").arg(&elsewhere).arg(&path).status().unwrap();
    assert!(cp.success());
    assert_live(&proxy, 3, 4);

    // 4. SIGHUP with an unchanged file: a reload that finds nothing new.
    let unchanged_before = metric(&proxy, "crawlgate_reloads_total", &[("result", "unchanged")]);
    proxy.signal("HUP");
    wait_for("SIGHUP reload", DEADLINE, || {
        (metric(&proxy, "crawlgate_reloads_total", &[("result", "unchanged")]) > unchanged_before).then_some(())
    });
    assert_eq!(status(&proxy)["generation"], 4);
}

#[test]
fn kubernetes_configmap_symlink_swap_is_picked_up() {
    let origin = origin();
    let (listen, admin) = (addr(), addr());
    let base = base_policy(listen, admin, origin.addr);
    // The kubelet's layout: crawlgate.toml -> ..data/crawlgate.toml,
    // ..data -> ..<timestamp>/, swapped atomically by renaming a new link.
    let dir = TempDir::new("k8s");
    let v1 = dir.join("..2026_11_22_10_00_00.000000001");
    std::fs::create_dir(&v1).unwrap();
    std::fs::write(v1.join("crawlgate.toml"), version(&base, 1)).unwrap();
    std::os::unix::fs::symlink(v1.file_name().unwrap_or_default(), dir.join("..data")).unwrap();
    std::os::unix::fs::symlink("..data/crawlgate.toml", dir.join("crawlgate.toml")).unwrap();
    let child = std::process::Command::new(crawlgate_e2e::crawlgate_bin())
        .args(["run", "--config"])
        .arg(dir.join("crawlgate.toml"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let guard = KillOnDrop(child);
    wait_for("proxy", DEADLINE, || std::net::TcpStream::connect(listen).ok());
    let url = format!("http://{listen}/robots.txt");
    wait_for("v1", DEADLINE, || get(&url, "t").text().ok().filter(|t| t.contains("/v1/")));

    let v2 = dir.join("..2026_11_22_10_05_00.000000002");
    std::fs::create_dir(&v2).unwrap();
    std::fs::write(v2.join("crawlgate.toml"), version(&base, 2)).unwrap();
    std::os::unix::fs::symlink(v2.file_name().unwrap_or_default(), dir.join("..data_tmp")).unwrap();
    std::fs::rename(dir.join("..data_tmp"), dir.join("..data")).unwrap();
    std::fs::remove_dir_all(&v1).unwrap();
    wait_for("v2 after the ..data swap", DEADLINE, || get(&url, "t").text().ok().filter(|t| t.contains("/v2/")));
    assert_eq!(get(&format!("http://{listen}/v2/x"), "ExampleBot/1.0").status(), 403);
    drop(guard);
}

struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill").arg("-INT").arg(self.0.id().to_string()).status();
        let _ = self.0.wait();
    }
}

#[test]
fn a_broken_or_deleted_policy_changes_nothing() {
    let origin = origin();
    let (proxy, base) = start(&origin);
    let before = robots(&proxy);
    // Every reload series exists from the start, so that `increase()` sees
    // the first failure.
    let text = client().get(proxy.admin_url("/metrics")).send().and_then(|r| r.text()).unwrap_or_default();
    let series = parse_metrics(&text);
    for result in ["success", "unchanged", "failure"] {
        let key = format!("crawlgate_reloads_total{{result=\"{result}\"}}");
        assert_eq!(series.get(&key), Some(&0.0), "{key} in\n{text}");
    }
    assert_eq!(series.get("crawlgate_policy_reload_failing"), Some(&0.0));
    let path = proxy.policy_path.clone();
    std::fs::write(&path, format!("{base}[[group]]\nuser_agents = [\"Bad Bot\"]\ndisallow = [\"nope\"]\n")).unwrap();
    let st = wait_for("the reload error in /status", DEADLINE, || {
        let s = status(&proxy);
        if s["last_error"].is_string() {
            Some(s)
        } else {
            None
        }
    });
    let error = st["last_error"].as_str().unwrap_or_default().to_string();
    let file = path.display().to_string();
    assert!(error.lines().all(|l| l.starts_with(&format!("{file}:"))), "errors must be FILE:LINE:COL: {error}");
    assert!(error.lines().count() >= 2, "every error is reported: {error}");
    assert_eq!(st["generation"], 1);
    assert_eq!(robots(&proxy), before);
    assert_eq!(get(&proxy.url("/v0/x"), "ExampleBot/1.0").status(), 403);
    assert_eq!(metric(&proxy, "crawlgate_reloads_total", &[("result", "failure")]), 1.0);
    assert_eq!(metric(&proxy, "crawlgate_policy_reload_failing", &[]), 1.0);
    assert!(proxy.log().contains("Policy reload failed; the running policy stays in force"));

    // Reverting the bad edit clears the error: the file is the running policy.
    std::fs::write(&path, version(&base, 0)).unwrap();
    let st = wait_for("the error to clear", DEADLINE, || {
        let s = status(&proxy);
        s["last_error"].is_null().then_some(s)
    });
    assert_eq!(st["generation"], 1);
    assert!(proxy.log().contains("Policy file matches the running policy; nothing to reload"));
    assert_eq!(metric(&proxy, "crawlgate_policy_reload_failing", &[]), 0.0);

    std::fs::remove_file(&path).unwrap();
    wait_for("the deletion to be noticed", DEADLINE, || {
        (metric(&proxy, "crawlgate_reloads_total", &[("result", "failure")]) >= 2.0).then_some(())
    });
    assert_eq!(robots(&proxy), before);

    std::fs::write(&path, version(&base, 5)).unwrap();
    assert_live(&proxy, 5, 2);
}

#[test]
fn restart_only_settings_are_reported_and_the_rest_applies() {
    let origin = origin();
    let (proxy, base) = start(&origin);
    let moved = base.replacen(&format!("listen = [\"{}\"]", proxy.addr), &format!("listen = [\"{}\"]", addr()), 1);
    assert_ne!(moved, base);
    std::fs::write(&proxy.policy_path, version(&moved, 7)).unwrap();
    assert_live(&proxy, 7, 2);
    assert_eq!(status(&proxy)["restart_required"], serde_json::json!(["server.listen"]));
    // Changed back: the file's restart-only settings are those the process
    // started with again (compared with the start, not with generation 2).
    std::fs::write(&proxy.policy_path, version(&base, 8)).unwrap();
    assert_live(&proxy, 8, 3);
    assert_eq!(status(&proxy)["restart_required"], serde_json::json!([]));
    // Another change from the start is reported on its own.
    let threads = base.replacen("threads = 2", "threads = 3", 1);
    assert_ne!(threads, base);
    std::fs::write(&proxy.policy_path, version(&threads, 9)).unwrap();
    assert_live(&proxy, 9, 4);
    assert_eq!(status(&proxy)["restart_required"], serde_json::json!(["server.threads"]));
}

/// 50 alternating good and bad policy writes under continuous load: no
/// failed request, every answer consistent with one of the good policies.
#[test]
fn reloads_under_load_drop_nothing() {
    let origin = origin();
    let (proxy, base) = start(&origin);
    let good = [version(&base, 10), version(&base, 11)];
    let bad = format!("{base}[[group]]\nuser_agents = [\"*\"]\nenforce = \"sometimes\"\n");
    std::fs::write(&proxy.policy_path, &good[0]).unwrap();
    wait_for("v10", DEADLINE, || robots(&proxy).contains("/v10/").then_some(()));
    let renders = [robots(&proxy), {
        let b = robots(&proxy);
        b.replace("/v10/", "/v11/")
    }];

    let stop = Arc::new(AtomicBool::new(false));
    let served = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    for w in 0..4 {
        let (stop, served, url, renders) = (stop.clone(), served.clone(), proxy.url(""), renders.clone());
        workers.push(std::thread::spawn(move || -> Result<(), String> {
            let c = client();
            while !stop.load(Ordering::Relaxed) {
                let robots = c.get(format!("{url}/robots.txt")).send().map_err(|e| format!("worker {w}: {e}"))?;
                if robots.status() != 200 {
                    return Err(format!("robots.txt status {}", robots.status()));
                }
                let body = robots.text().map_err(|e| e.to_string())?;
                if !renders.contains(&body) {
                    return Err(format!("robots.txt matches no good policy:\n{body}"));
                }
                // Under v10 /v10/x is blocked and /v11/x passes; under v11 the reverse.
                let a = c
                    .get(format!("{url}/v10/x"))
                    .header("User-Agent", "ExampleBot/1")
                    .send()
                    .map_err(|e| e.to_string())?
                    .status()
                    .as_u16();
                if a != 403 && a != 404 {
                    return Err(format!("/v10/x gave {a}"));
                }
                served.fetch_add(2, Ordering::Relaxed);
            }
            Ok(())
        }));
    }
    for i in 0..50 {
        if i % 2 == 0 {
            let failures = metric(&proxy, "crawlgate_reloads_total", &[("result", "failure")]);
            std::fs::write(&proxy.policy_path, &bad).unwrap();
            wait_for("bad write counted", DEADLINE, || {
                (metric(&proxy, "crawlgate_reloads_total", &[("result", "failure")]) > failures).then_some(())
            });
        } else {
            let next = &good[(i / 2 + 1) % 2];
            let marker = if (i / 2 + 1) % 2 == 0 { "/v10/" } else { "/v11/" };
            std::fs::write(&proxy.policy_path, next).unwrap();
            wait_for("good write live", DEADLINE, || robots(&proxy).contains(marker).then_some(()));
        }
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap_or_else(|_| Err("worker panicked".into())).unwrap();
    }
    assert!(served.load(Ordering::Relaxed) > 100, "load was too light to prove anything");
    // Each bad write is counted (a write seen half-done may add more).
    assert!(metric(&proxy, "crawlgate_reloads_total", &[("result", "failure")]) >= 25.0);
}

#[test]
fn a_file_that_keeps_changing_still_reloads() {
    let origin = origin();
    let (proxy, base) = start(&origin);
    // A new version every 100 ms for 4 s: never quiet for the 150 ms a
    // reload waits for, so only the maximum delay brings changes in.
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (stop, path, base) = (stop.clone(), proxy.policy_path.clone(), base.clone());
        std::thread::spawn(move || {
            for n in 1..=40 {
                std::fs::write(&path, version(&base, n)).unwrap();
                std::thread::sleep(Duration::from_millis(100));
            }
            stop.store(true, Ordering::Relaxed);
        })
    };
    // While the writer runs, requests keep being served and versions go live.
    let mut seen = std::collections::BTreeSet::new();
    let mut requests = 0;
    while !stop.load(Ordering::Relaxed) {
        let resp = get(&proxy.url("/robots.txt"), "t");
        assert_eq!(resp.status(), 200);
        let body = resp.text().unwrap_or_default();
        if let Some(v) = body.split("/v").nth(1).and_then(|t| t.split('/').next()) {
            seen.insert(v.parse::<usize>().unwrap_or(0));
        }
        requests += 1;
    }
    writer.join().expect("writer panicked");
    seen.remove(&0);
    assert!(requests > 20, "load was too light to prove anything");
    assert!(seen.len() >= 2, "only versions {seen:?} went live while the file kept changing");
    // When the churn stops, the last version goes live.
    wait_for("v40 in robots.txt", DEADLINE, || robots(&proxy).contains("/v40/").then_some(()));
    assert_eq!(get(&proxy.url("/v40/x"), "ExampleBot/1.0").status(), 403);
}

/// Parses the Prometheus text format strictly enough to fail on garbage,
/// returning `series -> value` with series as `name{a="b",...}`.
fn parse_metrics(text: &str) -> HashMap<String, f64> {
    let mut out = HashMap::new();
    for line in text.lines() {
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# ") {
            assert!(rest.starts_with("HELP ") || rest.starts_with("TYPE "), "bad comment line {line:?}");
            continue;
        }
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("bad sample line {line:?}"));
        let name_end = series.find('{').unwrap_or(series.len());
        let name = &series[..name_end];
        assert!(
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
            "bad metric name in {line:?}"
        );
        if name_end < series.len() {
            assert!(series.ends_with('}'), "bad labels in {line:?}");
        }
        let v: f64 = value.parse().unwrap_or_else(|_| panic!("bad value in {line:?}"));
        out.insert(series.to_string(), v);
    }
    out
}

fn metric(proxy: &Proxy, name: &str, labels: &[(&str, &str)]) -> f64 {
    let text = client().get(proxy.admin_url("/metrics")).send().and_then(|r| r.text()).unwrap_or_default();
    let parsed = parse_metrics(&text);
    parsed
        .iter()
        .filter(|(k, _)| {
            k.split('{').next() == Some(name) && labels.iter().all(|(l, v)| k.contains(&format!("{l}=\"{v}\"")))
        })
        .map(|(_, v)| *v)
        .sum()
}

#[test]
fn metrics_move_as_the_requests_dictate() {
    let origin = origin();
    let rules = "[[group]]\nuser_agents = [\"*\"]\ndisallow = [\"/private/\"]\nenforce = \"log\"\n\n[[group]]\nuser_agents = [\"GPTBot\"]\ndisallow = [\"/\"]\nenforce = \"block\"\n";
    let proxy = Proxy::start(origin.addr, rules);
    let gpt = "Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)";
    for _ in 0..3 {
        assert_eq!(get(&proxy.url("/"), gpt).status(), 403);
    }
    for _ in 0..2 {
        get(&proxy.url("/"), "curl/8.5.0");
    }
    get(&proxy.url("/private/x"), "curl/8.5.0");
    get(&proxy.url("/robots.txt"), gpt);
    let text = client().get(proxy.admin_url("/metrics")).send().and_then(|r| r.text()).unwrap_or_default();
    let m = parse_metrics(&text);
    let get_m = |k: &str| m.get(k).copied().unwrap_or_else(|| panic!("missing series {k} in\n{text}"));
    assert_eq!(get_m("crawlgate_requests_total{agent=\"GPTBot\",decision=\"blocked\"}"), 3.0);
    // A client naming no token is never a violation, even on a `*` disallow.
    assert_eq!(get_m("crawlgate_requests_total{agent=\"other\",decision=\"allowed\"}"), 3.0);
    let zero_or_absent = |k: &str| m.get(k).copied().unwrap_or(0.0);
    assert_eq!(zero_or_absent("crawlgate_requests_total{agent=\"other\",decision=\"violation_logged\"}"), 0.0);
    assert_eq!(get_m("crawlgate_robots_fetches_total{agent=\"GPTBot\",file=\"robots.txt\"}"), 1.0);
    assert_eq!(get_m("crawlgate_violations_total{agent=\"GPTBot\",group=\"GPTBot\"}"), 3.0);
    assert_eq!(zero_or_absent("crawlgate_violations_total{agent=\"other\",group=\"*\"}"), 0.0);
    assert_eq!(get_m("crawlgate_upstream_responses_total{class=\"2xx\"}"), 2.0);
    assert_eq!(get_m("crawlgate_upstream_responses_total{class=\"4xx\"}"), 1.0);
    assert_eq!(get_m("crawlgate_policy_generation"), 1.0);
    assert!(get_m("crawlgate_policy_last_success_timestamp_seconds") > 1.7e9);
    assert_eq!(get_m("crawlgate_request_duration_seconds_count{decision=\"blocked\"}"), 3.0);
    assert!(text.contains("# TYPE crawlgate_request_duration_seconds histogram"));
    // Label values stay bounded: no raw User-Agent strings.
    assert!(!text.contains("curl"), "raw user agents leaked into labels");
}

#[test]
fn health_readiness_and_status() {
    let origin = origin();
    let (listen, admin) = (addr(), addr());
    let policy = base_policy(listen, admin, origin.addr)
        .replace("health_check_interval = \"0s\"", "health_check_interval = \"100ms\"");
    let proxy = Proxy::start_with(listen, admin, &policy);
    assert_eq!(client().get(proxy.admin_url("/healthz")).send().map(|r| r.status().as_u16()).unwrap_or(0), 200);
    for method in [reqwest::Method::POST, reqwest::Method::DELETE, reqwest::Method::PUT] {
        let resp = client().request(method.clone(), proxy.admin_url("/status")).send().unwrap();
        assert_eq!(resp.status(), 405, "{method}");
        assert_eq!(resp.headers().get("allow").and_then(|v| v.to_str().ok()), Some("GET, HEAD"));
    }
    wait_for("ready", DEADLINE, || {
        (client().get(proxy.admin_url("/readyz")).send().map(|r| r.status().as_u16()).unwrap_or(0) == 200).then_some(())
    });
    let st = status(&proxy);
    assert_eq!(st["policy_file"], proxy.policy_path.display().to_string());
    assert_eq!(st["generation"], 1);
    assert_eq!(st["upstreams"][0]["healthy"], true);
    assert_eq!(st["content_sha256"].as_str().map(str::len), Some(64));
    origin.stop();
    drop(origin);
    // Readiness follows the origin only when the policy asks for it.
    let path = proxy.policy_path.clone();
    std::fs::write(&path, policy.replace("[server]\n", "[server]\nready_requires_upstream = true\n")).unwrap();
    wait_for("not ready once the origin is down", DEADLINE, || {
        (client().get(proxy.admin_url("/readyz")).send().map(|r| r.status().as_u16()).unwrap_or(0) == 503).then_some(())
    });
    assert_eq!(client().get(proxy.admin_url("/healthz")).send().map(|r| r.status().as_u16()).unwrap_or(0), 200);
    assert_eq!(status(&proxy)["upstreams"][0]["healthy"], false);
}
