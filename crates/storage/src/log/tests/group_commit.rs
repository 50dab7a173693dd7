//! Under `fsync = always`, appends that arrive while an fdatasync is in flight share the next
//! one instead of each paying for their own.

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;

use super::*;
use crate::{DirLock, SimFs, Storage, StorageFile};

/// Storage whose `fdatasync` takes 5 ms and is counted, like a real disk flush.
#[derive(Debug)]
struct SlowSync {
    inner: SimFs,
    syncs: Arc<AtomicU64>,
}

#[derive(Debug)]
struct SlowFile {
    inner: Arc<dyn StorageFile>,
    syncs: Arc<AtomicU64>,
}

impl Storage for SlowSync {
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        self.inner.create_dir_all(path)
    }
    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        self.inner.list_dir(path)
    }
    fn open(&self, path: &Path, create: bool) -> io::Result<Arc<dyn StorageFile>> {
        Ok(Arc::new(SlowFile {
            inner: self.inner.open(path, create)?,
            syncs: self.syncs.clone(),
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
    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        self.inner.remove_dir_all(path)
    }
    fn lock_dir(&self, path: &Path) -> io::Result<DirLock> {
        self.inner.lock_dir(path)
    }
}

impl StorageFile for SlowFile {
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
        std::thread::sleep(Duration::from_millis(5));
        self.syncs.fetch_add(1, Ordering::Relaxed);
        self.inner.sync_data()
    }
    fn map(&self, len: u64) -> io::Result<Bytes> {
        self.inner.map(len)
    }
}

#[test]
fn concurrent_appends_share_fdatasyncs() {
    const THREADS: usize = 8;
    const APPENDS: usize = 25;
    let syncs = Arc::new(AtomicU64::new(0));
    let storage = Arc::new(SlowSync {
        inner: SimFs::new(),
        syncs: syncs.clone(),
    });
    let config = LogConfig {
        checkpoint_interval_bytes: 1 << 30,
        segment_bytes: 1 << 30,
        ..small_config()
    };
    let log = Arc::new(PartitionLog::open_with(storage, "/p", config).unwrap());
    let before = syncs.load(Ordering::Relaxed);
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                for i in 0..APPENDS {
                    let info = log
                        .append(&mut batch_of(&[format!("{t}-{i}").into_bytes()], 0))
                        .unwrap();
                    assert!(
                        log.durable_end_offset() > info.last_offset,
                        "acknowledged before durable"
                    );
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    let used = syncs.load(Ordering::Relaxed) - before;
    let appends = (THREADS * APPENDS) as u64;
    // One fsync per append would be 200; with 8 writers waiting on each flush, a shared
    // fsync serves several of them.
    assert!(
        used * 2 <= appends,
        "{used} fdatasyncs for {appends} appends: no group commit"
    );
    assert_eq!(log.end_offset().0, appends as i64);
}
