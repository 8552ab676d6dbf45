//! A reload with the origin's robots.txt merged (issue 21 item 5: a
//! reload was cubic in the merged origin groups; 1,000 took 4.7 s): merge,
//! snapshot compile and `Metrics::policy_loaded`, with an origin file of
//! 10,000 groups (the first `robots_txt.origin_max_groups`, 500 by default,
//! are merged), one of 500, and 10,000 groups all merged
//! (`origin_max_groups = 100000`: linear, no longer cubic).
//!
//! `cargo bench -p crawlgate-proxy --bench reload`

// `criterion_group!` defines an undocumented public function; a bench
// that cannot set up has nothing to measure, so it panics.
#![allow(missing_docs, clippy::panic)]

use std::hint::black_box;

use crawlgate_policy::{load, Policy};
use crawlgate_proxy::bench::Reload;
use criterion::{criterion_group, criterion_main, Criterion};

const POLICY: &str = "[upstream]\nservers = [\"127.0.0.1:8000\"]\n\n[robots_txt]\norigin = \"merge\"\n\n\
[[group]]\nname = \"ai\"\ncategories = [\"ai-training\"]\ndisallow = [\"/\"]\nenforce = \"block\"\n\n\
[[group]]\nuser_agents = [\"*\"]\ndisallow = [\"/private/\"]\nenforce = \"log\"\n";

/// An origin robots.txt of `n` groups, each for its own token.
fn origin(n: usize, salt: &str) -> Vec<u8> {
    let mut out = String::new();
    for i in 0..n {
        out.push_str(&format!("User-agent: {salt}{i}\nDisallow: /{i}/\n\n"));
    }
    out.into_bytes()
}

fn policy(extra: &str) -> Policy {
    let src = POLICY.replace("origin = \"merge\"\n", &format!("origin = \"merge\"\n{extra}"));
    match load(&src, "bench.toml") {
        Ok(l) => l.policy,
        Err(e) => panic!("{e}"),
    }
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("reload");
    group.sample_size(20);
    for (name, n, extra, merged) in [
        ("origin_groups/500", 500, "", 500),
        ("origin_groups/10000", 10_000, "", 500),
        ("origin_groups/10000_all_merged", 10_000, "origin_max_groups = 100000\n", 10_000),
    ] {
        let p = policy(extra);
        let mut reload = match Reload::new(p.clone()) {
            Ok(r) => r,
            Err(e) => panic!("{e}"),
        };
        // Two origin copies with different tokens, alternated: every
        // reload drops the previous copy's tokens.
        let copies = [origin(n, "A"), origin(n, "B")];
        assert_eq!(reload.reload(&p, &copies[0]), Ok(merged));
        let mut i = 0;
        group.bench_function(name, |b| {
            b.iter(|| {
                i += 1;
                black_box(reload.reload(&p, black_box(&copies[i % 2])))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
