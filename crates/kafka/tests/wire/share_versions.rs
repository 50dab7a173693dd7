//! Kafka 4.4's newest share-group versions on the wire, through logd's own codec of them:
//! ShareFetch v2 (acquire mode, lock renewal, KIP-1206 and KIP-1222), ShareAcknowledge v2
//! (renewal, the lock timeout in the answer) and DescribeShareGroupOffsets v1 (KIP-1226's
//! lag), with Kafka's refusals; and logd's own DescribeSharePartitions (records in flight by
//! state). The engine's clock is a manual one, so lock expiry is exact.

use std::sync::Arc;

use bytes::{Buf, BufMut, BytesMut};
use kafka_protocol::ResponseError;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use logd::{Config, Log, ManualClock, TopicConfig};
use logd_kafka::{Broker, BrokerConfig};
use logd_protocol::share_partitions::{
    self, SharePartitionCounts, SharePartitionsRequest, SharePartitionsResponse,
};
use logd_protocol::share_versions::{self, BATCH_OPTIMIZED, RECORD_LIMIT};
use logd_storage::batch::{BatchBuilder, Compression};

const LOCK_MS: i64 = 15_000;
const RENEW: i8 = 4;
const ACCEPT: i8 = 1;

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_owned())
}

struct Setup {
    broker: Broker,
    log: Log,
    clock: Arc<ManualClock>,
    topic: uuid::Uuid,
}

/// A broker on a manual clock with topic `jobs` holding five records, and share group
/// `workers` reading it from the earliest with a 15 s lock.
fn setup(dir: &std::path::Path) -> Setup {
    let clock = Arc::new(ManualClock::new(1_000_000));
    let log = Log::open_with(
        Arc::new(logd_storage::RealFs),
        clock.clone(),
        dir,
        Config::default(),
    )
    .unwrap();
    log.create_topic(
        "jobs",
        TopicConfig {
            partitions: 1,
            ..TopicConfig::default()
        },
    )
    .unwrap();
    let mut batch = BatchBuilder::new(Compression::None);
    for i in 0..5 {
        batch.push(i, None, Some(format!("job-{i}").as_bytes()), &[]);
    }
    log.append("jobs", 0, &mut batch.build(0).unwrap()).unwrap();
    let lock = LOCK_MS.to_string();
    log.alter_group_configs(
        "workers",
        &[
            ("share.auto.offset.reset", Some("earliest")),
            ("share.record.lock.duration.ms", Some(lock.as_str())),
        ],
        false,
    )
    .unwrap();
    let (id, _) = log.topic_id_and_partitions("jobs").unwrap();
    Setup {
        broker: Broker::new(log.clone(), BrokerConfig::default()),
        log,
        clock,
        topic: uuid::Uuid::from_bytes(id),
    }
}

/// Sends `request` at `version` as a client does (logd's codec for the versions
/// `kafka-protocol` lacks) and decodes the answer the same way.
fn call(b: &Broker, key: ApiKey, version: i16, request: RequestKind) -> ResponseKind {
    let mut header = RequestHeader::default();
    header.request_api_key = key as i16;
    header.request_api_version = version;
    header.correlation_id = 9;
    let mut frame = BytesMut::new();
    header
        .encode(&mut frame, key.request_header_version(version))
        .unwrap();
    match share_versions::encode_request(&request, version, &mut frame) {
        Some(encoded) => encoded.unwrap(),
        None => request.encode(&mut frame, version).unwrap(),
    }
    let mut response = b
        .handle_frame(frame.freeze(), "/10.0.0.9")
        .unwrap()
        .expect("a response")
        .freeze();
    response.advance(4);
    let header =
        ResponseHeader::decode(&mut response, key.response_header_version(version)).unwrap();
    assert_eq!(header.correlation_id, 9);
    let decoded = match share_versions::decode_response(key, version, &mut response) {
        Some(decoded) => decoded.unwrap(),
        None => ResponseKind::decode(key, &mut response, version).unwrap(),
    };
    assert!(!response.has_remaining(), "{key:?} v{version}: bytes left");
    decoded
}

fn join(b: &Broker, member: &str) {
    let mut request = ShareGroupHeartbeatRequest::default();
    request.group_id = GroupId(s("workers"));
    request.member_id = s(member);
    request.subscribed_topic_names = Some(vec![TopicName(s("jobs"))]);
    let ResponseKind::ShareGroupHeartbeat(r) = call(
        b,
        ApiKey::ShareGroupHeartbeat,
        1,
        RequestKind::ShareGroupHeartbeat(request),
    ) else {
        unreachable!()
    };
    assert_eq!(r.error_code, 0);
}

/// A ShareFetch v2 request: `max_records` (with the other limits set, or all zero when 0).
struct Fetch<'a> {
    member: &'a str,
    epoch: i32,
    max_records: i32,
    mode: i8,
    renew: bool,
    acks: Vec<(i64, i64, Vec<i8>)>,
}

fn fetch(b: &Broker, topic: uuid::Uuid, f: Fetch<'_>) -> ShareFetchResponse {
    use share_fetch_request::{AcknowledgementBatch, FetchPartition, FetchTopic};
    let mut request = ShareFetchRequest::default();
    request.group_id = Some(GroupId(s("workers")));
    request.member_id = Some(s(f.member));
    request.share_session_epoch = f.epoch;
    request.max_records = f.max_records;
    request.max_bytes = if f.max_records > 0 { 1 << 20 } else { 0 };
    request.batch_size = f.max_records;
    share_versions::set_fetch_fields(&mut request, f.mode, f.renew);
    let mut partition = FetchPartition::default();
    partition.acknowledgement_batches = f
        .acks
        .into_iter()
        .map(|(first, last, types)| {
            let mut batch = AcknowledgementBatch::default();
            batch.first_offset = first;
            batch.last_offset = last;
            batch.acknowledge_types = types;
            batch
        })
        .collect();
    let mut t = FetchTopic::default();
    t.topic_id = topic;
    t.partitions = vec![partition];
    request.topics = vec![t];
    let ResponseKind::ShareFetch(r) =
        call(b, ApiKey::ShareFetch, 2, RequestKind::ShareFetch(request))
    else {
        unreachable!()
    };
    r
}

/// A ShareAcknowledge of one batch at `version` (2 with `renew` as its `is_renew_ack`).
fn acknowledge(
    b: &Broker,
    (member, epoch): (&str, i32),
    topic: uuid::Uuid,
    (first, last, types): (i64, i64, Vec<i8>),
    (version, renew): (i16, bool),
) -> ShareAcknowledgeResponse {
    use share_acknowledge_request::{AcknowledgePartition, AcknowledgeTopic, AcknowledgementBatch};
    let mut batch = AcknowledgementBatch::default();
    batch.first_offset = first;
    batch.last_offset = last;
    batch.acknowledge_types = types;
    let mut partition = AcknowledgePartition::default();
    partition.acknowledgement_batches = vec![batch];
    let mut t = AcknowledgeTopic::default();
    t.topic_id = topic;
    t.partitions = vec![partition];
    let mut request = ShareAcknowledgeRequest::default();
    request.group_id = Some(GroupId(s("workers")));
    request.member_id = Some(s(member));
    request.share_session_epoch = epoch;
    request.topics = vec![t];
    share_versions::set_acknowledge_renews(&mut request, renew);
    let ResponseKind::ShareAcknowledge(r) = call(
        b,
        ApiKey::ShareAcknowledge,
        version,
        RequestKind::ShareAcknowledge(request),
    ) else {
        unreachable!()
    };
    r
}

/// (first, last, delivery count) of each range acquired, and the partition's ack code.
fn acquired(r: &ShareFetchResponse) -> (Vec<(i64, i64, i16)>, i16) {
    assert_eq!(r.error_code, 0, "{:?}", r.error_message);
    let Some(p) = r.responses.first().and_then(|t| t.partitions.first()) else {
        return (Vec::new(), 0);
    };
    assert_eq!(p.error_code, 0, "{:?}", p.error_message);
    let ranges = p
        .acquired_records
        .iter()
        .map(|a| (a.first_offset, a.last_offset, a.delivery_count))
        .collect();
    (ranges, p.acknowledge_error_code)
}

fn ack_code(r: &ShareAcknowledgeResponse) -> i16 {
    assert_eq!(r.error_code, 0, "{:?}", r.error_message);
    r.responses[0].partitions[0].error_code
}

#[test]
fn a_renewed_lock_keeps_records_held_past_the_lock_duration() {
    let dir = tempfile::tempdir().unwrap();
    let Setup {
        broker: b,
        clock,
        topic,
        ..
    } = setup(dir.path());
    join(&b, "a");
    join(&b, "b");
    let mut fa = Fetch {
        member: "a",
        epoch: 0,
        max_records: 2,
        mode: RECORD_LIMIT,
        renew: false,
        acks: vec![],
    };
    let first = fetch(&b, topic, fa);
    assert_eq!(first.acquisition_lock_timeout_ms, LOCK_MS as i32);
    assert_eq!(acquired(&first).0, vec![(0, 1, 1)]);

    // 10 s in, a renews both by ShareAcknowledge v2: the answer carries the lock duration.
    clock.advance(10_000);
    let renewed = acknowledge(&b, ("a", 1), topic, (0, 1, vec![RENEW]), (2, true));
    assert_eq!(ack_code(&renewed), 0);
    assert_eq!(share_versions::lock_timeout_ms(&renewed), LOCK_MS as i32);

    // 20 s after they were acquired (past the lock duration), b gets only the other three.
    clock.advance(10_000);
    let fb = Fetch {
        member: "b",
        epoch: 0,
        max_records: 10,
        mode: BATCH_OPTIMIZED,
        renew: false,
        acks: vec![],
    };
    let (got, _) = acquired(&fetch(&b, topic, fb));
    assert_eq!(got, vec![(2, 4, 1)]);

    // At 21 s a renews offset 0 again, now by a renewing ShareFetch (which fetches nothing),
    // and lets offset 1's lock run out (at 25 s): at 26 s b, accepting what it took, gets
    // offset 1, delivered a second time, and not offset 0.
    clock.advance(1_000);
    fa = Fetch {
        member: "a",
        epoch: 2,
        max_records: 0,
        mode: BATCH_OPTIMIZED,
        renew: true,
        acks: vec![(0, 0, vec![RENEW])],
    };
    let renewing = fetch(&b, topic, fa);
    assert_eq!(acquired(&renewing), (vec![], 0));
    clock.advance(5_000);
    let fb = Fetch {
        member: "b",
        epoch: 1,
        max_records: 10,
        mode: BATCH_OPTIMIZED,
        renew: false,
        acks: vec![(2, 4, vec![ACCEPT])],
    };
    assert_eq!(acquired(&fetch(&b, topic, fb)), (vec![(1, 1, 2)], 0));
    // a still holds offset 0 and accepts it.
    let accepted = acknowledge(&b, ("a", 3), topic, (0, 0, vec![ACCEPT]), (2, false));
    assert_eq!(ack_code(&accepted), 0);
}

#[test]
fn renewals_and_acquire_modes_are_refused_with_kafkas_codes() {
    let dir = tempfile::tempdir().unwrap();
    let Setup {
        broker: b,
        log,
        topic,
        ..
    } = setup(dir.path());
    join(&b, "a");
    join(&b, "b");
    let f = |epoch, max_records, mode, renew| Fetch {
        member: "a",
        epoch,
        max_records,
        mode,
        renew,
        acks: vec![],
    };
    // A renewing fetch that asks for records, and an acquire mode Kafka does not define, are
    // refused whole (and use no epoch).
    let asks = fetch(&b, topic, f(0, 5, BATCH_OPTIMIZED, true));
    assert_eq!(asks.error_code, ResponseError::InvalidRequest.code());
    let mode = fetch(&b, topic, f(0, 5, 7, false));
    assert_eq!(mode.error_code, ResponseError::InvalidRequest.code());
    // Record-limit mode holds to max_records.
    let (got, _) = acquired(&fetch(&b, topic, f(0, 3, RECORD_LIMIT, false)));
    assert_eq!(got, vec![(0, 2, 1)]);

    let invalid_request = ResponseError::InvalidRequest.code();
    let invalid_state = ResponseError::InvalidRecordState.code();
    // RENEW before version 2, or in a v2 request that does not say it renews.
    let v1 = acknowledge(&b, ("a", 1), topic, (0, 0, vec![RENEW]), (1, false));
    assert_eq!(ack_code(&v1), invalid_request);
    let unsaid = acknowledge(&b, ("a", 2), topic, (0, 0, vec![RENEW]), (2, false));
    assert_eq!(ack_code(&unsaid), invalid_request);
    // A record the member does not hold.
    let (others, _) = acquired(&fetch(
        &b,
        topic,
        Fetch {
            member: "b",
            ..f(0, 5, BATCH_OPTIMIZED, false)
        },
    ));
    assert_eq!(others, vec![(3, 4, 1)]);
    let foreign = acknowledge(&b, ("b", 1), topic, (0, 0, vec![RENEW]), (2, true));
    assert_eq!(ack_code(&foreign), invalid_state);
    // The group turns renewal off: INVALID_RECORD_STATE, as Kafka.
    log.alter_group_configs(
        "workers",
        &[("share.renew.acknowledge.enable", Some("false"))],
        false,
    )
    .unwrap();
    let off = acknowledge(&b, ("a", 3), topic, (0, 0, vec![RENEW]), (2, true));
    assert_eq!(ack_code(&off), invalid_state);
    // None of the refusals changed anything: a still holds 0-2 and accepts them.
    let accepted = acknowledge(&b, ("a", 4), topic, (0, 2, vec![ACCEPT]), (2, false));
    assert_eq!(ack_code(&accepted), 0);
}

fn lags(b: &Broker, version: i16) -> Vec<(i32, i64, i64)> {
    use describe_share_group_offsets_request::*;
    let mut t = DescribeShareGroupOffsetsRequestTopic::default();
    t.topic_name = TopicName(s("jobs"));
    t.partitions = vec![0, 1];
    let mut g = DescribeShareGroupOffsetsRequestGroup::default();
    g.group_id = GroupId(s("workers"));
    g.topics = Some(vec![t]);
    let mut request = DescribeShareGroupOffsetsRequest::default();
    request.groups = vec![g];
    let ResponseKind::DescribeShareGroupOffsets(r) = call(
        b,
        ApiKey::DescribeShareGroupOffsets,
        version,
        RequestKind::DescribeShareGroupOffsets(request),
    ) else {
        unreachable!()
    };
    r.groups[0].topics[0]
        .partitions
        .iter()
        .map(|p| (p.partition_index, p.start_offset, share_versions::lag(p)))
        .collect()
}

#[test]
fn describe_share_group_offsets_v1_answers_each_partitions_lag() {
    let dir = tempfile::tempdir().unwrap();
    let Setup {
        broker: b,
        log,
        topic,
        ..
    } = setup(dir.path());
    log.add_partitions("jobs", 2).unwrap();
    join(&b, "a");
    // Nothing read yet: no start, no lag.
    assert_eq!(lags(&b, 1), vec![(0, -1, -1), (1, -1, -1)]);
    let f = Fetch {
        member: "a",
        epoch: 0,
        max_records: 3,
        mode: RECORD_LIMIT,
        renew: false,
        acks: vec![],
    };
    let (got, _) = acquired(&fetch(&b, topic, f));
    assert_eq!(got, vec![(0, 2, 1)]);
    // Offset 1 accepted, 0 and 2 still held: of the five records from the start, four are not
    // done with. Partition 1 is still unread.
    let one = acknowledge(&b, ("a", 1), topic, (1, 1, vec![ACCEPT]), (2, false));
    assert_eq!(ack_code(&one), 0);
    assert_eq!(lags(&b, 1), vec![(0, 0, 4), (1, -1, -1)]);
    // Offset 0 accepted: the start moves to 2 and three remain.
    let zero = acknowledge(&b, ("a", 2), topic, (0, 0, vec![ACCEPT]), (2, false));
    assert_eq!(ack_code(&zero), 0);
    assert_eq!(lags(&b, 1), vec![(0, 2, 3), (1, -1, -1)]);
    // Version 0 carries no lag.
    assert_eq!(lags(&b, 0)[0], (0, 2, -1));
}

/// Sends logd's DescribeSharePartitions for `group` at `version`; the answer, or `None` when
/// the broker closes the connection.
fn share_partitions(b: &Broker, group: &str, version: i16) -> Option<SharePartitionsResponse> {
    let mut frame = BytesMut::new();
    frame.put_i16(share_partitions::API_KEY);
    frame.put_i16(version);
    frame.put_i32(12);
    frame.put_i16(-1); // no client id
    SharePartitionsRequest {
        group: group.to_owned(),
    }
    .encode(&mut frame)
    .unwrap();
    let mut response = b.handle_frame(frame.freeze(), "/10.0.0.9").ok()??.freeze();
    assert_eq!(response.get_i32() as usize, response.remaining());
    assert_eq!(response.get_i32(), 12, "correlation id");
    let decoded = SharePartitionsResponse::decode(&mut response).unwrap();
    assert!(response.is_empty());
    Some(decoded)
}

#[test]
fn describe_share_partitions_answers_records_in_flight_by_state() {
    let dir = tempfile::tempdir().unwrap();
    let Setup {
        broker: b, topic, ..
    } = setup(dir.path());
    let ResponseKind::ApiVersions(versions) = call(
        &b,
        ApiKey::ApiVersions,
        3,
        RequestKind::ApiVersions(ApiVersionsRequest::default()),
    ) else {
        unreachable!()
    };
    let listed = versions
        .api_keys
        .iter()
        .find(|k| k.api_key == share_partitions::API_KEY);
    assert_eq!(listed.map(|k| (k.min_version, k.max_version)), Some((0, 0)));
    // A group that read nothing has no share-partitions.
    assert_eq!(
        share_partitions(&b, "workers", 0).unwrap().partitions,
        vec![]
    );
    join(&b, "a");
    let f = Fetch {
        member: "a",
        epoch: 0,
        max_records: 4,
        mode: RECORD_LIMIT,
        renew: false,
        acks: vec![],
    };
    assert_eq!(acquired(&fetch(&b, topic, f)).0, vec![(0, 3, 1)]);
    // Offset 1 accepted, 2 rejected, 3 released: 0 is still held, so the start stays at 0.
    let done = acknowledge(&b, ("a", 1), topic, (1, 3, vec![ACCEPT, 3, 2]), (2, false));
    assert_eq!(ack_code(&done), 0);
    let answer = share_partitions(&b, "workers", 0).unwrap();
    assert_eq!((answer.error_code, answer.error_message), (0, None));
    assert_eq!(
        answer.partitions,
        vec![SharePartitionCounts {
            topic: "jobs".into(),
            partition: 0,
            start_offset: 0,
            end_offset: 4,
            available: 1,
            acquired: 1,
            acknowledged: 1,
            archived: 1,
            // Of the five records from the start, 0, 3 and 4 are not done with.
            lag: 3,
        }]
    );
    assert!(
        share_partitions(&b, "workers", 1).is_none(),
        "an unserved version closes the connection"
    );
}

#[test]
fn describe_share_partitions_needs_describe_on_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let Setup { log, .. } = setup(dir.path());
    let authorizer = Arc::new(
        logd_kafka::acl::Authorizer::open(
            dir.path(),
            logd_kafka::acl::AuthorizerConfig {
                super_users: Vec::new(),
                allow_everyone_if_no_acl_found: false,
            },
        )
        .unwrap(),
    );
    let b = Broker::new(log, BrokerConfig::default()).with_authorizer(authorizer);
    let refused = share_partitions(&b, "workers", 0).unwrap();
    assert_eq!(
        refused.error_code,
        ResponseError::GroupAuthorizationFailed.code()
    );
    assert!(refused.partitions.is_empty());
}

/// The base offsets of the batches a ShareFetch answered with.
fn batch_bases(r: &ShareFetchResponse) -> Vec<i64> {
    let p = &r.responses[0].partitions[0];
    let records = p.records.clone().unwrap_or_default();
    logd_storage::batch::BatchIter::new(&records, 0)
        .map(|item| item.unwrap().1.header.base_offset)
        .collect()
}

#[test]
fn batch_optimized_fetches_take_whole_batches_and_answer_only_theirs() {
    let dir = tempfile::tempdir().unwrap();
    let set = setup(dir.path());
    let (b, log, topic) = (&set.broker, &set.log, set.topic);
    // Behind the five records of the setup (offsets 0-4), three batches of ten: 5-14, 15-24
    // and 25-34.
    for batch in 0..3 {
        let mut builder = BatchBuilder::new(Compression::None);
        for i in 0..10 {
            builder.push(i, None, Some(format!("b{batch}-{i}").as_bytes()), &[]);
        }
        log.append("jobs", 0, &mut builder.build(0).unwrap())
            .unwrap();
    }
    for member in ["a", "b", "c", "d"] {
        join(b, member);
    }
    let f = |member, max_records, mode| Fetch {
        member,
        epoch: 0,
        max_records,
        mode,
        renew: false,
        acks: vec![],
    };
    // Batch-optimized (Kafka's default): three records asked, the first batch's five taken.
    let first = fetch(b, topic, f("a", 3, BATCH_OPTIMIZED));
    assert_eq!(acquired(&first).0, vec![(0, 4, 1)]);
    assert_eq!(batch_bases(&first), [0]);
    // Seven asked from offset 5: the batch holding the seventh (5-14) ends the take.
    let second = fetch(b, topic, f("b", 7, BATCH_OPTIMIZED));
    assert_eq!(acquired(&second).0, vec![(5, 14, 1)]);
    // Only the batch of the records acquired is sent, not the rest of what was read.
    assert_eq!(batch_bases(&second), [5]);
    // Record-limit: never more than asked, and the answer is still the one batch holding them.
    let third = fetch(b, topic, f("c", 3, RECORD_LIMIT));
    assert_eq!(acquired(&third).0, vec![(15, 17, 1)]);
    assert_eq!(batch_bases(&third), [15]);
    // Taking the rest of that batch and into the next: both batches, the limit ending on the
    // next one's end.
    let fourth = fetch(b, topic, f("d", 8, BATCH_OPTIMIZED));
    assert_eq!(acquired(&fourth).0, vec![(18, 34, 1)]);
    assert_eq!(batch_bases(&fourth), [15, 25]);
}
