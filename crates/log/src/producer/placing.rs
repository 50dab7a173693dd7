//! Placing staged records in their partitions' batches: a chunk at a time, after the
//! partitions' state was prefetched, opening and closing batches as they fill, in the order
//! the chunks were staged; and the producer's cached view of each topic's partition count.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Mutex, MutexGuard};

use crate::error::{Error, Result};

use super::batches::{
    Batches, HOT_PARTITION_BYTES, METADATA_MAX_AGE, Opened, PartitionBatches, Pending,
    PlacementHints, TopicBatches,
};
use super::shared::Shared;
use super::staging::{Chunk, Placed, Staged, TopicView, prefetch};

impl Shared {
    /// Starts keeping batches for the topic `name`, if the engine has it.
    pub(super) fn add_topic(&self, name: &str) -> Result<()> {
        let found = self.log.topic_for_produce(name)?;
        self.topics
            .write()
            .entry(found.name.clone())
            .or_insert_with(|| TopicBatches {
                name: found.name.clone(),
                partition_count: AtomicU32::new(found.partition_count()),
                checked: Mutex::new(Instant::now()),
                partitions: Vec::new(),
                hints: Vec::new(),
            });
        Ok(())
    }

    /// What a sender needs of topic `name`, the producer keeping batches for it from now on
    /// if the engine has it.
    pub(super) fn topic_view(&self, name: &str) -> Result<TopicView> {
        let view = |topic: &TopicBatches| TopicView {
            name: topic.name.clone(),
            partition_count: topic.partition_count.load(Ordering::Relaxed),
            with_room: topic.partitions.len() as u32,
        };
        if let Some(topic) = self.topics.read().get(name) {
            return Ok(view(topic));
        }
        self.add_topic(name)?;
        let topics = self.topics.read();
        let topic = topics
            .get(name)
            .ok_or_else(|| Error::UnknownTopic(name.to_owned()))?;
        Ok(view(topic))
    }

    /// Gives the staging chunk a fresh view of topic `name`, asked for with the staging lock
    /// released (the topic map's locks come after it); the lock again, and the topic's index
    /// in the chunk.
    pub(super) fn refresh_view<'a>(
        &'a self,
        staging: MutexGuard<'a, Chunk>,
        name: &str,
    ) -> Result<(MutexGuard<'a, Chunk>, usize)> {
        drop(staging);
        let view = self.topic_view(name)?;
        let mut staging = self.staging.lock();
        let topic = staging.remember(view);
        Ok((staging, topic))
    }

    /// Makes room for the batches of `topic`'s partitions up to `partition`.
    pub(super) fn add_partitions(&self, topic: &str, partition: u32) {
        if let Some(topic) = self.topics.write().get_mut(topic)
            && topic.partitions.len() <= partition as usize
        {
            topic
                .partitions
                .resize_with(partition as usize + 1, Arc::default);
            topic
                .hints
                .resize_with(partition as usize + 1, PlacementHints::default);
        }
    }

    /// Asks the engine for `topic`'s partition count again once the last answer is
    /// `METADATA_MAX_AGE` old; looked at as a batch opens, so not with every record. A topic
    /// the engine no longer has keeps its count: appends to it fail and say so.
    pub(super) fn refresh_partition_count(&self, topic: &TopicBatches, now: Instant) {
        let mut checked = topic.checked.lock();
        if now.saturating_duration_since(*checked) >= METADATA_MAX_AGE {
            if let Ok(found) = self.log.topic_for_produce(&topic.name) {
                topic
                    .partition_count
                    .store(found.partition_count(), Ordering::Relaxed);
            }
            *checked = now;
        }
    }

    /// Places the staged records in their partitions' batches, then appends the batches that
    /// filled. `placing` is taken before `staging` is released, so chunks are placed in the
    /// order they were staged; the appends come after, so the next chunk can be placed
    /// meanwhile.
    pub(super) fn place_staged(&self, mut staging: MutexGuard<'_, Chunk>) {
        if staging.records.is_empty() {
            return;
        }
        let mut chunk = std::mem::take(&mut *self.spare_chunk.lock());
        std::mem::swap(&mut chunk, &mut staging);
        let placing = self.placing.lock();
        drop(staging);
        let filled = self.place(&chunk);
        drop(placing);
        chunk.empty();
        *self.spare_chunk.lock() = chunk;
        for partition in filled {
            // A failure reaches every delivery of that batch, and the next `flush`.
            self.drain(&partition);
        }
    }

    /// Places the staged records once the first of them has waited `linger`; otherwise says
    /// when it will have (nothing when none is staged).
    pub(super) fn place_lingering(&self, linger: Duration) -> Option<Instant> {
        let staging = self.staging.lock();
        let due = staging.first_staged? + linger;
        if due > Instant::now() {
            return Some(due);
        }
        self.place_staged(staging);
        None
    }

    /// Puts a chunk's records into their partitions' batches in order, closing a batch a
    /// record would push past `batch_bytes` (a record larger than the limit gets a batch of its
    /// own); returns the partitions whose batches were closed so, for the caller to append.
    pub(super) fn place(&self, chunk: &Chunk) -> Vec<Arc<PartitionBatches>> {
        let topics = self.topics.read();
        let chunk_topics: Vec<&TopicBatches> = chunk
            .topics
            .iter()
            .map(|view| {
                let name = &view.name;
                topics.get(name).expect("a producer never forgets a topic")
            })
            .collect();
        let room = "`send` made room for the partition's batches";
        let target = |record: &Staged| {
            let topic = chunk_topics[record.topic];
            let partition = record.partition as usize;
            let batches = topic.partitions.get(partition).expect(room);
            let hints = topic.hints.get(partition).expect(room);
            (batches, hints)
        };
        // Every partition's lock and open batch, where each record goes and each delivery's
        // slot, asked for at once: the misses overlap, where taking them in the loop below
        // would wait for each in turn. (Prefetching a fixed distance ahead inside that loop
        // was slower: its locks wait for the prefetches.)
        let dropped = chunk.placements.dropped();
        let delivery = |at: usize| dropped & (1 << at) == 0;
        for (at, record) in chunk.records.iter().enumerate() {
            let (batches, hints) = target(record);
            prefetch(Arc::as_ptr(batches), HOT_PARTITION_BYTES);
            hints.prefetch(record.size, delivery(at));
        }
        let started = chunk.first_staged.unwrap_or_else(Instant::now);
        let mut placed = Placed {
            slots: Vec::with_capacity(chunk.records.len()),
            records: Vec::with_capacity(chunk.records.len()),
        };
        let mut opened = Vec::new();
        let mut filled: Vec<Arc<PartitionBatches>> = Vec::new();
        let mut current: Option<(&Arc<PartitionBatches>, MutexGuard<'_, Batches>)> = None;
        for (at, record) in chunk.records.iter().enumerate() {
            let (partition, hints) = target(record);
            let batches = match &mut current {
                Some((held, batches)) if Arc::ptr_eq(held, partition) => batches,
                _ => {
                    current = None;
                    &mut current.insert((partition, partition.batches.lock())).1
                }
            };
            let contents = chunk.contents(record);
            let full = batches.open.as_ref().is_some_and(|b| {
                !b.builder.is_empty() && b.builder.size() + record.size > self.config.batch_bytes
            });
            if full {
                batches.close();
                if !filled.iter().any(|f| Arc::ptr_eq(f, partition)) {
                    filled.push(partition.clone());
                }
            }
            if batches.open.is_none() {
                batches.next_id += 1;
                opened.push(Opened {
                    started,
                    partition: partition.clone(),
                    id: batches.next_id,
                });
                batches.open = Some(Pending::new(
                    batches.next_id,
                    self.config.compression,
                    self.buffers.take(),
                    chunk_topics[record.topic].name.clone(),
                    record.partition,
                ));
            }
            let batch = batches.open.as_mut().expect("opened above");
            if delivery(at) {
                placed.note(&batch.slot, batch.builder.len());
            } else {
                placed.skip();
            }
            batch.builder.push(
                record.timestamp,
                contents.key,
                contents.value,
                &contents.headers,
            );
            hints.note(batch);
        }
        drop(current);
        if !opened.is_empty() {
            let now = Instant::now();
            for topic in &chunk_topics {
                self.refresh_partition_count(topic, now);
            }
            let mut queue = self.opened.lock();
            for batch in opened {
                queue.remember(batch);
            }
        }
        drop(topics);
        chunk.placements.publish(placed);
        filled
    }
}
