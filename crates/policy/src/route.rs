//! The routing step: what the proxy does with one request, decided as data
//! from its method, raw target and `User-Agent` field before anything is
//! sent. The proxy only carries the [`Route`] out, so every branch here is
//! table-tested without a server.

use std::borrow::Cow;

use crate::canonical::{classify_request_target, fold_case_in_place, fold_windows_target, PathError, RequestTarget};
use crate::local_file::LocalFile;
use crate::policy::{Action, Decision, Policy, UrlControls};
use crate::verification::{OnFailure, Verification};

/// What verification found out about a request, for [`Policy::route_with`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Identity<'a> {
    /// The outcome for the claimed (or signed) token.
    pub verification: Verification,
    /// A token proven by a valid signature: it identifies the agent even
    /// when the `User-Agent` names another or none.
    pub proven: Option<&'a str>,
    /// The request's valid signature was already presented within its
    /// validity window (a replay).
    pub replayed: bool,
    /// Why the request's `Signature` / `Signature-Input` fields cannot be
    /// parsed, when they cannot (`verification::check_signature_fields`).
    pub unparsable: Option<&'a str>,
}

/// The request's `User-Agent` field lines, as far as routing cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UserAgentField<'r> {
    /// No `User-Agent` field.
    Absent,
    /// Exactly one field line (lossily decoded when it is not UTF-8).
    One(&'r str),
    /// More than one: User-Agent is a singleton field (RFC 9110 section
    /// 10.1.5), and two lines would let the decision and the origin read
    /// different agents.
    Many,
}

/// Why a request is refused with 400.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BadRequest {
    /// The request target cannot be decided on.
    #[error("{0}")]
    Target(#[from] PathError),
    /// More than one `User-Agent` field.
    #[error("more than one User-Agent header field")]
    ManyUserAgents,
    /// A protocol upgrade `[server] upgrades` does not allow.
    #[error("{}", .0.refusal())]
    Upgrade(Upgrades),
    /// Web Bot Auth signature fields that cannot be parsed, on a request
    /// that claims a group verified by signature only
    /// (`verification::check_signature_fields`).
    #[error("the Signature / Signature-Input header fields cannot be parsed (RFC 9421 section 4, RFC 9651): {0}")]
    UnparsableSignature(String),
    /// A protocol upgrade on a charged path: after a `101` the connection
    /// carries bytes that no charge meters.
    #[error(
        "a charged path cannot be upgraded to another protocol (the connection would carry content no charge covers)"
    )]
    ChargedUpgrade,
}

/// `[server] upgrades`: which protocol upgrades (RFC 9110 section 7.8) a
/// request may ask the origin for. After a `101 Switching Protocols` the
/// proxy relays bytes both ways without reading them, so an upgraded
/// connection is beyond the policy: an origin that went on reading HTTP on
/// it would answer requests no rule was applied to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Upgrades {
    /// Only `Upgrade: websocket` (RFC 6455 section 4.1), alone.
    Websocket,
    /// Any upgrade the origin accepts.
    All,
    /// No upgrade: a request with an `Upgrade` field gets 400.
    Off,
}

impl Upgrades {
    /// Its name in the policy file.
    pub const fn as_str(self) -> &'static str {
        match self {
            Upgrades::Websocket => "websocket",
            Upgrades::All => "all",
            Upgrades::Off => "off",
        }
    }

    /// The 400 body's reason for an upgrade this setting refuses.
    const fn refusal(self) -> &'static str {
        match self {
            Upgrades::Off => "protocol upgrades are not allowed (server.upgrades = \"off\")",
            _ => "only Upgrade: websocket is allowed (server.upgrades = \"websocket\")",
        }
    }
}

/// `[server] origin_paths`: how the origin resolves a path to a resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OriginPaths {
    /// Case-sensitive, `%5C` a character (RFC 3986; RFC 9309 matching).
    Standard,
    /// As IIS does: ASCII case-insensitive, `\` and `%5C` separate
    /// segments. Request paths and the policy's patterns are folded alike
    /// ([`crate::canonical::fold_windows_target`]).
    Windows,
}

impl OriginPaths {
    /// Its name in the policy file.
    pub const fn as_str(self) -> &'static str {
        match self {
            OriginPaths::Standard => "standard",
            OriginPaths::Windows => "windows",
        }
    }
}

/// What the proxy does with one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route<'p, 'r> {
    /// Answer 400 and do not contact the origin.
    BadRequest(BadRequest),
    /// Answer with a locally served file.
    Serve {
        /// The file.
        file: LocalFile,
        /// Who asked (for the fetch counters).
        decision: Decision<'p>,
    },
    /// Answer 404: the policy publishes no such file (agents.txt disabled,
    /// no `[tdmrep]`).
    NotFound {
        /// The file.
        file: LocalFile,
        /// Who asked.
        decision: Decision<'p>,
    },
    /// Answer with the group's block status; the origin is not contacted.
    Block {
        /// The decision that blocks.
        decision: Decision<'p>,
        /// The target decided on.
        target: RequestTarget<'r>,
    },
    /// Answer 429: the request's Web Bot Auth signature is a replay
    /// (draft-meunier-web-bot-auth-architecture: "a replay gets 429"); the
    /// origin is not contacted.
    Replayed {
        /// The decision, for the log and the counters.
        decision: Decision<'p>,
        /// The target decided on.
        target: RequestTarget<'r>,
    },
    /// Proxy to the origin.
    Forward {
        /// The decision (allowed, or a violation to log).
        decision: Decision<'p>,
        /// The target decided on and what to send upstream.
        target: RequestTarget<'r>,
        /// The headers and metas the response gets.
        controls: UrlControls,
    },
}

impl Policy {
    /// Whether a request may ask for the protocol upgrade its `Upgrade`
    /// field `lines` name (none: no upgrade, always fine). With
    /// `upgrades = "websocket"` the one line must be `websocket` (ASCII
    /// case-insensitive, RFC 6455 section 4.1); a list such as
    /// `websocket, h2c` lets the origin pick another protocol and is
    /// refused too.
    pub fn check_upgrade<'a>(&self, mut lines: impl Iterator<Item = &'a [u8]>) -> Result<(), BadRequest> {
        let Some(first) = lines.next() else { return Ok(()) };
        let mode = self.settings.server.upgrades;
        let allowed = match mode {
            Upgrades::All => true,
            Upgrades::Off => false,
            Upgrades::Websocket => lines.next().is_none() && first.trim_ascii().eq_ignore_ascii_case(b"websocket"),
        };
        if allowed {
            Ok(())
        } else {
            Err(BadRequest::Upgrade(mode))
        }
    }

    /// A canonical path in the form rules are matched in: itself, or folded
    /// for an origin that resolves paths as IIS does.
    pub(crate) fn match_form<'a>(&self, canonical: Cow<'a, str>) -> Cow<'a, str> {
        if self.settings.server.origin_paths != OriginPaths::Windows {
            return canonical;
        }
        let folded = match fold_windows_target(&canonical) {
            Cow::Owned(f) => Some(f),
            Cow::Borrowed(_) => None,
        };
        folded.map_or(canonical, Cow::Owned)
    }

    /// Folds every path pattern for an origin that resolves paths as IIS
    /// does (`origin_paths = "windows"`), once when the policy loads or
    /// merges an origin's rules; folding twice changes nothing.
    pub(crate) fn fold_paths(&mut self) {
        for g in &mut self.groups {
            g.rules = g.rules.folded();
            g.content_usage_set = g.content_usage_set.folded();
        }
        for t in &mut self.tags {
            t.pattern = t.pattern.folded();
        }
        for r in &mut self.tdm_rules {
            r.pattern = r.pattern.folded();
        }
        if let Some((path, _)) = &mut self.rsl {
            fold_case_in_place(path);
        }
    }

    /// Routes one request: validates its target (RFC 9112 section 3.2) and
    /// `User-Agent`, answers the locally served files, and decides the rest
    /// on the canonical path. Pure: the proxy carries the result out.
    pub fn route<'p, 'r>(&'p self, is_options: bool, raw_target: &'r [u8], ua: UserAgentField<'r>) -> Route<'p, 'r> {
        self.route_with(is_options, raw_target, ua, Identity::default())
    }

    /// [`Policy::route`] with the outcome of verifying the claim: a token
    /// proven by a signature decides the group; a spoofed or unverified
    /// claim gets its group's `on_spoofed` or `on_unverified` (`block`: the
    /// group's block status; `log`: the group as usual; `anonymous`: the
    /// `*` group, as if the request named no token).
    pub fn route_with<'p, 'r>(
        &'p self,
        is_options: bool,
        raw_target: &'r [u8],
        ua: UserAgentField<'r>,
        identity: Identity<'_>,
    ) -> Route<'p, 'r> {
        let user_agent = match ua {
            UserAgentField::Many => return Route::BadRequest(BadRequest::ManyUserAgents),
            UserAgentField::Absent => "",
            UserAgentField::One(ua) => ua,
        };
        let mut target = match classify_request_target(raw_target, is_options) {
            Ok(t) => t,
            Err(e) => return Route::BadRequest(e.into()),
        };
        target.canonical = self.match_form(target.canonical);
        let token = identity.proven.and_then(|t| self.token_index(t)).or_else(|| self.matcher.find(user_agent));
        let mut decision = self.decide_token(token, &target.canonical);
        let failure = token.and_then(|t| self.group_of(t)).and_then(|g| match identity.verification {
            Verification::Spoofed(_) => Some(g.on_spoofed),
            Verification::Unverified => Some(g.on_unverified),
            Verification::NotApplicable | Verification::Verified(_) => None,
        });
        if failure == Some(OnFailure::Anonymous) {
            decision = self.decide_token(None, &target.canonical);
        }
        decision.verification = identity.verification;
        decision.on_failure = failure;
        if failure.is_some() {
            decision.claimed = token.map(|t| self.tokens[t].as_str());
        } else if token.is_none() {
            decision.observed = crate::identify::catalog_crawler(user_agent);
        }
        // RFC 9421 section 5.1 and the Web Bot Auth draft: a challenge is a
        // 403 whatever the group's block_status.
        if failure == Some(OnFailure::Challenge) {
            decision.block_status = 403;
        }
        if let Some(file) = self.local_file(&target.canonical) {
            let published = match file {
                LocalFile::RobotsTxt => true,
                LocalFile::AgentsTxt => self.agents_txt().is_some(),
                LocalFile::TdmRep => self.tdmrep_json().is_some(),
                LocalFile::Rsl => self.rsl_document().is_some(),
            };
            return if published { Route::Serve { file, decision } } else { Route::NotFound { file, decision } };
        }
        // After the published files, which are never refused.
        if let Some(why) = identity.unparsable {
            let claimed = self.claim(user_agent).map(|c| c.verify);
            if let Err(refused) = crate::verification::check_signature_fields(claimed, Some(why)) {
                return Route::BadRequest(refused);
            }
        }
        if identity.replayed {
            return Route::Replayed { decision, target };
        }
        match decision.action() {
            Action::Block => Route::Block { decision, target },
            Action::Pass | Action::LogViolation => {
                let controls = self.url_controls_canonical(&target.canonical);
                Route::Forward { decision, target, controls }
            }
        }
    }
}

impl RequestTarget<'_> {
    /// The path part of the canonical target (without the query).
    pub fn path(&self) -> &str {
        let c: &str = &self.canonical;
        c.split_once('?').map_or(c, |(p, _)| p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load;

    const POLICY: &str = r#"
[upstream]
servers = ["127.0.0.1:8000"]

[[group]]
user_agents = ["*"]
disallow = ["/private/"]
content_usage = ["train-ai=n"]
enforce = "log"

[[group]]
user_agents = ["GPTBot"]
disallow = ["/"]
allow = ["/public/"]
enforce = "block"
block_status = 451

[agents_txt]
rules = [{ path = "/", action = "allow" }]
"#;

    /// `(kind, agent, canonical target, forward)` of a route, for tables.
    fn summary(r: &Route<'_, '_>) -> (String, Option<String>, Option<String>, Option<String>) {
        let agent = |d: &Decision<'_>| d.agent.map(str::to_owned);
        match r {
            Route::BadRequest(e) => (format!("400 {e}"), None, None, None),
            Route::Serve { file, decision } => (format!("serve {}", file.as_str()), agent(decision), None, None),
            Route::NotFound { file, decision } => (format!("404 {}", file.as_str()), agent(decision), None, None),
            Route::Replayed { decision, .. } => ("429 replay".to_string(), agent(decision), None, None),
            Route::Block { decision, target } => (
                format!("block {}", decision.block_status),
                agent(decision),
                Some(target.canonical.to_string()),
                target.forward.as_ref().map(|f| f.to_string()),
            ),
            Route::Forward { decision, target, .. } => (
                format!("forward {:?}", decision.action()),
                agent(decision),
                Some(target.canonical.to_string()),
                target.forward.as_ref().map(|f| f.to_string()),
            ),
        }
    }

    #[test]
    fn routes() {
        let loaded = load(POLICY, "t.toml").unwrap();
        let p = &loaded.policy;
        let gpt = UserAgentField::One("Mozilla/5.0 (compatible; GPTBot/1.2)");
        let browser = UserAgentField::One("Mozilla/5.0 Firefox/130.0");
        type Row = (bool, &'static str, UserAgentField<'static>, &'static str, Option<&'static str>);
        let s = |v: &str| Some(v.to_string());
        let rows: &[Row] = &[
            (false, "/public/a", gpt, "forward Pass", Some("GPTBot")),
            (false, "/x", gpt, "block 451", Some("GPTBot")),
            (false, "http://h/x", gpt, "block 451", Some("GPTBot")),
            (false, "/private/x", browser, "forward Pass", None),
            (false, "/private/x", UserAgentField::Absent, "forward Pass", None),
            (false, "/robots.txt", gpt, "serve robots.txt", Some("GPTBot")),
            (false, "/robots.txt?x=1", browser, "serve robots.txt", None),
            (false, "/./robots.txt", gpt, "serve robots.txt", Some("GPTBot")),
            (false, "/agents.txt", gpt, "serve agents.txt", Some("GPTBot")),
            (false, "/robots.txt.bak", gpt, "block 451", Some("GPTBot")),
            (false, "private/x", browser, "400 request target must start with '/' or be an absolute http(s) URL", None),
            (false, "*", browser, "400 asterisk-form target '*' is only valid with OPTIONS", None),
            (
                false,
                "#/private/x",
                browser,
                "400 request target contains '#' (a fragment is not part of a request target)",
                None,
            ),
            (
                false,
                "/public/a#x",
                gpt,
                "400 request target contains '#' (a fragment is not part of a request target)",
                None,
            ),
            (true, "*", browser, "forward Pass", None),
            (false, "/a", UserAgentField::Many, "400 more than one User-Agent header field", None),
        ];
        for (options, target, ua, want, agent) in rows {
            let got = summary(&p.route(*options, target.as_bytes(), *ua));
            assert_eq!((got.0.as_str(), got.1.as_deref()), (*want, *agent), "{target:?} {ua:?}");
        }
        let absolute = summary(&p.route(false, b"http://h/public/a?q", gpt));
        assert_eq!((absolute.2, absolute.3), (s("/public/a?q"), s("/public/a?q")));
        // A forwarded request carries the controls of the path it names.
        match p.route(false, b"/private/../public/%61", browser) {
            Route::Forward { controls, .. } => {
                assert_eq!(controls.content_usage.as_deref(), Some("train-ai=n"));
                assert_eq!(controls, p.url_controls("/public/a"));
            }
            other => panic!("{other:?}"),
        }
        let origin_form = summary(&p.route(false, b"/public/%61", gpt));
        assert_eq!((origin_form.2, origin_form.3), (s("/public/a"), None));

        let no_agents = load(&POLICY.replace("[agents_txt]", "[agents_txt]\nenabled = false"), "t.toml").unwrap();
        let got = summary(&no_agents.policy.route(false, b"/agents.txt", gpt));
        assert_eq!(got.0, "404 agents.txt");
    }
}

#[cfg(test)]
mod verification_tests {
    use super::*;
    use crate::load;
    use crate::verification::{Method, VerifyMode};
    use crate::BlockReason;

    const POLICY: &str = r#"
[upstream]
servers = ["127.0.0.1:8000"]

[verification]

[[group]]
user_agents = ["*"]
disallow = ["/private/"]

[[group]]
user_agents = ["Googlebot"]
disallow = ["/nogoogle/"]
enforce = "block"
block_status = 451

[[group]]
user_agents = ["bingbot"]
on_spoofed = "block"
on_unverified = "anonymous"
block_status = 429

[[group]]
user_agents = ["GPTBot"]
on_spoofed = "log"
on_unverified = "block"

[[group]]
user_agents = ["ExampleBot"]
disallow = ["/"]
"#;

    /// `(kind, agent, verification, on_failure)` of a route.
    fn summary(r: &Route<'_, '_>) -> (String, Option<String>, String, Option<&'static str>) {
        let d = match r {
            Route::BadRequest(e) => return (format!("400 {e}"), None, String::new(), None),
            Route::Serve { decision, .. } | Route::NotFound { decision, .. } => (*decision, "serve"),
            Route::Block { decision, .. } => (*decision, "block"),
            Route::Replayed { decision, .. } => (*decision, "429 replay"),
            Route::Forward { decision, .. } => (*decision, "forward"),
        };
        let (d, kind) = d;
        let kind = match kind {
            "block" => format!("block {}", d.block_status),
            "forward" => format!("forward {}", d.action().as_str()),
            k => k.to_string(),
        };
        (kind, d.agent.map(str::to_owned), d.verification.to_string(), d.on_failure.map(OnFailure::as_str))
    }

    #[test]
    fn claims_and_default_modes() {
        let loaded = load(POLICY, "t.toml").unwrap_or_else(|e| panic!("{e}"));
        let p = &loaded.policy;
        let mode = |ua: &str| p.claim(ua).map(|c| (c.agent, c.verify));
        assert_eq!(mode("Mozilla/5.0 (compatible; Googlebot/2.1)"), Some(("Googlebot", VerifyMode::Any)));
        assert_eq!(mode("bingbot/2.0"), Some(("bingbot", VerifyMode::Any)));
        // No published source for ExampleBot: nothing to verify.
        assert_eq!(mode("ExampleBot/1"), Some(("ExampleBot", VerifyMode::None)));
        assert_eq!(mode("Firefox"), None);
        assert_eq!(p.claim_token("gptbot").map(|c| c.agent), Some("GPTBot"));
        // Without a [verification] table nothing is verified.
        let off = load(&POLICY.replace("[verification]\n", ""), "t.toml").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(off.policy.claim("Googlebot/2.1").map(|c| c.verify), Some(VerifyMode::None));
    }

    #[test]
    fn routes_by_outcome() {
        let loaded = load(POLICY, "t.toml").unwrap_or_else(|e| panic!("{e}"));
        let p = &loaded.policy;
        let v = |m| Verification::Verified(m);
        let sp = |m| Verification::Spoofed(m);
        let un = Verification::Unverified;
        type Row = (
            &'static str,
            &'static str,
            Verification,
            Option<&'static str>,
            (&'static str, Option<&'static str>, &'static str, Option<&'static str>),
        );
        let rows: &[Row] = &[
            // Verified: the group as usual.
            (
                "Googlebot/2.1",
                "/nogoogle/a",
                v(Method::Ip),
                None,
                ("block 451", Some("Googlebot"), "verified(ip)", None),
            ),
            (
                "Googlebot/2.1",
                "/private/a",
                v(Method::Rdns),
                None,
                ("forward allowed", Some("Googlebot"), "verified(rdns)", None),
            ),
            // Spoofed, default anonymous: the `*` group's rules.
            (
                "Googlebot/2.1",
                "/private/a",
                sp(Method::Ip),
                None,
                ("forward allowed", None, "spoofed(ip)", Some("anonymous")),
            ),
            (
                "Googlebot/2.1",
                "/nogoogle/a",
                sp(Method::Ip),
                None,
                ("forward allowed", None, "spoofed(ip)", Some("anonymous")),
            ),
            // Unverified, default log: the group as usual, recorded.
            ("Googlebot/2.1", "/nogoogle/a", un, None, ("block 451", Some("Googlebot"), "unverified", Some("log"))),
            ("Googlebot/2.1", "/a", un, None, ("forward allowed", Some("Googlebot"), "unverified", Some("log"))),
            // on_spoofed = "block": the group's block status on any path.
            (
                "bingbot/2.0",
                "/a",
                sp(Method::Rdns),
                None,
                ("block 429", Some("bingbot"), "spoofed(rdns)", Some("block")),
            ),
            // on_unverified = "anonymous".
            ("bingbot/2.0", "/private/a", un, None, ("forward allowed", None, "unverified", Some("anonymous"))),
            // on_spoofed = "log", on_unverified = "block" (default 403).
            (
                "GPTBot/1.0",
                "/a",
                sp(Method::Signature),
                None,
                ("forward allowed", Some("GPTBot"), "spoofed(signature)", Some("log")),
            ),
            ("GPTBot/1.0", "/a", un, None, ("block 403", Some("GPTBot"), "unverified", Some("block"))),
            // robots.txt is served whatever the outcome.
            (
                "bingbot/2.0",
                "/robots.txt",
                sp(Method::Ip),
                None,
                ("serve", Some("bingbot"), "spoofed(ip)", Some("block")),
            ),
            // A signature proves a token the User-Agent does not name.
            (
                "Mozilla/5.0 Firefox/130.0",
                "/nogoogle/a",
                v(Method::Signature),
                Some("googlebot"),
                ("block 451", Some("Googlebot"), "verified(signature)", None),
            ),
            (
                "bingbot/2.0",
                "/nogoogle/a",
                v(Method::Signature),
                Some("Googlebot"),
                ("block 451", Some("Googlebot"), "verified(signature)", None),
            ),
            // A proven token that is not a policy token: the User-Agent decides.
            (
                "bingbot/2.0",
                "/a",
                v(Method::Signature),
                Some("OtherBot"),
                ("forward allowed", Some("bingbot"), "verified(signature)", None),
            ),
            // No token: nothing to apply, whatever the outcome says.
            ("Firefox", "/private/a", sp(Method::Ip), None, ("forward allowed", None, "spoofed(ip)", None)),
            ("Firefox", "/a", Verification::NotApplicable, None, ("forward allowed", None, "none", None)),
        ];
        for (ua, target, verification, proven, want) in rows {
            let id = Identity { verification: *verification, proven: *proven, replayed: false, unparsable: None };
            let got = summary(&p.route_with(false, target.as_bytes(), UserAgentField::One(ua), id));
            let got = (got.0.as_str(), got.1.as_deref(), got.2.as_str(), got.3);
            assert_eq!(got, *want, "{ua} {target} {verification:?} {proven:?}");
        }
        // A bad request stays a bad request.
        let id = Identity { verification: un, proven: None, replayed: false, unparsable: None };
        let got = summary(&p.route_with(false, b"x", UserAgentField::One("GPTBot"), id));
        assert_eq!(got.0, "400 request target must start with '/' or be an absolute http(s) URL");
    }

    #[test]
    fn challenge_answers_an_unsigned_claim_with_accept_signature() {
        let jwk = r#"{"kty":"OKP","crv":"Ed25519","x":"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs"}"#;
        let src = format!(
            "[upstream]\nservers = [\"127.0.0.1:8000\"]\n[verification]\n\
             [verification.signatures]\nauthorities = [\"www.example.com\"]\n\
             [[verification.keys]]\ntoken = \"ExampleBot\"\njwk = '{jwk}'\n\
             [[group]]\nuser_agents = [\"*\"]\n\
             [[group]]\nuser_agents = [\"ExampleBot\"]\nverify = \"signature\"\non_unverified = \"challenge\"\nblock_status = 451\n\
             [[group]]\nuser_agents = [\"OtherBot\"]\nverify = \"any\"\non_unverified = \"challenge\"\n"
        );
        let loaded = load(&src, "t.toml").unwrap_or_else(|e| panic!("{e}"));
        let p = &loaded.policy;
        let id = |verification| Identity { verification, proven: None, replayed: false, unparsable: None };
        let pinned = r#"sig1=("@authority" "@method" "@path" "signature-agent";key="sig1");created;expires;keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";alg="ed25519";tag="web-bot-auth""#;
        let unpinned = r#"sig1=("@authority" "@method" "@path" "signature-agent";key="sig1");created;expires;alg="ed25519";tag="web-bot-auth""#;
        // (User-Agent, verification, status and reason, Accept-Signature)
        let rows = [
            ("ExampleBot/1.0", Verification::Unverified, Some((403, "unverified")), Some(pinned)),
            ("OtherBot/1.0", Verification::Unverified, Some((403, "unverified")), Some(unpinned)),
            // A signed, verified claim passes; a spoofed one gets
            // on_spoofed (anonymous), never a challenge.
            ("ExampleBot/1.0", Verification::Verified(crate::verification::Method::Signature), None, None),
            ("ExampleBot/1.0", Verification::Spoofed(crate::verification::Method::Signature), None, None),
            // A browser is never challenged.
            ("Mozilla/5.0", Verification::NotApplicable, None, None),
        ];
        for (ua, v, blocked, header) in rows {
            let route = p.route_with(false, b"/a", UserAgentField::One(ua), id(v));
            let (got, challenge) = match &route {
                Route::Block { decision, .. } => (
                    Some((decision.block_status, decision.block_reason().map_or("", BlockReason::as_str))),
                    p.challenge(decision),
                ),
                Route::Forward { decision, .. } => (None, p.challenge(decision)),
                other => panic!("{ua}: {other:?}"),
            };
            assert_eq!((got, challenge), (blocked, header), "{ua} {v}");
        }
        // robots.txt is never challenged.
        let served =
            p.route_with(false, b"/robots.txt", UserAgentField::One("ExampleBot/1.0"), id(Verification::Unverified));
        assert!(matches!(served, Route::Serve { .. }), "{served:?}");
        // Challenge needs a group that accepts signatures; on_spoofed has none.
        let bad = "[upstream]\nservers = [\"127.0.0.1:8000\"]\n[verification]\n\
                   [[group]]\nuser_agents = [\"GPTBot\"]\nverify = \"ip\"\non_unverified = \"challenge\"\non_spoofed = \"challenge\"\n";
        let err = load(bad, "t.toml").err().map(|e| e.to_string()).unwrap_or_default();
        assert_eq!(
            err,
            "t.toml:7:17: group.on_unverified = \"challenge\" asks for a Web Bot Auth signature: the group needs verify = \"signature\" (or \"any\")\n\
             t.toml:8:14: group.on_spoofed must be block, log or anonymous, found `challenge`"
        );
    }

    #[test]
    fn rdns_only_groups_default_to_anonymous_when_unverified() {
        let src = "[upstream]\nservers = [\"127.0.0.1:8000\"]\n[verification]\n\
                   [[group]]\nuser_agents = [\"*\"]\ndisallow = [\"/private/\"]\n\
                   [[group]]\nuser_agents = [\"YandexBot\"]\n\
                   [[group]]\nuser_agents = [\"Baiduspider\", \"Amazonbot\"]\non_unverified = \"log\"\n\
                   [[group]]\nuser_agents = [\"Googlebot\"]\n\
                   [[group]]\nuser_agents = [\"bingbot\"]\nverify = \"rdns\"\n";
        let loaded = load(src, "t.toml").unwrap_or_else(|e| panic!("{e}"));
        let p = &loaded.policy;
        let un = Identity { verification: Verification::Unverified, proven: None, replayed: false, unparsable: None };
        // (User-Agent, the agent whose rules apply, on_failure)
        let rows = [
            // rDNS only: anonymous by default.
            ("YandexBot/3.0", None, Some("anonymous")),
            // Written `log` stays.
            ("Baiduspider/2.0", Some("Baiduspider"), Some("log")),
            ("Amazonbot/0.1", Some("Amazonbot"), Some("log")),
            // IP lists too: `log` as before.
            ("Googlebot/2.1", Some("Googlebot"), Some("log")),
            // bingbot publishes lists, but the group chose rdns only.
            ("bingbot/2.0", None, Some("anonymous")),
        ];
        for (ua, agent, failure) in rows {
            let got = summary(&p.route_with(false, b"/private/a", UserAgentField::One(ua), un));
            assert_eq!((got.1.as_deref(), got.3), (agent, failure), "{ua}");
        }
        let methods: Vec<(String, String, &str, &str)> = p
            .group_verification()
            .into_iter()
            .map(|(g, m, s, u)| {
                let m: Vec<&str> = m.iter().map(|m| m.as_str()).collect();
                (g.to_owned(), m.join(","), s.as_str(), u.as_str())
            })
            .collect();
        let want = [
            ("YandexBot", "rdns", "anonymous", "anonymous"),
            ("Baiduspider", "rdns", "anonymous", "log"),
            ("Googlebot", "ip,rdns", "anonymous", "log"),
            ("bingbot", "rdns", "anonymous", "anonymous"),
        ];
        let want: Vec<(String, String, &str, &str)> =
            want.iter().map(|(g, m, s, u)| ((*g).to_owned(), (*m).to_owned(), *s, *u)).collect();
        assert_eq!(methods, want);
    }

    #[test]
    fn a_replayed_signature_gets_429_but_robots_txt() {
        let loaded = load(POLICY, "t.toml").unwrap_or_else(|e| panic!("{e}"));
        let p = &loaded.policy;
        let id = Identity {
            verification: Verification::Spoofed(Method::Signature),
            proven: None,
            replayed: true,
            unparsable: None,
        };
        let ua = UserAgentField::One("Googlebot/2.1");
        let got = summary(&p.route_with(false, b"/a", ua, id));
        assert_eq!(
            (got.0.as_str(), got.1.as_deref(), got.2.as_str(), got.3),
            ("429 replay", None, "spoofed(signature)", Some("anonymous"))
        );
        // Also where the group would allow, and for a browser.
        let got = summary(&p.route_with(false, b"/private/a", UserAgentField::One("Firefox"), id));
        assert_eq!(got.0, "429 replay");
        let got = summary(&p.route_with(false, b"/robots.txt", ua, id));
        assert_eq!(got.0, "serve");
        // Not replayed: the same outcome goes on to the group.
        let got = summary(&p.route_with(false, b"/a", ua, Identity { replayed: false, ..id }));
        assert_eq!(got.0, "forward allowed");
    }

    /// Why a request is blocked, and whether it is a robots.txt violation:
    /// a spoofed claim on a path its group allows is blocked for the claim
    /// and is no violation.
    #[test]
    fn block_reasons_and_violations() {
        let policy = r#"
[upstream]
servers = ["127.0.0.1:8000"]

[verification]

[[group]]
user_agents = ["*"]
disallow = ["/private/"]

[[group]]
user_agents = ["bingbot"]
allow = ["/search"]
disallow = ["/search/raw"]
on_spoofed = "block"
on_unverified = "block"
enforce = "block"

[[group]]
user_agents = ["GPTBot"]
disallow = ["/"]
enforce = "log"
"#;
        let loaded = load(policy, "t.toml").unwrap_or_else(|e| panic!("{e}"));
        let p = &loaded.policy;
        let sp = Verification::Spoofed(Method::Ip);
        let un = Verification::Unverified;
        let ok = Verification::Verified(Method::Ip);
        type Row = (&'static str, &'static str, Verification, Option<&'static str>, bool);
        let rows: &[Row] = &[
            // Spoofed on an allowed path: blocked for the claim, no violation.
            ("bingbot/2.0", "/search?q=budget", sp, Some("spoofed"), false),
            ("bingbot/2.0", "/other", sp, Some("spoofed"), false),
            ("bingbot/2.0", "/search?q=budget", un, Some("unverified"), false),
            // Spoofed on a disallowed path: the claim decides the reason,
            // and the request is still a violation.
            ("bingbot/2.0", "/search/raw", sp, Some("spoofed"), true),
            // Verified: the disallow rule blocks.
            ("bingbot/2.0", "/search/raw", ok, Some("robots"), true),
            ("bingbot/2.0", "/search?q=budget", ok, None, false),
            // Logged, not blocked: a violation without a reason.
            ("GPTBot/1.0", "/a", Verification::NotApplicable, None, true),
            // No token: never a violation.
            ("Firefox", "/private/a", Verification::NotApplicable, None, false),
        ];
        for (ua, target, verification, reason, violation) in rows {
            let id = Identity { verification: *verification, proven: None, replayed: false, unparsable: None };
            let d = match p.route_with(false, target.as_bytes(), UserAgentField::One(ua), id) {
                Route::Block { decision, .. } | Route::Forward { decision, .. } => decision,
                other => panic!("{other:?}"),
            };
            let got = (d.block_reason().map(crate::BlockReason::as_str), d.violation());
            assert_eq!(got, (*reason, *violation), "{ua} {target} {verification:?}");
        }
        let names: Vec<&str> = crate::BlockReason::ALL.iter().map(|r| r.as_str()).collect();
        assert_eq!(names, ["robots", "spoofed", "unverified", "bad-request", "loop", "replayed", "rate", "payment"]);
    }

    /// Observe, then act: `enforce = "off"` acts on nothing but still sees.
    /// Every identified crawler on a path its applied group disallows is a
    /// violation: a policy group's under `off` (GPTBot), an origin group's
    /// (ExampleBot, its rule a line of the origin's file), a catalog
    /// crawler the policy does not name under `*` (Amazonbot), and a
    /// spoofed claim sent to `*` by `on_spoofed = "anonymous"`, which keeps
    /// its claimed name. A browser is never one; an allowed path never is.
    #[test]
    fn every_identified_crawler_on_a_disallowed_path_is_a_violation() {
        let policy = "[upstream]\nservers = [\"127.0.0.1:8000\"]\n\n[verification]\n\n[[group]]\nuser_agents = [\"*\"]\ndisallow = [\"/private/\"]\n\n[[group]]\nuser_agents = [\"GPTBot\"]\ndisallow = [\"/\"]\nenforce = \"off\"\n\n[[group]]\nuser_agents = [\"Googlebot\"]\ndisallow = [\"/nogoogle/\"]\n";
        let loaded = load(policy, "t.toml").unwrap_or_else(|e| panic!("{e}"));
        let m = loaded
            .policy
            .merge_origin(b"User-agent: ExampleBot\nDisallow: /v1-only/\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let p = &m.policy;
        let spoofed = Verification::Spoofed(crate::verification::Method::Rdns);
        type Row = (&'static str, &'static str, Verification, bool, Option<&'static str>, Option<(usize, bool)>);
        let rows: &[Row] = &[
            ("ExampleBot/1.0", "/v1-only/a", Verification::NotApplicable, true, Some("ExampleBot"), Some((2, true))),
            ("ExampleBot/1.0", "/other", Verification::NotApplicable, false, Some("ExampleBot"), None),
            ("GPTBot/1.0", "/a", Verification::NotApplicable, true, Some("GPTBot"), Some((12, false))),
            (
                "Mozilla/5.0 (compatible; Amazonbot/0.1)",
                "/private/a",
                Verification::NotApplicable,
                true,
                Some("Amazonbot"),
                Some((8, false)),
            ),
            (
                "Mozilla/5.0 (compatible; Amazonbot/0.1)",
                "/public",
                Verification::NotApplicable,
                false,
                Some("Amazonbot"),
                None,
            ),
            ("Googlebot/2.1", "/private/a", spoofed, true, Some("Googlebot"), Some((8, false))),
            ("Googlebot/2.1", "/nogoogle/a", spoofed, false, Some("Googlebot"), None),
            ("Mozilla/5.0 Firefox/130.0", "/private/a", Verification::NotApplicable, false, None, Some((8, false))),
        ];
        for (ua, path, verification, violation, crawler, line) in rows {
            let id = Identity { verification: *verification, proven: None, replayed: false, unparsable: None };
            let d = match p.route_with(false, path.as_bytes(), UserAgentField::One(ua), id) {
                Route::Forward { decision, .. } => decision,
                other => panic!("{ua} {path}: {other:?}"),
            };
            let got = (d.violation(), d.crawler(), d.rule.map(|r| r.line).zip(d.group.map(|g| g.origin)));
            assert_eq!(got, (*violation, *crawler, *line), "{ua} {path}");
            assert_eq!(d.action(), Action::Pass, "{ua} {path}");
        }
    }
}

#[cfg(test)]
mod server_mode_tests {
    use super::*;
    use crate::load;

    const POLICY: &str = r#"
[server]
SERVER

[upstream]
servers = ["127.0.0.1:8000"]

[[group]]
user_agents = ["GPTBot"]
disallow = ["/Private/", "/*.ASPX$"]
allow = ["/private/Open"]
enforce = "block"

[[robots_tag]]
path = "/Docs/"
rules = ["noindex"]
"#;

    fn policy(server: &str) -> Policy {
        load(&POLICY.replace("SERVER", server), "t.toml").unwrap_or_else(|e| panic!("{e}")).policy
    }

    #[test]
    fn upgrades_allowed_by_mode() {
        let websocket = BadRequest::Upgrade(Upgrades::Websocket);
        let off = BadRequest::Upgrade(Upgrades::Off);
        type Row = (&'static str, &'static [&'static [u8]], Result<(), BadRequest>);
        let rows: &[Row] = &[
            ("", &[], Ok(())),
            ("", &[b"websocket"], Ok(())),
            ("", &[b"WebSocket"], Ok(())),
            ("", &[b" websocket "], Ok(())),
            ("", &[b"h2c"], Err(websocket.clone())),
            ("", &[b"foo"], Err(websocket.clone())),
            ("", &[b"websocket, foo"], Err(websocket.clone())),
            ("", &[b"websocket", b"h2c"], Err(websocket.clone())),
            ("", &[b"websocket/13"], Err(websocket.clone())),
            ("", &[b""], Err(websocket.clone())),
            ("upgrades = \"websocket\"", &[b"h2c"], Err(websocket.clone())),
            ("upgrades = \"all\"", &[b"h2c"], Ok(())),
            ("upgrades = \"all\"", &[b"websocket, foo"], Ok(())),
            ("upgrades = \"off\"", &[], Ok(())),
            ("upgrades = \"off\"", &[b"websocket"], Err(off.clone())),
            ("upgrades = \"off\"", &[b"h2c"], Err(off.clone())),
        ];
        for (server, lines, want) in rows {
            let got = policy(server).check_upgrade(lines.iter().copied());
            assert_eq!(got, *want, "{server} {lines:?}");
        }
        assert_eq!(websocket.to_string(), "only Upgrade: websocket is allowed (server.upgrades = \"websocket\")");
        assert_eq!(off.to_string(), "protocol upgrades are not allowed (server.upgrades = \"off\")");
        let bad = load(&POLICY.replace("SERVER", "upgrades = \"h2c\""), "t.toml").map(|_| ()).unwrap_err();
        assert!(bad.to_string().contains("server.upgrades: `h2c` is not websocket, all or off"), "{bad}");
    }

    #[test]
    fn windows_origin_paths_fold_case_and_backslashes() {
        let standard = policy("");
        let windows = policy("origin_paths = \"windows\"");
        let gpt = UserAgentField::One("GPTBot/1.2");
        let kind = |p: &Policy, target: &str| match p.route(false, target.as_bytes(), gpt) {
            Route::Block { target, .. } => format!("block {}", target.canonical),
            Route::Forward { target, .. } => format!("forward {}", target.canonical),
            Route::Serve { file, .. } => format!("serve {}", file.as_str()),
            other => format!("{other:?}"),
        };
        let rows: &[(&str, &str, &str)] = &[
            // (target, standard, windows)
            ("/Private/x", "block /Private/x", "block /private/x"),
            ("/private/x", "forward /private/x", "block /private/x"),
            ("/PRIVATE/x", "forward /PRIVATE/x", "block /private/x"),
            ("/private%5Cx", "forward /private%5Cx", "block /private/x"),
            ("/private%5cx", "forward /private%5Cx", "block /private/x"),
            ("/public%5C..%5CPRIVATE%5Cx", "forward /public%5C..%5CPRIVATE%5Cx", "block /private/x"),
            ("/private\\x", "forward /private/x", "block /private/x"),
            ("/private/open/a", "forward /private/open/a", "forward /private/open/a"),
            ("/a/b.aspx", "forward /a/b.aspx", "block /a/b.aspx"),
            ("/a/B.ASPX", "block /a/B.ASPX", "block /a/b.aspx"),
            ("/a/B.AsPx", "forward /a/B.AsPx", "block /a/b.aspx"),
            ("/ROBOTS.TXT", "forward /ROBOTS.TXT", "serve robots.txt"),
            ("/public/a", "forward /public/a", "forward /public/a"),
        ];
        for (target, want_standard, want_windows) in rows {
            assert_eq!(kind(&standard, target), *want_standard, "standard {target}");
            assert_eq!(kind(&windows, target), *want_windows, "windows {target}");
        }
        // The published robots.txt keeps the patterns as written.
        assert!(windows.robots_txt().contains("Disallow: /Private/\n"), "{}", windows.robots_txt());
        // URL controls and `decide` fold alike.
        assert!(windows.url_controls("/DOCS/a").robots_tag.is_some());
        assert!(standard.url_controls("/DOCS/a").robots_tag.is_none());
        assert!(!windows.decide("GPTBot", "/PRIVATE%5Cx").allowed);
        // Rules merged from the origin's robots.txt are folded too.
        let merged =
            windows.merge_origin(b"User-agent: ExampleBot\nDisallow: /Admin/\n").unwrap_or_else(|e| panic!("{e}"));
        for target in ["/admin/x", "/ADMIN%5Cx"] {
            let d = merged.policy.decide("ExampleBot", target);
            assert_eq!((d.allowed, d.rule.map(|r| r.pattern)), (false, Some("/Admin/")), "{target}");
        }
        assert!(merged.policy.decide("ExampleBot", "/Private/x").allowed);
        let bad = load(&POLICY.replace("SERVER", "origin_paths = \"iis\""), "t.toml").map(|_| ()).unwrap_err();
        assert!(bad.to_string().contains("server.origin_paths: `iis` is not standard or windows"), "{bad}");
    }
}
