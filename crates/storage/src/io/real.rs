//! [`Storage`] on the operating system's file system: `pwrite`, `fdatasync`,
//! `sync_file_range`, `flock` and `mmap`.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

use super::{DirLock, Storage, StorageFile};

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

    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        fs::remove_dir_all(path)
    }

    fn lock_dir(&self, path: &Path) -> io::Result<DirLock> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path.join(".lock"))?;
        match file.try_lock() {
            Ok(()) => Ok(DirLock(Box::new(file))),
            Err(fs::TryLockError::WouldBlock) => Err(io::ErrorKind::WouldBlock.into()),
            Err(fs::TryLockError::Error(e)) => Err(e),
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
