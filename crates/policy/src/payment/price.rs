//! Prices as `<ISO 4217 code> <decimal>` (`USD 0.01`), the form of
//! Cloudflare's `crawler-price` header, kept as integer minor units of
//! the currency (cents for USD): no floating point anywhere.

use std::fmt;

/// An ISO 4217 currency crawlgate can charge in, with its minor unit
/// exponent (ISO 4217's "minor unit" column: 2 for USD, 0 for JPY).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Currency {
    code: [u8; 3],
    exponent: u8,
}

/// ISO 4217 codes accepted in a policy, with their minor unit exponent.
const CURRENCIES: &[(&str, u8)] = &[
    ("AED", 2),
    ("AUD", 2),
    ("BHD", 3),
    ("BRL", 2),
    ("CAD", 2),
    ("CHF", 2),
    ("CLP", 0),
    ("CNY", 2),
    ("CZK", 2),
    ("DKK", 2),
    ("EUR", 2),
    ("GBP", 2),
    ("HKD", 2),
    ("HUF", 2),
    ("IDR", 2),
    ("ILS", 2),
    ("INR", 2),
    ("ISK", 0),
    ("JOD", 3),
    ("JPY", 0),
    ("KRW", 0),
    ("KWD", 3),
    ("MXN", 2),
    ("NOK", 2),
    ("NZD", 2),
    ("OMR", 3),
    ("PLN", 2),
    ("SAR", 2),
    ("SEK", 2),
    ("SGD", 2),
    ("THB", 2),
    ("TND", 3),
    ("TRY", 2),
    ("TWD", 2),
    ("USD", 2),
    ("VND", 0),
    ("ZAR", 2),
];

impl Currency {
    /// The currency with ISO 4217 code `code` (upper case), if crawlgate
    /// knows its minor unit.
    pub fn from_code(code: &str) -> Option<Currency> {
        let &(c, exponent) = CURRENCIES.iter().find(|(c, _)| *c == code)?;
        let b = c.as_bytes();
        Some(Currency { code: [b[0], b[1], b[2]], exponent })
    }

    /// The three-letter code.
    pub fn code(&self) -> &str {
        std::str::from_utf8(&self.code).unwrap_or("XXX")
    }

    /// Digits after the decimal point of one minor unit.
    pub fn exponent(&self) -> u8 {
        self.exponent
    }
}

/// A price: a currency and a positive number of its minor units.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Price {
    /// The currency.
    pub currency: Currency,
    /// The amount in minor units (cents for USD), at least 1.
    pub minor: u64,
}

/// Why a price in a policy is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PriceError {
    /// Not `<CODE> <decimal>`.
    #[error("`{0}` is not `<ISO 4217 code> <decimal>` (for example `USD 0.01`)")]
    Form(String),
    /// No currency code before the amount.
    #[error("`{0}` has no currency: write the ISO 4217 code first (for example `USD 0.01`)")]
    NoCurrency(String),
    /// A code crawlgate does not know.
    #[error("`{0}` is not an ISO 4217 currency crawlgate knows (USD, EUR, GBP, JPY, ...)")]
    UnknownCurrency(String),
    /// More decimals than the currency's minor unit.
    #[error("`{value}` has more decimals than {currency}'s minor unit ({exponent})")]
    Precision {
        /// The price as written.
        value: String,
        /// Its currency.
        currency: String,
        /// The currency's exponent.
        exponent: u8,
    },
    /// Zero, or less than one minor unit.
    #[error("`{value}` is below the minimum price of one minor unit ({minimum})")]
    Minimum {
        /// The price as written.
        value: String,
        /// The smallest price in its currency.
        minimum: String,
    },
    /// An amount too large to keep.
    #[error("`{0}` is too large")]
    TooLarge(String),
    /// A control character in the price (shown escaped).
    #[error("`{0}` contains a control character")]
    Control(String),
    /// A currency word close to a known code (`EURO 1`, `usd 1`).
    #[error("`{value}`: `{word}` is not an ISO 4217 code; did you mean `{near}`?")]
    Misspelt {
        /// The price as written.
        value: String,
        /// The word in the place of the code.
        word: String,
        /// The price with the closest known code.
        near: String,
    },
}

/// The known code closest to `word` (`EURO`, `usd`, `EUX`), for a hint.
pub(crate) fn near_code(word: &str) -> Option<&'static str> {
    if !word.bytes().all(|b| b.is_ascii_alphabetic()) || word.len() > 4 {
        return None;
    }
    let upper = word.to_ascii_uppercase();
    let codes = || CURRENCIES.iter().map(|(c, _)| *c);
    if upper != word {
        if let Some(c) = codes().find(|c| *c == upper) {
            return Some(c);
        }
    }
    crate::validate::closest(&upper, codes(), 1)
}

/// A decimal amount as a crawler wrote it: `units / 10^scale`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Offer {
    /// The currency code as written (three ASCII upper-case letters).
    pub code: [u8; 3],
    /// The digits without the point.
    pub units: u128,
    /// Digits after the point.
    pub scale: u32,
}

/// Most digits read in an amount (a longer one is malformed).
const MAX_DIGITS: usize = 24;

/// Splits `<CODE> <decimal>` into the code and `(units, scale)`; `None`
/// when it is not of that form. One space; the decimal is digits with at
/// most one point between digits.
fn split(value: &[u8]) -> Option<([u8; 3], u128, u32)> {
    let value = value.trim_ascii();
    if value.len() < 5 || value[3] != b' ' {
        return None;
    }
    let code = [value[0], value[1], value[2]];
    if !code.iter().all(u8::is_ascii_uppercase) {
        return None;
    }
    let num = &value[4..];
    let (int, frac) = match memchr::memchr(b'.', num) {
        Some(i) => (&num[..i], &num[i + 1..]),
        None => (num, &b""[..]),
    };
    let digits = |s: &[u8]| s.iter().all(u8::is_ascii_digit);
    if int.is_empty() || !digits(int) || !digits(frac) || (num.contains(&b'.') && frac.is_empty()) {
        return None;
    }
    if int.len() + frac.len() > MAX_DIGITS {
        return None;
    }
    let mut units: u128 = 0;
    for &d in int.iter().chain(frac) {
        units = units * 10 + u128::from(d - b'0');
    }
    Some((code, units, frac.len() as u32))
}

impl Price {
    /// Parses a price as written in a policy (`USD 0.01`): a known ISO
    /// 4217 code, one space, a decimal with no more decimals than the
    /// currency's minor unit, at least one minor unit.
    pub fn parse(value: &str) -> Result<Price, PriceError> {
        // Trimmed below: a control character at either end would pass
        // unseen.
        if value.contains(char::is_control) {
            return Err(PriceError::Control(crate::validate::shown(value)));
        }
        let v = value.trim();
        if v.chars().next().is_some_and(|c| c.is_ascii_digit() || c == '.') {
            return Err(PriceError::NoCurrency(value.to_string()));
        }
        let misspelt = |word: &str| {
            let near = near_code(word)?;
            let near = format!("{near}{}", &v[word.len()..]);
            Some(PriceError::Misspelt { value: value.to_string(), word: word.to_string(), near })
        };
        let Some((code, units, scale)) = split(v.as_bytes()) else {
            let word = v.split(' ').next().unwrap_or_default();
            return Err(misspelt(word).unwrap_or_else(|| PriceError::Form(value.to_string())));
        };
        let code = std::str::from_utf8(&code).unwrap_or_default();
        let currency = Currency::from_code(code)
            .ok_or_else(|| misspelt(code).unwrap_or_else(|| PriceError::UnknownCurrency(code.to_string())))?;
        let exp = u32::from(currency.exponent);
        if scale > exp {
            return Err(PriceError::Precision {
                value: value.to_string(),
                currency: code.to_string(),
                exponent: currency.exponent,
            });
        }
        let minor = 10u128
            .checked_pow(exp - scale)
            .and_then(|m| units.checked_mul(m))
            .and_then(|m| u64::try_from(m).ok())
            .ok_or_else(|| PriceError::TooLarge(value.to_string()))?;
        if minor == 0 {
            let minimum = Price { currency, minor: 1 }.to_string();
            return Err(PriceError::Minimum { value: value.to_string(), minimum });
        }
        Ok(Price { currency, minor })
    }

    /// Compares a crawler's offer with this price: `None` when the
    /// currencies differ.
    pub fn compare(&self, offer: &Offer) -> Option<std::cmp::Ordering> {
        if offer.code != self.currency.code {
            return None;
        }
        // offer.units / 10^offer.scale against minor / 10^exp, both sides
        // brought to the larger scale (at most 24 digits: fits in u128).
        let exp = u32::from(self.currency.exponent);
        let scale = offer.scale.max(exp);
        let ours = u128::from(self.minor).checked_mul(10u128.checked_pow(scale - exp)?)?;
        let theirs = offer.units.checked_mul(10u128.checked_pow(scale - offer.scale)?)?;
        Some(theirs.cmp(&ours))
    }
}

impl Offer {
    /// Parses a crawler's `crawler-exact-price` / `crawler-max-price`
    /// value (`USD 0.01`); `None` when it is not `<CODE> <decimal>`. Any
    /// upper-case code is an offer; a currency other than the price's is
    /// judged by [`Price::compare`].
    pub fn parse(value: &[u8]) -> Option<Offer> {
        let (code, units, scale) = split(value)?;
        Some(Offer { code, units, scale })
    }
}

impl fmt::Display for Price {
    /// `USD 0.01`: the code, a space, the amount with the currency's
    /// decimals (the `crawler-price` and `crawler-charged` form).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let exp = u32::from(self.currency.exponent);
        let code = self.currency.code();
        if exp == 0 {
            return write!(f, "{code} {}", self.minor);
        }
        let div = 10u64.pow(exp);
        write!(f, "{code} {}.{:0width$}", self.minor / div, self.minor % div, width = exp as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_prices_parse_to_minor_units() {
        type Case<'a> = (&'a str, Result<(&'a str, u64), &'a str>);
        let cases: &[Case<'_>] = &[
            ("USD 0.01", Ok(("USD 0.01", 1))),
            ("USD 1", Ok(("USD 1.00", 100))),
            ("USD 0.1", Ok(("USD 0.10", 10))),
            ("EUR 12.34", Ok(("EUR 12.34", 1234))),
            ("JPY 5", Ok(("JPY 5", 5))),
            ("KWD 0.001", Ok(("KWD 0.001", 1))),
            ("USD 0.001", Err("`USD 0.001` has more decimals than USD's minor unit (2)")),
            ("JPY 0.5", Err("`JPY 0.5` has more decimals than JPY's minor unit (0)")),
            ("USD 0", Err("`USD 0` is below the minimum price of one minor unit (USD 0.01)")),
            ("USD 0.00", Err("`USD 0.00` is below the minimum price of one minor unit (USD 0.01)")),
            ("0.01", Err("`0.01` has no currency: write the ISO 4217 code first (for example `USD 0.01`)")),
            ("XYZ 1", Err("`XYZ` is not an ISO 4217 currency crawlgate knows (USD, EUR, GBP, JPY, ...)")),
            ("usd 0.01", Err("`usd 0.01`: `usd` is not an ISO 4217 code; did you mean `USD 0.01`?")),
            ("EURO 0.05", Err("`EURO 0.05`: `EURO` is not an ISO 4217 code; did you mean `EUR 0.05`?")),
            ("EUX 1", Err("`EUX 1`: `EUX` is not an ISO 4217 code; did you mean `EUR 1`?")),
            ("Dollar 1", Err("`Dollar 1` is not `<ISO 4217 code> <decimal>` (for example `USD 0.01`)")),
            ("USD  0.01", Err("`USD  0.01` is not `<ISO 4217 code> <decimal>` (for example `USD 0.01`)")),
            ("USD -1", Err("`USD -1` is not `<ISO 4217 code> <decimal>` (for example `USD 0.01`)")),
            ("USD 1.", Err("`USD 1.` is not `<ISO 4217 code> <decimal>` (for example `USD 0.01`)")),
            ("USD .5", Err("`USD .5` is not `<ISO 4217 code> <decimal>` (for example `USD 0.01`)")),
            ("USD 1e3", Err("`USD 1e3` is not `<ISO 4217 code> <decimal>` (for example `USD 0.01`)")),
            ("USD 999999999999999999999", Err("`USD 999999999999999999999` is too large")),
            ("USD 0.01\r", Err("`USD 0.01\\r` contains a control character")),
            ("\tUSD 0.01", Err("`\\tUSD 0.01` contains a control character")),
        ];
        for (input, want) in cases {
            let got = Price::parse(input).map(|p| (p.to_string(), p.minor)).map_err(|e| e.to_string());
            let want = want.map(|(s, m)| (s.to_string(), m)).map_err(str::to_string);
            assert_eq!(got, want, "{input}");
        }
    }

    #[test]
    fn offers_compare_across_scales() {
        use std::cmp::Ordering::*;
        let price = Price::parse("USD 0.01").unwrap();
        type Case<'a> = (&'a [u8], Option<Option<std::cmp::Ordering>>);
        let cases: &[Case<'_>] = &[
            (b"USD 0.01", Some(Some(Equal))),
            (b"USD 0.010", Some(Some(Equal))),
            (b"USD 0.0100000", Some(Some(Equal))),
            (b"USD 0.009", Some(Some(Less))),
            (b"USD 0.011", Some(Some(Greater))),
            (b"USD 1", Some(Some(Greater))),
            (b"EUR 0.01", Some(None)),
            (b"USD", None),
            (b"usd 0.01", None),
            (b"USD 0,01", None),
            (b"USD 1234567890123456789012345", None),
            (b" USD 0.02 ", Some(Some(Greater))),
        ];
        for (input, want) in cases {
            let got = Offer::parse(input).map(|o| price.compare(&o));
            assert_eq!(got, *want, "{}", String::from_utf8_lossy(input));
        }
    }
}
