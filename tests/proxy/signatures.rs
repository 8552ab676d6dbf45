//! Web Bot Auth through the proxy: the signature challenge and the signed
//! retry, a replay, a Signature Agent Card that binds a key to a token, a
//! key directory on a private address refused, and cached keys that
//! outlive their directory; the `signature=` access-log field and
//! `crawlgate_signatures_total`.

use std::net::SocketAddr;
use std::time::Duration;

use crawlgate_e2e::origin::{Origin, Route};
use crawlgate_e2e::proxy::{base_policy, free_port, wait_for, Proxy};
use crawlgate_testkit::wba::{
    card_json, Agent, DirectoryResponse, DirectoryServer, Request, SignOptions, Signer, DEFAULT_AGENT,
};

fn origin() -> Origin {
    Origin::start(vec![
        ("/", Route::ok("text/plain", "home\n")),
        ("/private/x", Route::ok("text/plain", "private x\n")),
    ])
}

/// A proxy in front of `origin` with `rules` after `[verification]`, its
/// signatures bound to the proxy's own address.
fn proxy(origin: &Origin, signatures: &str, rules: &str) -> Proxy {
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap_or_else(|e| panic!("{e}"));
    let admin: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap_or_else(|e| panic!("{e}"));
    let policy = format!(
        "{}[verification]\n\n[verification.signatures]\nauthorities = [\"{addr}\"]\n{signatures}\n{rules}",
        base_policy(addr, admin, origin.addr)
    );
    Proxy::start_with(addr, admin, &policy)
}

fn unix_now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

/// The signature fields of a GET of `path` on `proxy` (`@authority`,
/// `@method`, `@path` covered), as draft-ietf-webbotauth-httpsig-protocol-01
/// makes them: `Signature-Agent` member `sig1` naming the JWKS at
/// `{agent}/jwks.json` (or, without `agent`, a pinned key's
/// `DEFAULT_AGENT`), covered.
fn signed(
    signer: &Signer,
    proxy: &Proxy,
    path: &str,
    created: i64,
    agent: Option<&str>,
) -> Vec<(&'static str, String)> {
    let opts = SignOptions::draft01(created, 60, &jwks(agent.unwrap_or(""), DEFAULT_AGENT));
    signer.sign(&Request::get(&proxy.addr.to_string(), path), &opts).pairs()
}

/// The JWKS URL under the server at `agent`, or `otherwise`.
fn jwks(agent: &str, otherwise: &str) -> String {
    if agent.is_empty() {
        otherwise.to_owned()
    } else {
        format!("{agent}/jwks.json")
    }
}

/// A GET through `proxy`: `(status, Accept-Signature, body)`.
fn send(proxy: &Proxy, path: &str, ua: &str, fields: &[(&str, String)]) -> (u16, Option<String>, String) {
    let client =
        reqwest::blocking::Client::builder().timeout(Duration::from_secs(20)).build().unwrap_or_else(|e| panic!("{e}"));
    let mut req = client.get(proxy.url(path)).header("User-Agent", ua);
    for (name, value) in fields {
        req = req.header(*name, value);
    }
    let resp = req.send().unwrap_or_else(|e| panic!("GET {path}: {e}"));
    let status = resp.status().as_u16();
    let accept = resp.headers().get("accept-signature").and_then(|v| v.to_str().ok()).map(str::to_owned);
    (status, accept, resp.text().unwrap_or_default())
}

/// The access lines of `path`, once there are `n`.
fn lines(proxy: &Proxy, path: &str, n: usize) -> Vec<String> {
    let needle = format!(" path={path} ");
    wait_for(&format!("{n} access lines for {path}"), Duration::from_secs(10), || {
        let l: Vec<String> =
            proxy.log().lines().filter(|l| l.starts_with("time=") && l.contains(&needle)).map(str::to_owned).collect();
        (l.len() >= n).then_some(l)
    })
}

const BROWSER_UA: &str = "Mozilla/5.0 Firefox/130.0";

/// `on_unverified = "challenge"`: an unsigned ExampleBot gets 403 with
/// `Accept-Signature` naming the required components, its pinned key and
/// `tag="web-bot-auth"`; the signed retry passes; the same signature again
/// is a replay (429). robots.txt is never challenged.
#[test]
fn challenge_then_signed_retry_then_replay() {
    let signer = Signer::from_seed(31);
    let origin = origin();
    let rules = format!(
        "[[verification.keys]]\ntoken = \"ExampleBot\"\njwk = '{}'\n\n\
         [[group]]\nuser_agents = [\"*\"]\n\n\
         [[group]]\nuser_agents = [\"ExampleBot\"]\nverify = \"signature\"\non_unverified = \"challenge\"\n",
        signer.jwk()
    );
    let proxy = proxy(&origin, "", &rules);
    let accept = format!(
        "sig1=(\"@authority\" \"@method\" \"@path\" \"signature-agent\";key=\"sig1\");created;expires;keyid=\"{}\";alg=\"ed25519\";tag=\"web-bot-auth\"",
        signer.keyid()
    );
    assert_eq!(
        send(&proxy, "/", "ExampleBot/1.0", &[]),
        (
            403,
            Some(accept.clone()),
            format!("403 Forbidden\n\nThis request claims to be ExampleBot, and this site asks ExampleBot to prove it with a Web Bot Auth signature (HTTP Message Signatures, RFC 9421): sign the request as Accept-Signature asks and send it again.\nAccept-Signature: {accept}\n")
        )
    );
    let fields = signed(&signer, &proxy, "/", unix_now() - 5, None);
    assert_eq!(send(&proxy, "/", "ExampleBot/1.0", &fields), (200, None, "home\n".into()));
    assert_eq!(send(&proxy, "/", "ExampleBot/1.0", &fields).0, 429);
    assert_eq!(send(&proxy, "/robots.txt", "ExampleBot/1.0", &[]).0, 200);
    let l = lines(&proxy, "/", 3);
    assert!(
        l[0].contains(" status=403 ")
            && l[0].contains(" agent=ExampleBot verification=unverified ")
            && l[0].contains(" decision=block reason=unverified ")
            && !l[0].contains(" signature="),
        "{}",
        l[0]
    );
    assert!(
        l[1].contains(" status=200 ")
            && l[1].contains(" verification=verified(signature) ")
            && l[1].ends_with(" signature=verified"),
        "{}",
        l[1]
    );
    assert!(
        l[2].contains(" status=429 ") && l[2].contains(" reason=replayed ") && l[2].ends_with(" signature=replayed"),
        "{}",
        l[2]
    );
    assert_eq!(proxy.metric("crawlgate_signatures_total{outcome=\"verified\"}"), Some("1".into()));
    assert_eq!(proxy.metric("crawlgate_signatures_total{outcome=\"replayed\"}"), Some("1".into()));
    assert_eq!(proxy.metric("crawlgate_signatures_total{outcome=\"invalid\"}"), Some("0".into()));
    assert_eq!(proxy.metric("crawlgate_blocks_total{agent=\"ExampleBot\",reason=\"unverified\"}"), Some("1".into()));
    // The admin page and /status show the outcomes.
    let get = |path: &str| {
        reqwest::blocking::get(proxy.admin_url(path)).and_then(|r| r.text()).unwrap_or_else(|e| panic!("{path}: {e}"))
    };
    let page = get("/");
    assert!(
        page.contains("<h3>Web Bot Auth signatures</h3><p id=\"signatures\">verified <span id=\"sig-verified\">1</span> · legacy <span id=\"sig-legacy\">0</span> · invalid <span id=\"sig-invalid\">0</span> · expired <span id=\"sig-expired\">0</span> · unknown_bot <span id=\"sig-unknown_bot\">0</span> · replayed <span id=\"sig-replayed\">1</span></p>"),
        "{page}"
    );
    let status: serde_json::Value = serde_json::from_str(&get("/status")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        status["signatures"],
        serde_json::json!({"verified": 1, "legacy": 0, "invalid": 0, "expired": 0, "unknown_bot": 0, "replayed": 1})
    );
    // In a real browser, after its script refreshed the page: the same
    // counts, and the page still fits a 1280 px window.
    if let Some(bin) = crate::dashboard::chromium() {
        let profile = crawlgate_testkit::TempDir::new("chromium-signatures");
        let dom = crate::dashboard::run_chromium(
            &bin,
            &profile,
            &["--virtual-time-budget=5000", "--window-size=1280,1400", "--dump-dom", &proxy.admin_url("/")],
        );
        assert!(dom.contains("data-live=\"1\""), "the script did not refresh the page:\n{dom}");
        assert!(
            dom.contains("verified <span id=\"sig-verified\">1</span> · legacy <span id=\"sig-legacy\">0</span> · invalid <span id=\"sig-invalid\">0</span> · expired <span id=\"sig-expired\">0</span> · unknown_bot <span id=\"sig-unknown_bot\">0</span> · replayed <span id=\"sig-replayed\">1</span>"),
            "{dom}"
        );
        let width = dom.split("data-scroll-width=\"").nth(1).and_then(|v| v.split('"').next()).unwrap_or_default();
        assert!(width.parse::<u32>().is_ok_and(|w| w <= 1280), "document width {width}");
    }
}

const OPEN_DIRECTORIES: &str = "allow_http_directories = true\nany_directory_host = true\n";

/// GPTBot may not fetch /private/; ClaudeBot may, but a spoofed ClaudeBot
/// is blocked.
const CARD_RULES: &str = "[[group]]\nuser_agents = [\"*\"]\n\n\
     [[group]]\nuser_agents = [\"GPTBot\"]\ndisallow = [\"/private/\"]\nenforce = \"block\"\nblock_status = 451\nverify = \"signature\"\n\n\
     [[group]]\nuser_agents = [\"ClaudeBot\"]\nverify = \"signature\"\non_spoofed = \"block\"\n";

/// A key whose card names GPTBot identifies the request as GPTBot whatever
/// its User-Agent says; a User-Agent claiming another token is
/// `spoofed(signature)`; once fetched, the keys outlive their directory.
#[test]
fn a_card_binds_its_key_to_a_token_and_cached_keys_outlive_the_directory() {
    let signer = Signer::from_seed(32);
    let server = DirectoryServer::start(DirectoryResponse::ok(card_json(
        &[&signer],
        r#""rfc9309-product-token":"GPTBot","expected-user-agent":"GPTBot""#,
    )));
    let agent = server.agent_url();
    let origin = origin();
    let proxy = proxy(&origin, &(OPEN_DIRECTORIES.to_owned() + "allow_private_directories = true\n"), CARD_RULES);
    let path = "/private/x";
    let first = signed(&signer, &proxy, path, unix_now() - 5, Some(&agent));
    assert_eq!(send(&proxy, path, BROWSER_UA, &first).0, 451);
    assert_eq!(server.hits(), 1);
    let claude = signed(&signer, &proxy, path, unix_now() - 4, Some(&agent));
    assert_eq!(send(&proxy, path, "ClaudeBot/1.0", &claude).0, 403);
    drop(server);
    let later = signed(&signer, &proxy, path, unix_now() - 3, Some(&agent));
    assert_eq!(send(&proxy, path, "Mozilla/5.0 GPTBot/1.2", &later).0, 451);
    let l = lines(&proxy, path, 3);
    let keyid = signer.keyid();
    assert!(
        l[0].contains(&format!(
            " agent=GPTBot verification=verified(signature) evidence=\"keyid {keyid}; the User-Agent lacks the card's expected-user-agent \\\"GPTBot\\\"\" group=GPTBot decision=block reason=robots "
        )) && l[0].ends_with(" signature=verified"),
        "{}",
        l[0]
    );
    assert!(
        l[1].contains(&format!(
            " agent=ClaudeBot verification=spoofed(signature) evidence=\"keyid {keyid} speaks for GPTBot\" group=ClaudeBot decision=block reason=spoofed "
        )) && l[1].ends_with(" signature=invalid"),
        "{}",
        l[1]
    );
    assert!(
        l[2].contains(&format!(" agent=GPTBot verification=verified(signature) evidence=\"keyid {keyid}\" "))
            && l[2].ends_with(" signature=verified"),
        "{}",
        l[2]
    );
}

/// Without `allow_private_directories`, a `Signature-Agent` on a loopback
/// address is never contacted: the key is unknown, the signature
/// unverified.
#[test]
fn a_directory_on_a_private_address_is_refused() {
    let signer = Signer::from_seed(33);
    let server =
        DirectoryServer::start(DirectoryResponse::ok(card_json(&[&signer], r#""rfc9309-product-token":"GPTBot""#)));
    let agent = server.agent_url();
    let origin = origin();
    let proxy = proxy(&origin, OPEN_DIRECTORIES, CARD_RULES);
    let fields = signed(&signer, &proxy, "/private/x", unix_now() - 5, Some(&agent));
    assert_eq!(send(&proxy, "/private/x", BROWSER_UA, &fields), (200, None, "private x\n".into()));
    assert_eq!(server.hits(), 0);
    let l = lines(&proxy, "/private/x", 1);
    assert!(
        l[0].contains(&format!(
            " verification=unverified evidence=\"unknown key: Signature-Agent \\\"{agent}/jwks.json\\\": 127.0.0.1 is not a public address; directory not fetched\" group=* "
        )) && l[0].ends_with(" signature=unknown_bot"),
        "{}",
        l[0]
    );
    assert_eq!(proxy.metric("crawlgate_signatures_total{outcome=\"unknown_bot\"}"), Some("1".into()));
}

/// A card's `ips_uri` is one more IP list for the token it binds: once the
/// card was fetched (a signed request), an unsigned claim from a listed
/// address is `verified(ip)` and one from another address `spoofed(ip)`.
#[test]
fn a_cards_ips_uri_is_one_more_ip_list_for_its_token() {
    let signer = Signer::from_seed(34);
    let list = DirectoryServer::start(DirectoryResponse {
        content_type: "text/plain".into(),
        cache_control: None,
        ..DirectoryResponse::ok("# card list\n127.0.0.1/32\n".into())
    });
    let list_url = format!("http://{}/ips.txt", list.addr());
    let card = DirectoryServer::start(DirectoryResponse::ok(card_json(
        &[&signer],
        &format!(r#""rfc9309-product-token":"ExampleBot","ips_uri":"{list_url}""#),
    )));
    let origin = origin();
    let rules = "[[group]]\nuser_agents = [\"*\"]\n\n[[group]]\nuser_agents = [\"ExampleBot\"]\nverify = \"any\"\n";
    let proxy = proxy(&origin, &(OPEN_DIRECTORIES.to_owned() + "allow_private_directories = true\n"), rules);
    assert_eq!(send(&proxy, "/", "ExampleBot/1.0", &[]).0, 200);
    let fields = signed(&signer, &proxy, "/", unix_now() - 5, Some(&card.agent_url()));
    assert_eq!(send(&proxy, "/", BROWSER_UA, &fields).0, 200);
    assert_eq!(card.hits(), 1);
    // The card's list is fetched in the background.
    // (Probed on another path, so the lines of `/` stay four.)
    wait_for("the card's IP list to be in use", Duration::from_secs(10), || {
        send(&proxy, "/private/x", "ExampleBot/1.0", &[]);
        proxy
            .log()
            .lines()
            .any(|l| l.contains(" path=/private/x ") && l.contains(" verification=verified(ip) "))
            .then_some(())
    });
    assert_eq!(list.hits(), 1);
    assert_eq!(send(&proxy, "/", "ExampleBot/1.0", &[]).0, 200);
    let from_other = reqwest::blocking::Client::builder()
        .local_address(std::net::IpAddr::from([127, 0, 0, 2]))
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let resp = from_other.get(proxy.url("/")).header("User-Agent", "ExampleBot/1.0").send();
    assert_eq!(resp.map(|r| r.status().as_u16()).ok(), Some(200));
    let l = lines(&proxy, "/", 4);
    assert!(l[0].contains(" agent=ExampleBot verification=unverified "), "{}", l[0]);
    assert!(l[1].contains(" agent=ExampleBot verification=verified(signature) "), "{}", l[1]);
    assert!(
        l[2].contains(&format!(
            " agent=ExampleBot verification=verified(ip) evidence=\"list {list_url} prefix 127.0.0.1/32\" "
        )),
        "{}",
        l[2]
    );
    assert!(
        l[3].contains(" client_ip=127.0.0.2 ")
            && l[3].contains(" verification=spoofed(ip) evidence=\"in none of the lists\" group=* "),
        "{}",
        l[3]
    );
}

/// A directory whose response signature does not verify is not trusted:
/// its keys prove nothing, and the access line says why.
#[test]
fn a_directory_with_a_bad_response_signature_is_not_trusted() {
    let signer = Signer::from_seed(35);
    let now = unix_now();
    let (input, signature) = signer.sign_directory("elsewhere.example", now - 5, now + 300);
    let server = DirectoryServer::start(DirectoryResponse {
        headers: vec![("Signature-Input".into(), input), ("Signature".into(), signature)],
        ..DirectoryResponse::ok(card_json(&[&signer], r#""rfc9309-product-token":"GPTBot""#))
    });
    let agent = server.agent_url();
    let origin = origin();
    let proxy = proxy(&origin, &(OPEN_DIRECTORIES.to_owned() + "allow_private_directories = true\n"), CARD_RULES);
    let fields = signed(&signer, &proxy, "/private/x", now - 5, Some(&agent));
    // Not GPTBot's 451: the `*` group's answer.
    assert_eq!(send(&proxy, "/private/x", BROWSER_UA, &fields), (200, None, "private x\n".into()));
    let l = lines(&proxy, "/private/x", 1);
    assert!(
        l[0].contains(&format!(
            " verification=unverified evidence=\"unknown key: {agent}/jwks.json: the directory's response signature is invalid, not trusted: directory signature binding0 does not verify with key {}\" ",
            signer.keyid()
        )) && l[0].ends_with(" signature=unknown_bot"),
        "{}",
        l[0]
    );
}

/// Signature fields that cannot be parsed: 400 with the reason for a claim
/// of a group that verifies by signature only; elsewhere (a group verified
/// by any method, a browser) the request goes on and its signature is
/// counted `invalid`. A Signature-Input without its Signature is
/// malformed too; a wrong but well-formed signature is not a 400.
#[test]
fn unparsable_signature_fields_get_400_where_a_signature_is_required() {
    let signer = Signer::from_seed(33);
    let origin = origin();
    let rules = format!(
        "[[verification.keys]]\ntoken = \"ExampleBot\"\njwk = '{}'\n\n\
         [[group]]\nuser_agents = [\"*\"]\n\n\
         [[group]]\nuser_agents = [\"ExampleBot\"]\nverify = \"signature\"\n\n\
         [[group]]\nuser_agents = [\"OtherBot\"]\nverify = \"any\"\n",
        signer.jwk()
    );
    let proxy = proxy(&origin, "", &rules);
    let good = signed(&signer, &proxy, "/", unix_now() - 5, None);
    let input = good
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("signature-input"))
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    assert!(input.contains("tag=\"web-bot-auth\""), "{input}");
    let garbage = vec![("signature-input", "sig1=(((".to_owned()), ("signature", "sig1=:AAAA:".to_owned())];
    let no_signature = vec![("signature-input", input.clone())];
    let text_signature = vec![("signature-input", input.clone()), ("signature", "sig1=\"text\"".to_owned())];
    let wrong_bytes = vec![("signature-input", input), ("signature", format!("sig1=:{}:", "A".repeat(86) + "=="))];
    let prefix = "400 Bad Request: the Signature / Signature-Input header fields cannot be parsed (RFC 9421 section 4, RFC 9651): ";
    // (User-Agent, signature fields, status, the 400's reason)
    type Case<'a> = (&'a str, &'a Vec<(&'a str, String)>, u16, Option<&'a str>);
    let cases: [Case; 6] = [
        ("ExampleBot/1.0", &garbage, 400, Some("Signature-Input is not a structured-field dictionary: ")),
        (
            "ExampleBot/1.0",
            &no_signature,
            400,
            Some("Signature-Input has a web-bot-auth signature but there is no Signature header"),
        ),
        ("ExampleBot/1.0", &text_signature, 400, Some("Signature sig1 is not a byte sequence")),
        ("ExampleBot/1.0", &wrong_bytes, 200, None),
        ("OtherBot/1.0", &garbage, 200, None),
        (BROWSER_UA, &garbage, 200, None),
    ];
    for (i, (ua, fields, status, reason)) in cases.iter().enumerate() {
        let (got, _, body) = send(&proxy, "/", ua, fields);
        assert_eq!(got, *status, "case {i}: {body}");
        match reason {
            Some(r) => assert!(body.starts_with(&format!("{prefix}{r}")) && body.ends_with('\n'), "case {i}: {body}"),
            None => assert_eq!(body, "home\n", "case {i}"),
        }
    }
    let l = lines(&proxy, "/", cases.len());
    for (i, line) in l.iter().enumerate() {
        assert!(line.ends_with(" signature=invalid"), "case {i}: {line}");
        assert_eq!(line.contains(" reason=bad-request "), cases[i].2 == 400, "case {i}: {line}");
    }
    assert!(
        l[0].contains(" evidence=\"unparsable signature: Signature-Input is not a structured-field dictionary"),
        "{}",
        l[0]
    );
    assert!(l[3].contains(" evidence=\"invalid signature: "), "{}", l[3]);
    assert_eq!(proxy.metric("crawlgate_signatures_total{outcome=\"invalid\"}"), Some(cases.len().to_string()));
    // The rules stay readable: robots.txt is served whatever the fields.
    let (got, _, body) = send(&proxy, "/robots.txt", "ExampleBot/1.0", &garbage);
    assert_eq!(got, 200, "{body}");
    assert!(body.contains("User-agent: ExampleBot"), "{body}");
}

/// Whether signature fields are unparsable, and the reason the 400 gives,
/// do not depend on the order of the `Signature-Input` members: a member
/// of an unknown key next to one that cannot be parsed is a 400 for a
/// group that verifies by signature only, whichever comes first.
#[test]
fn unparsable_members_get_400_in_either_order() {
    let (known, stranger) = (Signer::from_seed(34), Signer::from_seed(35));
    let origin = origin();
    let rules = format!(
        "[[verification.keys]]\ntoken = \"ExampleBot\"\njwk = '{}'\n\n\
         [[group]]\nuser_agents = [\"*\"]\n\n\
         [[group]]\nuser_agents = [\"ExampleBot\"]\nverify = \"signature\"\n",
        known.jwk()
    );
    let proxy = proxy(&origin, "", &rules);
    let field = |fields: &[(&str, String)], name: &str| {
        fields.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone()).unwrap_or_default()
    };
    let unknown = signed(&stranger, &proxy, "/", unix_now() - 5, None);
    let (ui, us) = (field(&unknown, "signature-input"), field(&unknown, "signature"));
    let ua = field(&unknown, "signature-agent");
    let bad = r#"bad=("@authority");tag="web-bot-auth";keyid=1;created=1;expires=2"#;
    let unknown_first = vec![
        ("signature-input", format!("{ui}, {bad}")),
        ("signature", format!("{us}, bad=:AAAA:")),
        ("signature-agent", ua.clone()),
    ];
    let bad_first = vec![
        ("signature-input", format!("{bad}, {ui}")),
        ("signature", format!("bad=:AAAA:, {us}")),
        ("signature-agent", ua.clone()),
    ];
    let unknown_only = vec![("signature-input", ui.clone()), ("signature", us.clone()), ("signature-agent", ua)];
    let prefix = "400 Bad Request: the Signature / Signature-Input header fields cannot be parsed (RFC 9421 section 4, RFC 9651): ";
    // (signature fields, status, the start of the 400's reason)
    type Case<'a> = (&'a Vec<(&'a str, String)>, u16, Option<&'a str>);
    let cases: [Case; 3] = [
        (&unknown_first, 400, Some("Signature-Input bad: keyid is not a string")),
        (&bad_first, 400, Some("Signature-Input bad: keyid is not a string")),
        // A verify = "signature" group asks an unknown key for a
        // signature it can check (403 with Accept-Signature).
        (&unknown_only, 403, None),
    ];
    for (i, (fields, status, reason)) in cases.iter().enumerate() {
        let (got, _, body) = send(&proxy, "/", "ExampleBot/1.0", fields);
        assert_eq!(got, *status, "case {i}: {body}");
        match reason {
            Some(r) => assert_eq!(body, format!("{prefix}{r}\n"), "case {i}"),
            None => {
                assert!(body.starts_with("403 Forbidden\n\nThis request claims to be ExampleBot"), "case {i}: {body}")
            }
        }
    }
    let l = lines(&proxy, "/", cases.len());
    assert!(l[0].ends_with(" signature=invalid") && l[1].ends_with(" signature=invalid"), "{l:?}");
    assert!(l[2].ends_with(" signature=unknown_bot"), "{}", l[2]);
}

/// draft-ietf-webbotauth-httpsig-protocol-01 through the real proxy: a
/// `verify = "signature"` group asks an unsigned claim for a signature
/// (403 with `Accept-Signature` naming its components and its own
/// `Signature-Agent` member); a signer written from -01 (dictionary
/// member naming a JWKS URL, thumbprint keyid, tag, the member covered)
/// is `verified`; the same signature again `replayed` (429); the legacy
/// origin-only value `legacy`; an expired one `expired`; one without
/// `Signature-Agent` `invalid`; an unknown key `unknown_bot`; a
/// `Signature-Agent` that does not parse a 400. Each outcome is on the
/// access line and in `crawlgate_signatures_total`.
#[test]
fn draft01_outcomes_through_the_proxy() {
    let signer = Signer::from_seed(40);
    let server =
        DirectoryServer::start(DirectoryResponse::ok(card_json(&[&signer], r#""rfc9309-product-token":"ExampleBot""#)));
    let origin = origin();
    let rules =
        "[[group]]\nuser_agents = [\"*\"]\n\n[[group]]\nuser_agents = [\"ExampleBot\"]\nverify = \"signature\"\n";
    let proxy = proxy(&origin, &(OPEN_DIRECTORIES.to_owned() + "allow_private_directories = true\n"), rules);
    let now = unix_now();
    let url = jwks(&server.agent_url(), "");
    let sign = |signer: &Signer, o: SignOptions| signer.sign(&Request::get(&proxy.addr.to_string(), "/"), &o).pairs();
    let ua = "ExampleBot/1.0";

    let accept = "sig1=(\"@authority\" \"@method\" \"@path\" \"signature-agent\";key=\"sig1\");created;expires;alg=\"ed25519\";tag=\"web-bot-auth\"";
    let (status, got_accept, _) = send(&proxy, "/", ua, &[]);
    assert_eq!((status, got_accept.as_deref()), (403, Some(accept)));
    let fields = sign(&signer, SignOptions::draft01(now - 5, 60, &url));
    assert_eq!(send(&proxy, "/", ua, &fields), (200, None, "home\n".into()));
    assert_eq!(send(&proxy, "/", ua, &fields).0, 429);
    let mut legacy = SignOptions::draft01(now - 4, 60, &url);
    legacy.agent = Some(Agent::Member { key: "sig1".into(), url: server.agent_url() });
    assert_eq!(send(&proxy, "/", ua, &sign(&signer, legacy)), (200, None, "home\n".into()));
    // Expired and invalid claims are spoofed: served as the `*` group.
    assert_eq!(send(&proxy, "/", ua, &sign(&signer, SignOptions::draft01(now - 400, 60, &url))).0, 200);
    let mut no_agent = SignOptions::draft01(now - 3, 60, &url);
    no_agent.agent = None;
    assert_eq!(send(&proxy, "/", ua, &sign(&signer, no_agent)).0, 200);
    let stranger = sign(&Signer::from_seed(41), SignOptions::draft01(now - 2, 60, &url));
    assert_eq!(send(&proxy, "/", ua, &stranger).0, 403);
    let mut unparsable = sign(&signer, SignOptions::draft01(now - 1, 60, &url));
    unparsable.retain(|(n, _)| !n.eq_ignore_ascii_case("signature-agent"));
    unparsable.push(("Signature-Agent", "https://no.quotes.example/jwks".into()));
    let (status, _, body) = send(&proxy, "/", ua, &unparsable);
    assert_eq!(
        (status, body.as_str()),
        (
            400,
            "400 Bad Request: the Signature / Signature-Input header fields cannot be parsed (RFC 9421 section 4, RFC 9651): Signature-Agent is neither a dictionary nor a string (found a token)\n"
        )
    );
    let l = lines(&proxy, "/", 8);
    let want = [
        (403, None),
        (200, Some("verified")),
        (429, Some("replayed")),
        (200, Some("legacy")),
        (200, Some("expired")),
        (200, Some("invalid")),
        (403, Some("unknown_bot")),
        (400, Some("invalid")),
    ];
    for (i, (status, outcome)) in want.iter().enumerate() {
        let line = &l[i];
        assert!(line.contains(&format!(" status={status} ")), "line {i}: {line}");
        match outcome {
            Some(o) => assert!(line.ends_with(&format!(" signature={o}")), "line {i}: {line}"),
            None => assert!(!line.contains(" signature="), "line {i}: {line}"),
        }
    }
    for (outcome, n) in
        [("verified", 1), ("legacy", 1), ("invalid", 2), ("expired", 1), ("unknown_bot", 1), ("replayed", 1)]
    {
        let metric = format!("crawlgate_signatures_total{{outcome=\"{outcome}\"}}");
        assert_eq!(proxy.metric(&metric), Some(n.to_string()), "{outcome}");
    }
}
