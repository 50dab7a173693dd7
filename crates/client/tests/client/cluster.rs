//! The client against a Kafka cluster of three brokers (librdkafka's mock cluster, in this
//! process): produce, fetch and offsets go to each partition's leader, group calls to the
//! group's coordinator, whichever broker the client bootstrapped from; a leader that moves
//! mid-run is followed; a created topic is waited for until the brokers list it, and a leader
//! that has not yet heard of a listed topic is asked again; a broker that
//! goes away, or a leader the metadata does not list, ends a call with a clear error within
//! the client's retry time, never a hang.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::create_topics_response::CreatableTopicResult;
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{
    ApiKey, BrokerId, CreateTopicsResponse, MetadataRequest, MetadataResponse, ProduceResponse,
    RequestHeader, ResponseHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use logd_client::{AsyncClient, Error as ClientError};
use logd_storage::batch::{BatchBuilder, Compression, Record};
use rdkafka::mocking::{MockCluster, MockCoordinator};

const TOPIC: &str = "orders";
const GROUP: &str = "billing";

fn batch(value: &str) -> Vec<u8> {
    let mut builder = BatchBuilder::new(Compression::None);
    builder.push(1_700_000_000_000, None, Some(value.as_bytes()), &[]);
    builder.build(0).unwrap()
}

fn values(bytes: &bytes::Bytes) -> Vec<String> {
    Record::decode_all(bytes, 1 << 20)
        .unwrap()
        .into_iter()
        .map(|r| String::from_utf8(r.value.unwrap().to_vec()).unwrap())
        .collect()
}

/// Three brokers; six partitions led by brokers 1 and 2 only; the group's coordinator on
/// broker 3, which leads nothing of the topic. Returns the cluster and broker 3's address.
fn cluster() -> (
    MockCluster<'static, rdkafka::producer::DefaultProducerContext>,
    String,
) {
    let mock = MockCluster::new(3).unwrap();
    mock.create_topic(TOPIC, 6, 1).unwrap();
    for partition in 0..6 {
        mock.partition_leader(TOPIC, partition, Some(1 + partition % 2))
            .unwrap();
    }
    mock.coordinator(MockCoordinator::Group(GROUP.into()), 3)
        .unwrap();
    let runtime = runtime();
    let bootstrap = mock.bootstrap_servers();
    let first = bootstrap.split(',').next().unwrap().to_owned();
    let broker3 = runtime.block_on(async {
        let mut client = AsyncClient::connect(&first).await.unwrap();
        let metadata = client.metadata(None, false).await.unwrap();
        let broker = metadata.brokers.iter().find(|b| b.node_id.0 == 3).unwrap();
        format!("{}:{}", broker.host.as_str(), broker.port)
    });
    (mock, broker3)
}

/// The group's committed offsets of `partitions`, as librdkafka reads them (the mock cluster
/// answers an OffsetFetch for every partition, which `AsyncClient::committed_offsets` sends,
/// with a null list).
fn committed(
    mock: &MockCluster<'static, rdkafka::producer::DefaultProducerContext>,
    partitions: &[i32],
) -> Vec<i64> {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    let consumer: BaseConsumer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", mock.bootstrap_servers())
        .set("group.id", GROUP)
        .create()
        .unwrap();
    let mut wanted = rdkafka::TopicPartitionList::new();
    for &p in partitions {
        wanted.add_partition(TOPIC, p);
    }
    let found = consumer
        .committed_offsets(wanted, Duration::from_secs(10))
        .unwrap();
    found
        .elements()
        .iter()
        .map(|e| match e.offset() {
            rdkafka::Offset::Offset(o) => o,
            other => panic!("no commit: {other:?}"),
        })
        .collect()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn calls_reach_each_partitions_leader_and_the_groups_coordinator_and_follow_a_moved_leader() {
    let (mock, broker3) = cluster();
    runtime().block_on(async {
        // Bootstrapped from broker 3, which leads no partition: every produce and fetch must
        // go elsewhere, or the mock answers NOT_LEADER_OR_FOLLOWER.
        let mut client = AsyncClient::connect(&broker3).await.unwrap();
        assert_eq!(client.partition_count(TOPIC, false).await.unwrap(), 6);
        for partition in 0..6 {
            let offset = client
                .produce(TOPIC, partition, batch(&format!("first-{partition}")))
                .await
                .unwrap();
            assert_eq!(offset, 0, "partition {partition}");
        }
        let offsets = client.offsets_of(TOPIC, &[0, 1, 2, 3, 4, 5]).await.unwrap();
        for (partition, found) in &offsets {
            assert_eq!(
                (found.earliest, found.latest),
                (0, 1),
                "partition {partition}"
            );
        }
        for partition in 0..6 {
            let (bytes, high_watermark) = client.fetch(TOPIC, partition, 0, 100).await.unwrap();
            assert_eq!(values(&bytes), [format!("first-{partition}")]);
            assert_eq!(high_watermark, 1);
        }

        // The group's calls go to broker 3, its coordinator.
        let commits: Vec<(String, i32, i64)> = (0..6).map(|p| (TOPIC.to_owned(), p, 1)).collect();
        client.commit_offsets(GROUP, &commits).await.unwrap();
        assert_eq!(committed(&mock, &[0, 1, 2, 3, 4, 5]), [1; 6]);

        // Partition 0's leadership moves from broker 1 to broker 2 mid-run: the client's
        // cached route is stale, the broker says so, and the client follows.
        mock.partition_leader(TOPIC, 0, Some(2)).unwrap();
        let offset = client.produce(TOPIC, 0, batch("second-0")).await.unwrap();
        assert_eq!(offset, 1);
        let (bytes, _) = client.fetch(TOPIC, 0, 1, 100).await.unwrap();
        assert_eq!(values(&bytes), ["second-0"]);
        let latest: BTreeMap<i32, Option<i64>> =
            client.list_offsets(TOPIC, &[0, 1], -1).await.unwrap();
        assert_eq!(latest, BTreeMap::from([(0, Some(2)), (1, Some(1))]));

        // The coordinator moves too.
        mock.coordinator(MockCoordinator::Group(GROUP.into()), 1)
            .unwrap();
        let moved = vec![(TOPIC.to_owned(), 0, 2)];
        client.commit_offsets(GROUP, &moved).await.unwrap();
        assert_eq!(committed(&mock, &[0]), [2]);
    });
}

#[test]
fn a_leader_that_goes_away_ends_the_call_with_an_error_not_a_hang() {
    let (mock, broker3) = cluster();
    runtime().block_on(async {
        let mut client = AsyncClient::connect(&broker3).await.unwrap();
        client.produce(TOPIC, 1, batch("before")).await.unwrap();
        // Partition 1's leader, broker 2, goes down and nothing takes over.
        mock.broker_down(2).unwrap();
        let started = Instant::now();
        let failed = client.produce(TOPIC, 1, batch("after")).await;
        let took = started.elapsed();
        assert!(failed.is_err(), "{failed:?}");
        assert!(took < Duration::from_secs(40), "{took:?}");
        // A partition whose leader is up still takes records.
        client.produce(TOPIC, 0, batch("elsewhere")).await.unwrap();
        // A partition without a leader is named with Kafka's error and what it means.
        mock.broker_up(2).unwrap();
        mock.partition_leader(TOPIC, 3, None).unwrap();
        let error = client.fetch(TOPIC, 3, 0, 100).await.unwrap_err();
        assert!(matches!(error, ClientError::Kafka { .. }), "{error:?}");
        let said = error.to_string();
        assert!(
            said.contains("LEADER_NOT_AVAILABLE") || said.contains("NOT_LEADER_OR_FOLLOWER"),
            "{said}"
        );
    });
}

#[test]
fn a_leader_the_metadata_does_not_list_ends_the_call_with_an_error_not_a_hang() {
    // A "cluster" of two brokers (both this listener) whose Metadata names broker 7 as the
    // leader of orders-0.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || answer_with_an_unknown_leader(stream, port));
        }
    });
    runtime().block_on(async {
        let mut client = AsyncClient::connect(&format!("127.0.0.1:{port}"))
            .await
            .unwrap();
        let started = Instant::now();
        let error = client.produce(TOPIC, 0, batch("x")).await.unwrap_err();
        let took = started.elapsed();
        assert!(took < Duration::from_secs(30), "{took:?}");
        let said = error.to_string();
        assert!(
            said.contains("broker 7, which the cluster's metadata does not list")
                && said.contains("LEADER_NOT_AVAILABLE"),
            "{said}"
        );
    });
}

/// Answers every request on `stream` (Metadata is all the client sends before it gives up)
/// with brokers 1 and 2 on `port` and orders-0 led by broker 7.
fn answer_with_an_unknown_leader(stream: TcpStream, port: u16) {
    serve(stream, |key, _| {
        assert_eq!(key, ApiKey::Metadata);
        let mut partition = MetadataResponsePartition::default();
        partition.leader_id = BrokerId(7);
        Answer::Metadata(brokers(port, vec![topic(TOPIC, 0, vec![partition])]))
    });
}

#[test]
fn a_created_topic_is_usable_when_creation_returns_though_brokers_learn_of_it_late() {
    // A cluster whose brokers (this listener) answer CreateTopics at once but list the new
    // topic in their metadata only from the fourth Metadata request naming it, as a Kafka
    // broker does until the controller's record reaches it.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let asked = Arc::new(AtomicUsize::new(0));
    let counted = asked.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let asked = counted.clone();
            std::thread::spawn(move || {
                serve(stream, |key, mut body| match key {
                    ApiKey::CreateTopics => {
                        let mut result = CreatableTopicResult::default();
                        result.name = TopicName(StrBytes::from_static_str("fresh"));
                        let mut response = CreateTopicsResponse::default();
                        response.topics = vec![result];
                        Answer::CreateTopics(response)
                    }
                    ApiKey::Metadata => {
                        let request = MetadataRequest::decode(&mut body, 4).unwrap();
                        let topics = match request.topics.as_deref() {
                            Some([_]) if asked.fetch_add(1, Ordering::SeqCst) < 3 => {
                                vec![topic("fresh", 3, vec![])]
                            }
                            Some([_]) => {
                                let mut partition = MetadataResponsePartition::default();
                                partition.leader_id = BrokerId(1);
                                vec![topic("fresh", 0, vec![partition])]
                            }
                            _ => vec![],
                        };
                        Answer::Metadata(brokers(port, topics))
                    }
                    other => panic!("{other:?} not expected"),
                })
            });
        }
    });
    runtime().block_on(async {
        let mut client = AsyncClient::connect(&format!("127.0.0.1:{port}"))
            .await
            .unwrap();
        client.create_topic("fresh", 1, &[]).await.unwrap();
        assert_eq!(client.partition_count("fresh", false).await.unwrap(), 1);
    });
    assert!(asked.load(Ordering::SeqCst) >= 4, "creation did not wait");
}

#[test]
fn a_leader_that_has_not_yet_heard_of_a_listed_topic_is_asked_again() {
    // Brokers (this listener) whose metadata lists "late" led by broker 2, and whose leader
    // answers the first three produces UNKNOWN_TOPIC_OR_PARTITION, as a Kafka broker does
    // between a topic's creation on first use and the controller's record reaching it (seen
    // by `logd dlq replay` against a Kafka cluster of three).
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let produces = Arc::new(AtomicUsize::new(0));
    let counted = produces.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let produces = counted.clone();
            std::thread::spawn(move || {
                serve(stream, |key, _| match key {
                    ApiKey::Metadata => {
                        let mut partition = MetadataResponsePartition::default();
                        partition.leader_id = BrokerId(2);
                        Answer::Metadata(brokers(port, vec![topic("late", 0, vec![partition])]))
                    }
                    ApiKey::Produce => {
                        let unknown = produces.fetch_add(1, Ordering::SeqCst) < 3;
                        let mut answer = PartitionProduceResponse::default();
                        answer.error_code = if unknown { 3 } else { 0 };
                        answer.base_offset = if unknown { -1 } else { 41 };
                        let mut t = TopicProduceResponse::default();
                        t.name = TopicName(StrBytes::from_static_str("late"));
                        t.partition_responses = vec![answer];
                        let mut response = ProduceResponse::default();
                        response.responses = vec![t];
                        Answer::Produce(response)
                    }
                    other => panic!("{other:?} not expected"),
                })
            });
        }
    });
    runtime().block_on(async {
        let mut client = AsyncClient::connect(&format!("127.0.0.1:{port}"))
            .await
            .unwrap();
        assert_eq!(client.produce("late", 0, batch("x")).await.unwrap(), 41);
    });
    assert_eq!(
        produces.load(Ordering::SeqCst),
        4,
        "asked once after it knew"
    );
}

/// A response the fake brokers send.
enum Answer {
    Metadata(MetadataResponse),
    CreateTopics(CreateTopicsResponse),
    Produce(ProduceResponse),
}

/// Brokers 1 and 2, both on `port`, 1 the controller, with `topics`.
fn brokers(port: u16, topics: Vec<MetadataResponseTopic>) -> MetadataResponse {
    let mut response = MetadataResponse::default();
    response.brokers = [1, 2]
        .map(|id| {
            let mut broker = MetadataResponseBroker::default();
            broker.node_id = BrokerId(id);
            broker.host = StrBytes::from_static_str("127.0.0.1");
            broker.port = port.into();
            broker
        })
        .to_vec();
    response.controller_id = BrokerId(1);
    response.topics = topics;
    response
}

fn topic(
    name: &'static str,
    error_code: i16,
    partitions: Vec<MetadataResponsePartition>,
) -> MetadataResponseTopic {
    let mut topic = MetadataResponseTopic::default();
    topic.name = Some(TopicName(StrBytes::from_static_str(name)));
    topic.error_code = error_code;
    topic.partitions = partitions;
    topic
}

/// Answers each request on `stream` with what `answer` makes of its key and body, until the
/// client hangs up.
fn serve(mut stream: TcpStream, answer: impl Fn(ApiKey, Bytes) -> Answer) {
    loop {
        let mut size = [0u8; 4];
        if stream.read_exact(&mut size).is_err() {
            return;
        }
        let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
        stream.read_exact(&mut body).unwrap();
        let key = ApiKey::try_from(i16::from_be_bytes([body[0], body[1]])).unwrap();
        let version = i16::from_be_bytes([body[2], body[3]]);
        let mut body = Bytes::from(body);
        let header = RequestHeader::decode(&mut body, key.request_header_version(version)).unwrap();
        let mut out = BytesMut::new();
        let mut answer_header = ResponseHeader::default();
        answer_header.correlation_id = header.correlation_id;
        answer_header
            .encode(&mut out, key.response_header_version(version))
            .unwrap();
        match answer(key, body) {
            Answer::Metadata(response) => response.encode(&mut out, version).unwrap(),
            Answer::CreateTopics(response) => response.encode(&mut out, version).unwrap(),
            Answer::Produce(response) => response.encode(&mut out, version).unwrap(),
        }
        let mut frame = (out.len() as i32).to_be_bytes().to_vec();
        frame.extend_from_slice(&out);
        if stream.write_all(&frame).is_err() {
            return;
        }
    }
}
