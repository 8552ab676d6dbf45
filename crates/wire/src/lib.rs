//! crawlgate-wire: what the proxy reads and writes on a client connection
//! below Pingora's HTTP/1 code, as plain byte rules apart from any socket
//! or Pingora type, so each is tested (and fuzzed) alone:
//!
//! - [`proxy_protocol`]: the PROXY protocol header (v1, v2) a trusted load
//!   balancer sends first, read exactly;
//! - [`header_end`]: where a request header ends (RFC 9112 section 2), for
//!   the header deadline;
//! - [`held`]: a response held back instead of written as Pingora writes
//!   it: a chunked end coalesced into one write, a converted Markdown
//!   response held whole so `x-markdown-tokens` (and a charge's fields,
//!   once approved) go in its header.
//!
//! The proxy's `conn` module wraps the stream and applies them.

pub mod header_end;
pub mod held;
pub mod proxy_protocol;
