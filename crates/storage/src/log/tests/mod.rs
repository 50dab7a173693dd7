//! Tests of the partition log: behaviour, torn tails, a model test, simulated crashes at every
//! storage operation, and injected write/fsync failures.

mod basics;
mod clean;
mod crash;
mod faults;
mod group_commit;
mod instrumented;
mod model;
mod producers;
mod sync_many;
mod timestamps;
mod torn_tail;
mod txn;
mod txn_crash;
mod writeback;

use std::collections::BTreeMap;

use bytes::Bytes;

use crate::batch::{BatchBuilder, Compression, Record};
use crate::{FsyncPolicy, LogConfig, Offset, PartitionLog};

/// A batch of records whose values are `values`, timestamps `ts`, `ts+1`, ….
pub(super) fn batch_of(values: &[Vec<u8>], ts: i64) -> Vec<u8> {
    let mut builder = BatchBuilder::new(Compression::None);
    for (i, v) in values.iter().enumerate() {
        builder.push(ts + i as i64, None, Some(v), &[]);
    }
    builder.build(0).unwrap()
}

/// Small segments, dense indexes and frequent checkpoints, so tests cross every boundary.
pub(super) fn small_config() -> LogConfig {
    LogConfig {
        segment_bytes: 2048,
        index_interval_bytes: 128,
        checkpoint_interval_bytes: 1024,
        retention_ms: None,
        retention_bytes: None,
        segment_ms: None,
        fsync: FsyncPolicy::Always,
        ..LogConfig::default()
    }
}

/// Every readable record from `from` to the high watermark: offset to (timestamp, value).
pub(super) fn read_all(
    log: &PartitionLog,
    from: i64,
) -> crate::Result<BTreeMap<i64, (i64, Vec<u8>)>> {
    let mut out = BTreeMap::new();
    let mut next = from;
    while next < log.high_watermark().0 {
        let bytes: Bytes = log.read(Offset(next), 700)?;
        assert!(
            !bytes.is_empty(),
            "read at {next} below the high watermark returned nothing"
        );
        for record in Record::decode_all(&bytes, 1 << 20)? {
            if record.offset >= next {
                out.insert(
                    record.offset,
                    (record.timestamp, record.value.unwrap().to_vec()),
                );
            }
        }
        let last = *out.keys().next_back().unwrap();
        assert!(last >= next, "read at {next} made no progress");
        next = last + 1;
    }
    Ok(out)
}
