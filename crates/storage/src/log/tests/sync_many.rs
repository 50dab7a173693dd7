//! `sync_logs`: one file-system sync makes several interval logs durable (they survive a power
//! cut that drops everything unsynced), does nothing when nothing waits, poisons every log it
//! was to make durable when it fails, skips a poisoned log, and falls back to each log's own
//! fdatasync where the file system cannot be synced whole.

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::{CrashMode, DirLock, Error, FaultKind, SimFs, Storage, StorageFile, sync_logs};

const EIO: i32 = 5;

fn interval_config() -> LogConfig {
    LogConfig {
        // Long enough that no append syncs on its own during a test.
        fsync: FsyncPolicy::Interval(Duration::from_secs(3600)),
        ..small_config()
    }
}

fn open_logs(storage: Arc<dyn Storage>, n: usize) -> Vec<Arc<PartitionLog>> {
    (0..n)
        .map(|p| {
            Arc::new(
                PartitionLog::open_with(storage.clone(), format!("/d/{p}"), interval_config())
                    .unwrap(),
            )
        })
        .collect()
}

fn append_one(log: &PartitionLog, value: &str) {
    log.append(&mut batch_of(&[value.as_bytes().to_vec()], 0))
        .unwrap();
}

fn values(storage: SimFs, p: usize) -> Vec<Vec<u8>> {
    let log =
        PartitionLog::open_with(Arc::new(storage), format!("/d/{p}"), interval_config()).unwrap();
    read_all(&log, 0)
        .unwrap()
        .into_values()
        .map(|(_, v)| v)
        .collect()
}

#[test]
fn one_sync_makes_every_waiting_log_durable() {
    let fs = SimFs::new();
    let logs = open_logs(Arc::new(fs.clone()), 3);
    for (p, log) in logs.iter().enumerate() {
        append_one(log, &format!("p{p}"));
    }
    assert_eq!(
        logs[0].durable_end_offset(),
        Offset(0),
        "nothing synced yet"
    );
    let before = fs.ops();
    assert_eq!(sync_logs(&fs, Path::new("/d"), &logs).unwrap(), 3);
    assert_eq!(fs.ops() - before, 1, "one sync for all three");
    for (p, log) in logs.iter().enumerate() {
        assert_eq!(log.durable_end_offset(), Offset(1), "partition {p}");
    }
    let image = fs.crash_image(CrashMode::DropUnsynced, 1);
    for p in 0..3 {
        assert_eq!(values(image.clone(), p), vec![format!("p{p}").into_bytes()]);
    }
    // Nothing waits now: no sync at all.
    let before = fs.ops();
    assert_eq!(sync_logs(&fs, Path::new("/d"), &logs).unwrap(), 0);
    assert_eq!(fs.ops(), before);
}

#[test]
fn a_failed_sync_poisons_the_logs_it_was_for_and_spares_the_rest() {
    let fs = SimFs::new();
    let logs = open_logs(Arc::new(fs.clone()), 3);
    append_one(&logs[0], "a");
    append_one(&logs[1], "b");
    sync_logs(&fs, Path::new("/d"), &logs[2..]).unwrap();
    fs.fail_nth(FaultKind::Sync, 0, EIO);
    let err = sync_logs(&fs, Path::new("/d"), &logs).unwrap_err();
    assert!(
        matches!(&err, Error::Io { op: "syncfs", source, .. } if source.raw_os_error() == Some(EIO)),
        "{err}"
    );
    assert!(logs[0].is_poisoned() && logs[1].is_poisoned());
    assert!(!logs[2].is_poisoned(), "it had nothing waiting");
    assert!(matches!(
        logs[0].append(&mut batch_of(&[b"late".to_vec()], 0)),
        Err(Error::Poisoned { .. })
    ));
    // The poisoned ones are skipped from now on; the healthy one still gets synced.
    append_one(&logs[2], "c");
    assert_eq!(sync_logs(&fs, Path::new("/d"), &logs).unwrap(), 1);
    assert_eq!(logs[2].durable_end_offset(), Offset(1));
}

/// A file system that cannot be synced whole, as on Linux before 5.8.
#[derive(Debug)]
struct NoSyncFs(SimFs);

impl Storage for NoSyncFs {
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        self.0.create_dir_all(path)
    }
    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        self.0.list_dir(path)
    }
    fn open(&self, path: &Path, create: bool) -> io::Result<Arc<dyn StorageFile>> {
        self.0.open(path, create)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.0.remove_file(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.0.rename(from, to)
    }
    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        self.0.sync_dir(path)
    }
    fn sync_fs(&self, _path: &Path) -> io::Result<()> {
        Err(io::ErrorKind::Unsupported.into())
    }
    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        self.0.remove_dir_all(path)
    }
    fn lock_file(&self, path: &Path) -> io::Result<DirLock> {
        self.0.lock_file(path)
    }

    fn lock_dir(&self, path: &Path) -> io::Result<DirLock> {
        self.0.lock_dir(path)
    }
}

#[test]
fn without_a_whole_file_system_sync_each_log_syncs_itself() {
    let fs = SimFs::new();
    let storage = Arc::new(NoSyncFs(fs.clone()));
    let logs = open_logs(storage.clone(), 2);
    append_one(&logs[0], "a");
    append_one(&logs[1], "b");
    assert_eq!(sync_logs(&*storage, Path::new("/d"), &logs).unwrap(), 2);
    let image = fs.crash_image(CrashMode::DropUnsynced, 2);
    assert_eq!(values(image.clone(), 0), vec![b"a".to_vec()]);
    assert_eq!(values(image, 1), vec![b"b".to_vec()]);
}

#[test]
fn an_overdue_append_leaves_its_sync_to_a_whole_file_system_sync_under_way() {
    let fs = SimFs::new();
    let config = LogConfig {
        fsync: FsyncPolicy::Interval(Duration::from_millis(1)),
        ..small_config()
    };
    let log = PartitionLog::open_with(Arc::new(fs.clone()), "/d/0", config).unwrap();
    std::thread::sleep(Duration::from_millis(5));
    // Overdue, but a whole sync is under way: the append leaves its records to it.
    let started = std::time::Instant::now();
    log.whole_sync_begins();
    append_one(&log, "a");
    assert_eq!(log.durable_end_offset(), Offset(0), "no sync of its own");
    log.synced_to(1, started);
    assert_eq!(log.durable_end_offset(), Offset(1));
    // With none under way, an overdue append syncs its log itself, as before.
    std::thread::sleep(Duration::from_millis(5));
    append_one(&log, "b");
    assert_eq!(log.durable_end_offset(), Offset(2), "synced by the append");
}
