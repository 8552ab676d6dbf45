//! Optional authentication of the admin listener (`server.admin_auth_file`).
//! The file's first line is the secret: clients send it as a bearer token
//! (`Authorization: Bearer <secret>`, RFC 6750 section 2.1), and, when it
//! has the form `user:password`, also as HTTP Basic credentials (RFC 7617),
//! which is what a browser prompts for. Comparisons take the same time
//! whatever the mismatch.

use std::path::Path;

/// The accepted `Authorization` field values.
pub struct AdminAuth {
    bearer: Vec<u8>,
    basic: Option<Vec<u8>>,
}

/// Why the file cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// It cannot be read.
    #[error("cannot read server.admin_auth_file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Its first line is empty or holds characters a field value cannot.
    #[error(
        "server.admin_auth_file {path}: the first line must hold a token or user:password (visible ASCII, no spaces)"
    )]
    Invalid {
        /// The file.
        path: String,
    },
}

impl AdminAuth {
    /// Reads the secret from `path`.
    pub fn from_file(path: &Path) -> Result<AdminAuth, AuthError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| AuthError::Read { path: shown.clone(), source })?;
        AdminAuth::new(text.lines().next().unwrap_or("").trim()).ok_or(AuthError::Invalid { path: shown })
    }

    /// Accepts `secret` (`None` when it is empty or not visible ASCII).
    pub fn new(secret: &str) -> Option<AdminAuth> {
        if secret.is_empty() || !secret.bytes().all(|b| b.is_ascii_graphic()) {
            return None;
        }
        let basic = secret.contains(':').then(|| format!("Basic {}", base64(secret.as_bytes())).into_bytes());
        Some(AdminAuth { bearer: format!("Bearer {secret}").into_bytes(), basic })
    }

    /// Whether an `Authorization` field value is accepted. The scheme name
    /// is case-insensitive (RFC 9110 section 11.1).
    pub fn accepts(&self, value: Option<&[u8]>) -> bool {
        let Some(value) = value else { return false };
        let bearer = constant_time_eq(value, &self.bearer);
        let basic = self.basic.as_ref().is_some_and(|b| constant_time_eq(value, b));
        bearer | basic
    }

    /// The `WWW-Authenticate` challenge of a 401.
    pub fn challenge(&self) -> &'static str {
        if self.basic.is_some() {
            "Basic realm=\"crawlgate admin\", Bearer realm=\"crawlgate admin\""
        } else {
            "Bearer realm=\"crawlgate admin\""
        }
    }
}

/// Equality whose time depends only on the lengths: every byte pair is
/// compared. The scheme word is compared case-insensitively.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let scheme = b.iter().position(|c| *c == b' ').unwrap_or(0);
    let mut diff = u8::from(a.len() != b.len());
    for (i, (x, y)) in a.iter().zip(b.iter()).enumerate() {
        let (x, y) = if i < scheme { (x.to_ascii_lowercase(), y.to_ascii_lowercase()) } else { (*x, *y) };
        diff |= x ^ y;
    }
    diff == 0
}

/// The `Authorization` field value a client sends for a secret read from
/// an auth file: Basic for `user:password`, else Bearer.
pub fn authorization(secret: &str) -> String {
    if secret.contains(':') {
        format!("Basic {}", base64(secret.as_bytes()))
    } else {
        format!("Bearer {secret}")
    }
}

/// Standard base64 with padding (RFC 4648 section 4), as RFC 7617
/// section 2 encodes Basic credentials.
fn base64(input: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(input)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_vectors() {
        // RFC 4648 section 10.
        for (i, o) in
            [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE=")]
        {
            assert_eq!(base64(i.as_bytes()), o);
        }
        // RFC 7617 section 2.
        assert_eq!(base64(b"Aladdin:open sesame"), "QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
    }

    #[test]
    fn bearer_and_basic() {
        let token = AdminAuth::new("s3cret").unwrap();
        assert!(token.accepts(Some(b"Bearer s3cret")));
        assert!(token.accepts(Some(b"bearer s3cret")));
        assert!(!token.accepts(Some(b"Bearer S3cret")));
        assert!(!token.accepts(Some(b"Bearer s3cre")));
        assert!(!token.accepts(Some(b"Bearer s3crett")));
        assert!(!token.accepts(Some(b"Basic czNjcmV0")));
        assert!(!token.accepts(None));
        assert_eq!(token.challenge(), "Bearer realm=\"crawlgate admin\"");
        let user = AdminAuth::new("admin:pw").unwrap();
        assert!(user.accepts(Some(b"Basic YWRtaW46cHc=")));
        assert!(user.accepts(Some(b"Bearer admin:pw")));
        assert!(!user.accepts(Some(b"Basic YWRtaW46cHd=")));
        assert!(AdminAuth::new("").is_none());
        assert!(AdminAuth::new("with space").is_none());
    }
}
