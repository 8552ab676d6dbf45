//! `passthrough LISTEN UPSTREAM`: the bare pass-through (see src/lib.rs).

fn main() {
    crawlgate_bench_passthrough::run(None);
}
