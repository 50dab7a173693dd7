use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;
use crate::batch::BatchIter;
use crate::{CrashMode, Error, SimFs, Storage};
use std::path::Path;

fn values(prefix: &str, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| format!("{prefix}-{i}").into_bytes())
        .collect()
}

#[test]
fn append_assigns_offsets_and_reads_return_the_batch_holding_the_offset() {
    let dir = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(dir.path(), small_config()).unwrap();
    let a = log.append(&mut batch_of(&values("a", 3), 100)).unwrap();
    let b = log.append(&mut batch_of(&values("b", 2), 200)).unwrap();
    assert_eq!((a.base_offset, a.last_offset), (Offset(0), Offset(2)));
    assert_eq!((b.base_offset, b.last_offset), (Offset(3), Offset(4)));
    assert_eq!(log.end_offset(), Offset(5));
    assert_eq!(log.durable_end_offset(), Offset(5));

    // Offset 1 is in the middle of the first batch: the whole batch comes back.
    let bytes = log.read(Offset(1), 1).unwrap();
    let records = Record::decode_all(&bytes, 1 << 20).unwrap();
    assert_eq!(
        records.iter().map(|r| r.offset).collect::<Vec<_>>(),
        vec![0, 1, 2],
        "at least one batch, even over max_bytes"
    );
    assert_eq!(records[1].value.as_deref(), Some(&b"a-1"[..]));

    assert!(
        log.read(Offset(5), 1024).unwrap().is_empty(),
        "reading at the end is empty, not an error"
    );
    let err = log.read(Offset(6), 1024).unwrap_err();
    assert!(
        matches!(
            err,
            Error::OffsetOutOfRange {
                requested: 6,
                log_start: 0,
                log_end: 5
            }
        ),
        "{err}"
    );
    assert!(matches!(
        log.read(Offset(-1), 10),
        Err(Error::OffsetOutOfRange { .. })
    ));
    let all = read_all(&log, 0).unwrap();
    assert_eq!(all.len(), 5);
    assert_eq!(all[&4], (201, b"b-1".to_vec()));
}

#[test]
fn a_clean_close_reopens_without_scanning_and_appends_continue() {
    let dir = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(dir.path(), small_config()).unwrap();
    for i in 0..40 {
        log.append(&mut batch_of(&values(&format!("r{i}"), 3), i * 10))
            .unwrap();
    }
    assert!(log.segment_count() > 1, "small segments must have rolled");
    let before = read_all(&log, 0).unwrap();
    log.close().unwrap();

    let log = PartitionLog::open(dir.path(), small_config()).unwrap();
    let report = *log.recovery_report();
    assert!(report.had_checkpoint);
    assert_eq!(report.scanned_bytes, 0);
    assert_eq!(report.rebuilt_indexes, 0);
    assert_eq!(read_all(&log, 0).unwrap(), before);
    assert_eq!(
        log.append(&mut batch_of(&values("next", 1), 999))
            .unwrap()
            .base_offset,
        Offset(120)
    );
}

#[test]
fn every_offset_reads_back_from_its_own_batch_across_segments() {
    let dir = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(dir.path(), small_config()).unwrap();
    for i in 0..60 {
        log.append(&mut batch_of(
            &values(&format!("v{i}"), 1 + (i as usize % 4)),
            i,
        ))
        .unwrap();
    }
    for offset in 0..log.end_offset().0 {
        let bytes = log.read(Offset(offset), 1).unwrap();
        let records = Record::decode_all(&bytes, 1 << 20).unwrap();
        assert!(
            records.first().unwrap().offset <= offset && records.last().unwrap().offset >= offset
        );
    }
}

#[test]
fn offset_for_timestamp_matches_a_brute_force_search() {
    let dir = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(dir.path(), small_config()).unwrap();
    let mut rng = crate::SplitMix64::new(7);
    for _ in 0..80 {
        // Timestamps wander backwards and forwards, as producers' clocks do.
        let ts = 1_000 + rng.below(500) as i64;
        log.append(&mut batch_of(&values("t", 1 + rng.below(3) as usize), ts))
            .unwrap();
    }
    let all = read_all(&log, 0).unwrap();
    for target in (990..1_510).step_by(7) {
        let expected = all
            .iter()
            .find(|(_, (ts, _))| *ts >= target)
            .map(|(o, _)| Offset(*o));
        assert_eq!(
            log.offset_for_timestamp(target).unwrap(),
            expected,
            "timestamp {target}"
        );
    }
}

#[test]
fn retention_deletes_whole_old_segments_and_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        retention_bytes: Some(4096),
        retention_ms: Some(1_000),
        ..small_config()
    };
    let log = PartitionLog::open(dir.path(), config.clone()).unwrap();
    for i in 0..100 {
        log.append(&mut batch_of(&values("x", 2), 10_000 + i))
            .unwrap();
    }
    let size_before = log.size_bytes();
    let report = log.apply_retention(10_000).unwrap();
    assert!(report.deleted_segments > 0);
    assert!(log.size_bytes() >= 4096 && log.size_bytes() < size_before);
    let start = log.log_start_offset();
    assert_eq!(report.log_start_offset, start);
    assert!(matches!(
        log.read(Offset(start.0 - 1), 100),
        Err(Error::OffsetOutOfRange { log_start, .. }) if log_start == start.0
    ));
    // Time retention: with `now` far ahead, every sealed segment goes; the active one stays.
    let report = log.apply_retention(1_000_000).unwrap();
    assert!(report.deleted_segments > 0);
    assert_eq!(log.segment_count(), 1);
    let start = log.log_start_offset();
    drop(log);
    let log = PartitionLog::open(dir.path(), config).unwrap();
    assert_eq!(log.log_start_offset(), start, "the log start is durable");
    assert_eq!(
        read_all(&log, start.0).unwrap().len() as i64,
        log.end_offset().0 - start.0
    );
}

#[test]
fn a_second_open_of_the_same_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let _log = PartitionLog::open(dir.path(), small_config()).unwrap();
    let err = PartitionLog::open(dir.path(), small_config()).unwrap_err();
    assert!(matches!(err, Error::Locked { .. }), "{err}");
}

#[test]
fn bad_input_is_rejected_whole_and_does_not_poison() {
    let dir = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(dir.path(), small_config()).unwrap();
    let mut good = batch_of(&values("g", 2), 5);
    let mut bad = good.clone();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    let mut both = [good.clone(), bad].concat();
    assert!(matches!(
        log.append(&mut both),
        Err(Error::ChecksumMismatch { .. })
    ));
    assert!(matches!(
        log.append(&mut [1, 2, 3]),
        Err(Error::Truncated { .. })
    ));
    assert!(matches!(
        log.append(&mut []),
        Err(Error::InvalidBatch { .. })
    ));
    assert_eq!(log.end_offset(), Offset(0), "nothing partial was stored");
    assert!(!log.is_poisoned());
    assert_eq!(log.append(&mut good).unwrap().base_offset, Offset(0));
}

#[test]
fn an_oversized_batch_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        max_batch_bytes: 200,
        ..small_config()
    };
    let log = PartitionLog::open(dir.path(), config).unwrap();
    let mut big = batch_of(&[vec![7u8; 300]], 1);
    assert!(matches!(
        log.append(&mut big),
        Err(Error::BatchTooLarge { max: 200, .. })
    ));
}

#[test]
fn a_waiting_reader_is_woken_by_an_append() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(PartitionLog::open(dir.path(), small_config()).unwrap());
    assert!(
        !log.wait_for_data(Offset(0), Duration::from_millis(20)),
        "times out with no data"
    );
    let waiter = {
        let log = log.clone();
        std::thread::spawn(move || {
            let started = Instant::now();
            let woke = log.wait_for_data(Offset(0), Duration::from_secs(30));
            (woke, started.elapsed())
        })
    };
    std::thread::sleep(Duration::from_millis(50));
    log.append(&mut batch_of(&values("w", 1), 1)).unwrap();
    let (woke, waited) = waiter.join().unwrap();
    assert!(woke);
    assert!(
        waited < Duration::from_secs(10),
        "woken by the append, not the timeout: {waited:?}"
    );
}

#[test]
fn concurrent_appends_get_distinct_contiguous_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(
        PartitionLog::open(
            dir.path(),
            LogConfig {
                segment_bytes: 64 << 10,
                ..small_config()
            },
        )
        .unwrap(),
    );
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                (0..100)
                    .map(|i| {
                        let info = log
                            .append(&mut batch_of(&[format!("{t}-{i}").into_bytes()], i))
                            .unwrap();
                        assert!(
                            log.durable_end_offset() > info.last_offset,
                            "acked before durable"
                        );
                        (info.base_offset.0, format!("{t}-{i}").into_bytes())
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut acked: Vec<_> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    acked.sort();
    assert_eq!(
        acked.iter().map(|(o, _)| *o).collect::<Vec<_>>(),
        (0..400).collect::<Vec<_>>()
    );
    let all = read_all(&log, 0).unwrap();
    for (offset, value) in acked {
        assert_eq!(all[&offset].1, value);
    }
}

#[test]
fn damage_to_a_sealed_segment_is_reported_with_file_and_position() {
    let dir = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(dir.path(), small_config()).unwrap();
    for i in 0..30 {
        log.append(&mut batch_of(&values("s", 3), i)).unwrap();
    }
    log.close().unwrap();
    let first = dir.path().join("00000000000000000000.log");
    let mut bytes = std::fs::read(&first).unwrap();
    bytes[300] ^= 0xff;
    std::fs::write(&first, &bytes).unwrap();

    // Opening trusts sealed segments (no scan), so it succeeds; reading the damage fails loudly.
    let log = PartitionLog::open(dir.path(), small_config()).unwrap();
    let err = read_all(&log, 0).unwrap_err();
    match err {
        Error::Corrupted { path, position, .. } => {
            assert_eq!(path, first);
            assert!(
                position <= 300,
                "position {position} is the damaged batch's start"
            );
        }
        other => panic!("expected Corrupted, got {other}"),
    }

    // Visiting the records reports the same damage, after the records of the batches before
    // it and none from the damaged batch on.
    let damaged_at = BatchIter::new(&bytes, 0)
        .map(|item| item.unwrap())
        .find(|(at, batch)| (*at..at + batch.bytes.len()).contains(&300))
        .map(|(at, batch)| (at, batch.header.base_offset))
        .unwrap();
    let mut visited = Vec::new();
    let err = log
        .visit_records(Offset(0), 1 << 20, |r| {
            visited.push(r.offset);
            true
        })
        .unwrap_err();
    match err {
        Error::Corrupted { path, position, .. } => {
            assert_eq!((path, position), (first, damaged_at.0 as u64));
        }
        other => panic!("expected Corrupted, got {other}"),
    }
    assert_eq!(visited, (0..damaged_at.1).collect::<Vec<_>>());
}

/// Flips every bit of the byte at `position` in place (same inode), as damage on the device
/// would, so a mapping of the file sees it.
fn flip_byte(path: &Path, position: u64) {
    use std::os::unix::fs::FileExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    let mut byte = [0u8];
    file.read_exact_at(&mut byte, position).unwrap();
    file.write_all_at(&[byte[0] ^ 0xff], position).unwrap();
}

#[test]
fn a_batch_is_crc_checked_once_per_process_and_again_after_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(dir.path(), small_config()).unwrap();
    for i in 0..30 {
        log.append(&mut batch_of(&values("s", 3), i)).unwrap();
    }
    let first = dir.path().join("00000000000000000000.log");
    let original = std::fs::read(&first).unwrap();
    let served_byte = |log: &PartitionLog| log.read(Offset(0), 1 << 20).map(|b| b[300]);

    // Appended batches were checked on append, so a fetch serves them without reading them.
    flip_byte(&first, 300);
    assert_eq!(served_byte(&log).unwrap(), !original[300]);
    log.close().unwrap();

    // A reopened log trusts nothing it has not checked: the first read finds the damage.
    let log = PartitionLog::open(dir.path(), small_config()).unwrap();
    assert!(matches!(served_byte(&log), Err(Error::Corrupted { .. })));

    // Repaired, the first read checks it; damage after that goes unseen until a reopen.
    flip_byte(&first, 300);
    assert_eq!(served_byte(&log).unwrap(), original[300]);
    flip_byte(&first, 300);
    assert_eq!(served_byte(&log).unwrap(), !original[300]);
    log.close().unwrap();
    let log = PartitionLog::open(dir.path(), small_config()).unwrap();
    assert!(matches!(served_byte(&log), Err(Error::Corrupted { .. })));
}

#[test]
fn visiting_records_skips_those_below_the_offset_and_stops_when_asked() {
    let log = PartitionLog::open_with(Arc::new(SimFs::new()), "/p", small_config()).unwrap();
    for i in 0..10 {
        log.append(&mut batch_of(&values("v", 4), i)).unwrap();
    }
    let mut seen = Vec::new();
    let next = log
        .visit_records(Offset(5), 1 << 20, |r| {
            seen.push((r.offset, r.value.unwrap().to_vec()));
            seen.len() < 3
        })
        .unwrap();
    assert_eq!(next, Offset(8));
    let expected: Vec<(i64, Vec<u8>)> = (5..8)
        .map(|o| (o, values("v", 4)[o as usize % 4].clone()))
        .collect();
    assert_eq!(seen, expected);
    let end = log.end_offset();
    assert_eq!(log.visit_records(end, 1 << 20, |_| true).unwrap(), end);
}

#[test]
fn missing_or_short_indexes_are_rebuilt_from_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(dir.path(), small_config()).unwrap();
    for i in 0..30 {
        log.append(&mut batch_of(&values("i", 3), i * 3)).unwrap();
    }
    let before = read_all(&log, 0).unwrap();
    log.close().unwrap();
    std::fs::remove_file(dir.path().join("00000000000000000000.index")).unwrap();
    let time_index = dir.path().join("00000000000000000000.timeindex");
    let len = std::fs::metadata(&time_index).unwrap().len();
    std::fs::File::options()
        .write(true)
        .open(&time_index)
        .unwrap()
        .set_len(len - 12)
        .unwrap();

    let log = PartitionLog::open(dir.path(), small_config()).unwrap();
    assert_eq!(log.recovery_report().rebuilt_indexes, 1);
    assert_eq!(read_all(&log, 0).unwrap(), before);
    assert_eq!(log.offset_for_timestamp(30).unwrap(), Some(Offset(30)));
}

#[test]
fn the_same_log_runs_on_the_simulated_file_system() {
    let fs = SimFs::new();
    let storage: Arc<dyn Storage> = Arc::new(fs.clone());
    let log = PartitionLog::open_with(storage.clone(), "/data/p0", small_config()).unwrap();
    log.append(&mut batch_of(&values("sim", 2), 1)).unwrap();
    drop(log);
    let log = PartitionLog::open_with(storage, "/data/p0", small_config()).unwrap();
    assert_eq!(read_all(&log, 0).unwrap().len(), 2);
}

#[test]
fn segments_roll_by_record_age() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        segment_ms: Some(100),
        segment_bytes: 1 << 20,
        ..small_config()
    };
    let log = PartitionLog::open(dir.path(), config.clone()).unwrap();
    log.append(&mut batch_of(&values("a", 1), 1_000)).unwrap();
    log.append(&mut batch_of(&values("b", 1), 1_100)).unwrap();
    assert_eq!(
        log.segment_count(),
        1,
        "100 ms after the first batch is not yet too old"
    );
    log.append(&mut batch_of(&values("c", 1), 1_101)).unwrap();
    assert_eq!(
        log.segment_count(),
        2,
        "a batch 101 ms after the segment's first rolls it"
    );
    // The age is measured from the new segment's own first batch, also after a reopen.
    drop(log);
    let log = PartitionLog::open(dir.path(), config).unwrap();
    log.append(&mut batch_of(&values("d", 1), 1_201)).unwrap();
    assert_eq!(log.segment_count(), 2);
    log.append(&mut batch_of(&values("e", 1), 1_202)).unwrap();
    assert_eq!(log.segment_count(), 3);
}

#[test]
fn reconfigured_limits_apply_to_the_next_append_and_retention() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        segment_bytes: 1 << 20,
        ..small_config()
    };
    let log = PartitionLog::open(dir.path(), config.clone()).unwrap();
    for i in 0..40 {
        log.append(&mut batch_of(&values("a", 2), 1_000 + i))
            .unwrap();
    }
    assert_eq!(log.segment_count(), 1);
    // Smaller segments, a batch limit and time retention, from now on.
    let limits = LogConfig {
        segment_bytes: 2048,
        max_batch_bytes: 200,
        retention_ms: Some(100),
        fsync: FsyncPolicy::Never,
        index_interval_bytes: 1,
        ..config.clone()
    };
    log.reconfigure(&limits).unwrap();
    let now = log.config();
    assert_eq!((now.segment_bytes, now.max_batch_bytes), (2048, 200));
    assert_eq!(now.retention_ms, Some(100));
    assert_eq!(
        now.fsync,
        FsyncPolicy::Always,
        "the fsync policy stays as opened"
    );
    assert_eq!(now.index_interval_bytes, config.index_interval_bytes);
    assert!(matches!(
        log.append(&mut batch_of(&[vec![7u8; 300]], 2_000)),
        Err(Error::BatchTooLarge { max: 200, .. })
    ));
    for i in 0..40 {
        log.append(&mut batch_of(&values("b", 2), 2_000 + i))
            .unwrap();
    }
    assert!(log.segment_count() > 2, "rolled at the new size");
    assert!(log.apply_retention(10_000).unwrap().deleted_segments > 0);
    // A bad value is refused and changes nothing.
    let bad = LogConfig {
        segment_bytes: 10,
        ..limits
    };
    assert!(matches!(
        log.reconfigure(&bad),
        Err(Error::InvalidConfig { .. })
    ));
    assert_eq!(log.config().segment_bytes, 2048);
}

#[test]
fn a_new_log_writes_no_checkpoint_until_it_holds_records() {
    let fs = SimFs::new();
    let storage: Arc<dyn Storage> = Arc::new(fs.clone());
    let log = PartitionLog::open_with(storage, "/data/p0", small_config()).unwrap();
    let names = fs.list_dir(Path::new("/data/p0")).unwrap();
    assert!(
        !names
            .iter()
            .any(|n| n.contains("checkpoint") || n.ends_with(".snapshot")),
        "a new log holds only its first segment: {names:?}"
    );
    // Power cut before anything was appended: the reopen changes nothing on disk.
    let image = fs.crash_image(CrashMode::DropUnsynced, 1);
    let before = image.ops();
    let reopened =
        PartitionLog::open_with(Arc::new(image.clone()), "/data/p0", small_config()).unwrap();
    assert_eq!(reopened.high_watermark(), Offset(0));
    assert_eq!(image.ops(), before, "reopening an empty log wrote");
    drop(reopened);
    // Appended to and cut again before any checkpoint: recovery scans from byte 0 (rule 6).
    log.append(&mut batch_of(&values("a", 3), 1)).unwrap();
    let image = fs.crash_image(CrashMode::DropUnsynced, 2);
    let reopened = PartitionLog::open_with(Arc::new(image), "/data/p0", small_config()).unwrap();
    assert!(!reopened.recovery_report().had_checkpoint);
    assert!(reopened.recovery_report().scanned_bytes > 0);
    assert_eq!(read_all(&reopened, 0).unwrap().len(), 3);
}

#[test]
fn a_clean_close_writes_nothing_when_nothing_changed_since_the_last_checkpoint() {
    let fs = SimFs::new();
    let storage: Arc<dyn Storage> = Arc::new(fs.clone());
    let log = PartitionLog::open_with(storage.clone(), "/data/p0", small_config()).unwrap();
    log.append(&mut batch_of(&values("a", 3), 1)).unwrap();
    log.close().unwrap();
    let log = PartitionLog::open_with(storage.clone(), "/data/p0", small_config()).unwrap();
    let before = fs.ops();
    log.close().unwrap();
    assert_eq!(fs.ops(), before, "an idle partition's close wrote");
    // An append since does get its checkpoint: the next open scans nothing.
    let log = PartitionLog::open_with(storage.clone(), "/data/p0", small_config()).unwrap();
    log.append(&mut batch_of(&values("b", 1), 9)).unwrap();
    log.close().unwrap();
    let log = PartitionLog::open_with(storage, "/data/p0", small_config()).unwrap();
    assert_eq!(log.recovery_report().scanned_bytes, 0);
    assert_eq!(read_all(&log, 0).unwrap().len(), 4);
}

/// The end offset readers see (the high watermark under `interval` and `never`) only moves
/// forward, and once the appends return it covers every one of them: concurrent appenders
/// publish their ends in the order the log took their batches. Published out of order, an
/// appender preempted just after writing set the end back below a later batch, which stayed
/// invisible until the next append (for the last batches of a run: for ever).
#[test]
fn the_published_end_offset_never_moves_back_under_concurrent_appends() {
    const WRITERS: usize = 8;
    const APPENDS: usize = 20_000;
    let log = Arc::new(
        PartitionLog::open_with(
            Arc::new(SimFs::new()),
            "/p",
            LogConfig {
                segment_bytes: 1 << 30,
                checkpoint_interval_bytes: 1 << 30,
                fsync: FsyncPolicy::Never,
                ..small_config()
            },
        )
        .unwrap(),
    );
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let (log, done) = (log.clone(), done.clone());
        std::thread::spawn(move || {
            let mut last = 0;
            while !done.load(std::sync::atomic::Ordering::Acquire) {
                let now = log.high_watermark().0;
                assert!(
                    now >= last,
                    "the high watermark moved back from {last} to {now}"
                );
                last = now;
            }
        })
    };
    let writers: Vec<_> = (0..WRITERS)
        .map(|_| {
            let log = log.clone();
            std::thread::spawn(move || {
                let batch = batch_of(&[b"v".to_vec()], 0);
                for _ in 0..APPENDS {
                    log.append(&mut batch.clone()).unwrap();
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().unwrap();
    }
    done.store(true, std::sync::atomic::Ordering::Release);
    watcher.join().unwrap();
    assert_eq!(log.high_watermark().0, (WRITERS * APPENDS) as i64);
}
