//! `logd-offsets`: where each consumer group is in each partition. A commit stores the *next*
//! offset to read and returns once it is durable; offsets never expire on their own (deletion
//! is explicit). Also plans offset resets (earliest, latest, an offset, a timestamp, a shift),
//! clamped to the partition's range, so a dry run can show them before they are applied.
//!
//! Storage: a `logd_storage::StateLog`, one record per commit call (all or nothing), folded
//! into a snapshot once the log grows; see `docs/format.md`.

mod error;
mod records;
mod reset;
mod store;

pub use error::{Error, Result};
pub use reset::{PartitionRange, PlannedReset, ResetTarget};
pub use store::{Committed, OffsetCommit, OffsetStore, OffsetStoreConfig};
