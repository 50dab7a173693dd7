//! The engine's consumer-protocol codec (what embedded members write and what logd reads from
//! Kafka clients) matches Kafka's own, as the `kafka-protocol` crate encodes it, both ways and
//! at every version: embedded consumers and Kafka clients can share a group.

use bytes::{Buf, BytesMut};
use kafka_protocol::messages::consumer_protocol_assignment::TopicPartition;
use kafka_protocol::messages::{
    ConsumerProtocolAssignment, ConsumerProtocolSubscription, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use logd::groups::classic::{
    decode_assignment, decode_subscription, encode_assignment, encode_subscription,
};
use proptest::prelude::*;

fn versioned(version: i16, body: &impl Encodable) -> Vec<u8> {
    let mut out = BytesMut::new();
    out.extend_from_slice(&version.to_be_bytes());
    body.encode(&mut out, version).unwrap();
    out.to_vec()
}

proptest! {
    #[test]
    fn kafka_clients_bytes_read_the_same(
        version in 0i16..=3,
        topics in proptest::collection::btree_map("[a-z.]{1,12}", proptest::collection::btree_set(0i32..64, 0..4), 0..4),
    ) {
        let mut subscription = ConsumerProtocolSubscription::default();
        subscription.topics = topics.keys().map(|t| StrBytes::from_string(t.clone())).collect();
        prop_assert_eq!(
            decode_subscription(&versioned(version, &subscription)),
            Some(topics.keys().cloned().collect())
        );
        let mut assignment = ConsumerProtocolAssignment::default();
        assignment.assigned_partitions = topics
            .iter()
            .map(|(t, ps)| {
                let mut tp = TopicPartition::default();
                tp.topic = TopicName(StrBytes::from_string(t.clone()));
                tp.partitions = ps.iter().copied().collect();
                tp
            })
            .collect();
        let expected: Vec<(String, u32)> = topics
            .iter()
            .flat_map(|(t, ps)| ps.iter().map(move |p| (t.clone(), *p as u32)))
            .collect();
        prop_assert_eq!(decode_assignment(&versioned(version, &assignment)), Some(expected));
    }

    #[test]
    fn embedded_members_bytes_read_the_same_in_kafka(
        topics in proptest::collection::btree_map("[a-z.]{1,12}", proptest::collection::btree_set(0u32..64, 0..4), 0..4),
    ) {
        let names: Vec<String> = topics.keys().cloned().collect();
        let mut bytes = encode_subscription(&names);
        let version = bytes.get_i16();
        let subscription = ConsumerProtocolSubscription::decode(&mut bytes, version).unwrap();
        let decoded: Vec<String> = subscription.topics.iter().map(|t| t.to_string()).collect();
        prop_assert_eq!(decoded, names);

        let pairs: Vec<(String, u32)> = topics
            .iter()
            .flat_map(|(t, ps)| ps.iter().map(move |p| (t.clone(), *p)))
            .collect();
        let mut bytes = encode_assignment(&pairs);
        let version = bytes.get_i16();
        let assignment = ConsumerProtocolAssignment::decode(&mut bytes, version).unwrap();
        let decoded: Vec<(String, u32)> = assignment
            .assigned_partitions
            .iter()
            .flat_map(|tp| tp.partitions.iter().map(move |p| (tp.topic.to_string(), *p as u32)))
            .collect();
        let expected: Vec<(String, u32)> =
            topics.iter().filter(|(_, ps)| !ps.is_empty()).flat_map(|(t, ps)| ps.iter().map(move |p| (t.clone(), *p))).collect();
        prop_assert_eq!(decoded, expected);
    }
}
