//! `passthrough-tuned LISTEN UPSTREAM`: the pass-through of src/lib.rs with
//! crawlgate's process-level settings (mimalloc, 32 KiB client write
//! buffer), for the load test's equal-footing comparison.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    crawlgate_bench_passthrough::run(Some(32 * 1024));
}
