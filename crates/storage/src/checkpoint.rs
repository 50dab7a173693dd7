//! The recovery checkpoint: a 64-byte file saying how much of the active segment is known to be
//! durable and valid, so that opening a log scans only what came after it.
//!
//! ```text
//! offset  size  field
//!      0     8  magic "LOGDCKPT"
//!      8     2  version (1)
//!     10     2  reserved (0)
//!     12     8  log_start_offset
//!     20     8  segment_base_offset   active segment at checkpoint time
//!     28     8  segment_bytes         durable, valid bytes of its .log
//!     36     8  next_offset           offset after the last batch in those bytes
//!     44     4  index_entries         durable entries of its .index
//!     48     4  time_index_entries    durable entries of its .timeindex
//!     52     8  max_timestamp         largest record timestamp in those bytes (-1 if none)
//!     60     4  crc                   CRC-32C of bytes 0..60
//! ```
//! Replaced atomically: written to `recovery-checkpoint.tmp`, fsynced, renamed over
//! `recovery-checkpoint`, then the directory is fsynced.

use std::path::Path;

use crate::error::{Error, Result};
use crate::io::Storage;

/// File name of the checkpoint inside the partition directory.
pub(crate) const FILE_NAME: &str = "recovery-checkpoint";
/// Name it is written under before the rename (see [`crate::io::replace_file`]).
pub(crate) const TEMP_NAME: &str = "recovery-checkpoint.tmp";
const MAGIC: &[u8; 8] = b"LOGDCKPT";
const VERSION: u16 = 1;
const CRC_AT: usize = 60;
/// Size of the checkpoint file.
pub(crate) const LEN: usize = 64;
const _: () = assert!(CRC_AT + 4 == LEN);

/// What a checkpoint records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Checkpoint {
    pub log_start_offset: i64,
    pub segment_base_offset: i64,
    pub segment_bytes: u64,
    pub next_offset: i64,
    pub index_entries: u32,
    pub time_index_entries: u32,
    pub max_timestamp: i64,
}

impl Checkpoint {
    pub(crate) fn encode(&self) -> [u8; LEN] {
        let mut out = [0u8; LEN];
        out[0..8].copy_from_slice(MAGIC);
        out[8..10].copy_from_slice(&VERSION.to_be_bytes());
        out[12..20].copy_from_slice(&self.log_start_offset.to_be_bytes());
        out[20..28].copy_from_slice(&self.segment_base_offset.to_be_bytes());
        out[28..36].copy_from_slice(&self.segment_bytes.to_be_bytes());
        out[36..44].copy_from_slice(&self.next_offset.to_be_bytes());
        out[44..48].copy_from_slice(&self.index_entries.to_be_bytes());
        out[48..52].copy_from_slice(&self.time_index_entries.to_be_bytes());
        out[52..60].copy_from_slice(&self.max_timestamp.to_be_bytes());
        let crc = crate::crc::crc32c(&out[..CRC_AT]);
        out[CRC_AT..].copy_from_slice(&crc.to_be_bytes());
        out
    }

    pub(crate) fn decode(buf: &[u8], path: &Path) -> Result<Checkpoint> {
        let corrupt = |reason| Error::CorruptFile {
            path: path.to_owned(),
            reason,
        };
        if buf.len() != LEN {
            return Err(corrupt("checkpoint is not 64 bytes"));
        }
        if &buf[0..8] != MAGIC {
            return Err(corrupt("bad checkpoint magic"));
        }
        let stored = u32::from_be_bytes(buf[CRC_AT..].try_into().expect("4 bytes"));
        if crate::crc::crc32c(&buf[..CRC_AT]) != stored {
            return Err(corrupt("checkpoint checksum mismatch"));
        }
        if u16::from_be_bytes([buf[8], buf[9]]) != VERSION {
            return Err(corrupt("unsupported checkpoint version"));
        }
        let i64_at = |at: usize| i64::from_be_bytes(buf[at..at + 8].try_into().expect("8 bytes"));
        let u32_at = |at: usize| u32::from_be_bytes(buf[at..at + 4].try_into().expect("4 bytes"));
        let checkpoint = Checkpoint {
            log_start_offset: i64_at(12),
            segment_base_offset: i64_at(20),
            segment_bytes: i64_at(28) as u64,
            next_offset: i64_at(36),
            index_entries: u32_at(44),
            time_index_entries: u32_at(48),
            max_timestamp: i64_at(52),
        };
        if checkpoint.log_start_offset < 0
            || checkpoint.segment_base_offset < 0
            || checkpoint.next_offset < checkpoint.segment_base_offset
        {
            return Err(corrupt("checkpoint offsets are inconsistent"));
        }
        Ok(checkpoint)
    }

    /// Reads the checkpoint of `dir`, `None` if there is none.
    pub(crate) fn read(storage: &dyn Storage, dir: &Path) -> Result<Option<Checkpoint>> {
        let path = dir.join(FILE_NAME);
        let file = match storage.open(&path, false) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io("open", &path)(e)),
        };
        let len = file.size().map_err(Error::io("stat", &path))?;
        if len != LEN as u64 {
            return Err(Error::CorruptFile {
                path,
                reason: "checkpoint is not 64 bytes",
            });
        }
        let mut buf = [0u8; LEN];
        file.read_exact_at(&mut buf, 0)
            .map_err(Error::io("read", &path))?;
        Checkpoint::decode(&buf, &path).map(Some)
    }

    /// Replaces the checkpoint of `dir` atomically and durably.
    pub(crate) fn write(&self, storage: &dyn Storage, dir: &Path, sync_dir: bool) -> Result<()> {
        crate::io::replace_file(storage, dir, FILE_NAME, &self.encode(), sync_dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn round_trips(log_start in 0i64..1 << 50, base in 0i64..1 << 50, bytes: u32, records in 0i64..1 << 30,
                       idx: u32, tidx: u32, max_ts: i64) {
            let cp = Checkpoint {
                log_start_offset: log_start, segment_base_offset: base, segment_bytes: bytes as u64,
                next_offset: base + records, index_entries: idx, time_index_entries: tidx, max_timestamp: max_ts,
            };
            prop_assert_eq!(Checkpoint::decode(&cp.encode(), Path::new("cp")).unwrap(), cp);
        }

        #[test]
        fn any_single_byte_change_is_rejected(at in 0usize..LEN, flip in 1u8..=255) {
            let cp = Checkpoint { log_start_offset: 5, segment_base_offset: 10, segment_bytes: 4096,
                next_offset: 20, index_entries: 1, time_index_entries: 1, max_timestamp: 99 };
            let mut bytes = cp.encode();
            bytes[at] ^= flip;
            prop_assert!(Checkpoint::decode(&bytes, Path::new("cp")).is_err());
        }
    }

    #[test]
    fn golden_bytes() {
        let cp = Checkpoint {
            log_start_offset: 1,
            segment_base_offset: 2,
            segment_bytes: 3,
            next_offset: 4,
            index_entries: 5,
            time_index_entries: 6,
            max_timestamp: 7,
        };
        let bytes = cp.encode();
        assert_eq!(&bytes[0..8], b"LOGDCKPT"); // magic
        assert_eq!(&bytes[8..12], &[0, 1, 0, 0]); // version 1, reserved
        assert_eq!(&bytes[12..20], &1i64.to_be_bytes()); // log_start_offset
        assert_eq!(&bytes[20..28], &2i64.to_be_bytes()); // segment_base_offset
        assert_eq!(&bytes[28..36], &3u64.to_be_bytes()); // segment_bytes
        assert_eq!(&bytes[36..44], &4i64.to_be_bytes()); // next_offset
        assert_eq!(&bytes[44..48], &5u32.to_be_bytes()); // index_entries
        assert_eq!(&bytes[48..52], &6u32.to_be_bytes()); // time_index_entries
        assert_eq!(&bytes[52..60], &7i64.to_be_bytes()); // max_timestamp
        assert_eq!(
            &bytes[60..64],
            &crate::crc::crc32c(&bytes[..60]).to_be_bytes()
        ); // crc
    }
}
