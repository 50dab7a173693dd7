//! Arbitrary bytes through the produce path's rewrites: recompression into each codec (a
//! topic's `compression.type`) must return an error or batches that validate with the same
//! record count, never panic; a damaged or malformed batch is refused, never re-checksummed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use logd_storage::batch::{BatchIter, Compression, recompress};

fuzz_target!(|data: &[u8]| {
    for codec in [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        let Ok(Some(rewritten)) = recompress(data, codec, 1 << 20) else {
            continue;
        };
        let before: Vec<_> = BatchIter::new(data, 0).map_while(Result::ok).collect();
        let after: Vec<_> = BatchIter::new(&rewritten, 0)
            .map_while(Result::ok)
            .collect();
        assert_eq!(before.len(), after.len(), "one batch out per batch in");
        for ((position, original), (_, batch)) in before.iter().zip(&after) {
            assert_eq!(original.header.record_count, batch.header.record_count);
            if original.header.compression().ok() != Some(codec) && !original.header.is_control() {
                assert!(
                    original.validate(*position, 1 << 20).is_ok(),
                    "a malformed batch was rewritten"
                );
                assert!(batch.verify_crc(0).is_ok());
            }
        }
    }
});
