//! [`AppendSignal`]: how long-polling readers wait for the next append without spinning. A
//! counter that grows with every append (stored or not, the count is what a reader compares)
//! and a condition variable woken with it.

use std::time::Duration;

use parking_lot::{Condvar, Mutex};

/// The engine-wide append counter and its wake-up.
#[derive(Debug, Default)]
pub(crate) struct AppendSignal {
    count: Mutex<u64>,
    appended: Condvar,
}

impl AppendSignal {
    /// Counts an append and wakes every waiter.
    pub(crate) fn notify(&self) {
        *self.count.lock() += 1;
        self.appended.notify_all();
    }

    /// The appends so far.
    pub(crate) fn count(&self) -> u64 {
        *self.count.lock()
    }

    /// Blocks until the count moves past `seen` or `timeout` passes.
    pub(crate) fn wait(&self, seen: u64, timeout: Duration) {
        let mut count = self.count.lock();
        if *count == seen {
            self.appended.wait_for(&mut count, timeout);
        }
    }
}
