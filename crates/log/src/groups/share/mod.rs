//! Share groups (KIP-932): queues on the log, where any number of members read the same
//! partitions and each record is acquired, acknowledged and redelivered on its own.
//! `partition.rs` is one share-partition's record states and their rules; `persist.rs` their
//! durable form (a state log in `shares/`); `store.rs` every share-partition of the engine,
//! live over the durable state; `engine_api.rs` `Log`'s share calls under each group's
//! configs; `group.rs` membership (ShareGroupHeartbeat's rules); `consumer.rs` the embedded
//! [`ShareConsumer`]; `letters.rs` and `dead_letters.rs` the dead-letter topics (KIP-1191).
//! Every member reads every partition of its topics (records, not partitions, are what
//! members share).

mod consumer;
mod dead_letters;
mod engine_api;
mod group;
mod keeper;
mod letters;
mod partition;
mod persist;
mod store;

pub use consumer::{AcknowledgementMode, ShareConsumer, ShareConsumerConfig, ShareRecord};
pub use dead_letters::DLQ_GROUP_ENABLE;
pub(crate) use group::ShareGroups;
pub use group::{ShareHeartbeat, ShareMemberDescription};
pub use keeper::ShareKeeper;
pub use partition::{
    AcknowledgeType, AcquireMode, AcquiredRecords, ArchiveReason, Archived, BackoffJitter,
    RecordState, ShareLimits, SharePartition,
};
pub use persist::RejectReason;
pub(crate) use store::ShareStates;
pub use store::{ShareCounters, SharePartitionState};

#[cfg(test)]
mod consumer_tests;
#[cfg(test)]
mod dead_letter_tests;
#[cfg(test)]
mod lifetime_tests;
#[cfg(test)]
mod persist_tests;
#[cfg(test)]
mod store_tests;
#[cfg(test)]
mod tests;
