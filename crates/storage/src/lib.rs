//! `logd-storage`: one partition's records in segment files, with sparse indexes, a fsync
//! policy, crash recovery and retention. Synchronous `std` only: no threads, no async, no
//! wall-clock reads in decisions tests must repeat (callers pass `now`).
//!
//! The entry point is [`PartitionLog`]; [`batch`] is the pure RecordBatch v2 codec; the
//! [`Storage`] trait lets the same log run on [`SimFs`], which models power loss.

pub mod batch;
mod checkpoint;
mod config;
mod error;
mod io;
mod log;
mod offset;
mod segment;

pub use bytes::Bytes;
pub use config::{FsyncPolicy, LogConfig};
pub use error::{Error, Result};
pub use io::{CrashMode, DirLock, FaultKind, RealFs, SimFs, SplitMix64, Storage, StorageFile};
pub use log::PartitionLog;
pub use offset::Offset;

/// Where an append put its records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendInfo {
    /// Offset of the first record appended.
    pub base_offset: Offset,
    /// Offset of the last record appended.
    pub last_offset: Offset,
    /// Batches appended.
    pub batches: usize,
}

/// What a retention run deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetentionReport {
    /// Whole segments deleted.
    pub deleted_segments: usize,
    /// Their total size.
    pub deleted_bytes: u64,
    /// The log start offset afterwards.
    pub log_start_offset: Offset,
}

/// What opening a log found and repaired.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// A recovery checkpoint existed (false for a new or pre-checkpoint directory).
    pub had_checkpoint: bool,
    /// Log bytes past the checkpoint that were validated; 0 after a clean close.
    pub scanned_bytes: u64,
    /// Bytes of a torn tail that were cut off.
    pub truncated_bytes: u64,
    /// Segments whose indexes were missing or short and were rebuilt from the log.
    pub rebuilt_indexes: usize,
}
