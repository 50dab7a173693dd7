//! [`Storage`] on the operating system's file system: `pwrite`, `fdatasync`,
//! `sync_file_range`, `flock` and `mmap`.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::{DirLock, Storage, StorageFile};

/// How long `lock_dir` keeps trying a lock that looks held before reporting it held.
const LOCK_RETRY_FOR: Duration = Duration::from_millis(500);

/// The real file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealFs;

#[derive(Debug)]
struct RealFile {
    file: File,
    path: PathBuf,
}

impl Storage for RealFs {
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        DirBuilder::new().recursive(true).mode(0o700).create(path)
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(path)? {
            if let Ok(name) = entry?.file_name().into_string() {
                names.push(name);
            }
        }
        Ok(names)
    }

    fn open(&self, path: &Path, create: bool) -> io::Result<Arc<dyn StorageFile>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .mode(0o600)
            .open(path)?;
        Ok(Arc::new(RealFile {
            file,
            path: path.to_owned(),
        }))
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        File::open(path)?.sync_all()
    }

    fn sync_fs(&self, path: &Path) -> io::Result<()> {
        if !syncfs_reports_errors() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "syncfs reports write-back errors only from Linux 5.8",
            ));
        }
        // A descriptor opened now still sees a write-back error nobody has seen yet (the
        // kernel's errseq rule), which is every error of ours: the log syncs its files through
        // nothing that would mark the file system's error seen but this call.
        let dir = File::open(path)?;
        #[allow(unsafe_code, reason = "a system call libc exposes only as unsafe FFI")]
        // SAFETY: the descriptor is owned by `dir` and open for the whole call; the call takes
        // no pointers.
        let rc = unsafe { libc::syncfs(std::os::fd::AsRawFd::as_raw_fd(&dir)) };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        fs::remove_dir_all(path)
    }

    fn lock_file(&self, path: &Path) -> io::Result<DirLock> {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)?;
        file.lock()?;
        Ok(DirLock(Box::new(file)))
    }

    fn lock_dir(&self, path: &Path) -> io::Result<DirLock> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path.join(".lock"))?;
        // An flock belongs to the open file, and a child this process is spawning shares
        // every open file until it execs, even close-on-exec ones. So a lock this process
        // has just released (a log closed and reopened) can look held for that moment if
        // another thread is starting a program: try again for a short while before calling
        // it someone else's.
        let deadline = Instant::now() + LOCK_RETRY_FOR;
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(DirLock(Box::new(file))),
                Err(fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(fs::TryLockError::WouldBlock) => return Err(io::ErrorKind::WouldBlock.into()),
                Err(fs::TryLockError::Error(e)) => return Err(e),
            }
        }
    }
}

impl StorageFile for RealFile {
    fn size(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    fn write_all_at(&self, buf: &[u8], pos: u64) -> io::Result<()> {
        self.file.write_all_at(buf, pos)
    }

    fn read_exact_at(&self, buf: &mut [u8], pos: u64) -> io::Result<()> {
        self.file.read_exact_at(buf, pos)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }

    fn sync_data(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    #[cfg(target_os = "linux")]
    fn start_writeback(&self, pos: u64, len: u64) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        let (Ok(pos), Ok(len)) = (i64::try_from(pos), i64::try_from(len)) else {
            return Err(io::ErrorKind::InvalidInput.into());
        };
        #[allow(unsafe_code, reason = "a system call libc exposes only as unsafe FFI")]
        // SAFETY: the descriptor is owned by `self.file` and open for the whole call; the call
        // takes no pointers.
        let rc = unsafe {
            libc::sync_file_range(self.file.as_raw_fd(), pos, len, libc::SYNC_FILE_RANGE_WRITE)
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Elsewhere there is no portable way to start writeback without waiting for it; the
    /// final `fdatasync` does all the work, as it would without the hint.
    #[cfg(not(target_os = "linux"))]
    fn start_writeback(&self, _pos: u64, _len: u64) -> io::Result<()> {
        Ok(())
    }

    fn map(&self, len: u64) -> io::Result<Bytes> {
        if len == 0 {
            return Ok(Bytes::new());
        }
        let len =
            usize::try_from(len).map_err(|_| io::Error::other("mapping larger than memory"))?;
        #[allow(unsafe_code, reason = "memory-mapping a file is unsafe by nature")]
        // SAFETY: the mapping is read-only and the log holds the directory's exclusive lock, so
        // no other process writes or truncates these files. The log itself only truncates a
        // file during recovery, before it maps any view of it, and only ever appends after
        // that; bytes inside a live view are never rewritten. `path` is kept for errors.
        let map = unsafe { memmap2::MmapOptions::new().len(len).map(&self.file) }
            .map_err(|e| io::Error::new(e.kind(), format!("mmap {}: {e}", self.path.display())))?;
        Ok(Bytes::from_owner(map))
    }
}

/// True on Linux 5.8 and later, where `syncfs` returns the write-back errors of the file
/// system's files (before, it returned 0 whatever happened, so it cannot stand in for the
/// per-file syncs whose errors poison a log).
fn syncfs_reports_errors() -> bool {
    static REPORTS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *REPORTS.get_or_init(|| {
        let release = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        kernel_at_least(&release, (5, 8))
    })
}

/// Whether a kernel release such as `6.1.0-18-amd64` is at least `(major, minor)`.
fn kernel_at_least(release: &str, wanted: (u32, u32)) -> bool {
    let mut parts = release.trim().split(['.', '-']);
    let mut number = || parts.next().and_then(|p| p.parse::<u32>().ok());
    match (number(), number()) {
        (Some(major), Some(minor)) => (major, minor) >= wanted,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_releases_compare_by_major_then_minor() {
        assert!(kernel_at_least("6.18.44-fc-v669", (5, 8)));
        assert!(kernel_at_least("5.8.0", (5, 8)));
        assert!(kernel_at_least("5.10.0-28-amd64\n", (5, 8)));
        assert!(!kernel_at_least("5.4.0-150-generic", (5, 8)));
        assert!(!kernel_at_least("4.19.0", (5, 8)));
        assert!(!kernel_at_least("", (5, 8)), "unknown: not trusted");
    }

    #[test]
    fn a_file_system_sync_succeeds_or_says_it_is_unsupported() {
        let dir = tempfile::tempdir().unwrap();
        let file = RealFs.open(&dir.path().join("f"), true).unwrap();
        file.write_all_at(b"bytes", 0).unwrap();
        match RealFs.sync_fs(dir.path()) {
            Ok(()) => assert!(syncfs_reports_errors()),
            Err(e) => {
                assert_eq!(e.kind(), io::ErrorKind::Unsupported, "{e}");
                assert!(!syncfs_reports_errors());
            }
        }
        let missing = RealFs.sync_fs(&dir.path().join("missing"));
        assert!(missing.is_err(), "a path that is not there is an error");
    }

    #[test]
    fn a_lock_held_for_a_moment_is_waited_for_and_one_held_on_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let held = RealFs.lock_dir(dir.path()).unwrap();
        let started = Instant::now();
        let refused = RealFs.lock_dir(dir.path()).unwrap_err();
        assert_eq!(refused.kind(), io::ErrorKind::WouldBlock);
        assert!(started.elapsed() >= LOCK_RETRY_FOR);

        // As when a spawned child closes its copy of the lock file at exec.
        let releaser = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            drop(held);
        });
        RealFs.lock_dir(dir.path()).unwrap();
        releaser.join().unwrap();
    }
}
