//! The ledger's record path: charges committed per second with N
//! concurrent charges waiting, each for its own commit as a request does
//! (fsync included, on the disk the temp directory is on). One iteration
//! is N charges recorded at once; criterion's throughput is records/s.
//!
//! `cargo bench -p crawlgate-payment --bench ledger`

// criterion_group! generates undocumented public items; a setup that
// fails stops the benchmark.
#![allow(missing_docs, clippy::panic)]

use crawlgate_payment::ledger::{Ledger, Record};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

fn record(i: u64) -> Record {
    Record {
        charge_id: String::new(),
        time_ms: 1_764_093_845_120,
        request_id: format!("0a1b2c3d-{i}"),
        host: "example.com".into(),
        agent: "ExampleBot".into(),
        subject: "poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U".into(),
        path: format!("/small.html?r1-{i}"),
        amount_minor: 1,
        currency: "USD".into(),
        exponent: 2,
        dialect: "crawler-price".into(),
        settlement: None,
        evidence: None,
        status: 200,
        bytes: Some(1534),
        instance: "edge-1".into(),
        voids: None,
        void: None,
    }
}

fn record_path(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let ledger = Ledger::open(&dir.path().join("bench.sqlite")).unwrap_or_else(|e| panic!("{e}"));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut group = c.benchmark_group("ledger_record");
    group.sample_size(20);
    for waiters in [1u64, 32] {
        group.throughput(Throughput::Elements(waiters));
        group.bench_with_input(BenchmarkId::from_parameter(waiters), &waiters, |b, &n| {
            b.iter(|| {
                rt.block_on(async {
                    let tasks: Vec<_> = (0..n)
                        .map(|i| {
                            let l = ledger.clone();
                            tokio::spawn(async move { l.record(record(i)).await })
                        })
                        .collect();
                    for t in tasks {
                        t.await.unwrap_or_else(|e| panic!("{e}")).unwrap_or_else(|e| panic!("{e}"));
                    }
                })
            })
        });
    }
    group.finish();
}

criterion_group!(benches, record_path);
criterion_main!(benches);
