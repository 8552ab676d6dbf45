//! `crawlgate agents-txt verify` on files rendered by `crawlgate render
//! agents.txt`, and on tampered, malformed and missing ones.

use std::path::Path;
use std::process::Output;

use crawlgate_e2e::{arg, crawlgate, stderr, stdout};
use crawlgate_testkit::TempDir;

const POLICY: &str = r#"[upstream]
servers = ["127.0.0.1:8000"]

[[group]]
user_agents = ["*"]
disallow = ["/private/"]

[agents_txt]
enabled = true
rules = [
  { path = "/status", action = "allow" },
  { path = "/search", action = "allow", params = { limit = "50" } },
  { path = "/private", action = "disallow" },
]
"#;

/// SHA-256 of "/status ALLOW\n/search ALLOW limit=50\n/private DISALLOW"
/// (computed outside crawlgate).
const HASH: &str = "edd722fa6db677c957e09e8e5cd892a77ef7e6b788b391036078ade7cbc651b1";

/// SHA-256 of the empty string.
const EMPTY_HASH: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

fn verify(file: &Path) -> (i32, String, String) {
    let out: Output = crawlgate(&["agents-txt", "verify", arg(file)]);
    (out.status.code().unwrap_or(-1), stdout(&out), stderr(&out))
}

fn rendered(dir: &TempDir) -> String {
    let policy = dir.write("policy.toml", POLICY);
    let out = crawlgate(&["render", "agents.txt", "--config", arg(&policy)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    stdout(&out)
}

#[test]
fn rendered_agents_txt_verifies() {
    let dir = TempDir::new("agents-valid");
    let text = rendered(&dir);
    assert_eq!(
        text,
        format!("# version: 1.0\n# generated-by: crawlgate\n*{HASH}\n/status ALLOW\n/search ALLOW limit=50\n/private DISALLOW\n")
    );
    let file = dir.write("agents.txt", &text);
    assert_eq!(verify(&file), (0, "valid: 3 directives\n".into(), String::new()));
    // CRLF line endings, blank and comment lines between directives.
    let crlf = dir.write(
        "crlf.txt",
        format!("# c\r\n*{HASH}\r\n\r\n/status ALLOW\r\n# mid\r\n/search ALLOW limit=50\r\n/private DISALLOW"),
    );
    assert_eq!(verify(&crlf), (0, "valid: 3 directives\n".into(), String::new()));
    // No directives: the hash of nothing.
    let empty = dir.write("empty.txt", format!("*{EMPTY_HASH}\n"));
    assert_eq!(verify(&empty), (0, "valid: 0 directives\n".into(), String::new()));
}

#[test]
fn tampered_agents_txt_is_invalid() {
    let dir = TempDir::new("agents-tampered");
    let text = rendered(&dir);
    // A directive changed after hashing.
    let changed = dir.write("changed.txt", text.replace("/private DISALLOW", "/private ALLOW"));
    let want_hash_of_changed = "file says ".to_string() + HASH;
    let (code, out, err) = verify(&changed);
    assert_eq!((code, err.as_str()), (1, ""));
    assert!(out.starts_with(&format!("invalid: hash mismatch: {want_hash_of_changed}, directives hash to ")), "{out}");
    assert!(!out.contains(&format!("directives hash to {HASH}")), "{out}");
    // The hash itself altered.
    let wrong = HASH.replace("edd7", "0dd7");
    let bad_hash = dir.write("bad-hash.txt", text.replace(HASH, &wrong));
    assert_eq!(
        verify(&bad_hash),
        (1, format!("invalid: hash mismatch: file says {wrong}, directives hash to {HASH}\n"), String::new())
    );
    // A directive added.
    let added = dir.write("added.txt", format!("{text}/extra ALLOW\n"));
    let (code, out, _) = verify(&added);
    assert_eq!(code, 1);
    assert!(out.starts_with(&format!("invalid: hash mismatch: file says {HASH}, directives hash to ")), "{out}");
}

#[test]
fn malformed_agents_txt_is_invalid() {
    let dir = TempDir::new("agents-malformed");
    let text = rendered(&dir);
    let cases = [
        (
            text.replace("/search ALLOW limit=50", "/search allow limit=50"),
            "invalid: line 5: malformed directive `/search allow limit=50`: action must be ALLOW or DISALLOW, found `allow`\n",
        ),
        (text.replace("/status ALLOW", "status ALLOW"), "invalid: line 4: malformed directive `status ALLOW`: path must start with '/'\n"),
        (
            text.replace("limit=50", "limit"),
            "invalid: line 5: malformed directive `/search ALLOW limit`: parameter `limit` is not key=value\n",
        ),
        (text.replace("/private DISALLOW", "/private"), "invalid: line 6: malformed directive `/private`: missing action (ALLOW or DISALLOW)\n"),
        (
            text.replace(&format!("*{HASH}"), "*abc"),
            "invalid: line 3: malformed hash line `*abc` (expected `*` and 64 lowercase hex digits)\n",
        ),
        (
            text.replace(&format!("*{HASH}"), &format!("*{}", HASH.to_uppercase())),
            &*format!("invalid: line 3: malformed hash line `*{}` (expected `*` and 64 lowercase hex digits)\n", HASH.to_uppercase()),
        ),
    ];
    for (i, (body, want)) in cases.iter().enumerate() {
        let f = dir.write(&format!("case{i}.txt"), body);
        assert_eq!(verify(&f), (1, want.to_string(), String::new()), "{body}");
    }
}

#[test]
fn missing_hash_line_is_invalid() {
    let dir = TempDir::new("agents-nohash");
    let text = rendered(&dir);
    let want = "invalid: missing hash line (the first non-comment line must be `*` and a SHA-256 hex digest)\n";
    let no_hash = dir.write("nohash.txt", text.replace(&format!("*{HASH}\n"), ""));
    assert_eq!(verify(&no_hash), (1, want.into(), String::new()));
    let comments_only = dir.write("comments.txt", "# version: 1.0\n\n");
    assert_eq!(verify(&comments_only), (1, want.into(), String::new()));
    let empty = dir.write("empty.txt", "");
    assert_eq!(verify(&empty), (1, want.into(), String::new()));
    // Not UTF-8: invalid, not a read error.
    let binary = dir.write("binary.txt", b"*\xff\xfe\n".as_slice());
    assert_eq!(verify(&binary), (1, "invalid: not UTF-8 text (invalid byte at offset 1)\n".into(), String::new()));
}

#[test]
fn missing_agents_txt_is_a_read_error() {
    let dir = TempDir::new("agents-missing");
    let missing = dir.path().join("agents.txt");
    assert_eq!(
        verify(&missing),
        (
            2,
            String::new(),
            format!(
                "crawlgate: cannot read agents.txt file {}: No such file or directory (os error 2)\n",
                missing.display()
            )
        )
    );
    let out = crawlgate(&["agents-txt", "verify"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("Usage: crawlgate agents-txt verify <FILE>"), "{}", stderr(&out));
}
