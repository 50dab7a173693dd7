//! The cleaner checkpoint: a 24-byte file saying how far a compacted partition is clean, so a
//! cleaning after a restart resumes there instead of mapping every key of the log again (as
//! Kafka's `cleaner-offset-checkpoint`).
//!
//! ```text
//! offset  size  field
//!      0     8  magic "LOGDCLNR"
//!      8     2  version (1)
//!     10     2  reserved (0)
//!     12     8  cleaned_up_to   offsets below it hold only each key's latest record
//!     20     4  crc             CRC-32C of bytes 0..20
//! ```
//! Replaced atomically after a cleaning pass (written to `cleaner-checkpoint.tmp`, fsynced,
//! renamed, the directory fsynced), after the segments it vouches for were swapped in durably.
//! It is a hint: a missing one makes the next pass map the whole log, and a damaged one is
//! treated as missing (and counted in the recovery report), since cleaning from the start is
//! always correct.

use std::path::Path;

use crate::error::{Error, Result};
use crate::io::Storage;

/// File name of the cleaner checkpoint inside the partition directory.
pub(crate) const FILE_NAME: &str = "cleaner-checkpoint";
/// Name it is written under before the rename (see [`crate::io::replace_file`]).
pub(crate) const TEMP_NAME: &str = "cleaner-checkpoint.tmp";
const MAGIC: &[u8; 8] = b"LOGDCLNR";
const VERSION: u16 = 1;
const CRC_AT: usize = 20;
/// Size of the file.
const LEN: usize = 24;
const _: () = assert!(CRC_AT + 4 == LEN);

fn encode(cleaned_up_to: i64) -> [u8; LEN] {
    let mut out = [0u8; LEN];
    out[0..8].copy_from_slice(MAGIC);
    out[8..10].copy_from_slice(&VERSION.to_be_bytes());
    out[12..20].copy_from_slice(&cleaned_up_to.to_be_bytes());
    let crc = crate::crc::crc32c(&out[..CRC_AT]);
    out[CRC_AT..].copy_from_slice(&crc.to_be_bytes());
    out
}

/// The offset a checkpoint's bytes hold, or why they are not a checkpoint.
fn decode(buf: &[u8]) -> std::result::Result<i64, &'static str> {
    if buf.len() != LEN {
        return Err("cleaner checkpoint is not 24 bytes");
    }
    if &buf[0..8] != MAGIC {
        return Err("bad cleaner checkpoint magic");
    }
    let stored = u32::from_be_bytes([buf[20], buf[21], buf[22], buf[23]]);
    if crate::crc::crc32c(&buf[..CRC_AT]) != stored {
        return Err("cleaner checkpoint checksum mismatch");
    }
    if u16::from_be_bytes([buf[8], buf[9]]) != VERSION {
        return Err("unsupported cleaner checkpoint version");
    }
    let mut offset = [0u8; 8];
    offset.copy_from_slice(&buf[12..20]);
    match i64::from_be_bytes(offset) {
        negative if negative < 0 => Err("negative cleaned offset"),
        offset => Ok(offset),
    }
}

/// Reads the cleaner checkpoint of `dir`: `Ok(None)` when there is none, `Err` with the reason
/// when the file is there but damaged (the caller treats it as absent).
pub(crate) fn read(
    storage: &dyn Storage,
    dir: &Path,
) -> Result<std::result::Result<Option<i64>, &'static str>> {
    let path = dir.join(FILE_NAME);
    let file = match storage.open(&path, false) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Ok(None)),
        Err(e) => return Err(Error::io("open", &path)(e)),
    };
    let len = file.size().map_err(Error::io("stat", &path))?;
    if len != LEN as u64 {
        return Ok(Err("cleaner checkpoint is not 24 bytes"));
    }
    let mut buf = [0u8; LEN];
    file.read_exact_at(&mut buf, 0)
        .map_err(Error::io("read", &path))?;
    Ok(decode(&buf).map(Some))
}

/// Replaces the cleaner checkpoint of `dir` atomically and durably.
pub(crate) fn write(
    storage: &dyn Storage,
    dir: &Path,
    cleaned_up_to: i64,
    sync_dir: bool,
) -> Result<()> {
    crate::io::replace_file(storage, dir, FILE_NAME, &encode(cleaned_up_to), sync_dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn round_trips(offset in 0i64..i64::MAX) {
            prop_assert_eq!(decode(&encode(offset)), Ok(offset));
        }

        #[test]
        fn any_flipped_bit_is_refused(offset in 0i64..1 << 50, bit in 0usize..LEN * 8) {
            let mut bytes = encode(offset);
            bytes[bit / 8] ^= 1 << (bit % 8);
            prop_assert!(decode(&bytes).is_err());
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            let _ = decode(&bytes);
        }
    }

    #[test]
    fn a_short_file_and_a_negative_offset_are_refused() {
        assert!(decode(&encode(7)[..20]).is_err());
        assert_eq!(decode(&encode(-1)), Err("negative cleaned offset"));
    }
}
