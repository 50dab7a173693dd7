//! [`AsyncClient`]: a small async Kafka client (tokio): one connection to one broker, one
//! request at a time, at versions every Kafka 4.x broker (and logd) serves. It speaks what
//! logd's tools need: topics, produce, fetch and offsets (and, in `group_client`, consumer
//! groups). `blocking::Client` runs it for synchronous callers (the command-line tools). It
//! connects over TLS and logs in with SASL when its `ClientSecurity` says so.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use bytes::{Bytes, BytesMut};
use kafka_protocol::ResponseError;
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
    MetadataRequest, MetadataResponse, ProduceRequest, ProduceResponse, RequestHeader,
    ResponseHeader, TopicName,
};
use kafka_protocol::messages::{DescribeLogDirsRequest, DescribeLogDirsResponse};
use kafka_protocol::messages::{DescribeProducersRequest, DescribeProducersResponse};
use kafka_protocol::messages::{InitProducerIdRequest, InitProducerIdResponse};
use kafka_protocol::messages::{
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

use crate::auth::SaslMechanism;
use crate::auth::scram::ScramClient;
use crate::client_security::{ClientSecurity, SaslLogin, server_name};
use crate::codes;
use crate::error::{Error, Result};

/// Why a client call failed: the connection, or a Kafka error code in the answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// Connecting, sending or receiving failed.
    #[error(transparent)]
    Connection(#[from] Error),
    /// The broker answered with an error code.
    #[error("{what} {}", code_name(*.code))]
    Kafka {
        /// What was asked, e.g. `topic orders`.
        what: String,
        /// The Kafka error code.
        code: i16,
    },
}

/// What a Kafka error code says about the thing asked for, as a predicate ("does not exist").
pub fn code_name(code: i16) -> String {
    match code {
        codes::OFFSET_OUT_OF_RANGE => "is out of range".into(),
        codes::CORRUPT_MESSAGE => "was refused as corrupt".into(),
        codes::UNKNOWN_TOPIC_OR_PARTITION => "does not exist".into(),
        codes::MESSAGE_TOO_LARGE => "was refused as too large".into(),
        codes::INVALID_TOPIC_EXCEPTION => "is not a valid topic name".into(),
        codes::TOPIC_ALREADY_EXISTS => "already exists".into(),
        codes::INVALID_PARTITIONS => "has an invalid partition count".into(),
        codes::INVALID_CONFIG => "has an invalid topic config".into(),
        codes::KAFKA_STORAGE_ERROR => "failed with a storage error on the broker".into(),
        codes::NON_EMPTY_GROUP => "has active members (stop its consumers first)".into(),
        codes::GROUP_ID_NOT_FOUND => "does not exist".into(),
        codes::UNKNOWN_MEMBER_ID => "was refused: the group has active members".into(),
        codes::OFFSET_METADATA_TOO_LARGE => "has commit metadata that is too large".into(),
        codes::TOPIC_AUTHORIZATION_FAILED => {
            "was refused: TOPIC_AUTHORIZATION_FAILED (no ACL grants it: see `logd acls`)".into()
        }
        codes::GROUP_AUTHORIZATION_FAILED => {
            "was refused: GROUP_AUTHORIZATION_FAILED (no ACL grants it: see `logd acls`)".into()
        }
        codes::CLUSTER_AUTHORIZATION_FAILED => {
            "was refused: CLUSTER_AUTHORIZATION_FAILED (a super user or an ACL on the cluster may)"
                .into()
        }
        codes::SECURITY_DISABLED => {
            "was refused: SECURITY_DISABLED (the broker has no authorizer: --authorizer acl)".into()
        }
        codes::INVALID_REQUEST => "was refused as invalid".into(),
        codes::RESOURCE_NOT_FOUND => "does not exist".into(),
        codes::UNACCEPTABLE_CREDENTIAL => {
            "was refused: UNACCEPTABLE_CREDENTIAL (iterations 4096 to 16384)".into()
        }
        codes::UNSUPPORTED_SASL_MECHANISM => "names an unknown SCRAM mechanism".into(),
        codes::DUPLICATE_RESOURCE => "is named twice in one request".into(),
        other => {
            let name = kafka_name(other);
            match meaning(other) {
                Some(meaning) => format!("failed with {name} (Kafka error {other}): {meaning}"),
                None => format!("failed with {name} (Kafka error {other})"),
            }
        }
    }
}

/// Kafka's own name of an error code, as its documentation and logs spell it
/// (`NOT_LEADER_OR_FOLLOWER`), from `kafka_protocol`'s table of every code.
fn kafka_name(code: i16) -> String {
    match ResponseError::try_from_code(code) {
        Some(ResponseError::Unknown(_)) | None => "an unknown error".into(),
        Some(error) => {
            let camel = error.to_string();
            let mut name = String::with_capacity(camel.len() + 8);
            for (i, c) in camel.chars().enumerate() {
                if c.is_ascii_uppercase() && i > 0 {
                    name.push('_');
                }
                name.push(c.to_ascii_uppercase());
            }
            name
        }
    }
}

/// What the errors a multi-broker cluster answers with mean to the person running a tool.
fn meaning(code: i16) -> Option<&'static str> {
    Some(match code {
        codes::NOT_LEADER_OR_FOLLOWER => {
            "the broker asked does not lead that partition (leadership moved); try again"
        }
        codes::LEADER_NOT_AVAILABLE => {
            "the partition has no leader right now (a broker is down or an election runs)"
        }
        codes::REQUEST_TIMED_OUT => "the broker did not answer in time",
        codes::COORDINATOR_LOAD_IN_PROGRESS => {
            "the group's coordinator is still loading it; try again"
        }
        codes::COORDINATOR_NOT_AVAILABLE => "the group's coordinator is not available; try again",
        codes::NOT_COORDINATOR => {
            "the broker asked is not the group's coordinator (it moved); try again"
        }
        codes::REBALANCE_IN_PROGRESS => "the group is rebalancing; try again when it settles",
        codes::ILLEGAL_GENERATION => {
            "the commit came from an older generation of the group (a member that was replaced)"
        }
        codes::UNSUPPORTED_VERSION => "the broker does not support that request's version",
        codes::UNKNOWN_SERVER_ERROR => "the broker failed unexpectedly: see its log",
        _ => return None,
    })
}

/// The name of a Kafka error code a login can end with.
fn sasl_code_name(code: i16) -> String {
    match code {
        codes::UNSUPPORTED_SASL_MECHANISM => "UNSUPPORTED_SASL_MECHANISM".into(),
        codes::ILLEGAL_SASL_STATE => "ILLEGAL_SASL_STATE".into(),
        codes::SASL_AUTHENTICATION_FAILED => "SASL_AUTHENTICATION_FAILED".into(),
        other => format!("Kafka error {other}"),
    }
}

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

/// What a client talks through: a TCP stream, or TLS over one.
trait Transport: AsyncRead + AsyncWrite + Unpin + Send {}

impl<T: AsyncRead + AsyncWrite + Unpin + Send> Transport for T {}

/// A connection to one broker.
pub struct AsyncClient {
    stream: Box<dyn Transport>,
    correlation_id: i32,
}

impl std::fmt::Debug for AsyncClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncClient")
            .field("correlation_id", &self.correlation_id)
            .finish_non_exhaustive()
    }
}

/// Connecting gives up after this long.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// A request without an answer this long fails (fetches wait at most their `max_wait_ms`).
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

fn timed_out(what: &str) -> Error {
    Error::Io(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!("{what} timed out"),
    ))
}

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
    /// the configured CA and the host in `addr`), then a SASL login.
    pub async fn connect_with(addr: &str, security: &ClientSecurity) -> Result<AsyncClient> {
        let tcp = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr))
            .await
            .map_err(|_| timed_out("connecting"))??;
        tcp.set_nodelay(true)?;
        let stream: Box<dyn Transport> = if security.protocol.uses_tls() {
            let connector = tokio_rustls::TlsConnector::from(security.tls_config()?);
            let handshake = connector.connect(server_name(addr)?, tcp);
            let tls = tokio::time::timeout(CONNECT_TIMEOUT, handshake)
                .await
                .map_err(|_| timed_out("TLS handshake"))?
                .map_err(|e| Error::TlsHandshake(e.to_string()))?;
            Box::new(tls)
        } else {
            Box::new(tcp)
        };
        let mut client = AsyncClient {
            stream,
            correlation_id: 0,
        };
        if let Some(login) = &security.sasl {
            client.login(login).await?;
        }
        Ok(client)
    }

    /// Logs in with SaslHandshake v1 and SaslAuthenticate; a SCRAM server must prove it
    /// knows the password too.
    async fn login(&mut self, login: &SaslLogin) -> Result<()> {
        let mut handshake = SaslHandshakeRequest::default();
        handshake.mechanism = StrBytes::from_static_str(login.mechanism.name());
        let response: SaslHandshakeResponse =
            self.call(ApiKey::SaslHandshake, 1, &handshake).await?;
        if response.error_code != 0 {
            let offered: Vec<&str> = response.mechanisms.iter().map(|m| m.as_str()).collect();
            return Err(Error::Login(format!(
                "{} not offered ({}); the broker offers {}",
                login.mechanism,
                sasl_code_name(response.error_code),
                offered.join(", ")
            )));
        }
        let refused = |e: crate::auth::scram::Refused| Error::Login(e.to_string());
        match login.mechanism {
            SaslMechanism::Plain => {
                let token = format!("\0{}\0{}", login.username, login.password);
                self.authenticate(token.as_bytes()).await?;
            }
            SaslMechanism::Scram(m) => {
                let (mut scram, first) =
                    ScramClient::start(m, &login.username, login.password.as_bytes());
                let server_first = self.authenticate(&first).await?;
                let last = scram.finish(&server_first).map_err(refused)?;
                let server_final = self.authenticate(&last).await?;
                scram.verify(&server_final).map_err(refused)?;
            }
        }
        Ok(())
    }

    async fn authenticate(&mut self, token: &[u8]) -> Result<Bytes> {
        let mut request = SaslAuthenticateRequest::default();
        request.auth_bytes = Bytes::copy_from_slice(token);
        let response: SaslAuthenticateResponse =
            self.call(ApiKey::SaslAuthenticate, 2, &request).await?;
        if response.error_code != 0 {
            return Err(Error::Login(format!(
                "{}: {}",
                sasl_code_name(response.error_code),
                response.error_message.as_deref().unwrap_or("")
            )));
        }
        Ok(response.auth_bytes)
    }

    /// Sends `request` and reads its answer.
    pub(crate) async fn call<Req: Encodable, Resp: Decodable>(
        &mut self,
        key: ApiKey,
        version: i16,
        request: &Req,
    ) -> Result<Resp> {
        tokio::time::timeout(CALL_TIMEOUT, self.exchange(key, version, request))
            .await
            .map_err(|_| timed_out("request"))?
    }

    async fn exchange<Req: Encodable, Resp: Decodable>(
        &mut self,
        key: ApiKey,
        version: i16,
        request: &Req,
    ) -> Result<Resp> {
        self.correlation_id += 1;
        let mut header = RequestHeader::default();
        header.request_api_key = key as i16;
        header.request_api_version = version;
        header.correlation_id = self.correlation_id;
        header.client_id = Some(StrBytes::from_static_str("logd-cli"));
        let bad = crate::broker::malformed(key as i16, version);
        let mut body = BytesMut::new();
        header
            .encode(&mut body, key.request_header_version(version))
            .map_err(&bad)?;
        request.encode(&mut body, version).map_err(&bad)?;
        self.stream
            .write_all(&(body.len() as i32).to_be_bytes())
            .await?;
        self.stream.write_all(&body).await?;
        let mut size = [0u8; 4];
        self.stream.read_exact(&mut size).await?;
        let size = i32::from_be_bytes(size);
        if !(4..=1 << 30).contains(&size) {
            return Err(Error::FrameSize {
                size: size.into(),
                max: 1 << 30,
            });
        }
        let mut response = vec![0u8; size as usize];
        self.stream.read_exact(&mut response).await?;
        let mut response = Bytes::from(response);
        ResponseHeader::decode(&mut response, key.response_header_version(version))
            .map_err(crate::broker::malformed(key as i16, version))?;
        Resp::decode(&mut response, version).map_err(crate::broker::malformed(key as i16, version))
    }

    /// Topic names and partition counts (`None`: all topics); with `auto_create`, missing
    /// topics are created if the broker allows it (as producers ask).
    pub async fn metadata(
        &mut self,
        topics: Option<&[&str]>,
        auto_create: bool,
    ) -> Result<MetadataResponse, ClientError> {
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
        Ok(self.call(ApiKey::Metadata, METADATA, &request).await?)
    }

    /// The number of partitions of `topic` (created first if `auto_create` and the broker
    /// allows it).
    pub async fn partition_count(
        &mut self,
        topic: &str,
        auto_create: bool,
    ) -> Result<u32, ClientError> {
        let response = self.metadata(Some(&[topic]), auto_create).await?;
        let found = response.topics.first().ok_or_else(|| ClientError::Kafka {
            what: format!("topic {topic}"),
            code: codes::UNKNOWN_TOPIC_OR_PARTITION,
        })?;
        if found.error_code != 0 {
            return Err(ClientError::Kafka {
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
    ) -> Result<(), ClientError> {
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
            .call(ApiKey::CreateTopics, CREATE_TOPICS, &request)
            .await?;
        let Some(result) = response.topics.first() else {
            return Err(ClientError::Kafka {
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
        Err(ClientError::Kafka {
            what,
            code: result.error_code,
        })
    }

    /// Deletes a topic.
    pub async fn delete_topic(&mut self, topic: &str) -> Result<(), ClientError> {
        let mut request = DeleteTopicsRequest::default();
        request.topic_names = vec![name(topic)];
        request.timeout_ms = 30_000;
        let response: DeleteTopicsResponse = self
            .call(ApiKey::DeleteTopics, DELETE_TOPICS, &request)
            .await?;
        match response.responses.first().map(|t| t.error_code) {
            Some(0) => Ok(()),
            code => Err(ClientError::Kafka {
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
    ) -> Result<Option<i64>, ClientError> {
        let found = self.list_offsets(topic, &[partition], timestamp).await?;
        Ok(found.into_iter().next().and_then(|(_, offset)| offset))
    }

    /// What [`AsyncClient::list_offset`] gives for each of `partitions`, in one request, by
    /// partition; the first partition the broker answers with an error fails the call.
    pub async fn list_offsets(
        &mut self,
        topic: &str,
        partitions: &[i32],
        timestamp: i64,
    ) -> Result<BTreeMap<i32, Option<i64>>, ClientError> {
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
        let response: ListOffsetsResponse = self
            .call(ApiKey::ListOffsets, LIST_OFFSETS, &request)
            .await?;
        let mut found = BTreeMap::new();
        for answer in response.topics.iter().flat_map(|t| &t.partitions) {
            if answer.error_code != 0 {
                return Err(ClientError::Kafka {
                    what: format!("{topic}-{}", answer.partition_index),
                    code: answer.error_code,
                });
            }
            found.insert(
                answer.partition_index,
                (answer.offset >= 0).then_some(answer.offset),
            );
        }
        if let Some(missing) = partitions.iter().find(|p| !found.contains_key(p)) {
            return Err(ClientError::Kafka {
                what: format!("offsets of {topic}-{missing}"),
                code: -1,
            });
        }
        Ok(found)
    }

    /// The size in bytes of each partition of `topic` (DescribeLogDirs), by partition.
    pub async fn partition_sizes(&mut self, topic: &str) -> Result<Vec<(i32, i64)>, ClientError> {
        let mut wanted = DescribableLogDirTopic::default();
        wanted.topic = name(topic);
        wanted.partitions = (0..self.partition_count(topic, false).await? as i32).collect();
        let mut request = DescribeLogDirsRequest::default();
        request.topics = Some(vec![wanted]);
        let response: DescribeLogDirsResponse = self
            .call(ApiKey::DescribeLogDirs, DESCRIBE_LOG_DIRS, &request)
            .await?;
        let mut sizes: Vec<(i32, i64)> = response
            .results
            .iter()
            .flat_map(|dir| &dir.topics)
            .filter(|t| &*t.name == topic)
            .flat_map(|t| &t.partitions)
            .map(|p| (p.partition_index, p.partition_size))
            .collect();
        sizes.sort();
        Ok(sizes)
    }

    /// A producer id for an idempotent producer, epoch 0 (InitProducerId v1, no
    /// transactional id).
    pub async fn init_producer_id(&mut self) -> Result<i64, ClientError> {
        let mut request = InitProducerIdRequest::default();
        // Null, as Kafka's idempotent producers send it (the codec's default is ""), which a
        // broker with ACLs would check as a transactional id.
        request.transactional_id = None;
        request.transaction_timeout_ms = 60_000;
        let response: InitProducerIdResponse = self
            .call(ApiKey::InitProducerId, INIT_PRODUCER_ID, &request)
            .await?;
        if response.error_code != 0 {
            return Err(ClientError::Kafka {
                what: "a producer id".into(),
                code: response.error_code,
            });
        }
        Ok(response.producer_id.0)
    }

    /// The idempotent producers every partition of `topic` tracks (DescribeProducers), by
    /// partition and producer id.
    pub async fn producers(&mut self, topic: &str) -> Result<Vec<ActiveProducer>, ClientError> {
        let mut wanted = DescribeProducersTopic::default();
        wanted.name = name(topic);
        wanted.partition_indexes = (0..self.partition_count(topic, false).await? as i32).collect();
        let mut request = DescribeProducersRequest::default();
        request.topics = vec![wanted];
        let response: DescribeProducersResponse = self
            .call(ApiKey::DescribeProducers, DESCRIBE_PRODUCERS, &request)
            .await?;
        let mut producers = Vec::new();
        for partition in response.topics.iter().flat_map(|t| &t.partitions) {
            if partition.error_code != 0 {
                return Err(ClientError::Kafka {
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
    pub async fn offsets(
        &mut self,
        topic: &str,
        partition: i32,
    ) -> Result<PartitionOffsets, ClientError> {
        let found = self.offsets_of(topic, &[partition]).await?;
        // `offsets_of` answers for every partition asked about or fails.
        found
            .get(&partition)
            .copied()
            .ok_or_else(|| ClientError::Kafka {
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
    ) -> Result<BTreeMap<i32, PartitionOffsets>, ClientError> {
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
    pub async fn produce(
        &mut self,
        topic: &str,
        partition: i32,
        batches: Vec<u8>,
    ) -> Result<i64, ClientError> {
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
        let response: ProduceResponse = self.call(ApiKey::Produce, PRODUCE, &request).await?;
        let answer = response
            .responses
            .first()
            .and_then(|t| t.partition_responses.first())
            .ok_or_else(|| ClientError::Kafka {
                what: format!("produce to {topic}-{partition}"),
                code: -1,
            })?;
        match answer.error_code {
            0 => Ok(answer.base_offset),
            code => Err(ClientError::Kafka {
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
    ) -> Result<(Bytes, i64), ClientError> {
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
        let response: FetchResponse = self.call(ApiKey::Fetch, FETCH, &request).await?;
        let data = response
            .responses
            .first()
            .and_then(|t| t.partitions.first())
            .ok_or_else(|| ClientError::Kafka {
                what: format!("fetch {topic}-{partition}"),
                code: -1,
            })?;
        match data.error_code {
            0 => Ok((
                data.records.clone().unwrap_or_default(),
                data.high_watermark,
            )),
            code => Err(ClientError::Kafka {
                what: format!("fetch {topic}-{partition} at {offset}"),
                code,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_named_as_kafka_names_them_with_what_they_mean() {
        let error = ClientError::Kafka {
            what: "orders-1".into(),
            code: codes::NOT_LEADER_OR_FOLLOWER,
        };
        assert_eq!(
            error.to_string(),
            "orders-1 failed with NOT_LEADER_OR_FOLLOWER (Kafka error 6): the broker asked does \
             not lead that partition (leadership moved); try again"
        );
        assert!(code_name(codes::NOT_COORDINATOR).starts_with("failed with NOT_COORDINATOR ("));
        assert!(code_name(codes::REBALANCE_IN_PROGRESS).contains("the group is rebalancing"));
        // A code without a sentence of ours still gets Kafka's name.
        assert_eq!(
            code_name(ResponseError::InvalidTxnState.code()),
            "failed with INVALID_TXN_STATE (Kafka error 48)"
        );
        assert_eq!(
            code_name(999),
            "failed with an unknown error (Kafka error 999)"
        );
    }
}
