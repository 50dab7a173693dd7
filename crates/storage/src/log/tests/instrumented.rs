//! A simulated file system that counts and can slow down `fdatasync`s and records every
//! writeback request, for tests that check how the log drives the disk rather than what it
//! stores.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;

use crate::{DirLock, SimFs, Storage, StorageFile};

/// What the instrumented files saw, shared by all of them.
#[derive(Debug, Default)]
pub(super) struct Seen {
    /// `fdatasync`s of any file.
    pub syncs: AtomicU64,
    /// Every `start_writeback` call: file, position, length.
    pub writebacks: Mutex<Vec<(PathBuf, u64, u64)>>,
    /// When set, `start_writeback` fails with EIO, as when the device reports a write error.
    pub fail_writeback: AtomicBool,
}

/// [`SimFs`] whose `fdatasync` takes `sync_delay`, like a real disk flush, and is counted.
#[derive(Debug)]
pub(super) struct Instrumented {
    inner: SimFs,
    sync_delay: Duration,
    pub seen: Arc<Seen>,
}

impl Instrumented {
    pub(super) fn new(sync_delay: Duration) -> Instrumented {
        Instrumented {
            inner: SimFs::new(),
            sync_delay,
            seen: Arc::default(),
        }
    }

    pub(super) fn syncs(&self) -> u64 {
        self.seen.syncs.load(Ordering::Relaxed)
    }
}

#[derive(Debug)]
struct InstrumentedFile {
    inner: Arc<dyn StorageFile>,
    path: PathBuf,
    sync_delay: Duration,
    seen: Arc<Seen>,
}

impl Storage for Instrumented {
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        self.inner.create_dir_all(path)
    }
    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        self.inner.list_dir(path)
    }
    fn open(&self, path: &Path, create: bool) -> io::Result<Arc<dyn StorageFile>> {
        Ok(Arc::new(InstrumentedFile {
            inner: self.inner.open(path, create)?,
            path: path.to_owned(),
            sync_delay: self.sync_delay,
            seen: self.seen.clone(),
        }))
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.inner.remove_file(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)
    }
    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        self.inner.sync_dir(path)
    }
    fn sync_fs(&self, path: &Path) -> io::Result<()> {
        self.inner.sync_fs(path)
    }
    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        self.inner.remove_dir_all(path)
    }
    fn lock_file(&self, path: &Path) -> io::Result<DirLock> {
        self.inner.lock_file(path)
    }

    fn lock_dir(&self, path: &Path) -> io::Result<DirLock> {
        self.inner.lock_dir(path)
    }
}

impl StorageFile for InstrumentedFile {
    fn size(&self) -> io::Result<u64> {
        self.inner.size()
    }
    fn write_all_at(&self, buf: &[u8], pos: u64) -> io::Result<()> {
        self.inner.write_all_at(buf, pos)
    }
    fn read_exact_at(&self, buf: &mut [u8], pos: u64) -> io::Result<()> {
        self.inner.read_exact_at(buf, pos)
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)
    }
    fn sync_data(&self) -> io::Result<()> {
        std::thread::sleep(self.sync_delay);
        self.seen.syncs.fetch_add(1, Ordering::Relaxed);
        self.inner.sync_data()
    }
    fn start_writeback(&self, pos: u64, len: u64) -> io::Result<()> {
        self.seen
            .writebacks
            .lock()
            .push((self.path.clone(), pos, len));
        if self.seen.fail_writeback.load(Ordering::Relaxed) {
            return Err(io::Error::from_raw_os_error(5));
        }
        self.inner.start_writeback(pos, len)
    }
    fn map(&self, len: u64) -> io::Result<Bytes> {
        self.inner.map(len)
    }
}
