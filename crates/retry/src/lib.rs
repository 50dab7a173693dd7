//! `logd-retry`: what a consumer needs when its handler fails. A transient failure is retried
//! later through retry topics (exponential backoff with jitter, capped in delay and attempts)
//! without blocking fresh records; a permanent failure, or one past the attempt limit, goes to a
//! dead-letter topic with its error and origin in headers; a durable dedupe store makes
//! redelivered messages harmless. The same [`RetryWorker`] runs over the embedded engine
//! (`Embedded`, the default `embedded` feature) and over a remote logd or Kafka broker
//! (`logd-client` implements [`Transport`]; it turns the feature off, so a remote worker
//! compiles no engine).
//!
//! ```
//! use logd::{Config, Log, TopicConfig};
//! use logd_retry::{Embedded, Failure, Outcome, RetryConfig, RetryWorker};
//!
//! # fn main() -> logd_retry::Result<()> {
//! # let temp = tempfile::tempdir().unwrap();
//! let log = Log::open(temp.path(), Config::default())?;
//! log.create_topic("orders", TopicConfig::default())?;
//! let mut worker = RetryWorker::new(Embedded::new(log), RetryConfig::new("billing", "orders"), None)?;
//! let poll = worker.poll_once(&mut |message, attempt| match message.value.as_deref() {
//!     Some(b"") => Outcome::Permanent(Failure::new("Empty", "an empty order")),
//!     _ if attempt < 2 => Outcome::Transient(Failure::new("Timeout", "billing is slow")),
//!     _ => Outcome::Success,
//! })?;
//! assert_eq!(poll.handled, 0); // nothing produced yet
//! # Ok(())
//! # }
//! ```

mod appender;
mod dead_letters;
mod dedupe;
#[cfg(feature = "embedded")]
mod embedded;
mod error;
mod forward;
mod journal;
pub mod message;
mod outcome;
mod policy;
mod retry_config;
#[cfg(feature = "embedded")]
mod share_worker;
mod transport;
mod worker;

pub use appender::IdempotentAppender;
pub use dead_letters::{
    DeadLetters, LetterFilter, REPLAY_GROUP, REPLAYS_SUFFIX, Replay, ReplayOptions, ReplayRecord,
    ReplayReport, replays_topic,
};
pub use dedupe::{DedupeConfig, DedupeStore, Processed};
#[cfg(feature = "embedded")]
pub use embedded::Embedded;
pub use error::{Error, Result};
pub use logd_storage::Headers;
pub use message::{Message, OutRecord};
pub use outcome::{Failure, Outcome, Poll, Stats};
pub use policy::{Jitter, RetryPolicy};
pub use retry_config::{CommitOrder, DEFAULT_RETRY_INFIX, Ordering, RetryConfig};
#[cfg(feature = "embedded")]
pub use share_worker::ShareWorker;
pub use transport::{Ownership, Stamp, Transport, decode_messages, encode_record};
pub use worker::RetryWorker;
