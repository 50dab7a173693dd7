//! [`StateLog`]: the durable state of a coordinator (committed offsets, consumer groups, and
//! what later coordinators keep) as an append-only log of CRC'd records with periodic
//! snapshots and group commit, recovered by replaying the logs after the newest valid snapshot.
//! A coordinator names its state ([`StateMachine`]) and its records; this module owns the
//! bytes, the fsyncs and the recovery, so every user gets the same crash guarantees and the
//! power-cut suite covers them once.
//!
//! Files in the log's directory (`<name>` is the user's, such as `offsets`):
//! - `<name>-<generation, 20 digits>.log`: frames of records, appended. A record is durable
//!   once an fsync covered its frame; records written while an fsync runs share the next one
//!   (group commit), so many writers cost one fsync per round, not one each.
//! - `<name>.snapshot`: one frame holding the whole state plus the generation of the first log
//!   not folded into it; replaced atomically (temp, fsync, rename, fsync directory) once the
//!   current log is bigger than [`StateLogConfig::snapshot_after_bytes`].
//!
//! The fold never waits for a quiet moment (under writers that never pause there is none): the
//! first fsync to end with the log big folds it. Records written during that fsync are made
//! durable first, by one more fsync under the lock, so the log folded ends in whole durable
//! frames and a new log never follows a torn one. The log's size stays about
//! `snapshot_after_bytes` plus what one fsync round writes.
//!
//! On open: read the snapshot, replay every log from its generation on, delete older logs. A
//! torn frame at the end of the last log is cut (its write was never acknowledged); a bad frame
//! anywhere else is [`Error::Corrupted`], never skipped.

mod frame;
mod recover;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex, MutexGuard};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::io::{DirLock, Storage, StorageFile};

/// A coordinator's durable state: a value that records change, one at a time, in log order.
pub trait StateMachine: Default + Serialize + DeserializeOwned + Send {
    /// One change, as it is logged.
    type Record: Serialize + DeserializeOwned + Send;

    /// Applies `record`. Called in log order, on recovery as at run time, so it must depend on
    /// nothing but the state and the record.
    fn apply(&mut self, record: Self::Record);
}

/// Where a state log keeps its files and when it folds them into a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateLogConfig {
    /// The files' name (`offsets` gives `offsets.snapshot` and `offsets-….log`).
    pub name: &'static str,
    /// Fold the log into a new snapshot once it is this big.
    pub snapshot_after_bytes: u64,
}

/// A record written but perhaps not yet durable: [`StateLog::wait`] waits for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "a written record is durable only once waited for"]
pub struct Written {
    generation: u64,
    end: u64,
}

/// The snapshot file's content.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Snapshot<S> {
    /// The first log generation not folded into this snapshot.
    next_generation: u64,
    state: S,
}

/// A durable state machine. Share it between threads with `Arc`.
pub struct StateLog<S: StateMachine> {
    dir: PathBuf,
    storage: Arc<dyn Storage>,
    config: StateLogConfig,
    inner: Mutex<Inner<S>>,
    /// Woken when an fsync ends (or fails), for the writers waiting for theirs.
    synced: Condvar,
    /// The negative control of the power-cut suite: a fold that skips the fsync of the
    /// records written during the last one (it folds them all the same).
    #[cfg(test)]
    fold_skips_fsync: std::sync::atomic::AtomicBool,
    _lock: DirLock,
}

impl<S: StateMachine> std::fmt::Debug for StateLog<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateLog")
            .field("dir", &self.dir)
            .field("name", &self.config.name)
            .finish_non_exhaustive()
    }
}

struct Inner<S: StateMachine> {
    /// The durable state: every record an fsync covered, applied.
    state: S,
    generation: u64,
    log: Arc<dyn StorageFile>,
    log_path: PathBuf,
    /// Bytes written to the current log.
    log_len: u64,
    /// Bytes of the current log an fsync covered.
    synced_len: u64,
    /// Whether a writer is fsyncing the log now (outside the lock).
    syncing: bool,
    /// Records written but not yet covered by an fsync, in log order, each with the log's
    /// length after it: applied to `state` (so visible to readers) once durable.
    unsynced: VecDeque<(u64, S::Record)>,
    poisoned: bool,
}

impl<S: StateMachine> StateLog<S> {
    /// Opens (creating if needed) the state log in `dir` on `storage`, recovering its state.
    pub fn open(
        storage: Arc<dyn Storage>,
        dir: impl AsRef<Path>,
        config: StateLogConfig,
    ) -> Result<StateLog<S>> {
        let dir = dir.as_ref().to_owned();
        crate::create_dir_durable(&*storage, &dir).map_err(Error::io("create", &dir))?;
        let lock = storage.lock_dir(&dir).map_err(|e| match e.kind() {
            std::io::ErrorKind::WouldBlock => Error::Locked { dir: dir.clone() },
            _ => Error::io("lock", &dir)(e),
        })?;
        let inner = recover::recover(&*storage, &dir, config.name)?;
        Ok(StateLog {
            dir,
            storage,
            config,
            inner: Mutex::new(inner),
            synced: Condvar::new(),
            #[cfg(test)]
            fold_skips_fsync: std::sync::atomic::AtomicBool::new(false),
            _lock: lock,
        })
    }

    /// Runs `f` on the durable state.
    pub fn read<T>(&self, f: impl FnOnce(&S) -> T) -> T {
        f(&self.inner.lock().state)
    }

    /// Appends `record` and returns once an fsync covered it and it is applied.
    pub fn append(&self, record: S::Record) -> Result<()> {
        let written = self.write(record)?;
        self.wait(written)
    }

    /// Writes `record` to the log without waiting for its fsync: records are logged (and
    /// applied) in the order of their `write` calls, so a caller that decides the order under
    /// its own lock writes there and waits outside it.
    pub fn write(&self, record: S::Record) -> Result<Written> {
        let mut inner = self.inner.lock();
        if inner.poisoned {
            return Err(self.poisoned());
        }
        let bytes = frame::encode(&record);
        let at = inner.log_len;
        if let Err(e) = inner
            .log
            .write_all_at(&bytes, at)
            .map_err(Error::io("write", &inner.log_path))
        {
            inner.poisoned = true;
            return Err(e);
        }
        inner.log_len += bytes.len() as u64;
        let end = inner.log_len;
        inner.unsynced.push_back((end, record));
        Ok(Written {
            generation: inner.generation,
            end,
        })
    }

    /// Returns once an fsync covered `written` and it is applied. The first waiter to find no
    /// fsync running starts one, outside the lock, for everything written so far; records
    /// written meanwhile wait for the next. A failed write or fsync poisons the log (never
    /// retried: a failed fsync may have dropped the pages it was flushing), and every waiter
    /// fails with it.
    pub fn wait(&self, written: Written) -> Result<()> {
        let mut inner = self.inner.lock();
        loop {
            if inner.poisoned {
                return Err(self.poisoned());
            }
            // A new generation starts only once everything written before it is applied.
            if inner.generation != written.generation || inner.synced_len >= written.end {
                return Ok(());
            }
            if inner.syncing {
                self.synced.wait(&mut inner);
                continue;
            }
            inner.syncing = true;
            let (target, log) = (inner.log_len, inner.log.clone());
            let synced = MutexGuard::unlocked(&mut inner, || log.sync_data());
            inner.syncing = false;
            let result = synced
                .map_err(Error::io("fsync", &inner.log_path))
                .and_then(|()| self.durable_through(&mut inner, target));
            self.synced.notify_all();
            if let Err(e) = result {
                inner.poisoned = true;
                return Err(e);
            }
        }
    }

    /// After an fsync covered the log up to `target`: applies what it made durable, in log
    /// order, and folds the log into a snapshot once it is big, whatever was written since.
    fn durable_through(&self, inner: &mut Inner<S>, target: u64) -> Result<()> {
        Self::apply_through(inner, target);
        if inner.log_len < self.config.snapshot_after_bytes {
            return Ok(());
        }
        if !inner.unsynced.is_empty() {
            // Writers wait on the lock held here, so this fsync covers every record written.
            #[cfg(test)]
            let skip = self
                .fold_skips_fsync
                .load(std::sync::atomic::Ordering::Relaxed);
            #[cfg(not(test))]
            let skip = false;
            if !skip {
                inner
                    .log
                    .sync_data()
                    .map_err(Error::io("fsync", &inner.log_path))?;
            }
            let end = inner.log_len;
            Self::apply_through(inner, end);
        }
        self.snapshot(inner)
    }

    /// Applies, in log order, the records that end at or before `durable` in the log.
    fn apply_through(inner: &mut Inner<S>, durable: u64) {
        inner.synced_len = inner.synced_len.max(durable);
        while inner
            .unsynced
            .front()
            .is_some_and(|(end, _)| *end <= durable)
        {
            if let Some((_, record)) = inner.unsynced.pop_front() {
                inner.state.apply(record);
            }
        }
    }

    fn poisoned(&self) -> Error {
        Error::Poisoned {
            dir: self.dir.clone(),
        }
    }

    /// Folds everything into a new snapshot and starts an empty log. Order: the new log exists
    /// durably before the snapshot names it; the old log is deleted only after.
    fn snapshot(&self, inner: &mut Inner<S>) -> Result<()> {
        let storage = &*self.storage;
        let name = self.config.name;
        let next = inner.generation + 1;
        let new_path = self.dir.join(recover::log_name(name, next));
        let new_log = storage
            .open(&new_path, true)
            .map_err(Error::io("create", &new_path))?;
        storage
            .sync_dir(&self.dir)
            .map_err(Error::io("fsync", &self.dir))?;
        let snapshot = Snapshot {
            next_generation: next,
            state: std::mem::take(&mut inner.state),
        };
        let bytes = frame::encode(&snapshot);
        inner.state = snapshot.state;
        crate::replace_file(
            storage,
            &self.dir,
            &recover::snapshot_name(name),
            &bytes,
            true,
        )?;
        storage
            .remove_file(&inner.log_path)
            .map_err(Error::io("remove", &inner.log_path))?;
        storage
            .sync_dir(&self.dir)
            .map_err(Error::io("fsync", &self.dir))?;
        inner.generation = next;
        inner.log = new_log;
        inner.log_path = new_path;
        inner.log_len = 0;
        inner.synced_len = 0;
        Ok(())
    }
}
