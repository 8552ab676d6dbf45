//! Memory held by the compiled benchmark policy (the one `decide` runs
//! on), measured with a counting global allocator: bytes allocated minus
//! bytes freed across `load`, with the result still alive (what a loaded
//! policy costs; the source TOML is not counted), and the allocations of a
//! round of decisions (none expected). For comparison, the same robots.txt parsed by
//! texting_robots for one agent.
//!
//! Run: `cargo bench -p crawlgate-policy --bench memory`.

// A bench that cannot set up has nothing to measure, so it panics.
#![allow(clippy::panic)]

use std::alloc::System;

use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

mod common;

fn kib(b: isize) -> String {
    format!("{:.1} KiB", b as f64 / 1024.0)
}

fn main() {
    // `cargo bench` passes `--bench`; nothing to parse.
    let toml = common::policy_toml();
    // A first load initialises process-wide statics (the built-in catalog,
    // read for `enforce = "block"` warnings), which are not the policy's.
    drop(crawlgate_policy::load(&toml, "bench.toml"));
    let region = Region::new(GLOBAL);
    let loaded = crawlgate_policy::load(&toml, "bench.toml");
    let stats = region.change();
    let held = stats.bytes_allocated as isize - stats.bytes_deallocated as isize;
    let Ok(loaded) = loaded else { panic!("bench policy does not load") };
    let policy = &loaded.policy;
    let robots = policy.robots_txt().to_string();
    println!(
        "compiled policy: {} groups, {} tokens, {} rules; TOML {} bytes, robots.txt {} bytes",
        policy.stats().groups,
        policy.tokens().count(),
        policy.stats().rules,
        toml.len(),
        robots.len()
    );
    println!(
        "held after load (Loaded alive): {} ({} bytes) in {} live allocations; {} allocations during load, {} allocated in total",
        kib(held),
        held,
        stats.allocations as isize - stats.deallocations as isize,
        stats.allocations,
        kib(stats.bytes_allocated as isize)
    );
    // The decision path allocates nothing (canonical paths, as the proxy
    // passes them after `normalize_request_target`).
    let region = Region::new(GLOBAL);
    let mut disallowed = 0;
    for (ua, _) in common::USER_AGENTS {
        for path in common::PATHS {
            disallowed += usize::from(!policy.decide(ua, path).allowed);
        }
    }
    let s = region.change();
    println!(
        "decide() x {}: {} allocations ({disallowed} disallowed)",
        common::USER_AGENTS.len() * common::PATHS.len(),
        s.allocations + s.reallocations
    );
    // texting_robots keeps only the chosen agent's rules.
    for agent in ["GPTBot", "Googlebot", "Mozilla"] {
        let region = Region::new(GLOBAL);
        let robot = texting_robots::Robot::new(agent, robots.as_bytes());
        let s = region.change();
        let held = s.bytes_allocated as isize - s.bytes_deallocated as isize;
        println!(
            "texting_robots Robot::new({agent}): held {} ({})",
            kib(held),
            if robot.is_ok() { "ok" } else { "error" }
        );
        drop(robot);
    }
    drop(loaded);
}
