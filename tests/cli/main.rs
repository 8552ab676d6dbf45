//! End-to-end tests of the `crawlgate` binary's offline commands.

mod agents;
mod catalog;
mod golden;
mod ledger;
mod limits;
mod live;
mod offline;
mod robots;
mod tokens;
mod top;
mod verify;

/// What `import` writes after `[upstream]`: the admin listener on loopback,
/// where the README's first hour opens the dashboard.
pub const ADMIN_BLOCK: &str = "\n[server]\n# The admin listener: the dashboard at http://127.0.0.1:9090/, /metrics,\n\
# /healthz, /readyz. Loopback only: see admin_auth_file before any other address.\nadmin = \"127.0.0.1:9090\"\n";
