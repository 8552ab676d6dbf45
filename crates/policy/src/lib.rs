//! crawlgate-policy: the pure policy engine of crawlgate.
//!
//! Owns the TOML schema, validation, compilation, RFC 9309 matching, agent
//! identification and the rendering of every published surface (robots.txt,
//! agents.txt, Robots-Tag, Content-Usage, robots meta). It does no I/O: no
//! files, no network, no async runtime. It does not know about HTTP
//! servers, HTML rewriting or metrics.

pub mod agents_txt;
pub mod cache;
pub mod canonical;
pub mod catalog;
pub mod classes;
pub mod client;
mod compile;
mod decision;
mod diag;
pub mod google;
pub mod identify;
pub mod limits;
mod local_file;
pub mod markdown;
pub mod markdown_cache;
mod merge;
pub mod pattern;
pub mod payment;
mod policy;
mod raw;
pub mod referrers;
mod render;
pub mod robots_tag;
pub mod robotstxt;
mod route;
pub mod ruleset;
pub mod scheme;
mod settings;
pub mod sf;
pub mod siteintent;
mod type_error;
pub mod validate;
mod verdict;
pub mod verification;

pub use compile::{load, Loaded, ADMIN_CONNECTIONS, MAX_ROBOTS_TXT};
pub use decision::{Action, AgentId, BlockReason, Claim, Decision, Enforce, GroupRef, RuleRef};
pub use diag::{error_at_key, key_written, parse_duration, Diagnostic, Diagnostics, Warning};
pub use local_file::LocalFile;
pub use merge::{Conflict, ConflictKind, MergeError, Merged};
pub use policy::{HeadElement, HtmlMode, HtmlPlan, Policy, Stats, UrlControls};
pub use route::{BadRequest, Identity, OriginPaths, Route, Upgrades, UserAgentField};
pub use settings::{
    AccessLogFormat, OriginHeaderMode, OriginRobotsMode, OriginRobotsSettings, ServerSettings, Settings,
    UpstreamSettings,
};
pub use verdict::{CacheRule, RequestFacts, UpgradeField, Verdict};
