//! Arbitrary bytes as the aborted-transaction index of a log with one aborted transaction:
//! opening must succeed (an index that breaks its rules is rebuilt from the log), never panic,
//! and leave the log readable and appendable, markers included.
#![no_main]

use std::path::Path;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use logd_storage::batch::{BatchBuilder, Compression};
use logd_storage::{LogConfig, Marker, Offset, PartitionLog, SimFs, Storage};

fn batch(sequence: i32) -> Vec<u8> {
    let mut builder = BatchBuilder::new(Compression::None)
        .producer(1, 0, sequence)
        .transactional();
    builder.push(0, None, Some(b"v"), &[]);
    builder.build(0).unwrap()
}

fn abort() -> Marker {
    Marker {
        producer_id: 1,
        producer_epoch: 0,
        coordinator_epoch: 0,
        commit: false,
    }
}

fuzz_target!(|data: &[u8]| {
    let fs = SimFs::new();
    let log = PartitionLog::open_with(Arc::new(fs.clone()), "/p", LogConfig::default()).unwrap();
    log.append(&mut batch(0)).unwrap();
    log.append_marker(&abort(), 1).unwrap();
    let written = log.aborted_transactions(Offset(0), Offset(2));
    log.close().unwrap();
    let path = Path::new("/p/00000000000000000000.txnindex");
    let file = fs.open(path, true).unwrap();
    file.set_len(0).unwrap();
    file.write_all_at(data, 0).unwrap();
    let log = PartitionLog::open_with(Arc::new(fs), "/p", LogConfig::default())
        .expect("a damaged index never stops the log from opening");
    let read = log.aborted_transactions(Offset(0), Offset(i64::MAX));
    if log.recovery_report().rebuilt_txn_indexes == 1 {
        assert_eq!(read, written, "rebuilt from the log");
    }
    log.append(&mut batch(1)).unwrap();
    log.append_marker(&abort(), 2).unwrap();
    let _ = log.aborted_transactions(Offset(2), Offset(4));
    assert_eq!(log.last_stable_offset(), Offset(4));
});
