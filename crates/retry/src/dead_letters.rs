//! [`DeadLetters`]: a dead-letter topic read and replayed from Rust, over any [`Transport`]
//! (the embedded engine, or a remote logd or Kafka broker); `logd dlq` is a printer over it.
//!
//! A replay re-produces letters to their original topic (or another), raising
//! `logd.dlq.replay.count` so a letter that dies again is visibly a repeat, and records each
//! replay in the dead-letter topic's replays topic (`orders.dlq.replays`, see
//! [`replays_topic`]): which letter, where it went, when, and who asked. A letter is pending
//! until it is replayed: the letters a replay's filter skips stay pending. The dead-letter
//! position, the commit of the group [`REPLAY_GROUP`] on the dead-letter topic, is how far
//! every letter is handled; a replay moves it past the handled letters at its front, so
//! listing pending letters reads from there and the replays topic says which of the letters
//! after it are done.

use std::collections::{BTreeMap, BTreeSet};

use logd_storage::Headers;

use crate::appender::IdempotentAppender;
use crate::error::{Error, Result};
use crate::message::*;
use crate::transport::Transport;

/// The group whose commits on a dead-letter topic mark how far every letter is replayed.
pub const REPLAY_GROUP: &str = "logd-dlq-replay";

/// What a dead-letter topic's replays topic is named after.
pub const REPLAYS_SUFFIX: &str = ".replays";

/// Where the replays of `dlq_topic`'s letters are recorded: `orders.dlq.replays`. It has the
/// dead-letter topic's partition count, and a letter's replays go to the letter's partition.
pub fn replays_topic(dlq_topic: &str) -> String {
    format!("{dlq_topic}{REPLAYS_SUFFIX}")
}

/// Which letters a replay takes; an unset field matches every letter.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LetterFilter {
    /// `logd.dlq.reason`: `permanent` or `max-attempts`.
    pub reason: Option<String>,
    /// `logd.dlq.error.class`.
    pub error_class: Option<String>,
    /// The record key (as UTF-8).
    pub key: Option<String>,
    /// Only the letters at these places (partition, offset).
    pub letters: Option<BTreeSet<(u32, i64)>>,
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
            && self
                .letters
                .as_ref()
                .is_none_or(|places| places.contains(&(letter.partition, letter.offset)))
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
    /// Who asks (a principal, `User:alice`), recorded with each replay.
    pub by: Option<String>,
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

/// A replay as its replays topic records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayRecord {
    /// The letter's partition in the dead-letter topic.
    pub partition: u32,
    /// Its offset there.
    pub offset: i64,
    /// Where it went.
    pub target: String,
    /// The partition it went to.
    pub target_partition: u32,
    /// Its offset there.
    pub target_offset: i64,
    /// Its `logd.dlq.replay.count` there.
    pub count: i64,
    /// Who asked, when known.
    pub by: Option<String>,
    /// When (ms).
    pub at: i64,
}

impl ReplayRecord {
    fn of(record: &Message) -> Option<ReplayRecord> {
        Some(ReplayRecord {
            partition: u32::try_from(record.header_i64(REPLAY_LETTER_PARTITION)?).ok()?,
            offset: record.header_i64(REPLAY_LETTER_OFFSET)?,
            target: record.header_str(REPLAY_TARGET_TOPIC)?.to_owned(),
            target_partition: u32::try_from(record.header_i64(REPLAY_TARGET_PARTITION)?).ok()?,
            target_offset: record.header_i64(REPLAY_TARGET_OFFSET)?,
            count: record.header_i64(DLQ_REPLAY_COUNT)?,
            by: record.header_str(REPLAY_BY).map(str::to_owned),
            at: record.timestamp,
        })
    }
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

    /// The letters not yet replayed (`pending_only`), or every retained one.
    pub fn list(&mut self, pending_only: bool) -> Result<Vec<Message>> {
        if !pending_only {
            return self.read(false);
        }
        let replayed = self.replayed_places()?;
        let mut letters = self.read(true)?;
        letters.retain(|l| !replayed.contains(&(l.partition, l.offset)));
        Ok(letters)
    }

    /// The letters from the dead-letter position (`from_position`) or from the start.
    fn read(&mut self, from_position: bool) -> Result<Vec<Message>> {
        let mut all = Vec::new();
        for partition in 0..self.transport.partition_count(&self.topic)? {
            let mut at = match from_position {
                true => self.position(partition)?,
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

    fn position(&mut self, partition: u32) -> Result<i64> {
        Ok(self
            .transport
            .committed(REPLAY_GROUP, &self.topic, partition)?
            .unwrap_or(0))
    }

    /// Every recorded replay of this topic's letters, oldest first.
    pub fn replays(&mut self) -> Result<Vec<ReplayRecord>> {
        let topic = replays_topic(&self.topic);
        let Some(partitions) = self.transport.partitions_if_exists(&topic)? else {
            return Ok(Vec::new());
        };
        let mut all = Vec::new();
        for partition in 0..partitions {
            let mut at = 0;
            loop {
                let batch = self.transport.fetch(&topic, partition, at)?;
                let Some(last) = batch.last() else { break };
                at = last.offset + 1;
                all.extend(batch.iter().filter_map(ReplayRecord::of));
            }
        }
        all.sort_by_key(|r| r.at);
        Ok(all)
    }

    fn replayed_places(&mut self) -> Result<BTreeSet<(u32, i64)>> {
        Ok(self
            .replays()?
            .into_iter()
            .map(|r| (r.partition, r.offset))
            .collect())
    }

    /// The letter at `partition`/`offset`, if there is one.
    pub fn show(&mut self, partition: u32, offset: i64) -> Result<Option<Message>> {
        Ok(self
            .transport
            .fetch(&self.topic, partition, offset)?
            .into_iter()
            .find(|m| m.offset == offset))
    }

    /// Replays the letters `options` select, as one idempotent producer, recording each in
    /// the replays topic after it is out, then moves the position past the replayed letters at
    /// its front (what the filter skipped stays pending). A dry run returns the same plan and
    /// changes nothing.
    pub fn replay(&mut self, options: &ReplayOptions) -> Result<ReplayReport> {
        let mut handled = self.replayed_places()?;
        let mut scanned = self.read(!options.from_beginning)?;
        if !options.from_beginning {
            scanned.retain(|l| !handled.contains(&(l.partition, l.offset)));
        }
        let partitions = self.transport.partition_count(&self.topic)?;
        let replays_topic = replays_topic(&self.topic);
        if !options.dry_run {
            self.transport
                .ensure_topic(&replays_topic, partitions, None)?;
        }
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
                let target_offset = appender.send(
                    self.transport,
                    &target,
                    target_partition,
                    &record.with(DLQ_REPLAY_COUNT, count),
                )?;
                let mut done = OutRecord {
                    timestamp: self.transport.now_ms(),
                    key: None,
                    value: None,
                    headers: Vec::new(),
                }
                .with(REPLAY_LETTER_PARTITION, letter.partition)
                .with(REPLAY_LETTER_OFFSET, letter.offset)
                .with(REPLAY_TARGET_TOPIC, &target)
                .with(REPLAY_TARGET_PARTITION, target_partition)
                .with(REPLAY_TARGET_OFFSET, target_offset)
                .with(DLQ_REPLAY_COUNT, count);
                if let Some(by) = &options.by {
                    done = done.with(REPLAY_BY, by);
                }
                appender.send(
                    self.transport,
                    &replays_topic,
                    letter.partition % partitions,
                    &done,
                )?;
                handled.insert((letter.partition, letter.offset));
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
            self.advance_position(&handled)?;
        }
        Ok(ReplayReport {
            scanned: scanned.len(),
            replays,
        })
    }

    /// Moves each partition's position past the letters at its front that are `handled`.
    fn advance_position(&mut self, handled: &BTreeSet<(u32, i64)>) -> Result<()> {
        let mut by_partition: BTreeMap<u32, Vec<i64>> = BTreeMap::new();
        for letter in self.read(true)? {
            by_partition
                .entry(letter.partition)
                .or_default()
                .push(letter.offset);
        }
        for (partition, offsets) in by_partition {
            let front = offsets
                .iter()
                .take_while(|offset| handled.contains(&(partition, **offset)))
                .last();
            if let Some(last) = front {
                self.transport
                    .commit(REPLAY_GROUP, &self.topic, partition, last + 1)?;
            }
        }
        Ok(())
    }
}
