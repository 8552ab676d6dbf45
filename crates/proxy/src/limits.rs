//! Rate limits in the proxy: counts a forwarded request against the limit
//! its verdict names (`Policy::decide_request`, pure) in the snapshot's
//! [`crawlgate_limits::Limiter`] (`crate::handles`: one per process, kept
//! across reloads, so a changed rate applies to the next request and no
//! bucket is reset), and writes the 429 when it is over. Nothing here
//! decides which limit applies.

use std::time::{Duration, Instant};

use bytes::Bytes;
use crawlgate_limits::{retry_after_secs, Limiter, Verdict};
use crawlgate_policy::limits::{GroupLimit, Limit, LimitSettings, RateMode, StoreSetting};
use http::header;
use pingora::proxy::Session;
use pingora::Result;

/// The `[limits]` keys only a restart applies, as `(key, value)`: the
/// store and its connection settings, and the in-process store's bound.
/// The rates, bursts and network prefixes follow a reload.
pub fn restart_only(s: &LimitSettings) -> Vec<(&'static str, String)> {
    vec![
        // The URL itself (its Debug form hides the password, whose change
        // needs a restart too); only the key's name is ever shown.
        (
            "limits.store",
            match &s.store {
                StoreSetting::Local => "local".to_string(),
                StoreSetting::Redis(url) => url.clone(),
            },
        ),
        ("limits.key_prefix", s.key_prefix.clone()),
        ("limits.timeout", format!("{:?}", s.timeout)),
        ("limits.max_keys", s.max_keys.to_string()),
    ]
}

/// A request over its limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refused {
    /// The limit it is over.
    pub limit: GroupLimit,
    /// `Retry-After`, whole seconds.
    pub retry_after: u64,
}

/// What the limit did with a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checked {
    /// Within the rate.
    Pass,
    /// Over the rate under `rate_mode = "log"`: it passes, counted and
    /// logged as `would_limit`.
    WouldLimit,
    /// Over the rate under `rate_mode = "delay"`: held this long, then
    /// admitted.
    Delayed(Duration),
    /// Refused (429).
    Refused(Refused),
}

impl Checked {
    /// The `over_rate` of a request over its rate that passed.
    pub fn over_rate(&self) -> Option<&'static str> {
        match self {
            Checked::WouldLimit => Some("would_limit"),
            Checked::Delayed(_) => Some("delayed"),
            Checked::Pass | Checked::Refused(_) => None,
        }
    }
}

/// Counts one request checked at `now` against `limit` and carries out
/// its group's `rate_mode`: a held request (`"delay"`) sleeps until the
/// rate admits it and is checked again, as long as its whole wait stays
/// within the bound; past it, or under `"reject"`, a 429 whose
/// `Retry-After` is clamped to the limit's burst span, between a minute
/// and a day ([`GroupLimit::max_retry_after`]: a shared store's answer
/// cannot set a longer one).
///
/// `now` is the time of the check, not of arrival: checks of one key then
/// see times in order, so a request held up (by verification, by the
/// scheduler) is not counted as coming before the ones checked while it
/// waited, which GCRA would refuse as a burst.
pub async fn check(limiter: &Limiter, limit: &Limit<'_>, now: Instant) -> Checked {
    let mut waited = Duration::ZERO;
    let mut at = now;
    loop {
        let retry_after = match limiter.check(&limit.key, &limit.limit, at).await.verdict {
            Verdict::Allow if waited.is_zero() => return Checked::Pass,
            Verdict::Allow => return Checked::Delayed(waited),
            Verdict::Deny { retry_after } => retry_after.min(limit.limit.max_retry_after()),
        };
        match limit.mode {
            RateMode::Log => return Checked::WouldLimit,
            RateMode::Delay(max) if waited + retry_after <= max => {
                tokio::time::sleep(retry_after).await;
                waited += retry_after;
                at = Instant::now();
            }
            RateMode::Reject | RateMode::Delay(_) => {
                return Checked::Refused(Refused { limit: limit.limit, retry_after: retry_after_secs(retry_after) })
            }
        }
    }
}

/// The 429 body: the group, its limit in words (on which paths, for a
/// `[[group.rates]]` entry, named by its first path), and when to come
/// back.
pub fn body(refused: &Refused, group: &str, path: Option<&str>) -> String {
    let on = path.map_or(String::new(), |p| format!(" on {p}"));
    format!(
        "429 Too Many Requests\n\nThis site allows the group {group} {}{on}. Retry after {} s.\nSee /robots.txt for the published Crawl-delay.\n",
        refused.limit.describe(),
        refused.retry_after
    )
}

/// Writes the 429 with `Retry-After` (RFC 9110 section 10.2.3, RFC 6585
/// section 4).
pub async fn respond(session: &mut Session, refused: &Refused, group: &str, path: Option<&str>) -> Result<()> {
    let retry = refused.retry_after.to_string();
    crate::respond::write(
        session,
        429,
        &[
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
            (header::RETRY_AFTER, &retry),
        ],
        Bytes::from(body(refused, group, path)),
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crawlgate_policy::limits::{LimitSource, Rate};
    use std::time::Duration;

    #[test]
    fn the_body_names_the_limit_and_the_group() {
        let refused = Refused {
            limit: GroupLimit {
                rate: Rate { count: 2, per: Duration::from_secs(1) },
                burst: 1,
                source: LimitSource::Rate,
            },
            retry_after: 1,
        };
        assert_eq!(
            body(&refused, "ExampleBot", None),
            "429 Too Many Requests\n\nThis site allows the group ExampleBot 2 requests per second. Retry after 1 s.\nSee /robots.txt for the published Crawl-delay.\n"
        );
        let crawl_delay = Refused {
            limit: GroupLimit {
                rate: Rate { count: 1, per: Duration::from_secs(10) },
                burst: 5,
                source: LimitSource::CrawlDelay,
            },
            retry_after: 10,
        };
        assert_eq!(
            body(&crawl_delay, "ClaudeBot", None),
            "429 Too Many Requests\n\nThis site allows the group ClaudeBot 1 request every 10 s (its Crawl-delay), bursts of up to 5. Retry after 10 s.\nSee /robots.txt for the published Crawl-delay.\n"
        );
        assert_eq!(
            body(&refused, "*", Some("/search")),
            "429 Too Many Requests\n\nThis site allows the group * 2 requests per second on /search. Retry after 1 s.\nSee /robots.txt for the published Crawl-delay.\n"
        );
    }
}
