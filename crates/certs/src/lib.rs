//! crawlgate-certs: TLS certificates that reload without a restart. The
//! certificate chain and key live behind one `ArcSwap`; the proxy sets the
//! current pair on each handshake, so a renewed certificate (certbot, a
//! Kubernetes Secret) applies to new handshakes while open connections keep
//! theirs. A pair that does not load (unreadable, not PEM, key not matching
//! the certificate) keeps the running one, as a bad policy does.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use arc_swap::ArcSwap;
use chrono::NaiveDateTime;
use openssl::hash::MessageDigest;
use openssl::pkey::{PKey, Private};
use openssl::x509::X509;
use sha2::{Digest, Sha256};

/// What a reload of the pair did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reloaded {
    /// The files hold the pair in use.
    Unchanged,
    /// A new pair is in use.
    Replaced,
    /// The files did not load; the running pair stays.
    Failed,
}

/// A loaded certificate chain (leaf first) and its private key.
pub struct CertPair {
    /// The chain, leaf first.
    pub chain: Vec<X509>,
    /// The leaf's private key.
    pub key: PKey<Private>,
    /// SHA-256 of the two files' bytes, to tell an unchanged pair.
    source_sha256: String,
    /// What `/status` shows about the leaf.
    pub info: CertInfo,
}

/// The leaf certificate as `/status` reports it.
#[derive(Clone, Debug)]
pub struct CertInfo {
    /// Serial number, upper-case hex (as `openssl x509 -serial` prints it).
    pub serial: String,
    /// SHA-256 fingerprint of the DER certificate, lower-case hex.
    pub sha256: String,
    /// The `notAfter` time as OpenSSL prints it.
    pub not_after: String,
    /// `notAfter` in Unix seconds.
    pub not_after_unix: i64,
    /// When this pair was loaded.
    pub loaded_at: SystemTime,
}

/// Reads the certificate chain at `cert` and the key at `key` (both PEM)
/// and checks that the key belongs to the leaf certificate. The error
/// names the file and the reason.
pub fn load_pair(cert: &Path, key: &Path) -> Result<CertPair, String> {
    let cert_pem = std::fs::read(cert).map_err(|e| format!("cannot read TLS certificate {}: {e}", cert.display()))?;
    let key_pem = std::fs::read(key).map_err(|e| format!("cannot read TLS key {}: {e}", key.display()))?;
    let chain =
        X509::stack_from_pem(&cert_pem).map_err(|e| format!("TLS certificate {} is not PEM: {e}", cert.display()))?;
    let Some(leaf) = chain.first() else {
        return Err(format!("TLS certificate {} holds no PEM certificate", cert.display()));
    };
    let key_parsed =
        PKey::private_key_from_pem(&key_pem).map_err(|e| format!("TLS key {} is not a PEM key: {e}", key.display()))?;
    let matches = leaf.public_key().map(|p| p.public_eq(&key_parsed)).unwrap_or(false);
    if !matches {
        return Err(format!("TLS key {} does not belong to the certificate {}", key.display(), cert.display()));
    }
    let serial = leaf.serial_number().to_bn().and_then(|b| b.to_hex_str().map(|s| s.to_string())).unwrap_or_default();
    let sha256 = leaf.digest(MessageDigest::sha256()).map(hex::encode).unwrap_or_default();
    let not_after = leaf.not_after().to_string();
    let not_after_unix = openssl_time_unix(&not_after).unwrap_or(0);
    let info = CertInfo { serial, sha256, not_after, not_after_unix, loaded_at: SystemTime::now() };
    let mut hasher = Sha256::new();
    hasher.update(&cert_pem);
    hasher.update(&key_pem);
    let source_sha256 = hex::encode(hasher.finalize());
    Ok(CertPair { chain, key: key_parsed, source_sha256, info })
}

/// Unix seconds of a time as OpenSSL prints an `ASN1_TIME`
/// (`Nov 26 16:50:00 2026 GMT`, with a fraction of a second when the
/// certificate has one); `None` when it does not read as one.
fn openssl_time_unix(s: &str) -> Option<i64> {
    NaiveDateTime::parse_from_str(s, "%b %e %H:%M:%S%.f %Y GMT").ok().map(|t| t.and_utc().timestamp())
}

/// What `/status` reports about certificate reloads.
#[derive(Default, Clone)]
pub struct TlsStatus {
    /// The last failed reload's error, cleared by the next good (or
    /// unchanged) one.
    pub last_error: Option<String>,
    /// When it failed.
    pub last_error_at: Option<SystemTime>,
}

/// The certificate in use and where it comes from.
pub struct CertStore {
    cert_path: PathBuf,
    key_path: PathBuf,
    current: ArcSwap<CertPair>,
    status: Mutex<TlsStatus>,
}

impl CertStore {
    /// Loads the pair at start; an error here stops the start.
    pub fn open(cert: &str, key: &str) -> Result<Arc<CertStore>, String> {
        let (cert_path, key_path) = (PathBuf::from(cert), PathBuf::from(key));
        let pair = load_pair(&cert_path, &key_path)?;
        Ok(Arc::new(CertStore {
            cert_path,
            key_path,
            current: ArcSwap::from_pointee(pair),
            status: Mutex::new(TlsStatus::default()),
        }))
    }

    /// Reloads the pair from its files (`trigger` names what asked, in the
    /// log line): a pair that fails to load leaves the running one in
    /// place. Blocking (file reads).
    pub fn reload(&self, trigger: &str) -> Reloaded {
        let outcome = match load_pair(&self.cert_path, &self.key_path) {
            Ok(pair) if pair.source_sha256 == self.current.load().source_sha256 => {
                tracing::info!(trigger, outcome = "unchanged", "TLS certificate files unchanged");
                Reloaded::Unchanged
            }
            Ok(pair) => {
                tracing::info!(
                    trigger,
                    outcome = "success",
                    serial = %pair.info.serial,
                    not_after = %pair.info.not_after,
                    "TLS certificate reloaded; new handshakes use it"
                );
                self.current.store(Arc::new(pair));
                Reloaded::Replaced
            }
            Err(error) => {
                tracing::error!(
                    trigger,
                    outcome = "failure",
                    error = %error,
                    "TLS certificate reload failed; the running certificate stays in use"
                );
                self.with_status(|s| {
                    s.last_error = Some(error);
                    s.last_error_at = Some(SystemTime::now());
                });
                Reloaded::Failed
            }
        };
        if outcome != Reloaded::Failed {
            self.with_status(|s| *s = TlsStatus::default());
        }
        outcome
    }

    /// The pair in use.
    pub fn current(&self) -> Arc<CertPair> {
        self.current.load_full()
    }

    /// The certificate and key files, watched for a reload.
    pub fn files(&self) -> [&Path; 2] {
        [&self.cert_path, &self.key_path]
    }

    /// The `/status` entry: the files, the certificate in use and the last
    /// reload error.
    pub fn status_json(&self) -> serde_json::Value {
        let pair = self.current.load();
        let status = self.status.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        let secs = |t: SystemTime| t.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        serde_json::json!({
            "cert_file": self.cert_path.display().to_string(),
            "key_file": self.key_path.display().to_string(),
            "serial": pair.info.serial,
            "sha256": pair.info.sha256,
            "not_after": pair.info.not_after,
            "not_after_unix": pair.info.not_after_unix,
            "loaded_at": secs(pair.info.loaded_at),
            "last_error": status.last_error,
            "last_error_at": status.last_error_at.map(secs),
        })
    }

    /// The leaf's `notAfter` in Unix seconds.
    pub fn not_after_unix(&self) -> i64 {
        self.current.load().info.not_after_unix
    }

    fn with_status(&self, f: impl FnOnce(&mut TlsStatus)) {
        f(&mut self.status.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openssl_times_read_as_unix_seconds() {
        assert_eq!(openssl_time_unix("Jan  1 00:00:00 1970 GMT"), Some(0));
        assert_eq!(openssl_time_unix("Nov 26 16:50:00 2026 GMT"), Some(1_795_711_800));
        assert_eq!(openssl_time_unix("Feb 29 12:00:00 2028 GMT"), Some(1_835_438_400));
        assert_eq!(openssl_time_unix("Nov 26 16:50:00 2026"), None);
        assert_eq!(openssl_time_unix("Foo 26 16:50:00 2026 GMT"), None);
    }

    #[test]
    fn openssl_time_with_a_fraction_of_a_second() {
        assert_eq!(openssl_time_unix("Nov 26 16:50:00.25 2026 GMT"), Some(1_795_711_800));
    }

    #[test]
    fn a_missing_file_names_it() {
        let err = load_pair(Path::new("/nonexistent/c.pem"), Path::new("/nonexistent/k.pem")).err();
        assert_eq!(
            err.as_deref().map(|e| e.split(':').next().unwrap_or_default()),
            Some("cannot read TLS certificate /nonexistent/c.pem")
        );
    }
}
