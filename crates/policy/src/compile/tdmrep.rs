//! `[tdmrep]`: the W3C TDM Reservation Protocol rules and the rendered
//! `/.well-known/tdmrep.json`.

use toml::Spanned;

use super::ctx::Ctx;
use crate::policy::TdmRule;
use crate::raw::RawTdmRep;
use crate::render;
use crate::validate;

/// `[tdmrep]`: the rules, most specific first (ties in file order), and
/// the rendered `/.well-known/tdmrep.json`.
pub(super) fn compile_tdmrep(cx: &mut Ctx<'_>, raw: Option<&Spanned<RawTdmRep>>) -> (Vec<TdmRule>, Option<String>) {
    let Some(raw) = raw else { return (Vec::new(), None) };
    let RawTdmRep { rules } = raw.get_ref();
    let mut out: Vec<TdmRule> = Vec::new();
    for r in rules.iter().flatten() {
        let crate::raw::RawTdmRule { path, reservation, policy } = r.get_ref();
        let pattern = match validate::tdm_path(path.get_ref()) {
            Ok(p) => Some(p),
            Err(e) => {
                cx.err(path, e);
                None
            }
        };
        let reservation = match *reservation.get_ref() {
            0 => Some(0u8),
            1 => Some(1u8),
            other => {
                cx.err(reservation, format!("tdmrep.rules.reservation must be 0 or 1, found {other}"));
                None
            }
        };
        let policy = match policy {
            None => Some(None),
            Some(p) => match validate::tdm_policy(p.get_ref()) {
                Ok(()) if reservation == Some(0) => {
                    cx.err(p, "tdmrep.rules.policy applies only with reservation = 1 (W3C TDM Reservation Protocol: a TDM policy describes the terms of reserved rights)");
                    None
                }
                Ok(()) => Some(Some(std::sync::Arc::<str>::from(p.get_ref().as_str()))),
                Err(e) => {
                    cx.err(p, e);
                    None
                }
            },
        };
        if let (Some(pattern), Some(reservation), Some(policy)) = (pattern, reservation, policy) {
            if let Some(first) = out.iter().find(|o| o.path == *path.get_ref()) {
                cx.err(path, format!("tdmrep.rules.path: `{}` has two rules (one rule per path)", first.path));
                continue;
            }
            out.push(TdmRule { path: path.get_ref().clone(), pattern, reservation, policy });
        }
    }
    // Stable: equally specific rules keep their file order.
    out.sort_by_key(|r| std::cmp::Reverse(r.pattern.specificity()));
    let json = render::tdmrep_json(&out);
    (out, Some(json))
}
