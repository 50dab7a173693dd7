//! Producer ids for idempotent producers (Kafka's InitProducerId, and the embedded
//! [`crate::Producer`]), never handed out twice across restarts and crashes: ids come from
//! blocks of [`BLOCK_SIZE`], and the end of a block is made durable in `producer-ids` before
//! the block's first id is used. A restart continues after the last durable block end, so the
//! ids a crash left unused are skipped, never reused (Kafka's `ProducerIdManager` does the
//! same with blocks of 1,000).
//!
//! ```text
//! offset  size  field
//!      0     8  magic "LOGDPIDS"
//!      8     2  version (1)
//!     10     2  reserved (0)
//!     12     8  block_end   no id at or above it was ever handed out
//!     20     4  crc         CRC-32C of bytes 0..20
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;

use logd_storage::Storage;
use parking_lot::Mutex;

use crate::error::{Error, Result};

/// Ids reserved per durable write.
pub const BLOCK_SIZE: i64 = 1000;
/// File name inside the data directory.
pub(crate) const FILE_NAME: &str = "producer-ids";
const MAGIC: &[u8; 8] = b"LOGDPIDS";
const VERSION: u16 = 1;
const CRC_AT: usize = 20;
const LEN: usize = 24;
const _: () = assert!(CRC_AT + 4 == LEN);

/// The allocator. Shared by every producer of one engine.
#[derive(Debug)]
pub(crate) struct ProducerIds {
    storage: Arc<dyn Storage>,
    dir: PathBuf,
    state: Mutex<Block>,
}

#[derive(Debug, Clone, Copy)]
struct Block {
    /// The next id to hand out.
    next: i64,
    /// The durable end of the current block.
    end: i64,
}

impl ProducerIds {
    /// Reads the last durable block end of `dir`; a missing file starts at 0. A damaged one is
    /// an error: starting anywhere else could hand out an id twice.
    pub(crate) fn open(storage: Arc<dyn Storage>, dir: &Path) -> Result<ProducerIds> {
        let path = dir.join(FILE_NAME);
        let end = match storage.open(&path, false) {
            Ok(file) => {
                let mut buf = [0u8; LEN];
                let len = file.size().map_err(|e| damaged(&path, e.to_string()))?;
                if len != LEN as u64 {
                    return Err(damaged(&path, format!("{len} bytes, expected {LEN}")));
                }
                file.read_exact_at(&mut buf, 0)
                    .map_err(|e| damaged(&path, e.to_string()))?;
                decode(&buf).map_err(|reason| damaged(&path, reason.to_owned()))?
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(e) => return Err(damaged(&path, e.to_string())),
        };
        Ok(ProducerIds {
            storage,
            dir: dir.to_owned(),
            state: Mutex::new(Block { next: end, end }),
        })
    }

    /// A producer id never handed out before, making a new block durable first if needed.
    pub(crate) fn allocate(&self) -> Result<i64> {
        let mut block = self.state.lock();
        if block.next == block.end {
            let end = block.end + BLOCK_SIZE;
            logd_storage::replace_file(&*self.storage, &self.dir, FILE_NAME, &encode(end), true)?;
            block.end = end;
        }
        let id = block.next;
        block.next += 1;
        Ok(id)
    }

    /// True if `id` may have been handed out (by this run or an earlier one).
    pub(crate) fn handed_out(&self, id: i64) -> bool {
        id < self.state.lock().next
    }
}

fn damaged(path: &Path, reason: String) -> Error {
    Error::ProducerIds {
        path: path.to_owned(),
        reason,
    }
}

fn encode(block_end: i64) -> [u8; LEN] {
    let mut out = [0u8; LEN];
    out[0..8].copy_from_slice(MAGIC);
    out[8..10].copy_from_slice(&VERSION.to_be_bytes());
    out[12..20].copy_from_slice(&block_end.to_be_bytes());
    let crc = logd_storage::crc32c(&out[..CRC_AT]);
    out[CRC_AT..].copy_from_slice(&crc.to_be_bytes());
    out
}

fn decode(buf: &[u8; LEN]) -> std::result::Result<i64, &'static str> {
    if &buf[0..8] != MAGIC {
        return Err("bad magic");
    }
    let crc = u32::from_be_bytes(buf[CRC_AT..].try_into().expect("4 bytes"));
    if logd_storage::crc32c(&buf[..CRC_AT]) != crc {
        return Err("checksum mismatch");
    }
    if u16::from_be_bytes([buf[8], buf[9]]) != VERSION {
        return Err("unsupported version");
    }
    let end = i64::from_be_bytes(buf[12..20].try_into().expect("8 bytes"));
    if end < 0 || end % BLOCK_SIZE != 0 {
        return Err("block end is not a whole number of blocks");
    }
    Ok(end)
}

#[cfg(test)]
mod tests {
    use logd_storage::{CrashMode, SimFs};

    use super::*;

    const DIR: &str = "/data";

    /// A file system whose data directory exists (durably), as the engine leaves it.
    fn new_fs() -> SimFs {
        let fs = SimFs::new();
        logd_storage::create_dir_durable(&fs, Path::new(DIR)).unwrap();
        fs
    }

    fn open(fs: &SimFs) -> Result<ProducerIds> {
        ProducerIds::open(Arc::new(fs.clone()), Path::new(DIR))
    }

    #[test]
    fn ids_continue_after_the_last_durable_block_on_reopen() {
        let fs = new_fs();
        let ids = open(&fs).unwrap();
        assert_eq!((ids.allocate().unwrap(), ids.allocate().unwrap()), (0, 1));
        assert!(ids.handed_out(1) && !ids.handed_out(2));
        drop(ids);
        let ids = open(&fs).unwrap();
        assert_eq!(
            ids.allocate().unwrap(),
            BLOCK_SIZE,
            "the rest of block 0 is skipped"
        );
        assert!(ids.handed_out(5), "an earlier run may have handed it out");
    }

    #[test]
    fn a_crash_at_any_point_never_reuses_an_id() {
        let (start, total) = {
            let fs = new_fs();
            let start = fs.ops();
            let ids = open(&fs).unwrap();
            for _ in 0..2500 {
                ids.allocate().unwrap();
            }
            (start, fs.ops())
        };
        for cut in start..=total {
            let fs = new_fs();
            fs.cut_power_after(cut);
            let mut handed = Vec::new();
            if let Ok(ids) = open(&fs) {
                while let Ok(id) = ids.allocate() {
                    handed.push(id);
                    if handed.len() == 2500 {
                        break;
                    }
                }
            }
            for mode in [CrashMode::DropUnsynced, CrashMode::KeepSomeUnsynced] {
                let image = fs.crash_image(mode, cut);
                let next = open(&image).unwrap().allocate().unwrap();
                assert!(
                    handed.iter().all(|&id| id < next),
                    "cut {cut} {mode:?}: {next} was handed out before the crash"
                );
            }
        }
    }

    #[test]
    fn a_damaged_file_refuses_to_open_rather_than_reuse_ids() {
        let fs = new_fs();
        open(&fs).unwrap().allocate().unwrap();
        let good = encode(BLOCK_SIZE);
        assert_eq!(decode(&good), Ok(BLOCK_SIZE));
        for i in 0..LEN {
            let mut bad = good;
            bad[i] ^= 1;
            assert!(decode(&bad).is_err(), "flipped byte {i}");
        }
        let file = fs.open(&Path::new(DIR).join(FILE_NAME), false).unwrap();
        file.write_all_at(b"X", 3).unwrap();
        assert!(matches!(open(&fs), Err(Error::ProducerIds { .. })));
    }
}
