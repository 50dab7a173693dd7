//! Idempotent producers through the partition log: duplicates answered with their original
//! offsets, refused batches storing nothing, and the state surviving a clean close, a crash, a
//! damaged snapshot and retention.

use std::path::Path;
use std::sync::Arc;

use super::*;
use crate::{CrashMode, Error, SimFs, Storage};

const DIR: &str = "/data/p-0";

/// A batch of `count` records from producer `id` (epoch 0) starting at `sequence`.
fn idempotent(id: i64, sequence: i32, count: usize, ts: i64) -> Vec<u8> {
    let mut builder = BatchBuilder::new(Compression::None).producer(id, 0, sequence);
    for i in 0..count {
        builder.push(
            ts + i as i64,
            None,
            Some(format!("{id}-{sequence}-{i}").as_bytes()),
            &[],
        );
    }
    builder.build(0).unwrap()
}

fn open(fs: &SimFs, config: LogConfig) -> PartitionLog {
    PartitionLog::open_with(Arc::new(fs.clone()), Path::new(DIR), config).unwrap()
}

#[test]
fn a_retry_stores_nothing_and_gets_the_original_offsets() {
    let fs = SimFs::new();
    let log = open(&fs, small_config());
    log.append(&mut batch_of(&[b"plain".to_vec()], 0)).unwrap();
    let first = log.append(&mut idempotent(7, 0, 3, 10)).unwrap();
    assert_eq!(
        (first.base_offset.0, first.last_offset.0, first.duplicate),
        (1, 3, false)
    );
    log.append(&mut idempotent(7, 3, 1, 20)).unwrap();
    let retry = log.append(&mut idempotent(7, 0, 3, 10)).unwrap();
    assert_eq!(
        (
            retry.base_offset.0,
            retry.last_offset.0,
            retry.batches,
            retry.duplicate
        ),
        (1, 3, 0, true)
    );
    assert_eq!(log.end_offset().0, 5, "the retry took no offsets");
    assert_eq!(read_all(&log, 0).unwrap().len(), 5);
    assert_eq!(
        log.producers(),
        vec![crate::ProducerInfo {
            producer_id: 7,
            epoch: 0,
            last_sequence: 3,
            last_timestamp: 20,
            last_offset: 4,
            coordinator_epoch: -1,
            txn_first_offset: None,
        }]
    );
}

#[test]
fn a_refused_batch_stores_nothing_and_the_log_stays_writable() {
    let fs = SimFs::new();
    let log = open(&fs, small_config());
    log.append(&mut idempotent(7, 0, 2, 0)).unwrap();
    let size = log.size_bytes();
    assert!(matches!(
        log.append(&mut idempotent(7, 5, 1, 0)),
        Err(Error::OutOfOrderSequence {
            producer_id: 7,
            expected: 2,
            received: 5,
            ..
        })
    ));
    assert!(matches!(
        log.append(&mut idempotent(7, -1, 1, 0)),
        Err(Error::InvalidProducerFields { sequence: -1, .. })
    ));
    assert_eq!(log.size_bytes(), size);
    assert!(!log.is_poisoned());
    assert_eq!(
        log.append(&mut idempotent(7, 2, 1, 0))
            .unwrap()
            .base_offset
            .0,
        2
    );
}

#[test]
fn producer_state_survives_a_clean_close_without_replaying_the_log() {
    let fs = SimFs::new();
    let log = open(&fs, small_config());
    for i in 0..40 {
        log.append(&mut idempotent(1 + i % 3, (i / 3) as i32, 1, i))
            .unwrap();
    }
    let before = log.producers();
    log.close().unwrap();
    let log = open(&fs, small_config());
    assert_eq!(log.recovery_report().replayed_producer_bytes, 0);
    assert_eq!(log.producers(), before);
    // The last batch of producer 1 (sequence 13, offset 39) is still recognised.
    let retry = log.append(&mut idempotent(1, 13, 1, 39)).unwrap();
    assert!(retry.duplicate && retry.base_offset.0 == 39, "{retry:?}");
}

#[test]
fn after_a_crash_the_state_is_rebuilt_from_the_snapshot_and_the_tail_only() {
    let fs = SimFs::new();
    let config = LogConfig {
        segment_bytes: 1 << 20,
        checkpoint_interval_bytes: 1 << 20,
        ..small_config()
    };
    let log = open(&fs, config.clone());
    for i in 0..20 {
        log.append(&mut idempotent(1, i * 2, 2, 0)).unwrap();
    }
    log.checkpoint().unwrap();
    let mut tail = 0;
    for i in 20..25 {
        let mut batch = idempotent(1, i * 2, 2, 0);
        tail += batch.len() as u64;
        log.append(&mut batch).unwrap();
    }
    // fsync = always: every acknowledged batch is durable, the crash loses nothing.
    let image = fs.crash_image(CrashMode::DropUnsynced, 1);
    drop(log);
    let log = open(&image, config);
    assert_eq!(log.recovery_report().replayed_producer_bytes, tail);
    let retry = log.append(&mut idempotent(1, 48, 2, 0)).unwrap();
    assert!(
        retry.duplicate,
        "the last batch before the crash is known: {retry:?}"
    );
}

#[test]
fn a_damaged_snapshot_is_absent_and_the_state_comes_from_the_log() {
    let fs = SimFs::new();
    let log = open(&fs, small_config());
    for i in 0..30 {
        log.append(&mut idempotent(4, i, 1, 0)).unwrap();
    }
    let end = log.end_offset().0;
    log.close().unwrap();
    let newest = Path::new(DIR).join(crate::producer::snapshot::file_name(end));
    let file = fs.open(&newest, false).unwrap();
    // A byte range inside the first producer; the CRC no longer matches.
    file.write_all_at(b"garbage!", 30).unwrap();
    let log = open(&fs, small_config());
    assert_eq!(log.recovery_report().damaged_snapshots, 1);
    assert!(log.recovery_report().replayed_producer_bytes > 0);
    let names = fs.list_dir(Path::new(DIR)).unwrap();
    assert!(
        !names.contains(&crate::producer::snapshot::file_name(end)),
        "the damaged snapshot was deleted: {names:?}"
    );
    assert!(log.append(&mut idempotent(4, 29, 1, 0)).unwrap().duplicate);
}

#[test]
fn retention_forgets_producers_whose_batches_it_deleted() {
    let fs = SimFs::new();
    let config = LogConfig {
        retention_bytes: Some(1),
        ..small_config()
    };
    let log = open(&fs, config.clone());
    for i in 0..10 {
        log.append(&mut idempotent(1, i * 4, 4, 0)).unwrap();
    }
    log.roll().unwrap();
    log.append(&mut idempotent(2, 0, 1, 0)).unwrap();
    assert_eq!(log.producer_count(), 2);
    log.apply_retention(0).unwrap();
    assert_eq!(
        log.producers()
            .iter()
            .map(|p| p.producer_id)
            .collect::<Vec<_>>(),
        vec![2]
    );
    log.close().unwrap();
    assert_eq!(open(&fs, config).producer_count(), 1);
}

#[test]
fn expired_producers_are_forgotten_and_accepted_afresh() {
    let fs = SimFs::new();
    let log = open(&fs, small_config());
    log.append(&mut idempotent(1, 0, 1, 1_000)).unwrap();
    log.append(&mut idempotent(2, 0, 1, 5_000)).unwrap();
    assert_eq!(log.expire_producers(6_000, 2_000), 1);
    assert_eq!(log.producers()[0].producer_id, 2);
    // Producer 1 comes back after its state expired: any sequence is accepted.
    assert!(
        !log.append(&mut idempotent(1, 9, 1, 7_000))
            .unwrap()
            .duplicate
    );
    log.close().unwrap();
    assert_eq!(open(&fs, small_config()).producer_count(), 2);
}
