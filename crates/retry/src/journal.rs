//! The hop journal: the one hop a worker has in flight (a retry or dead-letter copy about to be
//! appended, whose source record is not yet committed), made durable before the append. After
//! a crash between the append and the commit, the restarted worker appends the same stamped
//! batch again, which the log answers as a duplicate if the first append landed, and commits:
//! the copy exists once. Without a journal that crash leaves two copies (at-least-once).
//!
//! One file, `hop-in-flight`, in the worker's state directory, replaced atomically (temp file,
//! fsync, rename, directory fsync) by each hop:
//!
//! ```text
//! offset  size  field
//!      0     8  magic "LOGDHOPJ"
//!      8     2  version (1)
//!     10     2  reserved (0)
//!     12     4  source_partition   the handled record's partition
//!     16     8  source_offset      and offset
//!     24     4  target_partition   where the copy goes
//!     28     2  source_topic_len
//!     30     2  target_topic_len
//!     32     4  batch_len
//!     36        source_topic, target_topic (UTF-8), then the stamped batch as appended
//!  end-4     4  crc                CRC-32C of every byte before it
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;

use logd_storage::Storage;

use crate::error::{Error, Result};

/// File name inside the state directory.
const FILE_NAME: &str = "hop-in-flight";
const MAGIC: &[u8; 8] = b"LOGDHOPJ";
const VERSION: u16 = 1;
const FIXED_LEN: usize = 36;
const CRC_LEN: usize = 4;
const _: () = assert!(FIXED_LEN == 8 + 2 + 2 + 4 + 8 + 4 + 2 + 2 + 4);

/// A hop: the copy of the record at `source_offset` of `source_topic`/`source_partition`,
/// appended as `batch` to `target_topic`/`target_partition`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hop {
    pub source_topic: String,
    pub source_partition: u32,
    pub source_offset: i64,
    pub target_topic: String,
    pub target_partition: u32,
    pub batch: Vec<u8>,
}

/// The journal of one worker's state directory.
#[derive(Debug)]
pub(crate) struct HopJournal {
    storage: Arc<dyn Storage>,
    dir: PathBuf,
}

impl HopJournal {
    /// Opens (creating) the journal in `dir`; returns the hop it holds, if any.
    pub(crate) fn open(storage: Arc<dyn Storage>, dir: &Path) -> Result<(HopJournal, Option<Hop>)> {
        logd_storage::create_dir_durable(&*storage, dir).map_err(|e| io_error(dir, e))?;
        let path = dir.join(FILE_NAME);
        let hop = match logd_storage::read_file(&*storage, &path) {
            Ok(bytes) => Some(decode(&bytes).map_err(|reason| Error::HopJournal {
                path: path.clone(),
                reason: format!(
                    "{reason}; delete it to start (the hop it held may then be copied twice)"
                ),
            })?),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(io_error(&path, e)),
        };
        Ok((
            HopJournal {
                storage,
                dir: dir.to_owned(),
            },
            hop,
        ))
    }

    /// Makes `hop` the journal's durable content.
    pub(crate) fn record(&self, hop: &Hop) -> Result<()> {
        logd_storage::replace_file(&*self.storage, &self.dir, FILE_NAME, &encode(hop), true)
            .map_err(|e| Error::HopJournal {
                path: self.dir.join(FILE_NAME),
                reason: e.to_string(),
            })
    }
}

fn io_error(path: &Path, e: std::io::Error) -> Error {
    Error::HopJournal {
        path: path.to_owned(),
        reason: e.to_string(),
    }
}

fn encode(hop: &Hop) -> Vec<u8> {
    let mut out = Vec::with_capacity(
        FIXED_LEN + hop.source_topic.len() + hop.target_topic.len() + hop.batch.len() + CRC_LEN,
    );
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_be_bytes());
    out.extend_from_slice(&0u16.to_be_bytes());
    out.extend_from_slice(&hop.source_partition.to_be_bytes());
    out.extend_from_slice(&hop.source_offset.to_be_bytes());
    out.extend_from_slice(&hop.target_partition.to_be_bytes());
    out.extend_from_slice(&(hop.source_topic.len() as u16).to_be_bytes());
    out.extend_from_slice(&(hop.target_topic.len() as u16).to_be_bytes());
    out.extend_from_slice(&(hop.batch.len() as u32).to_be_bytes());
    out.extend_from_slice(hop.source_topic.as_bytes());
    out.extend_from_slice(hop.target_topic.as_bytes());
    out.extend_from_slice(&hop.batch);
    let crc = logd_storage::crc32c(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

fn decode(bytes: &[u8]) -> std::result::Result<Hop, &'static str> {
    if bytes.len() < FIXED_LEN + CRC_LEN {
        return Err("shorter than its header");
    }
    if &bytes[0..8] != MAGIC {
        return Err("bad magic");
    }
    let (body, crc) = bytes.split_at(bytes.len() - CRC_LEN);
    if logd_storage::crc32c(body) != u32::from_be_bytes(crc.try_into().expect("4 bytes")) {
        return Err("checksum mismatch");
    }
    if u16::from_be_bytes([body[8], body[9]]) != VERSION {
        return Err("unsupported version");
    }
    let u16_at = |at: usize| usize::from(u16::from_be_bytes([body[at], body[at + 1]]));
    let u32_at = |at: usize| u32::from_be_bytes(body[at..at + 4].try_into().expect("4 bytes"));
    let (source_len, target_len, batch_len) = (u16_at(28), u16_at(30), u32_at(32) as usize);
    if FIXED_LEN + source_len + target_len + batch_len != body.len() {
        return Err("lengths do not add up to its size");
    }
    let text = |range: std::ops::Range<usize>| {
        String::from_utf8(body[range].to_vec()).map_err(|_| "topic is not UTF-8")
    };
    let source_end = FIXED_LEN + source_len;
    let target_end = source_end + target_len;
    Ok(Hop {
        source_partition: u32_at(12),
        source_offset: i64::from_be_bytes(body[16..24].try_into().expect("8 bytes")),
        target_partition: u32_at(24),
        source_topic: text(FIXED_LEN..source_end)?,
        target_topic: text(source_end..target_end)?,
        batch: body[target_end..].to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use logd_storage::{CrashMode, RealFs, SimFs};
    use proptest::prelude::*;

    use super::*;

    fn hop() -> Hop {
        Hop {
            source_topic: "orders".into(),
            source_partition: 2,
            source_offset: 41,
            target_topic: "orders.retry.10s".into(),
            target_partition: 2,
            batch: vec![1, 2, 3, 4],
        }
    }

    #[test]
    fn the_journal_holds_the_last_hop_across_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let (journal, none) = HopJournal::open(Arc::new(RealFs), dir.path()).unwrap();
        assert!(none.is_none());
        journal.record(&hop()).unwrap();
        let later = Hop {
            source_offset: 42,
            ..hop()
        };
        journal.record(&later).unwrap();
        assert_eq!(
            HopJournal::open(Arc::new(RealFs), dir.path()).unwrap().1,
            Some(later)
        );
    }

    /// Records hops 0, 1, 2... until done or the power is cut; returns the last acknowledged
    /// hop's offset and how many were attempted.
    fn journal_workload(fs: &SimFs) -> (Option<i64>, i64) {
        let (mut acked, mut attempted) = (None, 0);
        let Ok((journal, _)) = HopJournal::open(Arc::new(fs.clone()), Path::new("/state")) else {
            return (acked, attempted);
        };
        for offset in 0..4 {
            attempted = offset;
            match journal.record(&Hop {
                source_offset: offset,
                ..hop()
            }) {
                Ok(()) => acked = Some(offset),
                Err(_) => break,
            }
        }
        (acked, attempted)
    }

    #[test]
    fn a_power_cut_at_any_operation_keeps_the_acknowledged_hop() {
        let total = {
            let fs = SimFs::new();
            journal_workload(&fs);
            fs.ops()
        };
        for cut in 0..=total {
            let fs = SimFs::new();
            fs.cut_power_after(cut);
            let (acked, attempted) = journal_workload(&fs);
            for mode in [
                CrashMode::DropUnsynced,
                CrashMode::KeepSomeUnsynced,
                CrashMode::TearTail,
            ] {
                let image = fs.crash_image(mode, cut);
                let (_, recovered) = HopJournal::open(Arc::new(image), Path::new("/state"))
                    .unwrap_or_else(|e| panic!("cut {cut} {mode:?}: {e}"));
                let recovered = recovered.map(|h| h.source_offset);
                // The acknowledged hop, or the one in flight after it: never older, never none.
                assert!(
                    recovered == acked || recovered == Some(attempted),
                    "cut {cut} {mode:?}: recovered {recovered:?}, acknowledged {acked:?}"
                );
            }
        }
    }

    #[test]
    fn every_damaged_byte_is_caught_and_reported() {
        let good = encode(&hop());
        assert_eq!(&good[0..8], b"LOGDHOPJ");
        assert_eq!(&good[16..24], &41i64.to_be_bytes(), "source offset");
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x20;
            assert!(decode(&bad).is_err(), "flipped byte {i}");
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE_NAME), &good[..good.len() - 1]).unwrap();
        let err = HopJournal::open(Arc::new(RealFs), dir.path())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("hop-in-flight") && err.contains("delete it"),
            "{err}"
        );
    }

    proptest! {
        #[test]
        fn hops_round_trip(
            source in "[a-z.]{1,30}", target in "[a-z.]{1,40}",
            partition in any::<u32>(), offset in 0..i64::MAX,
            batch in prop::collection::vec(any::<u8>(), 0..300),
        ) {
            let hop = Hop {
                source_topic: source, source_partition: partition, source_offset: offset,
                target_topic: target, target_partition: partition / 2, batch,
            };
            prop_assert_eq!(decode(&encode(&hop)).unwrap(), hop);
        }

        #[test]
        fn any_bytes_decode_or_fail_cleanly(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode(&bytes);
        }
    }
}
