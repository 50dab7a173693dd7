//! [`Consumer`]: reads assigned partitions from its positions, in a group or on its own.
//!
//! `assign` takes partitions explicitly; `subscribe` joins the consumer's group and takes what
//! the group assigns it (the member that leads a generation computes the assignment, as a Kafka
//! client does). `poll` blocks until records arrive or the timeout passes, woken by appends.
//! Positions start from the group's committed offset, or per `auto_offset_reset`.
//!
//! Delivery: at-least-once (the default) leaves commits to the caller, after the work is done;
//! at-most-once commits the new positions before `poll` returns the records.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use logd_offsets::OffsetCommit;
use logd_storage::batch::Record;
use logd_storage::{Offset, PartitionLog};

use crate::engine::Log;
use crate::error::{Error, Result};
use crate::groups::classic::{
    Assignor, GroupError, JoinRequest, JoinStatus, decode_assignment, decode_subscription,
    encode_assignment, encode_subscription,
};
pub use crate::isolation::IsolationLevel;

/// The host embedded members are shown with.
const EMBEDDED_HOST: &str = "embedded";

/// A partition of a topic.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TopicPartition {
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: u32,
}

impl TopicPartition {
    /// `topic`-`partition`.
    pub fn new(topic: impl Into<String>, partition: u32) -> TopicPartition {
        TopicPartition {
            topic: topic.into(),
            partition,
        }
    }
}

/// Where to start when there is no usable committed offset, and where a position outside the
/// partition's offsets goes: one below its start (retention deleted it) or past its end (a
/// `seek` too far) is reset by this policy at the next `poll`, as Kafka's consumers do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AutoOffsetReset {
    /// The first offset still stored.
    Earliest,
    /// The end: only records appended from now on (Kafka's default).
    #[default]
    Latest,
    /// Fail with [`Error::NoOffset`].
    Error,
}

/// When offsets are committed relative to processing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DeliverySemantics {
    /// The caller commits after processing: a crash before the commit redelivers.
    #[default]
    AtLeastOnce,
    /// `poll` commits before returning records: a crash while processing loses them.
    AtMostOnce,
}

/// How a consumer behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerConfig {
    /// Group for commits and for `subscribe`.
    pub group_id: Option<String>,
    /// Client id (part of the member id).
    pub client_id: String,
    /// Where to start without a committed offset, or when it fell out of retention.
    pub auto_offset_reset: AutoOffsetReset,
    /// Commit timing.
    pub delivery: DeliverySemantics,
    /// Most records one `poll` returns.
    pub max_poll_records: usize,
    /// Bytes read from one partition per fetch.
    pub fetch_max_bytes: usize,
    /// The group drops a member it has not heard from for this long.
    pub session_timeout: Duration,
    /// How long a rebalance waits for members to rejoin.
    pub rebalance_timeout: Duration,
    /// Assignment strategy this consumer offers when it leads.
    pub assignor: Assignor,
    /// Read every record, or only committed transactions' (Kafka's `isolation.level`).
    pub isolation: IsolationLevel,
}

impl Default for ConsumerConfig {
    fn default() -> ConsumerConfig {
        ConsumerConfig {
            group_id: None,
            client_id: "logd-consumer".into(),
            auto_offset_reset: AutoOffsetReset::Latest,
            delivery: DeliverySemantics::AtLeastOnce,
            max_poll_records: 500,
            fetch_max_bytes: 1 << 20,
            session_timeout: Duration::from_secs(45),
            rebalance_timeout: Duration::from_secs(60),
            assignor: Assignor::Range,
            isolation: IsolationLevel::ReadUncommitted,
        }
    }
}

/// A record as a consumer receives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerRecord {
    /// Topic (shared between the records of one fetch).
    pub topic: Arc<str>,
    /// Partition.
    pub partition: u32,
    /// Offset.
    pub offset: i64,
    /// Timestamp (ms).
    pub timestamp: i64,
    /// Key.
    pub key: Option<Bytes>,
    /// Value.
    pub value: Option<Bytes>,
    /// Headers in order.
    pub headers: Vec<(Bytes, Option<Bytes>)>,
}

impl ConsumerRecord {
    /// Record `record` of `topic`-`partition` as consumers get it.
    pub(crate) fn new(topic: Arc<str>, partition: u32, record: Record) -> ConsumerRecord {
        ConsumerRecord {
            topic,
            partition,
            offset: record.offset,
            timestamp: record.timestamp,
            key: record.key,
            value: record.value,
            headers: record
                .headers
                .into_iter()
                .map(|h| (h.key, h.value))
                .collect(),
        }
    }
}

#[derive(Debug, Clone)]
struct Membership {
    member_id: String,
    generation: i32,
}

/// Reads records. Not shared between threads: one consumer per thread, as in Kafka.
#[derive(Debug)]
pub struct Consumer {
    log: Log,
    config: ConsumerConfig,
    subscription: Vec<String>,
    membership: Option<Membership>,
    rejoin: bool,
    assignment: Vec<TopicPartition>,
    positions: BTreeMap<TopicPartition, i64>,
    next_partition: usize,
    /// Assigned partitions `poll` skips until resumed.
    paused: BTreeSet<TopicPartition>,
    listener: Option<Box<dyn RebalanceListener>>,
}

/// Told when a subscribed consumer's partitions change (Kafka's `ConsumerRebalanceListener`).
/// Both calls happen inside [`Consumer::poll`], so the records of earlier polls are processed
/// by then.
pub trait RebalanceListener: Send {
    /// Before the consumer rejoins its rebalancing group (and before it leaves on `close`):
    /// `revoked` are the partitions it held. Commit here what was processed
    /// (`consumer.commit()`), and the next owner starts right after it: no record is
    /// processed twice across the rebalance.
    fn on_revoked(&mut self, consumer: &mut Consumer, revoked: &[TopicPartition]) {
        let _ = (consumer, revoked);
    }

    /// After the group assigned `assigned` to this consumer.
    fn on_assigned(&mut self, consumer: &mut Consumer, assigned: &[TopicPartition]) {
        let _ = (consumer, assigned);
    }
}

impl std::fmt::Debug for dyn RebalanceListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RebalanceListener")
    }
}

impl Consumer {
    /// A consumer of `log`.
    pub fn new(log: &Log, config: ConsumerConfig) -> Consumer {
        Consumer {
            log: log.clone(),
            config,
            subscription: Vec::new(),
            membership: None,
            rejoin: false,
            assignment: Vec::new(),
            positions: BTreeMap::new(),
            next_partition: 0,
            paused: BTreeSet::new(),
            listener: None,
        }
    }

    /// Calls `listener` around this consumer's rebalances (for `subscribe`d consumers).
    pub fn set_rebalance_listener(&mut self, listener: impl RebalanceListener + 'static) {
        self.listener = Some(Box::new(listener));
    }

    /// Stops `poll` from reading these assigned partitions (heartbeats go on, so the consumer
    /// keeps them), as Kafka's `pause`; a rebalance forgets pauses of partitions it moves.
    pub fn pause(&mut self, partitions: &[TopicPartition]) -> Result<()> {
        for tp in partitions {
            self.check_assigned(tp)?;
            self.paused.insert(tp.clone());
        }
        Ok(())
    }

    /// Lets `poll` read these partitions again.
    pub fn resume(&mut self, partitions: &[TopicPartition]) {
        for tp in partitions {
            self.paused.remove(tp);
        }
    }

    /// The paused partitions.
    pub fn paused(&self) -> Vec<TopicPartition> {
        self.paused.iter().cloned().collect()
    }

    /// True when this consumer has read `tp` to its high watermark (its last stable offset
    /// under read_committed): the end-of-partition signal (Kafka's `enable.partition.eof`).
    /// It turns false again when records arrive.
    pub fn at_end(&mut self, tp: &TopicPartition) -> Result<bool> {
        let log = self.log.partition(&tp.topic, tp.partition)?;
        let end = self.config.isolation.end(&log);
        Ok(self.position(tp)? >= end)
    }

    fn check_assigned(&self, tp: &TopicPartition) -> Result<()> {
        if self.assignment.contains(tp) {
            Ok(())
        } else {
            Err(Error::NotAssigned {
                topic: tp.topic.clone(),
                partition: tp.partition,
            })
        }
    }

    /// Reads exactly these partitions, without group membership.
    pub fn assign(&mut self, partitions: Vec<TopicPartition>) -> Result<()> {
        for tp in &partitions {
            self.log.partition(&tp.topic, tp.partition)?;
        }
        self.leave_group();
        self.subscription.clear();
        self.positions.retain(|tp, _| partitions.contains(tp));
        self.paused.retain(|tp| partitions.contains(tp));
        self.assignment = partitions;
        Ok(())
    }

    /// Joins the group and reads the partitions of `topics` it assigns to this consumer.
    pub fn subscribe(&mut self, topics: Vec<String>) -> Result<()> {
        if self.config.group_id.is_none() {
            return Err(Error::NoGroup);
        }
        self.subscription = topics;
        self.assignment.clear();
        self.positions.clear();
        self.rejoin = true;
        Ok(())
    }

    /// The partitions this consumer reads now.
    pub fn assignment(&self) -> &[TopicPartition] {
        &self.assignment
    }

    /// The member id and generation, when the consumer is in a group.
    pub fn membership(&self) -> Option<(&str, i32)> {
        self.membership
            .as_ref()
            .map(|m| (m.member_id.as_str(), m.generation))
    }

    /// Records from the assigned partitions, waiting up to `timeout` for some to arrive.
    pub fn poll(&mut self, timeout: Duration) -> Result<Vec<ConsumerRecord>> {
        let deadline = Instant::now() + timeout;
        loop {
            self.maintain_group()?;
            let seen = self.log.append_count();
            let records = self.fetch()?;
            if !records.is_empty() {
                if self.config.delivery == DeliverySemantics::AtMostOnce {
                    self.commit()?;
                }
                return Ok(records);
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(records);
            }
            // Wake on an append; also come back in time to heartbeat.
            let heartbeat = self.config.session_timeout / 3;
            self.log
                .wait_for_append(seen, (deadline - now).min(heartbeat));
        }
    }

    fn fetch(&mut self) -> Result<Vec<ConsumerRecord>> {
        let mut records = Vec::new();
        let count = self.assignment.len();
        for i in 0..count {
            if records.len() >= self.config.max_poll_records {
                break;
            }
            let tp = self.assignment[(self.next_partition + i) % count].clone();
            if self.paused.contains(&tp) {
                continue;
            }
            let log = self.log.partition(&tp.topic, tp.partition)?;
            let mut position = self.position(&tp)?;
            if position < log.log_start_offset().0 || position > log.high_watermark().0 {
                // The position fell out of retention (or beyond the end): reset it.
                position = self.reset_position(&tp, &log)?;
            }
            let end = self.config.isolation.end(&log);
            if position >= end {
                continue;
            }
            let bytes = log.read(Offset(position), self.config.fetch_max_bytes)?;
            let topic: Arc<str> = tp.topic.as_str().into();
            let limit = self.config.max_poll_records;
            // Past the batches looked at too: a cleaning may have emptied some, and markers and
            // aborted transactions hold offsets without records for this reader.
            let after = self
                .config
                .isolation
                .records(&log, &bytes, position, end, |record| {
                    if records.len() >= limit {
                        return false;
                    }
                    records.push(ConsumerRecord::new(topic.clone(), tp.partition, record));
                    true
                })?;
            position = position.max(after);
            self.positions.insert(tp, position);
        }
        if count > 0 {
            // Start the next poll at the next partition, so no partition starves.
            self.next_partition = (self.next_partition + 1) % count;
        }
        Ok(records)
    }

    /// The next offset this consumer reads from `tp`.
    pub fn position(&mut self, tp: &TopicPartition) -> Result<i64> {
        if let Some(position) = self.positions.get(tp) {
            return Ok(*position);
        }
        if !self.assignment.contains(tp) {
            return Err(Error::NotAssigned {
                topic: tp.topic.clone(),
                partition: tp.partition,
            });
        }
        let log = self.log.partition(&tp.topic, tp.partition)?;
        // Without a group there is nothing committed: auto_offset_reset decides.
        let committed = match self.config.group_id {
            Some(_) => self.committed(tp)?,
            None => None,
        };
        let position = match committed {
            Some(offset)
                if offset >= log.log_start_offset().0 && offset <= log.high_watermark().0 =>
            {
                offset
            }
            _ => self.reset_position(tp, &log)?,
        };
        self.positions.insert(tp.clone(), position);
        Ok(position)
    }

    fn reset_position(&mut self, tp: &TopicPartition, log: &PartitionLog) -> Result<i64> {
        let position = match self.config.auto_offset_reset {
            AutoOffsetReset::Earliest => log.log_start_offset().0,
            AutoOffsetReset::Latest => self.config.isolation.end(log),
            AutoOffsetReset::Error => {
                return Err(Error::NoOffset {
                    topic: tp.topic.clone(),
                    partition: tp.partition,
                });
            }
        };
        self.positions.insert(tp.clone(), position);
        Ok(position)
    }

    /// The group's committed offset for `tp`.
    pub fn committed(&self, tp: &TopicPartition) -> Result<Option<i64>> {
        let group = self.config.group_id.as_deref().ok_or(Error::NoGroup)?;
        Ok(self
            .log
            .offsets()
            .fetch(group, &tp.topic, tp.partition as i32)
            .map(|c| c.offset))
    }

    /// Commits every position (the next offset to read of each assigned partition).
    pub fn commit(&mut self) -> Result<()> {
        let offsets: Vec<(TopicPartition, i64)> = self
            .positions
            .iter()
            .map(|(tp, o)| (tp.clone(), *o))
            .collect();
        self.commit_offsets(&offsets)
    }

    /// Commits explicit offsets (each the next offset to read). Refused with a group error if
    /// this consumer's generation is stale.
    pub fn commit_offsets(&mut self, offsets: &[(TopicPartition, i64)]) -> Result<()> {
        let group = self.config.group_id.clone().ok_or(Error::NoGroup)?;
        let now = self.log.clock().now_ms();
        let (member, generation) = match &self.membership {
            Some(m) => (m.member_id.as_str(), m.generation),
            None => ("", -1),
        };
        self.log
            .coordinator()
            .validate_commit(&group, member, generation, now)?;
        let commits: Vec<OffsetCommit> = offsets
            .iter()
            .map(|(tp, offset)| OffsetCommit {
                topic: tp.topic.clone(),
                partition: tp.partition as i32,
                offset: *offset,
                metadata: String::new(),
            })
            .collect();
        self.log.offsets().commit(&group, &commits, now)?;
        Ok(())
    }

    /// Reads `tp` from `offset` next. An offset past the partition's end (or below its start)
    /// is out of range: the next `poll` resets it by [`AutoOffsetReset`] (so `Earliest`
    /// re-reads from the start), as Kafka's consumers do. To wait for new records, use
    /// [`Consumer::seek_to_end`].
    pub fn seek(&mut self, tp: &TopicPartition, offset: i64) -> Result<()> {
        self.check_assigned(tp)?;
        self.positions.insert(tp.clone(), offset);
        Ok(())
    }

    /// Reads `tp` from the first record with a timestamp of at least `timestamp` (the end if
    /// there is none).
    pub fn seek_to_timestamp(&mut self, tp: &TopicPartition, timestamp: i64) -> Result<()> {
        let log = self.log.partition(&tp.topic, tp.partition)?;
        let offset = log
            .offset_for_timestamp(timestamp)?
            .map_or(self.config.isolation.end(&log), |o| o.0);
        self.seek(tp, offset)
    }

    /// Reads `tp` from its first stored record.
    pub fn seek_to_beginning(&mut self, tp: &TopicPartition) -> Result<()> {
        let start = self
            .log
            .partition(&tp.topic, tp.partition)?
            .log_start_offset()
            .0;
        self.seek(tp, start)
    }

    /// Reads `tp` from its end (its last stable offset under read_committed): only new
    /// records.
    pub fn seek_to_end(&mut self, tp: &TopicPartition) -> Result<()> {
        let log = self.log.partition(&tp.topic, tp.partition)?;
        let end = self.config.isolation.end(&log);
        self.seek(tp, end)
    }

    /// Keeps a subscribed consumer's group membership alive without reading anything: a
    /// heartbeat, or after a rebalance a rejoin (telling the listener), so that
    /// [`Consumer::assignment`] is current. For a member that reads its partitions itself,
    /// such as the retry worker; `poll` does the same before it reads.
    pub fn maintain(&mut self) -> Result<()> {
        self.maintain_group()
    }

    /// Heartbeats, and rejoins the group when it rebalances.
    fn maintain_group(&mut self) -> Result<()> {
        if self.subscription.is_empty() {
            return Ok(());
        }
        let group = self.config.group_id.clone().ok_or(Error::NoGroup)?;
        let coordinator = self.log.coordinator();
        if let (Some(m), false) = (&self.membership, self.rejoin) {
            match coordinator.heartbeat(
                &group,
                &m.member_id,
                m.generation,
                self.log.clock().now_ms(),
            ) {
                Ok(()) => return Ok(()),
                Err(GroupError::RebalanceInProgress | GroupError::IllegalGeneration) => {}
                Err(GroupError::UnknownMember) => self.membership = None,
                Err(e) => return Err(e.into()),
            }
        }
        self.notify_revoked();
        self.join(&group)?;
        if let Some(mut listener) = self.listener.take() {
            let assigned = self.assignment.clone();
            listener.on_assigned(self, &assigned);
            self.listener = Some(listener);
        }
        Ok(())
    }

    /// Tells the listener the held partitions go, while the membership can still commit.
    fn notify_revoked(&mut self) {
        if self.assignment.is_empty() {
            return;
        }
        if let Some(mut listener) = self.listener.take() {
            let revoked = self.assignment.clone();
            listener.on_revoked(self, &revoked);
            self.listener = Some(listener);
        }
    }

    fn join(&mut self, group: &str) -> Result<()> {
        if self.config.isolation == IsolationLevel::ReadCommitted {
            self.log
                .note_read_committed(&self.config.client_id, EMBEDDED_HOST);
        }
        let coordinator = self.log.coordinator();
        let clock = self.log.clock();
        // The group ends a join phase at the rebalance deadline; wait past it, not up to it.
        let wait = self.config.rebalance_timeout * 2 + Duration::from_secs(1);
        loop {
            let request = JoinRequest {
                member_id: self.membership.as_ref().map(|m| m.member_id.clone()),
                group_instance_id: None,
                client_id: self.config.client_id.clone(),
                protocol_type: "consumer".into(),
                protocols: vec![(
                    self.config.assignor.name().into(),
                    encode_subscription(&self.subscription),
                )],
                session_timeout_ms: self.config.session_timeout.as_millis() as i64,
                rebalance_timeout_ms: self.config.rebalance_timeout.as_millis() as i64,
                client_host: EMBEDDED_HOST.into(),
                require_known_member_id: false,
            };
            let joined = match self.log.join_classic_and_wait(group, request, wait) {
                Ok(JoinStatus::Joined(joined)) => joined,
                // Embedded members do not ask for KIP-394's second join; nothing else waits.
                Ok(
                    JoinStatus::MemberIdRequired { member_id } | JoinStatus::Waiting { member_id },
                ) => {
                    self.membership = Some(Membership {
                        member_id,
                        generation: -1,
                    });
                    continue;
                }
                Err(GroupError::UnknownMember) => {
                    self.membership = None;
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let assignments = (joined.leader == joined.member_id)
                .then(|| self.compute_assignment(&joined.protocol, &joined.members));
            let bytes = match coordinator.sync_and_wait(
                group,
                &joined.member_id,
                joined.generation,
                assignments,
                clock,
                wait,
            ) {
                Ok(bytes) => bytes,
                // Someone joined or left between our join and sync: join again.
                Err(GroupError::RebalanceInProgress | GroupError::IllegalGeneration) => {
                    self.membership = Some(Membership {
                        member_id: joined.member_id,
                        generation: joined.generation,
                    });
                    continue;
                }
                Err(GroupError::UnknownMember) => {
                    self.membership = None;
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            // An assignment that does not parse (a foreign leader's bug) assigns nothing.
            let assignment: Vec<TopicPartition> = decode_assignment(&bytes)
                .unwrap_or_default()
                .into_iter()
                .map(|(t, p)| TopicPartition::new(t, p))
                .collect();
            // Positions of partitions kept stay; new ones start from the group's commit.
            self.positions.retain(|tp, _| assignment.contains(tp));
            self.paused.retain(|tp| assignment.contains(tp));
            self.assignment = assignment;
            self.membership = Some(Membership {
                member_id: joined.member_id,
                generation: joined.generation,
            });
            self.rejoin = false;
            return Ok(());
        }
    }

    /// As the group's leader: assign the members' subscribed topics' partitions.
    fn compute_assignment(
        &self,
        protocol: &str,
        members: &[(String, Option<String>, Bytes)],
    ) -> Vec<(String, Bytes)> {
        let assignor = Assignor::from_name(protocol).unwrap_or(self.config.assignor);
        let subscriptions: BTreeMap<String, Vec<String>> = members
            .iter()
            .map(|(id, _, metadata)| {
                (
                    id.clone(),
                    decode_subscription(metadata).unwrap_or_default(),
                )
            })
            .collect();
        let topics: BTreeSet<&String> = subscriptions.values().flatten().collect();
        let counts: BTreeMap<String, u32> = topics
            .into_iter()
            .filter_map(|t| Some((t.clone(), self.log.partition_count(t).ok()?)))
            .collect();
        assignor
            .assign(&subscriptions, &counts)
            .into_iter()
            .map(|(member, partitions)| (member, encode_assignment(&partitions)))
            .collect()
    }

    fn leave_group(&mut self) {
        if let (Some(m), Some(group)) = (self.membership.take(), &self.config.group_id) {
            // Leaving an already-expired membership has nothing to undo.
            let _ = self
                .log
                .coordinator()
                .leave(group, &m.member_id, self.log.clock().now_ms());
        }
        self.assignment.clear();
    }

    /// Leaves the group (its partitions go to the other members at once). Dropping the
    /// consumer does the same.
    pub fn close(mut self) {
        self.notify_revoked();
        self.leave_group();
    }
}

impl Drop for Consumer {
    /// Leaves the group, so a consumer dropped by an early return or a panicking thread hands
    /// its partitions over at the next rebalance instead of after its session timeout. As
    /// `close`, it tells the rebalance listener first, except while the thread panics (no
    /// user code runs then; what was processed but not committed is processed again).
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.notify_revoked();
        }
        self.leave_group();
    }
}
