//! The whole decision for one request, as one value: from the request's
//! facts, the outcome of verifying its claim and one compiled policy,
//! [`Policy::decide_request`] returns everything the proxy then carries
//! out: the route (with the identity, the group applied, the robots.txt
//! verdict and whether it is a violation), the limit it is counted
//! against, the price and the dialects that can take it, the form of the
//! response and its caching rule. The proxy asks nothing else of the
//! policy on the way in, so the features cannot decide apart: a charged
//! path is never upgraded, a priced page never reaches a shared cache,
//! and the group that decides is the one the served robots.txt gives.

use std::net::IpAddr;

use crate::limits::Limit;
use crate::markdown::{negotiate, Negotiation};
use crate::payment::{Dialect, Price};
use crate::policy::Policy;
use crate::route::{BadRequest, Identity, Route, UserAgentField};

/// What the decision reads of one request (the proxy gathers it once).
#[derive(Clone, Copy, Debug)]
pub struct RequestFacts<'r> {
    /// The method (`OPTIONS` allows the asterisk-form target).
    pub method: &'r str,
    /// The request target as the client sent it.
    pub raw_target: &'r [u8],
    /// The `User-Agent` field lines.
    pub user_agent: UserAgentField<'r>,
    /// The `Upgrade` field lines.
    pub upgrade: UpgradeField<'r>,
    /// The client's address (through trusted proxies), `None` on a Unix
    /// socket: the key of its limits.
    pub client: Option<IpAddr>,
    /// The `Host` (or `:authority`), for limits per site.
    pub host: Option<&'r str>,
    /// The `Accept` field (its lines joined), for Markdown negotiation.
    pub accept: Option<&'r str>,
}

/// The request's `Upgrade` field lines (RFC 9110 section 7.8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpgradeField<'r> {
    /// No upgrade asked.
    Absent,
    /// One field line.
    One(&'r [u8]),
    /// Several lines (never a websocket handshake).
    Many,
}

impl UpgradeField<'_> {
    /// Whether the request asks for any upgrade.
    pub fn present(self) -> bool {
        self != UpgradeField::Absent
    }
}

/// Whether a response may be stored by a shared cache in front of the
/// proxy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheRule {
    /// As the origin says.
    Origin,
    /// `Cache-Control: private` ([`crate::cache::private`]): a paid page,
    /// or one that states its price, is this client's alone.
    Private,
}

/// Everything the proxy does with one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict<'p, 'r> {
    /// What happens to it: 400, a served file, a block, a replay, or
    /// forwarded; its decision names the identity, the group applied, the
    /// deciding rule and whether the request is a violation.
    pub route: Route<'p, 'r>,
    /// The rate limit a forwarded request is counted against.
    pub limit: Option<Limit<'p>>,
    /// The price of a forwarded request in a charge group (`None`: free).
    pub price: Option<Price>,
    /// The dialects a price can be paid in (the policy's offer).
    pub dialects: &'p [Dialect],
    /// The form of the response: Markdown negotiated, HTML that varies by
    /// `Accept`, or not concerned.
    pub form: Negotiation,
    /// The caching rule of the response.
    pub cache: CacheRule,
}

impl Policy {
    /// Decides one request: validates and routes it
    /// ([`Policy::route_with`]), refuses an upgrade `[server] upgrades`
    /// does not allow, or one on a charged path, then picks the limit, the
    /// price, the response's form and its caching rule of a forwarded
    /// request. Pure; the proxy carries the verdict out.
    pub fn decide_request<'p, 'r>(&'p self, facts: &RequestFacts<'r>, identity: Identity<'_>) -> Verdict<'p, 'r> {
        let lines = match facts.upgrade {
            UpgradeField::Absent => [None, None],
            UpgradeField::One(l) => [Some(l), None],
            UpgradeField::Many => [Some(&b""[..]), Some(&b""[..])],
        };
        let route = match self.check_upgrade(lines.into_iter().flatten()) {
            Err(why) => Route::BadRequest(why),
            Ok(()) => self.route_with(facts.method == "OPTIONS", facts.raw_target, facts.user_agent, identity),
        };
        let mut verdict = Verdict {
            route,
            limit: None,
            price: None,
            dialects: &[],
            form: Negotiation::NotCovered,
            cache: CacheRule::Origin,
        };
        let Route::Forward { decision, target, .. } = &verdict.route else { return verdict };
        let pay = self.payment();
        let price =
            if pay.charging { decision.group.and_then(|g| self.price(g.index, &target.canonical)) } else { None };
        if price.is_some() && facts.upgrade.present() {
            verdict.route = Route::BadRequest(BadRequest::ChargedUpgrade);
            return verdict;
        }
        verdict.form = negotiate(self.settings().markdown.as_ref(), facts.method, &target.canonical, facts.accept);
        verdict.limit = match facts.client {
            Some(ip) if self.limit_settings().any_group => self.limit(&verdict.route, ip, facts.host),
            _ => None,
        };
        if let Some(p) = price {
            verdict.price = Some(p);
            verdict.dialects = &pay.dialects;
            verdict.cache = CacheRule::Private;
        }
        verdict
    }
}

#[cfg(test)]
mod tests;
