//! crawlgate-policy: the pure policy engine of crawlgate.
//!
//! Owns the TOML schema, validation, compilation, RFC 9309 matching, agent
//! identification and the rendering of every published surface (robots.txt,
//! agents.txt, Robots-Tag, Content-Usage, robots meta). It does no I/O: no
//! files, no network, no async runtime.

pub mod agents_txt;
pub mod catalog;
pub mod identify;
pub mod matcher;
pub mod robots_tag;
pub mod robotstxt;
pub mod sf;
