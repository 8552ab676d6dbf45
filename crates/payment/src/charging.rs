//! The ledger a charging policy records in, with the name of the instance
//! that writes its rows.

use std::path::Path;

use crawlgate_policy::payment::PaymentSettings;

use crate::ledger::Ledger;

/// The open ledger and this instance's name.
pub struct Charging {
    /// The ledger.
    pub ledger: Ledger,
    /// `[payment] instance_id`, else the host name.
    pub instance: String,
}

impl Charging {
    /// Opens `[payment] ledger` when the policy has a charge group (`None`
    /// when it charges nothing); the error names the key.
    pub fn open(pay: &PaymentSettings) -> Result<Option<Charging>, String> {
        let Some(path) = pay.ledger.as_deref().filter(|_| pay.charging) else { return Ok(None) };
        let ledger = Ledger::open(Path::new(path)).map_err(|e| format!("payment.ledger: {e}"))?;
        let instance = pay.instance_id.clone().unwrap_or_else(host_name);
        tracing::info!(ledger = path, instance = %instance, "Charging: ledger open");
        Ok(Some(Charging { ledger, instance }))
    }
}

/// The host name (Linux `/proc`, else `HOSTNAME`), else `crawlgate`.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "crawlgate".to_string())
}
