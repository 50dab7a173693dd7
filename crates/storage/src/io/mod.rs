//! The file operations the log needs, behind a trait so the same code runs on the real file
//! system ([`RealFs`]) and on a simulated one that models power loss ([`SimFs`]).
//!
//! The trait is deliberately small: positioned writes, `fdatasync` (and a hint to start
//! writeback early), directory fsync, a sync of the whole file system, rename, remove, and a read-only mapping. Everything
//! durable in the log goes through it.

mod cache;
mod real;
mod sim;
mod sim_store;

use std::fmt;
use std::io;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;

pub use cache::CachedFs;
pub use real::RealFs;
pub use sim::{CrashMode, FaultKind, SimFs, SplitMix64};
pub use sim_store::{PowerCutStore, check_every_power_cut};

/// A file system: the directory operations the log uses.
pub trait Storage: Send + Sync + fmt::Debug {
    /// Creates `path` and its parents; directories are private to the owner (0700).
    fn create_dir_all(&self, path: &Path) -> io::Result<()>;
    /// Names of the entries in directory `path`.
    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>>;
    /// Opens `path` for reading and writing, creating it (0600) when `create` is set.
    fn open(&self, path: &Path, create: bool) -> io::Result<Arc<dyn StorageFile>>;
    /// Removes the file `path`; durable only after [`Storage::sync_dir`] of its directory.
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// Atomically renames `from` to `to` in the same directory, replacing `to`; durable only
    /// after [`Storage::sync_dir`].
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Makes the directory's entries (creates, renames, removes) durable.
    fn sync_dir(&self, path: &Path) -> io::Result<()>;
    /// Makes everything written on the file system holding `path` durable, every file's data
    /// and size and every directory's entries, with one call (Linux `syncfs`): what a sync of
    /// each file would do for thousands of files at the cost of one device flush. Fails with
    /// `Unsupported` where that call would not report write-back errors (Linux before 5.8), so
    /// the caller syncs file by file instead.
    fn sync_fs(&self, path: &Path) -> io::Result<()>;
    /// Removes directory `path` and everything in it; durable after [`Storage::sync_dir`] of
    /// its parent.
    fn remove_dir_all(&self, path: &Path) -> io::Result<()>;
    /// Takes an exclusive lock on directory `path`, held until the returned guard is dropped;
    /// fails with `WouldBlock` when someone else holds it. On a real file system it tries for
    /// half a second first, since a child being spawned briefly shares this process's open
    /// files and with them a lock just released.
    fn lock_dir(&self, path: &Path) -> io::Result<DirLock>;
    /// Takes an exclusive lock on the file at `path` (created if missing), waiting while
    /// another process or thread holds it: coordination between writers of one small file
    /// (the credentials), not durable state.
    fn lock_file(&self, path: &Path) -> io::Result<DirLock>;
}

/// An open file.
pub trait StorageFile: Send + Sync + fmt::Debug {
    /// Current size in bytes (including what is written but not yet durable).
    fn size(&self) -> io::Result<u64>;
    /// Writes all of `buf` at `pos`.
    fn write_all_at(&self, buf: &[u8], pos: u64) -> io::Result<()>;
    /// Fills `buf` from `pos`.
    fn read_exact_at(&self, buf: &mut [u8], pos: u64) -> io::Result<()>;
    /// Truncates or extends the file to `len` bytes.
    fn set_len(&self, len: u64) -> io::Result<()>;
    /// `fdatasync`: the file's data and length are durable when this returns `Ok`.
    fn sync_data(&self) -> io::Result<()>;
    /// Asks the OS to start writing `[pos, pos + len)` to the device and returns without
    /// waiting for it (Linux `sync_file_range(SYNC_FILE_RANGE_WRITE)`). It makes nothing
    /// durable, only [`StorageFile::sync_data`] does: it lets the device work while the log
    /// keeps appending, so a later `fdatasync` has little left to write.
    fn start_writeback(&self, pos: u64, len: u64) -> io::Result<()>;
    /// A read-only view of bytes `[0, len)`, memory-mapped on a real file system. The caller
    /// must not shrink the file below `len` while the view is alive.
    fn map(&self, len: u64) -> io::Result<Bytes>;
}

/// The whole content of the small file at `path` (a `NotFound` error when there is none).
pub fn read_file(storage: &dyn Storage, path: &Path) -> io::Result<Vec<u8>> {
    let file = storage.open(path, false)?;
    let len = usize::try_from(file.size()?)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "file too large"))?;
    let mut bytes = vec![0; len];
    file.read_exact_at(&mut bytes, 0)?;
    Ok(bytes)
}

/// Replaces `dir/name` with `bytes` atomically and durably: write `dir/name.tmp`, fsync it,
/// rename it over `dir/name`, fsync `dir`. After a crash the file holds either the old or the
/// new bytes, never a mix. With `sync_dir` false the rename is not made durable (only the
/// crash tests' deliberately broken variant does that).
pub fn replace_file(
    storage: &dyn Storage,
    dir: &Path,
    name: &str,
    bytes: &[u8],
    sync_dir: bool,
) -> crate::Result<()> {
    use crate::Error;
    let temp = dir.join(format!("{name}.tmp"));
    let file = storage
        .open(&temp, true)
        .map_err(Error::io("create", &temp))?;
    file.set_len(0).map_err(Error::io("truncate", &temp))?;
    file.write_all_at(bytes, 0)
        .map_err(Error::io("write", &temp))?;
    file.sync_data().map_err(Error::io("fsync", &temp))?;
    let path = dir.join(name);
    storage
        .rename(&temp, &path)
        .map_err(Error::io("rename", &path))?;
    if sync_dir {
        storage.sync_dir(dir).map_err(Error::io("fsync", dir))?;
    }
    Ok(())
}

/// The process holding the lock of a directory `Storage::lock_dir` locked on the real file
/// system, as Linux's `/proc/locks` reports flock holders (by device and inode of the `.lock`
/// file); `None` where that cannot be told.
pub fn lock_holder(dir: &Path) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(dir.join(".lock")).ok()?;
    let wanted = format!(
        "{:02x}:{:02x}:{}",
        libc::major(meta.dev()),
        libc::minor(meta.dev()),
        meta.ino()
    );
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    // "1: FLOCK  ADVISORY  WRITE 4711 fd:01:1234567 0 EOF"; waiters' lines read "1: -> FLOCK".
    locks.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        (fields.get(1) == Some(&"FLOCK") && fields.get(5) == Some(&wanted.as_str()))
            .then(|| fields.get(4)?.parse().ok())
            .flatten()
    })
}

/// Creates directory `path` and any missing parents so that they survive a power cut: each new
/// directory's entry is made durable by fsyncing its parent. Existing directories cost a
/// lookup only.
pub fn create_dir_durable(storage: &dyn Storage, path: &Path) -> io::Result<()> {
    let missing: Vec<&Path> = path
        .ancestors()
        .filter(|p| !p.as_os_str().is_empty())
        .take_while(|p| storage.list_dir(p).is_err())
        .collect();
    storage.create_dir_all(path)?;
    for dir in missing.into_iter().rev() {
        if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            storage.sync_dir(parent)?;
        }
    }
    Ok(())
}

/// Holds a directory lock; dropping it releases the lock.
pub struct DirLock(#[allow(dead_code, reason = "held for its Drop")] Box<dyn Send + Sync>);

impl fmt::Debug for DirLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DirLock")
    }
}

/// The size and the space left to unprivileged writers of the file system holding `dir`, in
/// bytes; -1 each when the system cannot say (Kafka's "unknown").
#[allow(
    unsafe_code,
    reason = "statvfs(3) is a system call libc exposes only as unsafe FFI"
)]
pub fn disk_space(dir: &std::path::Path) -> (i64, i64) {
    use std::os::unix::ffi::OsStrExt;
    let Ok(path) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return (-1, -1);
    };
    // SAFETY: `statvfs` is plain old data, for which all zero bytes are a valid value.
    let mut stats: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is NUL-terminated and outlives the call; `stats` is a valid out-parameter.
    if unsafe { libc::statvfs(path.as_ptr(), &mut stats) } != 0 {
        return (-1, -1);
    }
    let block = stats.f_frsize as i64;
    (
        (stats.f_blocks as i64).saturating_mul(block),
        (stats.f_bavail as i64).saturating_mul(block),
    )
}
