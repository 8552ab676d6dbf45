//! TLS certificates reload without a restart (issue 22, section 7): a
//! change of the certificate and key files, or SIGHUP, swaps them for new
//! handshakes; a pair that does not load keeps the running one. The client
//! is `openssl s_client`, which prints the certificate the server sent.

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crawlgate_e2e::origin::{Origin, Route};
use crawlgate_e2e::proxy::{base_policy, free_port, wait_for, Proxy};
use crawlgate_testkit::TempDir;

/// A self-signed certificate for localhost with `serial`, as PEM texts
/// (certificate, key).
fn self_signed(dir: &Path, serial: &str) -> (String, String) {
    let (cert, key) = (dir.join(format!("c{serial}.pem")), dir.join(format!("k{serial}.pem")));
    let out = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2"])
        .args(["-subj", "/CN=localhost", "-set_serial", serial, "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("cannot run openssl");
    assert!(out.status.success(), "openssl: {}", String::from_utf8_lossy(&out.stderr));
    (std::fs::read_to_string(cert).unwrap(), std::fs::read_to_string(key).unwrap())
}

/// Replaces `path` by a rename, as certbot and editors do.
fn replace(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// The leaf certificate (PEM) the server at `addr` sends in a handshake,
/// `None` when the handshake fails or the connection is refused.
fn served(addr: SocketAddr) -> Option<String> {
    let out = Command::new("openssl")
        .args(["s_client", "-connect", &addr.to_string(), "-servername", "localhost"])
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let start = text.find("-----BEGIN CERTIFICATE-----")?;
    let end = text[start..].find("-----END CERTIFICATE-----")? + start + "-----END CERTIFICATE-----".len();
    Some(format!("{}\n", &text[start..end]))
}

#[test]
fn a_new_certificate_applies_to_new_handshakes_without_refusing_any() {
    let origin = Origin::start(vec![("/", Route::ok("text/plain", "hello\n"))]);
    let certs = TempDir::new("certs");
    let (cert_a, key_a) = self_signed(certs.path(), "4001");
    let (cert_b, key_b) = self_signed(certs.path(), "4002");
    let (cert_path, key_path) = (certs.join("fullchain.pem"), certs.join("privkey.pem"));
    std::fs::write(&cert_path, &cert_a).unwrap();
    std::fs::write(&key_path, &key_a).unwrap();
    let addr = |p: u16| -> SocketAddr { format!("127.0.0.1:{p}").parse().unwrap() };
    let (plain, tls, admin) = (addr(free_port()), addr(free_port()), addr(free_port()));
    let policy = base_policy(plain, admin, origin.addr).replace(
        "[server]\n",
        &format!(
            "[server]\ntls_listen = [\"{tls}\"]\ntls_cert = \"{}\"\ntls_key = \"{}\"\n",
            cert_path.display(),
            key_path.display()
        ),
    ) + "[[group]]\nuser_agents = [\"*\"]\nallow = [\"/\"]\n";
    let proxy = Proxy::start_with(plain, admin, &policy);
    wait_for("the TLS listener", Duration::from_secs(10), || served(tls));
    assert_eq!(served(tls).as_deref(), Some(cert_a.as_str()), "before the swap; log:\n{}", proxy.log());
    assert_eq!(proxy.metric("crawlgate_tls_reloads_total{result=\"success\"}").as_deref(), Some("0"));
    // The expiry gauge: `-days 2` from a moment ago.
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let not_after: u64 =
        proxy.metric("crawlgate_tls_certificate_not_after_timestamp_seconds").unwrap().parse().unwrap();
    assert!((now + 2 * 86_400 - 120..=now + 2 * 86_400).contains(&not_after), "{not_after} vs now {now}");

    // Handshakes run back to back through the swap: each must get one of
    // the two certificates.
    let stop = Arc::new(AtomicBool::new(false));
    let prober = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut seen = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                seen.push(served(tls));
            }
            seen
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    replace(&key_path, &key_b);
    replace(&cert_path, &cert_b);
    wait_for("the new certificate", Duration::from_secs(5), || (served(tls).as_deref() == Some(&cert_b)).then_some(()));
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    let seen = prober.join().unwrap();
    let failed = seen.iter().filter(|s| s.is_none()).count();
    assert_eq!(failed, 0, "handshakes refused or failed during the swap ({} in all)", seen.len());
    assert!(seen.first().unwrap().as_deref() == Some(&cert_a), "the prober started on the old certificate");
    assert!(seen.last().unwrap().as_deref() == Some(&cert_b), "the prober ended on the new certificate");
    assert_eq!(proxy.metric("crawlgate_tls_reloads_total{result=\"success\"}").as_deref(), Some("1"));
    // Requests over the new certificate reach the origin.
    let out = Command::new("curl")
        .args(["-sk", "--resolve", &format!("localhost:{}:127.0.0.1", tls.port())])
        .arg(format!("https://localhost:{}/", tls.port()))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hello\n");

    // A certificate that does not load keeps the running one, and says so.
    replace(&cert_path, "not a certificate\n");
    wait_for("the failed reload", Duration::from_secs(5), || {
        proxy.metric("crawlgate_tls_reloads_total{result=\"failure\"}").filter(|v| v == "1")
    });
    assert_eq!(served(tls).as_deref(), Some(cert_b.as_str()), "a bad file must keep the running certificate");
    let status: serde_json::Value =
        serde_json::from_str(&reqwest::blocking::get(proxy.admin_url("/status")).unwrap().text().unwrap())
            .expect("/status is JSON");
    let error = status["tls"]["last_error"].as_str().unwrap_or_default();
    assert!(error.starts_with(&format!("TLS certificate {} holds no PEM certificate", cert_path.display())), "{error}");
    assert_eq!(status["tls"]["serial"], "0FA2", "0x0FA2 = 4002: the running certificate");

    // A key that does not match the certificate is refused the same way.
    replace(&cert_path, &cert_a);
    wait_for("the mismatch", Duration::from_secs(5), || {
        proxy.metric("crawlgate_tls_reloads_total{result=\"failure\"}").filter(|v| v == "2")
    });
    assert_eq!(served(tls).as_deref(), Some(cert_b.as_str()));

    // Pair A again (cert A is in place, the key follows); then SIGHUP
    // reloads too, finding the files unchanged and clearing nothing.
    replace(&key_path, &key_a);
    wait_for("certificate A again", Duration::from_secs(5), || (served(tls).as_deref() == Some(&cert_a)).then_some(()));
    let unchanged = proxy.metric("crawlgate_tls_reloads_total{result=\"unchanged\"}").unwrap();
    proxy.signal("HUP");
    wait_for("the SIGHUP reload", Duration::from_secs(5), || {
        let now = proxy.metric("crawlgate_tls_reloads_total{result=\"unchanged\"}")?;
        (now.parse::<u64>().ok()? == unchanged.parse::<u64>().ok()? + 1).then_some(())
    });
    let status: serde_json::Value =
        serde_json::from_str(&reqwest::blocking::get(proxy.admin_url("/status")).unwrap().text().unwrap()).unwrap();
    assert_eq!(status["tls"]["last_error"], serde_json::Value::Null, "a good load clears the error");
    assert_eq!(status["tls"]["serial"], "0FA1");
    drop(proxy);
}

#[test]
fn a_key_that_does_not_match_the_certificate_stops_the_start() {
    let certs = TempDir::new("certs-mismatch");
    let (cert_a, _) = self_signed(certs.path(), "4101");
    let (_, key_b) = self_signed(certs.path(), "4102");
    let (cert_path, key_path) = (certs.join("fullchain.pem"), certs.join("privkey.pem"));
    std::fs::write(&cert_path, cert_a).unwrap();
    std::fs::write(&key_path, key_b).unwrap();
    let addr = |p: u16| -> SocketAddr { format!("127.0.0.1:{p}").parse().unwrap() };
    let (plain, tls, admin) = (addr(free_port()), addr(free_port()), addr(free_port()));
    let policy = base_policy(plain, admin, addr(9)).replace(
        "[server]\n",
        &format!(
            "[server]\ntls_listen = [\"{tls}\"]\ntls_cert = \"{}\"\ntls_key = \"{}\"\n",
            cert_path.display(),
            key_path.display()
        ),
    );
    let policy_path = certs.join("crawlgate.toml");
    std::fs::write(&policy_path, policy).unwrap();
    let log = certs.join("log");
    let mut child = Command::new(crawlgate_e2e::crawlgate_bin())
        .args(["run", "--config"])
        .arg(&policy_path)
        .env_remove("CRAWLGATE_CONFIG")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    // A proxy that started anyway (and would fail every handshake) is
    // stopped and the test fails, rather than waiting for it forever.
    let status = 'wait: {
        for _ in 0..500 {
            if let Some(status) = child.try_wait().unwrap() {
                break 'wait Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        None
    };
    let stderr = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(status.is_some_and(|s| !s.success()), "the proxy started on a mismatched pair:\n{stderr}");
    assert!(
        stderr.contains(&format!(
            "TLS key {} does not belong to the certificate {}",
            key_path.display(),
            cert_path.display()
        )),
        "{stderr}"
    );
}
