//! Client quotas on the wire: a producer over its byte rate is answered at once with the wait
//! in `throttle_time_ms`, its records stored, and its connection muted for that wait even when
//! it sends more meanwhile; a consumer over its byte rate gets records, then the wait, and an
//! empty answer while it still owes; DescribeClientQuotas and AlterClientQuotas check and
//! refuse as Kafka does.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable};
use logd::{Config, Log, TopicConfig};
use logd_kafka::acl::{Authorizer, AuthorizerConfig};
use logd_kafka::codes;
use logd_kafka::quota::{QuotaEntity, QuotaKey};
use logd_kafka::{Broker, BrokerConfig};
use logd_storage::batch::{BatchBuilder, Compression};

use crate::common::{call, s};

fn broker(dir: &std::path::Path) -> Broker {
    let log = Log::open(dir, Config::default()).unwrap();
    log.create_topic("t", TopicConfig::default()).unwrap();
    Broker::new(log, BrokerConfig::default())
}

fn client_id(name: &str) -> QuotaEntity {
    QuotaEntity {
        user: None,
        client_id: Some(Some(name.into())),
    }
}

fn batch(value_len: usize) -> Bytes {
    let mut builder = BatchBuilder::new(Compression::None);
    builder.push(0, None, Some(&vec![b'x'; value_len]), &[]);
    Bytes::from(builder.build(0).unwrap())
}

fn produce_request(value_len: usize) -> ProduceRequest {
    let mut partition = produce_request::PartitionProduceData::default();
    partition.records = Some(batch(value_len));
    let mut topic = produce_request::TopicProduceData::default();
    topic.name = TopicName(s("t"));
    topic.partition_data = vec![partition];
    let mut request = ProduceRequest::default();
    request.acks = 1;
    request.timeout_ms = 10_000;
    request.topic_data = vec![topic];
    request
}

/// Writes a Produce v9 request from client `raw` with correlation id `id`.
fn send_produce(stream: &mut TcpStream, id: i32, value_len: usize) {
    let mut header = RequestHeader::default();
    header.request_api_key = ApiKey::Produce as i16;
    header.request_api_version = 9;
    header.correlation_id = id;
    header.client_id = Some(s("raw"));
    let mut frame = BytesMut::new();
    header
        .encode(&mut frame, ApiKey::Produce.request_header_version(9))
        .unwrap();
    produce_request(value_len).encode(&mut frame, 9).unwrap();
    stream
        .write_all(&(frame.len() as i32).to_be_bytes())
        .unwrap();
    stream.write_all(&frame).unwrap();
}

/// Reads a Produce v9 response: its correlation id, throttle time and first partition's code.
fn read_produce(stream: &mut TcpStream) -> (i32, i32, i16) {
    let mut size = [0u8; 4];
    stream.read_exact(&mut size).unwrap();
    let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
    stream.read_exact(&mut body).unwrap();
    let mut body = Bytes::from(body);
    let header =
        ResponseHeader::decode(&mut body, ApiKey::Produce.response_header_version(9)).unwrap();
    let response = ProduceResponse::decode(&mut body, 9).unwrap();
    assert!(!body.has_remaining());
    let code = response.responses[0].partition_responses[0].error_code;
    (header.correlation_id, response.throttle_time_ms, code)
}

#[test]
fn a_producer_over_its_quota_is_told_to_wait_and_muted_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Arc::new(broker(dir.path()));
    broker
        .quotas()
        .alter(&[(
            client_id("raw"),
            vec![(QuotaKey::ProducerByteRate, Some(10_000.0))],
        )])
        .unwrap();
    let addr = crate::served::serve(broker.clone());
    let mut stream = TcpStream::connect(&addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    // Within the one second of quota a quiet client may send at once.
    send_produce(&mut stream, 1, 6_000);
    assert_eq!(read_produce(&mut stream), (1, 0, 0));
    // Over it: stored, and told to wait about (12 KB - 10 KB) / 10 KB/s.
    send_produce(&mut stream, 2, 6_000);
    let sent = Instant::now();
    send_produce(&mut stream, 3, 10);
    let (id, wait, code) = read_produce(&mut stream);
    let answered = sent.elapsed();
    assert_eq!((id, code), (2, 0));
    assert!((150..=400).contains(&wait), "throttle_time_ms {wait}");
    assert!(
        answered < Duration::from_millis(150),
        "answered after {answered:?}"
    );
    // The request sent meanwhile is read only after the wait, though it was already there.
    let (id, _, code) = read_produce(&mut stream);
    let second = sent.elapsed();
    assert_eq!((id, code), (3, 0));
    assert!(
        second >= Duration::from_millis(wait as u64 * 9 / 10),
        "the muted connection answered after {second:?}, the wait was {wait} ms"
    );
    let stored = broker.log().partition("t", 0).unwrap().end_offset().0;
    assert_eq!(stored, 3);
}

fn fetch(broker: &Broker, offset: i64) -> FetchResponse {
    let mut partition = FetchPartition::default();
    partition.fetch_offset = offset;
    partition.partition_max_bytes = 1 << 20;
    let mut topic = FetchTopic::default();
    topic.topic = TopicName(s("t"));
    topic.partitions = vec![partition];
    let mut request = FetchRequest::default();
    request.replica_id = BrokerId(-1);
    request.max_wait_ms = 0;
    request.min_bytes = 1;
    request.max_bytes = 50 << 20;
    request.topics = vec![topic];
    call(broker, ApiKey::Fetch, 11, &request)
}

/// The records' bytes a fetch answered with.
fn fetched(response: &FetchResponse) -> usize {
    response
        .responses
        .iter()
        .flat_map(|t| &t.partitions)
        .map(|p| p.records.as_ref().map_or(0, Bytes::len))
        .sum()
}

#[test]
fn a_consumer_over_its_quota_gets_records_then_waits() {
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path());
    for _ in 0..4 {
        broker
            .log()
            .append("t", 0, &mut batch(4_000).to_vec())
            .unwrap();
    }
    // `call` sends client id "tester".
    broker
        .quotas()
        .alter(&[(
            client_id("tester"),
            vec![(QuotaKey::ConsumerByteRate, Some(5_000.0))],
        )])
        .unwrap();
    // Capped to one second of quota: one batch (the first may pass the cap), no wait.
    let first = fetch(&broker, 0);
    let one = fetched(&first);
    assert!((4_000..5_000).contains(&one), "{one} bytes");
    assert_eq!(first.throttle_time_ms, 0);
    // The next batch comes, and with it the wait it owes.
    let second = fetch(&broker, 1);
    assert_eq!(fetched(&second), one);
    assert!(
        (400..=800).contains(&second.throttle_time_ms),
        "{}",
        second.throttle_time_ms
    );
    // Asked again before the wait is over: nothing, and the wait left.
    let third = fetch(&broker, 2);
    assert_eq!(fetched(&third), 0);
    assert!(third.responses.is_empty());
    assert!(third.throttle_time_ms > 0 && third.throttle_time_ms <= second.throttle_time_ms);
}

/// A ShareFetch (v1, no wait) of `t`-0 by member `m` of group `g` at `epoch`.
fn share_fetch(broker: &Broker, epoch: i32) -> ShareFetchResponse {
    let (id, _) = broker.log().topic_id_and_partitions("t").unwrap();
    let mut topic = share_fetch_request::FetchTopic::default();
    topic.topic_id = uuid::Uuid::from_bytes(id);
    topic.partitions = vec![share_fetch_request::FetchPartition::default()];
    let mut request = ShareFetchRequest::default();
    request.group_id = Some(GroupId(s("g")));
    request.member_id = Some(s("m"));
    request.share_session_epoch = epoch;
    request.max_records = 1_000;
    request.max_bytes = 50 << 20;
    request.topics = vec![topic];
    call(broker, ApiKey::ShareFetch, 1, &request)
}

#[test]
fn a_share_consumer_over_its_quota_is_capped_charged_and_told_to_wait() {
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path());
    for _ in 0..4 {
        broker
            .log()
            .append("t", 0, &mut batch(4_000).to_vec())
            .unwrap();
    }
    let earliest = [("share.auto.offset.reset", Some("earliest"))];
    broker
        .log()
        .alter_group_configs("g", &earliest, false)
        .unwrap();
    broker
        .quotas()
        .alter(&[(
            client_id("tester"),
            vec![(QuotaKey::ConsumerByteRate, Some(5_000.0))],
        )])
        .unwrap();
    let acquired = |r: &ShareFetchResponse| -> Vec<(i64, i64)> {
        r.responses
            .iter()
            .flat_map(|t| &t.partitions)
            .flat_map(|p| &p.acquired_records)
            .map(|a| (a.first_offset, a.last_offset))
            .collect()
    };
    // Capped to one second of quota, as Kafka caps a ShareFetch's max bytes: one batch.
    let first = share_fetch(&broker, 0);
    assert_eq!(first.error_code, 0);
    assert_eq!(acquired(&first), [(0, 0)]);
    assert_eq!(first.throttle_time_ms, 0);
    // The next comes, charged, with the wait it owes.
    let second = share_fetch(&broker, 1);
    assert_eq!(acquired(&second), [(1, 1)]);
    assert!(
        (400..=900).contains(&second.throttle_time_ms),
        "{}",
        second.throttle_time_ms
    );
}

/// One entity's (type, name) parts and its ops (key, value, remove).
type Alteration<'a> = (Vec<(&'a str, Option<&'a str>)>, Vec<(&'a str, f64, bool)>);

fn alter(broker: &Broker, entries: Vec<Alteration<'_>>, validate_only: bool) -> Vec<(i16, String)> {
    let mut request = AlterClientQuotasRequest::default();
    request.validate_only = validate_only;
    request.entries = entries
        .into_iter()
        .map(|(entity, ops)| {
            let mut entry = alter_client_quotas_request::EntryData::default();
            entry.entity = entity
                .into_iter()
                .map(|(t, name)| {
                    let mut e = alter_client_quotas_request::EntityData::default();
                    e.entity_type = s(t);
                    e.entity_name = name.map(s);
                    e
                })
                .collect();
            entry.ops = ops
                .into_iter()
                .map(|(key, value, remove)| {
                    let mut op = alter_client_quotas_request::OpData::default();
                    op.key = s(key);
                    op.value = value;
                    op.remove = remove;
                    op
                })
                .collect();
            entry
        })
        .collect();
    let response: AlterClientQuotasResponse = call(broker, ApiKey::AlterClientQuotas, 1, &request);
    response
        .entries
        .iter()
        .map(|e| {
            (
                e.error_code,
                e.error_message.as_deref().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

/// DescribeClientQuotas with `components` (type, match type, match): the error, or each
/// entity (as `type=name` pairs, `<default>` for null) with its values.
fn describe(
    broker: &Broker,
    components: &[(&str, i8, Option<&str>)],
    strict: bool,
) -> Result<Vec<String>, (i16, String)> {
    let mut request = DescribeClientQuotasRequest::default();
    request.strict = strict;
    request.components = components
        .iter()
        .map(|(t, match_type, name)| {
            let mut c = describe_client_quotas_request::ComponentData::default();
            c.entity_type = s(t);
            c.match_type = *match_type;
            c._match = name.map(s);
            c
        })
        .collect();
    let response: DescribeClientQuotasResponse =
        call(broker, ApiKey::DescribeClientQuotas, 1, &request);
    if response.error_code != 0 {
        return Err((
            response.error_code,
            response.error_message.as_deref().unwrap_or("").to_owned(),
        ));
    }
    let mut entries: Vec<String> = response
        .entries
        .unwrap()
        .iter()
        .map(|e| {
            let entity: Vec<String> = e
                .entity
                .iter()
                .map(|p| {
                    format!(
                        "{}={}",
                        p.entity_type.as_str(),
                        p.entity_name.as_deref().unwrap_or("<default>")
                    )
                })
                .collect();
            let values: Vec<String> = e
                .values
                .iter()
                .map(|v| format!("{}={}", v.key.as_str(), v.value))
                .collect();
            format!("{} {}", entity.join(","), values.join(","))
        })
        .collect();
    entries.sort();
    Ok(entries)
}

#[test]
fn the_quota_apis_check_filter_and_refuse_as_kafka() {
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path());
    let ok = (0, String::new());
    // validate_only stores nothing.
    let checked = alter(
        &broker,
        vec![(
            vec![("user", Some("alice"))],
            vec![("producer_byte_rate", 1000.0, false)],
        )],
        true,
    );
    assert_eq!(checked, vec![ok.clone()]);
    assert_eq!(describe(&broker, &[], false), Ok(vec![]));
    let results = alter(
        &broker,
        vec![
            (
                vec![("user", Some("alice"))],
                vec![("producer_byte_rate", 1000.0, false)],
            ),
            (
                vec![("user", Some("alice")), ("client-id", None)],
                vec![("request_percentage", 12.5, false)],
            ),
            (
                vec![("client-id", None)],
                vec![("consumer_byte_rate", 2000.0, false)],
            ),
            (
                vec![("user", Some("alice"))],
                vec![("consumer_byte_rate", 1.0, false)],
            ),
            (
                vec![("ip", Some("10.0.0.1"))],
                vec![("connection_creation_rate", 5.0, false)],
            ),
            (
                vec![("client-id", Some("x"))],
                vec![
                    ("producer_byte_rate", 5.0, false),
                    ("producer_byte_rate", 6.0, false),
                ],
            ),
            (
                vec![("client-id", Some("y"))],
                vec![("producer_byte_rate", 0.0, false)],
            ),
            // Removing what is not set is nothing to do.
            (
                vec![("client-id", Some("z"))],
                vec![("producer_byte_rate", 0.0, true)],
            ),
        ],
        false,
    );
    let codes_and_words: Vec<(i16, &str)> = vec![
        (0, ""),
        (0, ""),
        (0, ""),
        (
            codes::INVALID_REQUEST,
            "Ignoring duplicate entity user=alice",
        ),
        (codes::INVALID_REQUEST, "does not enforce ip quotas"),
        (
            codes::INVALID_REQUEST,
            "Duplicate quota key producer_byte_rate",
        ),
        (
            codes::INVALID_REQUEST,
            "Quota producer_byte_rate must be greater than 0",
        ),
        (0, ""),
    ];
    assert_eq!(results.len(), codes_and_words.len());
    for ((code, message), (want_code, words)) in results.iter().zip(&codes_and_words) {
        assert_eq!(code, want_code, "{message}");
        assert!(message.contains(words), "{message} lacks {words}");
    }
    let all = describe(&broker, &[], false).unwrap();
    assert_eq!(
        all,
        vec![
            "client-id=<default> consumer_byte_rate=2000",
            "user=alice producer_byte_rate=1000",
            "user=alice,client-id=<default> request_percentage=12.5",
        ]
    );
    // Kafka's filters: one name, the default, any name; strict allows no other type.
    assert_eq!(
        describe(&broker, &[("user", 0, Some("alice"))], false)
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        describe(&broker, &[("user", 0, Some("alice"))], true).unwrap(),
        vec![all[1].clone()]
    );
    assert_eq!(
        describe(&broker, &[("client-id", 1, None)], false).unwrap(),
        vec![all[0].clone(), all[2].clone()]
    );
    assert_eq!(
        describe(&broker, &[("client-id", 2, None)], true).unwrap(),
        vec![all[0].clone()]
    );
    assert_eq!(
        describe(&broker, &[("user", 0, Some("bob"))], false).unwrap(),
        Vec::<String>::new()
    );
    for (components, code, words) in [
        (
            vec![("user", 0, None)],
            codes::INVALID_REQUEST,
            "MATCH_TYPE_EXACT, but set match string to null",
        ),
        (
            vec![("user", 1, Some("a"))],
            codes::INVALID_REQUEST,
            "MATCH_TYPE_DEFAULT, but also specified a match string",
        ),
        (
            vec![("user", 7, None)],
            codes::INVALID_REQUEST,
            "Unknown match type 7",
        ),
        (
            vec![("user", 2, None), ("user", 2, None)],
            codes::INVALID_REQUEST,
            "cannot appear more than once",
        ),
        (
            vec![("group", 2, None)],
            codes::UNSUPPORTED_VERSION,
            "Unsupported entity type group",
        ),
        (
            vec![("ip", 2, None), ("user", 2, None)],
            codes::INVALID_REQUEST,
            "IP filter component should not be used",
        ),
    ] {
        let (got, message) = describe(&broker, &components, false).unwrap_err();
        assert_eq!(got, code, "{components:?}: {message}");
        assert!(message.contains(words), "{message}");
    }
    // The quotas were stored: a broker reopened on the directory has them.
    drop(broker);
    let reopened = Broker::new(
        Log::open(dir.path(), Config::default()).unwrap(),
        BrokerConfig::default(),
    );
    assert_eq!(describe(&reopened, &[], false).unwrap(), all);
}

#[test]
fn the_quota_apis_need_the_cluster_configs_permissions() {
    let dir = tempfile::tempdir().unwrap();
    let authorizer = Arc::new(Authorizer::open(dir.path(), AuthorizerConfig::default()).unwrap());
    let broker = broker(dir.path()).with_authorizer(authorizer);
    assert_eq!(
        describe(&broker, &[], false).unwrap_err().0,
        codes::CLUSTER_AUTHORIZATION_FAILED
    );
    let refused = alter(
        &broker,
        vec![(
            vec![("user", Some("a"))],
            vec![("producer_byte_rate", 1.0, false)],
        )],
        false,
    );
    assert_eq!(refused[0].0, codes::CLUSTER_AUTHORIZATION_FAILED);
    assert!(broker.quotas().entries().is_empty());
}

#[test]
fn a_broker_that_could_not_read_its_quotas_refuses_to_replace_them() {
    let dir = tempfile::tempdir().unwrap();
    let damaged = dir.path().join(logd_kafka::quota::QUOTAS_FILE);
    std::fs::write(&damaged, b"{\"format\": 1, \"quotas\": [").unwrap();
    let broker = broker(dir.path());
    assert!(broker.quotas().entries().is_empty());
    let refused = alter(
        &broker,
        vec![(
            vec![("client-id", Some("x"))],
            vec![("producer_byte_rate", 1000.0, false)],
        )],
        false,
    );
    assert_eq!(refused[0].0, codes::KAFKA_STORAGE_ERROR);
    assert!(
        refused[0].1.contains("unreadable at start"),
        "{}",
        refused[0].1
    );
    assert_eq!(
        std::fs::read(&damaged).unwrap(),
        b"{\"format\": 1, \"quotas\": [",
        "the damaged file is left for its owner to repair"
    );
}
