//! The charge of a priced response in the response phase
//! (`crate::payment`): committed before the response header goes out, or,
//! for a converted Markdown response the connection holds whole, once the
//! conversion finished, before the connection releases the response.

use super::*;

impl Gate {
    /// Charges a priced response now (`payment::response`). An `Err` is
    /// the 500 or 402 that `fail_to_proxy` writes.
    pub(super) async fn charge(&self, resp: &mut ResponseHeader, ctx: &mut Ctx) -> Result<()> {
        let Some(pay) = ctx.pay.as_deref_mut() else { return Ok(()) };
        let agent = ctx.agent.map_or("", |a| ctx.snap.policy.agent_name(a));
        let subject = match ctx.evidence.as_deref() {
            Some(Evidence::Key { keyid }) => keyid.as_str(),
            _ => "",
        };
        let id = String::from_utf8_lossy(crawlgate_telemetry::events::IdText::new().write(ctx.id)).into_owned();
        let charged = crate::payment::response(&self.shared, resp, pay, &ctx.snap, agent, subject, &ctx.path, id);
        if let Err(e) = Box::pin(charged).await {
            ctx.reason = Some(BlockReason::Payment);
            return Err(e);
        }
        Ok(())
    }

    /// Leaves the charge of a response that the connection holds whole to
    /// the connection, which makes it (`payment::on_release`) when it is
    /// about to release the response: its conversion finished. The
    /// origin's charge fields are dropped now. False when the connection
    /// took no hold: the caller charges now.
    pub(super) fn charge_on_release(&self, session: &Session, resp: &mut ResponseHeader, ctx: &mut Ctx) -> bool {
        let Some(pay) = ctx.pay.take() else { return false };
        pay.strip(resp);
        let payer = crate::payment::Payer {
            agent: ctx.agent.map_or("", |a| ctx.snap.policy.agent_name(a)).to_string(),
            subject: match ctx.evidence.as_deref() {
                Some(Evidence::Key { keyid }) => keyid.clone(),
                _ => String::new(),
            },
            path: ctx.path.to_string(),
            request_id: String::from_utf8_lossy(crawlgate_telemetry::events::IdText::new().write(ctx.id)).into_owned(),
        };
        let held: crate::payment::Held = Arc::new(std::sync::Mutex::new(Some(pay)));
        let status = resp.status.as_u16();
        let approval = crate::payment::on_release(self.shared.clone(), ctx.snap.clone(), held.clone(), status, payer);
        if crate::conn::release_after(session.as_downstream(), Box::pin(approval)) {
            ctx.held_charge = Some(held);
            true
        } else {
            // The approval was dropped unpolled: the charge is still here.
            ctx.held_charge = Some(held);
            ctx.reclaim_charge();
            false
        }
    }
}

/// At the end of a request: takes back the charge left to the connection,
/// notes a refused charge as the reason, and returns the status the client
/// got (a held response may have been replaced).
pub(super) fn settle_charge(session: &Session, ctx: &mut Ctx) -> u16 {
    ctx.reclaim_charge();
    if ctx.pay.as_ref().is_some_and(|p| p.refused()) {
        ctx.reason = Some(BlockReason::Payment);
    }
    crate::conn::sent_instead(session.as_downstream())
        .unwrap_or_else(|| session.response_written().map_or(0, |r| r.status.as_u16()))
}

/// Sends the error `text` (status `code`) in place of a held response that
/// never left (its charge waited for its end, which failed); a response
/// that left already, or was never held, is Pingora's to end.
pub(super) fn replace_held(session: &Session, code: u16, text: String) {
    let reply = respond::Reply::plain(code, text);
    crate::conn::send_instead(session.as_downstream(), code, reply.wire());
}
