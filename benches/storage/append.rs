//! `storage/append/*`: appending 100-byte records in batches of 1, 100 and 1000 under each
//! fsync policy, against raw `BufWriter` writes of the same bytes and the `commitlog` crate.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::time::{Duration, Instant};

use commitlog::message::MessageBuf;
use commitlog::{CommitLog, LogOptions};
use criterion::{BenchmarkId, Criterion, Throughput, black_box, criterion_group};
use logd_storage::{FsyncPolicy, LogConfig, PartitionLog};

use super::{VALUE_LEN, batch};

/// Records per measured iteration, smaller where every append waits for a disk flush.
fn records_for(batch_records: usize, per_batch_fsync: bool) -> usize {
    match (batch_records, per_batch_fsync) {
        (1, true) => 2_000,
        (1, false) => 100_000,
        _ => 1_000_000,
    }
}

/// Times `run` on a fresh temp dir per iteration; setup and teardown are not timed.
fn timed_in_fresh_dir(iters: u64, mut run: impl FnMut(&std::path::Path) -> Duration) -> Duration {
    (0..iters)
        .map(|_| {
            let dir = tempfile::tempdir().expect("temp dir");
            run(dir.path())
        })
        .sum()
}

/// `fdatasync`s every file in `dir`, then the directory itself.
fn sync_every_file(dir: &std::path::Path) {
    for entry in std::fs::read_dir(dir).expect("list") {
        File::open(entry.expect("entry").path())
            .expect("open")
            .sync_data()
            .expect("fdatasync");
    }
    File::open(dir)
        .expect("open dir")
        .sync_all()
        .expect("fsync dir");
}

fn policies() -> [(&'static str, FsyncPolicy); 3] {
    [
        ("never", FsyncPolicy::Never),
        ("interval-1s", FsyncPolicy::Interval(Duration::from_secs(1))),
        ("always", FsyncPolicy::Always),
    ]
}

fn append(c: &mut Criterion) {
    for batch_records in [1usize, 100, 1000] {
        let mut group = c.benchmark_group(format!("storage/append/100B-x{batch_records}"));
        group
            .sample_size(10)
            .measurement_time(Duration::from_secs(4));
        let template = batch(batch_records, 0);
        for (name, policy) in policies() {
            let total = records_for(batch_records, policy == FsyncPolicy::Always);
            group.throughput(Throughput::Elements(total as u64));
            group.bench_function(BenchmarkId::new("logd", name), |b| {
                b.iter_custom(|iters| {
                    timed_in_fresh_dir(iters, |dir| {
                        let config = LogConfig {
                            fsync: policy,
                            ..LogConfig::default()
                        };
                        let log = PartitionLog::open(dir, config).expect("open");
                        let mut buf = template.clone();
                        let started = Instant::now();
                        for _ in 0..total / batch_records {
                            black_box(log.append(&mut buf).expect("append"));
                        }
                        // Every variant ends with the data on stable storage, as the raw
                        // baseline's final fdatasync does.
                        log.close().expect("close");
                        started.elapsed()
                    })
                })
            });
        }
        for (name, sync_each) in [
            ("raw-bufwriter+fdatasync-at-end", false),
            ("raw-bufwriter+fdatasync-per-batch", true),
        ] {
            let total = records_for(batch_records, sync_each);
            group.throughput(Throughput::Elements(total as u64));
            group.bench_function(BenchmarkId::new("baseline", name), |b| {
                b.iter_custom(|iters| {
                    timed_in_fresh_dir(iters, |dir| {
                        let started = Instant::now();
                        let mut out =
                            BufWriter::new(File::create(dir.join("raw.log")).expect("create"));
                        for _ in 0..total / batch_records {
                            out.write_all(&template).expect("write");
                            if sync_each {
                                out.flush().expect("flush");
                                out.get_ref().sync_data().expect("fdatasync");
                            }
                        }
                        out.flush().expect("flush");
                        out.get_ref().sync_data().expect("fdatasync");
                        started.elapsed()
                    })
                })
            });
        }
        let total = records_for(batch_records, false);
        group.throughput(Throughput::Elements(total as u64));
        for (name, sync_at_end) in [("no-fsync", false), ("fdatasync-at-end", true)] {
            group.bench_function(BenchmarkId::new("commitlog", name), |b| {
                let mut messages = MessageBuf::default();
                for _ in 0..batch_records {
                    messages.push([b'v'; VALUE_LEN]).expect("push");
                }
                b.iter_custom(|iters| {
                    timed_in_fresh_dir(iters, |dir| {
                        let mut opts = LogOptions::new(dir);
                        opts.segment_max_bytes(1 << 30);
                        let mut log = CommitLog::new(opts).expect("open commitlog");
                        let started = Instant::now();
                        for _ in 0..total / batch_records {
                            black_box(log.append(&mut messages).expect("append"));
                        }
                        // commitlog's flush writes its index but never fsyncs the log file: on
                        // its own its figure is page-cache speed, with no durability at all.
                        log.flush().expect("flush");
                        if sync_at_end {
                            // The same durability as logd's `close` and the raw baseline.
                            sync_every_file(dir);
                        }
                        started.elapsed()
                    })
                })
            });
        }
        group.finish();
    }
}

criterion_group!(benches, append);
