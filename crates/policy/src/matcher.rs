//! Re-exports for callers that name the matching API by its `matcher`
//! path (the proxy, the CLI, fuzz targets, benches and tests). The code
//! lives in [`crate::canonical`] (canonical paths and request targets),
//! [`crate::pattern`] (compiled patterns) and [`crate::ruleset`] (the
//! deciding rule).

pub use crate::canonical::{canonicalize, classify_request_target, normalize_request_target, PathError, RequestTarget};
pub use crate::pattern::{Pattern, PatternError};
pub use crate::ruleset::RuleSet;
