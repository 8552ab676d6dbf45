//! The compiled, immutable policy and the questions the proxy asks it:
//! which group and rule decide a request, and which URL-level controls
//! (Robots-Tag, X-Robots-Tag, Content-Usage, robots meta) a path gets.

use std::time::Duration;

use crate::canonical::canonicalize;
use crate::identify::TokenMatcher;
use crate::pattern::Pattern;
use crate::robots_tag::TagRules;
use crate::ruleset::RuleSet;

/// What the proxy does when a group's disallowed path is requested.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enforce {
    /// Forward silently.
    Off,
    /// Forward and record a violation.
    Log,
    /// Answer `block_status` without contacting the origin.
    Block,
}

impl Enforce {
    /// `off`, `log` or `block`.
    pub fn as_str(self) -> &'static str {
        match self {
            Enforce::Off => "off",
            Enforce::Log => "log",
            Enforce::Block => "block",
        }
    }
}

/// What happens to one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Forward.
    Pass,
    /// Forward and record a violation.
    LogViolation,
    /// Answer the block status.
    Block,
}

impl Action {
    /// Every action, in metric label order.
    pub const ALL: [Action; 3] = [Action::Pass, Action::LogViolation, Action::Block];

    /// The request's outcome as metrics and the access log name it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Action::Pass => "allowed",
            Action::LogViolation => "violation_logged",
            Action::Block => "blocked",
        }
    }
}

/// A policy token identified in a User-Agent: an index into the policy's
/// tokens, so a request can keep it without copying the name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AgentId(u32);

/// How an origin's own `Content-Usage` header is treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OriginHeaderMode {
    /// The origin's header wins.
    Keep,
    /// The policy's value replaces it.
    Replace,
}

/// HTML rewrite mode of a `[[robots_tag]]` entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HtmlMode {
    /// Add the policy's metas.
    Inject,
    /// Report, change nothing.
    Audit,
    /// Remove conflicting metas and add the policy's.
    Enforce,
}

impl HtmlMode {
    /// `inject`, `audit` or `enforce`.
    pub fn as_str(self) -> &'static str {
        match self {
            HtmlMode::Inject => "inject",
            HtmlMode::Audit => "audit",
            HtmlMode::Enforce => "enforce",
        }
    }
}

/// `[server]`.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerSettings {
    /// Plain HTTP listeners.
    pub listen: Vec<String>,
    /// HTTP/2 prior knowledge on plain listeners.
    pub h2c: bool,
    /// TLS listeners.
    pub tls_listen: Vec<String>,
    /// Certificate path.
    pub tls_cert: Option<String>,
    /// Key path.
    pub tls_key: Option<String>,
    /// Admin listener.
    pub admin: Option<String>,
    /// Worker threads.
    pub threads: usize,
    /// Graceful shutdown wait.
    pub grace_period: Duration,
    /// Access log on or off.
    pub access_log: bool,
    /// Fraction of requests logged.
    pub access_log_sample: f64,
    /// How long a client connection may wait for the first byte of a
    /// request, new or kept alive (and an HTTP/2 connection with no open
    /// stream stays open).
    pub client_idle_timeout: Duration,
    /// Total time from a request's first byte to the end of its header.
    pub client_header_timeout: Duration,
    /// Longest wait between two reads of a request body.
    pub client_body_timeout: Duration,
    /// Concurrent client connections on the proxy listeners.
    pub max_connections: usize,
    /// Whether connections from a trusted proxy start with a PROXY protocol
    /// v1 or v2 header (HAProxy's PROXY protocol specification).
    pub proxy_protocol: bool,
    /// How access log lines are written.
    pub access_log_format: AccessLogFormat,
    /// Whether `/readyz` also needs a healthy upstream server.
    pub ready_requires_upstream: bool,
}

/// `server.access_log_format`: the encoding of an access log line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessLogFormat {
    /// `key=value` pairs separated by spaces (logfmt).
    Logfmt,
    /// One JSON object per line.
    Json,
}

impl AccessLogFormat {
    /// Its name in the policy file.
    pub const fn as_str(self) -> &'static str {
        match self {
            AccessLogFormat::Logfmt => "logfmt",
            AccessLogFormat::Json => "json",
        }
    }
}

/// `[upstream]`.
#[derive(Clone, Debug, PartialEq)]
pub struct UpstreamSettings {
    /// `host:port` servers.
    pub servers: Vec<String>,
    /// TLS to the origin.
    pub tls: bool,
    /// SNI and certificate name.
    pub sni: String,
    /// Verify the origin's certificate.
    pub verify_cert: bool,
    /// Connect timeout.
    pub connect_timeout: Duration,
    /// Read timeout.
    pub read_timeout: Duration,
    /// Health check period (zero: off).
    pub health_check_interval: Duration,
    /// What happens to an origin's own Content-Usage.
    pub content_usage: OriginHeaderMode,
}

/// Settings the proxy reads.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// `[server]`.
    pub server: ServerSettings,
    /// `[upstream]`.
    pub upstream: UpstreamSettings,
    /// `max-age` of /robots.txt and /agents.txt.
    pub cache_max_age: Duration,
    /// `[verification]`.
    pub verification: crate::verification::VerificationSettings,
}

/// Sizes of a policy, for `/status` and `check`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stats {
    /// `[[group]]` count.
    pub groups: usize,
    /// Allow/Disallow rules.
    pub rules: usize,
    /// `[[robots_tag]]` entries.
    pub robots_tags: usize,
    /// agents.txt directives.
    pub agents_rules: usize,
}

/// The group that applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupRef<'p> {
    /// Index in the policy.
    pub index: usize,
    /// Its name (`name`, else its first user agent).
    pub name: &'p str,
    /// Line of its `[[group]]` header.
    pub line: usize,
}

/// The deciding rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuleRef<'p> {
    /// The pattern as written.
    pub pattern: &'p str,
    /// Allow or disallow.
    pub allow: bool,
    /// Its line in the policy file.
    pub line: usize,
}

/// The decision for one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision<'p> {
    /// The product token found in the User-Agent (policy spelling).
    pub agent: Option<&'p str>,
    /// The same token as an id ([`Policy::agent_name`] gives it back).
    pub agent_id: Option<AgentId>,
    /// The group applied (the token's, else `*`'s).
    pub group: Option<GroupRef<'p>>,
    /// The deciding rule.
    pub rule: Option<RuleRef<'p>>,
    /// Allowed by robots.txt.
    pub allowed: bool,
    /// The group's enforce mode.
    pub enforce: Enforce,
    /// Status of a block.
    pub block_status: u16,
}

impl Decision<'_> {
    /// What the proxy does. Requests naming no policy token (browsers,
    /// unknown clients) are never blocked: a block on them is logged.
    pub fn action(&self) -> Action {
        if self.allowed {
            return Action::Pass;
        }
        match self.enforce {
            Enforce::Off => Action::Pass,
            Enforce::Log => Action::LogViolation,
            Enforce::Block if self.agent.is_none() => Action::LogViolation,
            Enforce::Block => Action::Block,
        }
    }
}

/// The HTML part of the URL-level controls.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HtmlPlan {
    /// Rewrite mode.
    pub mode: HtmlMode,
    /// `("*" or token, lowercase rules)`.
    pub directives: Vec<(String, Vec<String>)>,
    /// `(meta name, content)` to inject.
    pub metas: Vec<(String, String)>,
}

/// Headers and metas a path gets, independent of the User-Agent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UrlControls {
    /// `Robots-Tag` value.
    pub robots_tag: Option<String>,
    /// `X-Robots-Tag` lines.
    pub x_robots_tag: Vec<String>,
    /// `Content-Usage` value (from the `*` group).
    pub content_usage: Option<String>,
    /// HTML rewrite plan, shared with the policy's memo (cloning the
    /// controls per request does not copy it).
    pub html: Option<std::sync::Arc<HtmlPlan>>,
}

/// A compiled `[[group]]`.
#[derive(Debug, Clone)]
pub(crate) struct Group {
    pub name: String,
    pub line: usize,
    /// Tokens as written (`*` included), after category expansion.
    pub tokens: Vec<String>,
    /// `(pattern as written, allow, line)` in file order.
    pub rules_src: Vec<(String, bool, usize)>,
    pub rules: RuleSet,
    pub crawl_delay: Option<String>,
    /// `(path as written or None, canonical prefs)`.
    pub content_usage: Vec<(Option<String>, String)>,
    pub content_usage_set: RuleSet,
    /// `(path as written or None, canonical list)`.
    pub app_directives: Vec<(Option<String>, String)>,
    pub enforce: Enforce,
    pub block_status: u16,
}

/// A compiled `[[robots_tag]]`.
#[derive(Debug, Clone)]
pub(crate) struct TagEntry {
    pub path: String,
    pub pattern: Pattern,
    pub agents: Vec<String>,
    pub rules: Vec<String>,
    pub header: bool,
    /// `None`: no `html` key (a shorter entry's mode still applies);
    /// `Some(None)`: `html = "off"` (no rewrite on these paths).
    pub html: Option<Option<HtmlMode>>,
}

/// The compiled policy: immutable, `Send + Sync`.
#[derive(Debug, Clone)]
pub struct Policy {
    pub(crate) settings: Settings,
    pub(crate) groups: Vec<Group>,
    pub(crate) star_group: Option<usize>,
    /// Identification tokens (no `*`) and their groups.
    pub(crate) tokens: Vec<String>,
    pub(crate) token_group: Vec<usize>,
    pub(crate) matcher: TokenMatcher,
    pub(crate) tags: Vec<TagEntry>,
    /// Every token named by a robots_tag entry, in first-seen order.
    pub(crate) tag_tokens: Vec<String>,
    pub(crate) robots_txt: String,
    pub(crate) agents_txt: Option<String>,
    pub(crate) agents_rules: usize,
    pub(crate) sha256: String,
    /// Memo of [`Policy::tag_controls`] by bit set of matching entries;
    /// shared by clones of this policy (same entries, same answers).
    pub(crate) tag_cache:
        std::sync::Arc<std::sync::RwLock<std::collections::HashMap<u64, std::sync::Arc<TagControls>>>>,
}

/// The robots_tag part of [`UrlControls`].
#[derive(Debug, Default)]
pub(crate) struct TagControls {
    robots_tag: Option<String>,
    x_robots_tag: Vec<String>,
    html: Option<std::sync::Arc<HtmlPlan>>,
}

/// How many sets of matching robots_tag entries are memoised; a policy
/// whose paths produce more (hardly possible) builds the rest per request.
const TAG_CACHE_LIMIT: usize = 4096;

fn is_fixed_file(path: &str) -> bool {
    crate::local_file::LocalFile::at(path).is_some()
}

impl Policy {
    /// Settings for the proxy.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The name of an identified agent (policy spelling).
    pub fn agent_name(&self, id: AgentId) -> &str {
        self.tokens.get(id.0 as usize).map_or("", String::as_str)
    }

    /// The name of group `index` (`name`, else its first user agent).
    pub fn group_name(&self, index: usize) -> &str {
        self.groups.get(index).map_or("", |g| g.name.as_str())
    }

    /// The rendered robots.txt.
    pub fn robots_txt(&self) -> &str {
        &self.robots_txt
    }

    /// The rendered agents.txt, `None` when disabled.
    pub fn agents_txt(&self) -> Option<&str> {
        self.agents_txt.as_deref()
    }

    /// Every group product token (policy spelling, no `*`).
    pub fn tokens(&self) -> impl Iterator<Item = &str> {
        self.tokens.iter().map(String::as_str)
    }

    /// Every group's name.
    pub fn group_names(&self) -> impl Iterator<Item = &str> {
        self.groups.iter().map(|g| g.name.as_str())
    }

    /// Hex SHA-256 of the policy source.
    pub fn source_sha256(&self) -> &str {
        &self.sha256
    }

    /// Sizes.
    pub fn stats(&self) -> Stats {
        Stats {
            groups: self.groups.len(),
            rules: self.groups.iter().map(|g| g.rules.len()).sum(),
            robots_tags: self.tags.len(),
            agents_rules: self.agents_rules,
        }
    }

    /// Decides a request: identifies the agent in `user_agent`, selects its
    /// group (else `*`) and finds the deciding rule for `path_and_query`
    /// (canonicalised here; no allocation when already canonical).
    pub fn decide(&self, user_agent: &str, path_and_query: &str) -> Decision<'_> {
        self.decide_canonical(user_agent, &canonicalize(path_and_query))
    }

    /// [`Policy::decide`] on a path already in canonical form (the routing
    /// step has it from the request target), so it is not scanned again.
    pub(crate) fn decide_canonical(&self, user_agent: &str, path: &str) -> Decision<'_> {
        let token = self.matcher.find(user_agent);
        let agent = token.map(|t| self.tokens[t].as_str());
        let agent_id = token.and_then(|t| u32::try_from(t).ok()).map(AgentId);
        let group_idx = token.map(|t| self.token_group[t]).or(self.star_group);
        let Some(gi) = group_idx else {
            return Decision {
                agent,
                agent_id,
                group: None,
                rule: None,
                allowed: true,
                enforce: Enforce::Off,
                block_status: 403,
            };
        };
        let g = &self.groups[gi];
        let group = Some(GroupRef { index: gi, name: &g.name, line: g.line });
        let rule = if is_fixed_file(path) { None } else { g.rules.evaluate(path) };
        let rule = rule.map(|i| {
            let (pattern, allow, line) = &g.rules_src[i];
            RuleRef { pattern, allow: *allow, line: *line }
        });
        Decision {
            agent,
            agent_id,
            group,
            allowed: rule.is_none_or(|r| r.allow),
            rule,
            enforce: g.enforce,
            block_status: g.block_status,
        }
    }

    /// Whether any `[[robots_tag]]` entry rewrites HTML (a mode other than
    /// `off`): when none does, no response of this policy is rewritten.
    pub fn rewrites_html(&self) -> bool {
        self.tags.iter().any(|t| matches!(t.html, Some(Some(_))))
    }

    /// The URL-level controls of a path, the same for every User-Agent.
    pub fn url_controls(&self, path_and_query: &str) -> UrlControls {
        self.url_controls_canonical(&canonicalize(path_and_query))
    }

    /// [`Policy::url_controls`] on a path already in canonical form.
    pub(crate) fn url_controls_canonical(&self, path: &str) -> UrlControls {
        let mut controls = UrlControls::default();
        if !self.tags.is_empty() {
            let tagged = self.tag_controls(path);
            controls.robots_tag = tagged.robots_tag.clone();
            controls.x_robots_tag = tagged.x_robots_tag.clone();
            controls.html = tagged.html.clone();
        }
        if let Some(star) = self.star_group.map(|i| &self.groups[i]) {
            let allowed = star.rules.evaluate(path).is_none_or(|i| star.rules.is_allow(i));
            if allowed {
                controls.content_usage = star.content_usage_set.evaluate(path).map(|i| star.content_usage[i].1.clone());
            }
        }
        controls
    }

    /// The robots_tag part of the URL controls. It depends only on which
    /// entries match the path, so it is built once per set of matching
    /// entries and memoised (building means parsing rules and serialising
    /// structured fields: microseconds, too much for every request).
    fn tag_controls(&self, path: &str) -> std::sync::Arc<TagControls> {
        let mut mask: u64 = 0;
        let cacheable = self.tags.len() <= 64;
        if cacheable {
            for (i, t) in self.tags.iter().enumerate() {
                if t.pattern.matches(path) {
                    mask |= 1 << i;
                }
            }
            let cached = self.tag_cache.read().ok().and_then(|c| c.get(&mask).cloned());
            if let Some(hit) = cached {
                return hit;
            }
        }
        let matching: Vec<&TagEntry> = if cacheable {
            self.tags.iter().enumerate().filter(|(i, _)| mask & (1 << i) != 0).map(|(_, t)| t).collect()
        } else {
            self.tags.iter().filter(|t| t.pattern.matches(path)).collect()
        };
        let built = std::sync::Arc::new(self.build_tag_controls(&matching));
        if cacheable {
            if let Ok(mut c) = self.tag_cache.write() {
                if c.len() < TAG_CACHE_LIMIT {
                    c.insert(mask, built.clone());
                }
            }
        }
        built
    }

    fn build_tag_controls(&self, matching: &[&TagEntry]) -> TagControls {
        let mut out = TagControls::default();
        let mut header_entries = Vec::new();
        let mut all_entries = Vec::new();
        for token in &self.tag_tokens {
            let winner = matching
                .iter()
                .filter(|t| t.agents.iter().any(|a| a.eq_ignore_ascii_case(token)))
                .max_by_key(|t| t.pattern.specificity());
            if let Some(w) = winner {
                all_entries.push((token.clone(), w.rules.clone()));
                if w.header {
                    header_entries.push((token.clone(), w.rules.clone()));
                }
            }
        }
        if let Ok(rules) = TagRules::new(header_entries) {
            out.robots_tag = rules.robots_tag_value();
            out.x_robots_tag = rules.x_robots_tag_values();
        }
        let mode = matching
            .iter()
            .filter(|t| t.html.is_some())
            .max_by_key(|t| t.pattern.specificity())
            .and_then(|t| t.html.flatten());
        if let (Some(mode), Ok(rules)) = (mode, TagRules::new(all_entries)) {
            if !rules.is_empty() {
                let directives = rules
                    .entries()
                    .iter()
                    .map(|(t, r)| (t.clone(), r.iter().map(crate::robots_tag::Rule::legacy).collect()))
                    .collect();
                out.html = Some(std::sync::Arc::new(HtmlPlan { mode, directives, metas: rules.meta_elements() }));
            }
        }
        out
    }
}
