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

use parking_lot::{Condvar, Mutex};

/// How long the oldest waiting request may be passed by later ones that fit.
pub const PATIENCE: Duration = Duration::from_secs(1);

/// The shared budget.
#[derive(Debug)]
pub struct RequestBudget {
    capacity: usize,
    state: Mutex<State>,
    turn: Condvar,
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
            turn: Condvar::new(),
        })
    }

    /// The most one request may reserve: a larger one can never be admitted.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Waits until `bytes` fit (and no request that waited past [`PATIENCE`] is ahead), then
    /// reserves them until the returned reservation is dropped. `bytes` must not exceed the
    /// capacity.
    pub fn reserve(self: &Arc<RequestBudget>, bytes: usize) -> Reservation {
        assert!(bytes <= self.capacity, "a request larger than the budget");
        let mut state = self.state.lock();
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        state.waiting.insert(ticket, Instant::now());
        while !state.admits(ticket, bytes, self.capacity, Instant::now()) {
            // Woken by releases; the timeout re-checks who has waited past its patience.
            self.turn.wait_for(&mut state, PATIENCE / 4);
        }
        state.waiting.remove(&ticket);
        state.in_use += bytes;
        // Others may fit too, or become the oldest.
        self.turn.notify_all();
        Reservation {
            budget: self.clone(),
            bytes,
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
        self.budget.turn.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_request_that_does_not_fit_waits_until_room_is_released() {
        let budget = RequestBudget::new(100);
        let first = budget.reserve(70);
        let (tx, rx) = mpsc::channel();
        let waiter = {
            let budget = budget.clone();
            std::thread::spawn(move || {
                let held = budget.reserve(50);
                tx.send(()).unwrap();
                drop(held);
            })
        };
        assert!(
            rx.recv_timeout(Duration::from_millis(100)).is_err(),
            "waits"
        );
        assert_eq!((budget.in_use(), budget.waiting()), (70, 1));
        drop(first);
        rx.recv_timeout(Duration::from_secs(5))
            .expect("admitted once room was released");
        waiter.join().unwrap();
        assert_eq!(budget.in_use(), 0);
    }

    #[test]
    fn small_requests_pass_a_large_one_until_it_has_waited_its_patience() {
        let budget = RequestBudget::new(100);
        let held = budget.reserve(60);
        let large = {
            let budget = budget.clone();
            std::thread::spawn(move || {
                let started = std::time::Instant::now();
                let _r = budget.reserve(90);
                started.elapsed()
            })
        };
        while budget.waiting() == 0 {
            std::thread::yield_now();
        }
        // A small request that fits is not held up by the large one waiting for room.
        drop(budget.reserve(30));
        // Once the large one has waited its patience, a small one that fits waits behind it.
        std::thread::sleep(PATIENCE + Duration::from_millis(100));
        let (tx, rx) = mpsc::channel();
        let small = {
            let budget = budget.clone();
            std::thread::spawn(move || {
                let _r = budget.reserve(30);
                tx.send(()).unwrap();
            })
        };
        assert!(
            rx.recv_timeout(Duration::from_millis(300)).is_err(),
            "the large one goes first"
        );
        drop(held);
        rx.recv_timeout(Duration::from_secs(5))
            .expect("admitted after the large one");
        assert!(large.join().unwrap() >= PATIENCE);
        small.join().unwrap();
    }
}
