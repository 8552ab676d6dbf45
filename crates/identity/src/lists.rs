//! The published lists in use: loaded from the state directory at start,
//! refreshed in the background, swapped in atomically; a failed refresh
//! keeps the previous copy.
//!
//! CONTRACT (owned by the `lists` helper; signatures are fixed, bodies are stubs).

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::ranges::IpPrefix;

/// Where one list comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListSource {
    /// Fetched over HTTP(S).
    Url(String),
    /// Read from a local file.
    File(PathBuf),
}

/// The lists' configuration (from the policy's `[verification]` table).
#[derive(Clone, Debug)]
pub struct ListsConfig {
    /// How often to refresh (default daily).
    pub refresh: Duration,
    /// Timeout of one fetch.
    pub fetch_timeout: Duration,
    /// Where fetched lists are persisted; `None` keeps them in memory only.
    pub state_dir: Option<PathBuf>,
    /// For each token (catalog spelling), the lists that prove it.
    pub agents: Vec<(String, Vec<ListSource>)>,
}

/// What the lists say about one address claiming one token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IpCheck {
    /// No list is configured for the token.
    NoSource,
    /// Lists are configured but none has been loaded yet.
    NotLoaded,
    /// The address is in this list's prefix.
    Match {
        /// The list (URL or path).
        source: Arc<str>,
        /// The prefix that contains the address.
        prefix: IpPrefix,
    },
    /// The address is in none of the token's loaded lists.
    NoMatch,
}

/// One list's state, for `/status` and metrics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListStatus {
    /// URL or path.
    pub source: String,
    /// Number of prefixes in use.
    pub prefixes: usize,
    /// Seconds since the copy in use was fetched (`None`: never loaded).
    pub age_secs: Option<u64>,
    /// The last refresh error, if the last attempt failed.
    pub last_error: Option<String>,
}

/// The lists in use; cheap to clone and to query from any thread.
#[derive(Clone, Debug, Default)]
pub struct Lists {}

impl Lists {
    /// Creates the lists and loads persisted copies from the state directory.
    pub fn new(config: ListsConfig) -> Lists {
        let _ = config;
        Lists {}
    }

    /// What the lists say about `ip` claiming `token`. Lock-free.
    pub fn check(&self, token: &str, ip: IpAddr) -> IpCheck {
        let _ = (token, ip);
        IpCheck::NoSource
    }

    /// Refreshes every list once (fetch, validate, persist, swap).
    pub async fn refresh_all(&self) {}

    /// Refreshes every `refresh` interval until the task is dropped.
    pub async fn run(self) {}

    /// Every list's state.
    pub fn status(&self) -> Vec<ListStatus> {
        Vec::new()
    }
}
