//! `crawlgate top --once` against a canned `/api/agents` served by a real
//! local HTTP server: two documents two seconds apart (by their `now_ms`)
//! give exact rates; the address as `host:port` or from the policy's
//! `server.admin`, with its `admin_auth_file` as credentials.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use crawlgate_e2e::{arg, code, crawlgate, stderr, stdout};
use crawlgate_testkit::TempDir;
use serde_json::{json, Value};

/// The request lines a server saw, each with its Authorization field.
type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// A server answering each request with the next document (the last one
/// again when they run out); returns its address and the request lines
/// with their Authorization field.
fn serve(docs: Vec<Value>) -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let seen: Seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        let mut i = 0;
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let mut auth = None;
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).unwrap() == 0 || h == "\r\n" {
                    break;
                }
                if let Some(v) = h.strip_prefix("Authorization: ") {
                    auth = Some(v.trim_end().to_string());
                }
            }
            log.lock().unwrap().push((line.trim_end().to_string(), auth));
            let body = if line.starts_with("GET /api/referrals ") {
                serde_json::to_vec(&referrals()).unwrap()
            } else {
                i += 1;
                serde_json::to_vec(&docs[(i - 1).min(docs.len() - 1)]).unwrap()
            };
            write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            )
            .unwrap();
            stream.write_all(&body).unwrap();
        }
    });
    (addr, seen)
}

/// `/api/referrals`: one operator's ratios over the three windows, and
/// Markdown requested against served.
fn referrals() -> Value {
    let w = |c: u64, r: u64, b: u64| json!({"crawl_requests": c, "referrals": r, "crawls_per_referral": (r > 0).then(|| c as f64 / r as f64), "bytes_sent": b});
    json!({
        "operators": [
            {"operator": "OpenAI", "windows": {"24h": w(1276, 1, 51_200), "7d": w(8000, 0, 409_600), "30d": w(0, 0, 0)}},
            {"operator": "Anthropic\u{1b}[2J", "windows": {"24h": w(5, 1, 10), "7d": w(5, 1, 10), "30d": w(5, 1, 10)}}
        ],
        "markdown": {"requested": 7, "served": 5}
    })
}

fn doc(now_ms: u64, gptbot: [u64; 8], claude: [u64; 8]) -> Value {
    let row = |agent: &str, n: [u64; 8]| {
        let [requests, allowed, violations, blocked, spoofed, verified, robots_txt, bytes_sent] = n;
        json!({"agent": agent, "requests": requests, "allowed": allowed, "violations": violations,
               "blocked": blocked, "spoofed": spoofed, "verified": verified, "robots_txt": robots_txt,
               "bytes_sent": bytes_sent})
    };
    let total: Vec<u64> = (0..8).map(|i| gptbot[i] + claude[i]).collect();
    json!({
        "now_ms": now_ms,
        "agents": [row("GPTBot", gptbot), row("ClaudeBot", claude)],
        "total": {"requests": total[0], "allowed": total[1], "violations": total[2], "blocked": total[3],
                  "spoofed": total[4], "verified": total[5], "robots_txt": total[6], "bytes_sent": total[7]},
    })
}

const EXPECTED: &str = "\
AGENT      REQUESTS  REQ/S  ALLOWED  VIOLATIONS  BLOCKED  SPOOFED  VERIFIED  ROBOTS.TXT  BYTES
GPTBot          140   20.0      120          10        5        5       130           2  50.0K
ClaudeBot        31    0.5       30           0        1        1         0           1   3000
TOTAL           171   20.5      150          10        6        6       130           3  52.9K

OPERATOR       CRAWL:REF 24H  CRAWL:REF 7D  CRAWL:REF 30D  BYTES 24H  BYTES 7D  BYTES 30D
OpenAI                1276:1        8000:0              –      50.0K    400.0K          0
Anthropic?[2J          5.0:1         5.0:1          5.0:1         10        10         10
MARKDOWN  requested 7, served 5
";

fn docs() -> Vec<Value> {
    vec![
        doc(1_700_000_000_000, [100, 85, 8, 4, 4, 95, 2, 40_000], [30, 29, 0, 1, 1, 0, 1, 2_900]),
        doc(1_700_000_002_000, [140, 120, 10, 5, 5, 130, 2, 51_200], [31, 30, 0, 1, 1, 0, 1, 3_000]),
    ]
}

#[test]
fn top_once_shows_rates_spoofed_and_verified_for_a_host_port_address() {
    let (addr, seen) = serve(docs());
    let out = crawlgate(&["top", &addr, "--once", "--interval", "0.1"]);
    assert_eq!((code(&out), stderr(&out)), (0, String::new()));
    assert_eq!(stdout(&out), EXPECTED);
    assert!(stdout(&out).lines().all(|l| l.chars().count() <= 100));
    let agents = ("GET /api/agents HTTP/1.1".to_string(), None);
    assert_eq!(*seen.lock().unwrap(), [agents.clone(), agents, ("GET /api/referrals HTTP/1.1".to_string(), None)]);
}

#[test]
fn top_defaults_to_the_admin_listener_and_credentials_of_the_config() {
    let (addr, seen) = serve(docs());
    let dir = TempDir::new("top-config");
    let secret = dir.write("admin.secret", "admin:s3cret-pass\n");
    let policy = dir.write(
        "policy.toml",
        format!(
            "[server]\nadmin = \"{addr}\"\nadmin_auth_file = \"{}\"\n\n[upstream]\nservers = [\"127.0.0.1:8000\"]\n",
            secret.display()
        ),
    );
    let out = crawlgate(&["top", "--config", arg(&policy), "--once", "--interval", "0.1"]);
    assert_eq!((code(&out), stderr(&out)), (0, String::new()));
    assert_eq!(stdout(&out), EXPECTED);
    // admin:s3cret-pass in Basic.
    let auth = Some("Basic YWRtaW46czNjcmV0LXBhc3M=".to_string());
    let agents = ("GET /api/agents HTTP/1.1".to_string(), auth.clone());
    assert_eq!(*seen.lock().unwrap(), [agents.clone(), agents, ("GET /api/referrals HTTP/1.1".to_string(), auth)]);

    let without = dir.write("none.toml", "[upstream]\nservers = [\"127.0.0.1:8000\"]\n");
    let out = crawlgate(&["top", "--config", arg(&without), "--once"]);
    assert_eq!(code(&out), 2);
    assert_eq!(
        stderr(&out),
        format!(
            "crawlgate: {} sets no server.admin: pass the admin listener's address (host:port)\n",
            without.display()
        )
    );
    let missing = dir.join("missing.toml");
    let out = crawlgate(&["top", "--config", arg(&missing), "--once"]);
    assert_eq!(code(&out), 2);
    assert_eq!(
        stderr(&out),
        format!(
            "crawlgate: no admin address given, so top reads server.admin from the policy file: cannot read policy \
             file {}: No such file or directory (os error 2)\n",
            missing.display()
        )
    );
}
