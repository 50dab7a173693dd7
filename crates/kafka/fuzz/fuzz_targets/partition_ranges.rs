//! Arbitrary bytes as the bodies of logd's own APIs (DescribePartitionRanges and
//! DescribeSharePartitions): a request as the broker reads it, and a response as logd's client
//! reads it. An answer or an error, never a panic, and never an allocation from a count the
//! bytes cannot back (run with `-malloc_limit_mb`).
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use logd_protocol::partition_ranges::{PartitionRangesRequest, PartitionRangesResponse};
use logd_protocol::share_partitions::{SharePartitionsRequest, SharePartitionsResponse};

fuzz_target!(|data: &[u8]| {
    let _ = PartitionRangesRequest::decode(&mut Bytes::copy_from_slice(data));
    let _ = PartitionRangesResponse::decode(&mut Bytes::copy_from_slice(data));
    let _ = SharePartitionsRequest::decode(&mut Bytes::copy_from_slice(data));
    let _ = SharePartitionsResponse::decode(&mut Bytes::copy_from_slice(data));
});
