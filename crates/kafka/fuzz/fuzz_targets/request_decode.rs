//! Arbitrary request frames through `decode_request`, the path every client byte takes: it
//! must return a request or an error, never panic, and never allocate from a wire count the
//! frame cannot back (run with `-malloc_limit_mb`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() >= 8 {
        let _ = logd_kafka::decode_request(bytes::Bytes::copy_from_slice(data));
    }
});
