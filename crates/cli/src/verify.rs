//! `crawlgate verify` and the verification part of `crawlgate explain`: what
//! each method says about an address claiming a token, from the lists in
//! the state directory (fetched when missing, unless offline) and the
//! configured resolver.

use std::net::IpAddr;
use std::path::Path;
use std::process::ExitCode;

use crawlgate_identity::{combine, Finding, Verdict, Verifier, VerifierConfig};
use crawlgate_policy::verification::{Method, VerifyMode};
use crawlgate_policy::{Claim, Policy};

use crate::config::load_or_report;

/// One token's findings and verdict.
pub struct Report {
    /// The token (policy spelling).
    pub agent: String,
    /// Each applicable method's finding.
    pub findings: Vec<(Method, Finding)>,
    /// The combined outcome.
    pub verdict: Verdict,
}

/// How a finding reads: `verified`, `spoofed` or `unverified`, and its evidence.
pub fn finding_text(f: &Finding) -> String {
    match f {
        Finding::Proves(e) => format!("verified ({e})"),
        Finding::Disproves(e) => format!("spoofed ({e})"),
        Finding::Unknown(e) => format!("unverified ({e})"),
    }
}

/// Checks `claims` from `ip`: offline (the lists in use, no DNS) or live.
pub fn check(policy: &Policy, claims: &[Claim<'_>], ip: IpAddr, live: bool) -> anyhow::Result<Vec<Report>> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let _guard = rt.enter();
    let verifier =
        Verifier::new(VerifierConfig::for_policy_tokens_and(policy, claims)).map_err(|e| anyhow::anyhow!("{e}"))?;
    if live && verifier.lists().status().iter().any(|s| s.age_secs.is_none()) {
        rt.block_on(verifier.lists().refresh_all());
    }
    let mut out = Vec::new();
    for c in claims {
        let findings = if live {
            rt.block_on(verifier.verify_each(c.agent, c.verify, ip))
        } else {
            verifier.verify_each_offline(c.agent, c.verify, ip)
        };
        let verdict = if c.verify == VerifyMode::None { Verdict::default() } else { combine(&findings) };
        out.push(Report { agent: c.agent.to_string(), findings, verdict });
    }
    Ok(out)
}

/// `crawlgate verify IP [--user-agent UA]`: the outcome and evidence per
/// method, live, for the token the User-Agent names or every verified token.
pub fn verify(config: &Path, ip: &str, user_agent: Option<&str>) -> anyhow::Result<ExitCode> {
    let loaded = match load_or_report(config)? {
        Ok(l) => l,
        Err(code) => return Ok(code),
    };
    let policy = &loaded.policy;
    let ip: IpAddr = ip.parse().map_err(|_| anyhow::anyhow!("`{ip}` is not an IP address"))?;
    if !policy.settings().verification.enabled {
        outln!("verification is off: the policy has no [verification] table");
        return Ok(ExitCode::SUCCESS);
    }
    let claims: Vec<Claim<'_>> = match user_agent {
        Some(ua) => match policy.claim(ua) {
            Some(c) => vec![c],
            None => {
                outln!("none (no policy token in the User-Agent): nothing to verify");
                return Ok(ExitCode::SUCCESS);
            }
        },
        None => {
            policy.tokens().filter_map(|t| policy.claim_token(t)).filter(|c| c.verify != VerifyMode::None).collect()
        }
    };
    for r in check(policy, &claims, ip, true)? {
        outln!("{} from {ip}: {}", r.agent, r.verdict.verification);
        if r.findings.is_empty() {
            outln!("  no method has a source for {}", r.agent);
        }
        for (m, f) in &r.findings {
            outln!("  {:<9} {}", format!("{m}:"), finding_text(f));
        }
    }
    Ok(ExitCode::SUCCESS)
}
