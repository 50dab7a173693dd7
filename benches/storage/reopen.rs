//! `storage/reopen/*`: opening a 1 GiB log after a clean close (no scan), and after a crash
//! that left 1, 16 or 64 MiB past the last recovery checkpoint (scan proportional to that tail,
//! not to the log); and a clean reopen of 1 GiB written by 10,000 idempotent producers, whose
//! state comes back from the producer snapshot without replaying the log.

use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group};
use logd_storage::batch::{BatchBuilder, Compression};
use logd_storage::{FsyncPolicy, LogConfig, PartitionLog};

use super::batch;

const LOG_BYTES: u64 = 1 << 30;

fn config() -> LogConfig {
    LogConfig {
        fsync: FsyncPolicy::Never,
        retention_ms: None,
        checkpoint_interval_bytes: 1 << 40,
        ..LogConfig::default()
    }
}

fn append_bytes(dir: &Path, bytes: u64) {
    let log = PartitionLog::open(dir, config()).expect("open");
    let mut template = batch(1000, 0);
    let mut written = 0;
    while written < bytes {
        log.append(&mut template).expect("append");
        written += template.len() as u64;
    }
    log.close().expect("close");
}

/// Opens the log in `dir` `iters` times, checking each with `check` (untimed); the total time
/// of the opens.
fn time_clean_reopens(dir: &Path, iters: u64, check: impl Fn(&PartitionLog)) -> Duration {
    (0..iters)
        .map(|_| {
            let started = Instant::now();
            let log = PartitionLog::open(dir, config()).expect("open");
            let elapsed = started.elapsed();
            check(&log);
            elapsed
        })
        .sum()
}

fn reopen(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    append_bytes(dir.path(), LOG_BYTES);
    let mut group = c.benchmark_group("storage/reopen/1GiB");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(3));
    group.bench_function("clean", |b| {
        b.iter_custom(|iters| {
            time_clean_reopens(dir.path(), iters, |log| {
                assert_eq!(log.recovery_report().scanned_bytes, 0);
            })
        })
    });
    let checkpoint = dir.path().join("recovery-checkpoint");
    for tail_mib in [1u64, 16, 64] {
        // A crash image: the checkpoint from before the tail was appended, the tail on disk.
        let before = std::fs::read(&checkpoint).expect("checkpoint");
        append_bytes(dir.path(), tail_mib << 20);
        group.bench_function(BenchmarkId::new("crash-tail-MiB", tail_mib), |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| {
                        std::fs::write(&checkpoint, &before).expect("restore checkpoint");
                        let started = Instant::now();
                        let log = PartitionLog::open(dir.path(), config()).expect("open");
                        let elapsed = started.elapsed();
                        assert!(log.recovery_report().scanned_bytes >= tail_mib << 20);
                        drop(log);
                        elapsed
                    })
                    .sum()
            })
        });
    }
    group.finish();
}

/// Idempotent producers writing the log of `reopen_with_producers`.
const PRODUCERS: i64 = 10_000;

fn reopen_with_producers(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    {
        let log = PartitionLog::open(dir.path(), config()).expect("open");
        let value = [b'v'; super::VALUE_LEN];
        let mut written = 0u64;
        let mut i = 0i64;
        while written < LOG_BYTES {
            // Round robin over the producers, 500 records a batch (about two batches each),
            // sequences consecutive.
            let (id, round) = (i % PRODUCERS, i / PRODUCERS);
            let mut builder =
                BatchBuilder::new(Compression::None).producer(id, 0, (round * 500) as i32);
            for r in 0..500 {
                builder.push(r, None, Some(&value), &[]);
            }
            let mut bytes = builder.build(0).expect("build");
            log.append(&mut bytes).expect("append");
            written += bytes.len() as u64;
            i += 1;
        }
        assert!(i >= PRODUCERS, "every producer wrote");
        log.close().expect("close");
    }
    let mut group = c.benchmark_group("storage/reopen/1GiB-10k-producers");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(3));
    group.bench_function("clean", |b| {
        b.iter_custom(|iters| {
            time_clean_reopens(dir.path(), iters, |log| {
                let report = log.recovery_report();
                assert_eq!(
                    (report.scanned_bytes, report.replayed_producer_bytes),
                    (0, 0)
                );
                assert_eq!(log.producer_count(), PRODUCERS as usize);
            })
        })
    });
    group.finish();
}

criterion_group!(benches, reopen, reopen_with_producers);
