//! Criterion benchmarks for logd, one binary with suites. Every figure comes with a baseline
//! measured in the same run on the same bytes, so results read as ratios.
//!
//! `cargo bench -p logd-benches` (all) or `cargo bench -p logd-benches -- storage/append`.

mod broker;
mod engine;
mod storage;

criterion::criterion_main!(
    storage::append::benches,
    storage::read::benches,
    storage::reopen::benches,
    storage::clean::benches,
    engine::benches,
    broker::benches,
);
