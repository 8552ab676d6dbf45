//! Memory held by the in-process store with 1,000,000 distinct client
//! networks (one key each, all active), measured with a counting global
//! allocator: bytes allocated minus bytes freed, divided by the keys held.
//! Also the store at its bound: 2,000,000 networks into a store of
//! 1,000,000 keys.
//!
//! Run: `cargo bench -p crawlgate-limits --bench memory`.

// A bench that cannot set up has nothing to measure, so it panics.
#![allow(clippy::panic)]

use std::alloc::System;
use std::net::IpAddr;
use std::time::Duration;

use crawlgate_limits::Limiter;
use crawlgate_policy::limits::{GroupLimit, LimitKey, LimitSource, Network, Rate, Subject};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// One request from each of `n` /24 networks starting at 1.0.0.0.
fn fill(limiter: &Limiter, n: u32) {
    // 1/h: every key stays active for the whole run.
    let limit =
        GroupLimit { rate: Rate { count: 1, per: Duration::from_secs(3600) }, burst: 1, source: LimitSource::Rate };
    for i in 0..n {
        let ip = IpAddr::from((0x0100_0000u32 + (i << 8)).to_be_bytes());
        let key = LimitKey { host: None, subject: Subject::Network(Network::of(ip, 24, 56)), path: None };
        if !limiter.check_local(&key, &limit, std::time::Instant::now()).allowed() {
            panic!("network {i} refused on its first request");
        }
    }
}

fn measure(max_keys: usize, networks: u32) {
    let region = Region::new(GLOBAL);
    let limiter = Limiter::new(max_keys);
    fill(&limiter, networks);
    let stats = region.change();
    let held = stats.bytes_allocated as isize - stats.bytes_deallocated as isize;
    let keys = limiter.local().len();
    println!(
        "max_keys {max_keys}, {networks} networks: {keys} keys held, {:.1} MiB, {:.1} bytes/key, {} active keys evicted",
        held as f64 / (1024.0 * 1024.0),
        held as f64 / keys as f64,
        limiter.local().evicted()
    );
}

fn main() {
    // `cargo bench` passes `--bench`; nothing to parse.
    measure(1_000_000, 1_000_000);
    measure(10_000_000, 1_000_000);
    measure(1_000_000, 2_000_000);
}
