//! The embedded share consumer: a member of a share group that reads every partition of the
//! topics it subscribes to, side by side with any number of other members, each record
//! acquired for it alone under a lock and acknowledged on its own, as Kafka's
//! `KafkaShareConsumer`. With [`AcknowledgementMode::Implicit`] (Kafka's default) every record
//! of a poll is accepted by the next poll, commit or close; with `Explicit` each is
//! acknowledged with [`ShareConsumer::acknowledge`], and those left unacknowledged are given
//! back at the next poll. Acknowledgements are sent (durably) by the next poll, `commit` or
//! `close`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use logd_storage::Offset;
use logd_storage::batch::Record;

use super::keeper::ShareKeeper;
use super::partition::{AcknowledgeType, AcquiredRecords};
use super::persist::RejectReason;
use crate::consumer::ConsumerRecord;
use crate::engine::Log;
use crate::error::{Error, Result};

/// How records are acknowledged (Kafka's `share.acknowledgement.mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AcknowledgementMode {
    /// Every record a poll returned is accepted by the next poll, commit or close.
    #[default]
    Implicit,
    /// Each record is acknowledged by the application; one left out is released.
    Explicit,
}

/// A share consumer's settings.
#[derive(Debug, Clone)]
pub struct ShareConsumerConfig {
    /// The share group.
    pub group_id: String,
    /// At most this many records per poll.
    pub max_poll_records: usize,
    /// Bytes read from a partition at a time.
    pub fetch_max_bytes: usize,
    /// How records are acknowledged.
    pub acknowledgement_mode: AcknowledgementMode,
}

impl Default for ShareConsumerConfig {
    fn default() -> ShareConsumerConfig {
        ShareConsumerConfig {
            group_id: String::new(),
            max_poll_records: 500,
            fetch_max_bytes: 1 << 20,
            acknowledgement_mode: AcknowledgementMode::Implicit,
        }
    }
}

/// A record delivered to a share consumer.
#[derive(Debug, Clone)]
pub struct ShareRecord {
    /// The record.
    pub record: ConsumerRecord,
    /// How many times it has been delivered, this time included.
    pub delivery_count: u16,
}

/// The client id and host an embedded member shows in its group.
const CLIENT: (&str, &str) = ("logd-embedded", "/embedded");

/// A member of a share group. One per thread, as in Kafka.
#[derive(Debug)]
pub struct ShareConsumer {
    log: Log,
    config: ShareConsumerConfig,
    member_id: String,
    subscription: Vec<String>,
    /// Records delivered and not yet acknowledged, per partition: offset to the type chosen
    /// (`None`: not yet).
    delivered: BTreeMap<(String, u32), BTreeMap<i64, Option<AcknowledgeType>>>,
    /// Why records rejected with [`ShareConsumer::reject_with`] were, until sent.
    reasons: BTreeMap<(String, u32), BTreeMap<i64, RejectReason>>,
    /// Its epoch in the group (0: to join), and when it last heartbeat (engine clock).
    member_epoch: i32,
    last_heartbeat_ms: i64,
    next_partition: usize,
}

impl ShareConsumer {
    /// A member of share group `config.group_id` on `log`, with a member id of its own.
    pub fn new(log: &Log, config: ShareConsumerConfig) -> ShareConsumer {
        // Random per consumer, as Kafka's client picks a UUID: a restarted process never
        // takes over the records a dead one held before their locks expire.
        use std::hash::BuildHasher;
        let member_id = format!(
            "logd-share-{:016x}",
            std::collections::hash_map::RandomState::new().hash_one(0u8)
        );
        ShareConsumer {
            log: log.clone(),
            config,
            member_id,
            subscription: Vec::new(),
            delivered: BTreeMap::new(),
            reasons: BTreeMap::new(),
            member_epoch: 0,
            last_heartbeat_ms: 0,
            next_partition: 0,
        }
    }

    /// This member's id.
    pub fn member_id(&self) -> &str {
        &self.member_id
    }

    /// A handle another thread uses to keep this consumer's records and membership while its
    /// owner works on them (see [`ShareKeeper`]).
    pub fn keeper(&self) -> ShareKeeper {
        ShareKeeper {
            log: self.log.clone(),
            group: self.config.group_id.clone(),
            member: self.member_id.clone(),
        }
    }

    /// Reads every partition of `topics` from the next poll on.
    pub fn subscribe(&mut self, topics: Vec<String>) -> Result<()> {
        if self.config.group_id.is_empty() {
            return Err(Error::NoGroup);
        }
        for topic in &topics {
            self.log.partition_count(topic)?;
        }
        if self.subscription != topics {
            // The next heartbeat joins again with the new subscription.
            self.member_epoch = 0;
        }
        self.subscription = topics;
        Ok(())
    }

    /// Acknowledges `record` (from this consumer's last poll) as `kind`; sent by the next poll,
    /// commit or close. RENEW is sent at once: the record's lock starts again and the record
    /// stays this consumer's, to be acknowledged as something else later.
    pub fn acknowledge(&mut self, record: &ShareRecord, kind: AcknowledgeType) -> Result<()> {
        let r = &record.record;
        if kind == AcknowledgeType::Renew {
            self.delivered_slot(record)?;
            let batch = [(r.offset, r.offset, vec![kind])];
            return self
                .log
                .share_acknowledge(
                    &self.config.group_id,
                    &self.member_id,
                    &r.topic,
                    r.partition,
                    &batch,
                    &BTreeMap::new(),
                )
                .map(drop);
        }
        *self.delivered_slot(record)? = Some(kind);
        Ok(())
    }

    /// `record`'s acknowledgement to send, while it is delivered and not yet acknowledged.
    fn delivered_slot(&mut self, record: &ShareRecord) -> Result<&mut Option<AcknowledgeType>> {
        let r = &record.record;
        self.delivered
            .get_mut(&(r.topic.to_string(), r.partition))
            .and_then(|d| d.get_mut(&r.offset))
            .ok_or_else(|| {
                Error::InvalidRecordState(format!(
                    "{}-{} offset {} was not delivered to this consumer, or is acknowledged",
                    r.topic, r.partition, r.offset
                ))
            })
    }

    /// Rejects `record` as [`ShareConsumer::acknowledge`] with REJECT does, saying why: its
    /// dead letter (with a dead-letter topic set on the group) carries `reason`'s class and
    /// message in `logd.dlq.error.*` and `logd.dlq.reason` `max-attempts` or `permanent`.
    pub fn reject_with(&mut self, record: &ShareRecord, reason: RejectReason) -> Result<()> {
        self.acknowledge(record, AcknowledgeType::Reject)?;
        let r = &record.record;
        self.reasons
            .entry((r.topic.to_string(), r.partition))
            .or_default()
            .insert(r.offset, reason);
        Ok(())
    }

    /// Sends the acknowledgements made so far (in implicit mode, accepts every record
    /// delivered), durably.
    pub fn commit(&mut self) -> Result<()> {
        self.send_acknowledgements(false)
    }

    /// Records acquired for this member, waiting up to `timeout` for some. First sends the
    /// acknowledgements of the previous poll's records (explicit mode: those left out are
    /// released).
    pub fn poll(&mut self, timeout: Duration) -> Result<Vec<ShareRecord>> {
        self.send_acknowledgements(true)?;
        let deadline = Instant::now() + timeout;
        loop {
            self.heartbeat()?;
            let seen = self.log.append_count();
            let records = self.fetch()?;
            let now = Instant::now();
            if !records.is_empty() || now >= deadline {
                return Ok(records);
            }
            // Wake on an append; also come back for records whose locks expire.
            self.log
                .wait_for_append(seen, (deadline - now).min(Duration::from_millis(100)));
        }
    }

    /// Sends the acknowledgements, then leaves the group, giving back what it still holds.
    pub fn close(mut self) -> Result<()> {
        self.send_acknowledgements(false)?;
        self.log
            .share_heartbeat(&self.config.group_id, &self.member_id, -1, None, CLIENT)
            .map(drop)
    }

    /// Joins the group (as a wire member's ShareGroupHeartbeat does), or heartbeats once the
    /// group's `share.heartbeat.interval.ms` passed, so the group lists this member and
    /// expires it when it stops polling for `share.session.timeout.ms`; a member the group
    /// expired joins again (its records went back when it expired).
    fn heartbeat(&mut self) -> Result<()> {
        let group = &self.config.group_id;
        let now = self.log.clock().now_ms();
        let interval = self.log.share_heartbeat_interval_ms(group);
        if self.member_epoch > 0 && now - self.last_heartbeat_ms < interval {
            return Ok(());
        }
        let subscribed = (self.member_epoch == 0).then(|| self.subscription.clone());
        let answer = self.log.share_heartbeat(
            group,
            &self.member_id,
            self.member_epoch,
            subscribed,
            CLIENT,
        );
        let answer = match answer {
            Err(Error::Group(crate::groups::classic::GroupError::UnknownMember))
            | Err(Error::FencedMemberEpoch { .. }) => {
                self.member_epoch = 0;
                let subscribed = Some(self.subscription.clone());
                self.log
                    .share_heartbeat(group, &self.member_id, 0, subscribed, CLIENT)?
            }
            other => other?,
        };
        self.member_epoch = answer.member_epoch;
        self.last_heartbeat_ms = now;
        Ok(())
    }

    fn send_acknowledgements(&mut self, polling: bool) -> Result<()> {
        let implicit = self.config.acknowledgement_mode == AcknowledgementMode::Implicit;
        for ((topic, partition), records) in std::mem::take(&mut self.delivered) {
            let mut batches: Vec<(i64, i64, Vec<AcknowledgeType>)> = Vec::new();
            let mut kept = BTreeMap::new();
            for (offset, kind) in records {
                let kind = match kind {
                    Some(kind) => kind,
                    None if implicit => AcknowledgeType::Accept,
                    // Explicit mode: what a poll finds unacknowledged goes back.
                    None if polling => AcknowledgeType::Release,
                    None => {
                        kept.insert(offset, None);
                        continue;
                    }
                };
                match batches.last_mut() {
                    Some((_, last, types)) if *last + 1 == offset => {
                        *last = offset;
                        types.push(kind);
                    }
                    _ => batches.push((offset, offset, vec![kind])),
                }
            }
            if !kept.is_empty() {
                self.delivered.insert((topic.clone(), partition), kept);
            }
            let reasons = self
                .reasons
                .remove(&(topic.clone(), partition))
                .unwrap_or_default();
            if !batches.is_empty() {
                self.log.share_acknowledge(
                    &self.config.group_id,
                    &self.member_id,
                    &topic,
                    partition,
                    &batches,
                    &reasons,
                )?;
            }
        }
        Ok(())
    }

    /// Acquires and reads records from the subscribed topics' partitions, starting at the next
    /// partition each time so none starves.
    fn fetch(&mut self) -> Result<Vec<ShareRecord>> {
        let mut partitions = Vec::new();
        for topic in &self.subscription {
            for partition in 0..self.log.partition_count(topic)? {
                partitions.push((topic.clone(), partition));
            }
        }
        let mut records = Vec::new();
        let count = partitions.len();
        for i in 0..count {
            let room = self.config.max_poll_records - records.len();
            if room == 0 {
                break;
            }
            let (topic, partition) = &partitions[(self.next_partition + i) % count];
            let (acquired, _) = self.log.share_acquire(
                &self.config.group_id,
                &self.member_id,
                topic,
                *partition,
                room,
            )?;
            for range in acquired {
                self.read(topic, *partition, &range, &mut records)?;
            }
        }
        if count > 0 {
            self.next_partition = (self.next_partition + 1) % count;
        }
        Ok(records)
    }

    /// Reads the records of `range`; an offset in it with no record (compacted away, a
    /// control batch) is acknowledged as a gap with the next acknowledgements.
    fn read(
        &mut self,
        topic: &str,
        partition: u32,
        range: &AcquiredRecords,
        records: &mut Vec<ShareRecord>,
    ) -> Result<()> {
        let log = self.log.partition(topic, partition)?;
        let topic_name: Arc<str> = topic.into();
        let delivered = self
            .delivered
            .entry((topic.to_owned(), partition))
            .or_default();
        let mut next = range.first_offset;
        while next <= range.last_offset {
            let bytes = match log.read(Offset(next), self.config.fetch_max_bytes) {
                Ok(bytes) => bytes,
                // Retention or DeleteRecords removed it since the acquisition: nothing to
                // hand out, and the share-partition's start moves past it on the next one.
                Err(logd_storage::Error::OffsetOutOfRange { .. })
                    if next < log.log_start_offset().0 =>
                {
                    next = log.log_start_offset().0.min(range.last_offset + 1);
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let mut found = false;
            Record::decode_each(&bytes, log.config().max_decompressed_bytes, |record| {
                if record.offset < next {
                    return true;
                }
                if record.offset > range.last_offset {
                    return false;
                }
                for gap in next..record.offset {
                    delivered.insert(gap, Some(AcknowledgeType::Gap));
                }
                found = true;
                next = record.offset + 1;
                delivered.insert(record.offset, None);
                records.push(ShareRecord {
                    record: ConsumerRecord::new(topic_name.clone(), partition, record),
                    delivery_count: range.delivery_count,
                });
                true
            })?;
            if !found {
                // Nothing more in the range: the rest holds no records.
                let after = logd_storage::batch::offset_after(&bytes)
                    .unwrap_or(range.last_offset + 1)
                    .max(next + 1)
                    .min(range.last_offset + 1);
                for gap in next..after {
                    delivered.insert(gap, Some(AcknowledgeType::Gap));
                }
                next = after;
            }
        }
        Ok(())
    }
}
