//! Golden corpus of the Markdown converter: `tests/markdown/NAME.html`
//! must give `NAME.md` byte for byte, whole and split at random chunk
//! boundaries (and one byte at a time). `tests/markdown/cases.json` holds
//! per-case page data (URL, charset label, robots rules, Content-Usage).
//!
//! The goldens are written and reviewed by hand.
//! `UPDATE_GOLDEN=1 cargo test -p crawlgate-html --test markdown` rewrites
//! them from the converter: read every changed one before committing it.
//! `GOLDEN_SEED=<n>` replays the random splits of a failed run.

#![cfg(test)]
// A test reports a failure by panicking.
#![allow(clippy::panic)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crawlgate_html::markdown::{markdown_all, MarkdownConfig, MarkdownConverter, PageInfo};
use crawlgate_testkit::chunks::{clock_seed, pieces, Cuts};

/// Random splittings per case, besides the 1-byte one.
const SPLITS: usize = 8;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/markdown")
}

/// Per-case page data.
#[derive(serde::Deserialize, Default, Clone)]
#[serde(deny_unknown_fields)]
struct CaseData {
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    charset: Option<String>,
    #[serde(default)]
    robots: Option<String>,
    #[serde(default)]
    content_usage: Option<String>,
    #[serde(default)]
    drop: Option<Vec<String>>,
    #[serde(default)]
    max_table_bytes: Option<usize>,
}

struct Case {
    name: String,
    src: Vec<u8>,
    data: CaseData,
}

const DEFAULT_URL: &str = "https://www.example.com/section/page.html";

impl Case {
    fn config(&self) -> Arc<MarkdownConfig> {
        let mut cfg = MarkdownConfig::default();
        if let Some(drop) = &self.data.drop {
            cfg.drop = drop.clone();
        }
        if let Some(max) = self.data.max_table_bytes {
            cfg.max_table_bytes = max;
        }
        Arc::new(cfg)
    }

    fn page(&self) -> PageInfo {
        PageInfo {
            url: self.data.url.clone().unwrap_or_else(|| DEFAULT_URL.to_string()),
            robots: self.data.robots.clone(),
            content_usage: self.data.content_usage.clone(),
            no_images: false,
        }
    }
}

fn cases() -> Vec<Case> {
    let dir = data_dir();
    let text = std::fs::read_to_string(dir.join("cases.json")).unwrap_or_else(|e| panic!("cases.json: {e}"));
    let mut data: BTreeMap<String, CaseData> =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("cases.json: {e}"));
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".html").map(str::to_owned))
        .collect();
    names.sort();
    for name in data.keys() {
        assert!(names.contains(name), "cases.json names a case without {name}.html");
    }
    names
        .into_iter()
        .map(|name| {
            let src = std::fs::read(dir.join(format!("{name}.html"))).unwrap_or_else(|e| panic!("{name}: {e}"));
            let data = data.remove(&name).unwrap_or_default();
            Case { name, src, data }
        })
        .collect()
}

fn feed(case: &Case, cuts: &[usize]) -> Vec<u8> {
    let mut conv = MarkdownConverter::new(&case.config(), case.page(), case.data.charset.as_deref())
        .unwrap_or_else(|e| panic!("{}: {e}", case.name));
    let mut out = Vec::new();
    for piece in pieces(&case.src, cuts) {
        out.extend_from_slice(&conv.write(piece));
    }
    out.extend_from_slice(&conv.finish());
    assert_eq!(conv.bail(), None, "{}", case.name);
    out
}

fn first_difference(want: &[u8], got: &[u8]) -> String {
    let at = want.iter().zip(got).position(|(a, b)| a != b).unwrap_or(want.len().min(got.len()));
    let from = at.saturating_sub(60);
    format!(
        "first difference at byte {at} (lengths {} and {})\n  want: {:?}\n  got:  {:?}",
        want.len(),
        got.len(),
        String::from_utf8_lossy(&want[from..(at + 60).min(want.len())]),
        String::from_utf8_lossy(&got[from..(at + 60).min(got.len())])
    )
}

#[test]
fn corpus_matches_goldens() {
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let cases = cases();
    assert!(cases.len() >= 12, "only {} cases", cases.len());
    let mut failures = String::new();
    for case in &cases {
        let out = markdown_all(&case.config(), case.page(), case.data.charset.as_deref(), &case.src)
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let path = data_dir().join(format!("{}.md", case.name));
        if update {
            std::fs::write(&path, &out).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            continue;
        }
        let want = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if out != want {
            failures.push_str(&format!("{}: {}\n", case.name, first_difference(&want, &out)));
        }
    }
    assert!(failures.is_empty(), "{failures}");
}

#[test]
fn every_split_gives_the_same_output() {
    let mut rng = Cuts::from_env("GOLDEN_SEED", clock_seed());
    let seed = rng.seed();
    for case in &cases() {
        let whole = feed(case, &[]);
        let bytewise: Vec<usize> = (1..case.src.len()).collect();
        let got = feed(case, &bytewise);
        assert!(got == whole, "{} split byte by byte: {}", case.name, first_difference(&whole, &got));
        for _ in 0..SPLITS {
            let cuts = rng.random(case.src.len());
            let got = feed(case, &cuts);
            assert!(
                got == whole,
                "{} (GOLDEN_SEED={seed}) cuts {:?}: {}",
                case.name,
                &cuts[..cuts.len().min(200)],
                first_difference(&whole, &got)
            );
        }
    }
}
