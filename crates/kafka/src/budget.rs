//! [`RequestBudget`]: the bytes of request frames all connections may hold at once
//! (`--max-inflight-request-bytes`), so that many clients sending large requests make intake
//! wait instead of memory grow. A connection reserves a frame's announced size before reading
//! its body, and releases it once the request is answered; while it waits its socket is not
//! read, so TCP pushes back on the client. A request is admitted as soon as it fits, so small
//! requests pass a large one that does not fit yet (a client stuck mid-request delays only
//! requests larger than the room left), but once the oldest waiter has waited [`PATIENCE`],
//! nobody passes it any more: no request starves.
//!
//! Reserving the announced size, not what has arrived, is what guarantees progress: requests
//! that were admitted can always be read to the end, where charging bytes as they arrive would
//! let partly read requests exhaust the budget and wait on each other forever (Redpanda budgets
//! the same way). Memory itself still grows only as bytes arrive (see `Broker`), so a client
//! announcing 90 MiB and sending 1 KiB holds 1 KiB of memory, and its reservation until its
//! request timeout closes it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::Notify;

/// How long the oldest waiting request may be passed by later ones that fit.
pub const PATIENCE: Duration = Duration::from_secs(1);

/// The shared budget.
#[derive(Debug)]
pub struct RequestBudget {
    capacity: usize,
    state: Mutex<State>,
    changed: Notify,
}

#[derive(Debug, Default)]
struct State {
    in_use: usize,
    next_ticket: u64,
    /// Waiting requests by ticket (arrival order), with when they arrived.
    waiting: BTreeMap<u64, Instant>,
}

impl State {
    /// Whether waiter `ticket` may take `bytes` now.
    fn admits(&self, ticket: u64, bytes: usize, capacity: usize, now: Instant) -> bool {
        let fits = self.in_use + bytes <= capacity;
        let (&oldest, &since) = self
            .waiting
            .first_key_value()
            .expect("the caller is waiting");
        fits && (oldest == ticket || now.duration_since(since) < PATIENCE)
    }
}

impl RequestBudget {
    /// A budget of `capacity` bytes.
    pub fn new(capacity: usize) -> Arc<RequestBudget> {
        Arc::new(RequestBudget {
            capacity,
            state: Mutex::new(State::default()),
            changed: Notify::new(),
        })
    }

    /// The most one request may reserve: a larger one can never be admitted.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Waits until `bytes` fit (and no request that has waited past its patience, a second, is
    /// ahead), then reserves them until the returned reservation is dropped. `bytes` must not
    /// exceed the capacity. A connection that closes while it waits leaves the queue (the
    /// future is dropped).
    pub async fn reserve(self: &Arc<RequestBudget>, bytes: usize) -> Reservation {
        assert!(bytes <= self.capacity, "a request larger than the budget");
        let waiting = {
            let mut state = self.state.lock();
            let ticket = state.next_ticket;
            state.next_ticket += 1;
            state.waiting.insert(ticket, Instant::now());
            Waiting {
                budget: self,
                ticket,
            }
        };
        loop {
            // Registered before the check, so a release in between is not missed.
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            {
                let mut state = self.state.lock();
                if state.admits(waiting.ticket, bytes, self.capacity, Instant::now()) {
                    state.waiting.remove(&waiting.ticket);
                    state.in_use += bytes;
                    drop(state);
                    // Others may fit too, or become the oldest.
                    self.changed.notify_waiters();
                    return Reservation {
                        budget: self.clone(),
                        bytes,
                    };
                }
            }
            // Woken by releases; the timeout re-checks who has waited past its patience.
            let _ = tokio::time::timeout(PATIENCE / 4, changed).await;
        }
    }

    /// Bytes reserved now.
    pub fn in_use(&self) -> usize {
        self.state.lock().in_use
    }

    /// Requests waiting for room.
    pub fn waiting(&self) -> u64 {
        self.state.lock().waiting.len() as u64
    }
}

/// Bytes reserved for one request; released when dropped.
#[derive(Debug)]
pub struct Reservation {
    budget: Arc<RequestBudget>,
    bytes: usize,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.state.lock().in_use -= self.bytes;
        self.budget.changed.notify_waiters();
    }
}

/// A place in the queue; dropped with the waiting future, it leaves the queue.
struct Waiting<'a> {
    budget: &'a RequestBudget,
    ticket: u64,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if self
            .budget
            .state
            .lock()
            .waiting
            .remove(&self.ticket)
            .is_some()
        {
            self.budget.changed.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
    }

    /// Yields to the runtime until `done`.
    async fn until(done: impl Fn() -> bool) {
        while !done() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    #[test]
    fn a_request_that_does_not_fit_waits_until_room_is_released() {
        runtime().block_on(async {
            let budget = RequestBudget::new(100);
            let first = budget.reserve(70).await;
            let waiter = tokio::spawn({
                let budget = budget.clone();
                async move { drop(budget.reserve(50).await) }
            });
            until(|| budget.waiting() == 1).await;
            tokio::time::sleep(Duration::from_millis(50)).await;
            assert_eq!((budget.in_use(), budget.waiting()), (70, 1), "it waits");
            drop(first);
            waiter.await.unwrap();
            assert_eq!((budget.in_use(), budget.waiting()), (0, 0));
        });
    }

    #[test]
    fn small_requests_pass_a_large_one_until_it_has_waited_its_patience() {
        runtime().block_on(async {
            let budget = RequestBudget::new(100);
            let held = budget.reserve(60).await;
            let large = tokio::spawn({
                let budget = budget.clone();
                async move {
                    let started = Instant::now();
                    let _r = budget.reserve(90).await;
                    started.elapsed()
                }
            });
            until(|| budget.waiting() == 1).await;
            // A small request that fits is not held up by the large one waiting for room.
            drop(budget.reserve(30).await);
            // Once the large one has waited its patience, a small one waits behind it.
            tokio::time::sleep(PATIENCE + Duration::from_millis(100)).await;
            let small = tokio::spawn({
                let budget = budget.clone();
                async move { drop(budget.reserve(30).await) }
            });
            tokio::time::sleep(Duration::from_millis(300)).await;
            assert!(!small.is_finished(), "the large one goes first");
            drop(held);
            assert!(large.await.unwrap() >= PATIENCE);
            small.await.unwrap();
        });
    }

    #[test]
    fn a_waiter_that_gives_up_leaves_the_queue() {
        runtime().block_on(async {
            let budget = RequestBudget::new(100);
            let held = budget.reserve(100).await;
            let gave_up = tokio::time::timeout(Duration::from_millis(20), budget.reserve(10)).await;
            assert!(gave_up.is_err());
            assert_eq!(
                budget.waiting(),
                0,
                "its place is gone, nobody waits behind it"
            );
            drop(held);
            drop(budget.reserve(100).await);
        });
    }
}
