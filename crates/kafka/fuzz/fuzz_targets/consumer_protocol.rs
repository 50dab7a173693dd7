//! Arbitrary bytes as a member's subscription and assignment, which members write and logd
//! reads (OffsetDelete, `logd groups describe`, embedded leaders): an answer or `None`, never a
//! panic, never an allocation from a count the bytes cannot back (run with `-malloc_limit_mb`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = logd_protocol::consumer_protocol::decode_subscription(data);
    let _ = logd_protocol::consumer_protocol::decode_assignment(data);
});
