//! End-to-end tests of `crawlgate run`: the real binary in front of a real
//! origin on 127.0.0.1, spoken to with a real HTTP client.

mod admin_limits;
mod behind_nginx;
mod client_addr;
mod connections;
mod dashboard;
mod decompression;
mod demo;
mod enforce;
mod errors;
mod guard_rails;
mod headers;
mod html;
mod html_limits;
mod identity;
mod limits;
mod limits_redis;
mod markdown;
mod markdown_conditional;
mod observe;
mod oplog;
mod ops;
mod origin_merge;
mod payment;
mod payment_rsl;
mod payment_x402;
mod protocols;
mod readme_lists;
mod serving;
mod signals;
mod signatures;
mod support;
mod targets;
mod tls_reload;
mod upgrades;
mod upstream_headers;
