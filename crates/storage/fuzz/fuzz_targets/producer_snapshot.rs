//! Arbitrary bytes as the newest producer snapshot of a log an idempotent producer wrote:
//! opening must succeed (a snapshot that does not decode is treated as absent and the state is
//! rebuilt from the log), never panic, and leave the log appendable.
#![no_main]

use std::path::Path;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use logd_storage::batch::{BatchBuilder, Compression};
use logd_storage::{LogConfig, PartitionLog, SimFs, Storage};

fn batch(sequence: i32) -> Vec<u8> {
    let mut builder = BatchBuilder::new(Compression::None).producer(1, 0, sequence);
    builder.push(0, None, Some(b"v"), &[]);
    builder.build(0).unwrap()
}

fuzz_target!(|data: &[u8]| {
    let fs = SimFs::new();
    let log = PartitionLog::open_with(Arc::new(fs.clone()), "/p", LogConfig::default()).unwrap();
    for sequence in 0..3 {
        log.append(&mut batch(sequence)).unwrap();
    }
    log.close().unwrap();
    // The snapshot the close wrote, at the end offset 3.
    let path = Path::new("/p/00000000000000000003.snapshot");
    let file = fs.open(path, true).unwrap();
    file.set_len(0).unwrap();
    file.write_all_at(data, 0).unwrap();
    let log = PartitionLog::open_with(Arc::new(fs), "/p", LogConfig::default())
        .expect("a damaged snapshot never stops the log from opening");
    if log.recovery_report().damaged_snapshots == 1 {
        // Rebuilt from the log: the last batch is known again.
        assert!(log.append(&mut batch(2)).unwrap().duplicate);
    } else {
        // A snapshot that decodes is trusted; appends still answer without panicking.
        let _ = log.append(&mut batch(3));
    }
});
