//! From the raw TOML to the compiled [`Policy`]: every key validated, every
//! error collected (with line and column) before anything is returned,
//! warnings kept apart. This file is the driver; each table is compiled
//! in its own module, in the order the checks report.

use std::collections::HashSet;

use sha2::{Digest, Sha256};
use toml::Spanned;

use crate::diag::{Diagnostic, Diagnostics, Warning};
use crate::identify::TokenMatcher;
use crate::policy::Policy;
use crate::raw::RawPolicy;
use crate::render;
use crate::route::OriginPaths;
use crate::settings::Settings;

mod agents_txt;
mod classes;
pub(crate) mod ctx;
mod group;
mod hosts;
mod limits;
mod robots_tag;
mod robots_txt;
mod rsl;
mod server;
mod tdmrep;
#[cfg(test)]
mod tests;
mod tokens;
mod upstream;
mod verification;

use agents_txt::compile_agents_txt;
use ctx::Ctx;
use group::compile_groups;
pub(crate) use group::token_index;
use robots_tag::compile_tags;
use robots_txt::{compile_robots_origin, compile_robots_txt, content_signal, SignalSource};
use rsl::compile_rsl;
use server::compile_server;
pub use server::ADMIN_CONNECTIONS;
use tdmrep::compile_tdmrep;
use upstream::compile_upstream;
use verification::{
    address_checks_behind_proxy, block_without_trusted_proxies, compile_verification, resolve_verify, site_hosts,
};

/// Largest robots.txt we publish (RFC 9309: parsers must handle 500 KiB).
pub const MAX_ROBOTS_TXT: usize = 500 * 1024;

/// A loaded policy and its warnings.
#[derive(Debug)]
pub struct Loaded {
    /// The compiled policy.
    pub policy: Policy,
    /// Warnings (the policy is valid), those `allow_warnings` acknowledges
    /// left out.
    pub warnings: Vec<Diagnostic>,
    /// How many warnings `allow_warnings` acknowledged.
    pub acknowledged: usize,
}

/// Loads, validates and compiles a policy; `file_name` appears in every
/// diagnostic. Returns every error at once.
pub fn load(source: &str, file_name: &str) -> Result<Loaded, Diagnostics> {
    let mut cx = Ctx::new(file_name, source);
    let raw: RawPolicy = match toml::from_str(source) {
        Ok(r) => r,
        Err(e) => {
            let offset = e.span().map_or(0, |s| s.start);
            let msg = e.message().trim();
            let msg = crate::type_error::describe(source, offset, msg)
                .or_else(|| crate::type_error::describe_sub_table(source, offset, msg))
                .or_else(|| crate::type_error::describe_unknown(source, offset, msg))
                .unwrap_or_else(|| msg.to_string());
            return Err(Diagnostics(vec![cx.loc.at(offset, msg)]));
        }
    };
    let RawPolicy {
        server,
        upstream,
        robots_txt,
        group,
        robots_tag,
        agents_txt,
        verification,
        tdmrep,
        rsl,
        payment,
        allow_warnings,
        limits,
        markdown,
        classes,
    } = raw;
    let allowed = compile_allow_warnings(&mut cx, allow_warnings.as_deref().unwrap_or_default());
    let raw_server_hosts = server.as_ref().and_then(|s| s.get_ref().hosts.clone());
    let raw_upstream_sni = upstream.as_ref().and_then(|u| u.get_ref().sni.as_ref()).map(|s| s.get_ref().clone());
    let raw_origin_host =
        robots_txt.as_ref().and_then(|r| r.get_ref().origin_host.as_ref()).map(|s| s.get_ref().clone());
    let raw_address_header = server.as_ref().and_then(|s| s.get_ref().client_address_header.clone());
    let raw_servers = upstream.as_ref().and_then(|u| u.get_ref().servers.clone()).map(Spanned::into_inner);
    let legacy_proxies = verification.as_ref().and_then(|v| v.trusted_proxies.as_ref());
    let server = compile_server(&mut cx, server.as_ref(), legacy_proxies);
    let upstream = compile_upstream(&mut cx, upstream.as_ref(), &server);
    let (cache_max_age, mut extras, signal) = compile_robots_txt(&mut cx, robots_txt.as_ref());
    let origin_robots = compile_robots_origin(&mut cx, robots_txt.as_ref());
    let mut groups = compile_groups(&mut cx, &group);
    let class_groups = classes::compile_classes(&mut cx, classes.as_ref(), &groups);
    groups.extend(class_groups);
    let tags = compile_tags(&mut cx, &robots_tag);
    let (agents_rules, agents_txt) = compile_agents_txt(&mut cx, agents_txt.as_ref());
    let site =
        site_hosts(&mut cx, raw_server_hosts.as_deref(), raw_upstream_sni.as_deref(), raw_origin_host.as_deref());
    let verification = compile_verification(&mut cx, verification.as_ref(), &groups, &site);
    resolve_verify(&mut cx, &mut groups, &verification);
    if verification.enabled && server.client_address.trusted_proxies.is_empty() {
        block_without_trusted_proxies(&mut cx, &group);
        let servers = raw_servers.unwrap_or_default();
        address_checks_behind_proxy(&mut cx, &groups, &verification, raw_address_header.as_ref(), &servers);
    }
    let (tdm_rules, tdmrep_json) = compile_tdmrep(&mut cx, tdmrep.as_ref());
    let rsl = compile_rsl(&mut cx, rsl.as_ref(), extras.license.is_some());
    let mut limits = limits::compile_limits(&mut cx, limits.as_ref(), raw_server_hosts.as_deref());
    limits.any_group = groups.iter().any(|g| g.limit.is_some() || !g.path_limits.is_empty());
    let payment_cx = crate::payment::compile::Context {
        groups: &groups,
        sitemaps: &extras.sitemaps,
        verification: &verification,
        trusted_proxies: !server.client_address.trusted_proxies.is_empty(),
        site: &site,
    };
    let (payment, free_paths) = crate::payment::compile::payment(&mut cx, payment.as_ref(), &payment_cx);
    let markdown = markdown.map(|m| {
        let (settings, errors) = crate::markdown::compile(m.get_ref());
        for (at, msg) in errors {
            cx.err_at(at, msg);
        }
        settings
    });

    let (tokens, token_group, star_group) = token_index(&groups);
    let mut tag_tokens: Vec<String> = Vec::new();
    for t in &tags {
        for a in &t.agents {
            if !tag_tokens.iter().any(|x| x.eq_ignore_ascii_case(a)) {
                tag_tokens.push(a.clone());
            }
        }
    }
    // `*` first so the header reads `*;..., Token;...`.
    tag_tokens.sort_by_key(|t| t != "*");

    let content_signal_derived = matches!(signal, SignalSource::Derive(_));
    extras.content_signal = content_signal(&mut cx, signal, star_group.map(|i| &groups[i]));
    let robots_txt = render::robots_txt(file_name, &groups, star_group, &extras, &tags);
    if robots_txt.len() > MAX_ROBOTS_TXT {
        cx.err_at(
            0,
            format!(
                "generated robots.txt is {} bytes, over the {} byte (500 KiB) limit crawlers must parse",
                robots_txt.len(),
                MAX_ROBOTS_TXT
            ),
        );
    }
    if !cx.errors.is_empty() {
        cx.errors.sort_by_key(|d| (d.line, d.col));
        return Err(Diagnostics(cx.errors));
    }
    cx.warnings.sort_by_key(|d| (d.line, d.col));
    let before = cx.warnings.len();
    cx.warnings.retain(|d| d.warning.is_none_or(|w| !allowed.contains(&w)));
    let acknowledged = before - cx.warnings.len();
    let fold_paths = server.origin_paths == OriginPaths::Windows;
    let mut policy = Policy {
        settings: Settings { server, upstream, cache_max_age, verification, origin_robots, limits, payment, markdown },
        matcher: TokenMatcher::new(&tokens),
        groups,
        star_group,
        tokens,
        token_group,
        tags,
        tag_tokens,
        robots_txt,
        agents_rules,
        agents_txt,
        sha256: hex::encode(Sha256::digest(source.as_bytes())),
        tag_cache: Default::default(),
        tdm_rules,
        tdmrep_json,
        license_href: extras.license.clone().or_else(|| rsl.as_ref().map(|(p, _)| p.clone())),
        rsl,
        content_signal: extras.content_signal.clone(),
        content_signal_derived,
        robots_extras: extras,
        file_name: file_name.to_string(),
        free_paths,
    };
    if fold_paths {
        policy.fold_paths();
    }
    Ok(Loaded { policy, warnings: cx.warnings, acknowledged })
}

/// The warning kinds `allow_warnings` acknowledges; an unknown id is an
/// error listing the known ones.
fn compile_allow_warnings(cx: &mut Ctx<'_>, ids: &[Spanned<String>]) -> HashSet<Warning> {
    let mut out = HashSet::new();
    for id in ids {
        match Warning::from_id(id.get_ref()) {
            Some(w) => {
                out.insert(w);
            }
            None => {
                let known = Warning::ALL.iter().map(|w| w.id()).collect::<Vec<_>>().join(", ");
                cx.err(id, format!("allow_warnings: unknown warning id `{}` (known: {known})", id.get_ref()));
            }
        }
    }
    out
}
