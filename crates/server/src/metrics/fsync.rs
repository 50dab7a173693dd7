//! [`MeteredFs`]: the real file system with every `fdatasync` and directory fsync timed into a
//! histogram. The engine takes any `Storage`, so the daemon measures fsync latency without
//! the storage crate knowing about metrics.

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use logd_storage::{Bytes, DirLock, Storage, StorageFile};
use prometheus_client::metrics::histogram::Histogram;

/// A `Storage` that times fsyncs of the one it wraps.
#[derive(Debug)]
pub(crate) struct MeteredFs {
    inner: Arc<dyn Storage>,
    fsyncs: Histogram,
}

impl MeteredFs {
    /// Wraps `inner`, recording fsync latencies (seconds) into `fsyncs`.
    pub(crate) fn new(inner: Arc<dyn Storage>, fsyncs: Histogram) -> MeteredFs {
        MeteredFs { inner, fsyncs }
    }
}

fn timed<T>(histogram: &Histogram, op: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let out = op();
    histogram.observe(start.elapsed().as_secs_f64());
    out
}

impl Storage for MeteredFs {
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        self.inner.create_dir_all(path)
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        self.inner.list_dir(path)
    }

    fn open(&self, path: &Path, create: bool) -> io::Result<Arc<dyn StorageFile>> {
        Ok(Arc::new(MeteredFile {
            inner: self.inner.open(path, create)?,
            fsyncs: self.fsyncs.clone(),
        }))
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.inner.remove_file(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        timed(&self.fsyncs, || self.inner.sync_dir(path))
    }

    fn sync_fs(&self, path: &Path) -> io::Result<()> {
        timed(&self.fsyncs, || self.inner.sync_fs(path))
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

#[derive(Debug)]
struct MeteredFile {
    inner: Arc<dyn StorageFile>,
    fsyncs: Histogram,
}

impl StorageFile for MeteredFile {
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
        timed(&self.fsyncs, || self.inner.sync_data())
    }

    fn start_writeback(&self, pos: u64, len: u64) -> io::Result<()> {
        self.inner.start_writeback(pos, len)
    }

    fn map(&self, len: u64) -> io::Result<Bytes> {
        self.inner.map(len)
    }
}
