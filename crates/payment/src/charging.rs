//! The ledger a charging policy records in, with the name of the instance
//! that writes its rows.

use std::path::PathBuf;

use crawlgate_policy::payment::PaymentSettings;

use crate::ledger::{Ledger, Target};

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
        let Some(target) = target(pay) else { return Ok(None) };
        let ledger = Ledger::open_target(&target).map_err(|e| format!("payment.ledger: {e}"))?;
        let instance = pay.instance_id.clone().unwrap_or_else(host_name);
        tracing::info!(ledger = %target.display(), instance = %instance, "Charging: ledger open");
        Ok(Some(Charging { ledger, instance }))
    }
}

/// Where the ledger of `pay` is, when the policy charges.
pub fn target(pay: &PaymentSettings) -> Option<Target> {
    let ledger = pay.ledger.as_deref().filter(|_| pay.charging)?;
    if pay.ledger_is_postgres() {
        Some(Target::Postgres {
            url: ledger.to_string(),
            spool: PathBuf::from(pay.ledger_spool.as_deref()?),
            password_file: pay.ledger_password_file.as_deref().map(PathBuf::from),
        })
    } else {
        Some(Target::Sqlite(PathBuf::from(ledger)))
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
