//! Identification of the agent behind a request: the policy's product
//! tokens found in a full User-Agent header as whole words.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};

/// Finds product tokens in a User-Agent header: ASCII case-insensitive, as
/// whole words (a boundary is any character outside `[A-Za-z0-9]`, or the
/// start or end), the longest token found wins (`Googlebot-Image` before
/// `Googlebot`), ties go to the earliest. One automaton, built once; no
/// allocation per call.
///
/// Answers are remembered per thread for the last few hundred distinct
/// User-Agents ([`RECENT`]): real traffic repeats a small set of them, and
/// the automaton (hundreds of KiB for a catalog-sized policy) is slow to
/// walk from a cold cache; a remembered answer costs one hash and one
/// comparison of the header.
///
/// A matcher may rank its tokens in tiers ([`TokenMatcher::tiered`]): a
/// token of a lower tier found anywhere in the header wins over any token
/// of a higher tier, whatever their lengths. A merged policy puts its own
/// tokens first, so that a token the origin's robots.txt names cannot take
/// a request that names one of the policy's.
#[derive(Debug, Clone)]
pub struct TokenMatcher {
    ac: Option<AhoCorasick>,
    lens: Vec<usize>,
    /// Tier of each token (lower first); empty when every token is tier 0.
    tiers: Vec<u8>,
    /// Tokens at this index and past it are found (they take the header
    /// from higher tiers) but identify nothing: `find` answers `None`.
    identifying: usize,
    /// Tells this matcher's remembered answers from another's (a clone
    /// answers alike and shares it).
    id: u64,
}

/// A token found as a word in a header.
#[derive(Clone, Copy, Default)]
struct Span {
    token: usize,
    start: usize,
    end: usize,
    tier: u8,
    identifies: bool,
}

/// The tokens found in one header: inline for the few a real header has,
/// on the heap past that.
#[derive(Default)]
struct Spans {
    inline: [Span; 8],
    len: usize,
    more: Vec<Span>,
}

impl Spans {
    fn push(&mut self, span: Span) {
        match self.inline.get_mut(self.len) {
            Some(slot) => {
                *slot = span;
                self.len += 1;
            }
            None => self.more.push(span),
        }
    }

    fn all(&self) -> impl Iterator<Item = &Span> {
        self.inline[..self.len].iter().chain(&self.more)
    }

    /// Whether a longer identifying token holds `s..e` (a word of it).
    fn inside_longer_identifying(&self, s: usize, e: usize) -> bool {
        self.all().any(|x| x.identifies && x.start <= s && e <= x.end && x.end - x.start > e - s)
    }

    /// The best (lowest) tier of the tokens found within `s..e`, itself
    /// included.
    fn best_tier_within(&self, s: usize, e: usize) -> u8 {
        self.all().filter(|x| s <= x.start && x.end <= e).map(|x| x.tier).min().unwrap_or(0)
    }
}

/// Remembered answers per thread (a direct-mapped table).
const RECENT: usize = 256;

/// User-Agents longer than this are not remembered.
const RECENT_MAX_LEN: usize = 512;

/// One remembered answer.
#[derive(Default)]
struct Recent {
    matcher: u64,
    user_agent: Vec<u8>,
    answer: Answer,
}

/// What is remembered of a User-Agent.
#[derive(Clone, Copy, Default)]
struct Answer {
    token: Option<usize>,
    browser: bool,
    /// The catalog crawler of a header that names no token of this
    /// matcher, once asked ([`TokenMatcher::find_observed`]).
    observed: Option<Option<&'static str>>,
}

thread_local! {
    static RECENT_ANSWERS: RefCell<Vec<Recent>> = const { RefCell::new(Vec::new()) };
}

/// Numbers the matchers of this process (0 is never used).
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A fast non-cryptographic hash of the matcher and the header (FxHash's
/// mixing step over 8-byte words); it only picks a slot, the header itself
/// is compared. The matcher is hashed too: the proxy asks the policy's
/// matcher and the catalog's of every request, and with the header alone
/// both would take the same slot and evict each other every time.
fn slot_of(matcher: u64, bytes: &[u8]) -> usize {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h = (bytes.len() as u64) ^ matcher.wrapping_mul(K);
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    }
    let mut w = [0u8; 8];
    w[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    (h >> 32) as usize % RECENT
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

/// Total token bytes up to which identification uses a DFA (the built-in
/// catalog is about 2 KiB).
const DFA_MAX_BYTES: usize = 32 * 1024;

impl TokenMatcher {
    /// A matcher over `tokens`; `find` returns indices into it.
    pub fn new<S: AsRef<str>>(tokens: &[S]) -> TokenMatcher {
        TokenMatcher::tiered(tokens, &[], tokens.len())
    }

    /// A matcher over `tokens` in tiers: `tiers[i]` is token `i`'s (lower
    /// wins; missing entries are tier 0), and only the first `identifying`
    /// tokens identify: a header whose best token is past them identifies
    /// nothing (the catalog's crawlers that a merged policy leaves to `*`).
    pub fn tiered<S: AsRef<str>>(tokens: &[S], tiers: &[u8], identifying: usize) -> TokenMatcher {
        let lens = tokens.iter().map(|t| t.as_ref().len()).collect();
        let tiers = if tiers.iter().all(|&t| t == 0) { Vec::new() } else { tiers.to_vec() };
        // Overlapping search (Standard match kind) so that a token hidden
        // inside a longer non-word match is still seen. A DFA even past the
        // 100 patterns where the crate's default switches to an NFA: a
        // User-Agent is scanned on every request, and a DFA scans it about
        // three times faster (a catalog-sized policy's DFA is a few hundred
        // KiB). The default automaton if a DFA cannot be built.
        let build = |kind| {
            AhoCorasickBuilder::new()
                .ascii_case_insensitive(true)
                .match_kind(MatchKind::Standard)
                .kind(kind)
                .build(tokens.iter().map(AsRef::as_ref))
        };
        // The DFA's size (and build time) grows with the total length of the
        // tokens times the alphabet; past a catalog's worth, the crate's own
        // choice keeps a policy of thousands of tokens quick to load.
        let total: usize = tokens.iter().map(|t| t.as_ref().len()).sum();
        let first = if total <= DFA_MAX_BYTES { build(Some(AhoCorasickKind::DFA)) } else { build(None) };
        let ac = first.or_else(|_| build(None)).ok();
        TokenMatcher { ac, lens, tiers, identifying, id: NEXT_ID.fetch_add(1, Ordering::Relaxed) }
    }

    /// Index of the token identified in `user_agent`, if any.
    pub fn find(&self, user_agent: &str) -> Option<usize> {
        self.ac.as_ref()?;
        self.answer(user_agent).token
    }

    /// [`looks_like_browser`], remembered with the answer of [`TokenMatcher::find`]
    /// for the same header (the proxy asks both of every request).
    pub fn looks_like_browser(&self, user_agent: &str) -> bool {
        self.answer(user_agent).browser
    }

    /// The remembered answer for `user_agent`, found and remembered first
    /// when there is none.
    fn answer(&self, user_agent: &str) -> Answer {
        self.with_answer(user_agent, |a| *a)
    }

    /// [`TokenMatcher::find`], and for a header that names none of these
    /// tokens the catalog crawler it names ([`catalog_crawler`]), both from
    /// one remembered answer: a decision asks both of every request.
    pub fn find_observed(&self, user_agent: &str) -> (Option<usize>, Option<&'static str>) {
        if self.ac.is_none() {
            return (None, catalog_crawler(user_agent));
        }
        self.with_answer(user_agent, |a| {
            if a.token.is_some() {
                return (a.token, None);
            }
            let observed = *a.observed.get_or_insert_with(|| {
                let (matcher, tokens) = &*CATALOG;
                matcher.search(user_agent).and_then(|i| tokens.get(i).copied())
            });
            (None, observed)
        })
    }

    /// Runs `f` on the remembered answer for `user_agent` (found and
    /// remembered first when there is none); what `f` sets is remembered.
    fn with_answer<T>(&self, user_agent: &str, f: impl FnOnce(&mut Answer) -> T) -> T {
        let fresh =
            || Answer { token: self.search(user_agent), browser: looks_like_browser(user_agent), observed: None };
        let hay = user_agent.as_bytes();
        if hay.len() > RECENT_MAX_LEN {
            return f(&mut fresh());
        }
        RECENT_ANSWERS.with(|recent| {
            let Ok(mut recent) = recent.try_borrow_mut() else { return f(&mut fresh()) };
            if recent.is_empty() {
                recent.resize_with(RECENT, Recent::default);
            }
            let r = &mut recent[slot_of(self.id, hay)];
            if r.matcher != self.id || r.user_agent != hay {
                r.answer = fresh();
                r.matcher = self.id;
                r.user_agent.clear();
                r.user_agent.extend_from_slice(hay);
            }
            f(&mut r.answer)
        })
    }

    /// The search itself, without the remembered answers.
    ///
    /// A word inside a longer identifying token found at the same place is
    /// not a candidate: `Googlebot-Image/1.0` names the product token
    /// `Googlebot-Image`, and where a group for that token is served (the
    /// policy's or the origin's), that is the group the crawler obeys
    /// (RFC 9309 section 2.2.1), whatever the tiers say of `Googlebot`; the
    /// longer token ranks in the best tier of the words it holds. Among
    /// the remaining candidates a lower tier wins, then the longer token,
    /// then the earlier.
    fn search(&self, user_agent: &str) -> Option<usize> {
        let ac = self.ac.as_ref()?;
        let hay = user_agent.as_bytes();
        let bounded = |s: usize, e: usize| !(s > 0 && is_word(hay[s - 1]) || e < hay.len() && is_word(hay[e]));
        let tier = |t: usize| self.tiers.get(t).copied().unwrap_or(0);
        // Every token found as a word, in one pass of the automaton (few
        // per header; a header with more keeps the rest on the heap).
        let mut found = Spans::default();
        for m in ac.find_overlapping_iter(hay) {
            if bounded(m.start(), m.end()) {
                let t = m.pattern().as_usize();
                found.push(Span {
                    token: t,
                    start: m.start(),
                    end: m.end(),
                    tier: tier(t),
                    identifies: t < self.identifying,
                });
            }
        }
        let mut best: Option<(usize, usize, u8)> = None; // (token, start, tier)
        for span in found.all() {
            let (t, s, e) = (span.token, span.start, span.end);
            if found.inside_longer_identifying(s, e) {
                continue;
            }
            let ti = if span.identifies { found.best_tier_within(s, e) } else { span.tier };
            let better = match best {
                None => true,
                Some((bt, bs, bti)) => {
                    ti < bti || ti == bti && (self.lens[t] > self.lens[bt] || (self.lens[t] == self.lens[bt] && s < bs))
                }
            };
            if better {
                best = Some((t, s, ti));
            }
        }
        best.map(|(t, _, _)| t).filter(|&t| t < self.identifying)
    }

    /// Number of tokens that identify.
    pub fn len(&self) -> usize {
        self.identifying
    }

    /// Whether no token identifies.
    pub fn is_empty(&self) -> bool {
        self.identifying == 0
    }
}

/// Whether a User-Agent naming no policy token looks like a browser: it
/// starts `Mozilla/` (every current browser's does) and has none of the
/// words automated clients put in theirs (`bot`, `crawl`, `spider`,
/// `slurp`, `http`, `fetch`, `preview`, `headless`, `scan`, `archiv`),
/// ASCII case-insensitive. One pass over the header, comparing only where a word's
/// first letter is; no allocation (it runs on every browser request).
pub fn looks_like_browser(user_agent: &str) -> bool {
    let ua = user_agent.as_bytes();
    if ua.len() < 8 || !ua[..8].eq_ignore_ascii_case(b"Mozilla/") {
        return false;
    }
    let rest = &ua[8..];
    !rest.iter().enumerate().any(|(i, &b)| {
        let words: &[&[u8]] = match b | 0x20 {
            b'b' => &[b"bot"],
            b'c' => &[b"crawl"],
            b's' => &[b"spider", b"slurp", b"scan"],
            b'h' => &[b"http", b"headless"],
            b'f' => &[b"fetch"],
            b'p' => &[b"preview"],
            b'a' => &[b"archiv"],
            _ => return false,
        };
        words.iter().any(|w| rest.len() - i >= w.len() && rest[i..i + w.len()].eq_ignore_ascii_case(w))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two matchers asked about one header (the policy's and the
    /// catalog's, as the proxy does for every request) remember their
    /// answers in different slots, so neither evicts the other.
    #[test]
    fn two_matchers_remember_one_header_in_different_slots() {
        let same = (0..200)
            .filter(|i| {
                let ua = format!("Mozilla/5.0 (X11; Linux x86_64) Firefox/{i}.0");
                slot_of(7, ua.as_bytes()) == slot_of(8, ua.as_bytes())
            })
            .count();
        // Chance alone puts about one in 256 in the same slot.
        assert!(same <= 5, "{same} of 200 headers share a slot across two matchers");
    }

    #[test]
    fn whole_words_longest_first() {
        let m = TokenMatcher::new(&["GPTBot", "Googlebot", "Googlebot-Image", "bot", "Xbot"]);
        assert_eq!(m.find("GPTBot/1.0"), Some(0));
        assert_eq!(m.find("MyGPTBotX"), None);
        assert_eq!(m.find("Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)"), Some(0));
        assert_eq!(m.find("Googlebot-Image/1.0"), Some(2));
        assert_eq!(m.find("Mozilla/5.0 (compatible; googlebot/2.1)"), Some(1));
        assert_eq!(m.find("Xbotty bot"), Some(3));
        assert_eq!(m.find("élan GPTBot/1 ünï"), Some(0));
        assert_eq!(m.find("robot"), None);
        assert_eq!(m.find(""), None);
        assert_eq!(TokenMatcher::new::<&str>(&[]).find("GPTBot"), None);
    }

    #[test]
    fn tokens_with_digits_and_dots() {
        let m = TokenMatcher::new(&["AI2Bot", "Ai2Bot-Dolma", "MJ12bot", "360Spider", "archive.org_bot", "bot"]);
        assert_eq!(m.find("Mozilla/5.0 (compatible) AI2Bot (+https://www.allenai.org/crawler)"), Some(0));
        assert_eq!(m.find("Mozilla/5.0 (compatible) Ai2Bot-Dolma (+https://www.allenai.org/crawler)"), Some(1));
        assert_eq!(m.find("Mozilla/5.0 (compatible; MJ12bot/v1.4.8; http://mj12bot.com/)"), Some(2));
        assert_eq!(m.find("Mozilla/5.0 (Windows NT 6.1; WOW64) 360spider"), Some(3));
        assert_eq!(
            m.find("Mozilla/5.0 (compatible; archive.org_bot +http://archive.org/details/archive.org_bot)"),
            Some(4)
        );
        // Whole tokens only: a digit or letter next to the token is part of
        // another word.
        assert_eq!(m.find("AI2Bots/1.0"), None);
        assert_eq!(m.find("XAI2Bot/1.0"), None);
        assert_eq!(m.find("1360Spider"), None);
        assert_eq!(m.find("MJ12bot2"), None);
        // `archive.org_bot` inside a longer name: `bot` after `_` is a word.
        assert_eq!(m.find("web.archive.org_botx"), None);
        assert_eq!(m.find("my_bot"), Some(5));
    }

    /// A lower tier wins whatever the lengths; tokens past `identifying`
    /// take the header and identify nothing.
    #[test]
    fn tiers_rank_before_length() {
        let tokens = ["GPTBot", "compatible", "Googlebot-Image", "Mozilla", "Googlebot"];
        let m = TokenMatcher::tiered(&tokens, &[0, 2, 1, 2, 0], 5);
        let gpt =
            "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)";
        assert_eq!(m.find(gpt), Some(0));
        assert_eq!(m.search(gpt), Some(0));
        assert_eq!(m.find("Mozilla/5.0 (compatible; Foo/1.0)"), Some(1));
        assert_eq!(m.find("Mozilla/5.0 (X11)"), Some(3));
        // The crawler's own product token: `Googlebot-Image` (tier 1) holds
        // the tier-0 `Googlebot` as a word, and is the group it obeys.
        assert_eq!(m.find("Mozilla/5.0 (compatible; Googlebot-Image/1.0)"), Some(2));
        assert_eq!(m.find("Googlebot-Image/1.0"), Some(2));
        // Holding the tier-0 word, it ranks in tier 0 wherever it is found:
        // then the longer token wins, as without tiers.
        assert_eq!(m.find("Googlebot/2.1 (Googlebot-Image)"), Some(2));
        // A tier-1 token that holds no tier-0 word still yields to one.
        assert_eq!(m.find("Googlebot/2.1 (compatible)"), Some(4));
        // A token past `identifying` is served no group: it does not take
        // its words from a served one.
        let catalog_only = TokenMatcher::tiered(&["Googlebot", "Googlebot-Image"], &[0, 1], 1);
        assert_eq!(catalog_only.find("Googlebot-Image/1.0"), Some(0));
        // Past `identifying`: found, wins over tier 2, identifies nothing.
        let sink = TokenMatcher::tiered(&["GPTBot", "compatible", "ClaudeBot"], &[0, 2, 1], 2);
        assert_eq!(sink.find("Mozilla/5.0 (compatible; ClaudeBot/1.0)"), None);
        assert_eq!(sink.find("Mozilla/5.0 (compatible; Foo/1.0)"), Some(1));
        assert_eq!(sink.find("Mozilla/5.0 (compatible; ClaudeBot/1.0; GPTBot)"), Some(0));
        assert_eq!(sink.len(), 2);
        // All tier 0 is the plain matcher: the longest token wins, so a
        // generic word takes GPTBot's header.
        let plain = TokenMatcher::tiered(&tokens, &[0; 5], 5);
        assert_eq!(plain.find(gpt), Some(1));
        assert_eq!(plain.find("Mozilla/5.0 (compatible; Foo/1.0)"), Some(1));
        assert_eq!(plain.find("Googlebot-Image/1.0"), Some(2));
    }

    /// Remembered answers are this matcher's own and exactly the search's.
    #[test]
    fn remembered_answers_match_the_search() {
        let a = TokenMatcher::new(&["GPTBot", "Googlebot", "Googlebot-Image"]);
        let b = TokenMatcher::new(&["Googlebot-Image", "GPTBot"]);
        let uas: Vec<String> = (0..2000)
            .map(|i| match i % 4 {
                0 => format!("Mozilla/5.0 (X11; Linux x86_64) Chrome/{i}.0"),
                1 if i % 8 == 1 => format!("Mozilla/5.0 (compatible; GPTBot/{i})"),
                1 => format!("GPTBot/{i}"),
                2 => format!("Googlebot-Image/{i}.0"),
                _ => "x".repeat(i % 700),
            })
            .collect();
        for _ in 0..3 {
            for ua in &uas {
                assert_eq!(a.find(ua), a.search(ua), "{ua}");
                assert_eq!(b.find(ua), b.search(ua), "{ua}");
                assert_eq!(a.clone().find(ua), a.search(ua), "{ua}");
                assert_eq!(a.looks_like_browser(ua), looks_like_browser(ua), "{ua}");
            }
        }
        assert_eq!(a.find("Googlebot-Image/1.0"), Some(2));
        assert_eq!(b.find("Googlebot-Image/1.0"), Some(0));
        assert_eq!(a.find("Googlebot-Image/1.0"), Some(2));
    }
    #[test]
    fn classifies_browsers_and_other_bots() {
        assert!(looks_like_browser("Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"));
        assert!(looks_like_browser(
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1"
        ));
        assert!(!looks_like_browser("Mozilla/5.0 (compatible; Bingbot/2.0; +http://www.bing.com/bingbot.htm)"));
        assert!(!looks_like_browser(
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 HeadlessChrome/120.0 Safari/537.36"
        ));
        assert!(!looks_like_browser("curl/8.5.0"));
        assert!(!looks_like_browser(""));
        assert!(!looks_like_browser("Mozilla"));
        assert!(!looks_like_browser("Mozilla/5.0 (compatible; Archiver/1.0)"));
        assert!(!looks_like_browser("Mozilla/5.0 SCAN"));
    }

    /// The one-pass search finds exactly what a search for every word would.
    #[test]
    fn browser_check_agrees_with_a_search_for_every_word() {
        const BOT_WORDS: &[&[u8]] =
            &[b"bot", b"crawl", b"spider", b"slurp", b"http", b"fetch", b"preview", b"headless", b"scan", b"archiv"];
        let naive = |ua: &str| {
            let b = ua.as_bytes();
            b.len() >= 8
                && b[..8].eq_ignore_ascii_case(b"Mozilla/")
                && !BOT_WORDS.iter().any(|w| b[8..].windows(w.len()).any(|win| win.eq_ignore_ascii_case(w)))
        };
        let parts = [
            "Mozilla/", "5.0 ", "(X11)", "Bo", "t", "CRAWL", "spi", "der", "Sl", "urp", "HTTP", "fetc", "h", "Pre",
            "view", "headless", "sca", "n", "archi", "v", " ", "é", "Gecko", "bo", "a", "s", "p",
        ];
        // Every sequence of up to three parts after the prefix.
        let mut cases = vec![String::from("Mozilla/")];
        for _ in 0..3 {
            let next: Vec<String> = cases.iter().flat_map(|c| parts.iter().map(move |p| format!("{c}{p}"))).collect();
            cases.extend(next);
        }
        for ua in &cases {
            assert_eq!(looks_like_browser(ua), naive(ua), "{ua:?}");
        }
        assert!(cases.len() > 20_000);
    }
}

/// The catalog's crawler tokens seen by a request, for observation only.
static CATALOG: std::sync::LazyLock<(TokenMatcher, Vec<&'static str>)> = std::sync::LazyLock::new(|| {
    let tokens: Vec<&'static str> =
        crate::catalog::entries().iter().filter(|e| e.ua_visible).map(|e| e.token.as_str()).collect();
    (TokenMatcher::new(&tokens), tokens)
});

/// The catalog crawler a User-Agent names (catalog spelling), whether or
/// not the policy names it: it identifies the request for logs and
/// metrics, never for enforcement, which follows the policy's groups.
pub fn catalog_crawler(user_agent: &str) -> Option<&'static str> {
    let (matcher, tokens) = &*CATALOG;
    matcher.find(user_agent).and_then(|i| tokens.get(i).copied())
}

/// Every catalog crawler a User-Agent can name (catalog spelling).
pub fn catalog_crawlers() -> impl Iterator<Item = &'static str> {
    CATALOG.1.iter().copied()
}

#[cfg(test)]
mod catalog_tests {
    use super::catalog_crawler;

    /// Catalog crawlers are named in their catalog spelling; browsers and
    /// unknown clients are not.
    #[test]
    fn catalog_crawlers_are_observed() {
        let rows: &[(&str, Option<&str>)] = &[
            ("Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; PerplexityBot/1.0; +https://perplexity.ai/perplexitybot)", Some("PerplexityBot")),
            ("Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; OAI-SearchBot/1.0; +https://openai.com/searchbot", Some("OAI-SearchBot")),
            ("Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot", Some("ChatGPT-User")),
            ("Mozilla/5.0 (X11; Linux x86_64; rv:130.0) Gecko/20100101 Firefox/130.0", None),
            ("curl/8.5.0", None),
        ];
        for (ua, want) in rows {
            assert_eq!(catalog_crawler(ua), *want, "{ua}");
        }
    }
}
