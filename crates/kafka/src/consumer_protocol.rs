//! Reads the two opaque blobs of Kafka's consumer protocol that logd looks into: a member's
//! subscription (JoinGroup metadata) and its assignment (SyncGroup). Clients write them; the
//! broker only relays them, so they are untrusted bytes: these readers check every length
//! against the bytes present and never size an allocation from a count (the `kafka-protocol`
//! decoders preallocate from the count).
//!
//! Layout (versions 0 to 3 share this prefix): `version: i16`, then for a subscription
//! `topics: [string]`, for an assignment `[(topic: string, partitions: [i32])]`.

/// The topics a subscription names; `None` if the bytes are not a consumer subscription.
pub fn subscription_topics(metadata: &[u8]) -> Option<Vec<String>> {
    let mut reader = Reader(metadata);
    reader.i16()?;
    let count = reader.i32()?;
    let mut topics = Vec::new();
    for _ in 0..count.max(0) {
        topics.push(reader.string()?);
    }
    Some(topics)
}

/// The (topic, partition) pairs an assignment gives; `None` if the bytes are not a consumer
/// assignment.
pub fn assignment_partitions(assignment: &[u8]) -> Option<Vec<(String, i32)>> {
    let mut reader = Reader(assignment);
    if assignment.is_empty() {
        return Some(Vec::new());
    }
    reader.i16()?;
    let topics = reader.i32()?;
    let mut pairs = Vec::new();
    for _ in 0..topics.max(0) {
        let topic = reader.string()?;
        let partitions = reader.i32()?;
        for _ in 0..partitions.max(0) {
            pairs.push((topic.clone(), reader.i32()?));
        }
    }
    Some(pairs)
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (head, rest) = self.0.split_at_checked(N)?;
        self.0 = rest;
        head.try_into().ok()
    }

    fn i16(&mut self) -> Option<i16> {
        self.take::<2>().map(i16::from_be_bytes)
    }

    fn i32(&mut self) -> Option<i32> {
        self.take::<4>().map(i32::from_be_bytes)
    }

    fn string(&mut self) -> Option<String> {
        let len = usize::try_from(self.i16()?).ok()?;
        let (bytes, rest) = self.0.split_at_checked(len)?;
        self.0 = rest;
        String::from_utf8(bytes.to_vec()).ok()
    }
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;
    use kafka_protocol::messages::consumer_protocol_assignment::TopicPartition;
    use kafka_protocol::messages::{
        ConsumerProtocolAssignment, ConsumerProtocolSubscription, TopicName,
    };
    use kafka_protocol::protocol::{Encodable, StrBytes};
    use proptest::prelude::*;

    use super::*;

    fn versioned(version: i16, body: &impl Encodable) -> Vec<u8> {
        let mut out = BytesMut::new();
        out.extend_from_slice(&version.to_be_bytes());
        body.encode(&mut out, version).unwrap();
        out.to_vec()
    }

    proptest! {
        /// What kafka-protocol's encoder (as clients write it) reads back the same, at every
        /// version.
        #[test]
        fn reads_what_clients_write(
            version in 0i16..=3,
            topics in proptest::collection::btree_map("[a-z]{1,8}", proptest::collection::vec(0i32..64, 0..4), 0..4),
        ) {
            let mut subscription = ConsumerProtocolSubscription::default();
            subscription.topics = topics.keys().map(|t| StrBytes::from_string(t.clone())).collect();
            prop_assert_eq!(
                subscription_topics(&versioned(version, &subscription)),
                Some(topics.keys().cloned().collect())
            );
            let mut assignment = ConsumerProtocolAssignment::default();
            assignment.assigned_partitions = topics
                .iter()
                .map(|(t, ps)| {
                    let mut tp = TopicPartition::default();
                    tp.topic = TopicName(StrBytes::from_string(t.clone()));
                    tp.partitions = ps.clone();
                    tp
                })
                .collect();
            let expected: Vec<(String, i32)> = topics
                .iter()
                .flat_map(|(t, ps)| ps.iter().map(move |p| (t.clone(), *p)))
                .collect();
            prop_assert_eq!(assignment_partitions(&versioned(version, &assignment)), Some(expected));
        }

        /// Arbitrary bytes give an answer or `None`: no panic, no allocation from a count.
        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = subscription_topics(&bytes);
            let _ = assignment_partitions(&bytes);
        }
    }

    #[test]
    fn a_lying_count_is_refused_not_allocated() {
        let mut bytes = 0i16.to_be_bytes().to_vec();
        bytes.extend_from_slice(&i32::MAX.to_be_bytes());
        assert_eq!(subscription_topics(&bytes), None);
        assert_eq!(assignment_partitions(&bytes), None);
    }
}
