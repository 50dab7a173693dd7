//! `storage/clean/*`: one cleaning pass (`PartitionLog::clean`) over 2,000,000 records of 100
//! bytes whose keys are 1,000,000 distinct ones, each written twice, in sealed 64 MiB segments
//! (so the pass maps a million keys and rewrites every segment to half its size), against a
//! raw sequential read of the same segment files: the cleaner's ceiling. Each sample cleans a
//! fresh copy of the dirty log.

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, black_box, criterion_group};
use logd_storage::batch::{BatchBuilder, Compression};
use logd_storage::{CleanOptions, FsyncPolicy, LogConfig, Offset, PartitionLog};

use super::VALUE_LEN;

const KEYS: usize = 1_000_000;
const RECORDS: usize = 2 * KEYS;
const PER_BATCH: usize = 1000;

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 64 << 20,
        fsync: FsyncPolicy::Never,
        retention_ms: None,
        ..LogConfig::default()
    }
}

/// The dirty log in `dir`: every key twice, all of it sealed.
fn build_log(dir: &Path) -> u64 {
    let log = PartitionLog::open(dir, config()).expect("open");
    let value = [b'v'; VALUE_LEN];
    for b in 0..RECORDS / PER_BATCH {
        let mut builder = BatchBuilder::new(Compression::None);
        for i in 0..PER_BATCH {
            let key = format!("key-{:07}", (b * PER_BATCH + i) % KEYS);
            builder.push(1, Some(key.as_bytes()), Some(&value), &[]);
        }
        log.append(&mut builder.build(0).expect("encode"))
            .expect("append");
    }
    log.roll().expect("seal the last segment");
    let size = log.size_bytes();
    log.close().expect("close");
    size
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("list") {
        let entry = entry.expect("entry");
        if entry.file_name() != ".lock" {
            std::fs::copy(entry.path(), to.join(entry.file_name())).expect("copy");
        }
    }
}

fn clean(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let dirty = dir.path().join("dirty");
    let bytes = build_log(&dirty);
    let segments: Vec<_> = std::fs::read_dir(&dirty)
        .expect("list")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();

    let mut group = c.benchmark_group("storage/clean/1M-keys-x2");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(30));
    group.throughput(Throughput::Bytes(bytes));
    group.bench_function("raw-sequential-read", |b| {
        let mut buffer = vec![0u8; 1 << 20];
        b.iter(|| {
            let mut total = 0;
            for path in &segments {
                let mut file = std::fs::File::open(path).expect("open");
                loop {
                    let n = file.read(&mut buffer).expect("read");
                    if n == 0 {
                        break;
                    }
                    total += n;
                }
            }
            black_box(total)
        })
    });
    let copy = dir.path().join("copy");
    group.bench_function("logd/clean", |b| {
        b.iter_batched(
            || {
                let _ = std::fs::remove_dir_all(&copy);
                copy_dir(&dirty, &copy);
                PartitionLog::open(&copy, config()).expect("open the copy")
            },
            |log| {
                let report = log
                    .clean(&CleanOptions {
                        now_ms: 10,
                        min_compaction_lag_ms: 0,
                        delete_retention_ms: 0,
                        key_map_bytes: 128 << 20,
                        first_dirty: Offset(0),
                    })
                    .expect("clean");
                assert_eq!(report.records_removed, KEYS as u64);
                assert!(!report.key_map_full, "the map holds a million keys");
                log
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

criterion_group!(benches, clean);
