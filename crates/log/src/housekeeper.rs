//! [`Housekeeper`]: the engine's own threads (housekeeping and the cleaner, started by
//! `housekeeping::start`) and the means to stop them, which the engine holds: dropping it
//! stops and joins them.

use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex};

/// What a thread waits on between rounds: set to true (and notified) to stop it.
pub(crate) type Stop = (Mutex<bool>, Condvar);

/// One thread's work, given the stop signal.
pub(crate) type Job = Box<dyn FnOnce(&Stop) + Send>;

/// The running threads (housekeeping and the cleaner) and the means to stop them.
#[derive(Debug)]
pub(crate) struct Housekeeper {
    stop: Arc<Stop>,
    threads: Vec<JoinHandle<()>>,
}

impl Housekeeper {
    /// Starts each job on a thread of its own, named as given.
    pub(crate) fn spawn(jobs: Vec<(&'static str, Job)>) -> Housekeeper {
        let stop: Arc<Stop> = Arc::new((Mutex::new(false), Condvar::new()));
        let threads = jobs
            .into_iter()
            .map(|(name, job)| {
                let stop = stop.clone();
                std::thread::Builder::new()
                    .name(name.into())
                    .spawn(move || job(&stop))
                    .expect("spawn one of the engine's threads")
            })
            .collect();
        Housekeeper { stop, threads }
    }

    /// Wakes the threads from their pause without stopping them: each starts its next round
    /// now and takes its pause anew.
    pub(crate) fn wake(&self) {
        let _waiting = self.stop.0.lock();
        self.stop.1.notify_all();
    }
}

impl Drop for Housekeeper {
    fn drop(&mut self) {
        *self.stop.0.lock() = true;
        self.stop.1.notify_all();
        for thread in self.threads.drain(..) {
            // A thread cannot join itself: were the engine dropped on one of these threads,
            // that thread ends on its own once its round returns.
            if thread.thread().id() != std::thread::current().id() {
                let _ = thread.join();
            }
        }
    }
}
