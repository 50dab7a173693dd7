//! [`ShareWorker`]: the retry worker over a share group of the embedded engine (KIP-932), so
//! workers scale past the partition count: any number of them share a topic's partitions and
//! each record is acknowledged on its own. The group's configs carry the policy: a transient
//! failure releases the record, which the engine gives out again after logd's redelivery
//! backoff (`policy.base * 2^(deliveries - 1)`, capped at `policy.cap`, with jitter); a
//! permanent failure, or a transient one on the last attempt, rejects it with its error, and the
//! engine writes it to the group's dead-letter topic with `logd.dlq.*` headers (its class,
//! message, attempts and reason `permanent` or `max-attempts`), exactly once with its
//! archiving. The attempt is the record's delivery count, which the engine keeps durably, so a
//! worker that dies holding records costs each one attempt and nothing more.

use std::time::Duration;

use logd::Log;
use logd::share::{
    AcknowledgeType, AcknowledgementMode, RejectReason, ShareConsumer, ShareConsumerConfig,
};

use crate::error::{Error, Result};
use crate::message::Message;
use crate::outcome::{Outcome, Stats};
use crate::policy::RetryPolicy;

/// A retry worker over share group `group` on a topic of the embedded engine.
#[derive(Debug)]
pub struct ShareWorker {
    consumer: ShareConsumer,
    max_attempts: u32,
    stats: Stats,
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
        let mut configs = vec![
            ("share.delivery.count.limit", Some(attempts.as_str())),
            ("logd.share.redelivery.backoff.ms", Some(base.as_str())),
            ("logd.share.redelivery.backoff.max.ms", Some(cap.as_str())),
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
            max_attempts: policy.max_attempts,
            stats: Stats::default(),
        })
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
        for record in &records {
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
        self.consumer.commit()?;
        Ok(records.len())
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
