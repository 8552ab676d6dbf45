//! What a response's body transform reports as it goes (the proxy's
//! `html::HtmlStream` calls these after each chunk): the robots rewriter's
//! findings into `crawlgate_html_findings_total` and the debug log, and a
//! bail-out of the rewriter or of the Markdown converter into
//! `crawlgate_html_passthrough_total` and the log, once per response.

use crawlgate_html::markdown::MarkdownConverter;
use crawlgate_html::{Bail, Rewriter};

use crate::metrics::{MarkdownFailure, Metrics, Passthrough};

/// The target of these lines: the one they had in the proxy, where they
/// were written, so a `RUST_LOG` filter that names it keeps them.
const TARGET: &str = "crawlgate_proxy::html";

/// What the robots rewriter of one response reported since the last call: findings into
/// `crawlgate_html_findings_total` (and the debug log), a bail-out into
/// `crawlgate_html_passthrough_total` and the log, once.
pub fn report_robots(
    rw: &mut Rewriter,
    mode: &'static str,
    metrics: &Metrics,
    path: &str,
    end_of_stream: bool,
    bailed: &mut bool,
) {
    for f in rw.take_findings() {
        metrics.html_finding(mode, f.kind.as_str());
        // Counted in crawlgate_html_findings_total; one line per finding
        // would flood the log on a busy site, so it is debug.
        tracing::debug!(target: "crawlgate::html", path, mode = mode, kind = f.kind.as_str(), token = %f.token, rule = %f.rule, "Robots meta finding");
    }
    // Past crawlgate_html::MAX_FINDINGS per response only counts come.
    for (kind, n) in rw.take_dropped_findings().iter() {
        metrics.html_findings(mode, kind.as_str(), n);
    }
    let dropped = rw.dropped_findings().total();
    if end_of_stream && dropped > 0 {
        tracing::info!(
            target: TARGET,
            path,
            mode = mode,
            dropped,
            recorded = crawlgate_html::MAX_FINDINGS,
            "HTML findings beyond the recorded ones were counted, not logged"
        );
    }
    if !*bailed {
        match rw.bail() {
            None => {}
            Some(Bail::Utf16Bom) => {
                *bailed = true;
                metrics.html_passthrough(Passthrough::Utf16);
                tracing::info!(target: TARGET, path, "HTML left unchanged: the body starts with a UTF-16 byte order mark");
            }
            Some(bail) => {
                *bailed = true;
                metrics.html_passthrough(Passthrough::BailOut);
                tracing::warn!(
                    target: TARGET,
                    path,
                    reason = bail.as_str(),
                    "HTML rewriter gave up; the rest of the body passes through unchanged"
                );
            }
        }
    }
}

/// What the Markdown converter of one response reported: a bail-out into
/// `crawlgate_html_passthrough_total`, `crawlgate_markdown_failed_total`
/// and the log, once; at the end of the body, the Markdown served
/// (`crawlgate_markdown_converted_total` when nothing stopped it). What was
/// converted before a bail-out is what the client gets.
pub fn report_markdown(md: &MarkdownConverter, metrics: &Metrics, path: &str, end_of_stream: bool, bailed: &mut bool) {
    if !*bailed {
        match md.bail() {
            None => {}
            Some(Bail::Utf16Bom) => {
                *bailed = true;
                metrics.html_passthrough(Passthrough::Utf16);
                metrics.markdown().failed(MarkdownFailure::Utf16);
                tracing::info!(target: TARGET, path, "Markdown conversion stopped: the body starts with a UTF-16 byte order mark");
            }
            Some(bail) => {
                *bailed = true;
                metrics.html_passthrough(Passthrough::BailOut);
                metrics.markdown().failed(MarkdownFailure::BailOut);
                tracing::warn!(target: TARGET, path, reason = bail.as_str(), "Markdown converter gave up; the Markdown ends there");
            }
        }
    }
    if end_of_stream {
        let (bytes, tokens) = (md.bytes() as u64, md.tokens() as u64);
        match *bailed {
            false => metrics.markdown().converted(bytes, tokens),
            true => metrics.markdown().served(bytes, tokens),
        }
    }
}
