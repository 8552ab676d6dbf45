//! The public robots.txt conformance suite
//! (`crates/policy/tests/data/conformance/public.jsonl`, described in the
//! README next to it): one [`ConformanceCase`] per line, read with serde,
//! and the one rule for the verdict an RFC 9309 matcher must give.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// How RFC 9309 settles a case, as the suite's `rfc_status` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RfcStatus {
    /// Every plausible reading of RFC 9309 gives `allowed`; a matcher must
    /// pass all of these.
    Consistent,
    /// RFC 9309 leaves the verdict open (percent-encoding edge cases, tokens
    /// with digits, NUL bytes, full User-Agent strings); `allowed` is one
    /// reading, and a matcher documents its own choice and counts matches.
    Ambiguous,
    /// `allowed` is Google's verdict and RFC 9309 gives the opposite; these
    /// are exactly the `google_specific` cases.
    Conflicts,
}

/// Whether Google's parser agrees with `allowed` (the suite's
/// `google_verdict`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GoogleVerdict {
    /// `google_allowed == allowed`.
    Agree,
    /// `google_allowed != allowed`.
    Disagree,
}

/// One line of the conformance suite. Every key is required and no other
/// key is accepted, so a changed suite fails to load instead of being read
/// with defaults.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConformanceCase {
    /// Stable case name (`P-rfc-001`).
    pub id: String,
    /// Where the case comes from.
    pub source: String,
    /// The exact robots.txt body.
    pub robots: String,
    /// The crawler's product token, or a full User-Agent string where the
    /// source used one.
    pub user_agent: String,
    /// The URL (or path) asked about.
    pub url: String,
    /// The suite's expected verdict; see [`ConformanceCase::rfc_verdict`]
    /// for how to read it.
    pub allowed: bool,
    /// Google's behaviour where RFC 9309 says the opposite.
    pub google_specific: bool,
    /// Free-text explanation.
    pub note: String,
    /// How RFC 9309 settles the case.
    pub rfc_status: RfcStatus,
    /// Whether Google's parser agrees with `allowed`.
    pub google_verdict: GoogleVerdict,
    /// Google's parser's verdict.
    pub google_allowed: bool,
}

impl ConformanceCase {
    /// The verdict a matcher that follows RFC 9309 must give: `allowed`,
    /// except for [`RfcStatus::Conflicts`] (the `google_specific` cases),
    /// where `allowed` records Google's verdict and the suite's README says
    /// to follow the RFC, which gives the opposite. For
    /// [`RfcStatus::Ambiguous`] cases it is the suite's reading, to be
    /// counted rather than required. The loader checks that these readings
    /// hold for every line.
    pub fn rfc_verdict(&self) -> bool {
        match self.rfc_status {
            RfcStatus::Consistent | RfcStatus::Ambiguous => self.allowed,
            RfcStatus::Conflicts => !self.allowed,
        }
    }

    /// One line naming the case and the verdict expected, for failure lists.
    pub fn describe(&self) -> String {
        format!("{} (ua {:?}, url {:?}, expected allowed={})", self.id, self.user_agent, self.url, self.rfc_verdict())
    }

    /// Checks the suite's own invariants that [`rfc_verdict`] relies on.
    ///
    /// [`rfc_verdict`]: ConformanceCase::rfc_verdict
    fn validate(&self) -> Result<(), String> {
        if self.google_specific != (self.rfc_status == RfcStatus::Conflicts) {
            return Err(format!(
                "google_specific = {} with rfc_status {:?}: only the conflicting cases are Google-specific",
                self.google_specific, self.rfc_status
            ));
        }
        let agrees = self.google_allowed == self.allowed;
        if agrees != (self.google_verdict == GoogleVerdict::Agree) {
            return Err(format!(
                "google_verdict {:?} but google_allowed = {} and allowed = {}",
                self.google_verdict, self.google_allowed, self.allowed
            ));
        }
        if self.rfc_status == RfcStatus::Conflicts && !agrees {
            return Err("a conflicting case whose `allowed` is not Google's verdict".to_string());
        }
        Ok(())
    }
}

/// Path of the suite's copy in the repository.
pub fn public_suite_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../policy/tests/data/conformance/public.jsonl")
}

/// Every case of the public suite, in file order.
pub fn public_suite() -> Vec<ConformanceCase> {
    load(&public_suite_path())
}

/// Every case of a suite file in the `public.jsonl` format; panics naming
/// the line of the first case that does not parse or breaks the suite's
/// invariants.
pub fn load(path: &Path) -> Vec<ConformanceCase> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    parse(&text).unwrap_or_else(|e| panic!("{}:{e}", path.display()))
}

/// Parses suite text; the error names the line (`N: reason`).
pub fn parse(text: &str) -> Result<Vec<ConformanceCase>, String> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let case: ConformanceCase = serde_json::from_str(l).map_err(|e| format!("{}: {e}", i + 1))?;
            case.validate().map_err(|e| format!("{}: {}: {e}", i + 1, case.id))?;
            Ok(case)
        })
        .collect()
}

/// The cases of one [`RfcStatus`] checked against a matcher's verdicts.
#[derive(Debug, Default)]
pub struct Tally {
    /// How many cases had that status.
    pub total: usize,
    /// [`ConformanceCase::describe`] of each case whose verdict differed
    /// from [`ConformanceCase::rfc_verdict`].
    pub failed: Vec<String>,
}

impl Tally {
    /// How many cases matched.
    pub fn passed(&self) -> usize {
        self.total - self.failed.len()
    }
}

/// Tallies `(case, verdict the matcher gave)` pairs whose case has `status`.
pub fn tally<'a>(results: impl IntoIterator<Item = (&'a ConformanceCase, bool)>, status: RfcStatus) -> Tally {
    let mut t = Tally::default();
    for (case, got) in results.into_iter().filter(|(c, _)| c.rfc_status == status) {
        t.total += 1;
        if got != case.rfc_verdict() {
            t.failed.push(case.describe());
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(allowed: bool, google_specific: bool, status: &str, verdict: &str, google_allowed: bool) -> String {
        format!(
            r#"{{"id": "x", "source": "s", "robots": "User-agent: *\nDisallow: /\n", "user_agent": "a", "url": "/", "allowed": {allowed}, "google_specific": {google_specific}, "note": "", "rfc_status": "{status}", "google_verdict": "{verdict}", "google_allowed": {google_allowed}}}"#
        )
    }

    #[test]
    fn conflicting_cases_expect_the_opposite_of_google() {
        let cases = parse(&line(true, true, "conflicts", "agree", true)).unwrap();
        assert!(!cases[0].rfc_verdict());
        let cases = parse(&line(false, false, "consistent", "disagree", true)).unwrap();
        assert!(!cases[0].rfc_verdict());
        let cases = parse(&line(true, false, "ambiguous", "agree", true)).unwrap();
        assert!(cases[0].rfc_verdict());
    }

    #[test]
    fn inconsistent_or_unknown_lines_are_refused() {
        let err = |l: &str| parse(&format!("\n{l}")).err().unwrap_or_default();
        assert_eq!(
            err(&line(true, true, "consistent", "agree", true)),
            "2: x: google_specific = true with rfc_status Consistent: only the conflicting cases are Google-specific"
        );
        assert_eq!(
            err(&line(true, true, "conflicts", "disagree", false)),
            "2: x: a conflicting case whose `allowed` is not Google's verdict"
        );
        assert_eq!(
            err(&line(true, false, "consistent", "agree", false)),
            "2: x: google_verdict Agree but google_allowed = false and allowed = true"
        );
        assert!(err(&line(true, false, "open", "agree", true)).starts_with("2: unknown variant `open`"));
        assert!(err(r#"{"id": "x"}"#).starts_with("2: missing field"));
    }

    #[test]
    fn the_public_suite_loads() {
        let cases = public_suite();
        assert_eq!(cases.len(), 1064);
        let count = |s| cases.iter().filter(|c| c.rfc_status == s).count();
        assert_eq!(
            (count(RfcStatus::Consistent), count(RfcStatus::Ambiguous), count(RfcStatus::Conflicts)),
            (951, 80, 33)
        );
    }
}
