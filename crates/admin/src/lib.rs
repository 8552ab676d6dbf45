//! crawlgate-admin: the admin listener.
//!
//! Owns the HTTP app of `server.admin` (`/metrics`, `/status`, `/healthz`,
//! `/readyz`, the dashboard at `/` and its JSON documents under `/api/`),
//! its optional credentials (`server.admin_auth_file`) and the dashboard
//! page. It reads the running proxy through the [`AdminState`] trait, which
//! the proxy implements, and the numbers through `crawlgate-telemetry`; it
//! does not know the proxy's types, bind its listener or cap its
//! connections (the proxy wraps [`Admin`] in its connection limits).

mod app;
mod auth;
mod dashboard;
mod field;
mod view;

pub use app::{Admin, PROBES};
pub use auth::{authorization, AdminAuth, AuthError};
pub use dashboard::bytes as human_bytes;
pub use field::ratio;
pub use view::{AdminState, Status};
