//! [`RequestBudget`]: the bytes of request frames all connections may hold at once
//! (`--max-inflight-request-bytes`), so that many clients sending large requests make intake
//! wait instead of memory grow. A connection reserves a frame's announced size before reading
//! its body, and releases it once the request is answered; while it waits its socket is not
//! read, so TCP pushes back on the client. A request is admitted as soon as it fits, so small
//! requests pass a large one that does not fit yet (a client stuck mid-request delays only
//! requests larger than the room left), but once the oldest waiter has waited [`PATIENCE`],
//! nobody passes it any more: no request starves.
//!
//! Small requests (at most [`SMALL_REQUEST`]: metadata, heartbeats, fetches, commits, ordinary
//! produces) are never starved by large ones either: an eighth of the budget is theirs alone.
//! Large requests share the rest, and a small request may always take from its reserve, even
//! past a large waiter's patience. Without the reserve, three connections announcing 90 MiB and
//! sending half held a 256 MiB budget, and a new client's 20-byte ApiVersions waited for their
//! request timeout.
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

/// The largest request that counts as small and may use the small requests' reserve: the
/// size of an ordinary produce (Kafka's `max.request.size` is 1 MiB) with room for its header.
pub const SMALL_REQUEST: usize = (1 << 20) + (64 << 10);

/// The shared budget.
#[derive(Debug)]
pub struct RequestBudget {
    capacity: usize,
    /// Bytes only small requests may use: an eighth of the capacity.
    reserve: usize,
    state: Mutex<State>,
    changed: Notify,
}

#[derive(Debug, Default)]
struct State {
    /// Bytes reserved by large requests.
    large: usize,
    /// Bytes reserved by small requests.
    small: usize,
    next_ticket: u64,
    /// Waiting requests by ticket (arrival order), with when they arrived.
    waiting: BTreeMap<u64, Instant>,
}

impl State {
    /// Whether waiter `ticket` may take `bytes` now.
    fn admits(&self, ticket: u64, bytes: usize, budget: &RequestBudget, now: Instant) -> bool {
        let (&oldest, &since) = self
            .waiting
            .first_key_value()
            .expect("the caller is waiting");
        let in_turn = oldest == ticket || now.duration_since(since) < PATIENCE;
        if bytes <= SMALL_REQUEST {
            // Within the reserve a small request waits for nobody.
            let in_reserve = self.small + bytes <= budget.reserve;
            let fits = self.large + self.small + bytes <= budget.capacity;
            in_reserve || (fits && in_turn)
        } else {
            // What small requests hold beyond their reserve counts against the shared part.
            let shared = self.large + self.small.saturating_sub(budget.reserve);
            shared + bytes <= budget.capacity - budget.reserve && in_turn
        }
    }
}

impl RequestBudget {
    /// A budget of `capacity` bytes.
    pub fn new(capacity: usize) -> Arc<RequestBudget> {
        Arc::new(RequestBudget {
            capacity,
            reserve: capacity / 8,
            state: Mutex::new(State::default()),
            changed: Notify::new(),
        })
    }

    /// The most one request may reserve: a larger one can never be admitted (a large request
    /// cannot use the small requests' reserve).
    pub fn max_request(&self) -> usize {
        (self.capacity - self.reserve).max(SMALL_REQUEST.min(self.capacity))
    }

    /// Waits until `bytes` fit (and no request that has waited past its patience, a second, is
    /// ahead, unless a small request fits in its reserve), then reserves them until the
    /// returned reservation is dropped. `bytes` must not exceed [`RequestBudget::max_request`].
    /// A connection that closes while it waits leaves the queue (the future is dropped).
    pub async fn reserve(self: &Arc<RequestBudget>, bytes: usize) -> Reservation {
        assert!(
            bytes <= self.max_request(),
            "a request larger than the budget"
        );
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
                if state.admits(waiting.ticket, bytes, self, Instant::now()) {
                    state.waiting.remove(&waiting.ticket);
                    *state.holder(bytes) += bytes;
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
        let state = self.state.lock();
        state.large + state.small
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

impl State {
    /// The count a reservation of `bytes` is kept in.
    fn holder(&mut self, bytes: usize) -> &mut usize {
        if bytes <= SMALL_REQUEST {
            &mut self.small
        } else {
            &mut self.large
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        *self.budget.state.lock().holder(self.bytes) -= self.bytes;
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

    const MIB: usize = 1 << 20;

    #[test]
    fn a_request_that_does_not_fit_waits_until_room_is_released() {
        runtime().block_on(async {
            // 64 MiB: 8 MiB kept for small requests, 56 MiB for large ones.
            let budget = RequestBudget::new(64 * MIB);
            assert_eq!(budget.max_request(), 56 * MIB);
            let first = budget.reserve(40 * MIB).await;
            let waiter = tokio::spawn({
                let budget = budget.clone();
                async move { drop(budget.reserve(30 * MIB).await) }
            });
            until(|| budget.waiting() == 1).await;
            tokio::time::sleep(Duration::from_millis(50)).await;
            assert_eq!(
                (budget.in_use(), budget.waiting()),
                (40 * MIB, 1),
                "it waits"
            );
            drop(first);
            waiter.await.unwrap();
            assert_eq!((budget.in_use(), budget.waiting()), (0, 0));
        });
    }

    #[test]
    fn later_requests_pass_a_large_one_until_it_has_waited_its_patience() {
        runtime().block_on(async {
            let budget = RequestBudget::new(64 * MIB);
            let held = budget.reserve(30 * MIB).await;
            let large = tokio::spawn({
                let budget = budget.clone();
                async move {
                    let started = Instant::now();
                    let _r = budget.reserve(30 * MIB).await;
                    started.elapsed()
                }
            });
            until(|| budget.waiting() == 1).await;
            // A request that fits is not held up by the large one waiting for room.
            drop(budget.reserve(20 * MIB).await);
            // Once the large one has waited its patience, another large one waits behind it.
            tokio::time::sleep(PATIENCE + Duration::from_millis(100)).await;
            let medium = tokio::spawn({
                let budget = budget.clone();
                async move { drop(budget.reserve(2 * MIB).await) }
            });
            tokio::time::sleep(Duration::from_millis(300)).await;
            assert!(!medium.is_finished(), "the large one goes first");
            drop(held);
            assert!(large.await.unwrap() >= PATIENCE);
            medium.await.unwrap();
        });
    }

    #[test]
    fn half_sent_huge_requests_never_hold_up_small_ones() {
        runtime().block_on(async {
            let budget = RequestBudget::new(256 * MIB);
            // Three announced 90 MiB requests: two are admitted, the third waits for ever.
            let held = [
                budget.reserve(90 * MIB).await,
                budget.reserve(90 * MIB).await,
            ];
            let stuck = tokio::spawn({
                let budget = budget.clone();
                async move { drop(budget.reserve(90 * MIB).await) }
            });
            until(|| budget.waiting() == 1).await;
            tokio::time::sleep(PATIENCE + Duration::from_millis(100)).await;
            // Past its patience, small requests still pass: ApiVersions, and a thousand
            // 1 KiB produces held at once.
            let started = Instant::now();
            drop(budget.reserve(20).await);
            let small: Vec<Reservation> = {
                let mut small = Vec::new();
                for _ in 0..1000 {
                    small.push(budget.reserve(1024).await);
                }
                small
            };
            assert!(started.elapsed() < Duration::from_millis(100));
            assert!(!stuck.is_finished());
            drop((held, small));
            stuck.await.unwrap();
        });
    }

    #[test]
    fn small_requests_beyond_their_reserve_wait_behind_a_patient_large_one() {
        runtime().block_on(async {
            let budget = RequestBudget::new(64 * MIB);
            let mut small: Vec<Reservation> = Vec::new();
            for _ in 0..20 {
                small.push(budget.reserve(MIB).await);
            }
            // 12 MiB of small requests beyond their 8 MiB reserve leave 44 MiB to large ones.
            let large = tokio::spawn({
                let budget = budget.clone();
                async move { drop(budget.reserve(50 * MIB).await) }
            });
            until(|| budget.waiting() == 1).await;
            tokio::time::sleep(PATIENCE + Duration::from_millis(100)).await;
            let more = tokio::spawn({
                let budget = budget.clone();
                async move { drop(budget.reserve(MIB).await) }
            });
            tokio::time::sleep(Duration::from_millis(300)).await;
            assert!(
                !more.is_finished(),
                "the reserve is full: it waits its turn"
            );
            small.truncate(10);
            large.await.unwrap();
            more.await.unwrap();
        });
    }

    #[test]
    fn a_waiter_that_gives_up_leaves_the_queue() {
        runtime().block_on(async {
            let budget = RequestBudget::new(64 * MIB);
            let held = budget.reserve(56 * MIB).await;
            let gave_up =
                tokio::time::timeout(Duration::from_millis(20), budget.reserve(2 * MIB)).await;
            assert!(gave_up.is_err());
            assert_eq!(
                budget.waiting(),
                0,
                "its place is gone, nobody waits behind it"
            );
            drop(held);
            drop(budget.reserve(56 * MIB).await);
        });
    }
}
