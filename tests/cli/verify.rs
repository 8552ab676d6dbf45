//! `crawlgate verify` and `crawlgate explain --client-ip`: outcomes and
//! evidence from an IP list in a local file (no network).

use crawlgate_e2e::{arg, code, crawlgate, stderr, stdout};
use crawlgate_testkit::TempDir;

/// A policy verifying Googlebot against `<dir>/google.txt` (127.0.0.2/32).
fn setup(on_spoofed: &str) -> (TempDir, String) {
    let dir = TempDir::new("cli-verify");
    let list = dir.write("google.txt", "127.0.0.2/32\n");
    let policy = format!(
        "[upstream]\nservers = [\"127.0.0.1:8000\"]\n\n[verification]\n[verification.lists]\nGooglebot = [\"{}\"]\n\n\
         [[group]]\nuser_agents = [\"*\"]\ndisallow = [\"/private/\"]\n\n\
         [[group]]\nuser_agents = [\"Googlebot\"]\ndisallow = [\"/nogoogle/\", \"/private/\"]\nenforce = \"block\"\nverify = \"ip\"\n{on_spoofed}",
        list.display()
    );
    dir.write("p.toml", policy);
    let list = list.display().to_string();
    (dir, list)
}

fn run(args: &[&str]) -> (i32, String, String) {
    let out = crawlgate(args);
    (code(&out), stdout(&out), stderr(&out))
}

#[test]
fn verify_prints_outcome_and_evidence() {
    let (dir, list) = setup("");
    let p = dir.join("p.toml");
    let c = arg(&p);
    assert_eq!(
        run(&["verify", "-c", c, "127.0.0.2", "-A", "Mozilla/5.0 (compatible; Googlebot/2.1)"]),
        (
            0,
            format!("Googlebot from 127.0.0.2: verified(ip)\n  ip:       verified (list {list} prefix 127.0.0.2/32)\n"),
            String::new()
        )
    );
    assert_eq!(
        run(&["verify", "-c", c, "127.0.0.3"]),
        (
            0,
            "Googlebot from 127.0.0.3: spoofed(ip)\n  ip:       spoofed (in none of the lists)\n".to_string(),
            String::new()
        )
    );
    assert_eq!(
        run(&["verify", "-c", c, "127.0.0.3", "-A", "curl/8.5.0"]),
        (0, "none (no policy token in the User-Agent): nothing to verify\n".to_string(), String::new())
    );
    assert_eq!(
        run(&["verify", "-c", c, "not-an-ip"]),
        (2, String::new(), "crawlgate: `not-an-ip` is not an IP address\n".to_string())
    );
}

#[test]
fn explain_with_client_ip_applies_the_outcome() {
    let (dir, list) = setup("on_spoofed = \"block\"\n");
    let p = dir.join("p.toml");
    let c = arg(&p);
    let ua = "Googlebot/2.1";
    assert_eq!(
        run(&["explain", "-c", c, "-A", ua, "--client-ip", "127.0.0.2", "/nogoogle/x"]).1,
        format!(
            "agent:    Googlebot (catalog: Google, search-engine)\nclient:   127.0.0.2\nverify:   verified(ip)\n  ip:       verified (list {list} prefix 127.0.0.2/32)\ngroup:    Googlebot (line 12)\nenforce:  block\n\n/nogoogle/x: disallowed (Disallow: /nogoogle/ at line 14) -> block (403)\n  reason:   robots\n"
        )
    );
    assert_eq!(
        run(&["explain", "-c", c, "-A", ua, "--client-ip", "127.0.0.3", "/a"]).1,
        "agent:    Googlebot (catalog: Google, search-engine)\nclient:   127.0.0.3\nverify:   spoofed(ip) -> on failure: block\n  ip:       spoofed (in none of the lists)\ngroup:    Googlebot (line 12)\nenforce:  block\n\n/a: allowed (no rule matched) -> block (403)\n  reason:   spoofed (not a robots.txt violation)\n"
    );
    assert_eq!(v_reason(c, ua), (serde_json::json!("spoofed"), serde_json::json!(false)));
    let json = run(&["explain", "-c", c, "-A", ua, "--client-ip", "127.0.0.3", "--json", "/a"]).1;
    let v: serde_json::Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"));
    assert_eq!(
        v[0]["verification"],
        serde_json::json!({"outcome": "spoofed(ip)", "evidence": "in none of the lists", "on_failure": "block", "observed_only": false, "methods": [{"method": "ip", "finding": "spoofed (in none of the lists)"}]})
    );
    assert_eq!(v[0]["client_ip"], "127.0.0.3");
}

/// `check` lists, per verified group, the methods that can prove its
/// crawlers and what a failure does (YandexBot: reverse DNS only, so an
/// unverified claim is anonymous by default).
#[test]
fn check_names_each_groups_methods() {
    let dir = TempDir::new("cli-check-methods");
    dir.write(
        "p.toml",
        "allow_warnings = [\"block-without-trusted-proxies\"]\n\
         [upstream]\nservers = [\"127.0.0.1:8000\"]\n\n[verification]\n\n\
         [[group]]\nuser_agents = [\"*\"]\n\n[[group]]\nuser_agents = [\"YandexBot\"]\n\n\
         [[group]]\nuser_agents = [\"Googlebot\"]\non_unverified = \"block\"\n\n[[group]]\nuser_agents = [\"ClaudeBot\"]\n",
    );
    let p = dir.join("p.toml");
    let (status, out, err) = run(&["check", "-c", arg(&p)]);
    assert_eq!((status, err.as_str()), (0, ""));
    let lines: Vec<&str> = out.lines().skip(1).collect();
    assert_eq!(
        lines,
        [
            "  verify YandexBot: rdns; on_spoofed = anonymous, on_unverified = anonymous",
            "  verify Googlebot: ip, rdns; on_spoofed = anonymous, on_unverified = block",
        ]
    );
}

/// Offline, `explain --client-ip` says which methods it could not run
/// instead of reading their absence as `unverified`: reverse DNS needs a
/// lookup, and the built-in IP lists need a fetch (no copy without a
/// state_dir).
#[test]
fn explain_offline_names_the_methods_it_could_not_run() {
    let dir = TempDir::new("cli-explain-offline");
    let p = dir.write(
        "p.toml",
        "[upstream]\nservers = [\"127.0.0.1:8000\"]\n\n[verification]\n\n[[group]]\nuser_agents = [\"Googlebot\"]\n",
    );
    let (status, out, err) =
        run(&["explain", "-c", arg(&p), "-A", "Googlebot/2.1", "--client-ip", "66.249.66.1", "/x"]);
    assert_eq!((status, err.as_str()), (0, ""));
    assert_eq!(
        out,
        "agent:    Googlebot (catalog: Google, search-engine)\nclient:   66.249.66.1\nverify:   unverified -> on failure: log\n  \
         ip:       not checked offline (lists: no cached copy, no state_dir); --live fetches them\n  \
         rdns:     not checked offline; --live checks it\ngroup:    Googlebot (line 6)\nenforce:  off\n\n\
         /x: allowed (no rule matched) -> pass\n"
    );
}

/// `explain --json`'s `reason` and `violation` for a spoofed Googlebot
/// (client 127.0.0.3) on `/a`, a path its group allows.
fn v_reason(c: &str, ua: &str) -> (serde_json::Value, serde_json::Value) {
    let json = run(&["explain", "-c", c, "-A", ua, "--client-ip", "127.0.0.3", "--json", "/a"]).1;
    let v: serde_json::Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"));
    (v[0]["reason"].clone(), v[0]["violation"].clone())
}

/// A catalog crawler the policy does not name is verified for observation
/// as the running proxy verifies it (`observe_catalog = "verify"`, the
/// default): its outcome is shown and never decided on; `"off"` verifies
/// nothing.
#[test]
fn explain_verifies_an_unnamed_catalog_crawler_as_the_proxy_does() {
    let dir = TempDir::new("cli-explain-observed");
    let list = dir.write("perplexity.txt", "127.0.0.2/32\n");
    let policy = |extra: &str| {
        format!(
            "[upstream]\nservers = [\"127.0.0.1:8000\"]\n\n[verification]\n{extra}[verification.lists]\nPerplexityBot = [\"{}\"]\n\n\
             [[group]]\nuser_agents = [\"*\"]\ndisallow = [\"/private/\"]\n",
            list.display()
        )
    };
    let p = dir.write("p.toml", policy(""));
    let ua = "Mozilla/5.0 (compatible; PerplexityBot/1.0; +https://perplexity.ai/perplexitybot)";
    let head = "agent:    PerplexityBot (catalog: Perplexity, ai-search; not named by the policy: observed only)\n";
    assert_eq!(
        run(&["explain", "-c", arg(&p), "-A", ua, "--client-ip", "127.0.0.3", "/a", "/private/x"]),
        (
            0,
            format!(
                "{head}client:   127.0.0.3\nverify:   spoofed(ip) (observed only: never decided on)\n  \
                 ip:       spoofed (in none of the lists)\ngroup:    * (line 8)\nenforce:  off\n\n\
                 /a: allowed (no rule matched) -> pass\n\
                 /private/x: disallowed (Disallow: /private/ at line 10) -> pass\n"
            ),
            String::new()
        )
    );
    assert_eq!(
        run(&["explain", "-c", arg(&p), "-A", ua, "--client-ip", "127.0.0.2", "/a"]).1,
        format!(
            "{head}client:   127.0.0.2\nverify:   verified(ip) (observed only: never decided on)\n  \
             ip:       verified (list {} prefix 127.0.0.2/32)\ngroup:    * (line 8)\nenforce:  off\n\n\
             /a: allowed (no rule matched) -> pass\n",
            list.display()
        )
    );
    let off = dir.write("off.toml", policy("observe_catalog = \"off\"\n"));
    assert_eq!(
        run(&["explain", "-c", arg(&off), "-A", ua, "--client-ip", "127.0.0.3", "/a"]).1,
        format!(
            "{head}client:   127.0.0.3\nverify:   none\ngroup:    * (line 9)\nenforce:  off\n\n\
             /a: allowed (no rule matched) -> pass\n"
        )
    );
}

/// `explain` says which signature outcome a claim needs, what an
/// unverified one gets (the challenge and its `Accept-Signature`) and what
/// a replayed signature gets; robots.txt is never refused.
#[test]
fn explain_names_the_signature_a_claim_needs_and_what_a_replay_gets() {
    let dir = TempDir::new("cli-explain-signature");
    let p = dir.write(
        "p.toml",
        "[upstream]\nservers = [\"127.0.0.1:8000\"]\n\n[verification]\n[verification.signatures]\nauthorities = [\"www.example.com\"]\n\n\
         [[verification.keys]]\ntoken = \"ExampleBot\"\njwk = '{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs\"}'\n\n\
         [[group]]\nuser_agents = [\"ExampleBot\"]\nverify = \"signature\"\non_unverified = \"challenge\"\n",
    );
    let (status, out, err) = run(&["explain", "-c", arg(&p), "-A", "ExampleBot/1.0", "/x"]);
    assert_eq!((status, err.as_str()), (0, ""));
    assert_eq!(
        out.lines().take(3).collect::<Vec<_>>(),
        [
            "agent:    ExampleBot",
            "signature: needs verified to prove the claim; otherwise a challenge: 403 with Accept-Signature: sig1=(\"@authority\" \"@method\" \"@path\" \"signature-agent\";key=\"sig1\");created;expires;keyid=\"poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U\";alg=\"ed25519\";tag=\"web-bot-auth\"",
            "replay:   429 Too Many Requests (reason=replayed, signature=invalid)",
        ]
    );
    let (_, out, _) = run(&["explain", "-c", arg(&p), "-A", "ExampleBot/1.0", "--json", "/robots.txt"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(v[0]["signature"]["replay"], "served (this file is never refused)");
    // A group signatures cannot prove: no signature lines.
    let (_, out, _) = run(&["explain", "-c", arg(&p), "-A", "Googlebot/2.1", "/x"]);
    assert!(!out.contains("signature:"), "{out}");
}
