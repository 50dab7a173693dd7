//! The one error type of `logd-storage`: what went wrong, with the offsets, positions and paths
//! a caller needs to act on it.

use std::io;
use std::path::PathBuf;

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything `logd-storage` can report.
///
/// Input errors (a bad batch handed to `append` or to the codec) name the byte position inside
/// that input; on-disk errors ([`Error::Corrupted`]) name the file and position.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file-system operation failed.
    #[error("{op} {path}: {source}{}", limit_hint(source))]
    Io {
        /// The operation, e.g. `write` or `fsync`.
        op: &'static str,
        /// The file or directory it was applied to.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// An earlier write or fsync failed; the log (a partition's or a state log) refuses
    /// writes until it is reopened.
    #[error("log in {dir} is poisoned by an earlier write or fsync failure; reopen it")]
    Poisoned {
        /// The log's directory.
        dir: PathBuf,
    },
    /// Another process (or another log in this one) holds the directory lock.
    #[error("directory {dir} is locked by another user")]
    Locked {
        /// The locked directory.
        dir: PathBuf,
    },
    /// A read asked for an offset outside `[log_start, log_end]`.
    #[error("offset {requested} is out of range [{log_start}, {log_end}]")]
    OffsetOutOfRange {
        /// The offset asked for.
        requested: i64,
        /// The first offset still in the log.
        log_start: i64,
        /// The next offset to be written (readers see up to here).
        log_end: i64,
    },
    /// The bytes end before the structure they announce.
    #[error("truncated input at byte {position}: need {needed} more bytes, {available} present")]
    Truncated {
        /// Where the structure starts in the input.
        position: usize,
        /// Bytes the structure needs.
        needed: usize,
        /// Bytes actually present.
        available: usize,
    },
    /// A batch is larger than the configured maximum.
    #[error("batch at byte {position} is {size} bytes, more than the maximum {max}")]
    BatchTooLarge {
        /// Where the batch starts in the input.
        position: usize,
        /// Its size in bytes, header included.
        size: usize,
        /// The configured maximum.
        max: usize,
    },
    /// A batch that is not RecordBatch v2 (magic 2).
    #[error(
        "batch at byte {position} has magic {magic}; only record batch v2 (magic 2) is supported"
    )]
    UnsupportedMagic {
        /// Where the batch starts in the input.
        position: usize,
        /// The magic byte found.
        magic: i8,
    },
    /// The CRC-32C of a batch does not match its contents.
    #[error(
        "batch at byte {position} fails its checksum: stored {stored:#010x}, computed {computed:#010x}"
    )]
    ChecksumMismatch {
        /// Where the batch starts in the input.
        position: usize,
        /// CRC stored in the batch header.
        stored: u32,
        /// CRC computed over attributes..end.
        computed: u32,
    },
    /// A batch or record whose fields contradict each other.
    #[error("invalid batch at byte {position}: {reason}")]
    InvalidBatch {
        /// Where the batch starts in the input.
        position: usize,
        /// Which rule it broke.
        reason: &'static str,
    },
    /// A record whose create time is outside the log's bounds around the append (Kafka's
    /// INVALID_TIMESTAMP).
    #[error(
        "Timestamp {timestamp} of a record in the batch at byte {position} is out of range. The \
         timestamp should be within [{earliest}, {latest}]"
    )]
    TimestampOutOfRange {
        /// Where the batch starts in the input.
        position: usize,
        /// The record's timestamp (ms).
        timestamp: i64,
        /// The earliest timestamp accepted at this append.
        earliest: i64,
        /// The latest timestamp accepted at this append.
        latest: i64,
    },
    /// A producer's batch claiming log-append time on a log of create times (Kafka's
    /// INVALID_TIMESTAMP).
    #[error(
        "invalid timestamp type in the batch at byte {position}: producers should not set the \
         timestamp type to LogAppendTime"
    )]
    ProducerLogAppendTime {
        /// Where the batch starts in the input.
        position: usize,
    },
    /// A record without a key offered to a log that requires keys (a compacted topic).
    #[error(
        "compacted topic cannot accept a record without a key (record {index} of the batch at byte {position})"
    )]
    KeylessRecord {
        /// Where the batch starts in the input.
        position: usize,
        /// The record's position in the batch, from 0.
        index: usize,
    },
    /// A record inside a batch whose fields do not parse or do not fill its length.
    #[error("invalid record {index} in batch: {reason}")]
    InvalidRecord {
        /// The record's position in the batch, from 0.
        index: usize,
        /// Which rule it broke.
        reason: &'static str,
    },
    /// Compression codec id 5, 6 or 7.
    #[error("unknown compression codec {codec}")]
    UnknownCompression {
        /// Attribute bits 0-2.
        codec: u8,
    },
    /// A payload did not compress or decompress.
    #[error("{codec} codec failed: {source}")]
    Codec {
        /// The codec's name (`Gzip`), as `batch::Compression` names it.
        codec: &'static str,
        /// The decoder's error.
        source: io::Error,
    },
    /// A compressed payload expands past the configured limit (a decompression bomb).
    #[error("{codec} payload decompresses to more than {limit} bytes")]
    DecompressedTooLarge {
        /// The codec's name (`Gzip`), as `batch::Compression` names it.
        codec: &'static str,
        /// The limit in bytes.
        limit: usize,
    },
    /// Data that was already durable is damaged: reported, never skipped or deleted.
    #[error("corrupt data in {path} at byte {position}: {source}")]
    Corrupted {
        /// The file.
        path: PathBuf,
        /// Byte position in the file.
        position: u64,
        /// What is wrong there.
        source: Box<Error>,
    },
    /// A small file (checkpoint, index) whose content cannot be used.
    #[error("corrupt file {path}: {reason}")]
    CorruptFile {
        /// The file.
        path: PathBuf,
        /// Which rule it broke.
        reason: &'static str,
    },
    /// An idempotent batch (producer id set) without a valid epoch or first sequence: Kafka's
    /// INVALID_RECORD.
    #[error(
        "batch at byte {position} has producer id {producer_id} with epoch {epoch} and sequence {sequence}; both must be non-negative"
    )]
    InvalidProducerFields {
        /// Where the batch starts in the input.
        position: usize,
        /// The producer id it claims.
        producer_id: i64,
        /// Its producer epoch.
        epoch: i16,
        /// Its first sequence.
        sequence: i32,
    },
    /// An idempotent batch whose first sequence does not follow the producer's last stored one:
    /// an earlier batch is missing (Kafka's OUT_OF_ORDER_SEQUENCE_NUMBER). Nothing was stored.
    #[error(
        "producer {producer_id} epoch {epoch}: batch starts at sequence {received}, expected {expected}"
    )]
    OutOfOrderSequence {
        /// The producer id.
        producer_id: i64,
        /// The batch's epoch.
        epoch: i16,
        /// The sequence that must come next.
        expected: i32,
        /// The batch's first sequence.
        received: i32,
    },
    /// An idempotent batch from an epoch older than the producer's current one: a fenced
    /// producer (Kafka's INVALID_PRODUCER_EPOCH). Nothing was stored.
    #[error("producer {producer_id} epoch {epoch} is older than its current epoch {current}")]
    InvalidProducerEpoch {
        /// The producer id.
        producer_id: i64,
        /// The batch's epoch.
        epoch: i16,
        /// The producer's current epoch in this partition.
        current: i16,
    },
    /// A batch that breaks the producer's transaction state: a non-transactional batch while
    /// its transaction is open (Kafka's INVALID_TXN_STATE). Nothing was stored.
    #[error("producer {producer_id} sent a non-transactional batch inside its open transaction")]
    InvalidTxnState {
        /// The producer id.
        producer_id: i64,
    },
    /// A transaction marker from a coordinator epoch older than the one that last wrote a
    /// marker for the producer: a stale coordinator (Kafka's TRANSACTION_COORDINATOR_FENCED).
    #[error(
        "marker for producer {producer_id} from coordinator epoch {epoch}, older than {current}"
    )]
    TransactionCoordinatorFenced {
        /// The producer id.
        producer_id: i64,
        /// The marker's coordinator epoch.
        epoch: i32,
        /// The coordinator epoch of the producer's last marker.
        current: i32,
    },
    /// A configuration value out of its allowed range.
    #[error("invalid configuration: {reason}")]
    InvalidConfig {
        /// Which rule it broke.
        reason: &'static str,
    },
}

impl Error {
    /// A constructor for `map_err`: the failed `op` on `path`.
    pub fn io(op: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io { op, path, source }
    }

    pub(crate) fn corrupted(path: impl Into<PathBuf>, position: u64, source: Error) -> Error {
        Error::Corrupted {
            path: path.into(),
            position,
            source: Box::new(source),
        }
    }
}

/// What to do about an OS error that is a limit being reached rather than damage.
fn limit_hint(source: &io::Error) -> &'static str {
    match source.raw_os_error() {
        // EMFILE, ENFILE
        Some(24) | Some(23) => {
            " (too many open files: raise the file-descriptor limit, e.g. `ulimit -n` or \
             systemd's LimitNOFILE=, or lower --max-open-files)"
        }
        // ENOMEM, from mmap once vm.max_map_count mappings exist
        Some(12) => {
            " (out of memory or memory maps: raise vm.max_map_count, or use larger segments \
             or fewer partitions)"
        }
        // ENOSPC
        Some(28) => " (the disk is full: free space, or lower retention)",
        _ => "",
    }
}
