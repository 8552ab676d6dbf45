//! Peak memory of rewriting one page, in a test binary of its own: VmHWM
//! is per process, and tests running in parallel threads would blur it.
//! Linux only (`/proc/self/status`).

#![cfg(test)]
// A test reports a failure by panicking.
#![allow(clippy::panic)]

use crawlgate_html::{Config, FindingKind, Mode, Rewriter};

/// `VmHWM` of this process in kB.
fn peak_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no VmHWM in /proc/self/status"))
}

/// A `content` of a million rules (2 MB, within lol_html's memory limit)
/// costs a few times its size, not a `String` per rule (~56 MB), in audit
/// and in enforce mode; enforce still strips the conflicting rule.
#[test]
fn a_meta_with_a_million_rules_costs_about_its_own_size() {
    let content = format!("index, {}", "a,".repeat(1_000_000));
    let page = format!("<html><head><meta name=robots content=\"{content}\"></head><body></body></html>");
    for mode in [Mode::Audit, Mode::Enforce] {
        let config = Config { mode, directives: vec![("*".into(), vec!["noindex".into()])], max_memory: 4 << 20 };
        let mut rw = Rewriter::new(&config, None).unwrap();
        let before = peak_kb();
        let mut out = Vec::with_capacity(page.len() + 100);
        for chunk in page.as_bytes().chunks(64 * 1024) {
            out.extend_from_slice(&rw.write(chunk));
        }
        out.extend_from_slice(&rw.finish());
        let grown = peak_kb().saturating_sub(before);
        assert_eq!(rw.bail_reason(), None, "{mode:?}");
        assert!(grown < 24 * 1024, "{mode:?}: peak RSS grew by {grown} kB for a {} byte page", page.len());
        let findings: Vec<(FindingKind, String)> = rw.take_findings().into_iter().map(|f| (f.kind, f.rule)).collect();
        let want = match mode {
            // Enforce writes the rules it keeps as a list of its own.
            Mode::Enforce => format!(
                "<html><head><meta name=\"robots\" content=\"noindex\"><meta name=robots content=\"{}\"></head><body></body></html>",
                vec!["a"; 1_000_000].join(", ")
            ),
            _ => page.clone(),
        };
        let mut want_findings = vec![(FindingKind::Conflict, "index".to_string())];
        if mode == Mode::Audit {
            want_findings.push((FindingKind::Missing, "noindex".to_string()));
        }
        assert_eq!(findings, want_findings, "{mode:?}");
        assert!(out.len() == want.len() && out == want.as_bytes(), "{mode:?}: output differs");
    }
}
