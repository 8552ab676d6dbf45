//! Stands in for the `pingora` facade crate so that the fuzz targets can
//! compile `crates/proxy/src/headers.rs` as it is without building pingora
//! (its TLS, runtime and cache crates) under the sanitizer. The paths are
//! the facade's own re-exports.

/// `pingora::http`.
pub mod http {
    pub use pingora_http::*;
}

pub use pingora_error::{Error, ErrorType, Result};
