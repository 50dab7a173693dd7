//! A simulated file system that remembers what was written apart from what was made durable,
//! so tests can cut the power at any operation and reopen what a real disk might hold.
//!
//! Model: a file's bytes become durable at `sync_data`; a directory's entries (files and
//! subdirectories created, renamed, removed) become durable at `sync_dir` of that directory. A
//! crash image keeps the durable state plus, depending on the [`CrashMode`], none, some or all
//! of what was pending, possibly with a torn last sector; a directory whose entry in its parent
//! did not survive is gone with everything in it. The root `/` always exists.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;

use super::{DirLock, Storage, StorageFile};

/// How much of what was not durable survives a simulated power cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashMode {
    /// Only what was synced.
    DropUnsynced,
    /// What was synced, plus a random prefix of each file's unsynced appends and of each
    /// directory's unsynced entry changes.
    KeepSomeUnsynced,
    /// Everything written, but the last up-to-512 unsynced bytes of each file are garbage.
    TearTail,
}

impl CrashMode {
    /// Every mode.
    pub const ALL: [CrashMode; 3] = [
        CrashMode::DropUnsynced,
        CrashMode::KeepSomeUnsynced,
        CrashMode::TearTail,
    ];
}

/// Which operation a fault hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// `write_all_at`: the write stores a prefix of its bytes, then fails.
    Write,
    /// `sync_data` or `sync_fs`: nothing becomes durable and the call fails.
    Sync,
    /// `open` creating a file: nothing is created (as when the process is out of
    /// descriptors, EMFILE).
    Create,
}

/// A deterministic pseudo-random generator (SplitMix64) for simulations and tests.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// The simulated file system; clones share state.
#[derive(Debug, Clone, Default)]
pub struct SimFs {
    state: Arc<Mutex<SimState>>,
}

#[derive(Debug, Default)]
struct SimState {
    inodes: Vec<Inode>,
    dirs: BTreeMap<PathBuf, Dir>,
    /// Subtrees removed by `remove_dir_all`: gone for the running process, but back in a crash
    /// image where the parent's unlink was not durable.
    removed: BTreeMap<PathBuf, Dir>,
    locks: BTreeSet<PathBuf>,
    /// Mutating operations so far (each a possible crash point).
    ops: u64,
    /// After this many mutating operations the power is off: every later call fails.
    power_cut_after: Option<u64>,
    /// How long a file's `sync_data` takes, as a disk's flush does: bytes written meanwhile
    /// are not covered by it.
    sync_delay: std::time::Duration,
    fault: Option<Fault>,
}

#[derive(Debug, Clone, Default)]
struct Inode {
    written: Vec<u8>,
    durable: Vec<u8>,
}

#[derive(Debug, Clone, Default)]
struct Dir {
    durable: BTreeMap<String, usize>,
    written: BTreeMap<String, usize>,
    pending: Vec<DirOp>,
}

#[derive(Debug, Clone)]
enum DirOp {
    Link(String, usize),
    Unlink(String),
    Rename(String, String),
}

#[derive(Debug, Clone, Copy)]
struct Fault {
    kind: FaultKind,
    remaining: u64,
    errno: i32,
}

impl DirOp {
    fn apply(&self, entries: &mut BTreeMap<String, usize>) {
        match self {
            DirOp::Link(name, ino) => {
                entries.insert(name.clone(), *ino);
            }
            DirOp::Unlink(name) => {
                entries.remove(name);
            }
            DirOp::Rename(from, to) => {
                if let Some(ino) = entries.remove(from) {
                    entries.insert(to.clone(), ino);
                }
            }
        }
    }
}

/// The inode number that marks a directory entry naming a subdirectory.
const DIR_ENTRY: usize = usize::MAX;

fn split(path: &Path) -> io::Result<(PathBuf, String)> {
    let parent = path.parent().ok_or(io::ErrorKind::InvalidInput)?;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or(io::ErrorKind::InvalidInput)?;
    Ok((parent.to_owned(), name.to_owned()))
}

impl SimState {
    /// Counts one mutating operation; fails once the power is cut.
    fn tick(&mut self) -> io::Result<()> {
        if self.power_cut_after.is_some_and(|n| self.ops >= n) {
            return Err(io::Error::other("simulated power cut"));
        }
        self.ops += 1;
        Ok(())
    }

    /// Fails this operation if the injected fault is due.
    fn fault(&mut self, kind: FaultKind) -> Option<io::Error> {
        let fault = self.fault.as_mut()?;
        if fault.kind != kind {
            return None;
        }
        if fault.remaining > 0 {
            fault.remaining -= 1;
            return None;
        }
        let errno = fault.errno;
        self.fault = None;
        Some(io::Error::from_raw_os_error(errno))
    }

    fn dir(&mut self, path: &Path) -> io::Result<&mut Dir> {
        self.dirs
            .get_mut(path)
            .ok_or_else(|| io::ErrorKind::NotFound.into())
    }
}

impl SimFs {
    /// An empty file system.
    pub fn new() -> SimFs {
        SimFs::default()
    }

    /// Mutating operations (writes, syncs, creates, renames, removes) performed so far.
    pub fn ops(&self) -> u64 {
        self.state.lock().ops
    }

    /// Makes every later file `sync_data` take `delay`: it covers the bytes written before it
    /// began, and fails (covering nothing) if the power is cut before it ends.
    pub fn set_sync_delay(&self, delay: std::time::Duration) {
        self.state.lock().sync_delay = delay;
    }

    /// Cuts the power after `n` mutating operations in total: that operation and every later
    /// one fails, and nothing changes any more.
    pub fn cut_power_after(&self, n: u64) {
        self.state.lock().power_cut_after = Some(n);
    }

    /// Makes the `nth` (from 0) future operation of `kind` fail with OS error `errno`
    /// (e.g. `libc`'s EIO = 5, ENOSPC = 28).
    pub fn fail_nth(&self, kind: FaultKind, nth: u64, errno: i32) {
        self.state.lock().fault = Some(Fault {
            kind,
            remaining: nth,
            errno,
        });
    }

    /// Runs `workload` once to count its operations, then once more for each count from 0 to
    /// that, with the power cut after that many, and hands `check` each crash image (every
    /// [`CrashMode`]) with that run's result, the cut and the mode: the power-cut tests of the
    /// stores that replace a file whole. Returns how many states were checked.
    pub fn every_power_cut<T>(
        workload: impl Fn(&SimFs) -> T,
        mut check: impl FnMut(SimFs, &T, u64, CrashMode),
    ) -> usize {
        let total = {
            let fs = SimFs::new();
            workload(&fs);
            fs.ops()
        };
        let mut states = 0;
        for cut in 0..=total {
            let fs = SimFs::new();
            fs.cut_power_after(cut);
            let result = workload(&fs);
            for mode in CrashMode::ALL {
                check(fs.crash_image(mode, cut), &result, cut, mode);
                states += 1;
            }
        }
        states
    }

    /// What a disk could hold after the power was cut now: a new file system, with no locks
    /// held, in which everything is durable.
    pub fn crash_image(&self, mode: CrashMode, seed: u64) -> SimFs {
        let state = self.state.lock();
        let mut rng = SplitMix64::new(seed);
        let mut image = SimState::default();
        let mut copied: BTreeMap<usize, usize> = BTreeMap::new();
        let mut surviving: BTreeMap<PathBuf, BTreeMap<String, usize>> = BTreeMap::new();
        // Live directories win over removed ones at the same path (a topic deleted, then
        // created again).
        let removed = state
            .removed
            .iter()
            .filter(|(p, _)| !state.dirs.contains_key(*p));
        for (path, dir) in state.dirs.iter().chain(removed) {
            let mut entries = dir.durable.clone();
            let keep = match mode {
                CrashMode::DropUnsynced => 0,
                CrashMode::KeepSomeUnsynced => rng.below(dir.pending.len() as u64 + 1) as usize,
                CrashMode::TearTail => dir.pending.len(),
            };
            for op in &dir.pending[..keep] {
                op.apply(&mut entries);
            }
            surviving.insert(path.clone(), entries);
        }
        // A directory survives if each ancestor the test created still names it.
        let reachable = |path: &Path| {
            path.ancestors().all(|dir| {
                match (dir.parent(), dir.file_name().and_then(|n| n.to_str())) {
                    (Some(parent), Some(name)) => match surviving.get(parent) {
                        Some(entries) => entries.get(name) == Some(&DIR_ENTRY),
                        None => true,
                    },
                    _ => true,
                }
            })
        };
        for (path, mut entries) in surviving.clone() {
            if !reachable(&path) {
                continue;
            }
            for ino in entries.values_mut() {
                if *ino == DIR_ENTRY {
                    continue;
                }
                let new = *copied.entry(*ino).or_insert_with(|| {
                    let data = surviving_bytes(&state.inodes[*ino], mode, &mut rng);
                    image.inodes.push(Inode {
                        written: data.clone(),
                        durable: data,
                    });
                    image.inodes.len() - 1
                });
                *ino = new;
            }
            image.dirs.insert(
                path.clone(),
                Dir {
                    durable: entries.clone(),
                    written: entries,
                    pending: Vec::new(),
                },
            );
        }
        SimFs {
            state: Arc::new(Mutex::new(image)),
        }
    }
}

fn surviving_bytes(inode: &Inode, mode: CrashMode, rng: &mut SplitMix64) -> Vec<u8> {
    let (durable, written) = (&inode.durable, &inode.written);
    if durable == written {
        return durable.clone();
    }
    let appended_only = written.starts_with(durable);
    match mode {
        CrashMode::DropUnsynced => durable.clone(),
        CrashMode::KeepSomeUnsynced if appended_only => {
            let extra = rng.below((written.len() - durable.len()) as u64 + 1) as usize;
            written[..durable.len() + extra].to_vec()
        }
        CrashMode::KeepSomeUnsynced => {
            if rng.below(2) == 0 {
                durable.clone()
            } else {
                written.clone()
            }
        }
        CrashMode::TearTail => {
            let mut data = written.clone();
            let unsynced_from = if appended_only { durable.len() } else { 0 };
            let tear = (data.len() - unsynced_from).min(1 + rng.below(512) as usize);
            let start = data.len() - tear;
            for byte in &mut data[start..] {
                *byte = rng.next_u64() as u8;
            }
            data
        }
    }
}

#[derive(Debug)]
struct SimFile {
    state: Arc<Mutex<SimState>>,
    ino: usize,
}

impl Storage for SimFs {
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        let missing: Vec<&Path> = path
            .ancestors()
            .take_while(|p| !state.dirs.contains_key(*p))
            .collect();
        for dir in missing.into_iter().rev() {
            state.tick()?;
            state.dirs.insert(dir.to_owned(), Dir::default());
            if let (Some(parent), Some(name)) =
                (dir.parent(), dir.file_name().and_then(|n| n.to_str()))
                && let Some(parent) = state.dirs.get_mut(parent)
            {
                parent.written.insert(name.to_owned(), DIR_ENTRY);
                parent.pending.push(DirOp::Link(name.to_owned(), DIR_ENTRY));
            }
        }
        Ok(())
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        let mut state = self.state.lock();
        Ok(state.dir(path)?.written.keys().cloned().collect())
    }

    fn open(&self, path: &Path, create: bool) -> io::Result<Arc<dyn StorageFile>> {
        let (parent, name) = split(path)?;
        let mut state = self.state.lock();
        let existing = state.dir(&parent)?.written.get(&name).copied();
        let ino = match existing {
            Some(ino) => ino,
            None if create => {
                if let Some(err) = state.fault(FaultKind::Create) {
                    return Err(err);
                }
                state.tick()?;
                state.inodes.push(Inode::default());
                let ino = state.inodes.len() - 1;
                let dir = state.dir(&parent)?;
                dir.written.insert(name.clone(), ino);
                dir.pending.push(DirOp::Link(name, ino));
                ino
            }
            None => return Err(io::ErrorKind::NotFound.into()),
        };
        Ok(Arc::new(SimFile {
            state: self.state.clone(),
            ino,
        }))
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let (parent, name) = split(path)?;
        let mut state = self.state.lock();
        state.tick()?;
        let dir = state.dir(&parent)?;
        dir.written.remove(&name).ok_or(io::ErrorKind::NotFound)?;
        dir.pending.push(DirOp::Unlink(name));
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let (from_dir, from_name) = split(from)?;
        let (to_dir, to_name) = split(to)?;
        if from_dir != to_dir {
            return Err(io::Error::other("simulated rename across directories"));
        }
        let mut state = self.state.lock();
        state.tick()?;
        let dir = state.dir(&from_dir)?;
        let ino = dir
            .written
            .remove(&from_name)
            .ok_or(io::ErrorKind::NotFound)?;
        dir.written.insert(to_name.clone(), ino);
        dir.pending.push(DirOp::Rename(from_name, to_name));
        Ok(())
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        state.tick()?;
        let dir = state.dir(path)?;
        dir.durable = dir.written.clone();
        dir.pending.clear();
        Ok(())
    }

    /// Every file's written bytes and every directory's entries become durable at once; a
    /// `Sync` fault fails it with nothing made durable.
    fn sync_fs(&self, _path: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        state.tick()?;
        if let Some(err) = state.fault(FaultKind::Sync) {
            return Err(err);
        }
        for inode in &mut state.inodes {
            inode.durable = inode.written.clone();
        }
        for dir in state.dirs.values_mut() {
            dir.durable = dir.written.clone();
            dir.pending.clear();
        }
        Ok(())
    }

    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        let (parent, name) = split(path)?;
        let mut state = self.state.lock();
        state.tick()?;
        if !state.dirs.contains_key(path) {
            return Err(io::ErrorKind::NotFound.into());
        }
        let subtree: Vec<PathBuf> = state
            .dirs
            .keys()
            .filter(|d| d.starts_with(path))
            .cloned()
            .collect();
        for dir in subtree {
            let contents = state.dirs.remove(&dir).expect("listed above");
            state.removed.insert(dir, contents);
        }
        // The subtree is gone for this process at once; after a crash it is gone only if the
        // parent's unlink was made durable, otherwise it comes back as it durably was.
        if let Some(parent) = state.dirs.get_mut(&parent) {
            parent.written.remove(&name);
            parent.pending.push(DirOp::Unlink(name));
        }
        Ok(())
    }

    fn lock_file(&self, path: &Path) -> io::Result<DirLock> {
        // Waits as a real lock does; the simulated file system's users are threads of one
        // process.
        loop {
            match self.lock_dir(path) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                other => return other,
            }
        }
    }

    fn lock_dir(&self, path: &Path) -> io::Result<DirLock> {
        let mut state = self.state.lock();
        if !state.locks.insert(path.to_owned()) {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        Ok(DirLock(Box::new(SimLock {
            state: self.state.clone(),
            path: path.to_owned(),
        })))
    }
}

struct SimLock {
    state: Arc<Mutex<SimState>>,
    path: PathBuf,
}

impl Drop for SimLock {
    fn drop(&mut self) {
        self.state.lock().locks.remove(&self.path);
    }
}

impl StorageFile for SimFile {
    fn size(&self) -> io::Result<u64> {
        Ok(self.state.lock().inodes[self.ino].written.len() as u64)
    }

    fn write_all_at(&self, buf: &[u8], pos: u64) -> io::Result<()> {
        let mut state = self.state.lock();
        state.tick()?;
        let fault = state.fault(FaultKind::Write);
        let stored = if fault.is_some() {
            &buf[..buf.len() / 2]
        } else {
            buf
        };
        let data = &mut state.inodes[self.ino].written;
        let pos = pos as usize;
        if data.len() < pos + stored.len() {
            data.resize(pos + stored.len(), 0);
        }
        data[pos..pos + stored.len()].copy_from_slice(stored);
        fault.map_or(Ok(()), Err)
    }

    fn read_exact_at(&self, buf: &mut [u8], pos: u64) -> io::Result<()> {
        let state = self.state.lock();
        let data = &state.inodes[self.ino].written;
        let src = usize::try_from(pos)
            .ok()
            .and_then(|pos| data.get(pos..pos.checked_add(buf.len())?))
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(src);
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let mut state = self.state.lock();
        state.tick()?;
        state.inodes[self.ino].written.resize(len as usize, 0);
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        let mut state = self.state.lock();
        state.tick()?;
        if let Some(err) = state.fault(FaultKind::Sync) {
            return Err(err);
        }
        let covered = state.inodes[self.ino].written.clone();
        let delay = state.sync_delay;
        if !delay.is_zero() {
            drop(state);
            std::thread::sleep(delay);
            state = self.state.lock();
            if state.power_cut_after.is_some_and(|n| state.ops >= n) {
                return Err(io::Error::other("simulated power cut during fsync"));
            }
        }
        state.inodes[self.ino].durable = covered;
        Ok(())
    }

    /// Starting writeback promises no durability, so the simulation (which models only what
    /// `sync_data` makes durable) has nothing to do; a crash may still drop these bytes.
    fn start_writeback(&self, _pos: u64, _len: u64) -> io::Result<()> {
        Ok(())
    }

    fn map(&self, len: u64) -> io::Result<Bytes> {
        let state = self.state.lock();
        let data = &state.inodes[self.ino].written;
        let bytes = data
            .get(..len as usize)
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        Ok(Bytes::copy_from_slice(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(fs: &SimFs, path: &str, data: &[u8]) -> Arc<dyn StorageFile> {
        let file = fs.open(Path::new(path), true).unwrap();
        let len = file.size().unwrap();
        file.write_all_at(data, len).unwrap();
        file
    }

    fn read(fs: &SimFs, path: &str) -> Option<Vec<u8>> {
        let file = fs.open(Path::new(path), false).ok()?;
        Some(file.map(file.size().unwrap()).unwrap().to_vec())
    }

    #[test]
    fn unsynced_data_and_entries_vanish_in_a_crash() {
        let fs = SimFs::new();
        super::super::create_dir_durable(&fs, Path::new("/d")).unwrap();
        let f = write(&fs, "/d/a", b"durable");
        f.sync_data().unwrap();
        // The entry for /d/a is not durable yet: a crash loses the whole file.
        assert_eq!(
            read(&fs.crash_image(CrashMode::DropUnsynced, 1), "/d/a"),
            None
        );
        fs.sync_dir(Path::new("/d")).unwrap();
        f.write_all_at(b"+lost", 7).unwrap();
        let image = fs.crash_image(CrashMode::DropUnsynced, 1);
        assert_eq!(read(&image, "/d/a").unwrap(), b"durable");
        // Everything written survives in the full-tail image, its tail torn.
        let torn = read(&fs.crash_image(CrashMode::TearTail, 1), "/d/a").unwrap();
        assert_eq!(torn.len(), 12);
        assert_eq!(&torn[..7], b"durable");
    }

    #[test]
    fn renames_are_atomic_and_need_a_directory_sync() {
        let fs = SimFs::new();
        super::super::create_dir_durable(&fs, Path::new("/d")).unwrap();
        write(&fs, "/d/cp", b"old").sync_data().unwrap();
        fs.sync_dir(Path::new("/d")).unwrap();
        write(&fs, "/d/cp.tmp", b"new").sync_data().unwrap();
        fs.rename(Path::new("/d/cp.tmp"), Path::new("/d/cp"))
            .unwrap();
        for seed in 0..20 {
            let image = fs.crash_image(CrashMode::KeepSomeUnsynced, seed);
            let cp = read(&image, "/d/cp").unwrap();
            assert!(cp == b"old" || cp == b"new");
        }
        fs.sync_dir(Path::new("/d")).unwrap();
        assert_eq!(
            read(&fs.crash_image(CrashMode::DropUnsynced, 0), "/d/cp").unwrap(),
            b"new"
        );
    }

    #[test]
    fn a_new_directory_needs_its_parent_synced() {
        let fs = SimFs::new();
        fs.create_dir_all(Path::new("/a/b")).unwrap();
        write(&fs, "/a/b/f", b"x").sync_data().unwrap();
        fs.sync_dir(Path::new("/a/b")).unwrap();
        let lost = fs.crash_image(CrashMode::DropUnsynced, 0);
        assert!(
            lost.list_dir(Path::new("/a/b")).is_err(),
            "/a and /a/b were never made durable"
        );
        fs.sync_dir(Path::new("/")).unwrap();
        fs.sync_dir(Path::new("/a")).unwrap();
        assert_eq!(
            read(&fs.crash_image(CrashMode::DropUnsynced, 0), "/a/b/f").unwrap(),
            b"x"
        );
        // A removed tree comes back while the parent's unlink is not durable.
        fs.remove_dir_all(Path::new("/a/b")).unwrap();
        assert!(fs.list_dir(Path::new("/a/b")).is_err());
        assert_eq!(
            read(&fs.crash_image(CrashMode::DropUnsynced, 0), "/a/b/f").unwrap(),
            b"x"
        );
        fs.sync_dir(Path::new("/a")).unwrap();
        assert!(
            fs.crash_image(CrashMode::DropUnsynced, 0)
                .list_dir(Path::new("/a/b"))
                .is_err()
        );
        assert_eq!(fs.list_dir(Path::new("/a")).unwrap(), Vec::<String>::new());
    }

    #[test]
    fn power_cut_and_faults_fail_operations() {
        let fs = SimFs::new();
        super::super::create_dir_durable(&fs, Path::new("/d")).unwrap();
        let f = write(&fs, "/d/a", b"x");
        fs.fail_nth(FaultKind::Sync, 0, 5);
        assert_eq!(f.sync_data().unwrap_err().raw_os_error(), Some(5));
        f.sync_data().unwrap();
        fs.cut_power_after(fs.ops());
        assert!(f.write_all_at(b"y", 1).is_err());
        assert_eq!(
            f.size().unwrap(),
            1,
            "nothing changes after the power is cut"
        );
        let held = fs.lock_dir(Path::new("/d")).unwrap();
        assert_eq!(
            fs.lock_dir(Path::new("/d")).unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
        drop(held);
        assert!(fs.lock_dir(Path::new("/d")).is_ok());
    }
}
