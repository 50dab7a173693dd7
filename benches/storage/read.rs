//! `storage/read/*`: reading 1,000,000 100-byte records back from offset 0, visiting every
//! key and value (zero-copy slices) with `visit_records` and with `read` followed by a walk of
//! the returned bytes, and as fetch uses it (whole batches); against a raw
//! `BufReader` read-back of the same file, memcpy of its bytes, and the `commitlog` crate.
//! Also `storage/offset_for_timestamp`.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;
use std::time::Duration;

use commitlog::message::{MessageBuf, MessageSet};
use commitlog::{CommitLog, LogOptions, ReadLimit};
use criterion::{Criterion, Throughput, black_box, criterion_group};
use logd_storage::batch::BatchIter;
use logd_storage::{FsyncPolicy, LogConfig, Offset, PartitionLog};

use super::{VALUE_LEN, batch};

const RECORDS: usize = 1_000_000;
const PER_BATCH: usize = 1000;
const FETCH_BYTES: usize = 1 << 20;

fn build_log(dir: &Path) -> PartitionLog {
    let config = LogConfig {
        fsync: FsyncPolicy::Never,
        retention_ms: None,
        ..LogConfig::default()
    };
    let log = PartitionLog::open(dir, config.clone()).expect("open");
    for i in 0..RECORDS / PER_BATCH {
        log.append(&mut batch(PER_BATCH, (i * PER_BATCH) as i64))
            .expect("append");
    }
    log.close().expect("close");
    PartitionLog::open(dir, config).expect("reopen")
}

/// Reads everything with `read`, calling `visit` on each returned buffer; returns the count
/// `visit` reports.
fn read_all(log: &PartitionLog, mut visit: impl FnMut(&[u8]) -> (i64, usize)) -> usize {
    let (mut next, mut seen) = (0, 0);
    while next < log.high_watermark().0 {
        let bytes = log.read(Offset(next), FETCH_BYTES).expect("read");
        let (after, count) = visit(&bytes);
        next = after;
        seen += count;
    }
    seen
}

fn read(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = build_log(dir.path());
    let segment = dir.path().join("00000000000000000000.log");
    let file_bytes = std::fs::read(&segment).expect("read segment");

    let mut group = c.benchmark_group("storage/read/1M-x100B");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(4));
    group.throughput(Throughput::Elements(RECORDS as u64));
    group.bench_function("logd/visit-every-record", |b| {
        b.iter(|| {
            let (mut next, mut count, mut sum) = (0, 0, 0usize);
            while next < log.high_watermark().0 {
                next = log
                    .visit_records(Offset(next), FETCH_BYTES, |record| {
                        sum +=
                            record.value.map_or(0, <[u8]>::len) + record.key.map_or(0, <[u8]>::len);
                        count += 1;
                        true
                    })
                    .expect("visit")
                    .0;
            }
            black_box(sum);
            assert_eq!(count, RECORDS);
        })
    });
    group.bench_function("logd/read-then-iterate-every-record", |b| {
        b.iter(|| {
            let visited = read_all(&log, |bytes| {
                let (mut next, mut count, mut sum) = (0, 0, 0usize);
                for item in BatchIter::new(bytes, 0) {
                    let (_, batch) = item.expect("batch");
                    for record in batch.records(1 << 20).expect("records").iter() {
                        let record = record.expect("record");
                        sum +=
                            record.value.map_or(0, <[u8]>::len) + record.key.map_or(0, <[u8]>::len);
                        count += 1;
                    }
                    next = batch.header.next_offset();
                }
                black_box(sum);
                (next, count)
            });
            assert_eq!(visited, RECORDS);
        })
    });
    group.bench_function("logd/fetch-whole-batches-1MiB", |b| {
        b.iter(|| {
            read_all(&log, |bytes| {
                let last = BatchIter::new(bytes, 0)
                    .last()
                    .expect("a batch")
                    .expect("valid")
                    .1
                    .header;
                black_box(bytes.len());
                (
                    last.next_offset(),
                    (last.next_offset() - last.base_offset) as usize,
                )
            })
        })
    });
    group.bench_function("baseline/raw-bufreader-read-back", |b| {
        b.iter(|| {
            let mut reader = BufReader::new(File::open(&segment).expect("open"));
            let mut buf = vec![0u8; 64 << 10];
            let mut total = 0;
            loop {
                let n = reader.read(&mut buf).expect("read");
                if n == 0 {
                    break;
                }
                total += n;
                black_box(&buf[..n]);
            }
            assert_eq!(total, file_bytes.len());
        })
    });
    group.bench_function("baseline/memcpy", |b| {
        let mut copy = vec![0u8; file_bytes.len()];
        b.iter(|| {
            copy.copy_from_slice(&file_bytes);
            black_box(&copy);
        })
    });
    let commitlog_dir = tempfile::tempdir().expect("temp dir");
    let mut clog = CommitLog::new(LogOptions::new(commitlog_dir.path())).expect("open commitlog");
    let mut messages = MessageBuf::default();
    for _ in 0..PER_BATCH {
        messages.push([b'v'; VALUE_LEN]).expect("push");
    }
    for _ in 0..RECORDS / PER_BATCH {
        clog.append(&mut messages).expect("append");
    }
    clog.flush().expect("flush");
    group.bench_function("commitlog/visit-every-record", |b| {
        b.iter(|| {
            let (mut next, mut count, mut sum) = (0u64, 0usize, 0usize);
            while count < RECORDS {
                let buf = clog
                    .read(next, ReadLimit::max_bytes(FETCH_BYTES))
                    .expect("read");
                for message in buf.iter() {
                    sum += message.payload().len();
                    count += 1;
                    next = message.offset() + 1;
                }
            }
            black_box(sum);
        })
    });
    group.finish();

    let mut group = c.benchmark_group("storage/offset_for_timestamp");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(3));
    let mut target = 0i64;
    group.bench_function("1M-records", |b| {
        b.iter(|| {
            target = (target + 7_919) % RECORDS as i64;
            assert_eq!(
                log.offset_for_timestamp(target).expect("lookup"),
                Some(Offset(target))
            );
        })
    });
    group.finish();
}

criterion_group!(benches, read);
