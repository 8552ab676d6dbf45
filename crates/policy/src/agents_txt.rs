//! agents.txt (the AGENTS.TXT draft): rendering with the SHA-256 hash line, and the
//! strict verifier a reader applies (any defect restricts the whole site,
//! so the generator must never publish a file that fails it).

use sha2::{Digest, Sha256};

/// One directive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentsRule {
    /// Path, starting with `/`.
    pub path: String,
    /// ALLOW (true) or DISALLOW.
    pub allow: bool,
    /// `key=value` parameters.
    pub params: Vec<(String, String)>,
}

/// Why an agents.txt file is invalid (or would be).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AgentsTxtError {
    /// No hash line before the first directive.
    #[error("missing hash line (the first non-comment line must be `*` and a SHA-256 hex digest)")]
    MissingHash,
    /// The hash line is malformed.
    #[error("line {line}: malformed hash line `{text}` (expected `*` and 64 lowercase hex digits)")]
    BadHashLine {
        /// 1-based line.
        line: usize,
        /// The line.
        text: String,
    },
    /// The hash does not match the directives.
    #[error("hash mismatch: file says {found}, directives hash to {computed}")]
    HashMismatch {
        /// The hash in the file.
        found: String,
        /// The hash computed.
        computed: String,
    },
    /// A malformed directive.
    #[error("line {line}: malformed directive `{text}`: {reason}")]
    BadDirective {
        /// 1-based line.
        line: usize,
        /// The line.
        text: String,
        /// What is wrong.
        reason: String,
    },
}

fn uri_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-._~!$&'()*+,;:@/%".contains(c)
}

/// Checks one directive line; returns the reason it is malformed.
fn check_directive(text: &str) -> Result<(), String> {
    let mut parts = text.split(' ');
    let path = parts.next().unwrap_or("");
    if !path.starts_with('/') {
        return Err("path must start with '/'".into());
    }
    if !path.chars().all(|c| uri_char(c) || c == '?' || c == '=') {
        return Err(format!("path `{path}` has characters outside URI syntax"));
    }
    match parts.next() {
        Some("ALLOW" | "DISALLOW") => {}
        Some(other) => return Err(format!("action must be ALLOW or DISALLOW, found `{other}`")),
        None => return Err("missing action (ALLOW or DISALLOW)".into()),
    }
    for p in parts {
        let Some((k, v)) = p.split_once('=') else {
            return Err(format!("parameter `{p}` is not key=value"));
        };
        if k.is_empty() || v.is_empty() || !k.chars().all(uri_char) || !v.chars().all(uri_char) {
            return Err(format!("parameter `{p}` is not key=value in URI syntax"));
        }
    }
    Ok(())
}

fn directive_hash(directives: &[&str]) -> String {
    hex::encode(Sha256::digest(directives.join("\n").as_bytes()))
}

/// Renders the file: `# key: value` metadata comments, the hash line, one
/// directive per line, a final newline. Errors name the first rule that
/// would make the file fail [`verify`].
pub fn render(meta: &[(&str, &str)], rules: &[AgentsRule]) -> Result<String, AgentsTxtError> {
    let mut directives = Vec::with_capacity(rules.len());
    for (i, r) in rules.iter().enumerate() {
        let mut line = format!("{} {}", r.path, if r.allow { "ALLOW" } else { "DISALLOW" });
        for (k, v) in &r.params {
            line.push_str(&format!(" {k}={v}"));
        }
        check_directive(&line).map_err(|reason| AgentsTxtError::BadDirective {
            line: i + 1,
            text: line.clone(),
            reason,
        })?;
        directives.push(line);
    }
    let refs: Vec<&str> = directives.iter().map(String::as_str).collect();
    let mut out = String::new();
    for (k, v) in meta {
        out.push_str(&format!("# {k}: {v}\n"));
    }
    out.push('*');
    out.push_str(&directive_hash(&refs));
    out.push('\n');
    for d in &directives {
        out.push_str(d);
        out.push('\n');
    }
    verify(&out)?;
    Ok(out)
}

/// The strict verifier: a missing or wrong hash, or any malformed
/// directive, makes the file invalid. Returns the number of directives.
pub fn verify(text: &str) -> Result<usize, AgentsTxtError> {
    let mut hash: Option<String> = None;
    let mut directives: Vec<&str> = Vec::new();
    for (i, raw) in text.split('\n').enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        if hash.is_none() {
            let digest = line.strip_prefix('*').ok_or(AgentsTxtError::MissingHash)?;
            if digest.len() != 64 || !digest.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
                return Err(AgentsTxtError::BadHashLine { line: i + 1, text: line.to_string() });
            }
            hash = Some(digest.to_string());
            continue;
        }
        check_directive(line).map_err(|reason| AgentsTxtError::BadDirective {
            line: i + 1,
            text: line.to_string(),
            reason,
        })?;
        directives.push(line);
    }
    let found = hash.ok_or(AgentsTxtError::MissingHash)?;
    let computed = directive_hash(&directives);
    if found != computed {
        return Err(AgentsTxtError::HashMismatch { found, computed });
    }
    Ok(directives.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(path: &str, allow: bool, params: &[(&str, &str)]) -> AgentsRule {
        AgentsRule {
            path: path.into(),
            allow,
            params: params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        }
    }

    #[test]
    fn render_then_verify() {
        let rules =
            [rule("/status", true, &[]), rule("/dashboard", true, &[("limit", "50")]), rule("/admin", false, &[])];
        let text = render(&[("version", "1.0")], &rules).unwrap();
        let hash = hex::encode(Sha256::digest(b"/status ALLOW\n/dashboard ALLOW limit=50\n/admin DISALLOW"));
        assert_eq!(
            text,
            format!("# version: 1.0\n*{hash}\n/status ALLOW\n/dashboard ALLOW limit=50\n/admin DISALLOW\n")
        );
        assert_eq!(verify(&text), Ok(3));
        assert_eq!(
            verify(&format!("*{hash}\n\n# c\n/status ALLOW\n/dashboard ALLOW limit=50\n/admin DISALLOW")),
            Ok(3)
        );
    }

    #[test]
    fn defects_are_rejected() {
        assert_eq!(verify("/status ALLOW\n"), Err(AgentsTxtError::MissingHash));
        assert_eq!(verify("# only comments\n"), Err(AgentsTxtError::MissingHash));
        assert!(matches!(verify("*abc\n/x ALLOW\n"), Err(AgentsTxtError::BadHashLine { line: 1, .. })));
        let empty = hex::encode(Sha256::digest(b""));
        assert!(matches!(verify(&format!("*{empty}\n/x ALLOW\n")), Err(AgentsTxtError::HashMismatch { .. })));
        assert_eq!(verify(&format!("*{empty}\n")), Ok(0));
        assert!(matches!(verify(&format!("*{empty}\nx ALLOW\n")), Err(AgentsTxtError::BadDirective { line: 2, .. })));
        assert!(matches!(verify(&format!("*{empty}\n/x allow\n")), Err(AgentsTxtError::BadDirective { .. })));
        assert!(matches!(verify(&format!("*{empty}\n/x ALLOW limit\n")), Err(AgentsTxtError::BadDirective { .. })));
        // The seed's own sample carries a placeholder hash and a stray `\`.
        let seed = "# version: 1.0\n*e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 \\\n#sample. may not be accurate.\n/status ALLOW\n/dashboard ALLOW limit=50\n/admin DISALLOW\n";
        assert!(verify(seed).is_err());
        assert!(matches!(render(&[], &[rule("/a b", true, &[])]), Err(AgentsTxtError::BadDirective { .. })));
        assert!(matches!(render(&[], &[rule("/a", true, &[("k", "v w")])]), Err(AgentsTxtError::BadDirective { .. })));
    }
}
