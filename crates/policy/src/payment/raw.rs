//! The `[payment]` table and a group's `[[group.prices]]` as written:
//! serde types mirroring the TOML, unknown keys rejected. Apart from
//! `raw.rs` so the dialects' sub-tables can be added here alone.

use serde::Deserialize;
use toml::Spanned;

type S<T> = Spanned<T>;

/// `[payment]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPayment {
    pub terms: Option<S<String>>,
    pub free: Option<Vec<S<String>>>,
    pub ledger: Option<S<String>>,
    pub ledger_spool: Option<S<String>>,
    pub ledger_password_file: Option<S<String>>,
    pub dialects: Option<Vec<S<String>>>,
    pub cloudflare_origin: Option<S<bool>>,
    pub instance_id: Option<S<String>>,
    pub rsl: Option<S<super::dialects::RawRsl>>,
    pub x402: Option<S<super::dialects::RawX402>>,
}

/// One `[[group.prices]]` entry.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPathPrice {
    pub path: S<String>,
    pub price: S<String>,
}
