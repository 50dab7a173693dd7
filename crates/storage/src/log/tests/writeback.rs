//! Under `never` and `interval` the log asks the OS to start writing appended bytes back in
//! chunks, so a checkpoint, roll or close does not stall on one large flush; under `always`
//! it does not, since every append is flushed anyway.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::super::append::WRITEBACK_CHUNK_BYTES;
use super::instrumented::Instrumented;
use super::*;
use crate::Error;

/// Appends about 3.5 chunks' worth of 100 KB batches; returns the log's end position.
fn append_chunks(policy: FsyncPolicy) -> (Arc<Instrumented>, u64) {
    let storage = Arc::new(Instrumented::new(Duration::ZERO));
    let config = LogConfig {
        fsync: policy,
        retention_ms: None,
        ..LogConfig::default()
    };
    let log = PartitionLog::open_with(storage.clone(), "/p", config).unwrap();
    let values = vec![vec![b'v'; 10_000]; 10];
    let mut written = 0;
    while written < WRITEBACK_CHUNK_BYTES * 7 / 2 {
        let mut batch = batch_of(&values, 0);
        written += batch.len() as u64;
        log.append(&mut batch).unwrap();
    }
    (storage, written)
}

#[test]
fn never_and_interval_start_writeback_of_every_full_chunk_in_order() {
    for policy in [
        FsyncPolicy::Never,
        FsyncPolicy::Interval(Duration::from_secs(3600)),
    ] {
        let (storage, written) = append_chunks(policy);
        let calls = storage.seen.writebacks.lock().clone();
        assert_eq!(calls.len(), 3, "{policy:?}: {calls:?}");
        let mut covered = 0;
        for (path, pos, len) in calls {
            assert!(path.ends_with("00000000000000000000.log"), "{path:?}");
            assert_eq!(
                pos, covered,
                "{policy:?}: writeback ranges must be contiguous"
            );
            assert!(
                len >= WRITEBACK_CHUNK_BYTES,
                "{policy:?}: a range of {len} bytes"
            );
            covered += len;
        }
        assert!(
            written - covered < WRITEBACK_CHUNK_BYTES,
            "{policy:?}: {covered} of {written} bytes asked to be written back"
        );
    }
}

#[test]
fn always_leaves_writeback_to_its_fdatasyncs() {
    let (storage, _) = append_chunks(FsyncPolicy::Always);
    assert!(storage.seen.writebacks.lock().is_empty());
}

#[test]
fn a_failed_writeback_request_poisons_the_log_and_loses_nothing_acknowledged() {
    let storage = Arc::new(Instrumented::new(Duration::ZERO));
    let config = LogConfig {
        fsync: FsyncPolicy::Never,
        retention_ms: None,
        ..LogConfig::default()
    };
    let log = PartitionLog::open_with(storage.clone(), "/p", config.clone()).unwrap();
    let values = vec![vec![b'v'; 10_000]; 10];
    let mut acknowledged = 0;
    storage.seen.fail_writeback.store(true, Ordering::Relaxed);
    // The first request comes once a chunk has been written, within about 11 appends.
    let mut error = None;
    for _ in 0..50 {
        match log.append(&mut batch_of(&values, 0)) {
            Ok(info) => acknowledged = info.last_offset.0 + 1,
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    let error = error.expect("a failed writeback request must fail the append");
    // A writeback error means the device failed to store bytes the page cache held; as with a
    // failed fsync, the log must not carry on as if they were safe.
    assert!(error.to_string().contains("writeback"), "{error}");
    let refused = log.append(&mut batch_of(&values, 0)).unwrap_err();
    assert!(matches!(refused, Error::Poisoned { .. }), "{refused}");
    drop(log);

    storage.seen.fail_writeback.store(false, Ordering::Relaxed);
    let log = PartitionLog::open_with(storage, "/p", config).unwrap();
    assert!(acknowledged > 0);
    assert!(
        log.end_offset().0 >= acknowledged,
        "reopened at {} with {acknowledged} acknowledged",
        log.end_offset()
    );
    assert_eq!(read_all(&log, 0).unwrap().len() as i64, log.end_offset().0);
}
