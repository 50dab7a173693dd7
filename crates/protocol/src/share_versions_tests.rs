//! Round trips of each version this module owns, the byte layout against the older version's,
//! and arbitrary bytes read without a panic.

use super::*;
use kafka_protocol::messages::describe_share_group_offsets_response::{
    DescribeShareGroupOffsetsResponseGroup, DescribeShareGroupOffsetsResponseTopic,
};
use kafka_protocol::messages::share_acknowledge_request::{AcknowledgePartition, AcknowledgeTopic};
use kafka_protocol::messages::share_fetch_request::{FetchPartition, FetchTopic, ForgottenTopic};
use kafka_protocol::messages::{
    GroupId, TopicName, share_acknowledge_request, share_acknowledge_response, share_fetch_request,
};
use kafka_protocol::protocol::StrBytes;
use proptest::prelude::*;

fn text(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_owned())
}

type Ack = (i64, i64, Vec<i8>);

fn acks() -> impl Strategy<Value = Vec<Ack>> {
    proptest::collection::vec(
        (
            any::<i64>(),
            any::<i64>(),
            proptest::collection::vec(0i8..5, 0..4),
        ),
        0..4,
    )
}

fn fetch_request(
    (group, member): (Option<String>, Option<String>),
    numbers: [i32; 6],
    acks: &[Ack],
    forgotten: &[i32],
) -> ShareFetchRequest {
    let mut r = ShareFetchRequest::default();
    r.group_id = group.as_deref().map(|g| GroupId(text(g)));
    r.member_id = member.as_deref().map(text);
    [
        r.share_session_epoch,
        r.max_wait_ms,
        r.min_bytes,
        r.max_bytes,
        r.max_records,
        r.batch_size,
    ] = numbers;
    let mut partition = FetchPartition::default();
    partition.partition_index = 3;
    partition.acknowledgement_batches = acks
        .iter()
        .map(|(first, last, types)| {
            let mut b = share_fetch_request::AcknowledgementBatch::default();
            (b.first_offset, b.last_offset) = (*first, *last);
            b.acknowledge_types = types.clone();
            b
        })
        .collect();
    let mut topic = FetchTopic::default();
    topic.topic_id = uuid::Uuid::from_bytes([7; 16]);
    topic.partitions = vec![partition];
    r.topics = vec![topic];
    let mut gone = ForgottenTopic::default();
    gone.partitions = forgotten.to_vec();
    r.forgotten_topics_data = vec![gone];
    r
}

fn round_trip_request(request: &RequestKind, key: ApiKey, version: i16) -> (RequestKind, Bytes) {
    let mut body = BytesMut::new();
    encode_request(request, version, &mut body)
        .expect("ours")
        .expect("encodes");
    let body = body.freeze();
    let decoded = decode_request(key, version, &mut body.clone())
        .expect("ours")
        .expect("decodes");
    (decoded, body)
}

proptest! {
    #[test]
    fn share_fetch_v2_is_v1_with_two_fields_and_round_trips(
        names in (proptest::option::of("[a-z]{0,12}"), proptest::option::of("[a-z0-9-]{0,40}")),
        numbers in any::<[i32; 6]>(),
        mode in any::<i8>(),
        renews in any::<bool>(),
        acks in acks(),
        forgotten in proptest::collection::vec(any::<i32>(), 0..3),
    ) {
        let plain = fetch_request(names, numbers, &acks, &forgotten);
        let mut request = plain.clone();
        set_fetch_fields(&mut request, mode, renews);
        let kind = RequestKind::ShareFetch(request);
        let (decoded, v2) = round_trip_request(&kind, ApiKey::ShareFetch, 2);
        prop_assert_eq!(&decoded, &kind);
        let RequestKind::ShareFetch(decoded) = decoded else { unreachable!() };
        prop_assert_eq!(acquire_mode(&decoded), mode);
        prop_assert_eq!(fetch_renews(&decoded), renews);
        // Byte for byte: v1's body with the two fields after the batch size.
        let mut v1 = BytesMut::new();
        plain.encode(&mut v1, 1).unwrap();
        let at = share_fetch_head(&v1, "test").unwrap();
        prop_assert_eq!(&v2[..at], &v1[..at]);
        prop_assert_eq!(&v2[at..at + 2], &[mode as u8, u8::from(renews)][..]);
        prop_assert_eq!(&v2[at + 2..], &v1[at..]);
        // v1 carries neither field: the defaults.
        let (v1_decoded, _) =
            round_trip_request(&RequestKind::ShareFetch(plain.clone()), ApiKey::ShareFetch, 1);
        prop_assert_eq!(v1_decoded, RequestKind::ShareFetch(plain));
    }

    #[test]
    fn share_acknowledge_v2_round_trips(
        epoch in any::<i32>(),
        renews in any::<bool>(),
        acks in acks(),
    ) {
        let mut request = ShareAcknowledgeRequest::default();
        request.group_id = Some(GroupId(text("g")));
        request.member_id = Some(text("member-1"));
        request.share_session_epoch = epoch;
        let mut partition = AcknowledgePartition::default();
        partition.acknowledgement_batches = acks
            .iter()
            .map(|(first, last, types)| {
                let mut b = share_acknowledge_request::AcknowledgementBatch::default();
                (b.first_offset, b.last_offset) = (*first, *last);
                b.acknowledge_types = types.clone();
                b
            })
            .collect();
        let mut topic = AcknowledgeTopic::default();
        topic.partitions = vec![partition];
        request.topics = vec![topic];
        set_acknowledge_renews(&mut request, renews);
        let kind = RequestKind::ShareAcknowledge(request);
        let (decoded, _) = round_trip_request(&kind, ApiKey::ShareAcknowledge, 2);
        prop_assert_eq!(&decoded, &kind);
        let RequestKind::ShareAcknowledge(decoded) = decoded else { unreachable!() };
        prop_assert_eq!(acknowledge_renews(&decoded), renews);
    }

    #[test]
    fn share_acknowledge_response_v2_carries_the_lock_timeout(
        timeout in any::<i32>(),
        message in proptest::option::of("[ -~]{0,30}"),
        codes in proptest::collection::vec(any::<i16>(), 0..4),
    ) {
        let mut response = ShareAcknowledgeResponse::default();
        response.error_message = message.as_deref().map(text);
        let mut topic = share_acknowledge_response::ShareAcknowledgeTopicResponse::default();
        topic.partitions = codes
            .iter()
            .map(|&code| {
                let mut p = share_acknowledge_response::PartitionData::default();
                p.error_code = code;
                p
            })
            .collect();
        response.responses = vec![topic];
        set_lock_timeout_ms(&mut response, timeout);
        let kind = ResponseKind::ShareAcknowledge(response);
        let mut body = BytesMut::new();
        encode_response(ApiKey::ShareAcknowledge, 2, &kind, &mut body).unwrap().unwrap();
        let decoded = decode_response(ApiKey::ShareAcknowledge, 2, &mut body.freeze());
        prop_assert_eq!(decoded.unwrap().unwrap(), kind);
    }

    #[test]
    fn describe_share_group_offsets_v1_carries_each_lag(
        shape in proptest::collection::vec(
            proptest::collection::vec(
                proptest::collection::vec((any::<i64>(), any::<i64>(), any::<i16>()), 0..4),
                0..3,
            ),
            0..3,
        ),
    ) {
        let mut response = DescribeShareGroupOffsetsResponse::default();
        for (g, topics) in shape.iter().enumerate() {
            let mut group = DescribeShareGroupOffsetsResponseGroup::default();
            group.group_id = GroupId(text(&format!("group-{g}")));
            for (t, partitions) in topics.iter().enumerate() {
                let mut topic = DescribeShareGroupOffsetsResponseTopic::default();
                topic.topic_name = TopicName(text(&format!("topic-{t}")));
                for (i, &(start, lag, code)) in partitions.iter().enumerate() {
                    let mut p = OffsetsPartition::default();
                    p.partition_index = i as i32;
                    p.start_offset = start;
                    p.error_code = code;
                    p.error_message = (code != 0).then(|| text("failed"));
                    set_lag(&mut p, lag);
                    topic.partitions.push(p);
                }
                group.topics.push(topic);
            }
            response.groups.push(group);
        }
        let kind = ResponseKind::DescribeShareGroupOffsets(response);
        let mut v1 = BytesMut::new();
        encode_response(ApiKey::DescribeShareGroupOffsets, 1, &kind, &mut v1).unwrap().unwrap();
        let decoded = decode_response(ApiKey::DescribeShareGroupOffsets, 1, &mut v1.clone().freeze());
        prop_assert_eq!(decoded.unwrap().unwrap(), kind.clone());
        // v0 is the same without the lags: 8 bytes a partition fewer.
        let mut v0 = BytesMut::new();
        encode_response(ApiKey::DescribeShareGroupOffsets, 0, &kind, &mut v0).unwrap().unwrap();
        let partitions: usize = shape.iter().flatten().map(Vec::len).sum();
        prop_assert_eq!(v1.len(), v0.len() + 8 * partitions);
    }

    #[test]
    fn arbitrary_bytes_are_read_without_a_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..120),
    ) {
        // The layout walks of this module; `kafka-protocol`'s decoders trust array counts, so
        // the broker checks a request's shape before (`logd-kafka`'s `shape`).
        for head in [share_fetch_head, share_acknowledge_head, acknowledge_response_head] {
            let _ = splice_out(&bytes, "test", head, 2);
        }
        // A v1 DescribeShareGroupOffsets answer is walked whole before it is decoded.
        let _ = decode_response(
            ApiKey::DescribeShareGroupOffsets,
            1,
            &mut Bytes::from(bytes.clone()),
        );
    }
}

#[test]
fn a_clients_tags_under_logds_keys_set_nothing() {
    // A v1 fetch whose tagged fields claim to renew and to limit records.
    let mut request = fetch_request((Some("g".into()), Some("m".into())), [1; 6], &[], &[]);
    request
        .unknown_tagged_fields
        .insert(RENEW_ACK, Bytes::from_static(&[1]));
    request
        .unknown_tagged_fields
        .insert(ACQUIRE_MODE, Bytes::from_static(&[1]));
    let mut body = BytesMut::new();
    request.encode(&mut body, 1).unwrap();
    let Some(Ok(RequestKind::ShareFetch(decoded))) =
        decode_request(ApiKey::ShareFetch, 1, &mut body.freeze())
    else {
        panic!("a v1 fetch decodes");
    };
    assert!(!fetch_renews(&decoded));
    assert_eq!(acquire_mode(&decoded), BATCH_OPTIMIZED);
    assert!(decoded.unknown_tagged_fields.is_empty());
}

#[test]
fn a_v2_boolean_other_than_0_or_1_is_malformed() {
    let mut request = fetch_request((Some("g".into()), Some("m".into())), [1; 6], &[], &[]);
    set_fetch_fields(&mut request, RECORD_LIMIT, true);
    let mut body = BytesMut::new();
    encode_request(&RequestKind::ShareFetch(request), 2, &mut body)
        .unwrap()
        .unwrap();
    let at = share_fetch_head(&body, "test").unwrap();
    body[at + 1] = 2;
    let decoded = decode_request(ApiKey::ShareFetch, 2, &mut body.freeze()).unwrap();
    assert!(
        matches!(&decoded, Err(Error::Malformed { reason, .. }) if reason.contains("not a boolean")),
        "{decoded:?}"
    );
}
