//! Cloudflare's pay per crawl dialect: what a request in a charge group
//! is answered, from its price headers (`crawler-exact-price`,
//! `crawler-max-price`), whether its Web Bot Auth signature verified and
//! covered them, and, behind Cloudflare, the `cf-pay-per-crawl` field.
//! Codes and statuses as Cloudflare's pay per crawl documentation lists
//! them ("Error codes").

use super::price::{Offer, Price};

/// A `crawler-error` code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CrawlerError {
    /// The crawler may not have the path at any price (403).
    CrawlerForbidden,
    /// The request is not signed with Web Bot Auth by a known key (400).
    StrongAuthRequired,
    /// The request's signature is invalid (400).
    InvalidSignature,
    /// A price header that is not `<CODE> <decimal>`, or sent twice (400).
    InvalidCrawlerPriceValue,
    /// No price header the signature covers (402).
    MissingCrawlerPrice,
    /// `crawler-exact-price` is not the price (402).
    InvalidCrawlerExactPrice,
    /// `crawler-max-price` is below the price (402).
    InvalidCrawlerMaxPrice,
    /// Both price headers (400).
    ConflictingPriceHeaders,
    /// The charge could not be recorded (500; the only one worth a retry).
    InternalError,
}

impl CrawlerError {
    /// Every code, in metric label order.
    pub const ALL: [CrawlerError; 9] = [
        CrawlerError::CrawlerForbidden,
        CrawlerError::StrongAuthRequired,
        CrawlerError::InvalidSignature,
        CrawlerError::InvalidCrawlerPriceValue,
        CrawlerError::MissingCrawlerPrice,
        CrawlerError::InvalidCrawlerExactPrice,
        CrawlerError::InvalidCrawlerMaxPrice,
        CrawlerError::ConflictingPriceHeaders,
        CrawlerError::InternalError,
    ];

    /// The code as the `crawler-error` header and metrics write it.
    pub const fn as_str(self) -> &'static str {
        match self {
            CrawlerError::CrawlerForbidden => "CrawlerForbidden",
            CrawlerError::StrongAuthRequired => "StrongAuthRequired",
            CrawlerError::InvalidSignature => "InvalidSignature",
            CrawlerError::InvalidCrawlerPriceValue => "InvalidCrawlerPriceValue",
            CrawlerError::MissingCrawlerPrice => "MissingCrawlerPrice",
            CrawlerError::InvalidCrawlerExactPrice => "InvalidCrawlerExactPrice",
            CrawlerError::InvalidCrawlerMaxPrice => "InvalidCrawlerMaxPrice",
            CrawlerError::ConflictingPriceHeaders => "ConflictingPriceHeaders",
            CrawlerError::InternalError => "InternalError",
        }
    }

    /// Its HTTP status.
    pub const fn status(self) -> u16 {
        match self {
            CrawlerError::CrawlerForbidden => 403,
            CrawlerError::StrongAuthRequired
            | CrawlerError::InvalidSignature
            | CrawlerError::InvalidCrawlerPriceValue
            | CrawlerError::ConflictingPriceHeaders => 400,
            CrawlerError::MissingCrawlerPrice
            | CrawlerError::InvalidCrawlerExactPrice
            | CrawlerError::InvalidCrawlerMaxPrice => 402,
            CrawlerError::InternalError => 500,
        }
    }

    /// The plain-text body of its answer: what the crawler must change.
    pub const fn reason(self) -> &'static str {
        match self {
            CrawlerError::CrawlerForbidden => "this crawler may not have this path at any price",
            CrawlerError::StrongAuthRequired => "sign the request with Web Bot Auth (RFC 9421) by a key this site knows",
            CrawlerError::InvalidSignature => "the request's Web Bot Auth signature does not verify",
            CrawlerError::InvalidCrawlerPriceValue => {
                "send one crawler-exact-price or crawler-max-price as `<ISO 4217 code> <decimal>`, for example `USD 0.01`"
            }
            CrawlerError::MissingCrawlerPrice => {
                "send crawler-exact-price or crawler-max-price, covered by the request's signature"
            }
            CrawlerError::InvalidCrawlerExactPrice => "crawler-exact-price must equal crawler-price",
            CrawlerError::InvalidCrawlerMaxPrice => "crawler-max-price must be at least crawler-price",
            CrawlerError::ConflictingPriceHeaders => "send only one of crawler-exact-price and crawler-max-price",
            CrawlerError::InternalError => "the charge could not be recorded; nothing was charged, retry later",
        }
    }
}

/// A request field's lines, as far as the decision cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field<'a> {
    /// Not sent.
    Absent,
    /// One line.
    One(&'a [u8]),
    /// More than one line.
    Many,
}

impl Field<'_> {
    fn present(&self) -> bool {
        !matches!(self, Field::Absent)
    }
}

/// What the request's Web Bot Auth signature showed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signed {
    /// No signature.
    Absent,
    /// A signature that does not verify.
    Invalid,
    /// A signature whose key is unknown or names no policy token.
    Unverified,
    /// A valid signature proving the group's token, and which price
    /// headers it covers.
    Verified {
        /// `crawler-exact-price` is a covered component.
        covers_exact: bool,
        /// `crawler-max-price` is a covered component.
        covers_max: bool,
    },
}

/// One request in a charge group, in Cloudflare's dialect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CrawlerRequest<'a> {
    /// The signature.
    pub signed: Signed,
    /// `crawler-exact-price`.
    pub exact: Field<'a>,
    /// `crawler-max-price`.
    pub max: Field<'a>,
    /// `cf-pay-per-crawl`, only when `[payment] cloudflare_origin` is on
    /// and the peer is a trusted proxy (any client can send one).
    pub cloudflare: Option<&'a [u8]>,
}

/// What the proxy does with a request in a charge group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Forward; a 2xx response is charged `price` (recorded, then marked
    /// `crawler-charged`), any other status is not.
    Charge {
        /// The price charged.
        price: Price,
    },
    /// Answer without the origin: `status`, the `crawler-error` code if
    /// any, and `crawler-price` when the crawler can pay it.
    Refuse {
        /// The status.
        status: u16,
        /// The `crawler-error` code (none on a first contact's 402).
        error: Option<CrawlerError>,
        /// The `crawler-price` to send.
        price: Option<Price>,
    },
    /// Behind Cloudflare with in-band pricing: forward, and the response
    /// states crawlgate's price in `crawler-price` for Cloudflare to
    /// charge.
    InBand {
        /// The price stated.
        price: Price,
    },
    /// Behind Cloudflare with `bypass` or `zone-default`: forward, the
    /// response left alone.
    Untouched,
}

/// Cloudflare's pricing mode in `cf-pay-per-crawl`
/// (`protocol=cloudflare, pricing=in-band`); `None` when unreadable.
fn cloudflare_pricing(value: &[u8]) -> Option<&[u8]> {
    let mut protocol = None;
    let mut pricing = None;
    for member in value.split(|b| *b == b',') {
        let member = member.trim_ascii();
        let (key, v) = match memchr::memchr(b'=', member) {
            Some(i) => (&member[..i], member[i + 1..].trim_ascii()),
            None => continue,
        };
        match key.trim_ascii() {
            b"protocol" => protocol = Some(v),
            b"pricing" => pricing = Some(v),
            _ => {}
        }
    }
    (protocol == Some(b"cloudflare")).then_some(pricing).flatten()
}

/// Decides a request in a charge group whose path costs `price`.
///
/// In order: Cloudflare's own pricing mode when it sits in front
/// (`in-band`: state the price; `bypass`, `zone-default`: leave it to
/// Cloudflare); then the signature (absent or unknown key: 400
/// `StrongAuthRequired`, invalid: 400 `InvalidSignature`); then the price
/// headers (both: 400 `ConflictingPriceHeaders`; malformed or repeated:
/// 400 `InvalidCrawlerPriceValue`; none: 402 with `crawler-price`; one the
/// signature does not cover: 402 `MissingCrawlerPrice`; the wrong amount
/// or currency: 402 `InvalidCrawlerExactPrice` / `InvalidCrawlerMaxPrice`);
/// else the request is forwarded and charged on success.
pub fn decide(price: Price, req: &CrawlerRequest<'_>) -> Answer {
    if let Some(mode) = req.cloudflare.and_then(cloudflare_pricing) {
        match mode {
            b"in-band" => return Answer::InBand { price },
            b"bypass" | b"zone-default" => return Answer::Untouched,
            // An unknown mode: crawlgate charges itself.
            _ => {}
        }
    }
    let refuse = |error: CrawlerError, with_price: bool| Answer::Refuse {
        status: error.status(),
        error: Some(error),
        price: with_price.then_some(price),
    };
    let (covers_exact, covers_max) = match req.signed {
        Signed::Absent | Signed::Unverified => return refuse(CrawlerError::StrongAuthRequired, false),
        Signed::Invalid => return refuse(CrawlerError::InvalidSignature, false),
        Signed::Verified { covers_exact, covers_max } => (covers_exact, covers_max),
    };
    if req.exact.present() && req.max.present() {
        return refuse(CrawlerError::ConflictingPriceHeaders, false);
    }
    let (field, covered, wrong) = match (req.exact, req.max) {
        (Field::Absent, Field::Absent) => return Answer::Refuse { status: 402, error: None, price: Some(price) },
        (f, Field::Absent) => (f, covers_exact, CrawlerError::InvalidCrawlerExactPrice),
        (_, f) => (f, covers_max, CrawlerError::InvalidCrawlerMaxPrice),
    };
    let Field::One(value) = field else { return refuse(CrawlerError::InvalidCrawlerPriceValue, false) };
    let Some(offer) = Offer::parse(value) else { return refuse(CrawlerError::InvalidCrawlerPriceValue, false) };
    // A price header the signature does not cover could have been added
    // by anyone on the way: it agrees to nothing.
    if !covered {
        return refuse(CrawlerError::MissingCrawlerPrice, true);
    }
    let accepted = match (wrong, price.compare(&offer)) {
        (_, None) => false,
        (CrawlerError::InvalidCrawlerExactPrice, Some(o)) => o.is_eq(),
        (_, Some(o)) => o.is_ge(),
    };
    if accepted {
        Answer::Charge { price }
    } else {
        refuse(wrong, true)
    }
}

/// Whether a response of status `status` to a request answered
/// [`Answer::Charge`] is charged: a 2xx only (the crawler got the page).
pub fn charged_status(status: u16) -> bool {
    (200..300).contains(&status)
}

/// The `crawler-exact-price` request field.
pub const EXACT_PRICE: &str = "crawler-exact-price";
/// The `crawler-max-price` request field.
pub const MAX_PRICE: &str = "crawler-max-price";
/// The `crawler-price` response field.
pub const PRICE: &str = "crawler-price";
/// The `crawler-charged` response field.
pub const CHARGED: &str = "crawler-charged";
/// The `crawler-error` response field.
pub const ERROR: &str = "crawler-error";
/// Cloudflare's `cf-pay-per-crawl` request field.
pub const CF_PAY_PER_CRAWL: &str = "cf-pay-per-crawl";

/// The request fields of this dialect that never reach the origin: a
/// client can send any of them, and an origin that read them (for
/// Cloudflare's in-band pricing, say) would act on forged values.
/// crawlgate is the one that charges.
pub const REQUEST_FIELDS: [&str; 6] = [EXACT_PRICE, MAX_PRICE, CF_PAY_PER_CRAWL, PRICE, CHARGED, ERROR];

#[cfg(test)]
mod tests {
    use super::*;

    fn usd(v: &str) -> Price {
        Price::parse(v).unwrap()
    }

    /// Renders an answer as the response's status and fields.
    fn show(a: Answer) -> String {
        match a {
            Answer::Charge { price } => format!("forward, charge {price}"),
            Answer::InBand { price } => format!("forward, crawler-price: {price}"),
            Answer::Untouched => "forward untouched".into(),
            Answer::Refuse { status, error, price } => {
                let mut s = status.to_string();
                if let Some(e) = error {
                    s += &format!(" crawler-error: {}", e.as_str());
                }
                if let Some(p) = price {
                    s += &format!(" crawler-price: {p}");
                }
                s
            }
        }
    }

    #[test]
    fn the_cloudflare_dialect_answers() {
        use Field::*;
        let both = Signed::Verified { covers_exact: true, covers_max: true };
        let none = Signed::Verified { covers_exact: false, covers_max: false };
        type Case<'a> = (Signed, Field<'a>, Field<'a>, Option<&'a [u8]>, &'a str);
        #[rustfmt::skip]
        let cases: &[Case<'_>] = &[
            (both, Absent, Absent, None, "402 crawler-price: USD 0.01"),
            (both, One(b"USD 0.01"), Absent, None, "forward, charge USD 0.01"),
            (both, One(b"USD 0.010"), Absent, None, "forward, charge USD 0.01"),
            (both, One(b"USD 0.02"), Absent, None, "402 crawler-error: InvalidCrawlerExactPrice crawler-price: USD 0.01"),
            (both, One(b"EUR 0.01"), Absent, None, "402 crawler-error: InvalidCrawlerExactPrice crawler-price: USD 0.01"),
            (both, Absent, One(b"USD 0.01"), None, "forward, charge USD 0.01"),
            (both, Absent, One(b"USD 5"), None, "forward, charge USD 0.01"),
            (both, Absent, One(b"USD 0.009"), None, "402 crawler-error: InvalidCrawlerMaxPrice crawler-price: USD 0.01"),
            (both, Absent, One(b"GBP 1"), None, "402 crawler-error: InvalidCrawlerMaxPrice crawler-price: USD 0.01"),
            (both, One(b"USD 0.01"), One(b"USD 0.01"), None, "400 crawler-error: ConflictingPriceHeaders"),
            (both, One(b"0.01"), Absent, None, "400 crawler-error: InvalidCrawlerPriceValue"),
            (both, Absent, One(b"USD one"), None, "400 crawler-error: InvalidCrawlerPriceValue"),
            (both, Many, Absent, None, "400 crawler-error: InvalidCrawlerPriceValue"),
            (none, One(b"USD 0.01"), Absent, None, "402 crawler-error: MissingCrawlerPrice crawler-price: USD 0.01"),
            (Signed::Verified { covers_exact: false, covers_max: true }, One(b"USD 0.01"), Absent, None,
                "402 crawler-error: MissingCrawlerPrice crawler-price: USD 0.01"),
            (Signed::Verified { covers_exact: false, covers_max: true }, Absent, One(b"USD 0.01"), None,
                "forward, charge USD 0.01"),
            (Signed::Absent, Absent, Absent, None, "400 crawler-error: StrongAuthRequired"),
            (Signed::Absent, One(b"USD 0.01"), Absent, None, "400 crawler-error: StrongAuthRequired"),
            (Signed::Unverified, One(b"USD 0.01"), Absent, None, "400 crawler-error: StrongAuthRequired"),
            (Signed::Invalid, One(b"USD 0.01"), Absent, None, "400 crawler-error: InvalidSignature"),
            (Signed::Absent, Absent, Absent, Some(b"protocol=cloudflare, pricing=in-band"), "forward, crawler-price: USD 0.01"),
            (both, One(b"USD 0.01"), Absent, Some(b"protocol=cloudflare,pricing=bypass"), "forward untouched"),
            (Signed::Absent, Absent, Absent, Some(b"protocol=cloudflare, pricing=zone-default"), "forward untouched"),
            (Signed::Absent, Absent, Absent, Some(b"protocol=other, pricing=bypass"), "400 crawler-error: StrongAuthRequired"),
            (Signed::Absent, Absent, Absent, Some(b"pricing=later"), "400 crawler-error: StrongAuthRequired"),
        ];
        for (signed, exact, max, cf, want) in cases {
            let req = CrawlerRequest { signed: *signed, exact: *exact, max: *max, cloudflare: *cf };
            assert_eq!(show(decide(usd("USD 0.01"), &req)), *want, "{req:?}");
        }
    }

    #[test]
    fn codes_have_cloudflares_statuses() {
        let got: Vec<String> = CrawlerError::ALL.iter().map(|e| format!("{} {}", e.as_str(), e.status())).collect();
        assert_eq!(
            got,
            [
                "CrawlerForbidden 403",
                "StrongAuthRequired 400",
                "InvalidSignature 400",
                "InvalidCrawlerPriceValue 400",
                "MissingCrawlerPrice 402",
                "InvalidCrawlerExactPrice 402",
                "InvalidCrawlerMaxPrice 402",
                "ConflictingPriceHeaders 400",
                "InternalError 500",
            ]
        );
    }

    #[test]
    fn only_2xx_is_charged() {
        let got: Vec<bool> = [200, 204, 206, 299, 301, 304, 404, 500, 199].map(charged_status).to_vec();
        assert_eq!(got, [true, true, true, true, false, false, false, false, false]);
    }
}
