//! Cases from Google's `robots_test.cc` and issue 36, as tables.

use super::*;

fn allowed(robots: &str, agent: &str, url: &str) -> bool {
    GoogleRobots::parse(robots.as_bytes()).is_allowed(agent, url)
}

#[test]
fn issue_36_mj12bot_reads_as_mj() {
    let r = "User-agent: MJ12bot\nDisallow: /\n";
    assert!(allowed(r, "MJ12bot", "https://e.example/x"));
    assert!(!allowed(r, "MJ", "https://e.example/x"));
    assert!(!allowed(r, "mj", "/x"));
}

#[test]
fn robots_test_cc_cases() {
    // (robots.txt, agent, url, allowed)
    let table: &[(&str, &str, &str, bool)] = &[
        // ID_LineSyntax_Line
        ("user-agent: FooBot\ndisallow: /\n", "FooBot", "http://foo.bar/x/y", false),
        ("foo: FooBot\nbar: /\n", "FooBot", "http://foo.bar/x/y", true),
        ("user-agent FooBot\ndisallow /\n", "FooBot", "http://foo.bar/x/y", false),
        // Groups
        ("allow: /foo/bar/\n\nuser-agent: FooBot\ndisallow: /\nallow: /x/\nuser-agent: BarBot\ndisallow: /\nallow: /y/\n\n\nallow: /w/\nuser-agent: BazBot\n\nuser-agent: FooBot\nallow: /z/\ndisallow: /\n", "FooBot", "http://foo.bar/x/b", true),
        ("allow: /foo/bar/\n\nuser-agent: FooBot\ndisallow: /\nallow: /x/\nuser-agent: BarBot\ndisallow: /\nallow: /y/\n\n\nallow: /w/\nuser-agent: BazBot\n\nuser-agent: FooBot\nallow: /z/\ndisallow: /\n", "FooBot", "http://foo.bar/z/d", true),
        ("allow: /foo/bar/\n\nuser-agent: FooBot\ndisallow: /\nallow: /x/\nuser-agent: BarBot\ndisallow: /\nallow: /y/\n\n\nallow: /w/\nuser-agent: BazBot\n\nuser-agent: FooBot\nallow: /z/\ndisallow: /\n", "FooBot", "http://foo.bar/y/c", false),
        ("allow: /foo/bar/\n\nuser-agent: FooBot\ndisallow: /\nallow: /x/\nuser-agent: BarBot\ndisallow: /\nallow: /y/\n\n\nallow: /w/\nuser-agent: BazBot\n\nuser-agent: FooBot\nallow: /z/\ndisallow: /\n", "BazBot", "http://foo.bar/z/d", true),
        ("allow: /foo/bar/\n\nuser-agent: FooBot\ndisallow: /\nallow: /x/\nuser-agent: BarBot\ndisallow: /\nallow: /y/\n\n\nallow: /w/\nuser-agent: BazBot\n\nuser-agent: FooBot\nallow: /z/\ndisallow: /\n", "QuxBot", "http://foo.bar/foo/bar/", true),
        // Groups separated by other records
        ("User-agent: BarBot\nSitemap: https://foo.bar/sitemap\nUser-agent: *\nDisallow: /\n", "BarBot", "http://foo.bar/", false),
        // Case of keys and agents
        ("USER-AGENT: FooBot\nALLOW: /x/\nDISALLOW: /\n", "FooBot", "http://foo.bar/a/b", false),
        ("user-agent: FOOBOT\nallow: /x/\ndisallow: /\n", "FooBot", "http://foo.bar/x/y", true),
        // Agent cut in the file; asker as given
        ("User-Agent: foo bar\nDisallow: /\n", "foo", "http://foo.bar/x", false),
        ("User-Agent: foo bar\nDisallow: /\n", "foo bar", "http://foo.bar/x", true),
        ("User-Agent: *\nDisallow: /\n", "Foo/1.0", "http://foo.bar/", false),
        ("User-Agent: * baz\nDisallow: /\n", "Foo", "http://foo.bar/", false),
        // Global group hidden by a specific one, even empty
        ("user-agent: *\ndisallow: /\nuser-agent: FooBot\n", "FooBot", "http://foo.bar/x", true),
        ("user-agent: *\ndisallow: /x/\nuser-agent: FooBot\nallow: /\n", "FooBot", "http://foo.bar/x/y", true),
        // Longest match, allow on ties
        ("user-agent: FooBot\ndisallow: /x/page.html\nallow: /x/page.\n", "FooBot", "http://foo.bar/x/page.html", false),
        ("user-agent: FooBot\nallow: /page\ndisallow: /*.html\n", "FooBot", "http://foo.bar/page.html", false),
        ("user-agent: FooBot\nallow: /page\ndisallow: /*.html\n", "FooBot", "http://foo.bar/page", true),
        ("user-agent: FooBot\nallow: /x/page.\ndisallow: /x/page.html\n", "FooBot", "http://foo.bar/x/page.html", false),
        ("user-agent: FooBot\nallow: /folder\ndisallow: /folder\n", "FooBot", "http://foo.bar/folder/page", true),
        ("user-agent: FooBot\nallow: /\ndisallow: /\n", "FooBot", "http://foo.bar/", true),
        ("user-agent: FooBot\nallow: /$\ndisallow: /\n", "FooBot", "http://foo.bar/", true),
        ("user-agent: FooBot\nallow: /$\ndisallow: /\n", "FooBot", "http://foo.bar/x", false),
        // Encoding
        ("User-agent: FooBot\nDisallow: /\nAllow: /foo/bar?qux=taz&baz=http://foo.bar?tar&par\n", "FooBot", "http://foo.bar/foo/bar?qux=taz&baz=http://foo.bar?tar&par", true),
        ("User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/ツ\n", "FooBot", "http://foo.bar/foo/bar/%E3%83%84", true),
        ("User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/ツ\n", "FooBot", "http://foo.bar/foo/bar/ツ", false),
        ("User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%E3%83%84\n", "FooBot", "http://foo.bar/foo/bar/%E3%83%84", true),
        ("User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%62%61%7A\n", "FooBot", "http://foo.bar/foo/bar/baz", false),
        ("User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%62%61%7A\n", "FooBot", "http://foo.bar/foo/bar/%62%61%7A", true),
        // Special characters
        ("User-agent: FooBot\nDisallow: /foo/bar/quz\nAllow: /foo/*/qux\n", "FooBot", "http://foo.bar/foo/bar/quz", false),
        ("User-agent: FooBot\nDisallow: /foo/bar/quz\nAllow: /foo/*/qux\n", "FooBot", "http://foo.bar/foo/quz", true),
        ("User-agent: FooBot\nDisallow: /foo/bar$\nAllow: /foo/bar/qux\n", "FooBot", "http://foo.bar/foo/bar", false),
        ("User-agent: FooBot\nDisallow: /foo/bar$\nAllow: /foo/bar/qux\n", "FooBot", "http://foo.bar/foo/bar/baz", true),
        ("User-agent: FooBot\n# Disallow: /\nDisallow: /foo/quz#qux\nAllow: /\n", "FooBot", "http://foo.bar/foo/quz", false),
        // Index.html
        ("User-Agent: *\nAllow: /allowed-slash/index.html\nDisallow: /\n", "foobot", "http://foo.com/allowed-slash/", true),
        ("User-Agent: *\nAllow: /allowed-slash/index.html\nDisallow: /\n", "foobot", "http://foo.com/allowed-slash/index.htm", false),
        ("User-Agent: *\nAllow: /allowed-slash/index.html\nDisallow: /\n", "foobot", "http://foo.com/anyother-url", false),
        // Typos and prefixes of keys
        ("useragent: FooBot\ndisalow: /\n", "FooBot", "/x", false),
        ("user agent: FooBot\ndissallow: /\n", "FooBot", "/x", false),
        ("user-agents: FooBot\ndisallowed: /\n", "FooBot", "/x", false),
        ("user-agent: FooBot\ndiasllow: /\n", "FooBot", "/x", false),
        ("user-agent: FooBot\ndisallaw: /\n", "FooBot", "/x", false),
        ("user-agent: FooBot\ndissalow: /\n", "FooBot", "/x", false),
        ("user_agent: FooBot\ndisallow: /\n", "FooBot", "/x", true),
        // Line endings, BOM, NUL
        ("User-Agent: foo\r\nAllow: /some/path\r\nUser-Agent: bar\r\n\r\n\r\nDisallow: /\r\n", "bar", "http://foo.bar/x", false),
        ("User-Agent: foo\rAllow: /some/path\rUser-Agent: bar\rDisallow: /\r", "bar", "http://foo.bar/x", false),
        ("\u{feff}User-Agent: foo\nDisallow: /AnyValue\n", "foo", "http://foo.bar/AnyValue", false),
        ("User-Agent: foo\nDisallow: /a\0/b\n", "foo", "/ab", false),
        // The first colon separates: `Disallow /x` is the key, `y` the pattern
        ("User-Agent: foo\nDisallow /x:y\n", "foo", "/y", true),
        ("User-Agent: foo\nDisallow /x:y\n", "foo", "/x", true),
        ("User-Agent: foo\nDisallow /x y\n", "foo", "/x", true),
        // Empty agent names a value cut to nothing
        ("User-Agent: 123\nDisallow: /\n", "", "/x", false),
    ];
    for (i, (robots, agent, url, want)) in table.iter().enumerate() {
        assert_eq!(allowed(robots, agent, url), *want, "case {i}: {robots:?} {agent:?} {url:?}");
    }
}

#[test]
fn long_lines_keep_their_first_16663_bytes() {
    let mut long = "/x".to_string();
    long.push_str(&"a".repeat(MAX_LINE));
    let robots = format!("User-Agent: foo\nDisallow: {long}\n");
    // The pattern is cut where the line is: `Disallow: ` is 10 bytes.
    let cut = &long[..MAX_LINE - 10];
    assert!(!allowed(&robots, "foo", cut));
    assert!(allowed(&robots, "foo", &cut[..cut.len() - 1]));
}

#[test]
fn path_params_query_as_google() {
    let table: &[(&str, &str)] = &[
        ("", "/"),
        ("http://www.example.com", "/"),
        ("http://www.example.com/", "/"),
        ("http://www.example.com/a", "/a"),
        ("http://www.example.com/a/", "/a/"),
        ("http://www.example.com/a/b?c=http://d.e/", "/a/b?c=http://d.e/"),
        ("http://www.example.com/a/b?c=d&e=f#fff", "/a/b?c=d&e=f"),
        ("example.com", "/"),
        ("example.com/", "/"),
        ("example.com/a", "/a"),
        ("example.com/a/", "/a/"),
        ("example.com/a/b?c=d&e=f#fff", "/a/b?c=d&e=f"),
        ("a", "/"),
        ("a/", "/"),
        ("/a", "/a"),
        ("a/b", "/b"),
        ("example.com?a", "/?a"),
        ("example.com/a;b#c", "/a;b"),
        ("//a/b/c", "/b/c"),
    ];
    for (url, want) in table {
        assert_eq!(path_params_query(url.as_bytes()).as_ref(), want.as_bytes(), "{url}");
    }
}
