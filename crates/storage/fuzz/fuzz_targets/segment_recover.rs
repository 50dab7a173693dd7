//! Arbitrary bytes as the only segment of a partition directory with no checkpoint (a crash
//! before the first checkpoint): opening must either fail cleanly or recover a log whose every
//! served batch passes its CRC and whose offsets continue, and appends must work after it.
#![no_main]

use std::path::Path;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use logd_storage::batch::{BatchBuilder, BatchIter, Compression};
use logd_storage::{LogConfig, Offset, PartitionLog, SimFs, Storage};

fuzz_target!(|data: &[u8]| {
    let fs = SimFs::new();
    fs.create_dir_all(Path::new("/p")).unwrap();
    let file = fs.open(Path::new("/p/00000000000000000000.log"), true).unwrap();
    file.write_all_at(data, 0).unwrap();
    let config = LogConfig {
        segment_bytes: 1 << 20,
        index_interval_bytes: 64,
        ..LogConfig::default()
    };
    let Ok(log) = PartitionLog::open_with(Arc::new(fs), "/p", config) else { return };
    let mut next = log.log_start_offset().0;
    while next < log.high_watermark().0 {
        // `read` checks every served batch's CRC, so success means nothing corrupt is served.
        let bytes = log.read(Offset(next), 4096).expect("recovered bytes are readable");
        let last = BatchIter::new(&bytes, 0)
            .map(|b| b.expect("served bytes are whole batches").1.header)
            .last()
            .expect("a read below the high watermark returns a batch");
        assert!(last.next_offset() > next, "reads make progress");
        next = last.next_offset();
    }
    let mut builder = BatchBuilder::new(Compression::None);
    builder.push(0, None, Some(b"after"), &[]);
    let end = log.end_offset();
    let info = log.append(&mut builder.build(0).unwrap()).expect("appends work after recovery");
    assert_eq!(info.base_offset, end);
});
