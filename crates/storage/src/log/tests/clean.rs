//! Key compaction: each key's latest record stays at its offset, older ones go, reads from a
//! removed offset get the next record that remains, tombstones stay until their delete
//! horizon, a full key map cleans in several passes, and a power cut at any storage operation
//! of a cleaning loses no record that should remain.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use super::*;
use crate::log::Bugs;
use crate::{CachedFs, CleanOptions, CrashMode, SimFs, SplitMix64, Storage};

const DIR: &str = "/data/table-0";

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 1024,
        index_interval_bytes: 100,
        checkpoint_interval_bytes: 300,
        ..small_config()
    }
}

fn options(now_ms: i64) -> CleanOptions {
    CleanOptions {
        now_ms,
        min_compaction_lag_ms: 0,
        delete_retention_ms: 1_000,
        key_map_bytes: 1 << 20,
        first_dirty: Offset(0),
    }
}

/// One batch of `(key, value)` records (a `None` value is a tombstone) at timestamp `ts`.
fn keyed(records: &[(&str, Option<&str>)], ts: i64, compression: Compression) -> Vec<u8> {
    let mut builder = BatchBuilder::new(compression);
    for (key, value) in records {
        builder.push(ts, Some(key.as_bytes()), value.map(str::as_bytes), &[]);
    }
    builder.build(0).unwrap()
}

/// Every record from the log start: offset to (key, value).
fn records(log: &PartitionLog) -> BTreeMap<i64, (String, Option<String>)> {
    records_from(log, log.log_start_offset().0)
}

/// Every record from `from` on, as a consumer reading from there gets them.
fn records_from(log: &PartitionLog, from: i64) -> BTreeMap<i64, (String, Option<String>)> {
    let mut out = BTreeMap::new();
    let mut next = from;
    while next < log.high_watermark().0 {
        let bytes = log.read(Offset(next), 1 << 16).unwrap();
        assert!(!bytes.is_empty(), "read at {next} returned nothing");
        // A batch emptied by cleaning moves the reader past its offsets without a record.
        let after = crate::batch::offset_after(&bytes).unwrap_or(next);
        for record in Record::decode_all(&bytes, 1 << 20).unwrap() {
            if record.offset >= next {
                let text = |b: Option<Bytes>| b.map(|b| String::from_utf8(b.to_vec()).unwrap());
                out.insert(
                    record.offset,
                    (text(record.key).unwrap(), text(record.value)),
                );
            }
        }
        assert!(after > next, "read at {next} made no progress");
        next = after;
    }
    out
}

/// Writes `rounds` rounds of keyed records over keys `k0..k{keys}` and rolls after each, so
/// all but the last segment are sealed; returns everything written, by offset.
fn fill(log: &PartitionLog, rounds: usize, keys: usize) -> BTreeMap<i64, (String, Option<String>)> {
    let mut written = BTreeMap::new();
    for round in 0..rounds {
        for batch in 0..4 {
            let values: Vec<(String, String)> = (0..3)
                .map(|i| {
                    let n = round * 12 + batch * 3 + i;
                    (format!("k{}", n % keys), format!("v{n}"))
                })
                .collect();
            let pairs: Vec<(&str, Option<&str>)> = values
                .iter()
                .map(|(k, v)| (k.as_str(), Some(v.as_str())))
                .collect();
            let codec = if batch % 2 == 0 {
                Compression::None
            } else {
                Compression::Lz4
            };
            let info = log.append(&mut keyed(&pairs, 1_000, codec)).unwrap();
            for (i, (k, v)) in values.into_iter().enumerate() {
                written.insert(info.base_offset.0 + i as i64, (k, Some(v)));
            }
        }
        log.roll().unwrap();
    }
    written
}

/// The latest record of each key in `written`.
fn latest(
    written: &BTreeMap<i64, (String, Option<String>)>,
) -> BTreeMap<i64, (String, Option<String>)> {
    let mut by_key = BTreeMap::new();
    for (offset, (key, _)) in written {
        by_key.insert(key.clone(), *offset);
    }
    by_key
        .into_values()
        .map(|offset| (offset, written[&offset].clone()))
        .collect()
}

#[test]
fn cleaning_keeps_each_keys_latest_record_at_its_offset() {
    let dir = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(dir.path(), config()).unwrap();
    let written = fill(&log, 5, 4);
    let end = log.end_offset();
    let before = log.size_bytes();

    let report = log.clean(&options(10_000)).unwrap();
    assert!(report.segments_rewritten > 0, "{report:?}");
    assert_eq!(
        report.records_removed,
        (written.len() - 4) as u64,
        "{report:?}"
    );
    assert_eq!(
        report.cleaned_up_to, end,
        "every sealed segment: {report:?}"
    );
    assert!(
        log.size_bytes() < before,
        "{} of {before} bytes",
        log.size_bytes()
    );
    assert_eq!(
        records(&log),
        latest(&written),
        "only the latest of each key"
    );
    assert_eq!(log.end_offset(), end, "offsets never move");

    // A removed offset has no record; a read from it (as `records` reads from offset 0) gets
    // the batches after it, up to the next record that remains.
    assert_eq!(log.timestamp_of(Offset(0)).unwrap(), None);
    let first_kept = *latest(&written).keys().next().unwrap();
    assert!(first_kept > 0);

    // Appends go on at the same end; a second pass has nothing to drop.
    let info = log.append(&mut keyed(&[("k0", Some("new"))], 2_000, Compression::None));
    assert_eq!(info.unwrap().base_offset, end);
    let again = log.clean(&options(20_000)).unwrap();
    assert_eq!(again.segments_rewritten, 0, "{again:?}");

    // Reopened (indexes rebuilt from the cleaned files where needed), the same records.
    let kept = records(&log);
    log.close().unwrap();
    let log = PartitionLog::open(dir.path(), config()).unwrap();
    assert_eq!(records(&log), kept);
}

#[test]
fn tombstones_stay_until_their_delete_horizon_then_go() {
    let dir = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(dir.path(), config()).unwrap();
    let none = Compression::None;
    log.append(&mut keyed(&[("a", Some("1")), ("b", Some("1"))], 1, none))
        .unwrap();
    log.append(&mut keyed(&[("a", None)], 2, none)).unwrap();
    log.roll().unwrap();
    let expect = |log: &PartitionLog, want: &[(i64, &str, Option<&str>)]| {
        let want: BTreeMap<i64, (String, Option<String>)> = want
            .iter()
            .map(|(o, k, v)| (*o, (k.to_string(), v.map(str::to_owned))))
            .collect();
        assert_eq!(records(log), want);
    };

    // The first cleaning keeps the tombstone and stamps its batch: now (100) + 1,000.
    let first = log.clean(&options(100)).unwrap();
    assert_eq!(first.tombstones_removed, 0);
    expect(&log, &[(1, "b", Some("1")), (2, "a", None)]);
    let bytes = log.read(Offset(2), 1 << 16).unwrap();
    let stamped = crate::batch::BatchHeader::parse(&bytes, 0).unwrap();
    assert_eq!(stamped.delete_horizon(), Some(1_100));
    let record = Record::decode_all(&bytes, 1 << 20).unwrap();
    assert_eq!(record[0].timestamp, 2, "the record's own timestamp stays");

    // Before the horizon it stays; at it, it goes (its batch stays, empty).
    log.clean(&options(1_099)).unwrap();
    expect(&log, &[(1, "b", Some("1")), (2, "a", None)]);
    let last = log.clean(&options(1_100)).unwrap();
    assert_eq!(last.tombstones_removed, 1, "{last:?}");
    expect(&log, &[(1, "b", Some("1"))]);
    assert_eq!(log.end_offset(), Offset(3));
}

#[test]
fn a_full_key_map_cleans_in_passes_from_where_the_last_one_ended() {
    let dir = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(dir.path(), config()).unwrap();
    let written = fill(&log, 6, 40);
    let end = log.end_offset();
    // Room for twelve keys (98 bytes each as the map counts them): each pass maps about one
    // round's segment.
    let mut opts = CleanOptions {
        key_map_bytes: 12 * 98 + 50,
        ..options(10_000)
    };
    let mut passes = 0;
    loop {
        let report = log.clean(&opts).unwrap();
        passes += 1;
        assert!(
            report.cleaned_up_to > opts.first_dirty,
            "progress: {report:?}"
        );
        opts.first_dirty = report.cleaned_up_to;
        if !report.key_map_full {
            break;
        }
        assert!(passes < 50, "no end: {report:?}");
    }
    assert!(passes > 2, "the budget made several passes: {passes}");
    assert_eq!(opts.first_dirty, end);
    assert_eq!(records(&log), latest(&written));
}

#[test]
fn where_a_cleaning_ended_survives_a_restart_and_a_damaged_checkpoint_only_costs_a_rescan() {
    let dir = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(dir.path(), config()).unwrap();
    fill(&log, 5, 4);
    assert_eq!(log.cleaned_up_to(), Offset(0), "never cleaned");
    let end = log.end_offset();
    let report = log.clean(&options(10_000)).unwrap();
    assert_eq!(report.cleaned_up_to, end);
    assert_eq!(log.cleaned_up_to(), end);
    let kept = records(&log);
    log.close().unwrap();

    // Reopened, it knows where the last pass ended (so the next maps only what came after).
    let log = PartitionLog::open(dir.path(), config()).unwrap();
    assert_eq!(log.cleaned_up_to(), end);
    assert!(!log.recovery_report().damaged_cleaner_checkpoint);
    log.close().unwrap();

    // A damaged checkpoint is treated as absent: reported, the position back at 0, and a pass
    // from there keeps the same records.
    let path = dir.path().join(crate::cleaner_checkpoint::FILE_NAME);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[14] ^= 0xff;
    std::fs::write(&path, bytes).unwrap();
    let log = PartitionLog::open(dir.path(), config()).unwrap();
    assert!(log.recovery_report().damaged_cleaner_checkpoint);
    assert_eq!(log.cleaned_up_to(), Offset(0));
    let again = log.clean(&options(20_000)).unwrap();
    assert_eq!(again.cleaned_up_to, end);
    assert_eq!(log.cleaned_up_to(), end, "rewritten");
    assert_eq!(records(&log), kept);
}

#[test]
fn a_damaged_batch_in_the_clean_part_stops_the_pass_instead_of_being_rewritten_as_whole() {
    let dir = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(dir.path(), config()).unwrap();
    fill(&log, 3, 4);
    let first = log.clean(&options(10_000)).unwrap();
    // Newer values of the same keys: the next pass drops records from the clean part too.
    fill(&log, 2, 4);
    log.close().unwrap();

    // Change the last letter of the last value in every uncompressed batch holding records
    // in the clean part: the records still parse, only the CRC tells.
    let mut damaged = Vec::new();
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        let Some(base) = crate::segment::parse_log_name(&name) else {
            continue;
        };
        if base >= first.cleaned_up_to.0 {
            continue;
        }
        let mut bytes = std::fs::read(&path).unwrap();
        for item in crate::batch::BatchIter::new(&bytes.clone(), 0) {
            let (position, batch) = item.unwrap();
            if batch.header.record_count > 0
                && batch.header.compression().unwrap() == Compression::None
            {
                damaged.push(batch.header.base_offset);
                // The record's last byte is its header count; the one before, its value's.
                bytes[position + batch.bytes.len() - 2] ^= 0x55;
            }
        }
        std::fs::write(&path, bytes).unwrap();
    }
    assert!(!damaged.is_empty());

    let log = PartitionLog::open(dir.path(), config()).unwrap();
    let pass = log.clean(&CleanOptions {
        first_dirty: first.cleaned_up_to,
        ..options(20_000)
    });
    assert!(
        matches!(pass, Err(crate::Error::Corrupted { .. })),
        "{pass:?}"
    );
    // Still refused on read: the damage was not given a fresh checksum.
    assert!(log.read(Offset(damaged[0]), 1 << 16).is_err());
}

#[test]
fn an_idempotent_producers_retry_is_still_recognised_after_cleaning() {
    let dir = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(dir.path(), config()).unwrap();
    let batch = |value: &str, sequence: i32| {
        let mut builder = BatchBuilder::new(Compression::None).producer(9, 0, sequence);
        builder.push(1, Some(b"same"), Some(value.as_bytes()), &[]);
        builder.build(0).unwrap()
    };
    let sent: Vec<Vec<u8>> = (0..6).map(|i| batch(&format!("v{i}"), i)).collect();
    for b in &sent {
        log.append(&mut b.clone()).unwrap();
    }
    log.roll().unwrap();
    let report = log.clean(&options(10_000)).unwrap();
    assert_eq!(report.records_removed, 5);
    log.close().unwrap();
    // Reopened, the producer's last batch is found again (its batch stayed, as Kafka keeps a
    // producer's last batch so its state survives).
    let log = PartitionLog::open(dir.path(), config()).unwrap();
    let retry = log.append(&mut sent[5].clone()).unwrap();
    assert!(
        retry.duplicate && retry.base_offset == Offset(5),
        "{retry:?}"
    );
    let next = log.append(&mut batch("v6", 6)).unwrap();
    assert_eq!(next.base_offset, Offset(6));
}

/// One appended record as the model keeps it.
struct Appended {
    key: String,
    value: Option<String>,
    /// When it was appended (the model's clock, ms).
    at: i64,
}

#[test]
fn reads_from_any_offset_match_a_model_of_the_latest_value_per_key() {
    const RETENTION: i64 = 50;
    for seed in 0..40 {
        let mut rng = SplitMix64::new(seed);
        let log =
            PartitionLog::open_with(Arc::new(SimFs::new()), Path::new(DIR), config()).unwrap();
        let mut appended: BTreeMap<i64, Appended> = BTreeMap::new();
        let mut cleanings: Vec<i64> = Vec::new();
        let mut now = 0;
        for _ in 0..150 {
            now += 1 + rng.below(5) as i64;
            match rng.below(10) {
                0 => log.roll().unwrap(),
                1 => {
                    let opts = CleanOptions {
                        delete_retention_ms: RETENTION,
                        ..options(now)
                    };
                    log.clean(&opts).unwrap();
                    cleanings.push(now);
                }
                2 | 3 => {
                    let from = rng.below(log.end_offset().0 as u64 + 1) as i64;
                    let read = records_from(&log, from);
                    if let Err(e) = check_model(&appended, &read, from, &cleanings, RETENTION) {
                        panic!("seed {seed}, read from {from} at {now}: {e}");
                    }
                }
                _ => {
                    let records: Vec<(String, Option<String>)> = (0..1 + rng.below(4))
                        .map(|i| {
                            let key = format!("k{}", rng.below(8));
                            let value = (rng.below(5) != 0).then(|| format!("v{now}-{i}"));
                            (key, value)
                        })
                        .collect();
                    let pairs: Vec<(&str, Option<&str>)> = records
                        .iter()
                        .map(|(k, v)| (k.as_str(), v.as_deref()))
                        .collect();
                    let info = log
                        .append(&mut keyed(&pairs, now, Compression::None))
                        .unwrap();
                    for (i, (key, value)) in records.into_iter().enumerate() {
                        let at = now;
                        appended.insert(info.base_offset.0 + i as i64, Appended { key, value, at });
                    }
                }
            }
        }
    }
}

/// Whether `read` (a consumer's read from `from`) is what the model allows: only records that
/// were appended there, in order; each key's latest record at or after `from` present, unless
/// it is a tombstone that a cleaning may have dropped (one ran at least `retention` after an
/// earlier one that came after the tombstone); superseded records may be present or gone.
fn check_model(
    appended: &BTreeMap<i64, Appended>,
    read: &BTreeMap<i64, (String, Option<String>)>,
    from: i64,
    cleanings: &[i64],
    retention: i64,
) -> Result<(), String> {
    for (offset, record) in read {
        let Some(a) = appended.get(offset).filter(|_| *offset >= from) else {
            return Err(format!(
                "offset {offset} read, never appended there or below the start"
            ));
        };
        if (&a.key, &a.value) != (&record.0, &record.1) {
            return Err(format!(
                "offset {offset} holds {record:?}, not what was appended"
            ));
        }
    }
    let mut latest: BTreeMap<&str, i64> = BTreeMap::new();
    for (offset, a) in appended {
        latest.insert(&a.key, *offset);
    }
    for (key, offset) in latest {
        if offset < from || read.contains_key(&offset) {
            continue;
        }
        let a = &appended[&offset];
        let first_after = cleanings.iter().find(|&&c| c >= a.at);
        let may_be_gone = a.value.is_none()
            && first_after.is_some_and(|first| cleanings.iter().any(|&c| c >= first + retention));
        if !may_be_gone {
            return Err(format!(
                "the latest record of {key}, at {offset}, is missing"
            ));
        }
    }
    Ok(())
}

/// What the crash workload wrote: offset to (key, value), and the offsets acknowledged.
#[derive(Default)]
struct Written {
    attempted: BTreeMap<i64, (String, Option<String>)>,
    acked: Vec<i64>,
}

/// Appends keyed records, rolls and cleans, until done or the power is cut.
fn workload(fs: &SimFs, seed: u64, bugs: Bugs, max_open: Option<usize>) -> Written {
    let mut rng = SplitMix64::new(seed);
    let mut written = Written::default();
    let storage: Arc<dyn Storage> = match max_open {
        Some(n) => Arc::new(CachedFs::new(Arc::new(fs.clone()), n)),
        None => Arc::new(fs.clone()),
    };
    let Ok(log) = PartitionLog::open_with_bugs(storage, Path::new(DIR), config(), bugs) else {
        return written;
    };
    for step in 0..40 {
        if step % 10 == 9 {
            if log.roll().is_err() || log.clean(&options(step)).is_err() {
                return written;
            }
            continue;
        }
        let count = 1 + rng.below(3) as usize;
        let first = log.end_offset().0;
        let values: Vec<(String, String)> = (0..count)
            .map(|i| (format!("k{}", rng.below(5)), format!("s{seed}-{step}-{i}")))
            .collect();
        for (i, (k, v)) in values.iter().enumerate() {
            written
                .attempted
                .insert(first + i as i64, (k.clone(), Some(v.clone())));
        }
        let pairs: Vec<(&str, Option<&str>)> = values
            .iter()
            .map(|(k, v)| (k.as_str(), Some(v.as_str())))
            .collect();
        match log.append(&mut keyed(&pairs, step, Compression::None)) {
            Ok(_) => written.acked.extend(first..first + count as i64),
            Err(_) => return written,
        }
    }
    written
}

/// Reopens a crash image; every broken promise.
fn check(image: SimFs, written: &Written) -> Vec<String> {
    let storage: Arc<dyn Storage> = Arc::new(image);
    let log = match PartitionLog::open_with(storage.clone(), Path::new(DIR), config()) {
        Ok(log) => log,
        Err(e) => return vec![format!("reopen failed: {e}")],
    };
    let mut violations = Vec::new();
    let found = records(&log);
    for (offset, record) in &found {
        if written.attempted.get(offset) != Some(record) {
            violations.push(format!(
                "offset {offset} holds {record:?}, never written there"
            ));
        }
    }
    // Each key's latest acknowledged record must remain, whatever the cleaning did.
    let mut latest_acked: BTreeMap<&str, i64> = BTreeMap::new();
    for offset in &written.acked {
        latest_acked.insert(&written.attempted[offset].0, *offset);
    }
    for (key, offset) in latest_acked {
        if !found.contains_key(&offset) {
            violations.push(format!(
                "latest acknowledged record of {key} at {offset} lost"
            ));
        }
    }
    // The cleaner checkpoint is replaced atomically: a cut leaves the old or the new one.
    if log.recovery_report().damaged_cleaner_checkpoint {
        violations.push("the cleaner checkpoint was damaged".to_owned());
    }
    if log.cleaned_up_to() > log.end_offset() {
        violations.push(format!(
            "cleaned up to {:?}, past the end {:?}",
            log.cleaned_up_to(),
            log.end_offset()
        ));
    }
    let leftovers: Vec<String> = storage
        .list_dir(Path::new(DIR))
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".cleaned") || n.ends_with(".swap") || n.ends_with(".tmp"))
        .collect();
    if !leftovers.is_empty() {
        violations.push(format!("recovery left {leftovers:?}"));
    }
    violations
}

/// Cuts the power after each storage operation of the workload in turn, under every crash
/// mode; (crash states checked, the first violation found).
fn cut_everywhere(seeds: &[u64], bugs: Bugs, max_open: Option<usize>) -> (usize, Option<String>) {
    let mut states = 0;
    for &seed in seeds {
        let total = {
            let fs = SimFs::new();
            workload(&fs, seed, bugs, max_open);
            fs.ops()
        };
        for cut in 0..=total {
            let fs = SimFs::new();
            fs.cut_power_after(cut);
            let written = workload(&fs, seed, bugs, max_open);
            let modes = [
                CrashMode::DropUnsynced,
                CrashMode::KeepSomeUnsynced,
                CrashMode::TearTail,
            ];
            for (m, mode) in modes.into_iter().enumerate() {
                states += 1;
                let violations = check(fs.crash_image(mode, cut * 31 + m as u64), &written);
                if let Some(first) = violations.first() {
                    let at = format!("seed {seed}, cut after op {cut} of {total}, {mode:?}");
                    return (states, Some(format!("{at}: {first}")));
                }
            }
        }
    }
    (states, None)
}

#[test]
fn a_power_cut_at_any_step_of_a_cleaning_loses_no_record_that_should_remain() {
    let (states, violation) = cut_everywhere(&[1, 2], Bugs::default(), None);
    assert_eq!(violation, None);
    assert!(states >= 1000, "only {states} crash states checked");
}

#[test]
fn a_power_cut_during_a_cleaning_loses_nothing_when_every_operation_reopens_its_file() {
    // Two descriptors for the segments' files, the cleaned file, checkpoints and snapshots:
    // nearly every operation closes a file (syncing it if written) and reopens another.
    let (states, violation) = cut_everywhere(&[3], Bugs::default(), Some(2));
    assert_eq!(violation, None);
    assert!(states >= 500, "only {states} crash states checked");
}

#[test]
fn the_checker_catches_a_cleaned_segment_swapped_in_before_its_fsync() {
    let bugs = Bugs {
        skip_cleaned_sync: true,
        ..Bugs::default()
    };
    let (_, violation) = cut_everywhere(&[1, 2], bugs, None);
    assert!(
        violation.is_some(),
        "an unsynced cleaned segment must lose records in some crash"
    );
}
