//! The streaming robots `<meta>` rewriter on arbitrary bytes as a response
//! body. The first four bytes choose the mode, the policy's rules, the
//! charset, the memory limit and how the rest is split into chunks.
//!
//! What must hold:
//! - nothing panics, whatever the bytes and the chunking;
//! - the output does not depend on the chunking (one write, or chunks at
//!   fuzzer-chosen boundaries through `write_bytes`), nor do the findings,
//!   unless the memory limit made one run give up;
//! - audit: the output is the input;
//! - inject: the output is the input with one insertion at one place, and
//!   the insertion is `<head>`? + some of the policy's metas in order +
//!   `</head>`? (the closing tag only after an opening one), or nothing;
//! - inject with `fix_growth`: the output is the plain inject output plus
//!   spaces, exactly `n` bytes longer than the input.

#![no_main]

use bytes::Bytes;
use crawlgate_html::{Config, Mode, Rewriter};
use libfuzzer_sys::fuzz_target;

/// Rules a policy may give, all lowercase ASCII (what the policy crate
/// hands the proxy after validation).
const RULES: [&str; 8] =
    ["noindex", "nofollow", "none", "nosnippet", "noarchive", "noai", "max-snippet:50", "noimageai"];
/// Second tokens: a policy token, a known crawler, a mixed-case one.
const TOKENS: [&str; 4] = ["GPTBot", "googlebot", "CCBot", "otherbot"];
const CHARSETS: [Option<&str>; 4] = [None, Some("utf-8"), Some("windows-1252"), Some("shift_jis")];

struct Run {
    out: Vec<u8>,
    findings: Vec<crawlgate_html::Finding>,
    bailed: bool,
}

fn run(config: &Config, charset: Option<&str>, body: &[u8], cuts: Option<u16>, fix: bool) -> (Run, Option<usize>) {
    let Ok(mut rw) = Rewriter::new(config, charset) else {
        unreachable!("every charset in CHARSETS is ASCII-compatible")
    };
    let growth = if fix { rw.fix_growth() } else { None };
    let mut out = Vec::with_capacity(body.len() + 256);
    match cuts {
        None => out.extend_from_slice(&rw.write(body)),
        Some(seed) => {
            // xorshift16 chunk lengths: 1..=64 bytes, sometimes up to 4 KiB.
            let mut s = seed | 1;
            let mut rest = Bytes::copy_from_slice(body);
            while !rest.is_empty() {
                s ^= s << 7;
                s ^= s >> 9;
                s ^= s << 8;
                let n = if s & 0x8000 != 0 { usize::from(s & 0x0fff) } else { usize::from(s & 0x3f) } + 1;
                let chunk = rest.split_to(n.min(rest.len()));
                out.extend_from_slice(&rw.write_bytes(chunk));
            }
        }
    }
    out.extend_from_slice(&rw.finish());
    let findings = {
        let mut f = rw.take_findings();
        f.sort();
        f
    };
    (Run { out, findings, bailed: rw.bail_reason().is_some() }, growth)
}

/// The metas inject may insert, in order, as `Prepared::new` builds them.
fn expected_metas(directives: &[(String, Vec<String>)]) -> Vec<String> {
    let mut sorted: Vec<(String, &Vec<String>)> = directives
        .iter()
        .filter(|(_, r)| !r.is_empty())
        .map(|(t, r)| (if t == "*" { "*".to_string() } else { t.to_ascii_lowercase() }, r))
        .collect();
    sorted.sort_by(|a, b| (a.0 != "*", &a.0).cmp(&(b.0 != "*", &b.0)));
    sorted
        .into_iter()
        .map(|(t, r)| {
            let name = if t == "*" { "robots".to_string() } else { t };
            format!("<meta name=\"{name}\" content=\"{}\">", r.join(", "))
        })
        .collect()
}

/// Whether `s` is `<head>`? + a subsequence of `metas` + `</head>`? (the
/// closing tag only with the opening one), or empty.
fn is_insertion(mut s: &[u8], metas: &[String]) -> bool {
    if s.is_empty() {
        return true;
    }
    let opened = s.starts_with(b"<head>");
    if opened {
        s = &s[6..];
        if let Some(t) = s.strip_suffix(b"</head>") {
            s = t;
        }
    }
    let mut any = false;
    for m in metas {
        if let Some(t) = s.strip_prefix(m.as_bytes()) {
            s = t;
            any = true;
        }
    }
    // The rewriter writes `<head>` only together with at least one meta.
    s.is_empty() && any
}

fn one_insertion(input: &[u8], output: &[u8], metas: &[String]) -> bool {
    let Some(d) = output.len().checked_sub(input.len()) else { return false };
    let prefix = input.iter().zip(output).take_while(|(a, b)| a == b).count();
    let suffix = input.iter().rev().zip(output.iter().rev()).take_while(|(a, b)| a == b).count();
    // An insertion at q: output[..q] == input[..q], output[q + d..] == input[q..].
    let lo = input.len().saturating_sub(suffix);
    let hi = prefix.min(input.len());
    (lo..=hi).any(|q| is_insertion(&output[q..q + d], metas))
}

fuzz_target!(|data: &[u8]| {
    let &[b0, b1, b2, b3, ref body @ ..] = data else { return };
    let mode = match b0 % 3 {
        0 => Mode::Inject,
        1 => Mode::Audit,
        _ => Mode::Enforce,
    };
    let charset = CHARSETS[usize::from((b0 >> 2) & 3)];
    // Mostly the proxy's default limit; sometimes one small enough to make
    // lol_html give up part way.
    let max_memory = if b0 & 0x10 != 0 { 256 + usize::from(b3) * 32 } else { 1 << 20 };
    let pick =
        |mask: u8| RULES.iter().enumerate().filter(move |(i, _)| mask & (1 << i) != 0).map(|(_, r)| r.to_string());
    let mut directives: Vec<(String, Vec<String>)> = vec![("*".to_string(), pick(b1).collect())];
    if b2 & 0x80 != 0 {
        let token = TOKENS[usize::from(b2 & 3)].to_string();
        directives.push((token, pick(b2 >> 2 & 0x1f).collect()));
    }
    let config = Config { mode, directives, max_memory };
    let seed = u16::from_le_bytes([b3, b2]);

    let (whole, _) = run(&config, charset, body, None, false);
    let (split, _) = run(&config, charset, body, Some(seed), false);
    if !whole.bailed && !split.bailed {
        assert!(whole.out == split.out, "output depends on the chunking (seed {seed})");
        assert_eq!(whole.findings, split.findings, "findings depend on the chunking (seed {seed})");
    }
    match mode {
        Mode::Audit => {
            assert!(whole.out == body, "audit changed the body");
            assert!(split.out == body, "audit changed the body (chunked, seed {seed})");
        }
        Mode::Inject => {
            assert!(whole.findings.is_empty() && split.findings.is_empty(), "inject reported findings");
            let metas = expected_metas(&config.directives);
            for r in [&whole, &split] {
                assert!(
                    one_insertion(body, &r.out, &metas),
                    "inject output is not the input plus one insertion of the policy's metas"
                );
            }
            let (fixed, n) = run(&config, charset, body, Some(seed), true);
            let Some(n) = n else { unreachable!("fix_growth answers in inject mode") };
            assert_eq!(fixed.out.len(), body.len() + n, "fix_growth: output is not exactly {n} bytes longer");
            if !fixed.bailed && !split.bailed {
                let (head, pad) = fixed.out.split_at(split.out.len().min(fixed.out.len()));
                assert!(head == split.out.as_slice(), "fix_growth changed more than the padding");
                assert!(pad.iter().all(|&b| b == b' '), "fix_growth padding is not spaces");
            }
        }
        Mode::Enforce => {}
    }
});
