//! [`DeadLetters`]: a dead-letter topic read and replayed from Rust, over any [`Transport`]
//! (the embedded engine, or a remote logd or Kafka broker); `logd dlq` is a printer over it.
//!
//! The dead-letter position is the commit of the group [`REPLAY_GROUP`] on the dead-letter
//! topic: letters after it are pending. A replay re-produces letters to their original topic
//! (or another), raising `logd.dlq.replay.count` so a letter that dies again is visibly a
//! repeat, and moves the position past every letter it scanned.

use std::collections::BTreeMap;

use logd::Headers;

use crate::appender::IdempotentAppender;
use crate::error::{Error, Result};
use crate::message::*;
use crate::transport::Transport;

/// The group whose commits on a dead-letter topic mark what was replayed.
pub const REPLAY_GROUP: &str = "logd-dlq-replay";

/// Which letters a replay takes; an unset field matches every letter.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LetterFilter {
    /// `logd.dlq.reason`: `permanent` or `max-attempts`.
    pub reason: Option<String>,
    /// `logd.dlq.error.class`.
    pub error_class: Option<String>,
    /// The record key (as UTF-8).
    pub key: Option<String>,
}

impl LetterFilter {
    /// True if `letter` passes every set field.
    pub fn matches(&self, letter: &Message) -> bool {
        let key = letter.key.as_deref().map(String::from_utf8_lossy);
        self.reason
            .as_deref()
            .is_none_or(|r| letter.header_str(DLQ_REASON) == Some(r))
            && self
                .error_class
                .as_deref()
                .is_none_or(|c| letter.header_str(DLQ_ERROR_CLASS) == Some(c))
            && self
                .key
                .as_deref()
                .is_none_or(|k| key.as_deref() == Some(k))
    }
}

/// How to replay.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplayOptions {
    /// Produce here instead of each letter's original topic.
    pub to: Option<String>,
    /// Only these letters.
    pub filter: LetterFilter,
    /// Scan from the topic's start instead of the dead-letter position.
    pub from_beginning: bool,
    /// Plan only: nothing is produced and the position does not move.
    pub dry_run: bool,
}

/// One letter's replay, planned or done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replay {
    /// The letter's partition in the dead-letter topic.
    pub partition: u32,
    /// Its offset there.
    pub offset: i64,
    /// Where it goes.
    pub target: String,
    /// And into which partition (its original one, modulo the target's count).
    pub target_partition: u32,
    /// The `logd.dlq.replay.count` it carries: 1 on its first replay.
    pub count: i64,
}

/// What a replay scanned and replayed (or would have, in a dry run).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayReport {
    /// Letters scanned.
    pub scanned: usize,
    /// The matching ones, in scan order.
    pub replays: Vec<Replay>,
}

/// A dead-letter topic over a transport.
pub struct DeadLetters<'a> {
    transport: &'a mut dyn Transport,
    topic: String,
}

impl std::fmt::Debug for DeadLetters<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeadLetters")
            .field("topic", &self.topic)
            .finish()
    }
}

impl<'a> DeadLetters<'a> {
    /// The dead-letter topic `topic` (e.g. `orders.dlq`) over `transport`.
    pub fn new(transport: &'a mut dyn Transport, topic: impl Into<String>) -> DeadLetters<'a> {
        DeadLetters {
            transport,
            topic: topic.into(),
        }
    }

    /// The letters after the dead-letter position (`pending_only`), or every retained one.
    pub fn list(&mut self, pending_only: bool) -> Result<Vec<Message>> {
        let mut all = Vec::new();
        for partition in 0..self.transport.partition_count(&self.topic)? {
            let mut at = match pending_only {
                true => self
                    .transport
                    .committed(REPLAY_GROUP, &self.topic, partition)?
                    .unwrap_or(0),
                false => 0,
            };
            loop {
                let batch = self.transport.fetch(&self.topic, partition, at)?;
                let Some(last) = batch.last() else { break };
                at = last.offset + 1;
                all.extend(batch);
            }
        }
        Ok(all)
    }

    /// The letter at `partition`/`offset`, if there is one.
    pub fn show(&mut self, partition: u32, offset: i64) -> Result<Option<Message>> {
        Ok(self
            .transport
            .fetch(&self.topic, partition, offset)?
            .into_iter()
            .find(|m| m.offset == offset))
    }

    /// Replays the letters `options` select, as one idempotent producer, then moves the
    /// position past every letter scanned (what the filter skipped counts as handled). A dry
    /// run returns the same plan and changes nothing.
    pub fn replay(&mut self, options: &ReplayOptions) -> Result<ReplayReport> {
        let scanned = self.list(!options.from_beginning)?;
        let mut appender = IdempotentAppender::new();
        let mut replays = Vec::new();
        for letter in scanned.iter().filter(|l| options.filter.matches(l)) {
            let target = options
                .to
                .clone()
                .or_else(|| letter.header_str(DLQ_ORIGINAL_TOPIC).map(str::to_owned))
                .ok_or_else(|| Error::NoOrigin {
                    topic: self.topic.clone(),
                    partition: letter.partition,
                    offset: letter.offset,
                })?;
            let partitions = self.transport.partition_count(&target)?;
            let target_partition = letter
                .header_i64(DLQ_ORIGINAL_PARTITION)
                .map_or(letter.partition, |p| p as u32)
                % partitions;
            let count = letter.header_i64(DLQ_REPLAY_COUNT).unwrap_or(0) + 1;
            if !options.dry_run {
                let mut record = OutRecord::copy_of(letter);
                record.headers.retain(|(k, _)| k != DLQ_REPLAY_COUNT);
                appender.send(
                    self.transport,
                    &target,
                    target_partition,
                    &record.with(DLQ_REPLAY_COUNT, count),
                )?;
            }
            replays.push(Replay {
                partition: letter.partition,
                offset: letter.offset,
                target,
                target_partition,
                count,
            });
        }
        if !options.dry_run {
            let mut ends: BTreeMap<u32, i64> = BTreeMap::new();
            for letter in &scanned {
                ends.insert(letter.partition, letter.offset + 1);
            }
            for (partition, end) in ends {
                self.transport
                    .commit(REPLAY_GROUP, &self.topic, partition, end)?;
            }
        }
        Ok(ReplayReport {
            scanned: scanned.len(),
            replays,
        })
    }
}
