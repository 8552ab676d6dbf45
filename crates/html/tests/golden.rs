//! Golden corpus of the robots meta rewriter: `tests/data/NAME.src.html`
//! through inject, enforce and audit must give `NAME.inject.html`,
//! `NAME.enforce.html` and `NAME.audit.json` byte for byte, whole and split
//! at random chunk boundaries. `tests/data/policy.json` holds the corpus
//! policy and per-case overrides (`charset`, `directives`).
//!
//! `UPDATE_GOLDEN=1 cargo test -p crawlgate-html --test golden` rewrites
//! the goldens: read every changed one before committing it.
//! `GOLDEN_SEED=<n>` replays the random splits of a failed run.

#![cfg(test)]
// A test reports a failure by panicking.
#![allow(clippy::panic)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crawlgate_html::{
    rewrite_all, Config, Finding, FindingKind, Mode, RewritePlan, Rewriter, KNOWLEDGE_WINDOW, MAX_FINDINGS,
    MAX_RULE_LEN,
};
use crawlgate_testkit::chunks::{describe, pieces, Cuts};

const MAX_MEMORY: usize = 4 << 20;
/// Random splittings per case and mode, besides the 1-byte one.
const SPLITS: usize = 6;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// Feeds `input` cut at `cuts` like the proxy does: write, drain findings,
/// then finish.
fn feed(
    config: &Config,
    charset: Option<&str>,
    input: &[u8],
    cuts: &[usize],
) -> (Vec<u8>, Vec<Finding>, Option<String>) {
    feed_with(Rewriter::new(config, charset).unwrap(), input, cuts)
}

fn feed_with(mut rw: Rewriter, input: &[u8], cuts: &[usize]) -> (Vec<u8>, Vec<Finding>, Option<String>) {
    let mut out = Vec::new();
    let mut findings = Vec::new();
    for (i, piece) in pieces(input, cuts).enumerate() {
        // Both entry points, the borrowed and the owned one (the proxy's).
        let got = if i % 2 == 0 { rw.write(piece) } else { rw.write_bytes(bytes::Bytes::copy_from_slice(piece)) };
        out.extend_from_slice(&got);
        findings.extend(rw.take_findings());
    }
    out.extend_from_slice(&rw.finish());
    findings.extend(rw.take_findings());
    (out, findings, rw.bail_reason().map(str::to_owned))
}

fn show(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Where two outputs part, with some context.
fn first_difference(want: &[u8], got: &[u8]) -> String {
    let at = want.iter().zip(got).position(|(a, b)| a != b).unwrap_or(want.len().min(got.len()));
    let from = at.saturating_sub(60);
    format!(
        "first difference at byte {at} (lengths {} and {})\n  want: {:?}\n  got:  {:?}",
        want.len(),
        got.len(),
        show(&want[from..(at + 60).min(want.len())]),
        show(&got[from..(at + 60).min(got.len())])
    )
}

struct Case {
    name: String,
    src: Vec<u8>,
    charset: Option<String>,
    directives: Directives,
}

/// `("*" or token, rules)` pairs, as `[token, [rules]]` in JSON.
type Directives = Vec<(String, Vec<String>)>;

/// `tests/data/policy.json`: the corpus policy and per-case overrides.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CorpusPolicy {
    directives: Directives,
    #[serde(default)]
    cases: BTreeMap<String, CaseOverride>,
}

/// What a case of the corpus changes.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseOverride {
    /// The Content-Type label the page comes with.
    #[serde(default)]
    charset: Option<String>,
    /// Replaces the corpus policy's directives.
    #[serde(default)]
    directives: Option<Directives>,
}

fn cases() -> Vec<Case> {
    let dir = data_dir();
    let policy_text = std::fs::read_to_string(dir.join("policy.json")).expect("policy.json");
    let mut policy: CorpusPolicy = serde_json::from_str(&policy_text).expect("policy.json");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".src.html").map(str::to_owned))
        .collect();
    names.sort();
    for name in policy.cases.keys() {
        assert!(names.contains(name), "policy.json names a case without {name}.src.html");
    }
    names
        .into_iter()
        .map(|name| {
            let src = std::fs::read(dir.join(format!("{name}.src.html"))).unwrap_or_else(|e| panic!("{name}: {e}"));
            let (charset, directives) = match policy.cases.remove(&name) {
                Some(CaseOverride { charset, directives }) => {
                    (charset, directives.unwrap_or_else(|| policy.directives.clone()))
                }
                None => (None, policy.directives.clone()),
            };
            Case { charset, directives, name, src }
        })
        .collect()
}

fn config(case: &Case, mode: Mode) -> Config {
    Config { mode, directives: case.directives.clone(), max_memory: MAX_MEMORY }
}

fn findings_json(findings: &[Finding]) -> Vec<u8> {
    let mut s = serde_json::to_string_pretty(findings).unwrap();
    s.push('\n');
    s.into_bytes()
}

const MODES: [(Mode, &str); 3] =
    [(Mode::Inject, "inject.html"), (Mode::Enforce, "enforce.html"), (Mode::Audit, "audit.json")];

#[test]
fn corpus_matches_goldens() {
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let dir = data_dir();
    let cases = cases();
    assert!(cases.len() >= 20, "only {} cases in {}", cases.len(), dir.display());
    let mut failures = String::new();
    for case in &cases {
        for (mode, ext) in MODES {
            let (out, findings) = rewrite_all(&config(case, mode), case.charset.as_deref(), &case.src)
                .unwrap_or_else(|e| panic!("{}: {e}", case.name));
            if mode == Mode::Audit {
                if out != case.src {
                    let _ = writeln!(
                        failures,
                        "{} audit changed the page: {}",
                        case.name,
                        first_difference(&case.src, &out)
                    );
                }
            } else if mode == Mode::Inject && !findings.is_empty() {
                let _ = writeln!(failures, "{} inject reported findings: {findings:?}", case.name);
            }
            let got = if mode == Mode::Audit { findings_json(&findings) } else { out };
            let path = dir.join(format!("{}.{ext}", case.name));
            if update {
                std::fs::write(&path, &got).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                continue;
            }
            match std::fs::read(&path) {
                Ok(want) if want == got => {}
                Ok(want) => {
                    let _ = writeln!(failures, "{}.{ext} differs: {}", case.name, first_difference(&want, &got));
                }
                Err(e) => {
                    let _ = writeln!(failures, "{}: {e} (UPDATE_GOLDEN=1 writes it)", path.display());
                }
            }
        }
    }
    // Goldens of a case that no longer exists.
    let known: Vec<String> =
        cases.iter().flat_map(|c| MODES.iter().map(move |(_, ext)| format!("{}.{ext}", c.name))).collect();
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())).flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == "policy.json" || name.ends_with(".src.html") || known.contains(&name) {
            continue;
        }
        if update {
            std::fs::remove_file(entry.path()).unwrap_or_else(|e| panic!("{name}: {e}"));
        } else {
            let _ = writeln!(failures, "{name}: no such case (UPDATE_GOLDEN=1 deletes it)");
        }
    }
    assert!(failures.is_empty(), "{failures}");
}

#[test]
fn corpus_is_independent_of_chunk_boundaries() {
    let mut rng = Cuts::from_env("GOLDEN_SEED", 0x5eed_c0de);
    let seed = rng.seed();
    let mut runs = 0;
    for case in cases() {
        for (mode, _) in MODES {
            let config = config(&case, mode);
            let charset = case.charset.as_deref();
            let (want, want_findings) =
                rewrite_all(&config, charset, &case.src).unwrap_or_else(|e| panic!("{}: {e}", case.name));
            let one_byte: Vec<usize> = (1..case.src.len()).collect();
            let mut splittings = vec![("1-byte chunks".to_string(), one_byte)];
            for i in 0..SPLITS {
                splittings.push((format!("random splitting {i}"), rng.random(case.src.len())));
            }
            // One plan shared by every splitting's rewriter, as the proxy
            // shares one per policy plan.
            let plan = RewritePlan::new(&config);
            for (what, cuts) in splittings {
                runs += 1;
                let rw = Rewriter::with_plan(&plan, charset).unwrap_or_else(|e| panic!("{}: {e}", case.name));
                let (got, findings, bail) = feed_with(rw, &case.src, &cuts);
                let context = || {
                    format!("case {} mode {mode:?}, {what}, GOLDEN_SEED={seed}, cuts {}", case.name, describe(&cuts))
                };
                assert!(bail.is_none(), "{}: bailed out: {bail:?}", context());
                assert!(
                    got == want,
                    "{}: output differs from the whole-document output: {}",
                    context(),
                    first_difference(&want, &got)
                );
                assert!(
                    findings == want_findings,
                    "{}: findings differ:\n  want {want_findings:?}\n  got  {findings:?}",
                    context()
                );
            }
        }
    }
    assert!(runs > 0);
}

/// `fix_growth`: the output is the input plus exactly the promised number
/// of bytes, and differs from the normal output only by a run of spaces at
/// its very end; for every case and every splitting.
#[test]
fn fixed_growth_adds_exactly_the_promised_bytes() {
    let mut rng = Cuts::new(0xf1ed);
    let mut runs = 0;
    for case in cases() {
        let config = config(&case, Mode::Inject);
        let charset = case.charset.as_deref();
        let (normal, _) = rewrite_all(&config, charset, &case.src).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        for cuts in rng.splittings(case.src.len(), SPLITS) {
            runs += 1;
            let mut rw = Rewriter::new(&config, charset).unwrap();
            let n = rw.fix_growth().unwrap_or_else(|| panic!("inject mode promises a growth"));
            let (got, _, _) = feed_with(rw, &case.src, &cuts);
            let context = format!("case {} cuts {}", case.name, describe(&cuts));
            assert_eq!(got.len(), case.src.len() + n, "{context}");
            let (head, pad) = got.split_at(normal.len());
            assert!(head == normal.as_slice(), "{context}: {}", first_difference(&normal, head));
            assert!(pad.iter().all(|b| *b == b' '), "{context}: padding {:?}", show(pad));
        }
    }
    assert!(runs > 0);
    // The promise: `<head>`, every meta, `</head>`.
    let mut rw = Rewriter::new(&policy(Mode::Inject, MAX_MEMORY), None).unwrap();
    assert_eq!(rw.fix_growth(), Some("<head></head>".len() + POLICY_METAS.len()));
    let (out, _, _) = feed_with(rw, b"<p>no head</p>", &[]);
    // A fragment gets the metas before its first element, no `<head>`.
    assert_eq!(show(&out), format!("{POLICY_METAS}<p>no head</p>{}", " ".repeat("<head></head>".len())));
    // Enforce removes bytes, audit changes none: no promise.
    for mode in [Mode::Enforce, Mode::Audit] {
        let mut rw = Rewriter::new(&policy(mode, MAX_MEMORY), None).unwrap();
        assert_eq!(rw.fix_growth(), None, "{mode:?}");
    }
    // A bail-out before the insertion point: all of it is padding.
    let mut rw = Rewriter::new(&policy(Mode::Inject, 2048), None).unwrap();
    let n = rw.fix_growth().unwrap_or(0);
    let page = [b"<p title=\"".as_slice(), &[b'x'; 10_000], b"\"><head></head>"].concat();
    let (out, _, bail) = feed_with(rw, &page, &[10, 5000]);
    assert!(bail.is_some());
    assert!(out == [page.as_slice(), &vec![b' '; n]].concat(), "{}", show(&out[page.len()..]));
}

const POLICY_METAS: &str =
    "<meta name=\"robots\" content=\"noindex, nosnippet\"><meta name=\"gptbot\" content=\"noai\">";

fn policy(mode: Mode, max_memory: usize) -> Config {
    Config {
        mode,
        directives: vec![
            ("*".into(), vec!["noindex".into(), "nosnippet".into()]),
            ("GPTBot".into(), vec!["noai".into()]),
        ],
        max_memory,
    }
}

/// Past the memory limit the rewriter bails out: what it has rewritten so
/// far stays rewritten, everything else passes through byte for byte.
#[test]
fn memory_limit_passes_the_rest_through() {
    // A giant attribute that never closes: lol_html must buffer the tag.
    let mut page = b"<!doctype html>\n<html><head><title>T</title>\n<meta name=\"description\" content=\"".to_vec();
    page.extend(std::iter::repeat_n(b'a', 200_000));
    // No `"` follows: the attribute never ends.
    page.extend_from_slice(b"\n<meta name=robots content=index></head><body><p>caf\xc3\xa9</p>");
    let want = [
        b"<!doctype html>\n<html><head>".as_slice(),
        POLICY_METAS.as_bytes(),
        &page[b"<!doctype html>\n<html><head>".len()..],
    ]
    .concat();
    let mut rng = Cuts::new(7);
    let mut splittings = vec![vec![], (1..page.len()).step_by(4096).collect::<Vec<_>>()];
    splittings.extend((0..4).map(|_| rng.random(page.len())));
    for mode in [Mode::Inject, Mode::Enforce] {
        for cuts in &splittings {
            let (out, findings, bail) = feed(&policy(mode, 16 * 1024), None, &page, cuts);
            assert!(bail.as_deref().is_some_and(|r| r.contains("memory")), "{mode:?}: bail reason {bail:?}");
            assert!(out == want, "{mode:?} cuts {}: {}", describe(cuts), first_difference(&want, &out));
            // The head was not seen to its end: nothing can be said about it.
            assert!(findings.is_empty(), "{findings:?}");
        }
    }
    let (out, findings, bail) = feed(&policy(Mode::Audit, 16 * 1024), None, &page, &[100, 5000]);
    assert!(bail.is_some());
    assert!(out == page, "audit: {}", first_difference(&page, &out));
    assert!(findings.is_empty(), "{findings:?}");

    // A huge comment in the head is skipped, not buffered: no bail-out.
    let mut page = b"<html><head><!--".to_vec();
    page.extend(std::iter::repeat_n(b'-', 300_000));
    page.extend_from_slice(b"--><title>T</title></head><body></body></html>");
    let (out, _, bail) =
        feed(&policy(Mode::Inject, 16 * 1024), None, &page, &(1..page.len()).step_by(1000).collect::<Vec<_>>());
    assert_eq!(bail, None);
    let want = [b"<html><head>".as_slice(), POLICY_METAS.as_bytes(), &page[12..]].concat();
    assert!(out == want, "{}", first_difference(&want, &out));
}

/// After a bail-out, later writes come back unchanged. Here it happens
/// inside the first tag, before any handler ran: nothing is inserted.
#[test]
fn writes_after_a_bail_out_pass_through() {
    let mut rw = Rewriter::new(&policy(Mode::Inject, 2048), None).unwrap();
    let mut out = rw.write(b"<p title=\"").to_vec();
    let big = vec![b'x'; 10_000];
    out.extend_from_slice(&rw.write(&big));
    assert!(rw.bail_reason().is_some());
    out.extend_from_slice(&rw.write(b"\"><head><meta name=robots content=index>"));
    out.extend_from_slice(&rw.finish());
    let want = [b"<p title=\"".as_slice(), &big, b"\"><head><meta name=robots content=index>"].concat();
    assert!(out == want, "{}", first_difference(&want, &out));
}

#[test]
fn charsets_that_cannot_be_rewritten_are_refused() {
    for label in [
        "utf-16",
        "UTF-16LE",
        "utf-16be",
        "unicodefffe",
        "iso-2022-jp",
        "csiso2022kr",
        "x-no-such-charset",
        "utf-8 please",
    ] {
        let err = Rewriter::new(&policy(Mode::Inject, MAX_MEMORY), Some(label)).err();
        assert!(err.as_ref().is_some_and(|e| e.to_string().contains(label)), "{label}: {err:?}");
        assert!(rewrite_all(&policy(Mode::Audit, MAX_MEMORY), Some(label), b"<head></head>").is_err(), "{label}");
    }
    for label in ["utf-8", "UTF8", "latin1", "windows-1252", "Shift_JIS", " iso-8859-15 ", ""] {
        assert!(Rewriter::new(&policy(Mode::Inject, MAX_MEMORY), Some(label)).is_ok(), "{label}");
    }
}

/// A page meta identical to the policy's is known when it starts within
/// [`KNOWLEDGE_WINDOW`] bytes of the insertion point; past that the
/// policy's meta is added anyway. Either way the output does not depend on
/// how the page is split.
#[test]
fn duplicates_are_known_within_the_window_whatever_the_chunks() {
    let page = |filler: usize| {
        format!(
            "<!doctype html><html><head><style>{}</style><meta name=\"robots\" content=\"nosnippet, noindex\"><meta name=gptbot content=noai></head><body><p>x</p></body></html>",
            "p{margin:0}".repeat(filler / 11)
        )
    };
    let near = page(KNOWLEDGE_WINDOW - 2000);
    let far = page(KNOWLEDGE_WINDOW + 2000);
    // The window starts after the head tag, however long that is.
    let big_head_tag = page(KNOWLEDGE_WINDOW - 2000).replacen(
        "<head>",
        &format!("<head data-x=\"{}\">", "y".repeat(KNOWLEDGE_WINDOW + 8000)),
        1,
    );
    let mut rng = Cuts::new(42);
    for (page, injected) in [(&near, ""), (&far, POLICY_METAS), (&big_head_tag, "")] {
        let head_end = page.find("<head").and_then(|at| page[at..].find('>').map(|end| at + end + 1)).unwrap_or(0);
        let want = format!("{}{injected}{}", &page[..head_end], &page[head_end..]);
        let splittings = rng.splittings(page.len(), 6);
        for mode in [Mode::Inject, Mode::Enforce] {
            for cuts in &splittings {
                let (out, _, bail) = feed(&policy(mode, MAX_MEMORY), None, page.as_bytes(), cuts);
                assert_eq!(bail, None);
                assert!(
                    out == want.as_bytes(),
                    "{mode:?} page of {} bytes, cuts {}: {}",
                    page.len(),
                    describe(cuts),
                    first_difference(want.as_bytes(), &out)
                );
            }
        }
    }
}

/// A head flushed early by the origin is passed on at its end tag, before
/// the body arrives.
#[test]
fn a_head_is_released_at_its_end_tag() {
    for mode in [Mode::Inject, Mode::Enforce] {
        let mut rw = Rewriter::new(&policy(mode, MAX_MEMORY), None).unwrap();
        let head = "<!doctype html><html><head><title>T</title><link rel=stylesheet href=/a.css></head>";
        let out = rw.write(head.as_bytes());
        assert_eq!(show(&out), head.replace("<head>", &format!("<head>{POLICY_METAS}")), "{mode:?}");
        let rest = rw.write(b"\n<body><p>x</p></body></html>");
        assert_eq!(show(&rest), "\n<body><p>x</p></body></html>", "{mode:?}");
    }
}

/// The output held back while the head is open never exceeds the cap,
/// even for a head that never ends.
#[test]
fn held_output_is_bounded() {
    let mut rw = Rewriter::new(&policy(Mode::Inject, MAX_MEMORY), None).unwrap();
    let mut given = 0usize;
    let mut got = 0usize;
    given += 12;
    got += rw.write(b"<html><head>").len();
    for _ in 0..100 {
        let chunk = b"<script>var a = 1;</script>\n".repeat(100);
        given += chunk.len();
        got += rw.write(&chunk).len();
        assert!(given + POLICY_METAS.len() - got <= 2 * KNOWLEDGE_WINDOW + 4096, "holding {} bytes", given - got);
    }
    got += rw.finish().len();
    assert_eq!(got, given + POLICY_METAS.len());
}

/// `(kind, count)` of every kind, as the proxy sums them: drained after
/// each chunk.
type Counts = [(FindingKind, u64); 4];

/// [`feed_with`] that also sums the dropped findings as they are drained,
/// and checks the sum against the rewriter's own total.
fn feed_counting(mut rw: Rewriter, input: &[u8], cuts: &[usize]) -> (Vec<u8>, Vec<Finding>, Counts) {
    let mut out = Vec::new();
    let mut findings = Vec::new();
    let mut counts = FindingKind::ALL.map(|k| (k, 0u64));
    let mut drain = |rw: &mut Rewriter, findings: &mut Vec<Finding>| {
        findings.extend(rw.take_findings());
        let dropped = rw.take_dropped_findings();
        for (kind, n) in &mut counts {
            *n += dropped.get(*kind);
        }
    };
    for piece in pieces(input, cuts) {
        out.extend_from_slice(&rw.write(piece));
        drain(&mut rw, &mut findings);
    }
    out.extend_from_slice(&rw.finish());
    drain(&mut rw, &mut findings);
    let total = rw.dropped_findings();
    assert_eq!(counts, FindingKind::ALL.map(|k| (k, total.get(k))));
    assert_eq!(rw.bail_reason(), None);
    (out, findings, counts)
}

fn finding(kind: FindingKind, token: &str, rule: &str) -> Finding {
    Finding { kind, token: token.into(), rule: rule.into() }
}

/// Runs `page` whole, in 1-byte chunks and split at random: every run must
/// give `want`, the findings `want_findings` and the dropped counts
/// `want_dropped` (missing, conflict, extra, outside-head).
fn check_every_splitting(mode: Mode, page: &str, want: &str, want_findings: &[Finding], want_dropped: [u64; 4]) {
    let config = policy(mode, MAX_MEMORY);
    let plan = RewritePlan::new(&config);
    let splittings = Cuts::new(0xca9).splittings(page.len(), SPLITS);
    let want_counts = [
        (FindingKind::Missing, want_dropped[0]),
        (FindingKind::Conflict, want_dropped[1]),
        (FindingKind::Extra, want_dropped[2]),
        (FindingKind::OutsideHead, want_dropped[3]),
    ];
    for cuts in splittings {
        let rw = Rewriter::with_plan(&plan, None).unwrap();
        let (out, findings, counts) = feed_counting(rw, page.as_bytes(), &cuts);
        let context = format!("{mode:?} cuts {}", describe(&cuts));
        assert!(out == want.as_bytes(), "{context}: {}", first_difference(want.as_bytes(), &out));
        assert!(findings == want_findings, "{context}: findings {findings:?}");
        assert_eq!(counts, want_counts, "{context}");
    }
}

/// Audit of a head with more metas than [`MAX_FINDINGS`]: the first
/// conflicts are recorded, everything after them (more conflicts, the
/// missing rules and extras found when the head ends, the metas in the
/// body) only counted, exactly.
#[test]
fn audit_records_at_most_the_cap_and_counts_the_rest() {
    let n = MAX_FINDINGS + 10;
    let page = format!(
        "<html><head>{}</head><body>{}</body></html>",
        "<meta name=\"robots\" content=\"index, noarchive\">".repeat(n),
        "<meta name=robots content=noindex>".repeat(3)
    );
    let want_findings = vec![finding(FindingKind::Conflict, "*", "index"); MAX_FINDINGS];
    // Missing: `*` noindex and nosnippet, gptbot noai.
    check_every_splitting(Mode::Audit, &page, &page, &want_findings, [3, 10, n as u64, 3]);
}

/// Enforce still rewrites every meta past the cap; the extras found when
/// the head ends fill the records up to the cap, in page order.
#[test]
fn enforce_rewrites_every_meta_past_the_cap() {
    let n = MAX_FINDINGS + 10;
    let own = "<meta name=robots content=\"noarchive\">";
    let page = format!(
        "<html><head><title>T</title>{}{}</head><body><p>x</p></body></html>",
        "<meta name=\"robots\" content=\"INDEX, nosnippet\">".repeat(5),
        own.repeat(n)
    );
    // The index-only part goes, the rest of each meta stays as written.
    let want = format!(
        "<html><head>{POLICY_METAS}<title>T</title>{}{}</head><body><p>x</p></body></html>",
        "<meta name=\"robots\" content=\"nosnippet\">".repeat(5),
        own.repeat(n)
    );
    let mut want_findings = vec![finding(FindingKind::Conflict, "*", "index"); 5];
    want_findings.extend(vec![finding(FindingKind::Extra, "*", "noarchive"); MAX_FINDINGS - 5]);
    check_every_splitting(Mode::Enforce, &page, &want, &want_findings, [0, 0, 15, 0]);
    // A page of no more than the cap: everything recorded, nothing dropped.
    let page = format!("<html><head>{}</head></html>", own.repeat(MAX_FINDINGS));
    let want = format!("<html><head>{POLICY_METAS}{}</head></html>", own.repeat(MAX_FINDINGS));
    let want_findings = vec![finding(FindingKind::Extra, "*", "noarchive"); MAX_FINDINGS];
    check_every_splitting(Mode::Enforce, &page, &want, &want_findings, [0; 4]);
}

/// A finding keeps at most [`MAX_RULE_LEN`] bytes of its rule, cut at a
/// character boundary, however long the page's `content` is.
#[test]
fn long_rules_are_cut_in_findings() {
    let rule = format!("max-snippet:x{}", "é".repeat(200));
    let page = format!("<html><head><meta name=robots content=\"{rule}, noarchive\"></head></html>");
    let kept = format!("max-snippet:x{}", "é".repeat((MAX_RULE_LEN - 13) / 2));
    assert_eq!(kept.len(), MAX_RULE_LEN - 1);
    let (out, findings) = rewrite_all(&policy(Mode::Audit, MAX_MEMORY), None, page.as_bytes()).unwrap();
    assert!(out == page.as_bytes());
    assert_eq!(
        findings,
        vec![
            finding(FindingKind::Conflict, "*", &kept),
            finding(FindingKind::Missing, "*", "noindex"),
            finding(FindingKind::Missing, "*", "nosnippet"),
            finding(FindingKind::Missing, "gptbot", "noai"),
            finding(FindingKind::Extra, "*", "noarchive"),
        ]
    );
    // Enforce strips the whole rule all the same.
    let (out, _) = rewrite_all(&policy(Mode::Enforce, MAX_MEMORY), None, page.as_bytes()).unwrap();
    assert_eq!(show(&out), format!("<html><head>{POLICY_METAS}<meta name=robots content=\"noarchive\"></head></html>"));
}
