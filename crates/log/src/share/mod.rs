//! Share groups (KIP-932): queues on the log, where any number of members read the same
//! partitions and each record is acquired, acknowledged and redelivered on its own.
//! `partition.rs` is one share-partition's record states and their rules; the coordinator
//! that assigns members, the durable state and the wire APIs build on it (issue 34).

mod partition;

pub use partition::{
    AcknowledgeType, AcquiredRecords, ArchiveReason, Archived, RecordState, ShareLimits,
    SharePartition,
};

#[cfg(test)]
mod tests;
