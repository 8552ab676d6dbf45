//! The Markdown family (`[markdown]`): conversions and how each ended,
//! pages the AI-use guard refused, the Markdown's bytes and token
//! estimates, and the cache of converted pages.

use super::*;

use crawlgate_policy::markdown::Refusal;

/// How a conversion that started did not end with the whole Markdown: the
/// `reason` label of `crawlgate_markdown_failed_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkdownFailure {
    /// The page's charset cannot be read (UTF-16, an unknown label): it
    /// was served as HTML.
    Charset,
    /// The body starts with a UTF-16 byte order mark: the Markdown is the
    /// front matter alone.
    Utf16,
    /// The converter gave up mid-body (lol_html's memory limit, a parsing
    /// ambiguity): the Markdown ends there.
    BailOut,
}

impl MarkdownFailure {
    /// Every reason, so that each series exists from the start.
    pub const ALL: [MarkdownFailure; 3] = [MarkdownFailure::Charset, MarkdownFailure::Utf16, MarkdownFailure::BailOut];

    /// Its `reason` label.
    pub const fn as_str(self) -> &'static str {
        match self {
            MarkdownFailure::Charset => "charset",
            MarkdownFailure::Utf16 => "utf-16",
            MarkdownFailure::BailOut => "bail-out",
        }
    }
}

/// The refusal reasons, each series created at start.
const REFUSALS: [Refusal; 2] = [Refusal::NoAi, Refusal::AiUseN];

/// The Markdown metrics.
pub struct MarkdownMetrics {
    converted: IntCounter,
    failed: Vec<IntCounter>,
    refused: Vec<IntCounter>,
    bytes: IntCounter,
    tokens: IntCounter,
    cache_hits: IntCounter,
    cache_misses: IntCounter,
    cache_bytes: IntGauge,
    cache_entries: IntGauge,
}

impl MarkdownMetrics {
    /// Creates and registers them, every series at 0.
    pub(super) fn new(r: &Registry) -> prometheus::Result<MarkdownMetrics> {
        let int = |name: &str, help: &str| -> prometheus::Result<IntCounter> {
            let c = IntCounter::new(name, help)?;
            r.register(Box::new(c.clone()))?;
            Ok(c)
        };
        let gauge = |name: &str, help: &str| -> prometheus::Result<IntGauge> {
            let g = IntGauge::new(name, help)?;
            r.register(Box::new(g.clone()))?;
            Ok(g)
        };
        let failed = IntCounterVec::new(
            Opts::new(
                "crawlgate_markdown_failed_total",
                "Pages negotiated as Markdown whose conversion did not give the whole page, by reason: charset (served as HTML), utf-16 (a UTF-16 byte order mark), bail-out (the converter gave up; the Markdown ends there).",
            ),
            &["reason"],
        )?;
        r.register(Box::new(failed.clone()))?;
        let refused = IntCounterVec::new(
            Opts::new(
                "crawlgate_markdown_refused_total",
                "Pages negotiated as Markdown that the AI-use guard served as HTML, by reason (noai: the robots rules in force; ai-use=n: the Content-Usage).",
            ),
            &["reason"],
        )?;
        r.register(Box::new(refused.clone()))?;
        Ok(MarkdownMetrics {
            converted: int(
                "crawlgate_markdown_converted_total",
                "HTML pages converted to Markdown to the end of their body.",
            )?,
            failed: MarkdownFailure::ALL.iter().map(|f| failed.with_label_values(&[f.as_str()])).collect(),
            refused: REFUSALS.iter().map(|f| refused.with_label_values(&[f.as_str()])).collect(),
            bytes: int(
                "crawlgate_markdown_bytes_total",
                "Bytes of Markdown served (before any content coding), converted or from the cache.",
            )?,
            tokens: int(
                "crawlgate_markdown_tokens_total",
                "Estimated tokens of the Markdown served (its characters / 4, as x-markdown-tokens says).",
            )?,
            cache_hits: int(
                "crawlgate_markdown_cache_hits_total",
                "Markdown requests served from the cache of converted pages (after the origin revalidated the page).",
            )?,
            cache_misses: int(
                "crawlgate_markdown_cache_misses_total",
                "Markdown requests the cache of converted pages could not serve (no entry, or the origin sent a changed page).",
            )?,
            cache_bytes: gauge(
                "crawlgate_markdown_cache_bytes",
                "Bytes the cache of converted pages holds (its bound is [markdown] cache_bytes).",
            )?,
            cache_entries: gauge("crawlgate_markdown_cache_entries", "Pages the cache of converted pages holds.")?,
        })
    }

    /// A page converted to the end of its body: `bytes` and `tokens` of the
    /// Markdown served.
    pub fn converted(&self, bytes: u64, tokens: u64) {
        self.converted.inc();
        self.served(bytes, tokens);
    }

    /// Markdown served (converted now or from the cache).
    pub fn served(&self, bytes: u64, tokens: u64) {
        self.bytes.inc_by(bytes);
        self.tokens.inc_by(tokens);
    }

    /// A conversion that did not give the whole page.
    pub fn failed(&self, why: MarkdownFailure) {
        let i = MarkdownFailure::ALL.iter().position(|f| *f == why).unwrap_or(0);
        if let Some(c) = self.failed.get(i) {
            c.inc();
        }
    }

    /// A page the AI-use guard refused.
    pub fn refused(&self, why: Refusal) {
        let i = REFUSALS.iter().position(|r| *r == why).unwrap_or(0);
        if let Some(c) = self.refused.get(i) {
            c.inc();
        }
    }

    /// A request the cache served (`true`) or could not (`false`).
    pub fn cache_lookup(&self, hit: bool) {
        if hit {
            self.cache_hits.inc();
        } else {
            self.cache_misses.inc();
        }
    }

    /// The cache's size now.
    pub fn cache_size(&self, bytes: usize, entries: usize) {
        self.cache_bytes.set(i64::try_from(bytes).unwrap_or(i64::MAX));
        self.cache_entries.set(i64::try_from(entries).unwrap_or(i64::MAX));
    }
}

impl Metrics {
    /// The Markdown family.
    pub fn markdown(&self) -> &MarkdownMetrics {
        &self.markdown
    }
}
