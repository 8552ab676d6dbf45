//! End-to-end tests of `crawlgate run`: the real binary in front of a real
//! origin on 127.0.0.1, spoken to with a real HTTP client.

mod client_addr;
mod connections;
mod decompression;
mod enforce;
mod errors;
mod headers;
mod html;
mod html_limits;
mod oplog;
mod ops;
mod protocols;
mod serving;
mod support;
mod targets;
mod upstream_headers;
