//! [`AsyncClient`]: a small async Kafka client (tokio), one request at a time, at versions
//! every Kafka 4.x broker (and logd) serves. It speaks what logd's tools need and librdkafka
//! does not offer as calls (ListOffsets over many partitions, DescribeLogDirs,
//! DescribeProducers, topic and group administration, raw record batches): topics, produce,
//! fetch and offsets (and, in `group_client`, consumer groups). On a cluster it sends each
//! request to the broker that must answer it (`routing`). `blocking::Client` runs it for
//! synchronous callers (the command-line tools). It connects over TLS and logs in with SASL
//! when its `ClientSecurity` says so.

use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::describe_log_dirs_request::DescribableLogDirTopic;
use kafka_protocol::messages::describe_producers_request::TopicRequest as DescribeProducersTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, BrokerId, CreateTopicsRequest, CreateTopicsResponse, DeleteTopicsRequest,
    DeleteTopicsResponse, FetchRequest, FetchResponse, ListOffsetsRequest, ListOffsetsResponse,
    MetadataRequest, MetadataResponse, ProduceRequest, ProduceResponse, TopicName,
};
use kafka_protocol::messages::{ApiVersionsRequest, ApiVersionsResponse};
use kafka_protocol::messages::{DescribeLogDirsRequest, DescribeLogDirsResponse};
use kafka_protocol::messages::{DescribeProducersRequest, DescribeProducersResponse};
use kafka_protocol::messages::{InitProducerIdRequest, InitProducerIdResponse};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

use crate::client_security::ClientSecurity;
use crate::connection::Connection;
use crate::error::{Error, Result};
use crate::routing::{Route, Routes, is_stale_route};
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
}

/// A client of a Kafka cluster (or one logd): a connection to the broker it bootstrapped from,
/// and one to each other broker a request had to go to.
pub struct AsyncClient {
    pub(crate) bootstrap: Connection,
    pub(crate) security: ClientSecurity,
    pub(crate) routes: Routes,
    /// Connections by broker id, opened as requests need them.
    pub(crate) brokers: HashMap<i32, Connection>,
    /// The API keys the bootstrap broker serves (ApiVersions), asked once, before the first
    /// optional request.
    served: Option<Vec<i16>>,
}

impl std::fmt::Debug for AsyncClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncClient")
            .field("routes", &self.routes)
            .finish_non_exhaustive()
    }
}

const API_VERSIONS: i16 = 2;
const METADATA: i16 = 4;
const PRODUCE: i16 = 7;
const FETCH: i16 = 11;
const LIST_OFFSETS: i16 = 2;
const CREATE_TOPICS: i16 = 3;
const DELETE_TOPICS: i16 = 1;
const DESCRIBE_LOG_DIRS: i16 = 1;
const DESCRIBE_PRODUCERS: i16 = 0;
const INIT_PRODUCER_ID: i16 = 1;

fn name(topic: &str) -> TopicName {
    TopicName(StrBytes::from_string(topic.to_owned()))
}

impl AsyncClient {
    /// Connects to `addr` (e.g. `127.0.0.1:9092`) in clear text, without logging in.
    pub async fn connect(addr: &str) -> Result<AsyncClient> {
        AsyncClient::connect_with(addr, &ClientSecurity::default()).await
    }

    /// Connects to `addr` as `security` says: TLS (checking the broker's certificate against
    /// the configured CA and the host in `addr`), then a SASL login. Other brokers of a cluster
    /// are reached the same way when a request must go to them.
    pub async fn connect_with(addr: &str, security: &ClientSecurity) -> Result<AsyncClient> {
        Ok(AsyncClient {
            bootstrap: Connection::connect(addr, security).await?,
            security: security.clone(),
            routes: Routes::default(),
            brokers: HashMap::new(),
            served: None,
        })
    }

    /// Whether the cluster serves `key` (as its bootstrap broker says in ApiVersions). Calls
    /// that only add to an answer (partition sizes, producer state) are skipped where it does
    /// not: a broker closes the connection on a request it does not know.
    pub(crate) async fn serves(&mut self, key: ApiKey) -> Result<bool> {
        self.serves_key(key as i16).await
    }

    /// As [`AsyncClient::serves`] for a raw API key (logd's own among them).
    pub(crate) async fn serves_key(&mut self, key: i16) -> Result<bool> {
        if self.served.is_none() {
            let response: ApiVersionsResponse = self
                .call(
                    ApiKey::ApiVersions,
                    API_VERSIONS,
                    &ApiVersionsRequest::default(),
                )
                .await?;
            if response.error_code != 0 {
                return Err(Error::Kafka {
                    what: "the versions the broker serves".into(),
                    code: response.error_code,
                });
            }
            self.served = Some(response.api_keys.iter().map(|k| k.api_key).collect());
        }
        Ok(self.served.as_ref().is_some_and(|keys| keys.contains(&key)))
    }

    /// Sends `request` to the broker the client bootstrapped from and reads its answer.
    pub(crate) async fn call<Req: Encodable, Resp: Decodable>(
        &mut self,
        key: ApiKey,
        version: i16,
        request: &Req,
    ) -> Result<Resp> {
        self.bootstrap.call(key, version, request).await
    }

    /// Metadata for `topics` (none: brokers and controller only), which also teaches the
    /// client the cluster's routes.
    pub(crate) async fn refresh(&mut self, topics: &[&str]) -> Result<MetadataResponse> {
        self.metadata(Some(topics), false).await
    }

    /// Topic names and partition counts (`None`: all topics); with `auto_create`, missing
    /// topics are created if the broker allows it (as producers ask).
    pub async fn metadata(
        &mut self,
        topics: Option<&[&str]>,
        auto_create: bool,
    ) -> Result<MetadataResponse> {
        let mut request = MetadataRequest::default();
        request.topics = topics.map(|ts| {
            ts.iter()
                .map(|t| {
                    let mut topic = MetadataRequestTopic::default();
                    topic.name = Some(name(t));
                    topic
                })
                .collect()
        });
        request.allow_auto_topic_creation = auto_create;
        let response: MetadataResponse = self.call(ApiKey::Metadata, METADATA, &request).await?;
        self.routes.learn(&response);
        Ok(response)
    }

    /// The number of partitions of `topic` (created first if `auto_create` and the broker
    /// allows it).
    pub async fn partition_count(&mut self, topic: &str, auto_create: bool) -> Result<u32> {
        let response = self.metadata(Some(&[topic]), auto_create).await?;
        let found = response.topics.first().ok_or_else(|| Error::Kafka {
            what: format!("topic {topic}"),
            code: codes::UNKNOWN_TOPIC_OR_PARTITION,
        })?;
        if found.error_code != 0 {
            return Err(Error::Kafka {
                what: format!("topic {topic}"),
                code: found.error_code,
            });
        }
        Ok(found.partitions.len() as u32)
    }

    /// Creates a topic; `partitions` -1 takes the broker's default.
    pub async fn create_topic(
        &mut self,
        topic: &str,
        partitions: i32,
        configs: &[(String, String)],
    ) -> Result<()> {
        let mut creatable = CreatableTopic::default();
        creatable.name = name(topic);
        creatable.num_partitions = partitions;
        creatable.replication_factor = -1;
        creatable.configs = configs
            .iter()
            .map(|(k, v)| {
                let mut c = CreatableTopicConfig::default();
                c.name = StrBytes::from_string(k.clone());
                c.value = Some(StrBytes::from_string(v.clone()));
                c
            })
            .collect();
        let mut request = CreateTopicsRequest::default();
        request.topics = vec![creatable];
        request.timeout_ms = 30_000;
        let response: CreateTopicsResponse = self
            .routed(
                Route::Controller,
                ApiKey::CreateTopics,
                CREATE_TOPICS,
                &request,
                |r: &CreateTopicsResponse| r.topics.first().map_or(0, |t| t.error_code),
            )
            .await?;
        let Some(result) = response.topics.first() else {
            return Err(Error::Kafka {
                what: format!("topic {topic}"),
                code: -1,
            });
        };
        if result.error_code == 0 {
            return Ok(());
        }
        // Where the code alone says little, the broker's own words (which limit was hit,
        // which config is wrong) go with it.
        let explained = [
            codes::KAFKA_STORAGE_ERROR,
            codes::UNKNOWN_SERVER_ERROR,
            codes::INVALID_CONFIG,
        ];
        let what = match result.error_message.as_deref() {
            Some(message) if !message.is_empty() && explained.contains(&result.error_code) => {
                format!("topic {topic} [broker: {message}]")
            }
            _ => format!("topic {topic}"),
        };
        Err(Error::Kafka {
            what,
            code: result.error_code,
        })
    }

    /// Deletes a topic.
    pub async fn delete_topic(&mut self, topic: &str) -> Result<()> {
        let mut request = DeleteTopicsRequest::default();
        request.topic_names = vec![name(topic)];
        request.timeout_ms = 30_000;
        let response: DeleteTopicsResponse = self
            .routed(
                Route::Controller,
                ApiKey::DeleteTopics,
                DELETE_TOPICS,
                &request,
                |r: &DeleteTopicsResponse| r.responses.first().map_or(0, |t| t.error_code),
            )
            .await?;
        match response.responses.first().map(|t| t.error_code) {
            Some(0) => Ok(()),
            code => Err(Error::Kafka {
                what: format!("topic {topic}"),
                code: code.unwrap_or(-1),
            }),
        }
    }

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
        if !self.serves(ApiKey::DescribeLogDirs).await? {
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
        let response: InitProducerIdResponse = self
            .call(ApiKey::InitProducerId, INIT_PRODUCER_ID, &request)
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
        if !self.serves(ApiKey::DescribeProducers).await? {
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
        let mut data = PartitionProduceData::default();
        data.index = partition;
        data.records = Some(Bytes::from(batches));
        let mut t = TopicProduceData::default();
        t.name = name(topic);
        t.partition_data = vec![data];
        let mut request = ProduceRequest::default();
        request.acks = -1;
        request.timeout_ms = 30_000;
        request.topic_data = vec![t];
        let response: ProduceResponse = self
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
        request.topics = vec![t];
        let response: FetchResponse = self
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
            0 => Ok((
                data.records.clone().unwrap_or_default(),
                data.high_watermark,
            )),
            code => Err(Error::Kafka {
                what: format!("fetch {topic}-{partition} at {offset}"),
                code,
            }),
        }
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

impl AsyncClient {
    /// The broker leading `topic`'s `partition` (`None`: the bootstrap broker, as on logd).
    async fn leader_route(&mut self, topic: &str, partition: i32) -> Result<Option<i32>> {
        self.target(Route::Leader(topic, partition)).await
    }

    /// Forgets the leader of `topic`'s `partition`, which moved.
    fn forget_leader(&mut self, topic: &str, partition: i32) {
        self.routes.forget(Route::Leader(topic, partition));
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
