//! [`AsyncClient`]'s records and offsets: Produce of raw batches (an idempotent producer's,
//! from InitProducerId), Fetch, ListOffsets over many partitions, each partition's size
//! (DescribeLogDirs) and its idempotent producers (DescribeProducers). Each request goes to
//! the partition's leader.

use std::collections::BTreeMap;

use bytes::Bytes;
use kafka_protocol::messages::describe_log_dirs_request::DescribableLogDirTopic;
use kafka_protocol::messages::describe_producers_request::TopicRequest as DescribeProducersTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, BrokerId, FetchRequest, FetchResponse, ListOffsetsRequest, ListOffsetsResponse,
    ProduceRequest, ProduceResponse, TopicName, TransactionalId,
};
use kafka_protocol::messages::{DescribeLogDirsRequest, DescribeLogDirsResponse};
use kafka_protocol::messages::{DescribeProducersRequest, DescribeProducersResponse};
use kafka_protocol::messages::{InitProducerIdRequest, InitProducerIdResponse};
use kafka_protocol::protocol::StrBytes;

use logd_storage::AbortedTxn;

use crate::client::AsyncClient;
use crate::error::{Error, Result};
use crate::routing::{Route, is_stale_route};
use logd_protocol::codes;
/// One partition's offsets as ListOffsets reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionOffsets {
    /// First offset still stored.
    pub earliest: i64,
    /// Next offset to be written (high watermark).
    pub latest: i64,
}

/// An idempotent producer a partition tracks, as DescribeProducers reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActiveProducer {
    /// Partition.
    pub partition: i32,
    /// Producer id.
    pub producer_id: i64,
    /// Its current epoch.
    pub epoch: i32,
    /// Sequence of its last stored record.
    pub last_sequence: i32,
    /// Timestamp of its last stored batch (ms).
    pub last_timestamp: i64,
    /// The coordinator epoch of its last transaction marker, -1 before any.
    pub coordinator_epoch: i32,
    /// Where its open transaction starts, -1 when none is open.
    pub txn_start_offset: i64,
}

/// What a fetch returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// Whole record batches.
    pub records: Bytes,
    /// The partition's high watermark.
    pub high_watermark: i64,
    /// For a read_committed fetch, the aborted transactions the batches hold (their
    /// producers and first offsets).
    pub aborted: Vec<AbortedTxn>,
}

const PRODUCE: i16 = 7;
const FETCH: i16 = 11;
const LIST_OFFSETS: i16 = 2;
const DESCRIBE_LOG_DIRS: i16 = 1;
const DESCRIBE_PRODUCERS: i16 = 0;
const INIT_PRODUCER_ID: i16 = 1;

fn name(topic: &str) -> TopicName {
    TopicName(StrBytes::from_string(topic.to_owned()))
}

impl AsyncClient {
    /// The offset a ListOffsets `timestamp` (-2 earliest, -1 latest, else a time in ms) gives;
    /// `None` when no record is that new.
    pub async fn list_offset(
        &mut self,
        topic: &str,
        partition: i32,
        timestamp: i64,
    ) -> Result<Option<i64>> {
        let found = self.list_offsets(topic, &[partition], timestamp).await?;
        Ok(found.into_iter().next().and_then(|(_, offset)| offset))
    }

    /// What [`AsyncClient::list_offset`] gives for each of `partitions`, in one request per
    /// leader, by partition; the first partition answered with an error fails the call (after
    /// retries while leadership moves).
    pub async fn list_offsets(
        &mut self,
        topic: &str,
        partitions: &[i32],
        timestamp: i64,
    ) -> Result<BTreeMap<i32, Option<i64>>> {
        let mut found = BTreeMap::new();
        // Sorted, so each leader's share is too and an answer is matched by binary search
        // (10,000 partitions on one broker would otherwise cost 10^8 comparisons).
        let mut wanted: Vec<i32> = partitions.to_vec();
        wanted.sort_unstable();
        wanted.dedup();
        let mut retry = crate::routing::Retry::new();
        while !wanted.is_empty() {
            let mut by_leader: BTreeMap<Option<i32>, Vec<i32>> = BTreeMap::new();
            for &partition in &wanted {
                let leader = self.leader_route(topic, partition).await?;
                by_leader.entry(leader).or_default().push(partition);
            }
            let mut stale = Vec::new();
            for (leader, asked) in by_leader {
                let route = leader.map_or(Route::Any, Route::Broker);
                let request = list_offsets_request(topic, &asked, timestamp);
                let response: ListOffsetsResponse = match self
                    .wire
                    .call_to(route, ApiKey::ListOffsets, LIST_OFFSETS, &request)
                    .await
                {
                    Ok(response) => response,
                    Err(Error::Io(_)) if leader.is_some() => {
                        stale.extend(asked);
                        continue;
                    }
                    Err(e) => return Err(e),
                };
                for answer in response.topics.iter().flat_map(|t| &t.partitions) {
                    let partition = answer.partition_index;
                    if is_stale_route(answer.error_code) {
                        stale.push(partition);
                    } else if answer.error_code != 0 {
                        return Err(Error::Kafka {
                            what: format!("{topic}-{partition}"),
                            code: answer.error_code,
                        });
                    } else if asked.binary_search(&partition).is_ok() {
                        found.insert(partition, (answer.offset >= 0).then_some(answer.offset));
                    }
                }
                if let Some(missing) = asked
                    .iter()
                    .find(|p| !found.contains_key(p) && !stale.contains(p))
                {
                    return Err(Error::Kafka {
                        what: format!("offsets of {topic}-{missing}"),
                        code: -1,
                    });
                }
            }
            if !stale.is_empty() {
                if !retry.again().await {
                    return Err(Error::Kafka {
                        what: format!("offsets of {topic}-{}", stale[0]),
                        code: codes::NOT_LEADER_OR_FOLLOWER,
                    });
                }
                for &partition in &stale {
                    self.forget_leader(topic, partition);
                }
            }
            wanted = stale;
        }
        Ok(found)
    }

    /// The size in bytes of each partition of `topic` (DescribeLogDirs), by partition; none
    /// from a cluster that does not serve DescribeLogDirs.
    pub async fn partition_sizes(&mut self, topic: &str) -> Result<Vec<(i32, i64)>> {
        if !self.wire.serves(ApiKey::DescribeLogDirs).await? {
            return Ok(Vec::new());
        }
        // Each broker reports its own log directories: each leader is asked for the partitions
        // it leads, so the leader's copy is the one counted.
        let mut sizes = Vec::new();
        for (leader, asked) in self.partitions_by_leader(topic).await? {
            let mut wanted = DescribableLogDirTopic::default();
            wanted.topic = name(topic);
            wanted.partitions = asked;
            let mut request = DescribeLogDirsRequest::default();
            request.topics = Some(vec![wanted]);
            let route = leader.map_or(Route::Any, Route::Broker);
            let response: DescribeLogDirsResponse = self
                .wire
                .call_to(route, ApiKey::DescribeLogDirs, DESCRIBE_LOG_DIRS, &request)
                .await?;
            sizes.extend(
                response
                    .results
                    .iter()
                    .flat_map(|dir| &dir.topics)
                    .filter(|t| &*t.name == topic)
                    .flat_map(|t| &t.partitions)
                    .map(|p| (p.partition_index, p.partition_size)),
            );
        }
        sizes.sort();
        Ok(sizes)
    }

    /// A producer id for an idempotent producer, epoch 0 (InitProducerId v1, no
    /// transactional id).
    pub async fn init_producer_id(&mut self) -> Result<i64> {
        let mut request = InitProducerIdRequest::default();
        // Null, as Kafka's idempotent producers send it (the codec's default is ""), which a
        // broker with ACLs would check as a transactional id.
        request.transactional_id = None;
        request.transaction_timeout_ms = 60_000;
        // A Kafka broker answers COORDINATOR_LOAD_IN_PROGRESS until it has a block of ids
        // from its controller: retried, as Kafka's producers retry it.
        let response: InitProducerIdResponse = self
            .wire
            .routed(
                Route::Any,
                ApiKey::InitProducerId,
                INIT_PRODUCER_ID,
                &request,
                |r: &InitProducerIdResponse| r.error_code,
            )
            .await?;
        if response.error_code != 0 {
            return Err(Error::Kafka {
                what: "a producer id".into(),
                code: response.error_code,
            });
        }
        Ok(response.producer_id.0)
    }

    /// The idempotent producers every partition of `topic` tracks (DescribeProducers), by
    /// partition and producer id; none from a cluster that does not serve DescribeProducers
    /// (Kafka before 2.8).
    pub async fn producers(&mut self, topic: &str) -> Result<Vec<ActiveProducer>> {
        if !self.wire.serves(ApiKey::DescribeProducers).await? {
            return Ok(Vec::new());
        }
        let mut answers = Vec::new();
        for (leader, asked) in self.partitions_by_leader(topic).await? {
            let mut wanted = DescribeProducersTopic::default();
            wanted.name = name(topic);
            wanted.partition_indexes = asked;
            let mut request = DescribeProducersRequest::default();
            request.topics = vec![wanted];
            let route = leader.map_or(Route::Any, Route::Broker);
            let response: DescribeProducersResponse = self
                .wire
                .call_to(
                    route,
                    ApiKey::DescribeProducers,
                    DESCRIBE_PRODUCERS,
                    &request,
                )
                .await?;
            answers.extend(response.topics.into_iter().flat_map(|t| t.partitions));
        }
        let mut producers = Vec::new();
        for partition in &answers {
            if partition.error_code != 0 {
                return Err(Error::Kafka {
                    what: format!("{topic}-{}", partition.partition_index),
                    code: partition.error_code,
                });
            }
            producers.extend(partition.active_producers.iter().map(|p| ActiveProducer {
                partition: partition.partition_index,
                producer_id: p.producer_id.0,
                epoch: p.producer_epoch,
                last_sequence: p.last_sequence,
                last_timestamp: p.last_timestamp,
                coordinator_epoch: p.coordinator_epoch,
                txn_start_offset: p.current_txn_start_offset,
            }));
        }
        producers.sort_by_key(|p| (p.partition, p.producer_id));
        Ok(producers)
    }

    /// Earliest and latest offsets of a partition.
    pub async fn offsets(&mut self, topic: &str, partition: i32) -> Result<PartitionOffsets> {
        let found = self.offsets_of(topic, &[partition]).await?;
        // `offsets_of` answers for every partition asked about or fails.
        found.get(&partition).copied().ok_or_else(|| Error::Kafka {
            what: format!("offsets of {topic}-{partition}"),
            code: -1,
        })
    }

    /// Earliest and latest offsets of each of `partitions`, in two requests however many there
    /// are (a request each is 20,000 round trips for a topic of 10,000 partitions).
    pub async fn offsets_of(
        &mut self,
        topic: &str,
        partitions: &[i32],
    ) -> Result<BTreeMap<i32, PartitionOffsets>> {
        let earliest = self.list_offsets(topic, partitions, -2).await?;
        let latest = self.list_offsets(topic, partitions, -1).await?;
        Ok(earliest
            .into_iter()
            .map(|(partition, earliest)| {
                let offsets = PartitionOffsets {
                    earliest: earliest.unwrap_or(0),
                    latest: latest.get(&partition).copied().flatten().unwrap_or(0),
                };
                (partition, offsets)
            })
            .collect())
    }

    /// Appends record batches to a partition with acks = all; returns the base offset.
    pub async fn produce(&mut self, topic: &str, partition: i32, batches: Vec<u8>) -> Result<i64> {
        self.produce_as(None, topic, partition, batches).await
    }

    /// [`AsyncClient::produce`] as transactional producer `transactional_id` (its batches
    /// transactional ones, the partition added to its open transaction first).
    pub(crate) async fn produce_as(
        &mut self,
        transactional_id: Option<&str>,
        topic: &str,
        partition: i32,
        batches: Vec<u8>,
    ) -> Result<i64> {
        let mut data = PartitionProduceData::default();
        data.index = partition;
        data.records = Some(Bytes::from(batches));
        let mut t = TopicProduceData::default();
        t.name = name(topic);
        t.partition_data = vec![data];
        let mut request = ProduceRequest::default();
        request.transactional_id =
            transactional_id.map(|id| TransactionalId(StrBytes::from_string(id.to_owned())));
        request.acks = -1;
        request.timeout_ms = 30_000;
        request.topic_data = vec![t];
        let response: ProduceResponse = self
            .wire
            .routed(
                Route::Leader(topic, partition),
                ApiKey::Produce,
                PRODUCE,
                &request,
                |r: &ProduceResponse| {
                    r.responses
                        .first()
                        .and_then(|t| t.partition_responses.first())
                        .map_or(0, |p| p.error_code)
                },
            )
            .await?;
        let answer = response
            .responses
            .first()
            .and_then(|t| t.partition_responses.first())
            .ok_or_else(|| Error::Kafka {
                what: format!("produce to {topic}-{partition}"),
                code: -1,
            })?;
        match answer.error_code {
            0 => Ok(answer.base_offset),
            code => Err(Error::Kafka {
                what: format!("produce to {topic}-{partition}"),
                code,
            }),
        }
    }

    /// Fetches whole batches from `offset`, waiting up to `max_wait_ms` for data; returns the
    /// batches' bytes and the partition's high watermark.
    pub async fn fetch(
        &mut self,
        topic: &str,
        partition: i32,
        offset: i64,
        max_wait_ms: i32,
    ) -> Result<(Bytes, i64)> {
        let fetched = self
            .fetch_isolated(topic, partition, offset, max_wait_ms, false)
            .await?;
        Ok((fetched.records, fetched.high_watermark))
    }

    /// [`AsyncClient::fetch`] at an isolation level: with `read_committed`, only up to the
    /// partition's last stable offset, with the aborted transactions in the batches returned
    /// (which the caller skips, e.g. with `logd_storage::ReadCommitted`).
    pub async fn fetch_isolated(
        &mut self,
        topic: &str,
        partition: i32,
        offset: i64,
        max_wait_ms: i32,
        read_committed: bool,
    ) -> Result<Fetched> {
        let mut p = FetchPartition::default();
        p.partition = partition;
        p.fetch_offset = offset;
        p.partition_max_bytes = 1 << 20;
        let mut t = FetchTopic::default();
        t.topic = name(topic);
        t.partitions = vec![p];
        let mut request = FetchRequest::default();
        request.replica_id = BrokerId(-1);
        request.max_wait_ms = max_wait_ms;
        request.min_bytes = 1;
        request.max_bytes = 4 << 20;
        request.isolation_level = i8::from(read_committed);
        request.topics = vec![t];
        let response: FetchResponse = self
            .wire
            .routed(
                Route::Leader(topic, partition),
                ApiKey::Fetch,
                FETCH,
                &request,
                |r: &FetchResponse| {
                    r.responses
                        .first()
                        .and_then(|t| t.partitions.first())
                        .map_or(0, |p| p.error_code)
                },
            )
            .await?;
        let data = response
            .responses
            .first()
            .and_then(|t| t.partitions.first())
            .ok_or_else(|| Error::Kafka {
                what: format!("fetch {topic}-{partition}"),
                code: -1,
            })?;
        match data.error_code {
            0 => Ok(Fetched {
                records: data.records.clone().unwrap_or_default(),
                high_watermark: data.high_watermark,
                aborted: data
                    .aborted_transactions
                    .iter()
                    .flatten()
                    .map(|a| AbortedTxn {
                        producer_id: a.producer_id.0,
                        first_offset: a.first_offset,
                        // A fetch tells only where an aborted transaction starts; the reader
                        // finds its end at the producer's abort marker.
                        last_offset: -1,
                        last_stable_offset: -1,
                    })
                    .collect(),
            }),
            code => Err(Error::Kafka {
                what: format!("fetch {topic}-{partition} at {offset}"),
                code,
            }),
        }
    }

    /// The broker leading `topic`'s `partition` (`None`: the bootstrap broker, as on logd).
    async fn leader_route(&mut self, topic: &str, partition: i32) -> Result<Option<i32>> {
        self.wire.target(Route::Leader(topic, partition)).await
    }

    /// Forgets the leader of `topic`'s `partition`, which moved.
    fn forget_leader(&mut self, topic: &str, partition: i32) {
        self.wire.forget(Route::Leader(topic, partition));
    }

    /// Every partition of `topic`, grouped by leader, ascending.
    async fn partitions_by_leader(
        &mut self,
        topic: &str,
    ) -> Result<BTreeMap<Option<i32>, Vec<i32>>> {
        let count = self.partition_count(topic, false).await? as i32;
        let mut by_leader: BTreeMap<Option<i32>, Vec<i32>> = BTreeMap::new();
        for partition in 0..count {
            let leader = self.leader_route(topic, partition).await?;
            by_leader.entry(leader).or_default().push(partition);
        }
        Ok(by_leader)
    }
}

/// A ListOffsets request for `partitions` of `topic` at `timestamp`.
fn list_offsets_request(topic: &str, partitions: &[i32], timestamp: i64) -> ListOffsetsRequest {
    let mut t = ListOffsetsTopic::default();
    t.name = name(topic);
    t.partitions = partitions
        .iter()
        .map(|&partition| {
            let mut p = ListOffsetsPartition::default();
            p.partition_index = partition;
            p.timestamp = timestamp;
            p
        })
        .collect();
    let mut request = ListOffsetsRequest::default();
    request.replica_id = BrokerId(-1);
    request.topics = vec![t];
    request
}
