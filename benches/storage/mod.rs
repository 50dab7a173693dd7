//! `logd-storage` suites: append, read, reopen, clean. Shared fixtures live here.

pub mod append;
pub mod clean;
pub mod read;
pub mod reopen;

use logd_storage::batch::{BatchBuilder, Compression};

/// Size of every record value, as the workloads ask.
pub const VALUE_LEN: usize = 100;

/// One uncompressed batch of `records` 100-byte values with increasing timestamps from `ts`.
pub fn batch(records: usize, ts: i64) -> Vec<u8> {
    let value = [b'v'; VALUE_LEN];
    let mut builder = BatchBuilder::new(Compression::None);
    for i in 0..records {
        builder.push(ts + i as i64, None, Some(&value), &[]);
    }
    builder
        .build(0)
        .expect("uncompressed batches always encode")
}
