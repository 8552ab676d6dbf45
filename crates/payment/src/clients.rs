//! The payment dialects' clients of one policy: the license verifier of
//! `[payment.rsl]` and the facilitator client of `[payment.x402]`, built
//! together from the policy's settings so that the prices and dialects in
//! force are always ones the clients can take.

use crawlgate_policy::payment::dialects::X402Settings;
use crawlgate_policy::payment::PaymentSettings;

use crate::rsl::LicenseVerifier;
use crate::x402::Facilitator;

/// The clients a policy's payment dialects need; none when it charges
/// nothing.
#[derive(Default)]
pub struct Dialects {
    license: Option<LicenseVerifier>,
    x402: Option<(X402Settings, Facilitator)>,
    /// The settings they were built from, so that a reload that does not
    /// change them keeps them (and their key caches with them).
    settings: String,
}

impl Dialects {
    /// Builds the clients of `pay` (nothing when it charges nothing); the
    /// error names the table whose settings cannot be used.
    pub fn open(pay: &PaymentSettings) -> Result<Dialects, String> {
        if !pay.charging {
            return Ok(Dialects::default());
        }
        let license = match &pay.rsl {
            Some(s) => Some(LicenseVerifier::new(s.clone()).map_err(|e| format!("payment.rsl: {e}"))?),
            None => None,
        };
        let x402 = match &pay.x402 {
            Some(s) => {
                let client = Facilitator::new(s).map_err(|e| format!("payment.x402.facilitator: {e}"))?;
                Some((s.clone(), client))
            }
            None => None,
        };
        Ok(Dialects { license, x402, settings: key(pay) })
    }

    /// Whether `pay` is what these clients were built from.
    pub fn same_settings(&self, pay: &PaymentSettings) -> bool {
        self.settings == key(pay)
    }

    /// The license verifier, with `[payment.rsl]`.
    pub fn license(&self) -> Option<&LicenseVerifier> {
        self.license.as_ref()
    }

    /// The x402 settings and facilitator client, with `[payment.x402]`.
    pub fn x402(&self) -> Option<(&X402Settings, &Facilitator)> {
        self.x402.as_ref().map(|(s, c)| (s, c))
    }
}

fn key(pay: &PaymentSettings) -> String {
    if pay.charging {
        format!("{:?} {:?}", pay.rsl, pay.x402)
    } else {
        String::new()
    }
}
