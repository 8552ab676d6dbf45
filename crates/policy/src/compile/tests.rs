//! Checks across tables: a value published as written refuses a control
//! character at its key, and the file name stays in its comment.

use crate::load;

const UPSTREAM: &str = "[upstream]\nservers = [\"127.0.0.1:8000\"]\n";

fn errors(src: &str) -> String {
    match load(src, "p.toml") {
        Ok(_) => String::from("ok"),
        Err(e) => e.to_string(),
    }
}

/// A value written into a header, a served file, the 429 body or the
/// metrics as it is (or trimmed first, which would hide the character)
/// is refused at its key when it holds a control character.
#[test]
fn control_characters_are_refused_where_written() {
    let key = "[verification]\nstate_dir = \"/s\"\n[[verification.keys]]\ntoken = \"ExampleBot\"\njwk = '{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs\"}'\n";
    let cases: Vec<(String, &str)> = vec![
        (
            format!("{UPSTREAM}[[group]]\nname = \"ai\\r\"\nuser_agents = [\"*\"]\n"),
            "p.toml:4:8: group.name: `ai\\r` contains a control character",
        ),
        (
            format!("{UPSTREAM}tls = true\nsni = \"www.example.com\\r\\nDisallow: /\"\n"),
            "p.toml:4:7: upstream.sni must be a host name, found `www.example.com\\r\\nDisallow: /`",
        ),
        (
            format!("{UPSTREAM}[robots_txt]\norigin = \"merge\"\norigin_host = \"www.example.com#x\"\n"),
            "p.toml:5:15: robots_txt.origin_host must be a host or host:port, found `www.example.com#x`",
        ),
        (
            "[upstream]\nservers = [\"origin\\u0000.internal:80\"]\n".to_string(),
            "p.toml:2:12: upstream.servers: `origin\\0.internal:80` is not host:port",
        ),
        (
            "[upstream]\nservers = [\"https://bücher.example:8443/\"]\n".to_string(),
            "p.toml:2:12: upstream.servers: `https://bücher.example:8443/` is not host:port: drop the scheme (`bücher.example:8443`) and set upstream.tls = true for HTTPS to the origin (write an internationalized host in its ASCII form, xn--...)",
        ),
        (
            format!("{UPSTREAM}sni = \"bücher.example\"\n"),
            "p.toml:3:7: upstream.sni must be a host name, found `bücher.example` (write an internationalized host in its ASCII form, xn--...)",
        ),
        (
            format!("{UPSTREAM}[robots_txt]\ncache_max_age = \"1h\\r\"\n"),
            "p.toml:4:17: robots_txt.cache_max_age: `1h\\r` contains a control character",
        ),
        (
            format!("{UPSTREAM}[robots_txt]\nlicense = \"https://e.example/licencé.xml\"\n"),
            "p.toml:4:11: robots_txt.license: `https://e.example/licencé.xml` contains a non-ASCII character, which the Link header cannot carry (percent-encode the path; write an internationalized host as xn--...)",
        ),
        (
            format!("{UPSTREAM}[[group]]\nuser_agents = [\"*\"]\ncontent_usage = [\"train-ai=n\\r\"]\n"),
            "p.toml:5:18: group.content_usage: `train-ai=n\\r` contains a control character",
        ),
        (
            format!("{UPSTREAM}[[group]]\nuser_agents = [\"*\"]\napp_directives = [\"/x\\tfoo\"]\n"),
            "p.toml:5:19: group.app_directives: `/x\\tfoo` contains a control character",
        ),
        (
            format!("{UPSTREAM}[[group]]\nuser_agents = [\"GPTBot\"]\nrate = \"2/s\\n\"\n"),
            "p.toml:5:8: group.rate: `2/s\\n` contains a control character",
        ),
        (
            format!("{UPSTREAM}{key}[[group]]\nuser_agents = [\"ExampleBot\"]\nenforce = \"charge\"\nprice = \"USD 0.01\\r\"\n"),
            "p.toml:11:9: group.price: `USD 0.01\\r` contains a control character",
        ),
        (
            format!("{UPSTREAM}[[robots_tag]]\npath = \"/\"\nrules = [\"noindex\", \"max-snippet:\\r50\"]\n"),
            "p.toml:5:21: robots_tag.rules: rule `max-snippet:\\r50` contains a control character",
        ),
        (
            format!("{UPSTREAM}[agents_txt]\nrules = [{{ path = \"/a\", action = \"allow\\r\" }}]\n"),
            "p.toml:4:34: agents_txt.rules.action must be allow or disallow, found `allow\\r`",
        ),
        (
            format!("{UPSTREAM}[agents_txt]\nrules = [{{ path = \"/a\", action = \"allow\", params = {{ limit = \"5\\r\" }} }}]\n"),
            "p.toml:4:62: agents_txt.rules.params.limit: `5\\r` contains a control character",
        ),
        (
            format!("{UPSTREAM}[agents_txt]\nrules = [{{ path = \"/a\\u0000\", action = \"allow\" }}]\n"),
            "p.toml:4:10: agents_txt.rules: this rule would make agents.txt fail its verifier: line 1: malformed directive `/a\\0 ALLOW`: path `/a\\0` has characters outside URI syntax",
        ),
        (
            format!("{UPSTREAM}[rsl]\ndocument = \"\"\"\n<rsl>\n  <x>\\u0000</x>\n</rsl>\n\"\"\"\n"),
            "p.toml:4:12: rsl.document: line 2 of the document contains a control character (`\\0`); only tab, CR and LF may appear in the document",
        ),
    ];
    for (src, want) in &cases {
        assert_eq!(errors(src), *want, "{src}");
    }
}

/// The policy file's name is in robots.txt's first comment: a line
/// break in it stays in that comment.
#[test]
fn the_file_name_cannot_add_a_line_to_robots_txt() {
    let loaded = load(UPSTREAM, "/etc/p\nDisallow: x.toml").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        loaded.policy.robots_txt(),
        "# robots.txt generated by crawlgate from p\\nDisallow: x.toml; edit the policy, not this file.\n"
    );
}
