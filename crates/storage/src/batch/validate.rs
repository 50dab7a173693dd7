//! What a batch's records say about it: [`BatchRef::records`] and [`BatchRef::validate`], the
//! checks `append` demands of a producer's batch.

use super::compression::Compression;
use super::header::BatchRef;
use super::record::{self, Records};
use crate::error::{Error, Result};

impl<'a> BatchRef<'a> {
    /// The records, decompressing into a new buffer when the batch is compressed and borrowing
    /// otherwise. A compressed payload may expand to at most `max_decompressed` bytes.
    pub fn records(&self, max_decompressed: usize) -> Result<Records<'a>> {
        Records::new(self, max_decompressed)
    }

    /// Checks the CRC and that the records exactly fill the batch: `record_count` records with
    /// offset deltas 0, 1, 2, … ending at `last_offset_delta`. This is what `append` demands of
    /// a producer's batch. The header's `max_timestamp` is not checked but returned as the
    /// records have it: like Kafka's `LogValidator`, `append` sets it rather than refusing a
    /// batch that states it wrongly (Go's sarama 1.22 sends -1).
    pub fn validate(&self, position: usize, max_decompressed: usize) -> Result<Checked> {
        self.verify_crc(position)?;
        let h = &self.header;
        if h.is_control() {
            return Err(Error::InvalidBatch {
                position,
                reason: "control batches cannot be produced",
            });
        }
        if i64::from(h.record_count) != i64::from(h.last_offset_delta) + 1 {
            return Err(Error::InvalidBatch {
                position,
                reason: "record count does not match last offset delta",
            });
        }
        let payload = match h.compression()? {
            Compression::None => std::borrow::Cow::Borrowed(self.records_payload()),
            codec => {
                std::borrow::Cow::Owned(codec.decompress(self.records_payload(), max_decompressed)?)
            }
        };
        let Some((count, min_delta, max_delta)) = record::validate_payload(&payload) else {
            return Err(Error::InvalidBatch {
                position,
                reason: "malformed record, or offset deltas not 0, 1, 2, ...",
            });
        };
        if count != h.record_count as usize {
            return Err(Error::InvalidBatch {
                position,
                reason: "fewer records than the record count",
            });
        }
        Ok(Checked {
            timestamps: (count > 0).then(|| {
                (
                    h.base_timestamp.wrapping_add(min_delta),
                    h.base_timestamp.wrapping_add(max_delta),
                )
            }),
        })
    }
}

/// What [`BatchRef::validate`] learned of a batch's records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checked {
    /// The smallest and largest record timestamps (create time); `None` for no records.
    pub timestamps: Option<(i64, i64)>,
}
