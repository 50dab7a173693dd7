//! Kafka's RecordBatch v2 (magic 2), byte for byte: the 61-byte header, the records inside it,
//! compression, and a builder. Pure codec, no I/O.
//!
//! ```text
//! offset  size  field                   covered by CRC-32C
//!      0     8  base_offset                  no (rewritten on append)
//!      8     4  batch_length                 no (bytes after this field)
//!     12     4  partition_leader_epoch       no
//!     16     1  magic (= 2)                  no
//!     17     4  crc                          no
//!     21     2  attributes                   yes, from here ...
//!     23     4  last_offset_delta            yes
//!     27     8  base_timestamp               yes
//!     35     8  max_timestamp                yes
//!     43     8  producer_id                  yes
//!     51     2  producer_epoch               yes
//!     53     4  base_sequence                yes
//!     57     4  record_count                 yes
//!     61     …  records                      yes, ... to the end of the batch
//! ```
//! All integers are big-endian. `docs/format.md` describes every field.

mod builder;
mod compression;
mod header;
mod recompress;
mod record;
mod retain;
mod validate;
mod varint;
pub(crate) mod walk;

pub use builder::BatchBuilder;
pub use compression::Compression;
pub use header::*;
pub use recompress::recompress;
pub use record::{HeaderRef, Headers, Record, RecordHeader, RecordIter, RecordRef, Records};
pub use retain::retain_records;
pub use validate::Checked;
pub use walk::walk_records;

#[cfg(test)]
mod tests;
