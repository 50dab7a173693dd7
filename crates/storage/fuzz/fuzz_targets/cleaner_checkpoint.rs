//! Arbitrary bytes as the cleaner checkpoint of a compacted log: opening must succeed (a
//! checkpoint that does not decode is treated as absent and reported), never panic, and a
//! cleaning pass afterwards must keep each key's latest record.
#![no_main]

use std::path::Path;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use logd_storage::batch::{BatchBuilder, Compression};
use logd_storage::{CleanOptions, LogConfig, Offset, PartitionLog, SimFs, Storage};

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 1024,
        ..LogConfig::default()
    }
}

fuzz_target!(|data: &[u8]| {
    let fs = SimFs::new();
    let log = PartitionLog::open_with(Arc::new(fs.clone()), "/p", config()).unwrap();
    for i in 0..40 {
        let mut builder = BatchBuilder::new(Compression::None);
        builder.push(0, Some(format!("k{}", i % 4).as_bytes()), Some(&[b'v'; 60]), &[]);
        log.append(&mut builder.build(0).unwrap()).unwrap();
    }
    log.close().unwrap();
    let file = fs.open(Path::new("/p/cleaner-checkpoint"), true).unwrap();
    file.set_len(0).unwrap();
    file.write_all_at(data, 0).unwrap();
    let log = PartitionLog::open_with(Arc::new(fs), "/p", config())
        .expect("a damaged cleaner checkpoint never stops the log from opening");
    let cleaned = log.cleaned_up_to();
    if log.recovery_report().damaged_cleaner_checkpoint {
        assert_eq!(cleaned, Offset(0));
    }
    let options = CleanOptions {
        now_ms: 1,
        min_compaction_lag_ms: 0,
        delete_retention_ms: 0,
        key_map_bytes: 1 << 20,
        first_dirty: cleaned,
    };
    log.clean(&options).expect("a pass from any hinted offset");
    // The active segment's records are never cleaned; the last of each key is always kept.
    assert!(log.read(Offset(39), 1 << 16).is_ok_and(|bytes| !bytes.is_empty()));
});
