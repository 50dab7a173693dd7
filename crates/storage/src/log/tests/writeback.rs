//! Under `never` and `interval` the log asks the OS to start writing appended bytes back in
//! chunks, so a checkpoint, roll or close does not stall on one large flush; under `always`
//! it does not, since every append is flushed anyway.

use std::sync::Arc;
use std::time::Duration;

use super::super::append::WRITEBACK_CHUNK_BYTES;
use super::instrumented::Instrumented;
use super::*;

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
