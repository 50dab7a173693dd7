//! [`CachedFs`]: a [`Storage`] that keeps at most `max_open_files` descriptors open, so the
//! number of partitions is bounded by disk and memory rather than by the process's open-file
//! limit (RocksDB's `max_open_files`). Its files are handles that open their descriptor on use
//! and give it back when less recently used files need room.
//!
//! Durability is kept across a close: a file written since its last `fdatasync` is synced
//! before its descriptor closes, and if that sync fails its error is kept and returned by the
//! file's next `sync_data`, so the log owning it poisons itself exactly as if its own fsync had
//! failed. Mappings outlive their descriptor. Directory locks are taken in process: whoever
//! builds a `CachedFs` over a directory holds that directory's own lock, which keeps other
//! processes out, so a lock per partition directory need not cost a descriptor.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use bytes::Bytes;
use parking_lot::Mutex;

use super::{DirLock, Storage, StorageFile};

/// How many of the least recently used files a new descriptor looks through for one with
/// nothing to sync before it settles for the oldest.
const CLEAN_VICTIM_SEARCH: usize = 32;

/// A file system whose files share a bounded set of open descriptors.
pub struct CachedFs {
    shared: Arc<Shared>,
}

struct Shared {
    inner: Arc<dyn Storage>,
    max_open: usize,
    open: Mutex<OpenFiles>,
    locked: Mutex<HashSet<PathBuf>>,
}

/// The files with an open descriptor, least recently used first.
#[derive(Default)]
struct OpenFiles {
    next_id: u64,
    clock: u64,
    /// Use time to file id, for the open ones.
    by_use: BTreeMap<u64, u64>,
    /// File id to its descriptor and last use time.
    files: HashMap<u64, (Arc<dyn StorageFile>, u64)>,
    /// Every live handle's id and state, open or not.
    handles: HashMap<u64, Arc<HandleState>>,
}

/// What a handle keeps while its descriptor is closed.
struct HandleState {
    path: PathBuf,
    /// Written since the last successful `fdatasync` (or `sync_fs`).
    dirty: AtomicBool,
    /// Writes and truncations under way: `sync_fs` leaves a file written-to while one is,
    /// since it may land after the file system's sync began.
    changing: AtomicUsize,
    /// A sync made while closing the descriptor failed: the next `sync_data` reports it.
    failed_sync: Mutex<Option<(io::ErrorKind, String)>>,
}

impl CachedFs {
    /// `inner`'s files, at most `max_open_files` of them open at once (at least 2).
    pub fn new(inner: Arc<dyn Storage>, max_open_files: usize) -> CachedFs {
        CachedFs {
            shared: Arc::new(Shared {
                inner,
                max_open: max_open_files.max(2),
                open: Mutex::new(OpenFiles::default()),
                locked: Mutex::new(HashSet::new()),
            }),
        }
    }

    /// Descriptors open now (in-flight operations may hold a few more a moment longer).
    pub fn open_files(&self) -> usize {
        self.shared.open.lock().files.len()
    }
}

impl fmt::Debug for CachedFs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CachedFs")
            .field("inner", &self.shared.inner)
            .field("max_open", &self.shared.max_open)
            .finish()
    }
}

impl Shared {
    /// The descriptor of handle `id`, reopening `path` (and closing the least recently used
    /// others past the limit) if need be; `opened` is taken as the descriptor when it has none.
    fn descriptor(
        &self,
        id: u64,
        path: &Path,
        opened: Option<Arc<dyn StorageFile>>,
    ) -> io::Result<Arc<dyn StorageFile>> {
        let (file, evicted) = {
            let mut open = self.open.lock();
            open.clock += 1;
            let now = open.clock;
            let file = match (
                open.files.get(&id).map(|(f, used)| (f.clone(), *used)),
                opened,
            ) {
                (Some((file, used)), _) => {
                    open.by_use.remove(&used);
                    file
                }
                (None, Some(opened)) => opened,
                (None, None) => self.inner.open(path, false)?,
            };
            open.files.insert(id, (file.clone(), now));
            open.by_use.insert(now, id);
            let mut evicted = Vec::new();
            while open.files.len() > self.max_open {
                // The least recently used clean file among the oldest few, else the oldest:
                // closing a written file costs an fsync. Never the file being handed out now,
                // which its caller is about to use (and would reopen at once).
                let clean = open
                    .by_use
                    .iter()
                    .take(CLEAN_VICTIM_SEARCH)
                    .find(|(used, id)| {
                        **used != now
                            && open
                                .handles
                                .get(id)
                                .is_some_and(|s| !s.dirty.load(Ordering::Acquire))
                    })
                    .map(|(used, id)| (*used, *id));
                let Some((used, victim)) =
                    clean.or_else(|| open.by_use.iter().next().map(|(used, id)| (*used, *id)))
                else {
                    break;
                };
                open.by_use.remove(&used);
                if let Some((descriptor, _)) = open.files.remove(&victim)
                    && let Some(state) = open.handles.get(&victim)
                {
                    evicted.push((state.clone(), descriptor));
                }
            }
            (file, evicted)
        };
        // Outside the lock: a sync may take a while, and other files need not wait for it.
        for (state, descriptor) in evicted {
            state.close(descriptor);
        }
        Ok(file)
    }

    fn forget(&self, id: u64) {
        let mut open = self.open.lock();
        if let Some((_, used)) = open.files.remove(&id) {
            open.by_use.remove(&used);
        }
        open.handles.remove(&id);
    }
}

impl HandleState {
    /// Gives back a descriptor, syncing first what was written through it.
    fn close(&self, descriptor: Arc<dyn StorageFile>) {
        if self.dirty.swap(false, Ordering::AcqRel)
            && let Err(e) = descriptor.sync_data()
        {
            *self.failed_sync.lock() = Some((e.kind(), e.to_string()));
        }
    }
}

impl Storage for CachedFs {
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        self.shared.inner.create_dir_all(path)
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        self.shared.inner.list_dir(path)
    }

    /// After it succeeds, the files written before it have nothing left to sync, so closing
    /// their descriptors costs no fsync; if it fails they stay written-to, and closing one
    /// syncs it (and keeps that sync's error for its owner) as before.
    fn sync_fs(&self, path: &Path) -> io::Result<()> {
        // Cleared before the sync, then put back for a file with a change under way: a change
        // that ended before that look is in the page cache the sync writes, and one that
        // starts after the clear marks its file again itself.
        let written: Vec<Arc<HandleState>> = self
            .shared
            .open
            .lock()
            .handles
            .values()
            .filter(|s| s.dirty.swap(false, Ordering::SeqCst))
            .cloned()
            .collect();
        for state in &written {
            if state.changing.load(Ordering::SeqCst) > 0 {
                state.dirty.store(true, Ordering::SeqCst);
            }
        }
        let result = self.shared.inner.sync_fs(path);
        if result.is_err() {
            for state in written {
                state.dirty.store(true, Ordering::SeqCst);
            }
        }
        result
    }

    fn open(&self, path: &Path, create: bool) -> io::Result<Arc<dyn StorageFile>> {
        let descriptor = self.shared.inner.open(path, create)?;
        let state = Arc::new(HandleState {
            path: path.to_owned(),
            dirty: AtomicBool::new(false),
            changing: AtomicUsize::new(0),
            failed_sync: Mutex::new(None),
        });
        let id = {
            let mut open = self.shared.open.lock();
            open.next_id += 1;
            let id = open.next_id;
            open.handles.insert(id, state.clone());
            id
        };
        let handle = CachedFile {
            id,
            state,
            shared: self.shared.clone(),
        };
        // Count the descriptor just opened (and make room for it).
        handle.descriptor(Some(descriptor))?;
        Ok(Arc::new(handle))
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.shared.inner.remove_file(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.shared.inner.rename(from, to)
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        self.shared.inner.sync_dir(path)
    }

    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        self.shared.inner.remove_dir_all(path)
    }

    fn lock_file(&self, path: &Path) -> io::Result<DirLock> {
        self.shared.inner.lock_file(path)
    }

    fn lock_dir(&self, path: &Path) -> io::Result<DirLock> {
        if !self.shared.locked.lock().insert(path.to_owned()) {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        Ok(DirLock(Box::new(InProcessLock {
            shared: self.shared.clone(),
            path: path.to_owned(),
        })))
    }
}

/// A directory lock kept in the `CachedFs`; released when dropped.
struct InProcessLock {
    shared: Arc<Shared>,
    path: PathBuf,
}

impl Drop for InProcessLock {
    fn drop(&mut self) {
        self.shared.locked.lock().remove(&self.path);
    }
}

/// A file of a [`CachedFs`]: opens its descriptor on use.
struct CachedFile {
    id: u64,
    state: Arc<HandleState>,
    shared: Arc<Shared>,
}

impl fmt::Debug for CachedFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CachedFile").field("id", &self.id).finish()
    }
}

impl CachedFile {
    fn descriptor(&self, opened: Option<Arc<dyn StorageFile>>) -> io::Result<Arc<dyn StorageFile>> {
        self.shared.descriptor(self.id, &self.state.path, opened)
    }

    /// Runs a write or truncation, marking the file written-to before it and counting it as
    /// under way until it returns.
    fn change(&self, op: impl FnOnce(&dyn StorageFile) -> io::Result<()>) -> io::Result<()> {
        self.state.changing.fetch_add(1, Ordering::SeqCst);
        // Marked before the change: a close racing with it syncs, or leaves it marked.
        self.state.dirty.store(true, Ordering::SeqCst);
        let result = self.descriptor(None).and_then(|d| op(&*d));
        self.state.changing.fetch_sub(1, Ordering::SeqCst);
        result
    }
}

impl Drop for CachedFile {
    fn drop(&mut self) {
        self.shared.forget(self.id);
    }
}

impl StorageFile for CachedFile {
    fn size(&self) -> io::Result<u64> {
        self.descriptor(None)?.size()
    }

    fn write_all_at(&self, buf: &[u8], pos: u64) -> io::Result<()> {
        self.change(|file| file.write_all_at(buf, pos))
    }

    fn read_exact_at(&self, buf: &mut [u8], pos: u64) -> io::Result<()> {
        self.descriptor(None)?.read_exact_at(buf, pos)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.change(|file| file.set_len(len))
    }

    fn sync_data(&self) -> io::Result<()> {
        if let Some((kind, message)) = self.state.failed_sync.lock().take() {
            return Err(io::Error::new(
                kind,
                format!("fsync when its descriptor was closed failed: {message}"),
            ));
        }
        let descriptor = self.descriptor(None)?;
        let was_dirty = self.state.dirty.swap(false, Ordering::AcqRel);
        let synced = descriptor.sync_data();
        if synced.is_err() && was_dirty {
            self.state.dirty.store(true, Ordering::Release);
        }
        synced
    }

    fn start_writeback(&self, pos: u64, len: u64) -> io::Result<()> {
        self.descriptor(None)?.start_writeback(pos, len)
    }

    fn map(&self, len: u64) -> io::Result<Bytes> {
        self.descriptor(None)?.map(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{CrashMode, FaultKind, RealFs, SimFs};

    #[test]
    fn at_most_the_limit_stays_open_and_closed_files_reopen_with_their_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let fs = CachedFs::new(Arc::new(RealFs), 3);
        let files: Vec<_> = (0..10)
            .map(|i| {
                let file = fs.open(&dir.path().join(format!("f{i}")), true).unwrap();
                file.write_all_at(format!("file {i}").as_bytes(), 0)
                    .unwrap();
                assert!(fs.open_files() <= 3);
                file
            })
            .collect();
        for (i, file) in files.iter().enumerate().rev() {
            let mut buf = vec![0u8; format!("file {i}").len()];
            file.read_exact_at(&mut buf, 0).unwrap();
            assert_eq!(buf, format!("file {i}").as_bytes());
            file.sync_data().unwrap();
            assert_eq!(fs.open_files(), 3);
        }
        let mapped = files[0].map(6).unwrap();
        drop(files);
        assert_eq!(fs.open_files(), 0, "dropped handles close");
        assert_eq!(&mapped[..], b"file 0", "a mapping outlives its descriptor");
    }

    /// Whether `path`'s first `len` bytes are `expected` after a power cut now.
    fn durable(sim: &SimFs, path: &Path, expected: &[u8]) -> bool {
        let image = sim.crash_image(CrashMode::DropUnsynced, 1);
        let Ok(file) = image.open(path, false) else {
            return false;
        };
        let mut buf = vec![0u8; expected.len()];
        file.read_exact_at(&mut buf, 0).is_ok() && buf == expected
    }

    const DIR: &str = "/d";

    /// A simulated disk with directory `DIR`, and a cache of two descriptors over it.
    fn two_open_files() -> (SimFs, CachedFs) {
        let sim = SimFs::new();
        crate::io::create_dir_durable(&sim, Path::new(DIR)).unwrap();
        let fs = CachedFs::new(Arc::new(sim.clone()), 2);
        (sim, fs)
    }

    /// Creates `DIR/name` holding its own name.
    fn written(fs: &CachedFs, name: &str) -> Arc<dyn StorageFile> {
        let file = fs.open(&Path::new(DIR).join(name), true).unwrap();
        file.write_all_at(name.as_bytes(), 0).unwrap();
        file
    }

    #[test]
    fn a_closed_dirty_file_is_synced_first_and_a_failed_sync_is_reported_later() {
        let (sim, fs) = two_open_files();
        let dir = Path::new(DIR);
        let (_a, _b) = (written(&fs, "a"), written(&fs, "b"));
        sim.sync_dir(dir).unwrap();
        assert!(!durable(&sim, &dir.join("a"), b"a"));
        // Every open file is written: a third closes the oldest, `a`, syncing it first.
        let _c = written(&fs, "c");
        assert!(
            durable(&sim, &dir.join("a"), b"a"),
            "synced before its descriptor closed"
        );
        // A sync at close that fails is the file's next sync_data's error.
        let (x, _y) = (written(&fs, "x"), written(&fs, "y"));
        sim.sync_dir(dir).unwrap();
        sim.fail_nth(FaultKind::Sync, 0, 5);
        let _z = written(&fs, "z");
        let error = x.sync_data().unwrap_err().to_string();
        assert!(error.contains("descriptor was closed"), "{error}");
        assert!(x.sync_data().is_ok(), "reported once, then synced again");
    }

    #[test]
    fn a_file_with_nothing_to_sync_is_closed_before_a_written_one() {
        let (sim, fs) = two_open_files();
        let dir = Path::new(DIR);
        let written = fs.open(&dir.join("written"), true).unwrap();
        written.write_all_at(b"pending", 0).unwrap();
        let _clean = fs.open(&dir.join("clean"), true).unwrap();
        sim.sync_dir(dir).unwrap();
        // The oldest is written, the next clean: the clean one goes, nothing is synced.
        let _third = fs.open(&dir.join("third"), true).unwrap();
        assert!(!durable(&sim, &dir.join("written"), b"pending"));
        assert_eq!(fs.open_files(), 2);
    }

    #[test]
    fn after_a_file_system_sync_closing_a_written_file_syncs_nothing_unless_it_failed() {
        let (sim, fs) = two_open_files();
        let dir = Path::new(DIR);
        let (_a, _b) = (written(&fs, "a"), written(&fs, "b"));
        fs.sync_fs(dir).unwrap();
        assert!(durable(&sim, &dir.join("a"), b"a") && durable(&sim, &dir.join("b"), b"b"));
        // Both are clean now: a third file closes `a` with no sync (two ops: create, write).
        let before = sim.ops();
        let _c = written(&fs, "c");
        assert_eq!(sim.ops() - before, 2, "no fsync at close");
        // A failed file-system sync leaves the files written-to: closing one syncs it.
        let (_x, _y) = (written(&fs, "x"), written(&fs, "y"));
        sim.fail_nth(FaultKind::Sync, 0, 5);
        assert!(fs.sync_fs(dir).is_err());
        sim.sync_dir(dir).unwrap();
        assert!(!durable(&sim, &dir.join("x"), b"x"));
        let _z = written(&fs, "z");
        assert!(
            durable(&sim, &dir.join("x"), b"x"),
            "synced before its descriptor closed"
        );
    }

    #[test]
    fn directory_locks_are_exclusive_in_process_and_cost_no_descriptor() {
        let dir = tempfile::tempdir().unwrap();
        let fs = CachedFs::new(Arc::new(RealFs), 2);
        let held = fs.lock_dir(dir.path()).unwrap();
        assert_eq!(
            fs.lock_dir(dir.path()).unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
        assert_eq!(fs.open_files(), 0);
        drop(held);
        fs.lock_dir(dir.path()).unwrap();
    }
}
