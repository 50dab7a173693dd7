//! `logd-offsets`: where each consumer group is in each partition. A commit stores the *next*
//! offset to read and returns once it is durable; offsets never expire on their own (deletion
//! is explicit). Also plans offset resets (earliest, latest, an offset, a timestamp, a shift),
//! clamped to the partition's range, so a dry run can show them before they are applied.
//!
//! Storage: an append-only log of CRC'd frames, one frame per commit call (all or nothing),
//! plus a snapshot replaced atomically once the log grows; see `docs/format.md`.

mod error;
mod frame;
mod reset;
mod store;

pub use error::{Error, Result};
pub use reset::{PartitionRange, PlannedReset, ResetTarget};
pub use store::{Committed, OffsetCommit, OffsetStore, OffsetStoreConfig};
