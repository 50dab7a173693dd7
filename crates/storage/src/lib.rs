//! `logd-storage`: one partition's records in segment files, with sparse indexes, a fsync
//! policy, crash recovery and retention. Synchronous `std` only: no threads, no async, no
//! wall-clock reads in decisions tests must repeat (callers pass `now`).
//!
//! The entry point is [`PartitionLog`]; [`batch`] is the pure RecordBatch v2 codec;
//! [`StateLog`] is the durable form of a coordinator's state (offsets, groups); the [`Storage`]
//! trait lets all of them run on [`SimFs`], which models power loss.
//!
//! ```
//! use logd_storage::batch::{BatchBuilder, Compression, Record};
//! use logd_storage::{LogConfig, Offset, PartitionLog};
//!
//! # fn main() -> logd_storage::Result<()> {
//! # let temp = tempfile::tempdir().unwrap();
//! # let dir = temp.path().join("orders-0");
//! // fsync = always is the default: append returns once the records are on stable storage.
//! let log = PartitionLog::open(&dir, LogConfig::default())?;
//!
//! let mut batch = BatchBuilder::new(Compression::None);
//! batch.push(1_700_000_000_000, Some(b"order-17"), Some(b"created"), &[(b"source", Some(b"web"))]);
//! batch.push(1_700_000_000_001, Some(b"order-17"), Some(b"paid"), &[]);
//! let appended = log.append(&mut batch.build(0)?)?;
//! assert_eq!((appended.base_offset, appended.last_offset), (Offset(0), Offset(1)));
//!
//! // Replay from any offset: whole batches, zero-copy slices of the memory-mapped segment.
//! let bytes = log.read(Offset(0), 1 << 20)?;
//! let records = Record::decode_all(&bytes, 1 << 20)?;
//! assert_eq!(records[1].value.as_deref(), Some(&b"paid"[..]));
//! assert_eq!(log.offset_for_timestamp(1_700_000_000_001)?, Some(Offset(1)));
//! log.close()
//! # }
//! ```

pub mod batch;
mod checkpoint;
mod cleaner_checkpoint;
mod config;
mod crc;
pub mod dead_letter_headers;
mod error;
mod io;
mod log;
mod offset;
mod producer;
mod record_headers;
mod segment;
mod state_log;

pub use bytes::Bytes;
pub use config::{FsyncPolicy, LogConfig};
pub use crc::crc32c;
pub use error::{Error, Result};
pub use io::{
    CachedFs, CrashMode, DirLock, FaultKind, PowerCutStore, RealFs, SimFs, SplitMix64, Storage,
    StorageFile, check_every_power_cut, create_dir_durable, disk_space, lock_holder, read_file,
    replace_file,
};
pub use log::PartitionLog;
pub use log::clean::{CleanOptions, CleanReport, Dirtiness};
pub use log::sync_many::{await_durable, sync_logs};
pub use log::txn::OpenTxn;
pub use offset::Offset;
pub use producer::{
    AbortedTxn, BATCHES_RETAINED, BatchMetadata, CompletedTxn, Marker, ProducerInfo, ReadCommitted,
    advance_sequence,
};
pub use record_headers::{HeaderVisitor, Headers};
pub use state_log::{StateLog, StateLogConfig, StateMachine, Written};

/// Where an append put its records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendInfo {
    /// Offset of the first record appended.
    pub base_offset: Offset,
    /// Offset of the last record appended.
    pub last_offset: Offset,
    /// Batches appended.
    pub batches: usize,
    /// The input was a retry of an idempotent producer's batch already stored: nothing was
    /// written, and the offsets are the original ones.
    pub duplicate: bool,
    /// Batches whose stated max timestamp did not match their records and was set as Kafka
    /// sets it, rather than the batch being refused.
    pub normalized: usize,
    /// The append time the batches were stamped with, under log-append time.
    pub log_append_time: Option<i64>,
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
    /// Log bytes whose batch headers were replayed to rebuild the idempotent producers'
    /// state after its newest snapshot; 0 after a clean close.
    pub replayed_producer_bytes: u64,
    /// Producer snapshots that were damaged, treated as absent and deleted.
    pub damaged_snapshots: usize,
    /// Aborted-transaction indexes that were damaged: every one was rebuilt from the log.
    pub rebuilt_txn_indexes: usize,
    /// The cleaner checkpoint was damaged and treated as absent: the next cleaning of the
    /// partition maps its whole log again.
    pub damaged_cleaner_checkpoint: bool,
}
