//! [`Rewriter`]: one response's body through lol_html, in chunks.

use std::borrow::Cow;
use std::sync::{Arc, LazyLock, Mutex};

use bytes::Bytes;
use lol_html::send::{Element, ElementContentHandlers, HtmlRewriter, Settings};
use lol_html::{AsciiCompatibleEncoding, MemorySettings, Selector};

use crate::handlers::{is_head_over, on_element, HeadOver};
use crate::plan::{PlanInner, RewritePlan};
use crate::scan::{plain_encoding, HeadScan, Verdict, MAX_HELD};
use crate::slots::{lock, Phase, Sink, State};
use crate::{Config, DroppedFindings, Finding, Mode, Unsupported};

/// Bytes fed to lol_html at a time while the head is open (inject,
/// enforce).
const HEAD_SLICE: usize = 1024;

/// The handler's selector, `*`, parsed once per process: lol_html's
/// `element!` parses its selector string anew for every rewriter, and a
/// borrowed `Selector` is what its settings take instead. (`None` cannot
/// happen: `*` is a valid selector; the rewriter then passes the body
/// through unchanged.)
static EVERY_ELEMENT: LazyLock<Option<Selector>> = LazyLock::new(|| "*".parse().ok());

/// Why a rewriter stopped rewriting; the rest of the body passes through
/// unchanged.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Bail {
    /// The body starts with a UTF-16 byte order mark (`FE FF` or `FF FE`).
    /// Browsers decode it as UTF-16 whatever the Content-Type label says
    /// (WHATWG Encoding, "BOM sniff"), and lol_html rewrites only
    /// ASCII-compatible encodings: the whole body passes through.
    Utf16Bom,
    /// lol_html failed (its memory limit, a parsing ambiguity); what was
    /// rewritten before stays rewritten.
    Rewriting(String),
}

impl Bail {
    /// A sentence for the log.
    pub fn as_str(&self) -> &str {
        match self {
            Bail::Utf16Bom => "the body starts with a UTF-16 byte order mark",
            Bail::Rewriting(reason) => reason,
        }
    }
}

impl std::fmt::Display for Bail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether `start` (the first two bytes of a body) is a UTF-16 byte order
/// mark, and which: `Some(true)` big-endian, `Some(false)` little-endian.
pub(crate) fn utf16_bom(start: &[u8]) -> Option<bool> {
    match start {
        [0xFE, 0xFF, ..] => Some(true),
        [0xFF, 0xFE, ..] => Some(false),
        _ => None,
    }
}

/// lol_html on `plan` for one response, its output into `state`.
fn lol(
    plan: &Arc<PlanInner>,
    state: &Arc<Mutex<State>>,
    encoding: Option<AsciiCompatibleEncoding>,
) -> HtmlRewriter<'static, Sink> {
    let max_memory = plan.max_memory;
    let (s, p) = (state.clone(), plan.clone());
    let handler = move |el: &mut Element<'_, '_>| -> lol_html::HandlerResult {
        let mut st = lock(&s);
        let (phase, placed) = (st.phase, st.placed);
        on_element(&mut st, &p, el, &s);
        // Inject and enforce change nothing after the head. When this
        // element ended it (and did not get the metas itself), stop
        // lol_html right here: it passes this tag and the rest of the
        // input through as they are, and `write` copies the rest.
        if p.mode != Mode::Audit && phase != Phase::AfterHead && st.phase == Phase::AfterHead && st.placed == placed {
            return Err(Box::new(HeadOver));
        }
        Ok(())
    };
    let mut settings = base_settings(max_memory, encoding);
    if let Some(every) = EVERY_ELEMENT.as_ref() {
        settings = settings
            .append_element_content_handler((Cow::Borrowed(every), ElementContentHandlers::default().element(handler)));
    }
    HtmlRewriter::new(settings, Sink(state.clone()))
}

/// The lol_html settings every pass of this crate starts from: lenient
/// parsing, `max_memory` with a graceful bail-out (as for a handler's
/// error), and the body's `encoding`, or without one the page's own
/// `<meta charset>`.
pub(crate) fn base_settings<'h, 's>(max_memory: usize, encoding: Option<AsciiCompatibleEncoding>) -> Settings<'h, 's> {
    let settings = Settings::new_send()
        .with_strict(false)
        .with_memory_settings(
            MemorySettings::new()
                .with_max_allowed_memory_usage(max_memory)
                .with_preallocated_parsing_buffer_size(1024.min(max_memory))
                .with_graceful_bail_out_on_memory_limit_exceeded(true),
        )
        .with_graceful_bail_out_on_content_handler_error(true);
    match encoding {
        Some(e) => settings.with_encoding(e),
        None => settings.with_adjust_charset_on_meta_tag(true),
    }
}

/// The encoding of a Content-Type charset label for lol_html: `None`
/// without a label, an error for a label that is unknown or not
/// ASCII-compatible (UTF-16).
pub(crate) fn encoding_for(charset: Option<&str>) -> Result<Option<AsciiCompatibleEncoding>, Unsupported> {
    let Some(label) = charset.map(str::trim).filter(|l| !l.is_empty()) else { return Ok(None) };
    let enc = encoding_rs::Encoding::for_label(label.as_bytes()).ok_or_else(|| Unsupported(label.to_string()))?;
    Ok(Some(AsciiCompatibleEncoding::new(enc).ok_or_else(|| Unsupported(label.to_string()))?))
}

/// A streaming rewriter for one response. `Send`, not `Sync`.
pub struct Rewriter {
    /// lol_html, while it parses.
    inner: Option<HtmlRewriter<'static, Sink>>,
    /// The byte scanner, while it reads the head (before lol_html).
    scan: Option<HeadScan>,
    /// The charset label's encoding, for lol_html.
    encoding: Option<AsciiCompatibleEncoding>,
    /// lol_html was started.
    lol_html: bool,
    state: Arc<Mutex<State>>,
    plan: Arc<PlanInner>,
    bail: Option<Bail>,
    /// The first byte of the body while the second, which tells whether it
    /// starts with a UTF-16 byte order mark, has not come yet.
    held: Option<u8>,
    /// Whether the start of the body has been checked for a UTF-16 byte
    /// order mark.
    sniffed: bool,
    /// The byte order of a body that starts with a UTF-16 byte order mark
    /// (`true`: big-endian), for the padding of [`Rewriter::fix_growth`].
    utf16_be: Option<bool>,
    /// Set by [`Rewriter::fix_growth`]: the output is exactly this many
    /// bytes longer than the input.
    growth: Option<usize>,
}

impl Rewriter {
    /// A rewriter for a body in `charset` (the Content-Type label, if any;
    /// without one, a `<meta charset>` in the page is honoured).
    pub fn new(config: &Config, charset: Option<&str>) -> Result<Rewriter, Unsupported> {
        Rewriter::with_plan(&RewritePlan::new(config), charset)
    }

    /// A rewriter on a plan built beforehand: what the proxy does for every
    /// response, with one [`RewritePlan`] per HTML plan of the policy. In
    /// inject mode the head is first read by a byte scanner
    /// (`crate::scan`), which places the metas without lol_html when it is
    /// sure of the head, and otherwise hands what it read to lol_html.
    pub fn with_plan(plan: &RewritePlan, charset: Option<&str>) -> Result<Rewriter, Unsupported> {
        Rewriter::build(plan, charset, true)
    }

    /// [`Rewriter::with_plan`] without the byte scanner: lol_html reads
    /// every head. The reference the scanner is tested against.
    pub fn exact(plan: &RewritePlan, charset: Option<&str>) -> Result<Rewriter, Unsupported> {
        Rewriter::build(plan, charset, false)
    }

    fn build(plan: &RewritePlan, charset: Option<&str>, scan: bool) -> Result<Rewriter, Unsupported> {
        let plan = plan.0.clone();
        let label = charset.map(str::trim).filter(|l| !l.is_empty());
        let encoding = encoding_for(label)?;
        let state = Arc::new(Mutex::new(State::new()));
        // The scanner holds at most `scan::MAX_HELD` bytes, far below any
        // memory limit lol_html would reach on them; a tiny limit (tests)
        // keeps lol_html's bail-out.
        let scan = scan
            && plan.mode == Mode::Inject
            && plan.max_memory >= 64 * MAX_HELD
            && label.is_none_or(|l| plain_encoding(l.as_bytes()));
        let inner = if scan { None } else { Some(lol(&plan, &state, encoding)) };
        Ok(Rewriter {
            inner,
            scan: scan.then(HeadScan::new),
            encoding,
            lol_html: !scan,
            state,
            plan,
            bail: None,
            held: None,
            sniffed: false,
            utf16_be: None,
            growth: None,
        })
    }

    /// Makes the output exactly `n` bytes longer than the input, whatever
    /// the page turns out to hold, and returns `n`; `None` in enforce mode
    /// (it removes bytes) and in audit mode (it changes none). Call it
    /// before the first [`Rewriter::write`].
    ///
    /// `n` is the most inject can insert: `<head>`, every policy meta and
    /// `</head>`. When less goes in (the page has its own `<head>`, already
    /// carries a policy meta, or the rewriter gave up before the insertion
    /// point) [`Rewriter::finish`] appends the difference as spaces after
    /// the last byte of the page, where HTML ignores them (after a UTF-16
    /// byte order mark, spaces in that encoding). The proxy uses
    /// this to keep a `Content-Length` response a `Content-Length`
    /// response: no chunked framing and one write instead of three for a
    /// small page.
    pub fn fix_growth(&mut self) -> Option<usize> {
        if self.plan.mode != Mode::Inject {
            return None;
        }
        let metas: usize = self.plan.all_html().map(str::len).sum();
        let n = if metas == 0 { 0 } else { "<head>".len() + metas + "</head>".len() };
        self.growth = Some(n);
        Some(n)
    }

    /// Gives up parsing: the rest passes through. The head was not seen
    /// to its end, so what it lacks is not reported.
    fn give_up(&mut self, reason: Bail) {
        self.inner = None;
        self.scan = None;
        self.bail = Some(reason);
        lock(&self.state).phase = Phase::AfterHead;
    }

    /// Feeds a chunk; returns what is ready. Never fails: after a lol_html
    /// error the rest passes through unchanged, and so does a body that
    /// starts with a UTF-16 byte order mark ([`Bail::Utf16Bom`]; the first
    /// byte of a body is held until the second comes).
    pub fn write(&mut self, chunk: &[u8]) -> Bytes {
        if self.sniffed {
            return self.feed(chunk);
        }
        let Some(&next) = chunk.first() else { return Bytes::new() };
        let Some(first) = self.held.take() else {
            if chunk.len() < 2 {
                self.held = Some(next);
                return Bytes::new();
            }
            self.sniff(chunk);
            return self.feed(chunk);
        };
        self.sniff(&[first, next]);
        let mut out = self.feed(&[first]).to_vec();
        out.extend_from_slice(&self.feed(chunk));
        Bytes::from(out)
    }

    /// Checks the first two bytes of the body for a UTF-16 byte order mark;
    /// on one, stops rewriting before anything was parsed.
    fn sniff(&mut self, start: &[u8]) {
        self.sniffed = true;
        if let Some(big_endian) = utf16_bom(start) {
            self.utf16_be = Some(big_endian);
            self.give_up(Bail::Utf16Bom);
        }
    }

    /// [`Rewriter::write`] once the start of the body is known.
    fn feed(&mut self, chunk: &[u8]) -> Bytes {
        if let Some(scan) = self.scan.as_mut() {
            let verdict = scan.push(chunk, &self.plan);
            if verdict == Verdict::More {
                return Bytes::new();
            }
            let held = self.scan.take().map(|s| s.held).unwrap_or_default();
            let input = if held.is_empty() { chunk } else { &held };
            return match verdict {
                Verdict::Insert(at) => {
                    let inserted = self.plan.inserted.as_bytes();
                    let mut out = Vec::with_capacity(input.len() + inserted.len());
                    out.extend_from_slice(&input[..at]);
                    out.extend_from_slice(inserted);
                    out.extend_from_slice(&input[at..]);
                    let mut st = lock(&self.state);
                    st.grown += inserted.len();
                    st.phase = Phase::AfterHead;
                    Bytes::from(out)
                }
                _ => {
                    self.inner = Some(lol(&self.plan, &self.state, self.encoding));
                    self.lol_html = true;
                    self.parse(input)
                }
            };
        }
        self.parse(chunk)
    }

    /// [`Rewriter::feed`] through lol_html.
    fn parse(&mut self, chunk: &[u8]) -> Bytes {
        // Nothing after the head is rewritten in inject and enforce mode.
        // The element that ends the head usually stops lol_html on the spot
        // (`HeadOver`); when that element itself got the metas (a fragment)
        // it cannot, and the slices bound how far parsing runs on past it
        // (lol_html with a `*` handler is several times slower than a copy).
        let step = if self.plan.mode == Mode::Audit { chunk.len() } else { HEAD_SLICE };
        if self.inner.is_some() {
            // The output of this chunk is about its size, plus the metas:
            // one allocation instead of the sink's vector doubling from
            // lol_html's first small pieces on.
            let extra = self.growth.unwrap_or(0).max(256);
            lock(&self.state).out.reserve(chunk.len().saturating_add(extra));
        }
        let mut pos = 0;
        while pos < chunk.len() {
            let Some(rw) = self.inner.as_mut() else { break };
            let end = pos.saturating_add(step).min(chunk.len());
            let result = rw.write(&chunk[pos..end]);
            pos = end;
            if let Err(e) = result {
                // Graceful bail-out flushed the unparsed input already.
                if is_head_over(&e) {
                    self.inner = None;
                } else {
                    self.give_up(Bail::Rewriting(e.to_string()));
                }
                break;
            }
            let head_over = self.plan.mode != Mode::Audit && lock(&self.state).phase == Phase::AfterHead;
            if head_over {
                // Stop parsing. `end` flushes a partial tag lol_html still
                // buffers, unchanged.
                if let Some(rw) = self.inner.take() {
                    if let Err(e) = rw.end() {
                        self.give_up(Bail::Rewriting(e.to_string()));
                    }
                }
            }
        }
        let out = lock(&self.state).take_output(&self.plan, self.inner.is_none(), &chunk[pos..]);
        Bytes::from(out)
    }

    /// [`Rewriter::write`] for a chunk the caller owns: once parsing is over
    /// (the head ended in inject or enforce mode, or the rewriter gave up)
    /// the chunk comes back as it is, without a copy.
    pub fn write_bytes(&mut self, chunk: Bytes) -> Bytes {
        if self.inner.is_some() || self.scan.is_some() || !self.sniffed {
            return self.write(&chunk);
        }
        let mut st = lock(&self.state);
        if !st.holds_output() {
            return chunk;
        }
        Bytes::from(st.take_output(&self.plan, true, &chunk))
    }

    /// End of input; returns the rest.
    pub fn finish(&mut self) -> Bytes {
        // A body of one byte: no byte order mark.
        self.sniffed = true;
        let mut out = match self.held.take() {
            Some(first) => self.feed(&[first]).to_vec(),
            None => Vec::new(),
        };
        // The scanner was still unsure where the head ends: lol_html
        // decides on what it held.
        if let Some(scan) = self.scan.take() {
            self.inner = Some(lol(&self.plan, &self.state, self.encoding));
            self.lol_html = true;
            out.extend_from_slice(&self.parse(&scan.held));
        }
        if let Some(rw) = self.inner.take() {
            if let Err(e) = rw.end() {
                self.give_up(Bail::Rewriting(e.to_string()));
            }
        }
        let mut st = lock(&self.state);
        st.close_head(&self.plan);
        out.extend_from_slice(&st.take_output(&self.plan, true, &[]));
        if let Some(n) = self.growth {
            // At most `n` went in: one insertion point gets the metas.
            debug_assert!(st.grown <= n, "inserted {} bytes, promised {n}", st.grown);
            let pad = n.saturating_sub(st.grown);
            match self.utf16_be {
                None => out.resize(out.len() + pad, b' '),
                // Spaces in the body's own encoding; an odd count leaves
                // one byte that no UTF-16 decoder can read.
                Some(big_endian) => {
                    let space: [u8; 2] = if big_endian { [0, b' '] } else { [b' ', 0] };
                    out.extend(space.iter().copied().cycle().take(pad));
                }
            }
            st.grown = n;
        }
        Bytes::from(out)
    }

    /// Findings recorded so far (drained): at most [`MAX_FINDINGS`] over
    /// the whole response.
    pub fn take_findings(&mut self) -> Vec<Finding> {
        std::mem::take(&mut lock(&self.state).findings)
    }

    /// Findings past [`MAX_FINDINGS`], counted but not recorded, over the
    /// whole response so far.
    pub fn dropped_findings(&self) -> DroppedFindings {
        lock(&self.state).dropped
    }

    /// The part of [`Rewriter::dropped_findings`] not taken yet (drained),
    /// for a caller that counts findings as they come.
    pub fn take_dropped_findings(&mut self) -> DroppedFindings {
        std::mem::take(&mut lock(&self.state).dropped_untaken)
    }

    /// Whether lol_html has read (part of) the body: false while, and
    /// after, the byte scanner placed the metas on its own.
    pub fn parsed_by_lol_html(&self) -> bool {
        self.lol_html
    }

    /// Why the rewriter gave up, if it did.
    pub fn bail(&self) -> Option<&Bail> {
        self.bail.as_ref()
    }

    /// [`Rewriter::bail`] as a sentence.
    pub fn bail_reason(&self) -> Option<&str> {
        self.bail.as_ref().map(Bail::as_str)
    }
}

/// Rewrites a whole document at once (tests, benchmarks, `explain`).
pub fn rewrite_all(
    config: &Config,
    charset: Option<&str>,
    input: &[u8],
) -> Result<(Vec<u8>, Vec<Finding>), Unsupported> {
    let mut rw = Rewriter::new(config, charset)?;
    let mut out = rw.write(input).to_vec();
    out.extend_from_slice(&rw.finish());
    Ok((out, rw.take_findings()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::panic)]
    use super::*;
    use crate::FindingKind;

    const fn assert_send<T: Send>() {}
    const _: () = assert_send::<Rewriter>();

    fn cfg(mode: Mode) -> Config {
        Config {
            mode,
            directives: vec![
                ("*".into(), vec!["noindex".into(), "nosnippet".into()]),
                ("GPTBot".into(), vec!["noai".into()]),
            ],
            max_memory: 1 << 20,
        }
    }

    fn run(mode: Mode, html: &str) -> (String, Vec<Finding>) {
        let (out, f) = rewrite_all(&cfg(mode), None, html.as_bytes()).unwrap();
        (String::from_utf8_lossy(&out).into_owned(), f)
    }

    const METAS: &str = "<meta name=\"robots\" content=\"noindex, nosnippet\"><meta name=\"gptbot\" content=\"noai\">";

    #[test]
    fn inject_into_head_or_create_one() {
        assert_eq!(
            run(Mode::Inject, "<html><head><title>t</title></head><body>x</body></html>").0,
            format!("<html><head>{METAS}<title>t</title></head><body>x</body></html>")
        );
        assert_eq!(
            run(Mode::Inject, "<html><body>x</body></html>").0,
            format!("<html><head>{METAS}</head><body>x</body></html>")
        );
        assert_eq!(
            run(Mode::Inject, "<html><title>t</title><body>x</body></html>").0,
            format!("<html><head>{METAS}<title>t</title><body>x</body></html>")
        );
        assert_eq!(
            run(Mode::Inject, "<html>Hi <b>x</b></html>").0,
            format!("<html><head>{METAS}</head>Hi <b>x</b></html>")
        );
        assert_eq!(run(Mode::Inject, "<p>x</p>").0, format!("{METAS}<p>x</p>"));
        assert_eq!(run(Mode::Inject, "<!doctype html><HEAD></HEAD>").0, format!("<!doctype html><HEAD>{METAS}</HEAD>"));
    }

    #[test]
    fn inject_leaves_out_a_meta_the_head_already_has() {
        let page = "<html><head><title>t</title><meta name=ROBOTS content=\"NoSnippet , noindex\"></head><body>x</body></html>";
        assert_eq!(run(Mode::Inject, page).0, page.replace("<head>", "<head><meta name=\"gptbot\" content=\"noai\">"));
        // In the body it does not count.
        let page = "<html><head></head><body><meta name=robots content=\"noindex, nosnippet\"></body></html>";
        assert_eq!(run(Mode::Inject, page).0, page.replace("<head>", &format!("<head>{METAS}")));
    }

    #[test]
    fn audit_reports_without_changing() {
        let page = "<html><head><meta name=\"robots\" content=\"index, follow, noarchive\"></head><body><meta name=\"robots\" content=\"noindex\"></body></html>";
        let (out, mut f) = run(Mode::Audit, page);
        assert_eq!(out, page);
        f.sort();
        let k = |kind, token: &str, rule: &str| Finding { kind, token: token.into(), rule: rule.into() };
        assert_eq!(
            f,
            vec![
                k(FindingKind::Missing, "*", "noindex"),
                k(FindingKind::Missing, "*", "nosnippet"),
                k(FindingKind::Missing, "gptbot", "noai"),
                k(FindingKind::Conflict, "*", "index"),
                k(FindingKind::Extra, "*", "noarchive"),
                k(FindingKind::OutsideHead, "*", "noindex"),
            ]
        );
    }

    #[test]
    fn enforce_strips_conflicts_and_injects() {
        let (out, f) =
            run(Mode::Enforce, "<html><head><meta name=\"ROBOTS\" content=\"INDEX\"><title>t</title></head></html>");
        assert_eq!(out, format!("<html><head>{METAS}<title>t</title></head></html>"));
        assert_eq!(f, vec![Finding { kind: FindingKind::Conflict, token: "*".into(), rule: "index".into() }]);
        let (out, _) = run(Mode::Enforce, "<html><head><meta name=robots content=\"Index, NoArchive\"></head></html>");
        assert_eq!(out, format!("<html><head>{METAS}<meta name=robots content=\"NoArchive\"></head></html>"));
    }

    #[test]
    fn memory_bail_out_passes_everything_through() {
        let mut c = cfg(Mode::Inject);
        c.max_memory = 64;
        let page = format!("<html><head><title>{}</title></head></html>", "x".repeat(10_000));
        let mut rw = Rewriter::new(&c, None).unwrap();
        let mut out = Vec::new();
        for chunk in page.as_bytes().chunks(100) {
            out.extend_from_slice(&rw.write(chunk));
        }
        out.extend_from_slice(&rw.finish());
        assert!(rw.bail_reason().is_some());
        assert_eq!(String::from_utf8_lossy(&out).replace(METAS, ""), page);
    }

    /// `input` split at `cuts`, through a fresh rewriter: the output, the
    /// findings and the bail-out.
    fn split_run(
        mode: Mode,
        charset: Option<&str>,
        growth: bool,
        input: &[u8],
        cuts: &[usize],
    ) -> (Vec<u8>, Vec<Finding>, Option<Bail>) {
        let mut rw = Rewriter::new(&cfg(mode), charset).unwrap();
        if growth {
            let _ = rw.fix_growth();
        }
        let mut out = Vec::new();
        for (i, piece) in crawlgate_testkit::chunks::pieces(input, cuts).enumerate() {
            let got = if i % 2 == 0 { rw.write(piece) } else { rw.write_bytes(Bytes::copy_from_slice(piece)) };
            out.extend_from_slice(&got);
        }
        out.extend_from_slice(&rw.finish());
        (out, rw.take_findings(), rw.bail().cloned())
    }

    /// Every way to cut `len` bytes in at most three places among the first
    /// few bytes (inside a byte order mark), plus a few later cuts.
    fn cuttings(len: usize) -> Vec<Vec<usize>> {
        let mut all = vec![vec![], (1..len).collect()];
        for a in 0..=4.min(len) {
            for b in a..=5.min(len) {
                all.push(vec![a, b]);
                all.push(vec![a, b, (b + 7).min(len)]);
            }
        }
        all
    }

    fn utf16(text: &str, big_endian: bool) -> Vec<u8> {
        let mut out = if big_endian { vec![0xFE, 0xFF] } else { vec![0xFF, 0xFE] };
        for unit in text.encode_utf16() {
            out.extend_from_slice(&if big_endian { unit.to_be_bytes() } else { unit.to_le_bytes() });
        }
        out
    }

    #[test]
    fn a_utf16_body_passes_through_whole_whatever_the_label() {
        let page = "<html><head><meta name=robots content=index><title>caf\u{e9}</title></head><body>x</body></html>";
        for big_endian in [true, false] {
            let body = utf16(page, big_endian);
            for mode in [Mode::Inject, Mode::Enforce, Mode::Audit] {
                for charset in [None, Some("utf-8"), Some("windows-1252")] {
                    for cuts in cuttings(body.len()) {
                        let (out, findings, bail) = split_run(mode, charset, false, &body, &cuts);
                        let context = format!("{mode:?} {charset:?} big-endian {big_endian} cuts {cuts:?}");
                        assert_eq!(out, body, "{context}");
                        assert_eq!(findings, vec![], "{context}");
                        assert_eq!(bail, Some(Bail::Utf16Bom), "{context}");
                    }
                }
            }
            // A promised growth is met with spaces in the body's encoding.
            let (out, _, _) = split_run(Mode::Inject, None, true, &body, &[1]);
            let space: &[u8] = if big_endian { b"\0 " } else { b" \0" };
            let n = "<head></head>".len() + METAS.len();
            assert_eq!(out, [body.as_slice(), &space.repeat(n / 2), &space[..n % 2]].concat());
        }
        // Not a byte order mark: rewritten as usual, however it is cut.
        for body in [b"\xFF<p>x</p>".as_slice(), b"\xFE", b"\xFF", b"<", b""] {
            let (want, _) = rewrite_all(&cfg(Mode::Inject), None, body).unwrap();
            for cuts in cuttings(body.len()) {
                let (out, _, bail) = split_run(Mode::Inject, None, false, body, &cuts);
                assert_eq!((&out, bail), (&want, None), "{body:?} cuts {cuts:?}");
            }
        }
    }

    /// A UTF-8 byte order mark is text before the first element: the metas
    /// go where they go without it, the mark stays first.
    #[test]
    fn a_utf8_bom_does_not_stop_injection() {
        let page = b"\xEF\xBB\xBF<!doctype html><html><head><title>T</title></head><body>caf\xC3\xA9</body></html>";
        let want = [
            b"\xEF\xBB\xBF<!doctype html><html><head>".as_slice(),
            METAS.as_bytes(),
            b"<title>T</title></head><body>caf\xC3\xA9</body></html>",
        ]
        .concat();
        for charset in [None, Some("utf-8")] {
            for cuts in cuttings(page.len()) {
                let (out, _, bail) = split_run(Mode::Inject, charset, false, page, &cuts);
                assert_eq!(bail, None);
                assert!(out == want, "{charset:?} cuts {cuts:?}: {}", String::from_utf8_lossy(&out));
            }
        }
    }

    #[test]
    fn charsets() {
        assert!(Rewriter::new(&cfg(Mode::Inject), Some("utf-16")).is_err());
        assert!(Rewriter::new(&cfg(Mode::Inject), Some("no-such-charset")).is_err());
        assert!(Rewriter::new(&cfg(Mode::Inject), Some(" ")).is_ok());
        let (out, _) = rewrite_all(&cfg(Mode::Inject), Some("windows-1252"), b"<head></head><p>caf\xe9</p>").unwrap();
        assert_eq!(out, [b"<head>".as_slice(), METAS.as_bytes(), b"</head><p>caf\xe9</p>"].concat());
    }
}
