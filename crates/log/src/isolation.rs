//! What an embedded consumer may read of a partition (Kafka's `isolation.level`): up to the
//! high watermark, or for read_committed up to the last stable offset, skipping the records of
//! aborted transactions as Kafka's consumer does; transaction markers are never records.

use bytes::Bytes;
use logd_storage::batch::{BatchIter, Record};
use logd_storage::{Offset, PartitionLog, ReadCommitted};

use crate::error::Result;

/// Which records a consumer reads (Kafka's `isolation.level`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IsolationLevel {
    /// Every record up to the high watermark, open and aborted transactions' included.
    #[default]
    ReadUncommitted,
    /// Only records of committed transactions (and records outside transactions), up to
    /// the last stable offset.
    ReadCommitted,
}

impl IsolationLevel {
    /// Where reading stops: the high watermark, or the last stable offset.
    pub fn end(self, log: &PartitionLog) -> i64 {
        match self {
            IsolationLevel::ReadUncommitted => log.high_watermark().0,
            IsolationLevel::ReadCommitted => log.last_stable_offset().0,
        }
    }

    /// Hands `f` each record of `bytes` (read from `log` at `from`, readable below `end`)
    /// this level shows, from `from` on, until `f` returns false. Returns the offset after the
    /// last batch looked at whole (a batch skipped or emptied counts), for the position.
    pub(crate) fn records(
        self,
        log: &PartitionLog,
        bytes: &Bytes,
        from: i64,
        end: i64,
        mut f: impl FnMut(Record) -> bool,
    ) -> Result<i64> {
        let mut filter = match self {
            IsolationLevel::ReadCommitted => Some(ReadCommitted::new(
                log.aborted_transactions(Offset(from), Offset(end)),
            )),
            IsolationLevel::ReadUncommitted => None,
        };
        let max_decompressed = log.config().max_decompressed_bytes;
        let mut after = from;
        for item in BatchIter::new(bytes, 0) {
            let (position, batch) = item?;
            let header = batch.header;
            if header.base_offset >= end {
                break;
            }
            let kept = filter.as_mut().is_none_or(|f| f.keep(&batch));
            if kept && !header.is_control() {
                let one = bytes.slice(position..position + header.total_len());
                let mut stopped = false;
                Record::decode_each(&one, max_decompressed, |record| {
                    if record.offset < from {
                        return true;
                    }
                    let offset = record.offset;
                    if !f(record) {
                        stopped = true;
                        return false;
                    }
                    after = offset + 1;
                    true
                })?;
                if stopped {
                    return Ok(after);
                }
            }
            after = after.max(header.next_offset());
        }
        Ok(after)
    }
}
