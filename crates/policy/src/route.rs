//! The routing step: what the proxy does with one request, decided as data
//! from its method, raw target and `User-Agent` field before anything is
//! sent. The proxy only carries the [`Route`] out, so every branch here is
//! table-tested without a server.

use crate::canonical::{classify_request_target, PathError, RequestTarget};
use crate::local_file::LocalFile;
use crate::policy::{Action, Decision, Policy, UrlControls};

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
    /// Answer 404: the policy publishes no such file (agents.txt disabled).
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
    /// Routes one request: validates its target (RFC 9112 section 3.2) and
    /// `User-Agent`, answers the locally served files, and decides the rest
    /// on the canonical path. Pure: the proxy carries the result out.
    pub fn route<'p, 'r>(&'p self, is_options: bool, raw_target: &'r [u8], ua: UserAgentField<'r>) -> Route<'p, 'r> {
        let user_agent = match ua {
            UserAgentField::Many => return Route::BadRequest(BadRequest::ManyUserAgents),
            UserAgentField::Absent => "",
            UserAgentField::One(ua) => ua,
        };
        let target = match classify_request_target(raw_target, is_options) {
            Ok(t) => t,
            Err(e) => return Route::BadRequest(e.into()),
        };
        let decision = self.decide_canonical(user_agent, &target.canonical);
        if let Some(file) = LocalFile::at(&target.canonical) {
            let published = match file {
                LocalFile::RobotsTxt => true,
                LocalFile::AgentsTxt => self.agents_txt().is_some(),
            };
            return if published { Route::Serve { file, decision } } else { Route::NotFound { file, decision } };
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
