//! The process's log output: the tracing subscriber every diagnostic line
//! goes through (the access log line is written to standard output by
//! [`crate::events::RequestDone::log`], not here).

use std::io::IsTerminal;

/// Installs the tracing subscriber: `RUST_LOG` filters (default `info`),
/// `CRAWLGATE_LOG_FORMAT=json` switches to JSON lines. Pingora's `log`
/// records are routed into it.
pub fn init() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let json = std::env::var("CRAWLGATE_LOG_FORMAT").is_ok_and(|v| v == "json");
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    let _ = if json { builder.json().try_init() } else { builder.try_init() };
}
