//! The head scanner against lol_html: for every page of a corpus of
//! ordinary and tricky heads, cut at random places, inject through
//! [`Rewriter::with_plan`] (the scanner first) gives exactly what
//! [`Rewriter::exact`] (lol_html alone) gives, with and without a fixed
//! growth, with and without a charset label, with and without head
//! elements to insert. The ordinary heads must take the scanner's path,
//! the tricky ones may fall back. `FAST_PATH_SEED=<n>` replays a run.

#![allow(clippy::panic)]

use crawlgate_html::{Config, Mode, RewritePlan, Rewriter};
use crawlgate_policy::HeadElement;
use crawlgate_testkit::chunks::{clock_seed, pieces, Cuts};

const BODY: &str =
    "<body>\n<p>Text &amp; <a href=\"/x\">a link</a>.</p>\n<meta name=robots content=index>\n</body></html>\n";

/// Heads the scanner must place the metas in on its own.
const ORDINARY: &[&str] = &[
    "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>An article</title>\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<link rel=\"stylesheet\" href=\"/site.css\">\n<script src=\"/app.js\" defer></script>\n</head>\n",
    "<!DOCTYPE HTML PUBLIC \"-//W3C//DTD HTML 4.01//EN\" \"http://www.w3.org/TR/html4/strict.dtd\"><HTML><HEAD><TITLE>Up</TITLE></HEAD>",
    "<html><head><title>no doctype</title></head>",
    "<head><meta charset=utf-8><title>x</title></head>",
    "<html><head class=a data-x='1>2'><base href=/><meta name=description content=\"a > b\"/></head>",
    "<html>\n  <head  >\n<meta\tname = \"author\"\ncontent='Jo'><style>p { color: red }</style><script>var a = 1 > 0 && 2;</script></head>",
    "<html><head><title>T</title><body>no head end</body>",
    "<html><head><link rel=\"stylesheet alternate\" href=\"/a.css?x=1&y=2\"><title>&amp; &lt;</title></head>",
    "<html><head><meta charset=\"windows-1252\"><title>caf\u{e9}</title></head>",
    "<html><head><meta name=viewport content=device-width><div>body starts</div>",
    "<!doctype html><html><head><title>T</title></head>",
    "<html><head><meta name=x/><title/>x</title></head>",
    "<!-- a comment --><html><!----><head><!-- <meta name=robots content=index> --><title>T</title></head>",
    "<html><head><!--><!---><!-- a --!> <title>x</title></head>",
];

/// Heads the scanner must leave to lol_html (or may: what matters is that
/// the output is lol_html's).
const TRICKY: &[&str] = &[
    "<!-- a comment --><html><head><title>T</title></head>",
    "<html><head><!-- <meta name=robots content=index> --></head>",
    "<html><head><!-- a --!> <meta name=robots content=index> --></head>",
    "<html><head><!--> <meta name=robots content=index> --></head>",
    "<html><head><!---> <meta name=robots content=index> --></head>",
    "<html><head><!-- <!-- --> <meta name=robots content=index> --></head>",
    "<html><head><!-- -- > <meta name=robots content=index> --></head>",
    "<html><head><!-- unterminated <meta name=robots content=index></head>",
    "<html><head><!-></head>",
    "<html><head><!-x--></head>",
    "<html><head><!DOCTYPE html></head>",
    "<html><head><meta name=\"robots\" content=\"noindex, nosnippet\"><meta name=gptbot content=noai></head>",
    "<html><head><meta name=ROBOTS content=index></head>",
    "<html><head><meta name=googlebot content=nosnippet></head>",
    "<html><head><meta content=\"x>y\" name=\"robots\"></head>",
    "<html><head><meta name=\"rob&#111;ts\" content=\"noindex\"></head>",
    "<html><head><script>if (a < b) document.write('<meta name=robots content=index>')</script></head>",
    "<html><head><script><!--</script><meta name=robots content=index>--></script></head>",
    "<html><head><noscript><meta name=robots content=index></noscript></head>",
    "<html><head><template><meta name=robots content=index><body></template></head>",
    "<html><head><title>a </title > b</title></head>",
    "<html><head><style>a::after{content:'</style>'}</style></head>",
    "<html><head></head ><meta name=robots content=index>",
    "<html><head><![CDATA[ <meta name=robots content=index> ]]></head>",
    "<?xml version=\"1.0\"?><html><head></head>",
    "\u{feff}<html><head><title>BOM</title></head>",
    "text first<html><head></head>",
    "<html>x<head></head>",
    "<html><body><p>no head</p>",
    "<html><title>implicit head</title></html>",
    "<p>a fragment</p>",
    "<head><head><title>two heads</title></head>",
    "<html><head><meta http-equiv=\"content-type\" content=\"text/html; charset=shift_jis\"><title>x</title></head>",
    "<html><head><meta charset=\"shift_jis\"><title>\u{30c6}</title></head>",
    "<html><head><meta charset=\"utf-16\"><title>x</title></head>",
    "<html><head><link title=\"<meta name=robots content=index>\" rel=x></head>",
    "<html><head><meta name=robots\ncontent=index /></head>",
    "<html><head><meta name=\"tdm-reservation\" content=\"0\"></head>",
    "<html><head><link rel=\"license\" href=\"/l.xml\"></head>",
    "<html><head><link rel=\"LICENSE stylesheet\" href=\"/l.xml\"></head>",
    "<html><head><meta name=a\"b content=x></head>",
    "<html><head><meta =x name=robots content=index></head>",
    "<html><head><meta name='a'name=robots content=index></head>",
    "<html><head><meta name=x name=robots content=index></head>",
    "<html><head><basefont><bgsound><title>x</title></head>",
    "<html><head><svg><title><meta name=robots content=index></title></svg></head>",
    "<html><head><meta name=\"x\0y\"></head>",
    "<html><head><title>unterminated",
    "<html><head><meta name=robots content=index",
    "<html><head><script src=/a.js></script ></head>",
    "<html><head>< meta name=robots content=index></head>",
    "<html><head></HEAD><meta name=gptbot content=ai><body>",
    "<!doctype html><!doctype html><html><head></head>",
    "<!doctype html><html><head><title>x</title></head>",
    "<html><head><meta name=viewport content=width=device-width><div>body starts</div>",
];

fn head_elements() -> Vec<HeadElement> {
    let tdm = vec!["meta:tdm-reservation".to_string(), "meta:tdm-policy".to_string()];
    vec![
        HeadElement { unless: tdm, html: "<meta name=\"tdm-reservation\" content=\"1\">".into() },
        HeadElement {
            unless: vec!["link:license".into()],
            html: "<link rel=\"license\" type=\"application/rsl+xml\" href=\"/license.xml\">".into(),
        },
    ]
}

fn plans() -> Vec<(&'static str, RewritePlan)> {
    let directives = vec![
        ("*".to_string(), vec!["noindex".to_string(), "nosnippet".to_string()]),
        ("GPTBot".to_string(), vec!["noai".to_string()]),
    ];
    let config = Config { mode: Mode::Inject, directives, max_memory: 4 << 20 };
    vec![
        ("metas", RewritePlan::new(&config)),
        ("metas and head elements", RewritePlan::with_head(&config, &head_elements())),
    ]
}

/// `input` cut at `cuts` through `rw`, half the pieces by `write`, half by
/// `write_bytes`: the output, the findings and the bail-out.
fn run(mut rw: Rewriter, growth: bool, input: &[u8], cuts: &[usize]) -> (Vec<u8>, usize, bool) {
    if growth {
        let _ = rw.fix_growth();
    }
    let mut out = Vec::new();
    for (i, piece) in pieces(input, cuts).enumerate() {
        let got = if i % 2 == 0 { rw.write(piece) } else { rw.write_bytes(bytes::Bytes::copy_from_slice(piece)) };
        out.extend_from_slice(&got);
    }
    out.extend_from_slice(&rw.finish());
    (out, rw.take_findings().len(), rw.bail().is_some())
}

fn check(pages: &[&str], must_scan: bool) {
    let mut rng = Cuts::from_env("FAST_PATH_SEED", clock_seed());
    let seed = rng.seed();
    for (plan_name, plan) in plans() {
        for head in pages {
            let page = format!("{head}{BODY}");
            let input = page.as_bytes();
            let splittings = rng.splittings(input.len(), 40);
            for charset in [None, Some("utf-8"), Some("windows-1252")] {
                for growth in [false, true] {
                    for cuts in &splittings {
                        let context = format!(
                            "{plan_name}, charset {charset:?}, growth {growth}, FAST_PATH_SEED={seed}, cuts {cuts:?}, page {head:?}"
                        );
                        let exact = Rewriter::exact(&plan, charset).unwrap_or_else(|e| panic!("{e}"));
                        let want = run(exact, growth, input, cuts);
                        let fast = Rewriter::with_plan(&plan, charset).unwrap_or_else(|e| panic!("{e}"));
                        let mut probe = Rewriter::with_plan(&plan, charset).unwrap_or_else(|e| panic!("{e}"));
                        let got = run(fast, growth, input, cuts);
                        assert!(
                            got == want,
                            "{context}:\n want {:?}\n  got {:?}",
                            String::from_utf8_lossy(&want.0),
                            String::from_utf8_lossy(&got.0)
                        );
                        if must_scan && cuts.is_empty() {
                            let _ = probe.write(input);
                            assert!(!probe.parsed_by_lol_html(), "lol_html was needed: {context}");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn ordinary_heads_take_the_scanner_and_give_lol_htmls_output() {
    check(ORDINARY, true);
}

#[test]
fn tricky_heads_give_lol_htmls_output() {
    check(TRICKY, false);
}

/// What the scanner may hold is bounded: a head longer than that goes to
/// lol_html, with the same output.
#[test]
fn a_long_head_goes_to_lol_html() {
    let head = format!("<html><head><title>{}</title>", "x".repeat(20_000));
    let page = format!("{head}</head><body></body></html>");
    for (_, plan) in plans() {
        let exact = run(Rewriter::exact(&plan, None).unwrap_or_else(|e| panic!("{e}")), false, page.as_bytes(), &[]);
        let mut rw = Rewriter::with_plan(&plan, None).unwrap_or_else(|e| panic!("{e}"));
        let _ = rw.write(page.as_bytes());
        assert!(rw.parsed_by_lol_html());
        let fast = run(Rewriter::with_plan(&plan, None).unwrap_or_else(|e| panic!("{e}")), false, page.as_bytes(), &[]);
        assert!(fast == exact);
    }
}
