//! The outcome of a request's Web Bot Auth signature, in the vocabulary
//! operators meet elsewhere (AWS WAF Bot Control labels every signed
//! request `verified`, `invalid`, `expired` or `unknown_bot`), plus
//! `replayed` (draft-ietf-webbotauth-httpsig-protocol-01 answers a reused
//! signature with 429) and `legacy` (verified, through a `Signature-Agent`
//! form `-01` removed). Decided here from what the identity checks found
//! ([`SignatureFinding`]), so the rule is one table; the access line
//! (`signature=`), `crawlgate_signatures_total{outcome}` and the dashboard
//! show it.

/// What a request's Web Bot Auth signature showed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SignatureOutcome {
    /// It verified with a known key, through the `-01` forms, and was not
    /// seen before.
    Verified,
    /// As [`SignatureOutcome::Verified`], but its `Signature-Agent` took a
    /// legacy form: a bare String, a member covered without `key`, or an
    /// origin-only value read as the origin's well-known directory.
    Legacy,
    /// It is present and wrong: bad bytes, not bound to this site, a
    /// required component or its own `Signature-Agent` member not covered,
    /// no `Signature-Agent`, a keyid that is not a thumbprint, headers that
    /// do not parse, or a key that speaks for another token.
    Invalid,
    /// Well formed, but its `expires` has passed.
    Expired,
    /// Nothing could tell: the key is not in its URL's JWKS, the JWKS
    /// could not be fetched (or may not be), or the replay cache had no
    /// room to record it.
    UnknownBot,
    /// A valid signature already presented within its validity window.
    Replayed,
}

impl SignatureOutcome {
    /// Every outcome, in metric label and dashboard order.
    pub const ALL: [SignatureOutcome; 6] = [
        SignatureOutcome::Verified,
        SignatureOutcome::Legacy,
        SignatureOutcome::Invalid,
        SignatureOutcome::Expired,
        SignatureOutcome::UnknownBot,
        SignatureOutcome::Replayed,
    ];

    /// Its name in logs and metrics.
    pub const fn as_str(self) -> &'static str {
        match self {
            SignatureOutcome::Verified => "verified",
            SignatureOutcome::Legacy => "legacy",
            SignatureOutcome::Invalid => "invalid",
            SignatureOutcome::Expired => "expired",
            SignatureOutcome::UnknownBot => "unknown_bot",
            SignatureOutcome::Replayed => "replayed",
        }
    }

    /// Whether the signature proved its key (`verified` or `legacy`).
    pub const fn is_verified(self) -> bool {
        matches!(self, SignatureOutcome::Verified | SignatureOutcome::Legacy)
    }
}

/// What the replay cache said of a valid signature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplayFinding {
    /// Not seen before; now recorded.
    Fresh,
    /// Already presented within its validity window.
    Replayed,
    /// The cache had no room to record it, so a replay could not be told.
    NoRoom,
}

/// What the identity checks found about a request's signature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignatureFinding {
    /// The signature verified with a known key.
    Valid {
        /// Whether its `Signature-Agent` took a legacy form.
        legacy: bool,
        /// What the replay cache said.
        replay: ReplayFinding,
        /// Whether the key speaks for another token than the request's
        /// User-Agent claims.
        other_token: bool,
    },
    /// Present and wrong.
    Invalid,
    /// The signature fields do not parse (any member): a malformed request.
    Unparsable,
    /// `expires` has passed.
    Expired,
    /// The key could not be obtained.
    UnknownKey,
}

impl SignatureFinding {
    /// The outcome: a malformed or wrong signature is `invalid` whatever
    /// else holds; a valid one is `replayed` before anything else, then
    /// `invalid` when its key speaks for another token, `unknown_bot` when
    /// it could not be recorded, else `legacy` or `verified`.
    pub const fn outcome(self) -> SignatureOutcome {
        match self {
            SignatureFinding::Invalid | SignatureFinding::Unparsable => SignatureOutcome::Invalid,
            SignatureFinding::Expired => SignatureOutcome::Expired,
            SignatureFinding::UnknownKey => SignatureOutcome::UnknownBot,
            SignatureFinding::Valid { replay: ReplayFinding::Replayed, .. } => SignatureOutcome::Replayed,
            SignatureFinding::Valid { other_token: true, .. } => SignatureOutcome::Invalid,
            SignatureFinding::Valid { replay: ReplayFinding::NoRoom, .. } => SignatureOutcome::UnknownBot,
            SignatureFinding::Valid { legacy: true, .. } => SignatureOutcome::Legacy,
            SignatureFinding::Valid { legacy: false, .. } => SignatureOutcome::Verified,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_by_finding() {
        use ReplayFinding::{Fresh, NoRoom, Replayed};
        let valid = |legacy, replay, other_token| SignatureFinding::Valid { legacy, replay, other_token };
        let rows = [
            (valid(false, Fresh, false), "verified"),
            (valid(true, Fresh, false), "legacy"),
            (valid(false, Replayed, false), "replayed"),
            (valid(true, Replayed, true), "replayed"),
            (valid(false, Fresh, true), "invalid"),
            (valid(true, NoRoom, true), "invalid"),
            (valid(false, NoRoom, false), "unknown_bot"),
            (valid(true, NoRoom, false), "unknown_bot"),
            (SignatureFinding::Invalid, "invalid"),
            (SignatureFinding::Unparsable, "invalid"),
            (SignatureFinding::Expired, "expired"),
            (SignatureFinding::UnknownKey, "unknown_bot"),
        ];
        for (finding, want) in rows {
            assert_eq!(finding.outcome().as_str(), want, "{finding:?}");
        }
    }

    #[test]
    fn labels_are_distinct_and_in_order() {
        let names: Vec<&str> = SignatureOutcome::ALL.iter().map(|o| o.as_str()).collect();
        assert_eq!(names, ["verified", "legacy", "invalid", "expired", "unknown_bot", "replayed"]);
        let verified: Vec<bool> = SignatureOutcome::ALL.iter().map(|o| o.is_verified()).collect();
        assert_eq!(verified, [true, true, false, false, false, false]);
    }
}
