//! [`RetryConfig`]: a worker's group, source, tiers, policy and topic names, with the
//! ordering and commit-order choices.

use std::time::Duration;

use crate::policy::RetryPolicy;

/// Whether retries may reorder a key's records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ordering {
    /// Later records of a key are handled while an earlier one waits in retry (the default).
    Unordered,
    /// Later records of a key wait (parked in the first tier) until the earlier one succeeded
    /// or was dead-lettered.
    PerKey,
}

/// When a hop's source offset is committed relative to the hop's append.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitOrder {
    /// Append, then commit: a crash in between redelivers (at-least-once). The default.
    AfterAppend,
    /// Commit, then append: a crash in between loses the record. Wrong; it exists so the
    /// crash tests can show their checker catches it.
    BeforeAppend,
}

/// What names a source's retry tiers unless [`RetryConfig::retry_infix`] says otherwise:
/// `orders.retry.5s`.
pub const DEFAULT_RETRY_INFIX: &str = ".retry.";

/// A worker's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryConfig {
    /// Consumer group the worker commits under.
    pub group: String,
    /// Topic of fresh records.
    pub source: String,
    /// Retry tiers by delay, ascending (default 1 s, 10 s, 1 min, 5 min).
    pub tiers: Vec<Duration>,
    /// Backoff and attempt limit.
    pub policy: RetryPolicy,
    /// Seed of the jitter's randomness.
    pub seed: u64,
    /// Header holding a message id for deduplication; without it (or when a record lacks
    /// it) the id is the source record's `topic/partition/offset`.
    pub id_header: Option<String>,
    /// Default [`Ordering::Unordered`].
    pub ordering: Ordering,
    /// Between the source name and a tier's delay in retry topic names (default `.retry.`).
    pub retry_infix: String,
    /// After the source name in the dead-letter topic's name (default `.dlq`).
    pub dlq_suffix: String,
    /// Retention of the dead-letter topic (default 30 days; `None`: the broker's default).
    pub dlq_retention: Option<Duration>,
    /// Default [`CommitOrder::AfterAppend`].
    pub commit_order: CommitOrder,
    /// A directory of this worker's own for its hop journal (default none). With it, a hop
    /// that a crash interrupted between its append and its commit is completed after the
    /// restart without a second copy; without it, that copy may be written twice.
    pub state_dir: Option<std::path::PathBuf>,
    /// The base of the workers' transactional ids (default none): with it each hop (the copy
    /// to a retry tier or the dead-letter topic, and the commit past its source record) is one
    /// transaction, so a crash anywhere leaves the copy written exactly once, with no journal;
    /// the worker reads committed records only. Each partition number has its own producer,
    /// `<base>-<partition>`, whichever worker of the group owns it: the worker that takes a
    /// partition over (a restart, or a rebalance) fences the one before it and aborts what it
    /// left open before reading the group's commits. Needs a transport with transactions (the
    /// remote ones; a broker serving Kafka's transactions). Give every worker of a group the
    /// same base; without group membership (`Remote`), run one worker per base.
    pub transactional_id: Option<String>,
}

impl RetryConfig {
    /// Defaults for `group` consuming `source`.
    pub fn new(group: impl Into<String>, source: impl Into<String>) -> RetryConfig {
        RetryConfig {
            group: group.into(),
            source: source.into(),
            tiers: [1, 10, 60, 300].map(Duration::from_secs).to_vec(),
            policy: RetryPolicy::default(),
            seed: 0,
            id_header: None,
            ordering: Ordering::Unordered,
            retry_infix: DEFAULT_RETRY_INFIX.into(),
            dlq_suffix: ".dlq".into(),
            dlq_retention: Some(Duration::from_secs(30 * 24 * 3600)),
            commit_order: CommitOrder::AfterAppend,
            state_dir: None,
            transactional_id: None,
        }
    }

    /// The retry topic of a tier: `<source><infix><delay>`, the delay as `500ms`, `10s`, `5m`
    /// or `1h`.
    pub fn tier_topic(&self, tier: Duration) -> String {
        let ms = tier.as_millis();
        let label = match ms {
            _ if ms.is_multiple_of(3_600_000) => format!("{}h", ms / 3_600_000),
            _ if ms.is_multiple_of(60_000) => format!("{}m", ms / 60_000),
            _ if ms.is_multiple_of(1_000) => format!("{}s", ms / 1_000),
            _ => format!("{ms}ms"),
        };
        format!("{}{}{label}", self.source, self.retry_infix)
    }

    /// The dead-letter topic.
    pub fn dlq_topic(&self) -> String {
        format!("{}{}", self.source, self.dlq_suffix)
    }
}
