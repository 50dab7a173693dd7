//! `storage/reopen/*`: opening a 1 GiB log after a clean close (no scan), and after a crash
//! that left 1, 16 or 64 MiB past the last recovery checkpoint (scan proportional to that tail,
//! not to the log).

use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group};
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

fn reopen(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    append_bytes(dir.path(), LOG_BYTES);
    let mut group = c.benchmark_group("storage/reopen/1GiB");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(3));
    group.bench_function("clean", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| {
                    let started = Instant::now();
                    let log = PartitionLog::open(dir.path(), config()).expect("open");
                    let elapsed = started.elapsed();
                    assert_eq!(log.recovery_report().scanned_bytes, 0);
                    drop(log);
                    elapsed
                })
                .sum()
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

criterion_group!(benches, reopen);
