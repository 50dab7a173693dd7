//! Simulated power cuts at every storage operation of a workload that appends (as an idempotent
//! producer, retrying some batches), rolls, writes checkpoints, deletes by retention and by
//! DeleteRecords, and reopens. After each cut, under each crash mode, the reopened log must
//! hold every acknowledged record, must not start below an acknowledged deletion, serve no corrupt record, never give an offset to different data, and
//! still recognise retries of the last acknowledged batches (its producer state and snapshots
//! survived), also when a file cache of two descriptors closes and reopens files between
//! operations. Deliberately broken logs must fail the same checker.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use super::*;
use crate::log::Bugs;
use crate::{CachedFs, CrashMode, SimFs, SplitMix64, Storage};

const DIR: &str = "/data/orders-0";

fn crash_config() -> LogConfig {
    LogConfig {
        segment_bytes: 1500,
        index_interval_bytes: 100,
        checkpoint_interval_bytes: 700,
        retention_bytes: Some(3000),
        ..small_config()
    }
}

/// The workload's idempotent producer.
const PRODUCER: i64 = 7;

/// What the workload did before the power went: every value it tried to write, by the offset
/// it would get, the offsets whose append returned Ok, and the acknowledged batches as
/// (bytes as sent, base offset) for retries.
#[derive(Debug, Default)]
struct History {
    attempted: BTreeMap<i64, Vec<u8>>,
    acked: Vec<i64>,
    acked_batches: Vec<(Vec<u8>, i64)>,
    /// The highest offset an acknowledged DeleteRecords deleted below.
    deleted_before: i64,
}

/// `values` as one batch of the workload's producer, starting at `sequence`.
fn producer_batch(values: &[Vec<u8>], ts: i64, sequence: i32) -> Vec<u8> {
    let mut builder = BatchBuilder::new(Compression::None).producer(PRODUCER, 0, sequence);
    for (i, v) in values.iter().enumerate() {
        builder.push(ts + i as i64, None, Some(v), &[]);
    }
    builder.build(0).unwrap()
}

/// Runs a deterministic workload on `fs` until it finishes or the power is cut.
/// The workload on `fs`, through a file cache of `max_open` descriptors when given (so files
/// are closed and reopened between operations).
fn workload(fs: &SimFs, seed: u64, bugs: Bugs, max_open: Option<usize>) -> History {
    let mut rng = SplitMix64::new(seed);
    let mut history = History::default();
    let storage: Arc<dyn Storage> = match max_open {
        Some(n) => Arc::new(CachedFs::new(Arc::new(fs.clone()), n)),
        None => Arc::new(fs.clone()),
    };
    let open =
        || PartitionLog::open_with_bugs(storage.clone(), Path::new(DIR), crash_config(), bugs);
    let Ok(mut log) = open() else { return history };
    let mut sequence = 0;
    for step in 0..60 {
        match rng.below(13) {
            3 if !history.acked_batches.is_empty() => {
                let back = rng.below(history.acked_batches.len().min(4) as u64) as usize;
                let (sent, at) = &history.acked_batches[history.acked_batches.len() - 1 - back];
                match log.append(&mut sent.clone()) {
                    Ok(info) => assert!(
                        info.duplicate && info.base_offset.0 == *at,
                        "retry of the batch at {at} answered {info:?}"
                    ),
                    Err(_) => return history,
                }
            }
            0 => {
                if log.roll().is_err() {
                    return history;
                }
            }
            1 => {
                if log.apply_retention(0).is_err() {
                    return history;
                }
            }
            4 => {
                let start = log.log_start_offset().0;
                let to = start + rng.below((log.high_watermark().0 - start + 1) as u64) as i64;
                match log.delete_records_before(Offset(to)) {
                    Ok(new_start) => {
                        assert_eq!(new_start.0, to.max(start));
                        history.deleted_before = history.deleted_before.max(to);
                    }
                    Err(_) => return history,
                }
            }
            2 => {
                drop(log);
                match open() {
                    Ok(reopened) => log = reopened,
                    Err(_) => return history,
                }
            }
            _ => {
                let count = 1 + rng.below(4) as usize;
                let values: Vec<Vec<u8>> = (0..count)
                    .map(|i| {
                        format!("s{seed}-{step}-{i}-{}", "p".repeat(rng.below(60) as usize))
                            .into_bytes()
                    })
                    .collect();
                let first = log.end_offset().0;
                for (i, v) in values.iter().enumerate() {
                    history.attempted.insert(first + i as i64, v.clone());
                }
                let sent = producer_batch(&values, step, sequence);
                match log.append(&mut sent.clone()) {
                    Ok(info) => {
                        assert_eq!(info.base_offset.0, first);
                        history.acked.extend(first..first + count as i64);
                        history.acked_batches.push((sent, first));
                        sequence += count as i32;
                    }
                    Err(_) => return history,
                }
            }
        }
    }
    history
}

/// Reopens a crash image and lists every broken promise.
fn check(image: SimFs, history: &History) -> Vec<String> {
    let log = match PartitionLog::open_with(Arc::new(image), DIR, crash_config()) {
        Ok(log) => log,
        // A log that was never durably created may legitimately be absent, but then nothing
        // can have been acknowledged.
        Err(e) => return vec![format!("reopen failed: {e}")],
    };
    let mut violations = Vec::new();
    let start = log.log_start_offset().0;
    if start < history.deleted_before {
        violations.push(format!(
            "records below {} were deleted, yet the log starts at {start}",
            history.deleted_before
        ));
    }
    let records = match read_all(&log, start) {
        Ok(records) => records,
        Err(e) => return vec![format!("read failed: {e}")],
    };
    for &offset in &history.acked {
        if offset >= start && !records.contains_key(&offset) {
            violations.push(format!(
                "acknowledged offset {offset} lost (log start {start}, end {})",
                log.end_offset()
            ));
        }
    }
    for (offset, (_, value)) in &records {
        if history.attempted.get(offset) != Some(value) {
            violations.push(format!("offset {offset} holds data never written there"));
        }
    }
    // Retries of the last acknowledged batches (at most one unacknowledged batch may follow
    // them, so four of them are among the five the producer state remembers), those still in
    // the log: the open forgets a producer whose batches were all deleted.
    let recent = history.acked_batches.len().saturating_sub(4);
    for (sent, at) in history.acked_batches[recent..]
        .iter()
        .filter(|(_, at)| *at >= start)
    {
        match log.append(&mut sent.clone()) {
            Ok(info) if info.duplicate && info.base_offset.0 == *at => {}
            other => violations.push(format!(
                "retry of the acknowledged batch at {at} after recovery: {other:?}"
            )),
        }
    }
    let end = log.end_offset().0;
    if let Some(&last) = records.keys().next_back()
        && last + 1 != end
    {
        violations.push(format!(
            "end offset {end} does not follow the last record {last}"
        ));
    }
    match log.append(&mut batch_of(&[b"after-crash".to_vec()], 0)) {
        Ok(info) if info.base_offset.0 == end => {}
        other => violations.push(format!("append after recovery: {other:?}")),
    }
    // Recovery must leave a directory that the next open trusts as it is.
    let image = log.storage_for_tests();
    if let Err(e) = log.close() {
        violations.push(format!("close after recovery: {e}"));
    }
    match PartitionLog::open_with(image, DIR, crash_config()) {
        Ok(again) => {
            let report = again.recovery_report();
            if report.scanned_bytes != 0
                || report.rebuilt_indexes != 0
                || report.truncated_bytes != 0
            {
                violations.push(format!(
                    "second open after a clean close repaired again: {report:?}"
                ));
            }
            if again.end_offset().0 != end + 1 {
                violations.push(format!(
                    "second open lost the post-recovery append: end {}",
                    again.end_offset()
                ));
            }
        }
        Err(e) => violations.push(format!("second open failed: {e}")),
    }
    violations
}

/// Cuts the power after each operation of the workload in turn; returns (crash states
/// checked, violations found).
fn enumerate(seed: u64, bugs: Bugs, modes: &[CrashMode]) -> (usize, Vec<String>) {
    enumerate_with(seed, bugs, modes, None)
}

fn enumerate_with(
    seed: u64,
    bugs: Bugs,
    modes: &[CrashMode],
    max_open: Option<usize>,
) -> (usize, Vec<String>) {
    let total_ops = {
        let fs = SimFs::new();
        workload(&fs, seed, bugs, max_open);
        fs.ops()
    };
    let mut states = 0;
    let mut violations = Vec::new();
    for cut in 0..=total_ops {
        let fs = SimFs::new();
        fs.cut_power_after(cut);
        let history = workload(&fs, seed, bugs, max_open);
        for (m, &mode) in modes.iter().enumerate() {
            states += 1;
            let image = fs.crash_image(mode, cut * 31 + m as u64);
            for v in check(image, &history) {
                violations.push(format!("seed {seed}, cut after op {cut}, {mode:?}: {v}"));
            }
        }
    }
    (states, violations)
}

const ALL_MODES: [CrashMode; 3] = [
    CrashMode::DropUnsynced,
    CrashMode::KeepSomeUnsynced,
    CrashMode::TearTail,
];

/// Crash states checked over `seeds` of the correct log, `max_open` descriptors shared by its
/// files; fails on any violation.
fn states_without_violations(seeds: &[u64], max_open: Option<usize>) -> usize {
    let mut states = 0;
    for &seed in seeds {
        let (n, violations) = enumerate_with(seed, Bugs::default(), &ALL_MODES, max_open);
        assert!(
            violations.is_empty(),
            "{} violations, first: {:#?}",
            violations.len(),
            &violations[..violations.len().min(5)]
        );
        states += n;
    }
    states
}

#[test]
fn no_acknowledged_record_is_lost_at_any_crash_point() {
    let states = states_without_violations(&[1, 2, 3], None);
    assert!(states >= 2000, "only {states} crash states checked");
}

#[test]
fn no_acknowledged_record_is_lost_when_every_operation_reopens_its_file() {
    // Two descriptors for a log's three files per segment, its checkpoint and snapshots:
    // nearly every operation closes a file (syncing it if written) and reopens another.
    let states = states_without_violations(&[1, 2], Some(2));
    assert!(states >= 1000, "only {states} crash states checked");
}

#[test]
fn the_checker_catches_acknowledging_before_fsync() {
    let bugs = Bugs {
        ack_before_fsync: true,
        ..Bugs::default()
    };
    let (_, violations) = enumerate(1, bugs, &[CrashMode::DropUnsynced]);
    assert!(
        violations.iter().any(|v| v.contains("lost")),
        "acking before fsync must lose acknowledged records in some crash state"
    );
}

#[test]
fn the_checker_catches_a_missing_directory_fsync() {
    let bugs = Bugs {
        skip_dir_sync: true,
        ..Bugs::default()
    };
    let (_, violations) = enumerate(2, bugs, &[CrashMode::DropUnsynced]);
    assert!(
        !violations.is_empty(),
        "without directory fsyncs, segments or checkpoints must vanish in some crash state"
    );
}

#[test]
fn the_checker_catches_a_deletion_whose_new_start_was_not_recorded() {
    let bugs = Bugs {
        delete_records_unrecorded: true,
        ..Bugs::default()
    };
    let caught = [1, 2, 3].into_iter().any(|seed| {
        let (_, violations) = enumerate(seed, bugs, &[CrashMode::DropUnsynced]);
        violations
            .iter()
            .any(|v| v.contains("were deleted, yet the log starts"))
    });
    assert!(
        caught,
        "a deletion whose start is not checkpointed must come undone in some crash state"
    );
}
