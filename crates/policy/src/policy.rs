//! The compiled, immutable policy and the questions the proxy asks it:
//! which group and rule decide a request, and which URL-level controls
//! (Robots-Tag, X-Robots-Tag, Content-Usage, robots meta) a path gets.

use crate::canonical::canonicalize;
use crate::decision::{AgentId, Claim, GroupRef, RuleRef};
use crate::identify::TokenMatcher;
use crate::local_file::LocalFile;
use crate::pattern::Pattern;
use crate::robots_tag::TagRules;
use crate::ruleset::RuleSet;
use crate::settings::Settings;

// Under their old paths for the modules that import them from here.
pub(crate) use crate::decision::{Action, Decision, Enforce};

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

/// robots.txt content beyond the groups.
#[derive(Debug, Default, Clone)]
pub(crate) struct RobotsTxtExtras {
    pub sitemaps: Vec<String>,
    pub content_signal: Option<String>,
    pub acap: bool,
    /// RSL 1.0 `License:` URL.
    pub license: Option<String>,
}

/// Sizes of a policy, for `/status` and `check`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stats {
    /// The policy's own `[[group]]` count.
    pub groups: usize,
    /// Groups merged from the origin's robots.txt (`origin = "merge"`).
    pub origin_groups: usize,
    /// Allow/Disallow rules.
    pub rules: usize,
    /// `[[robots_tag]]` entries.
    pub robots_tags: usize,
    /// agents.txt directives.
    pub agents_rules: usize,
}

impl Stats {
    /// The group count as `check`, `/status` and the page say it: `4
    /// groups`, or under `origin = "merge"` (`merging`) `4 policy groups +
    /// 2 origin groups`.
    pub fn groups_text(&self, merging: bool) -> String {
        let n = |n: usize, what: &str| format!("{n} {what}group{}", if n == 1 { "" } else { "s" });
        if merging {
            format!("{} + {}", n(self.groups, "policy "), n(self.origin_groups, "origin "))
        } else {
            n(self.groups, "")
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
    /// Other elements added to the head (TDMRep metas, the RSL license
    /// link), after the robots metas; not in audit mode.
    pub head: Vec<HeadElement>,
}

/// An element the HTML rewriter adds to a page's head unless the page has
/// its own: the TDMRep `<meta name="tdm-reservation">` and
/// `<meta name="tdm-policy">`, the RSL `<link rel="license">`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeadElement {
    /// The page's head elements that make this one redundant, as
    /// `meta:<name>` or `link:<rel>` (lowercase).
    pub unless: Vec<String>,
    /// The element as inserted.
    pub html: String,
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
    /// `tdm-reservation` value (W3C TDM Reservation Protocol), 0 or 1.
    pub tdm_reservation: Option<u8>,
    /// `tdm-policy` URL.
    pub tdm_policy: Option<std::sync::Arc<str>>,
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
    /// Per `content_usage` entry, what the Content-Usage header says for
    /// it: every entry with the same path combined, `n` winning
    /// (draft-ietf-aipref-vocab-08, "Combining Preferences").
    pub content_usage_combined: Vec<String>,
    /// `(path as written or None, canonical list)`.
    pub app_directives: Vec<(Option<String>, String)>,
    pub enforce: Enforce,
    pub block_status: u16,
    /// `enforce = "charge"`: the group's prices.
    pub charge: Option<crate::payment::GroupCharge>,
    /// Taken from the origin's robots.txt by [`Policy::merge_origin`].
    pub origin: bool,
    /// The effective `verify` (`None` without a `[verification]` table).
    pub verify: crate::verification::VerifyMode,
    /// `verify` as written and its offset, resolved once the
    /// `[verification]` table is compiled.
    pub verify_written: Option<(crate::verification::VerifyMode, usize)>,
    pub on_spoofed: crate::verification::OnFailure,
    pub on_unverified: crate::verification::OnFailure,
    /// Whether `on_unverified` is written (else its default depends on the
    /// methods the group has).
    pub on_unverified_written: bool,
    /// `rate` / `burst` / `enforce_crawl_delay`, compiled.
    pub limit: Option<crate::limits::GroupLimit>,
    /// `rate_mode` / `rate_max_delay`, compiled.
    pub rate_mode: crate::limits::RateMode,
    /// `[[group.rates]]`: limits of their own for the paths they match.
    pub path_limits: Vec<crate::limits::PathLimit>,
    /// With `on_unverified = "challenge"`, the `Accept-Signature` value its
    /// challenge sends.
    pub accept_signature: Option<String>,
    /// A `[classes]` class's group: which class (its tokens are the
    /// class's catalog crawlers no `[[group]]` names).
    pub class: Option<crate::classes::ClassTag>,
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

/// A compiled `[[tdmrep.rules]]` entry.
#[derive(Debug, Clone)]
pub(crate) struct TdmRule {
    /// The path pattern as written.
    pub path: String,
    pub pattern: Pattern,
    pub reservation: u8,
    pub policy: Option<std::sync::Arc<str>>,
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
    /// Memo of [`Policy::tag_controls`] by bit set of matching entries
    /// and TDMRep rule; shared by clones of this policy (same entries, same
    /// answers).
    pub(crate) tag_cache: std::sync::Arc<std::sync::RwLock<TagCache>>,
    /// `[[tdmrep.rules]]`, most specific first (the order tdmrep.json
    /// lists them and the first match decides).
    pub(crate) tdm_rules: Vec<TdmRule>,
    /// The rendered `/.well-known/tdmrep.json`, `None` without `[tdmrep]`.
    pub(crate) tdmrep_json: Option<String>,
    /// `(path, document)` of the RSL document served locally.
    pub(crate) rsl: Option<(String, String)>,
    /// The `href` of the injected `<link rel="license">`.
    pub(crate) license_href: Option<String>,
    /// The robots.txt `Content-Signal` value, if any.
    pub(crate) content_signal: Option<String>,
    /// Whether `content_signal` is `"derive"`: a path's value then follows
    /// that path's Content-Usage.
    pub(crate) content_signal_derived: bool,
    /// The policy's own robots.txt extras and file name, so that a merge
    /// with the origin's file renders robots.txt again.
    pub(crate) robots_extras: RobotsTxtExtras,
    pub(crate) file_name: String,
    /// The paths never charged (`crate::payment`).
    pub(crate) free_paths: crate::payment::FreePaths,
}

/// [`Policy::tag_controls`]'s memo: `(matching entries' bit set, TDMRep
/// rule + 1 or 0)` to the controls.
pub(crate) type TagCache = std::collections::HashMap<(u64, u32), std::sync::Arc<TagControls>>;

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

/// The memo key part for a path's TDMRep rule (0: none).
fn tdm_key(tdm: Option<usize>) -> u32 {
    tdm.map_or(0, |i| u32::try_from(i).map_or(u32::MAX, |i| i.saturating_add(1)))
}

impl Policy {
    /// Settings for the proxy.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Sends every forwarded request to one plain-HTTP `server` instead of
    /// the policy's upstream: `crawlgate demo --config` runs an operator's
    /// policy in front of the embedded sample origin.
    pub fn replace_upstream(&mut self, server: String) {
        let u = &mut self.settings.upstream;
        u.servers = vec![server];
        u.tls = false;
        u.sni = String::new();
    }

    /// The name of an identified agent (policy spelling).
    pub fn agent_name(&self, id: AgentId) -> &str {
        self.tokens.get(id.0 as usize).map_or("", String::as_str)
    }

    /// The name of group `index` (`name`, else its first user agent).
    pub fn group_name(&self, index: usize) -> &str {
        self.groups.get(index).map_or("", |g| g.name.as_str())
    }

    /// When group `index` is a `[classes]` class's, why crawler `token`
    /// is in it (the class, its catalog categories, `mixed_purpose`), as
    /// `explain` says it.
    pub fn class_reason(&self, index: usize, token: &str) -> Option<String> {
        let tag = self.groups.get(index)?.class.as_ref()?;
        Some(crate::classes::why(tag, token))
    }

    /// The rendered robots.txt.
    pub fn robots_txt(&self) -> &str {
        &self.robots_txt
    }

    /// The rendered agents.txt, `None` when disabled.
    pub fn agents_txt(&self) -> Option<&str> {
        self.agents_txt.as_deref()
    }

    /// The rendered `/.well-known/tdmrep.json` (W3C TDM Reservation
    /// Protocol), `None` without `[tdmrep]`.
    pub fn tdmrep_json(&self) -> Option<&str> {
        self.tdmrep_json.as_deref()
    }

    /// The RSL 1.0 document served at [`Policy::local_file_path`] of
    /// [`LocalFile::Rsl`], `None` without `[rsl]`.
    pub fn rsl_document(&self) -> Option<&str> {
        self.rsl.as_ref().map(|(_, d)| d.as_str())
    }

    /// The robots.txt `Content-Signal` value (Cloudflare's Content Signals
    /// Policy), written or derived from the `*` group's Content-Usage.
    pub fn content_signal(&self) -> Option<&str> {
        self.content_signal.as_deref()
    }

    /// The Content-Signal value for a response at `path_and_query` (the
    /// header of a response crawlgate makes itself, e.g. a Markdown
    /// rendering): a written `content_signal` as robots.txt publishes it,
    /// for every path; with `"derive"`, what the Content-Usage that path's
    /// responses carry ([`Policy::url_controls`]: the `*` group's most
    /// specific entry) says, mapped as robots.txt's line is
    /// ([`crate::sf::content_signal_from_usage`]); `None` without
    /// `content_signal` or when that Content-Usage states none of
    /// train-ai, ai-use and search.
    pub fn content_signal_for(&self, path_and_query: &str) -> Option<std::borrow::Cow<'_, str>> {
        if !self.content_signal_derived {
            return self.content_signal.as_deref().map(std::borrow::Cow::Borrowed);
        }
        let usage = self.url_controls(path_and_query).content_usage?;
        crate::sf::content_signal_from_usage(&usage).map(std::borrow::Cow::Owned)
    }

    /// The path a locally served file is served at: the fixed path, or the
    /// policy's `rsl.path` for the RSL document.
    pub fn local_file_path(&self, file: LocalFile) -> &str {
        match (file, &self.rsl) {
            (LocalFile::Rsl, Some((path, _))) => path,
            _ => file.path(),
        }
    }

    /// The locally served file at a canonical path and query, if any.
    pub fn local_file(&self, path_and_query: &str) -> Option<LocalFile> {
        LocalFile::at(path_and_query).or_else(|| {
            let (path, _) = self.rsl.as_ref()?;
            let rest = path_and_query.strip_prefix(path.as_str())?;
            (rest.is_empty() || rest.starts_with('?')).then_some(LocalFile::Rsl)
        })
    }

    /// Every group product token (policy spelling, no `*`).
    pub fn tokens(&self) -> impl Iterator<Item = &str> {
        self.tokens.iter().map(String::as_str)
    }

    /// Every group's name.
    pub fn group_names(&self) -> impl Iterator<Item = &str> {
        self.groups.iter().map(|g| g.name.as_str())
    }

    /// Per group with a `verify` other than `none`: its name, the methods
    /// that can actually prove its tokens, and its `on_spoofed` and
    /// `on_unverified` (for `crawlgate check`).
    pub fn group_verification(
        &self,
    ) -> Vec<(&str, Vec<crate::verification::Method>, crate::verification::OnFailure, crate::verification::OnFailure)>
    {
        let v = &self.settings.verification;
        self.groups
            .iter()
            .filter(|g| g.verify != crate::verification::VerifyMode::None)
            .map(|g| {
                let tokens = g.tokens.iter().map(String::as_str).filter(|t| *t != "*");
                (g.name.as_str(), v.methods_for(tokens, g.verify), g.on_spoofed, g.on_unverified)
            })
            .collect()
    }

    /// Hex SHA-256 of the policy source.
    pub fn source_sha256(&self) -> &str {
        &self.sha256
    }

    /// Sizes.
    pub fn stats(&self) -> Stats {
        Stats {
            groups: self.groups.iter().filter(|g| !g.origin).count(),
            origin_groups: self.groups.iter().filter(|g| g.origin).count(),
            rules: self.groups.iter().map(|g| g.rules.len()).sum(),
            robots_tags: self.tags.len(),
            agents_rules: self.agents_rules,
        }
    }

    /// Decides a request: identifies the agent in `user_agent`, selects its
    /// group (else `*`) and finds the deciding rule for `path_and_query`
    /// (canonicalised here; no allocation when already canonical).
    pub fn decide(&self, user_agent: &str, path_and_query: &str) -> Decision<'_> {
        self.decide_canonical(user_agent, &self.match_form(canonicalize(path_and_query)))
    }

    /// [`Policy::decide`] on a path already in canonical form (the routing
    /// step has it from the request target), so it is not scanned again.
    pub(crate) fn decide_canonical(&self, user_agent: &str, path: &str) -> Decision<'_> {
        let (token, observed) = self.matcher.find_observed(user_agent);
        let mut decision = self.decide_token(token, path);
        decision.observed = observed;
        decision
    }

    /// Whether `user_agent` looks like a browser's
    /// ([`crate::identify::looks_like_browser`]), remembered with its
    /// identification.
    pub fn looks_like_browser(&self, user_agent: &str) -> bool {
        self.matcher.looks_like_browser(user_agent)
    }

    /// The token identified in `user_agent` and its group's `verify` mode;
    /// `None` when it names no policy token. Pure and allocation-free: the
    /// proxy asks it before verifying.
    pub fn claim(&self, user_agent: &str) -> Option<Claim<'_>> {
        let t = self.matcher.find(user_agent)?;
        self.claim_of(t)
    }

    /// The claim of the policy token spelled `token` (ASCII
    /// case-insensitive), e.g. the one a valid signature proves.
    pub fn claim_token(&self, token: &str) -> Option<Claim<'_>> {
        let t = self.token_index(token)?;
        self.claim_of(t)
    }

    /// The claim to verify for a catalog crawler the policy does not name
    /// (`identify::catalog_crawler`), when `[verification]` is present and
    /// its `observe_catalog` is `"verify"`: the catalog's methods
    /// (`verify = "any"`). The outcome is counted, never decided on; its
    /// `agent_id` indexes no policy token.
    pub fn observed_claim(&self, token: &'static str) -> Option<Claim<'static>> {
        let v = &self.settings().verification;
        if !v.enabled || !v.observe_catalog || self.token_index(token).is_some() {
            return None;
        }
        Some(Claim { agent: token, agent_id: AgentId(u32::MAX), verify: crate::verification::VerifyMode::Any })
    }

    /// A catalog crawler the policy does not name, observed in a request
    /// whose own claim verified nothing (`decided` is
    /// `Verification::NotApplicable`): its token, for the access line and
    /// the counts, and the claim to verify it by when `observe_catalog`
    /// says so ([`Policy::observed_claim`]). Its outcome is never decided
    /// on. The proxy and `crawlgate explain` both ask this, so the preview
    /// verifies what the proxy verifies.
    pub fn observation(
        &self,
        user_agent: &str,
        decided: crate::verification::Verification,
    ) -> Option<(&'static str, Option<Claim<'static>>)> {
        if decided != crate::verification::Verification::NotApplicable {
            return None;
        }
        let token = crate::identify::catalog_crawler(user_agent)?;
        Some((token, self.observed_claim(token)))
    }

    fn claim_of(&self, t: usize) -> Option<Claim<'_>> {
        let agent_id = AgentId(u32::try_from(t).ok()?);
        let verify = self.groups.get(*self.token_group.get(t)?)?.verify;
        Some(Claim { agent: self.tokens[t].as_str(), agent_id, verify })
    }

    /// Index of the policy token spelled `token` (ASCII case-insensitive).
    pub(crate) fn token_index(&self, token: &str) -> Option<usize> {
        self.tokens.iter().position(|t| t.eq_ignore_ascii_case(token))
    }

    /// The `Accept-Signature` value of the challenge `decision` answers
    /// with: `Some` exactly when its group has `on_unverified =
    /// "challenge"` and the request's claim is unverified.
    pub fn challenge(&self, decision: &Decision<'_>) -> Option<&str> {
        if decision.on_failure != Some(crate::verification::OnFailure::Challenge) {
            return None;
        }
        let t = decision.agent_id?;
        self.group_of(t.index())?.accept_signature.as_deref()
    }

    /// The group that applies to token `t` (its own, else `*`'s).
    pub(crate) fn group_of(&self, t: usize) -> Option<&Group> {
        self.token_group.get(t).and_then(|&g| self.groups.get(g))
    }

    /// Decides on an identified token index (or none) and a canonical path.
    pub(crate) fn decide_token(&self, token: Option<usize>, path: &str) -> Decision<'_> {
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
                verification: crate::verification::Verification::NotApplicable,
                on_failure: None,
                claimed: None,
                observed: None,
            };
        };
        let g = &self.groups[gi];
        let group = Some(GroupRef { index: gi, name: &g.name, line: g.line, origin: g.origin });
        let rule = if self.local_file(path).is_some() { None } else { g.rules.evaluate(path) };
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
            verification: crate::verification::Verification::NotApplicable,
            on_failure: None,
            claimed: None,
            observed: None,
        }
    }

    /// Whether any `[[robots_tag]]` entry rewrites HTML (a mode other than
    /// `off`): when none does, no response of this policy is rewritten.
    pub fn rewrites_html(&self) -> bool {
        self.tags.iter().any(|t| matches!(t.html, Some(Some(_)))) || self.adds_head_elements()
    }

    /// Whether some path gets [`HeadElement`]s (TDMRep rules, a license).
    fn adds_head_elements(&self) -> bool {
        !self.tdm_rules.is_empty() || self.license_href.is_some()
    }

    /// The TDMRep rule for a path: the first match, most specific first.
    fn tdm_rule(&self, path: &str) -> Option<usize> {
        self.tdm_rules.iter().position(|r| r.pattern.matches(path))
    }

    /// The head elements of a path whose TDMRep rule is `tdm`.
    fn head_elements(&self, tdm: Option<usize>) -> Vec<HeadElement> {
        let mut out = Vec::new();
        if let Some(rule) = tdm.and_then(|i| self.tdm_rules.get(i)) {
            let unless = vec!["meta:tdm-reservation".to_string(), "meta:tdm-policy".to_string()];
            out.push(HeadElement {
                unless: unless.clone(),
                html: crate::robots_tag::meta_element("tdm-reservation", &rule.reservation.to_string()),
            });
            if let Some(p) = &rule.policy {
                out.push(HeadElement { unless, html: crate::robots_tag::meta_element("tdm-policy", p) });
            }
        }
        if let Some(href) = &self.license_href {
            out.push(HeadElement {
                unless: vec!["link:license".to_string()],
                html: crate::robots_tag::link_element("license", "application/rsl+xml", href),
            });
        }
        out
    }

    /// The URL-level controls of a path, the same for every User-Agent.
    pub fn url_controls(&self, path_and_query: &str) -> UrlControls {
        self.url_controls_canonical(&self.match_form(canonicalize(path_and_query)))
    }

    /// [`Policy::url_controls`] on a path already in canonical form.
    pub(crate) fn url_controls_canonical(&self, path: &str) -> UrlControls {
        let mut controls = UrlControls::default();
        let tdm = self.tdm_rule(path);
        if let Some(rule) = tdm.and_then(|i| self.tdm_rules.get(i)) {
            controls.tdm_reservation = Some(rule.reservation);
            controls.tdm_policy = rule.policy.clone();
        }
        if !self.tags.is_empty() || self.adds_head_elements() {
            let tagged = self.tag_controls(path, tdm);
            controls.robots_tag = tagged.robots_tag.clone();
            controls.x_robots_tag = tagged.x_robots_tag.clone();
            controls.html = tagged.html.clone();
        }
        if let Some(star) = self.star_group.map(|i| &self.groups[i]) {
            let allowed = star.rules.evaluate(path).is_none_or(|i| star.rules.is_allow(i));
            if allowed {
                controls.content_usage =
                    star.content_usage_set.evaluate(path).map(|i| star.content_usage_combined[i].clone());
            }
        }
        controls
    }

    /// The robots_tag part of the URL controls. It depends only on which
    /// entries match the path, so it is built once per set of matching
    /// entries and memoised (building means parsing rules and serialising
    /// structured fields: microseconds, too much for every request).
    fn tag_controls(&self, path: &str, tdm: Option<usize>) -> std::sync::Arc<TagControls> {
        let mut mask: u64 = 0;
        let cacheable = self.tags.len() <= 64;
        if cacheable {
            for (i, t) in self.tags.iter().enumerate() {
                if t.pattern.matches(path) {
                    mask |= 1 << i;
                }
            }
            let cached = self.tag_cache.read().ok().and_then(|c| c.get(&(mask, tdm_key(tdm))).cloned());
            if let Some(hit) = cached {
                return hit;
            }
        }
        let matching: Vec<&TagEntry> = if cacheable {
            self.tags.iter().enumerate().filter(|(i, _)| mask & (1 << i) != 0).map(|(_, t)| t).collect()
        } else {
            self.tags.iter().filter(|t| t.pattern.matches(path)).collect()
        };
        let built = std::sync::Arc::new(self.build_tag_controls(&matching, tdm));
        if cacheable {
            if let Ok(mut c) = self.tag_cache.write() {
                if c.len() < TAG_CACHE_LIMIT {
                    c.insert((mask, tdm_key(tdm)), built.clone());
                }
            }
        }
        built
    }

    fn build_tag_controls(&self, matching: &[&TagEntry], tdm: Option<usize>) -> TagControls {
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
        let html_key =
            matching.iter().filter(|t| t.html.is_some()).max_by_key(|t| t.pattern.specificity()).and_then(|t| t.html);
        let mode = html_key.flatten();
        let head = self.head_elements(tdm);
        if let (Some(mode), Ok(rules)) = (mode, TagRules::new(all_entries)) {
            if !rules.is_empty() {
                let directives = rules
                    .entries()
                    .iter()
                    .map(|(t, r)| (t.clone(), r.iter().map(crate::robots_tag::Rule::legacy).collect()))
                    .collect();
                out.html = Some(std::sync::Arc::new(HtmlPlan {
                    mode,
                    directives,
                    metas: rules.meta_elements(),
                    head: head.clone(),
                }));
            }
        }
        // Head elements alone: injected unless the path's robots_tag entry
        // says `html = "off"` (no rewrite) or `"audit"` (change nothing).
        let head_allowed = !matches!(html_key, Some(None) | Some(Some(HtmlMode::Audit)));
        if out.html.is_none() && !head.is_empty() && head_allowed {
            out.html = Some(std::sync::Arc::new(HtmlPlan {
                mode: HtmlMode::Inject,
                directives: Vec::new(),
                metas: Vec::new(),
                head,
            }));
        }
        out
    }
}
