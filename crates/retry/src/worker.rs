//! [`RetryWorker`]: consumes a source topic and its retry tiers for one group, calls a
//! handler, and routes failures: a transient failure goes to the retry tier that fits its
//! backoff delay, a permanent one (poison) or one past the attempt limit to the dead-letter
//! topic. A record's offset is committed only after it was handled or its retry/dead-letter
//! copy was durably appended, so a crash redelivers and never loses.
//!
//! Topics (names configurable): `<source>.retry.<delay>` per tier (`orders.retry.1s`,
//! `orders.retry.10s`, ...) and `<source>.dlq`, each with the source's partition count; a record
//! keeps its partition number across hops. A tier is read in order and a record is not handled
//! before its `logd.retry.due.ts`, so a waiting record holds back only later records of its own
//! tier partition (by at most the tier's delay, as a record goes to the smallest tier at least
//! its delay), never fresh records of the source.
//!
//! Ordering: by default a retried record is handled after later records of its key (Kafka's
//! usual retry-topic trade-off). [`Ordering::PerKey`] instead parks every later record of a key
//! in the first tier while an earlier record of that key waits in retry, and handles them in
//! their original order once it is resolved.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use logd_storage::batch::BatchHeader;
use logd_storage::{RealFs, SplitMix64, Storage};

use crate::appender::IdempotentAppender;
use crate::dedupe::DedupeStore;
use crate::error::{Error, Result};
use crate::journal::{Hop, HopJournal};
use crate::message::*;
use crate::outcome::{Failure, Outcome, Poll, Stats};
use crate::retry_config::{CommitOrder, Ordering, RetryConfig};
use crate::transport::{Ownership, Transport};
use logd_storage::Headers;
use logd_storage::dead_letter_headers::{REASON_MAX_ATTEMPTS, REASON_PERMANENT};

/// Within one poll, how long the worker goes before it asks again what it owns: well inside
/// a group session (45 s by default), and not a look per partition.
const LOOK_AGAIN_AFTER: Duration = Duration::from_secs(1);

/// Where a record came from and how it fared so far.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Origin {
    topic: String,
    partition: u32,
    offset: i64,
    attempts: u32,
    first_failure: Option<i64>,
}

impl Origin {
    fn of(message: &Message) -> Origin {
        Origin {
            topic: message
                .header_str(RETRY_ORIGINAL_TOPIC)
                .map_or_else(|| message.topic.clone(), str::to_owned),
            partition: message
                .header_i64(RETRY_ORIGINAL_PARTITION)
                .map_or(message.partition, |p| p as u32),
            offset: message
                .header_i64(RETRY_ORIGINAL_OFFSET)
                .unwrap_or(message.offset),
            attempts: message.header_i64(ATTEMPT).unwrap_or(0) as u32,
            first_failure: message.header_i64(RETRY_FIRST_FAILURE_TS),
        }
    }

    fn place(&self) -> (u32, i64) {
        (self.partition, self.offset)
    }
}

/// Consumes a source topic and its retry tiers, handing each due record to a handler.
#[derive(Debug)]
pub struct RetryWorker<T: Transport> {
    transport: T,
    config: RetryConfig,
    dedupe: Option<DedupeStore>,
    rng: SplitMix64,
    partitions: u32,
    /// The partitions this worker owns in its group's current generation; `None` before the
    /// first look and after a refused commit, so the next poll asks again.
    owned: Option<Ownership>,
    /// The generation in which the group refused this worker's commit, and when: until the
    /// transport reports another generation (or [`LOOK_AGAIN_AFTER`] passed without one: the
    /// group kept this worker's partitions), the worker owns nothing. A membership that
    /// rejoins in the background (librdkafka's) still reports the old assignment for a while,
    /// and reading it again would hand the refused record to the handler, and append its
    /// copy, once a look.
    refused_in: Option<(i32, Instant)>,
    /// When the worker last asked what it owns (also its group heartbeat).
    looked_at: Instant,
    /// Next offset to read per (topic, partition), for the owned partitions.
    positions: BTreeMap<(String, u32), i64>,
    /// The commit the records handled without a copy owe, made once per fetch (or by the
    /// next hop's commit, which covers it): a crash before it redelivers them, never loses
    /// them, and a fetch of many records costs one commit, not one each.
    owed: Option<(String, u32, i64)>,
    /// [`Ordering::PerKey`]: per key, the origins of its records waiting in retry.
    pending: HashMap<Bytes, BTreeSet<(u32, i64)>>,
    stats: Stats,
    /// Every copy is appended as one idempotent producer.
    appender: IdempotentAppender,
    /// With [`RetryConfig::state_dir`]: the hop in flight, durable before its append.
    journal: Option<HopJournal>,
    /// The hop the last run left in flight, until this worker owns its source partition.
    unsettled: Option<Hop>,
    /// A record whose copy (retry or dead letter) was appended but whose commit the group
    /// refused: (topic, partition, offset). Committed at the next look if that look already
    /// reports a new generation in which this worker owns the partition and nobody committed
    /// past it (the embedded membership rejoins at once); otherwise dropped there, and the
    /// record is handled again by whoever owns it next.
    copied_uncommitted: Option<(String, u32, i64)>,
    /// With a transactional id: the generation in which this worker (re)started the
    /// producers of the partitions it owns, fencing their previous owners.
    producers_in: Option<i32>,
}

impl<T: Transport> RetryWorker<T> {
    /// A worker over `transport`; creates the retry and dead-letter topics if missing, joins
    /// its group (where the transport has membership) and starts each partition it owns from
    /// the group's commits.
    pub fn new(
        transport: T,
        config: RetryConfig,
        dedupe: Option<DedupeStore>,
    ) -> Result<RetryWorker<T>> {
        RetryWorker::with_state_storage(transport, config, dedupe, Arc::new(RealFs))
    }

    /// [`RetryWorker::new`] with its hop journal ([`RetryConfig::state_dir`]) on `storage`.
    pub fn with_state_storage(
        mut transport: T,
        config: RetryConfig,
        dedupe: Option<DedupeStore>,
        storage: Arc<dyn Storage>,
    ) -> Result<RetryWorker<T>> {
        if config.tiers.is_empty() || !config.tiers.is_sorted() {
            return Err(Error::Config(
                "tiers must be non-empty and ascending".into(),
            ));
        }
        if config.policy.max_attempts == 0 {
            return Err(Error::Config("max_attempts must be at least 1".into()));
        }
        if config.transactional_id.is_some()
            && (config.state_dir.is_some() || config.commit_order != CommitOrder::AfterAppend)
        {
            return Err(Error::Config(
                "a transactional id makes each hop one transaction: it takes no hop journal \
                 (state_dir) and no commit order"
                    .into(),
            ));
        }
        let partitions = transport.partition_count(&config.source)?;
        for tier in &config.tiers {
            transport.ensure_topic(&config.tier_topic(*tier), partitions, None)?;
        }
        let retention = config.dlq_retention.map(|d| d.as_millis() as i64);
        transport.ensure_topic(&config.dlq_topic(), partitions, retention)?;
        let mut worker = RetryWorker {
            rng: SplitMix64::new(config.seed),
            transport,
            dedupe,
            partitions,
            owned: None,
            refused_in: None,
            looked_at: Instant::now(),
            positions: BTreeMap::new(),
            owed: None,
            pending: HashMap::new(),
            stats: Stats::default(),
            appender: IdempotentAppender::new(),
            journal: None,
            unsettled: None,
            copied_uncommitted: None,
            producers_in: None,
            config,
        };
        if let Some(dir) = worker.config.state_dir.clone() {
            let (journal, in_flight) = HopJournal::open(storage, &dir)?;
            worker.unsettled = in_flight;
            worker.journal = Some(journal);
        }
        worker.sync_ownership()?;
        Ok(worker)
    }

    /// Asks the transport what this worker owns (joining or rejoining the group as needed).
    /// In a new generation every owned partition starts again from the group's commits (one
    /// that went away and came back may have moved on meanwhile), with its waiting records
    /// read back under [`Ordering::PerKey`]; a partition that went keeps nothing here. What
    /// this worker did is committed already: a record's hop and commit end before it looks.
    fn sync_ownership(&mut self) -> Result<()> {
        self.looked_at = Instant::now();
        let topics = self.topics();
        let mut now =
            self.transport
                .owned_partitions(&self.config.group, &topics, self.partitions)?;
        match self.refused_in {
            Some((generation, at))
                if generation == now.generation && at.elapsed() < LOOK_AGAIN_AFTER =>
            {
                now.partitions.clear()
            }
            _ => self.refused_in = None,
        }
        if self.owned.as_ref() == Some(&now) {
            return Ok(());
        }
        self.positions.clear();
        self.pending.clear();
        // Before the commits are read: each partition's producer fences its previous owner,
        // whose open transaction is aborted (or its commit completed) first, so the commits
        // read are final.
        if let Some(id) = &self.config.transactional_id
            && self.producers_in != Some(now.generation)
        {
            for &partition in &now.partitions {
                self.transport
                    .init_transactions(&transactional_id(id, partition))?;
            }
            self.producers_in = Some(now.generation);
        }
        for &partition in &now.partitions {
            for topic in &topics {
                let committed = self
                    .transport
                    .committed(&self.config.group, topic, partition)?;
                self.positions
                    .insert((topic.clone(), partition), committed.unwrap_or(0));
            }
        }
        self.owned = Some(now);
        if let Some((topic, partition, offset)) = self.copied_uncommitted.take()
            && self.positions.get(&(topic.clone(), partition)) == Some(&offset)
        {
            self.commit_next(&topic, partition, offset + 1)?;
        }
        // The last run's hop in flight is settled by whoever owns its source partition: its
        // append is a duplicate if it landed, and only the owner may commit.
        if let Some(hop) = self.unsettled.take() {
            match self
                .positions
                .contains_key(&(hop.source_topic.clone(), hop.source_partition))
            {
                true => self.settle(hop)?,
                false => self.unsettled = Some(hop),
            }
        }
        if self.config.ordering == Ordering::PerKey {
            self.rebuild_pending()?;
        }
        Ok(())
    }

    /// Completes the hop the last run had in flight: unless its source record was committed,
    /// appends the same stamped batch again (a duplicate if the first append landed, so the
    /// copy exists once) and commits. Later copies go out in the next epoch of the same
    /// producer id, every sequence from 0.
    fn settle(&mut self, hop: Hop) -> Result<()> {
        let header = BatchHeader::parse(&hop.batch, 0).map_err(|e| Error::HopJournal {
            path: self.config.state_dir.clone().unwrap_or_default(),
            reason: format!("its batch does not parse: {e}"),
        })?;
        let source = (hop.source_topic.clone(), hop.source_partition);
        let committed = self.positions.get(&source).copied().unwrap_or(0);
        if committed <= hop.source_offset {
            self.transport
                .append(&hop.target_topic, hop.target_partition, hop.batch)?;
            self.commit_next(&source.0, source.1, hop.source_offset + 1)?;
        }
        self.appender = IdempotentAppender::resume_after(header.producer_id, header.producer_epoch);
        Ok(())
    }

    /// Counts so far.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// The partition numbers (of the source and of each retry tier) this worker reads in its
    /// group's current generation, as of its last look, ascending.
    pub fn owned(&self) -> Vec<u32> {
        self.owned
            .as_ref()
            .map(|o| o.partitions.iter().copied().collect())
            .unwrap_or_default()
    }

    /// The transport (for tests and tools).
    pub fn transport_mut(&mut self) -> &mut T {
        &mut self.transport
    }

    /// The retry tiers' topics, then the source.
    fn topics(&self) -> Vec<String> {
        let mut topics: Vec<String> = self
            .config
            .tiers
            .iter()
            .map(|t| self.config.tier_topic(*t))
            .collect();
        topics.push(self.config.source.clone());
        topics
    }

    /// Records waiting in the tiers name their keys' pending origins (after a restart).
    fn rebuild_pending(&mut self) -> Result<()> {
        let owned = self.owned();
        for tier in self.config.tiers.clone() {
            let topic = self.config.tier_topic(tier);
            for &partition in &owned {
                let Some(&start) = self.positions.get(&(topic.clone(), partition)) else {
                    continue;
                };
                let mut at = start;
                loop {
                    let messages = self.transport.fetch(&topic, partition, at)?;
                    let Some(last) = messages.last() else { break };
                    at = last.offset + 1;
                    for m in &messages {
                        if let Some(key) = &m.key {
                            let place = Origin::of(m).place();
                            self.pending.entry(key.clone()).or_default().insert(place);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Handles what is available and due: one fetch per partition, tiers first. Returns how
    /// much was done and when the next waiting record is due.
    pub fn poll_once(
        &mut self,
        handler: &mut impl FnMut(&Message, u32) -> Outcome,
    ) -> Result<Poll> {
        self.sync_ownership()?;
        let now = self.transport.now_ms();
        let mut poll = Poll {
            handled: 0,
            next_due: None,
        };
        for topic in self.topics() {
            let is_tier = topic != self.config.source;
            for partition in self.owned() {
                // A long poll looks again now and then (also its heartbeat): a partition given
                // to another member meanwhile is skipped.
                if self.looked_at.elapsed() >= LOOK_AGAIN_AFTER {
                    self.sync_ownership()?;
                }
                let Some(&at) = self.positions.get(&(topic.clone(), partition)) else {
                    continue;
                };
                for message in self.transport.fetch(&topic, partition, at)? {
                    if is_tier {
                        let due = message.header_i64(DUE_TS).unwrap_or(0);
                        if due > now {
                            poll.next_due = Some(poll.next_due.map_or(due, |d| d.min(due)));
                            break;
                        }
                    }
                    let handled = self.handle(&message, now, handler);
                    match &handled {
                        Ok(()) => poll.handled += 1,
                        Err(e) if !e.is_fenced() => {
                            // Keep what the fetch did before the failure. If this commit fails
                            // too, those records come again: at least once either way.
                            let _ = self.pay_owed_commit();
                        }
                        Err(_) => {}
                    }
                    if self.fenced(handled)? {
                        return Ok(poll);
                    }
                }
                let paid = self.pay_owed_commit();
                if self.fenced(paid)? {
                    return Ok(poll);
                }
            }
        }
        Ok(poll)
    }

    /// Whether `result` is the group's refusal (replaced in the group: the rest of the fetch
    /// is the new owner's; ask again what is ours at the next look); other errors pass.
    fn fenced(&mut self, result: Result<()>) -> Result<bool> {
        match result {
            Ok(()) => Ok(false),
            Err(e) if e.is_fenced() => {
                self.owed = None;
                self.stats.refused_commits += 1;
                let refused_at = Instant::now();
                self.refused_in = self.owned.take().map(|o| (o.generation, refused_at));
                Ok(true)
            }
            Err(e) => Err(e),
        }
    }

    /// Makes the commit the fetch's handled records owe.
    fn pay_owed_commit(&mut self) -> Result<()> {
        match self.owed.take() {
            Some((topic, partition, next)) => self.commit_next(&topic, partition, next),
            None => Ok(()),
        }
    }

    /// Polls until `done` says so, sleeping until the next due record or new data (at most
    /// `idle` at a time) when there is nothing to do.
    pub fn run(
        &mut self,
        handler: &mut impl FnMut(&Message, u32) -> Outcome,
        mut done: impl FnMut(&Stats) -> bool,
        idle: Duration,
    ) -> Result<()> {
        while !done(&self.stats) {
            let marker = self.transport.marker();
            let poll = self.poll_once(handler)?;
            if poll.handled == 0 {
                let now = self.transport.now_ms();
                let wait = poll.next_due.map_or(idle, |due| {
                    Duration::from_millis((due - now).max(1) as u64).min(idle)
                });
                self.transport.wait(marker, wait);
            }
        }
        Ok(())
    }

    fn dedupe_id(&self, message: &Message, origin: &Origin) -> String {
        self.config
            .id_header
            .as_deref()
            .and_then(|h| message.header_str(h))
            .map_or_else(
                || format!("{}/{}/{}", origin.topic, origin.partition, origin.offset),
                str::to_owned,
            )
    }

    fn handle(
        &mut self,
        message: &Message,
        now: i64,
        handler: &mut impl FnMut(&Message, u32) -> Outcome,
    ) -> Result<()> {
        let origin = Origin::of(message);
        let id = self.dedupe_id(message, &origin);
        if self.dedupe.as_ref().is_some_and(|d| d.contains(&id)) {
            self.stats.duplicates += 1;
            self.resolved(message, &origin);
            self.owe_commit(message);
            return Ok(());
        }
        if self.must_wait_for_its_key(message, &origin) {
            self.stats.parked += 1;
            let tier = self.config.tiers[0];
            let record = self
                .hop_record(message, &origin, origin.attempts, origin.first_failure)
                .with(DUE_TS, now + tier.as_millis() as i64);
            return self.hop(
                message,
                &self.config.tier_topic(tier),
                origin.partition,
                record,
            );
        }
        let attempt = origin.attempts + 1;
        let outcome = handler(message, attempt);
        // Backoff counts from when the handler gave up, not from when the poll began.
        let now = self.transport.now_ms();
        match outcome {
            Outcome::Success => {
                if let Some(dedupe) = &mut self.dedupe {
                    dedupe.record(&id, now)?;
                }
                self.stats.succeeded += 1;
                self.resolved(message, &origin);
                self.owe_commit(message);
                Ok(())
            }
            Outcome::Permanent(failure) => {
                self.dead_letter(message, &origin, attempt, now, &failure, REASON_PERMANENT)
            }
            Outcome::Transient(failure) if attempt >= self.config.policy.max_attempts => self
                .dead_letter(
                    message,
                    &origin,
                    attempt,
                    now,
                    &failure,
                    REASON_MAX_ATTEMPTS,
                ),
            Outcome::Transient(_) => {
                let delay = self.config.policy.delay(origin.attempts, &mut self.rng);
                let tier = self
                    .config
                    .tiers
                    .iter()
                    .copied()
                    .find(|t| *t >= delay)
                    .unwrap_or(*self.config.tiers.last().expect("tiers are not empty"));
                let first_failure = origin.first_failure.unwrap_or(now);
                let record = self
                    .hop_record(message, &origin, attempt, Some(first_failure))
                    .with(DUE_TS, now + delay.as_millis() as i64);
                self.stats.retried += 1;
                if let Some(key) = &message.key
                    && self.config.ordering == Ordering::PerKey
                {
                    self.pending
                        .entry(key.clone())
                        .or_default()
                        .insert(origin.place());
                }
                self.hop(
                    message,
                    &self.config.tier_topic(tier),
                    origin.partition,
                    record,
                )
            }
        }
    }

    /// [`Ordering::PerKey`]: whether an earlier record of this message's key waits in retry
    /// (then this one is parked and becomes pending too).
    fn must_wait_for_its_key(&mut self, message: &Message, origin: &Origin) -> bool {
        if self.config.ordering != Ordering::PerKey {
            return false;
        }
        let Some(key) = &message.key else {
            return false;
        };
        let waiting = self.pending.entry(key.clone()).or_default();
        let earlier = waiting.first().is_some_and(|first| *first < origin.place());
        if earlier {
            waiting.insert(origin.place());
        }
        earlier
    }

    /// The record is done with (handled, skipped or dead-lettered): its key's later records
    /// may go on.
    fn resolved(&mut self, message: &Message, origin: &Origin) {
        if let Some(key) = &message.key
            && let Some(waiting) = self.pending.get_mut(key)
        {
            waiting.remove(&origin.place());
            if waiting.is_empty() {
                self.pending.remove(key);
            }
        }
    }

    /// A copy of `message` for a retry tier, with its origin, attempt count and first failure
    /// (none for a parked record that never failed).
    fn hop_record(
        &self,
        message: &Message,
        origin: &Origin,
        attempts: u32,
        first_failure: Option<i64>,
    ) -> OutRecord {
        let record = OutRecord::copy_of(message)
            .with(ATTEMPT, attempts)
            .with(RETRY_ORIGINAL_TOPIC, &origin.topic)
            .with(RETRY_ORIGINAL_PARTITION, origin.partition)
            .with(RETRY_ORIGINAL_OFFSET, origin.offset);
        match first_failure {
            Some(ts) => record.with(RETRY_FIRST_FAILURE_TS, ts),
            None => record,
        }
    }

    fn dead_letter(
        &mut self,
        message: &Message,
        origin: &Origin,
        attempts: u32,
        now: i64,
        failure: &Failure,
        reason: &str,
    ) -> Result<()> {
        let record = OutRecord::copy_of(message)
            .with(DLQ_ORIGINAL_TOPIC, &origin.topic)
            .with(DLQ_ORIGINAL_PARTITION, origin.partition)
            .with(DLQ_ORIGINAL_OFFSET, origin.offset)
            .with(DLQ_ORIGINAL_TIMESTAMP, message.timestamp)
            .with(DLQ_GROUP, &self.config.group)
            .with(DLQ_ATTEMPTS, attempts)
            .with(DLQ_FIRST_FAILURE_TS, origin.first_failure.unwrap_or(now))
            .with(DLQ_LAST_FAILURE_TS, now)
            .with(DLQ_ERROR_CLASS, &failure.class)
            .with(DLQ_ERROR_MESSAGE, &failure.message)
            .with(DLQ_REASON, reason);
        self.stats.dead_lettered += 1;
        self.resolved(message, origin);
        self.hop(message, &self.config.dlq_topic(), origin.partition, record)
    }

    /// Appends `record` to `topic` and commits past `message`, in the configured order.
    fn hop(
        &mut self,
        message: &Message,
        topic: &str,
        partition: u32,
        record: OutRecord,
    ) -> Result<()> {
        let partition = partition % self.partitions;
        if let Some(id) = &self.config.transactional_id {
            // One transaction, by the producer of the record's partition: a crash before its
            // end aborts the copy and keeps the record uncommitted, so it is handled again and
            // copied once in a later transaction.
            let id = transactional_id(id, message.partition);
            let next = message.offset + 1;
            let offsets = [(message.topic.clone(), message.partition, next)];
            let hopped = self
                .transport
                .append_in_transaction(&id, topic, partition, &record)
                .and_then(|_| {
                    self.transport
                        .commit_transaction(&id, &self.config.group, &offsets)
                });
            if let Err(e) = hopped {
                let member = self.owned.as_ref().is_some_and(|o| o.generation >= 0);
                // A failed EndTxn may still have committed: the next poll reads the positions
                // from the group's commits again rather than handle the record a second time.
                self.owned = None;
                return Err(match e {
                    // Without group membership nobody may take the partition over: another
                    // worker with the same transactional id is a mistake this one stops at.
                    Error::Fenced(why) if !member => Error::Transport(format!(
                        "{why}: another worker uses transactional id {id}"
                    )),
                    e => e,
                });
            }
            self.committed_next(&message.topic, message.partition, next);
            return Ok(());
        }
        match self.config.commit_order {
            CommitOrder::AfterAppend => {
                let batch = self
                    .appender
                    .stamp(&mut self.transport, topic, partition, &record)?;
                if let Some(journal) = &self.journal {
                    journal.record(&Hop {
                        source_topic: message.topic.clone(),
                        source_partition: message.partition,
                        source_offset: message.offset,
                        target_topic: topic.to_owned(),
                        target_partition: partition,
                        batch: batch.clone(),
                    })?;
                }
                self.appender
                    .append(&mut self.transport, topic, partition, batch)?;
                match self.commit(message) {
                    // The copy is out, but the group refused the commit (a rebalance). If
                    // this worker keeps the partition, it commits in the next generation
                    // instead of handling the record a second time and writing a second copy.
                    Err(e) if e.is_fenced() => {
                        self.copied_uncommitted =
                            Some((message.topic.clone(), message.partition, message.offset));
                        Err(e)
                    }
                    committed => committed,
                }
            }
            CommitOrder::BeforeAppend => {
                self.commit(message)?;
                self.appender
                    .send(&mut self.transport, topic, partition, &record)?;
                Ok(())
            }
        }
    }

    fn commit(&mut self, message: &Message) -> Result<()> {
        self.commit_next(&message.topic, message.partition, message.offset + 1)
    }

    /// Reads on past `message`, committing it with the fetch's last (see `owed`).
    fn owe_commit(&mut self, message: &Message) {
        let next = message.offset + 1;
        self.positions
            .insert((message.topic.clone(), message.partition), next);
        self.owed = Some((message.topic.clone(), message.partition, next));
    }

    /// Commits `next` as the offset to read next in `topic`/`partition`, and reads on from it.
    fn commit_next(&mut self, topic: &str, partition: u32, next: i64) -> Result<()> {
        self.transport
            .commit(&self.config.group, topic, partition, next)?;
        self.committed_next(topic, partition, next);
        Ok(())
    }

    /// Reads on from `next`, which the group has as committed in `topic`/`partition`.
    fn committed_next(&mut self, topic: &str, partition: u32, next: i64) {
        self.positions.insert((topic.to_owned(), partition), next);
        // A later offset of the same partition covers what handled records owed.
        if self
            .owed
            .as_ref()
            .is_some_and(|(t, p, owed)| t == topic && *p == partition && *owed <= next)
        {
            self.owed = None;
        }
    }
}

/// The transactional id of partition `partition`'s producer: the same whichever worker owns
/// the partition, so its new owner fences the old one.
fn transactional_id(base: &str, partition: u32) -> String {
    format!("{base}-{partition}")
}
