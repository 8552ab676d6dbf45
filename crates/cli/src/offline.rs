//! `crawlgate check`, `render` and `explain`: the offline questions about a
//! policy, answered from the policy file (and the origin's robots.txt when
//! `--origin` or `--origin-file` gives it), without a proxy.

use std::path::Path;
use std::process::ExitCode;

use crawlgate_policy::robots_tag::meta_element;
use crawlgate_policy::robotstxt::path_of;
use crawlgate_policy::verification::Verification;
use crawlgate_policy::{load, Diagnostic};

use crate::config::{load_or_report, read_policy_file};
use crate::origin::OriginSource;

/// `crawlgate check --json`: the diagnostics as one JSON object on stdout,
/// `{"file", "errors", "warnings", "acknowledged"}`, each diagnostic
/// `{"line", "col", "id", "message"}` (`id` is the warning's stable id,
/// null for an error); the exit codes are those of [`check`].
fn check_json(config: &Path) -> anyhow::Result<ExitCode> {
    let file = config.display().to_string();
    let source = match read_policy_file(config) {
        Ok(s) => s,
        Err(e) => {
            // Still JSON, so that a tool reading it needs no second parser:
            // one error without a position (line and column 0), exit 2.
            let out = serde_json::json!({
                "file": file,
                "errors": [{"line": 0, "col": 0, "id": null, "message": format!("{e:#}")}],
                "warnings": [],
                "acknowledged": 0,
            });
            outln!("{}", serde_json::to_string_pretty(&out)?);
            return Ok(ExitCode::from(2));
        }
    };
    let (errors, warnings, acknowledged) = match load(&source, &file) {
        Ok(l) => (crate::config::host_errors(&l.policy, &source, &file), l.warnings, l.acknowledged),
        Err(e) => (e.0, Vec::new(), 0),
    };
    let list = |ds: &[Diagnostic]| {
        ds.iter()
            .map(|d| {
                serde_json::json!({
                    "line": d.line,
                    "col": d.col,
                    "id": d.warning.map(|w| w.id()),
                    "message": d.message,
                })
            })
            .collect::<Vec<_>>()
    };
    let out = serde_json::json!({
        "file": file,
        "errors": list(&errors),
        "warnings": list(&warnings),
        "acknowledged": acknowledged,
    });
    outln!("{}", serde_json::to_string_pretty(&out)?);
    Ok(if errors.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// `crawlgate check`: exit 0 and a summary, or exit 1 and every error on
/// stdout (`FILE:LINE:COL: message`); warnings go to stderr, those the
/// policy acknowledges (`allow_warnings`) only counted. A file that cannot
/// be read exits 2.
pub fn check(config: &Path, json: bool, origin: Option<&str>) -> anyhow::Result<ExitCode> {
    if json {
        return check_json(config);
    }
    // Errors and warnings both on stdout (`check`'s output is its
    // diagnostics): the summary line, then the warnings it counts.
    let loaded = match crate::config::load_or_report_to(config, false)? {
        Ok(l) => l,
        Err(code) => return Ok(code),
    };
    // What the policy names on this host (`check` and `run` only: previews
    // of a production policy work on any machine).
    let errors = crate::config::host_errors(&loaded.policy, &read_policy_file(config)?, &config.display().to_string());
    if !errors.is_empty() {
        for e in &errors {
            outln!("{e}");
        }
        eprintln!("{}: {} error{}", config.display(), errors.len(), plural(errors.len()));
        return Ok(ExitCode::from(1));
    }
    let p = &loaded.policy;
    let s = p.stats();
    let acknowledged = match loaded.acknowledged {
        0 => String::new(),
        n => format!(", {n} acknowledged"),
    };
    // Under `origin = "merge"` the policy's groups are `policy groups`;
    // `--origin` adds the origin's (`2 policy groups + 1 origin group`, as
    // /status and the page say it).
    let groups = match p.settings().origin_robots.mode {
        crawlgate_policy::OriginRobotsMode::Merge => format!("{} policy group{}", s.groups, plural(s.groups)),
        _ => s.groups_text(false),
    };
    outln!(
        "OK {}: {groups}, {} rule{}, {} robots_tag{}, agents.txt {}, {} warning{}{} (sha256 {})",
        config.display(),
        s.rules,
        plural(s.rules),
        s.robots_tags,
        plural(s.robots_tags),
        if p.agents_txt().is_some() {
            format!("enabled ({} directive{})", s.agents_rules, plural(s.agents_rules))
        } else {
            "disabled".into()
        },
        loaded.warnings.len(),
        plural(loaded.warnings.len()),
        acknowledged,
        &p.source_sha256()[..12],
    );
    // Which methods can actually prove each verified group's crawlers: a
    // group with reverse DNS alone cannot tell a silent PTR from a spoofer.
    for (group, methods, on_spoofed, on_unverified) in p.group_verification() {
        let methods: Vec<&str> = methods.iter().map(|m| m.as_str()).collect();
        let methods = if methods.is_empty() { "none (no published source)".to_owned() } else { methods.join(", ") };
        outln!(
            "  verify {group}: {methods}; on_spoofed = {}, on_unverified = {}",
            on_spoofed.as_str(),
            on_unverified.as_str()
        );
    }
    for w in &loaded.warnings {
        outln!("{w}");
    }
    if let Some(origin) = origin {
        return crate::origin::check_origin(p, origin);
    }
    Ok(ExitCode::SUCCESS)
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// `crawlgate render robots.txt|agents.txt`: the exact bytes served, the
/// origin's robots.txt merged in when `origin` gives it.
pub fn render(what: &str, config: &Path, origin: Option<OriginSource<'_>>) -> anyhow::Result<ExitCode> {
    let loaded = match load_or_report(config)? {
        Ok(l) => l,
        Err(code) => return Ok(code),
    };
    let policy = if what == "robots.txt" { crate::origin::as_served(loaded.policy, origin)? } else { loaded.policy };
    let text = match what {
        "robots.txt" => policy.robots_txt(),
        "tdmrep.json" => match policy.tdmrep_json() {
            Some(t) => t,
            None => {
                eprintln!("{}: tdmrep.json is not published (no [tdmrep] table)", config.display());
                return Ok(ExitCode::from(1));
            }
        },
        _ => match policy.agents_txt() {
            Some(t) => t,
            None => {
                eprintln!("{}: agents.txt is disabled (no [agents_txt] table, or enabled = false)", config.display());
                return Ok(ExitCode::from(1));
            }
        },
    };
    out!("{text}");
    Ok(ExitCode::SUCCESS)
}

/// `crawlgate explain`: per URL, the decision and the headers and metas.
pub fn explain(
    config: &Path,
    json: bool,
    user_agent: &str,
    urls: &[String],
    client_ip: Option<&str>,
    live: bool,
    origin: Option<OriginSource<'_>>,
) -> anyhow::Result<ExitCode> {
    let loaded = match load_or_report(config)? {
        Ok(l) => l,
        Err(code) => return Ok(code),
    };
    let policy = &crate::origin::as_served(loaded.policy, origin)?;
    let verified = match client_ip {
        None => None,
        Some(ip) => {
            let ip: std::net::IpAddr = ip.parse().map_err(|_| anyhow::anyhow!("`{ip}` is not an IP address"))?;
            // The policy's claim decides; without one that verified
            // anything, a catalog crawler the policy does not name is
            // verified for observation exactly as the proxy does
            // (`Policy::observation`), never decided on.
            let decided = match policy.claim(user_agent) {
                Some(c) => crate::verify::check(policy, &[c], ip, live)?.pop().map(|r| (c, r)),
                None => None,
            };
            let verification = decided.as_ref().map_or(Verification::NotApplicable, |(_, r)| r.verdict.verification);
            let observed = match policy.observation(user_agent, verification) {
                Some((_, Some(c))) => crate::verify::check(policy, &[c], ip, live)?.pop().map(|r| (c, r)),
                _ => None,
            };
            let observed_only = decided.is_none() && observed.is_some();
            let report = decided.or(observed).map(|(c, r)| {
                let methods = method_lines(policy, &c, &r, live);
                (r, methods)
            });
            Some((ip, observed_only, report))
        }
    };
    let mut out = Vec::new();
    for url in urls {
        let raw_path = path_of(url);
        let path = match crawlgate_policy::canonical::normalize_request_target(&raw_path) {
            Ok(p) => p.into_owned(),
            Err(e) => anyhow::bail!("{url}: {e}"),
        };
        let mut d = policy.decide(user_agent, &path);
        if let Some((_, false, Some((r, _)))) = &verified {
            let identity = crawlgate_policy::Identity {
                verification: r.verdict.verification,
                proven: None,
                replayed: false,
                unparsable: None,
            };
            let ua = crawlgate_policy::UserAgentField::One(user_agent);
            match policy.route_with(false, path.as_bytes(), ua, identity) {
                crawlgate_policy::Route::Serve { decision, .. }
                | crawlgate_policy::Route::NotFound { decision, .. }
                | crawlgate_policy::Route::Block { decision, .. }
                | crawlgate_policy::Route::Replayed { decision, .. }
                | crawlgate_policy::Route::Forward { decision, .. } => d = decision,
                crawlgate_policy::Route::BadRequest(_) => {}
            }
        }
        let c = policy.url_controls(&path);
        // A catalog crawler the policy does not name is still named, as
        // the proxy's access line names it: observed, never enforced on.
        let observed = match d.agent {
            None => crawlgate_policy::identify::catalog_crawler(user_agent),
            Some(_) => None,
        };
        let catalog = d.agent.or(observed).and_then(crawlgate_policy::catalog::lookup);
        let money = crate::explain_money::of(policy, &config.display().to_string(), &d, &path);
        let action = match d.action() {
            crawlgate_policy::Action::Pass if money.as_ref().is_some_and(|m| m["price"].is_string()) => "charge",
            crawlgate_policy::Action::Pass => "pass",
            crawlgate_policy::Action::LogViolation => "log violation",
            crawlgate_policy::Action::Block => "block",
        };
        let mut entry = serde_json::json!({
            "url": url,
            "path": path,
            "agent": d.agent,
            "observed": observed,
            "catalog": catalog.map(|e| serde_json::json!({"token": e.token, "operator": e.operator, "categories": e.categories})),
            "group": d.group.map(|g| serde_json::json!({"name": g.name, "line": g.line, "origin": g.origin})),
            "class": d.group.zip(d.agent).and_then(|(g, a)| policy.class_reason(g.index, a)),
            "rule": d.rule.map(|r| serde_json::json!({"pattern": r.pattern, "allow": r.allow, "line": r.line})),
            "allowed": d.allowed,
            "enforce": d.enforce.as_str(),
            "action": action,
            "block_status": (d.action() == crawlgate_policy::Action::Block).then_some(d.block_status),
            "reason": d.block_reason().map(crawlgate_policy::BlockReason::as_str),
            "violation": d.violation(),
            "headers": {
                "robots-tag": c.robots_tag,
                "x-robots-tag": c.x_robots_tag,
                "content-usage": c.content_usage,
                "tdm-reservation": c.tdm_reservation,
                "tdm-policy": c.tdm_policy.as_deref(),
            },
            "robots.txt": {
                "content-signal": policy.content_signal(),
            },
            "html": c.html.as_ref().map(|h| serde_json::json!({
                "mode": h.mode.as_str(),
                "meta": h.metas.iter().map(|(n, v)| meta_element(n, v)).collect::<Vec<_>>(),
                "head": h.head.iter().map(|e| e.html.as_str()).collect::<Vec<_>>(),
            })),
        });
        // Only with a `[markdown]` table: without one nothing is converted
        // and the line would be noise.
        if let Some(md) = policy.settings().markdown.as_ref() {
            let (converted, why) = crawlgate_policy::markdown::explain(Some(md), &path, d.agent, &c);
            entry["markdown"] = serde_json::json!({"converted": converted, "why": why});
        }
        // A block is the proxy's own 403: none of the page's headers or
        // HTML changes.
        if d.action() == crawlgate_policy::Action::Block {
            entry["headers"] = serde_json::json!({});
            entry["html"] = serde_json::Value::Null;
            if entry["markdown"].is_object() {
                entry["markdown"] = serde_json::json!({"converted": false, "why": "the request is blocked"});
            }
        }
        // Only the policy's own claim keys a limit by identity; an
        // observed-only catalog crawler is limited as `*` is.
        let client = verified.as_ref().map(|(ip, observed_only, r)| {
            let v = match r {
                Some((r, _)) if !*observed_only => r.verdict.verification,
                _ => Verification::NotApplicable,
            };
            (*ip, v)
        });
        if let Some(rate) = rate_of(policy, user_agent, url, &path, client) {
            entry["rate"] = rate;
        }
        if let Some(money) = money {
            entry["charge"] = money;
        }
        if let Some(sig) = signature_needs(policy, user_agent, &path) {
            entry["signature"] = sig;
        }
        if let Some((ip, observed_only, report)) = &verified {
            entry["client_ip"] = ip.to_string().into();
            entry["verification"] = match report {
                None => serde_json::json!({"outcome": "none", "methods": []}),
                Some((r, methods)) => serde_json::json!({
                    "outcome": r.verdict.verification.to_string(),
                    "evidence": r.verdict.evidence.to_string(),
                    "on_failure": if *observed_only { None } else { d.on_failure.map(|f| f.as_str()) },
                    "observed_only": observed_only,
                    "methods": methods,
                }),
            };
        }
        out.push(entry);
    }
    if json {
        outln!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(ExitCode::SUCCESS);
    }
    let s = |v: &serde_json::Value| v.as_str().map(str::to_string).unwrap_or_else(|| "-".into());
    // What is the same for every URL (the agent, its verification and
    // group), once; then one line per URL, with the headers of the
    // outcomes that carry them.
    if let Some(o) = out.first() {
        explain_header(o, &s);
    }
    for o in &out {
        explain_url(o, &s);
    }
    Ok(ExitCode::SUCCESS)
}

/// The rate limit a request for `path` is counted against and its key
/// (`Policy::limit`), as the proxy would count it; `None` when nothing
/// limits it. Without `--client-ip` the key's network reads `<client>`.
fn rate_of(
    policy: &crawlgate_policy::Policy,
    user_agent: &str,
    url: &str,
    path: &str,
    client: Option<(std::net::IpAddr, Verification)>,
) -> Option<serde_json::Value> {
    let verification = client.map_or(Verification::NotApplicable, |(_, v)| v);
    let identity = crawlgate_policy::Identity { verification, proven: None, replayed: false, unparsable: None };
    let ua = crawlgate_policy::UserAgentField::One(user_agent);
    let route = policy.route_with(false, path.as_bytes(), ua, identity);
    let ip = client.map_or(std::net::IpAddr::from([0, 0, 0, 0]), |(ip, _)| ip);
    let host = url.split_once("://").and_then(|(_, rest)| rest.split(['/', '?']).next());
    let limit = policy.limit(&route, ip, host)?;
    let mut key = limit.key.to_string();
    if client.is_none() {
        key = key.replace("net:0.0.0.0/", "net:<client>/");
    }
    Some(serde_json::json!({"limit": limit.limit.to_string(), "group": limit.group.name, "key": key}))
}

/// What Web Bot Auth asks of a request claiming the User-Agent's token on
/// `path`, when its group can be proven by a signature: the outcome it
/// needs, what an unverified claim gets (the challenge's
/// `Accept-Signature`, or `on_unverified`) and what a replayed signature
/// gets. `None` when signatures prove nothing for it.
fn signature_needs(policy: &crawlgate_policy::Policy, user_agent: &str, path: &str) -> Option<serde_json::Value> {
    use crawlgate_policy::verification::{Method, Verification};
    use crawlgate_policy::{Identity, Route, UserAgentField};
    let v = &policy.settings().verification;
    let claim = policy.claim(user_agent)?;
    if !v.enabled || !claim.verify.allows(Method::Signature) {
        return None;
    }
    let route = |identity| policy.route_with(false, path.as_bytes(), UserAgentField::One(user_agent), identity);
    let unverified =
        route(Identity { verification: Verification::Unverified, proven: None, replayed: false, unparsable: None });
    let (challenge, on_unverified) = match &unverified {
        Route::Block { decision, .. } | Route::Forward { decision, .. } => {
            (policy.challenge(decision), decision.on_failure.map(|f| f.as_str()))
        }
        _ => (None, None),
    };
    if challenge.is_none() && !v.methods_for(std::iter::once(claim.agent), claim.verify).contains(&Method::Signature) {
        return None;
    }
    let replay = match route(Identity {
        verification: Verification::Unverified,
        proven: None,
        replayed: true,
        unparsable: None,
    }) {
        Route::Replayed { .. } => "429 Too Many Requests (reason=replayed, signature=invalid)",
        _ => "served (this file is never refused)",
    };
    Some(serde_json::json!({
        "needs": "verified",
        "challenge": challenge,
        "on_unverified": on_unverified,
        "replay": replay,
    }))
}

/// The block `explain` prints once: agent, client and verification, group
/// and enforcement, and the robots.txt Content-Signal line.
fn explain_header(o: &serde_json::Value, s: &impl Fn(&serde_json::Value) -> String) {
    let catalog = |c: &serde_json::Value| {
        format!(
            "catalog: {}, {}",
            s(&c["operator"]),
            c["categories"].as_array().map(|v| v.iter().map(s).collect::<Vec<_>>().join(", ")).unwrap_or_default()
        )
    };
    let agent = match (&o["agent"], &o["observed"], &o["catalog"]) {
        (serde_json::Value::Null, serde_json::Value::Null, _) => "none (no policy token in the User-Agent)".to_string(),
        (serde_json::Value::Null, seen, c) => {
            format!("{} ({}; not named by the policy: observed only)", s(seen), catalog(c))
        }
        (a, _, serde_json::Value::Null) => s(a),
        (a, _, c) => format!("{} ({})", s(a), catalog(c)),
    };
    outln!("agent:    {agent}");
    if let Some(ip) = o["client_ip"].as_str() {
        let v = &o["verification"];
        let then = match v["on_failure"].as_str() {
            Some(f) => format!(" -> on failure: {f}"),
            None if v["observed_only"] == true => " (observed only: never decided on)".to_string(),
            None => String::new(),
        };
        outln!("client:   {ip}");
        outln!("verify:   {}{then}", s(&v["outcome"]));
        for m in v["methods"].as_array().into_iter().flatten() {
            outln!("  {:<9} {}", format!("{}:", s(&m["method"])), s(&m["finding"]));
        }
    }
    if let Some(sig) = o["signature"].as_object() {
        let otherwise = match sig["challenge"].as_str() {
            Some(a) => format!("otherwise a challenge: 403 with Accept-Signature: {a}"),
            None => format!("otherwise on_unverified = {}", s(&sig["on_unverified"])),
        };
        outln!("signature: needs {} to prove the claim; {otherwise}", s(&sig["needs"]));
        outln!("replay:   {}", s(&sig["replay"]));
    }
    match &o["group"] {
        serde_json::Value::Null => outln!("group:    none (no group applies: everything allowed)"),
        g if g["origin"] == true => {
            outln!("group:    {} (the origin's robots.txt, line {})", s(&g["name"]), g["line"]);
        }
        g => outln!("group:    {} (line {})", s(&g["name"]), g["line"]),
    }
    if let Some(why) = o["class"].as_str() {
        outln!("class:    {why}");
    }
    outln!("enforce:  {}", s(&o["enforce"]));
    if let Some(v) = o["robots.txt"]["content-signal"].as_str() {
        outln!("robots:   Content-Signal: {v}");
    }
    outln!();
}

/// One URL: `URL: verdict (rule) -> action`, then the headers and HTML
/// changes its response carries (none for a block: the 403 is the
/// proxy's, not the page).
fn explain_url(o: &serde_json::Value, s: &impl Fn(&serde_json::Value) -> String) {
    let verdict = if o["allowed"] == true { "allowed" } else { "disallowed" };
    let rule = match &o["rule"] {
        serde_json::Value::Null => "no rule matched".to_string(),
        r => format!(
            "{}: {} at line {}",
            if r["allow"] == true { "Allow" } else { "Disallow" },
            s(&r["pattern"]),
            r["line"]
        ),
    };
    let status = o["block_status"].as_u64().map(|c| format!(" ({c})")).unwrap_or_default();
    outln!("{}: {verdict} ({rule}) -> {}{status}", s(&o["url"]), s(&o["action"]));
    if let Some(reason) = o["reason"].as_str() {
        let note = if o["violation"] == true { "" } else { " (not a robots.txt violation)" };
        outln!("  reason:   {reason}{note}");
    }
    if o["charge"].is_object() {
        crate::explain_money::print(&o["charge"]);
    }
    if let Some(r) = o["rate"].as_object() {
        outln!("  rate:     {} (group {}), key {}", s(&r["limit"]), s(&r["group"]), s(&r["key"]));
    }
    if let Some(v) = o["headers"]["robots-tag"].as_str() {
        outln!("  header:   Robots-Tag: {v}");
    }
    for v in o["headers"]["x-robots-tag"].as_array().into_iter().flatten() {
        outln!("  header:   X-Robots-Tag: {}", s(v));
    }
    if let Some(v) = o["headers"]["content-usage"].as_str() {
        outln!("  header:   Content-Usage: {v}");
    }
    if let Some(v) = o["headers"]["tdm-reservation"].as_u64() {
        outln!("  header:   tdm-reservation: {v}");
    }
    if let Some(v) = o["headers"]["tdm-policy"].as_str() {
        outln!("  header:   tdm-policy: {v}");
    }
    if let Some(h) = o["html"].as_object() {
        for m in h["meta"].as_array().into_iter().chain(h["head"].as_array()).flatten() {
            outln!("  html:     {} {}", s(&h["mode"]), s(m));
        }
    }
    if o["markdown"].is_object() {
        let yes = if o["markdown"]["converted"] == true { "converted" } else { "not converted" };
        outln!("  markdown: {yes} ({})", s(&o["markdown"]["why"]));
    }
}

/// Each verification method of `claim` and what it found, as `explain`
/// lists them. Offline, a method that could not run says so instead of
/// reading as a finding: reverse DNS needs a lookup (`--live` makes it),
/// and an IP list without a cached copy needs a fetch.
fn method_lines(
    policy: &crawlgate_policy::Policy,
    claim: &crawlgate_policy::Claim<'_>,
    report: &crate::verify::Report,
    live: bool,
) -> Vec<serde_json::Value> {
    use crawlgate_identity::{Evidence, Finding};
    use crawlgate_policy::verification::Method;
    let v = &policy.settings().verification;
    let line = |m: Method, text: String| serde_json::json!({"method": m.as_str(), "finding": text});
    let mut out: Vec<serde_json::Value> = report
        .findings
        .iter()
        .map(|(m, f)| match f {
            Finding::Unknown(Evidence::ListsNotLoaded) if !live => {
                let why = match &v.state_dir {
                    None => "lists: no cached copy, no state_dir".to_string(),
                    Some(dir) => format!("lists: no cached copy in {dir}"),
                };
                line(*m, format!("not checked offline ({why}); --live fetches them"))
            }
            f => line(*m, crate::verify::finding_text(f)),
        })
        .collect();
    if !live {
        for m in v.methods_for(std::iter::once(claim.agent), claim.verify) {
            if m == Method::Rdns && !report.findings.iter().any(|(f, _)| *f == Method::Rdns) {
                out.push(line(m, "not checked offline; --live checks it".to_string()));
            }
        }
    }
    out
}
