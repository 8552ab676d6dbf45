//! The lists in README.md that would otherwise drift from the code: every
//! warning id, every access-log field and every metric name, compared with
//! what the real binary says (issue 22, section 8).

use std::net::SocketAddr;
use std::process::Command;

use crawlgate_e2e::crawlgate_bin;
use crawlgate_e2e::origin::{Origin, Route};
use crawlgate_e2e::proxy::{base_policy, free_port, Proxy};
use crawlgate_testkit::TempDir;

use crate::support::{get, BROWSER_UA, GPTBOT_UA};

fn readme() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md");
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The first column of the Markdown table that follows `marker` (each
/// backquoted name in it, in order).
fn table_names(text: &str, marker: &str) -> Vec<String> {
    let start = text.find(marker).unwrap_or_else(|| panic!("README.md has no `{marker}`"));
    text[start..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .flat_map(|row| {
            let first = row.split('|').nth(1).unwrap_or_default();
            first.split(',').map(|n| n.trim().trim_matches('`').to_string()).collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn the_readme_lists_every_warning_id_the_binary_knows() {
    let dir = TempDir::new("warning-ids");
    let path = dir.join("p.toml");
    std::fs::write(&path, "allow_warnings = [\"no-such-id\"]\n[upstream]\nservers = [\"127.0.0.1:9\"]\n").unwrap();
    let out = Command::new(crawlgate_bin()).args(["check", "--config"]).arg(&path).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    let known = text
        .split("(known: ")
        .nth(1)
        .and_then(|r| r.split(')').next())
        .unwrap_or_else(|| panic!("no list of known ids in:\n{text}"));
    let binary: Vec<&str> = known.split(", ").collect();
    assert_eq!(table_names(&readme(), "<!-- warning ids"), binary, "README.md's warning table vs the binary");
}

/// The access-log fields in the order the proxy writes them (a field is
/// written by `l.field("name", ..)` or `l.str("name", ..)` in events.rs).
fn fields_in_code() -> Vec<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../crates/telemetry/src/events.rs");
    let src = std::fs::read_to_string(path).unwrap();
    let body =
        src.split("pub fn line(&self, format: AccessLogFormat)").nth(1).expect("events.rs: the access line writer");
    body.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let rest = l.strip_prefix("l.field(\"").or_else(|| l.strip_prefix("l.str(\""))?;
            rest.split('"').next().map(str::to_string)
        })
        .collect()
}

#[test]
fn the_readme_lists_every_access_log_field_and_metric() {
    // Every feature that registers metrics or writes fields: TLS,
    // [verification], the origin merge, HTML audit, JSON access lines, a
    // shared store (unreachable: its gauges exist only with one).
    let origin = Origin::start(vec![
        (
            "/page",
            Route::ok("text/html", "<html><head><meta name=\"robots\" content=\"index\"></head><body>x</body></html>"),
        ),
        ("/robots.txt", Route::ok("text/plain", "User-agent: *\nDisallow: /origin-only/\n")),
    ]);
    let certs = TempDir::new("readme-certs");
    let (cert, key) = (certs.join("cert.pem"), certs.join("key.pem"));
    let made = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1"])
        .args(["-subj", "/CN=localhost", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .unwrap();
    assert!(made.status.success());
    let addr = |p: u16| -> SocketAddr { format!("127.0.0.1:{p}").parse().unwrap() };
    let (plain, tls, admin) = (addr(free_port()), addr(free_port()), addr(free_port()));
    let policy = base_policy(plain, admin, origin.addr).replace(
        "[server]\n",
        &format!(
            "[server]\naccess_log_format = \"json\"\ntls_listen = [\"{tls}\"]\ntls_cert = \"{}\"\ntls_key = \"{}\"\n",
            cert.display(),
            key.display()
        ),
    ) + "[robots_txt]\norigin = \"merge\"\n\n[verification]\nrefresh = \"24h\"\n\n\
         [[group]]\nuser_agents = [\"GPTBot\"]\ndisallow = [\"/private/\"]\nenforce = \"log\"\n\n\
         [[robots_tag]]\npath = \"/page\"\nrules = [\"noindex\"]\nhtml = \"audit\"\n"
        // Charging: a charge group with a pinned key and its ledger.
        + &format!(
            "\n[limits]\nstore = \"redis://127.0.0.1:9/\"\n\n[[group]]\nuser_agents = [\"ExampleBot\"]\nenforce = \"charge\"\nprice = \"USD 0.01\"\n\n\
             [[verification.keys]]\ntoken = \"ExampleBot\"\njwk = '{}'\n\n[payment]\nledger = \"{}\"\n",
            crawlgate_testkit::wba::Signer::from_seed(1).jwk(),
            certs.join("ledger.sqlite").display()
        );
    let proxy = Proxy::start_with(plain, admin, &policy);
    for (path, ua) in
        [("/page", BROWSER_UA), ("/page", GPTBOT_UA), ("/private/x", GPTBOT_UA), ("/robots.txt", GPTBOT_UA)]
    {
        let _ = get(&proxy.url(path), ua).bytes();
    }

    let readme = readme();
    let documented = table_names(&readme, "| Field | Type | Present | Example |");
    assert_eq!(documented, fields_in_code(), "README.md's access-log table vs the fields events.rs writes, in order");
    // Every field of the binary's JSON lines is documented.
    let log = proxy.log();
    let lines: Vec<serde_json::Value> =
        log.lines().filter(|l| l.starts_with('{')).filter_map(|l| serde_json::from_str(l).ok()).collect();
    assert!(lines.len() >= 4, "no JSON access lines in:\n{log}");
    for line in &lines {
        for key in line.as_object().unwrap().keys() {
            assert!(documented.contains(key), "access-log field `{key}` is not in README.md");
        }
    }

    let metrics = proxy.metrics();
    let mut exported: Vec<String> =
        metrics.lines().filter_map(|l| l.strip_prefix("# TYPE ")?.split(' ').next().map(str::to_string)).collect();
    exported.sort();
    let mut listed = table_names(&readme, "<!-- metric names");
    // Registered only while a PostgreSQL ledger is open (this policy's
    // ledger is SQLite): tests/proxy/payment.rs checks them with one.
    listed.retain(|m| m != "crawlgate_ledger_postgres_up" && m != "crawlgate_ledger_spool_rows");
    listed.sort();
    assert_eq!(listed, exported, "README.md's metric table vs the binary's /metrics");
    drop(proxy);
}
