//! [`ShareWorker`]: the retry worker over a share group of the embedded engine (KIP-932), so
//! workers scale past the partition count: any number of them share a topic's partitions and
//! each record is acknowledged on its own. The group's configs carry the policy: a transient
//! failure releases the record, which the engine gives out again after logd's redelivery
//! backoff (`policy.base * 2^(deliveries - 1)` spread by `policy.jitter`, capped at
//! `policy.cap`); a
//! permanent failure, or a transient one on the last attempt, rejects it with its error, and the
//! engine writes it to the group's dead-letter topic with `logd.dlq.*` headers (its class,
//! message, attempts and reason `permanent` or `max-attempts`), exactly once with its
//! archiving. The attempt is the record's delivery count, which the engine keeps durably, so a
//! worker that dies holding records costs each one attempt and nothing more. While the handler
//! works through a poll's records, a second thread renews their locks (KIP-1222's RENEW) every
//! third of the group's lock duration and keeps the worker in its group, so a slow handler is
//! never handed the same record as another worker: only a worker that dies gives its records
//! back.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use logd::Log;
use logd::groups::share::{
    AcknowledgeType, AcknowledgementMode, BackoffJitter, RejectReason, ShareConsumer,
    ShareConsumerConfig,
};

use crate::error::{Error, Result};
use crate::message::Message;
use crate::outcome::{Outcome, Stats};
use crate::policy::{Jitter, RetryPolicy};

/// A retry worker over share group `group` on a topic of the embedded engine.
#[derive(Debug)]
pub struct ShareWorker {
    consumer: ShareConsumer,
    log: Log,
    group: String,
    max_attempts: u32,
    stats: Stats,
    renewal: Renewal,
}

/// How often held records are renewed while the handler works.
#[derive(Debug, Clone, Copy)]
enum Renewal {
    /// Every third of the group's lock duration.
    ThirdOfLock,
    Every(Duration),
    Never,
}

/// Kafka's bounds on `share.delivery.count.limit`.
const ATTEMPTS: std::ops::RangeInclusive<u32> = 2..=10;

impl ShareWorker {
    /// Joins share group `group` on `topic`, first setting the group's configs from `policy`
    /// (`share.delivery.count.limit` its attempts, 2 to 10 as Kafka bounds it; logd's
    /// redelivery backoff its base and cap) and, with `dead_letter_topic`, the group's
    /// dead-letter topic with the record copied. Workers of one group should agree on them.
    /// A poll acquires at most `max_records`: a worker that dies costs each record it holds
    /// one attempt, so keep it near what the handler gets through in a lock duration.
    pub fn new(
        log: &Log,
        group: &str,
        topic: &str,
        policy: &RetryPolicy,
        dead_letter_topic: Option<&str>,
        max_records: usize,
    ) -> Result<ShareWorker> {
        if !ATTEMPTS.contains(&policy.max_attempts) {
            return Err(Error::Config(format!(
                "a share group allows 2 to 10 attempts (share.delivery.count.limit), not {}",
                policy.max_attempts
            )));
        }
        let (attempts, base, cap) = (
            policy.max_attempts.to_string(),
            policy.base.as_millis().to_string(),
            policy.cap.as_millis().to_string(),
        );
        let jitter = match policy.jitter {
            Jitter::None => BackoffJitter::None,
            Jitter::Full => BackoffJitter::Full,
            Jitter::Equal => BackoffJitter::Equal,
        };
        let mut configs = vec![
            ("share.delivery.count.limit", Some(attempts.as_str())),
            ("logd.share.redelivery.backoff.ms", Some(base.as_str())),
            ("logd.share.redelivery.backoff.max.ms", Some(cap.as_str())),
            ("logd.share.redelivery.backoff.jitter", Some(jitter.name())),
        ];
        if let Some(dlq) = dead_letter_topic {
            configs.push(("errors.deadletterqueue.topic.name", Some(dlq)));
            configs.push(("errors.deadletterqueue.copy.record.enable", Some("true")));
        }
        log.alter_group_configs(group, &configs, false)?;
        let mut consumer = ShareConsumer::new(
            log,
            ShareConsumerConfig {
                group_id: group.to_owned(),
                acknowledgement_mode: AcknowledgementMode::Explicit,
                max_poll_records: max_records.max(1),
                ..ShareConsumerConfig::default()
            },
        );
        consumer.subscribe(vec![topic.to_owned()])?;
        Ok(ShareWorker {
            consumer,
            log: log.clone(),
            group: group.to_owned(),
            max_attempts: policy.max_attempts,
            stats: Stats::default(),
            renewal: Renewal::ThirdOfLock,
        })
    }

    /// Renews held records every `every` instead of every third of the lock duration, or
    /// (`None`) never: a handler slower than the lock duration then has its records handed to
    /// another worker meanwhile, as Kafka's consumers without RENEW do.
    pub fn renew_locks_every(&mut self, every: Option<Duration>) {
        self.renewal = every.map_or(Renewal::Never, Renewal::Every);
    }

    /// Handles what one poll (waiting up to `timeout`) acquires with `handler` (given each
    /// message and its attempt, from 1), then acknowledges them all, durably; returns how many
    /// it handled.
    pub fn poll_once(
        &mut self,
        timeout: Duration,
        handler: &mut dyn FnMut(&Message, u32) -> Outcome,
    ) -> Result<usize> {
        let records = self.consumer.poll(timeout)?;
        let held: Vec<(String, u32, i64)> = records
            .iter()
            .map(|r| {
                (
                    r.record.topic.to_string(),
                    r.record.partition,
                    r.record.offset,
                )
            })
            .collect();
        let every = match self.renewal {
            Renewal::Never => None,
            Renewal::Every(every) => Some(every),
            Renewal::ThirdOfLock => {
                let lock = self.log.share_lock_duration_ms(&self.group);
                Some(Duration::from_millis(
                    u64::try_from(lock / 3).unwrap_or(1).max(1),
                ))
            }
        };
        let keeper = every
            .filter(|_| !held.is_empty())
            .map(|every| (every, self.consumer.keeper()));
        let (working, finished) = mpsc::channel::<()>();
        std::thread::scope(|scope| {
            if let Some((every, keeper)) = keeper {
                let held = &held;
                scope.spawn(move || {
                    // Until the handler is done (the sender dropped). A record whose lock was
                    // lost already is not renewed; its acknowledgement is refused at the
                    // commit, as without renewals.
                    while finished.recv_timeout(every) == Err(RecvTimeoutError::Timeout) {
                        let _ = keeper.renew(held);
                    }
                });
            }
            let handled = self.handle(&records, handler);
            drop(working);
            handled
        })?;
        self.consumer.commit()?;
        Ok(records.len())
    }

    /// Runs `handler` on each of a poll's `records` and records its verdict, to be sent by
    /// the commit.
    fn handle(
        &mut self,
        records: &[logd::groups::share::ShareRecord],
        handler: &mut dyn FnMut(&Message, u32) -> Outcome,
    ) -> Result<()> {
        for record in records {
            let r = &record.record;
            let message = Message {
                topic: r.topic.to_string(),
                partition: r.partition,
                offset: r.offset,
                timestamp: r.timestamp,
                key: r.key.clone(),
                value: r.value.clone(),
                headers: r
                    .headers
                    .iter()
                    .map(|(k, v)| (String::from_utf8_lossy(k).into_owned(), v.clone()))
                    .collect(),
            };
            let attempt = u32::from(record.delivery_count);
            match handler(&message, attempt) {
                Outcome::Success => {
                    self.stats.succeeded += 1;
                    self.consumer.acknowledge(record, AcknowledgeType::Accept)?;
                }
                Outcome::Transient(_) if attempt < self.max_attempts => {
                    self.stats.retried += 1;
                    self.consumer
                        .acknowledge(record, AcknowledgeType::Release)?;
                }
                Outcome::Transient(failure) | Outcome::Permanent(failure) => {
                    self.stats.dead_lettered += 1;
                    let out_of_attempts = attempt >= self.max_attempts;
                    self.consumer.reject_with(
                        record,
                        RejectReason {
                            class: failure.class,
                            message: failure.message,
                            out_of_attempts,
                        },
                    )?;
                }
            }
        }
        Ok(())
    }

    /// What this worker's handler did so far: successes, retries (releases) and dead letters.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Sends the last acknowledgements and leaves the group.
    pub fn close(self) -> Result<()> {
        Ok(self.consumer.close()?)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::mpsc;

    use logd::groups::share::{ShareConsumer, ShareConsumerConfig};
    use logd::{Config, ManualClock, Producer, ProducerConfig, ProducerRecord, TopicConfig};

    use super::*;

    /// An engine on a manual clock with two records in `jobs` and group `workers` reading from
    /// the earliest with a 15 s lock and Kafka's 45 s session timeout.
    fn engine(dir: &std::path::Path, clock: Arc<ManualClock>) -> Log {
        let log = Log::open_with(
            Arc::new(logd_storage::RealFs),
            clock,
            dir,
            Config::default(),
        )
        .unwrap();
        log.create_topic("jobs", TopicConfig::default()).unwrap();
        let producer = Producer::new(&log, ProducerConfig::default());
        for job in ["a", "b"] {
            producer
                .send(ProducerRecord::new("jobs", job))
                .unwrap()
                .wait()
                .unwrap();
        }
        log.alter_group_configs(
            "workers",
            &[
                ("share.auto.offset.reset", Some("earliest")),
                ("share.record.lock.duration.ms", Some("15000")),
            ],
            false,
        )
        .unwrap();
        log
    }

    /// A worker whose handler takes 50 s on the engine's clock: with renewals another member
    /// gets nothing meanwhile and the worker accepts both records; without, the other member
    /// gets them at 15 s and the worker's acknowledgements are refused.
    fn slow_handler_holds_its_records(renew: Option<Duration>) -> (Vec<i64>, Result<usize>) {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(0));
        let log = engine(dir.path(), clock.clone());
        let policy = RetryPolicy::default();
        let mut worker = ShareWorker::new(&log, "workers", "jobs", &policy, None, 10).unwrap();
        worker.renew_locks_every(renew);
        let (started, working) = mpsc::channel();
        let (finish, finished) = mpsc::channel::<()>();
        let busy = std::thread::spawn(move || {
            let mut first = true;
            let handled = worker.poll_once(Duration::from_secs(5), &mut |_, _| {
                if std::mem::take(&mut first) {
                    started.send(()).unwrap();
                    finished.recv().unwrap();
                }
                Outcome::Success
            });
            (worker, handled)
        });
        working.recv().unwrap();
        let mut other = ShareConsumer::new(
            &log,
            ShareConsumerConfig {
                group_id: "workers".into(),
                ..ShareConsumerConfig::default()
            },
        );
        other.subscribe(vec!["jobs".into()]).unwrap();
        let mut taken = Vec::new();
        for _ in 0..5 {
            clock.advance(10_000);
            // Real time for the keeper to renew at this clock reading.
            std::thread::sleep(Duration::from_millis(150));
            let got = other.poll(Duration::ZERO).unwrap();
            taken.extend(got.iter().map(|r| r.record.offset));
            for r in &got {
                other.acknowledge(r, AcknowledgeType::Release).unwrap();
            }
        }
        finish.send(()).unwrap();
        let (_worker, handled) = busy.join().unwrap();
        (taken, handled)
    }

    #[test]
    fn a_slow_handler_keeps_its_records_and_its_membership() {
        let (taken, handled) = slow_handler_holds_its_records(Some(Duration::from_millis(20)));
        assert_eq!(taken, Vec::<i64>::new());
        assert_eq!(handled.unwrap(), 2);
    }

    /// 20 records fail once at 0 under a 10 s backoff with `jitter`: how many come back by
    /// 5 s, and how many more by 10 s (the cap is 10 s too, so none later).
    fn backoff_under(jitter: crate::policy::Jitter) -> (usize, usize) {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(0));
        let log = engine(dir.path(), clock.clone());
        let producer = Producer::new(&log, ProducerConfig::default());
        for _ in 0..18 {
            producer
                .send(ProducerRecord::new("jobs", "more"))
                .unwrap()
                .wait()
                .unwrap();
        }
        let policy = RetryPolicy {
            base: Duration::from_secs(10),
            cap: Duration::from_secs(10),
            jitter,
            ..RetryPolicy::default()
        };
        let mut worker = ShareWorker::new(&log, "workers", "jobs", &policy, None, 100).unwrap();
        let failed = worker
            .poll_once(Duration::ZERO, &mut |_, _| {
                Outcome::Transient(crate::Failure::new("test", "not yet"))
            })
            .unwrap();
        assert_eq!(failed, 20);
        let mut success = |_: &Message, _| Outcome::Success;
        clock.advance(5_000);
        let early = worker.poll_once(Duration::ZERO, &mut success).unwrap();
        clock.advance(5_000);
        let rest = worker.poll_once(Duration::ZERO, &mut success).unwrap();
        (early, rest)
    }

    #[test]
    fn the_redelivery_backoff_follows_the_policys_jitter() {
        use crate::policy::Jitter;
        // Exactly the exponential wait: nothing early, everything at 10 s.
        assert_eq!(backoff_under(Jitter::None), (0, 20));
        // Full jitter spreads them over 0-10 s; equal over 5-10 s. Never past the cap.
        let (early, rest) = backoff_under(Jitter::Full);
        assert!(early > 0 && early + rest == 20, "{early} + {rest}");
        let (early, rest) = backoff_under(Jitter::Equal);
        assert!(early < 20 && early + rest == 20, "{early} + {rest}");
    }

    #[test]
    fn without_renewals_a_slow_handlers_records_go_to_another_member() {
        let (taken, handled) = slow_handler_holds_its_records(None);
        assert!(taken.contains(&0) && taken.contains(&1), "{taken:?}");
        assert!(handled.is_err(), "{handled:?}");
    }
}
