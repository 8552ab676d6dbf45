//! Who is really asking: verifies the crawler a request claims to be, from
//! the operator's published IP ranges ([`ranges`], [`lists`]), from
//! forward-confirmed reverse DNS ([`rdns`]) and from Web Bot Auth
//! signatures ([`wba`], [`keys`]), and reports a
//! [`crawlgate_policy::verification::Verification`] for the policy to act on.
//!
//! Everything here that does I/O runs off the request path or under a
//! timeout; a request never waits on a lookup longer than its budget.

pub mod keys;
pub mod lists;
pub mod ranges;
pub mod rdns;
pub mod wba;
