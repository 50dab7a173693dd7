//! Opening a state log: the newest snapshot, then every log from its generation on, a torn
//! last frame cut, older logs deleted.

use std::collections::VecDeque;
use std::path::Path;

use super::frame::{self, Decoded};
use super::{Inner, Snapshot, StateMachine};
use crate::error::{Error, Result};
use crate::io::{Storage, StorageFile};

pub(super) fn log_name(name: &str, generation: u64) -> String {
    format!("{name}-{generation:020}.log")
}

pub(super) fn snapshot_name(name: &str) -> String {
    format!("{name}.snapshot")
}

pub(super) fn parse_log_name(name: &str, file: &str) -> Option<u64> {
    let digits = file
        .strip_prefix(name)?
        .strip_prefix('-')?
        .strip_suffix(".log")?;
    (digits.len() == 20).then(|| digits.parse().ok())?
}

fn corrupted(path: &Path, position: u64, reason: &'static str) -> Error {
    Error::Corrupted {
        path: path.to_owned(),
        position,
        source: Box::new(Error::CorruptFile {
            path: path.to_owned(),
            reason,
        }),
    }
}

fn read_all(file: &dyn StorageFile, path: &Path) -> Result<Vec<u8>> {
    let len = file.size().map_err(Error::io("stat", path))?;
    let len = usize::try_from(len).map_err(|_| corrupted(path, 0, "file too large"))?;
    let mut buf = vec![0u8; len];
    file.read_exact_at(&mut buf, 0)
        .map_err(Error::io("read", path))?;
    Ok(buf)
}

/// Whether a whole valid frame starts where the (bad) frame at `pos` says it ends.
fn valid_frame_after<S: StateMachine>(bytes: &[u8], pos: usize) -> bool {
    let Some(header) = bytes.get(pos..pos + frame::FRAME_HEADER_LEN) else {
        return false;
    };
    let len = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
    let next = pos + frame::FRAME_HEADER_LEN + len.min(frame::MAX_PAYLOAD);
    next < bytes.len()
        && matches!(
            frame::decode::<S::Record>(&bytes[next..]),
            Decoded::Frame(..)
        )
}

pub(super) fn recover<S: StateMachine>(
    storage: &dyn Storage,
    dir: &Path,
    name: &str,
) -> Result<Inner<S>> {
    let names = storage.list_dir(dir).map_err(Error::io("list", dir))?;
    let snapshot_file = snapshot_name(name);
    // `replace_file`'s temporary name: a crash before its rename leaves it behind.
    let temp_file = format!("{snapshot_file}.tmp");
    if names.contains(&temp_file) {
        let temp = dir.join(&temp_file);
        storage
            .remove_file(&temp)
            .map_err(Error::io("remove", &temp))?;
    }
    let snapshot: Snapshot<S> = if names.contains(&snapshot_file) {
        let path = dir.join(&snapshot_file);
        let file = storage
            .open(&path, false)
            .map_err(Error::io("open", &path))?;
        let bytes = read_all(&*file, &path)?;
        match frame::decode::<Snapshot<S>>(&bytes) {
            Decoded::Frame(snapshot, len) if len == bytes.len() => snapshot,
            _ => return Err(corrupted(&path, 0, "snapshot does not decode")),
        }
    } else {
        Snapshot::default()
    };
    let mut generations: Vec<u64> = names
        .iter()
        .filter_map(|n| parse_log_name(name, n))
        .collect();
    generations.sort_unstable();
    let mut state = snapshot.state;
    let mut removed = false;
    for &old in generations
        .iter()
        .filter(|g| **g < snapshot.next_generation)
    {
        let path = dir.join(log_name(name, old));
        storage
            .remove_file(&path)
            .map_err(Error::io("remove", &path))?;
        removed = true;
    }
    generations.retain(|g| *g >= snapshot.next_generation);
    if generations.is_empty() {
        generations.push(snapshot.next_generation);
    }
    let last = *generations.last().expect("at least one generation");
    let mut active = None;
    for &generation in &generations {
        let path = dir.join(log_name(name, generation));
        let file = storage
            .open(&path, true)
            .map_err(Error::io("open", &path))?;
        let bytes = read_all(&*file, &path)?;
        let mut pos = 0;
        while pos < bytes.len() {
            match frame::decode::<S::Record>(&bytes[pos..]) {
                Decoded::Frame(record, len) => {
                    state.apply(record);
                    pos += len;
                }
                Decoded::Invalid(reason)
                    if generation == last && valid_frame_after::<S>(&bytes, pos) =>
                {
                    // A torn write damages a suffix of the file: a bad frame with a good one
                    // after it is damage to data that was acknowledged, not a torn tail.
                    return Err(corrupted(&path, pos as u64, reason));
                }
                Decoded::Truncated | Decoded::Invalid(_) if generation == last => {
                    // A torn last frame: its write never returned, so nothing acknowledged is
                    // lost by cutting it.
                    file.set_len(pos as u64)
                        .map_err(Error::io("truncate", &path))?;
                    file.sync_data().map_err(Error::io("fsync", &path))?;
                    break;
                }
                Decoded::Truncated => return Err(corrupted(&path, pos as u64, "frame cut short")),
                Decoded::Invalid(reason) => return Err(corrupted(&path, pos as u64, reason)),
            }
        }
        if generation == last {
            active = Some((file, path, pos as u64));
        }
    }
    if removed || generations.len() == 1 {
        storage.sync_dir(dir).map_err(Error::io("fsync", dir))?;
    }
    let (log, log_path, log_len) = active.expect("the last generation was opened");
    Ok(Inner {
        state,
        generation: last,
        log,
        log_path,
        log_len,
        synced_len: log_len,
        syncing: false,
        unsynced: VecDeque::new(),
        poisoned: false,
    })
}
