//! Diagnostics with file, line and column, and the duration syntax.

use std::fmt;
use std::time::Duration;

/// One error or warning about a policy file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The file name as given to [`crate::load`].
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column (characters).
    pub col: usize,
    /// What is wrong, naming the key.
    pub message: String,
    /// The warning's kind; `None` for an error.
    pub warning: Option<Warning>,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: ", self.file, self.line, self.col)?;
        if let Some(w) = self.warning {
            write!(f, "warning[{}]: ", w.id())?;
        }
        f.write_str(&self.message)
    }
}

/// Whether the key at `path` (table keys, as for [`error_at_key`]) is
/// written in `source`, rather than taken from a default.
pub fn key_written(source: &str, path: &[&str]) -> bool {
    crate::type_error::value_offset(source, path).is_some()
}

/// An error about the value of the key at `path` in `source` (e.g.
/// `["verification", "state_dir"]`), located at that value (line 1, column
/// 1 when it is not written): for checks the pure policy cannot make, such
/// as whether a directory exists.
pub fn error_at_key(source: &str, file: &str, path: &[&str], message: impl Into<String>) -> Diagnostic {
    let offset = crate::type_error::value_offset(source, path).unwrap_or(0);
    Locator::new(file, source).at(offset, message)
}

/// The kinds of warning, each with a stable id that `allow_warnings`
/// names to acknowledge it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Warning {
    /// A token with digits or dots (outside RFC 9309 section 2.2.1).
    NonRfcToken,
    /// A token listed twice in one group.
    RepeatedToken,
    /// A category group emptied by explicit tokens elsewhere.
    EmptyCategoryGroup,
    /// A Content-Usage key outside the AIPREF vocabulary.
    ContentUsageVocabulary,
    /// App-Directives outside the `*` group.
    AppDirectivesNotStar,
    /// `enforce` on the `*` group, whose requests name no token.
    EnforceOnStar,
    /// `block` on robots.txt-only tokens.
    RobotsOnlyToken,
    /// `enforce` in a group with no rule that can disallow.
    EnforceWithoutRules,
    /// A group leaving its crawlers less restricted than `*`.
    WeakerThanStar,
    /// An explicit token taken out of a category group.
    TokenLeavesCategory,
    /// The admin listener off loopback without `admin_auth_file`.
    AdminWithoutAuth,
    /// `content_signal = "derive"` with nothing to derive from.
    ContentSignalUnderived,
    /// `content_signal` saying otherwise than the `*` group's Content-Usage.
    ContentSignalMismatch,
    /// An RSL document without a robots.txt `License` line.
    RslWithoutLicense,
    /// An origin robots.txt key while `origin` is not `merge`.
    OriginKeyUnused,
    /// Web Bot Auth key directories allowed over plain HTTP.
    HttpKeyDirectories,
    /// Web Bot Auth key directories fetched from any host.
    AnyDirectoryHost,
    /// No authority to bind Web Bot Auth signatures to this site.
    UnboundSignatures,
    /// A key in its old place, still read (the message says where it moved).
    DeprecatedKey,
    /// A group blocks failed claims while no proxy in front is trusted, so
    /// behind a load balancer every real crawler fails verification.
    BlockWithoutTrustedProxies,
    /// A pattern in both `allow` and `disallow` of one group.
    AllowDisallowSame,
    /// A token not in the catalog, a few edits from one that is.
    TokenTypo,
    /// A Content-Signal `use=` level that `ai-use` / `train-ai` (or the
    /// line's own `ai-input` / `ai-train`) contradicts.
    ContentSignalUseConflict,
    /// `enforce_crawl_delay` on a group without `crawl_delay`.
    EnforceCrawlDelayWithoutDelay,
    /// A `rate` that would refuse a crawler keeping to the group's
    /// published Crawl-delay.
    RateStricterThanCrawlDelay,
    /// Web Bot Auth key directories fetched from private, loopback or
    /// link-local addresses.
    PrivateKeyDirectories,
    /// Address verification (IP lists, reverse DNS) while the policy says a
    /// proxy is in front and trusts none: every real crawler is spoofed.
    AddressChecksBehindProxy,
}

impl Warning {
    /// Every kind, in the order `allow_warnings` errors list them.
    pub const ALL: [Warning; 27] = [
        Warning::NonRfcToken,
        Warning::RepeatedToken,
        Warning::EmptyCategoryGroup,
        Warning::ContentUsageVocabulary,
        Warning::AppDirectivesNotStar,
        Warning::EnforceOnStar,
        Warning::RobotsOnlyToken,
        Warning::EnforceWithoutRules,
        Warning::WeakerThanStar,
        Warning::TokenLeavesCategory,
        Warning::AdminWithoutAuth,
        Warning::ContentSignalUnderived,
        Warning::ContentSignalMismatch,
        Warning::RslWithoutLicense,
        Warning::OriginKeyUnused,
        Warning::HttpKeyDirectories,
        Warning::AnyDirectoryHost,
        Warning::UnboundSignatures,
        Warning::DeprecatedKey,
        Warning::BlockWithoutTrustedProxies,
        Warning::AllowDisallowSame,
        Warning::TokenTypo,
        Warning::ContentSignalUseConflict,
        Warning::EnforceCrawlDelayWithoutDelay,
        Warning::RateStricterThanCrawlDelay,
        Warning::PrivateKeyDirectories,
        Warning::AddressChecksBehindProxy,
    ];

    /// The stable id, as printed (`warning[id]`) and as `allow_warnings`
    /// names it.
    pub const fn id(self) -> &'static str {
        match self {
            Warning::NonRfcToken => "non-rfc-token",
            Warning::RepeatedToken => "repeated-token",
            Warning::EmptyCategoryGroup => "empty-category-group",
            Warning::ContentUsageVocabulary => "content-usage-vocabulary",
            Warning::AppDirectivesNotStar => "app-directives-not-star",
            Warning::EnforceOnStar => "enforce-on-star",
            Warning::RobotsOnlyToken => "robots-only-token",
            Warning::EnforceWithoutRules => "enforce-without-rules",
            Warning::WeakerThanStar => "weaker-than-star",
            Warning::TokenLeavesCategory => "token-leaves-category",
            Warning::AdminWithoutAuth => "admin-without-auth",
            Warning::ContentSignalUnderived => "content-signal-nothing-to-derive",
            Warning::ContentSignalMismatch => "content-signal-mismatch",
            Warning::RslWithoutLicense => "rsl-without-license",
            Warning::OriginKeyUnused => "origin-key-unused",
            Warning::HttpKeyDirectories => "http-key-directories",
            Warning::AnyDirectoryHost => "any-directory-host",
            Warning::UnboundSignatures => "unbound-signatures",
            Warning::DeprecatedKey => "deprecated-key",
            Warning::BlockWithoutTrustedProxies => "block-without-trusted-proxies",
            Warning::AllowDisallowSame => "allow-disallow-same",
            Warning::TokenTypo => "token-typo",
            Warning::ContentSignalUseConflict => "content-signal-use-conflict",
            Warning::EnforceCrawlDelayWithoutDelay => "enforce-crawl-delay-without-delay",
            Warning::RateStricterThanCrawlDelay => "rate-stricter-than-crawl-delay",
            Warning::PrivateKeyDirectories => "private-key-directories",
            Warning::AddressChecksBehindProxy => "address-checks-behind-proxy",
        }
    }

    /// The kind named `id`.
    pub fn from_id(id: &str) -> Option<Warning> {
        Warning::ALL.into_iter().find(|w| w.id() == id)
    }
}

/// Every error found in a policy, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

/// Turns byte offsets into line and column. Line starts are indexed once,
/// so a policy with thousands of rules is located in O(log n) per rule.
pub(crate) struct Locator<'a> {
    file: &'a str,
    source: &'a str,
    /// Byte offset of the start of each line.
    line_starts: Vec<usize>,
}

impl<'a> Locator<'a> {
    pub(crate) fn new(file: &'a str, source: &'a str) -> Self {
        let line_starts =
            std::iter::once(0).chain(memchr::memchr_iter(b'\n', source.as_bytes()).map(|i| i + 1)).collect();
        Locator { file, source, line_starts }
    }

    pub(crate) fn at(&self, offset: usize, message: impl Into<String>) -> Diagnostic {
        let offset = offset.min(self.source.len());
        let line_idx = self.line_starts.partition_point(|&start| start <= offset).saturating_sub(1);
        let start = self.line_starts.get(line_idx).copied().unwrap_or(0);
        let col = self.source.get(start..offset).map_or(0, |l| l.chars().count()) + 1;
        Diagnostic { file: self.file.to_string(), line: line_idx + 1, col, message: message.into(), warning: None }
    }

    /// The text located.
    pub(crate) fn source(&self) -> &'a str {
        self.source
    }

    pub(crate) fn line_of(&self, offset: usize) -> usize {
        self.at(offset, "").line
    }
}

/// Parses `500ms`, `30s`, `5m`, `1h`, `2d`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    // Trimmed below: a control character at either end would pass unseen.
    crate::validate::no_control_char(s)?;
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num.parse().map_err(|_| format!("`{s}` is not a duration (use e.g. 500ms, 30s, 5m, 1h, 2d)"))?;
    let secs = |mult: u64| n.checked_mul(mult).map(Duration::from_secs);
    let d = match unit {
        "ms" => Some(Duration::from_millis(n)),
        "s" => secs(1),
        "m" => secs(60),
        "h" => secs(3600),
        "d" => secs(86_400),
        _ => None,
    };
    d.ok_or_else(|| format!("`{s}` is not a duration (use e.g. 500ms, 30s, 5m, 1h, 2d)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("2d"), Ok(Duration::from_secs(172_800)));
        assert!(parse_duration("1 hour").is_err());
        assert_eq!(parse_duration("1h\r"), Err("`1h\\r` contains a control character".into()));
        assert_eq!(parse_duration("\n5m"), Err("`\\n5m` contains a control character".into()));
        assert!(parse_duration("h").is_err());
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn locations() {
        let src = "a = 1\nbé = 2\n";
        let l = Locator::new("f.toml", src);
        assert_eq!(l.at(0, "x").to_string(), "f.toml:1:1: x");
        assert_eq!(l.at(src.rfind('=').unwrap_or(0), "x").to_string(), "f.toml:2:4: x");
    }
}
