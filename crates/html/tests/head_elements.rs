//! Head elements beside the robots metas: the TDMRep metas and the RSL
//! license link are added after the robots metas, each left out when the
//! page's head has its own, whatever the chunking.

#![allow(clippy::panic)]

use crawlgate_html::{Config, Mode, RewritePlan, Rewriter};
use crawlgate_policy::HeadElement;

const TDM: &str = "<meta name=\"tdm-reservation\" content=\"1\">";
const TDM_POLICY: &str = "<meta name=\"tdm-policy\" content=\"https://e.example/p\">";
const LINK: &str = "<link rel=\"license\" type=\"application/rsl+xml\" href=\"/license.xml\">";
const ROBOTS: &str = "<meta name=\"robots\" content=\"noindex\">";

fn head() -> Vec<HeadElement> {
    let tdm = vec!["meta:tdm-reservation".to_string(), "meta:tdm-policy".to_string()];
    vec![
        HeadElement { unless: tdm.clone(), html: TDM.into() },
        HeadElement { unless: tdm, html: TDM_POLICY.into() },
        HeadElement { unless: vec!["link:license".into()], html: LINK.into() },
    ]
}

/// Rewrites `page` fed in chunks of `step` bytes.
fn run(mode: Mode, robots: bool, page: &str, step: usize) -> String {
    let directives = if robots { vec![("*".to_string(), vec!["noindex".to_string()])] } else { Vec::new() };
    let config = Config { mode, directives, max_memory: 1 << 20 };
    let plan = RewritePlan::with_head(&config, &head());
    let mut rw = Rewriter::with_plan(&plan, Some("utf-8")).unwrap_or_else(|e| panic!("{e}"));
    let mut out = Vec::new();
    for chunk in page.as_bytes().chunks(step) {
        out.extend_from_slice(&rw.write(chunk));
    }
    out.extend_from_slice(&rw.finish());
    String::from_utf8(out).unwrap_or_else(|e| panic!("{e}"))
}

fn every_chunking(mode: Mode, robots: bool, page: &str) -> String {
    let whole = run(mode, robots, page, page.len().max(1));
    for step in 1..8 {
        assert_eq!(run(mode, robots, page, step), whole, "chunks of {step}");
    }
    whole
}

#[test]
fn head_elements_follow_the_robots_metas() {
    let page = "<html><head><title>t</title></head><body>x</body></html>";
    assert_eq!(
        every_chunking(Mode::Inject, true, page),
        format!("<html><head>{ROBOTS}{TDM}{TDM_POLICY}{LINK}<title>t</title></head><body>x</body></html>")
    );
    assert_eq!(every_chunking(Mode::Inject, false, "<p>x</p>"), format!("{TDM}{TDM_POLICY}{LINK}<p>x</p>"));
    assert_eq!(
        every_chunking(Mode::Enforce, false, "<html><body>x</body></html>"),
        format!("<html><head>{TDM}{TDM_POLICY}{LINK}</head><body>x</body></html>")
    );
}

#[test]
fn the_pages_own_tdm_metas_and_license_link_are_kept_alone() {
    let page = "<html><head><META NAME=\"TDM-Reservation\" content=\"0\"><title>t</title><link rel=\"stylesheet LICENSE\" href=\"/l\"></head><body></body></html>";
    assert_eq!(every_chunking(Mode::Inject, true, page), page.replace("<head>", &format!("<head>{ROBOTS}")));
    let page = "<html><head><meta name=\"tdm-policy\" content=\"https://o.example/\"></head></html>";
    assert_eq!(every_chunking(Mode::Inject, false, page), page.replace("<head>", &format!("<head>{LINK}")));
    // Outside the head they do not count.
    let page = "<html><head></head><body><meta name=\"tdm-reservation\" content=\"0\"><link rel=license href=/x></body></html>";
    assert_eq!(
        every_chunking(Mode::Inject, false, page),
        page.replace("<head>", &format!("<head>{TDM}{TDM_POLICY}{LINK}"))
    );
}

#[test]
fn audit_adds_nothing() {
    let page = "<html><head><title>t</title></head><body>x</body></html>";
    assert_eq!(every_chunking(Mode::Audit, true, page), page);
}

#[test]
fn a_content_length_response_grows_by_what_fix_growth_promised() {
    let config = Config { mode: Mode::Inject, directives: Vec::new(), max_memory: 1 << 20 };
    let plan = RewritePlan::with_head(&config, &head());
    let page = "<html><head><link rel=license href=/own></head><body>x</body></html>";
    let mut rw = Rewriter::with_plan(&plan, Some("utf-8")).unwrap_or_else(|e| panic!("{e}"));
    let promised = rw.fix_growth().unwrap_or_else(|| panic!("inject promises a growth"));
    assert_eq!(promised, "<head></head>".len() + TDM.len() + TDM_POLICY.len() + LINK.len());
    let mut out = rw.write(page.as_bytes()).to_vec();
    out.extend_from_slice(&rw.finish());
    assert_eq!(out.len(), page.len() + promised);
    let pad = " ".repeat(promised - TDM.len() - TDM_POLICY.len());
    assert_eq!(
        String::from_utf8_lossy(&out),
        format!("{}{pad}", page.replace("<head>", &format!("<head>{TDM}{TDM_POLICY}")))
    );
}
