//! Arbitrary bytes through the batch decoder: header parsing, validation (CRC, records filling
//! the batch, capped decompression), record iteration and the record walk (with its prefetch of
//! the next batch) must return errors, never panic or allocate beyond the input's size and the
//! decompression cap.
#![no_main]

use libfuzzer_sys::fuzz_target;
use logd_storage::batch::{BatchIter, walk_records};

fuzz_target!(|data: &[u8]| {
    let _ = walk_records(data, 1 << 20, |record| {
        std::hint::black_box(record);
        true
    });
    for item in BatchIter::new(data, 0) {
        let Ok((position, batch)) = item else { break };
        let _ = batch.validate(position, 1 << 20);
        // Decode even when the CRC fails: the record parser must survive garbage on its own.
        if let Ok(records) = batch.records(1 << 20) {
            for record in records.iter().flatten() {
                for header in record.headers {
                    std::hint::black_box(header);
                }
            }
        }
    }
});
