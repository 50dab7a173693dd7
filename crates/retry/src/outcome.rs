//! What a handler says about a record ([`Outcome`], with a [`Failure`]'s class and message for
//! the dead-letter headers), and what a worker reports back ([`Poll`], [`Stats`]).

/// Why a handler failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The error's kind (a type name, say), for `logd.dlq.error.class`.
    pub class: String,
    /// What went wrong, for `logd.dlq.error.message`.
    pub message: String,
}

impl Failure {
    /// A failure of `class` saying `message`.
    pub fn new(class: impl Into<String>, message: impl Into<String>) -> Failure {
        Failure {
            class: class.into(),
            message: message.into(),
        }
    }
}

/// What a handler says about a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Done.
    Success,
    /// Worth retrying later (a timeout, a service down).
    Transient(Failure),
    /// Will never work (malformed input): straight to the dead-letter topic.
    Permanent(Failure),
}

/// What one [`RetryWorker::poll_once`](crate::RetryWorker::poll_once) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Poll {
    /// Records handled, skipped or parked.
    pub handled: usize,
    /// The earliest due time of a record that is waiting (ms), if any.
    pub next_due: Option<i64>,
}

/// Running counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Records the handler succeeded on.
    pub succeeded: u64,
    /// Records sent to a retry tier after a transient failure.
    pub retried: u64,
    /// Records sent to the dead-letter topic.
    pub dead_lettered: u64,
    /// Records skipped because their id was processed before.
    pub duplicates: u64,
    /// Records parked behind an earlier record of their key ([`Ordering::PerKey`](crate::Ordering::PerKey)).
    pub parked: u64,
    /// Commits the group refused because it had gone on without this worker (a rebalance):
    /// the record just handled is redelivered to its partition's next owner.
    pub refused_commits: u64,
}
