//! Syncing many logs with one call: under `interval`, a node with thousands of partitions
//! would otherwise `fdatasync` each of them every interval (10,000 device flushes a second for
//! 10,000 partitions written to), where one `syncfs` of their file system makes every appended
//! byte durable at the cost of one. And waiting for a few logs' own fsyncs at once (a
//! transaction's markers), where one after another would add their latencies.

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::PartitionLog;
use crate::error::{Error, Result};
use crate::io::Storage;

impl PartitionLog {
    /// The end offset a sync begun now would make durable, or `None` when every appended
    /// record is durable already (or the log takes no more writes); such a log counts as
    /// synced at `now`, so its next append does not sync on its own.
    fn end_to_sync(&self, now: Instant) -> Option<i64> {
        if self.is_poisoned() || self.closed.load(Ordering::Acquire) {
            return None;
        }
        // Loaded before the sync starts: every record below it was written by then.
        let end = self.end_offset.load(Ordering::Acquire);
        if self.durable_end.load(Ordering::Acquire) >= end {
            let mut sync = self.sync.lock();
            sync.last_sync = sync.last_sync.max(now);
            return None;
        }
        Some(end)
    }

    /// Notes that a sync of the whole file system is under way for this log, so that its
    /// appends do not each sync it meanwhile.
    pub(super) fn whole_sync_begins(&self) {
        self.sync.lock().whole_sync_in_flight = true;
    }

    /// Notes that the whole file system's sync ended without making this log durable.
    fn whole_sync_ended(&self) {
        self.sync.lock().whole_sync_in_flight = false;
    }

    /// Records that a sync begun at `started` made every record below `end` durable.
    pub(super) fn synced_to(&self, end: i64, started: Instant) {
        let mut sync = self.sync.lock();
        sync.last_sync = sync.last_sync.max(started);
        sync.whole_sync_in_flight = false;
        self.advance_durable(end);
        self.synced.notify_all();
    }
}

/// Makes every record appended so far to each of `logs` durable with one sync of the file
/// system holding `root` ([`Storage::sync_fs`]), falling back to each log's own `fdatasync`
/// where that is unsupported. Returns how many logs had records to sync.
///
/// A failed sync poisons every log that had records waiting for it, exactly as their own
/// failed `fdatasync` would: which file's pages were lost cannot be told. A log that is
/// poisoned already is skipped, so one failed partition does not stop the others' syncs;
/// with the per-log fallback the first error is returned after every log was tried.
pub fn sync_logs(storage: &dyn Storage, root: &Path, logs: &[Arc<PartitionLog>]) -> Result<usize> {
    let started = Instant::now();
    let waiting: Vec<(&PartitionLog, i64)> = logs
        .iter()
        .filter_map(|log| log.end_to_sync(started).map(|end| (&**log, end)))
        .collect();
    if waiting.is_empty() {
        return Ok(0);
    }
    for (log, _) in &waiting {
        log.whole_sync_begins();
    }
    match storage.sync_fs(root) {
        Ok(()) => {
            for (log, end) in &waiting {
                log.synced_to(*end, started);
            }
            Ok(waiting.len())
        }
        Err(e) if e.kind() == io::ErrorKind::Unsupported => {
            let mut first_error = None;
            for (log, _) in &waiting {
                log.whole_sync_ended();
                if let Err(e) = log.flush() {
                    first_error.get_or_insert(e);
                }
            }
            first_error.map_or(Ok(waiting.len()), Err)
        }
        Err(source) => {
            for (log, _) in &waiting {
                log.whole_sync_ended();
                log.poison();
            }
            Err(Error::Io {
                op: "syncfs",
                path: root.to_owned(),
                source,
            })
        }
    }
}

/// How many fsyncs [`await_durable`] runs at once: a device's queue is deep, but a
/// transaction over thousands of partitions must not start a thread for each.
const AT_ONCE: usize = 16;

/// Waits until each log's records below its end (`(log, end)`) are as durable as its fsync
/// policy promises, up to 16 logs' `fdatasync`s running at once (on threads beside
/// the caller's: a device flushes them together, where one after another would add their
/// latencies). Every log is waited for; the first failure is returned.
pub fn await_durable(writes: &[(&PartitionLog, i64)]) -> Result<()> {
    let wait = |chunk: &[(&PartitionLog, i64)]| {
        chunk
            .iter()
            .map(|&(log, end)| log.wait_durable(end))
            .fold(Ok(()), Result::and)
    };
    if writes.len() <= 1 {
        return wait(writes);
    }
    let mut chunks = writes.chunks(writes.len().div_ceil(AT_ONCE));
    let first = chunks.next().unwrap_or_default();
    std::thread::scope(|scope| {
        let others: Vec<_> = chunks
            .map(|chunk| scope.spawn(move || wait(chunk)))
            .collect();
        let mut result = wait(first);
        for other in others {
            let waited = other
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            result = result.and(waited);
        }
        result
    })
}
