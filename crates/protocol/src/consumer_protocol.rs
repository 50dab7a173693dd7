//! Kafka's consumer protocol, version 0: the subscription a member sends in JoinGroup and the
//! assignment its leader sends in SyncGroup. Embedded consumers use it too, so they can share a
//! group with Kafka clients, and every tool reads every member's assignment the same way.
//!
//! Layout: `version: i16`, then a subscription is `topics: [string]`, `user_data: bytes`, and
//! an assignment `[(topic: string, partitions: [i32])]`, `user_data: bytes` (strings with an
//! i16 length, arrays and bytes with an i32 count, -1 for null). Later versions only append
//! fields, so the readers accept any version. Members write these bytes, so the readers check
//! every length against the bytes present and never size an allocation from a count.

use std::collections::BTreeMap;

use bytes::{BufMut, Bytes, BytesMut};

/// A subscription to `topics`.
pub fn encode_subscription(topics: &[String]) -> Bytes {
    let mut out = BytesMut::new();
    out.put_i16(0);
    out.put_i32(topics.len() as i32);
    for topic in topics {
        put_string(&mut out, topic);
    }
    out.put_i32(-1); // no user data
    out.freeze()
}

/// The topics a subscription names; `None` if the bytes are not a consumer subscription.
pub fn decode_subscription(bytes: &[u8]) -> Option<Vec<String>> {
    let mut reader = Reader(bytes);
    reader.i16()?;
    let count = reader.i32()?;
    let mut topics = Vec::new();
    for _ in 0..count.max(0) {
        topics.push(reader.string()?);
    }
    Some(topics)
}

/// An assignment of `partitions`, grouped by topic.
pub fn encode_assignment(partitions: &[(String, u32)]) -> Bytes {
    let mut by_topic: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    for (topic, partition) in partitions {
        by_topic.entry(topic).or_default().push(*partition);
    }
    let mut out = BytesMut::new();
    out.put_i16(0);
    out.put_i32(by_topic.len() as i32);
    for (topic, partitions) in by_topic {
        put_string(&mut out, topic);
        out.put_i32(partitions.len() as i32);
        for partition in partitions {
            out.put_i32(partition as i32);
        }
    }
    out.put_i32(-1); // no user data
    out.freeze()
}

/// The (topic, partition) pairs an assignment gives; empty bytes are an empty assignment;
/// `None` if the bytes are not a consumer assignment.
pub fn decode_assignment(bytes: &[u8]) -> Option<Vec<(String, u32)>> {
    if bytes.is_empty() {
        return Some(Vec::new());
    }
    let mut reader = Reader(bytes);
    reader.i16()?;
    let topics = reader.i32()?;
    let mut pairs = Vec::new();
    for _ in 0..topics.max(0) {
        let topic = reader.string()?;
        let partitions = reader.i32()?;
        for _ in 0..partitions.max(0) {
            pairs.push((topic.clone(), u32::try_from(reader.i32()?).ok()?));
        }
    }
    Some(pairs)
}

fn put_string(out: &mut BytesMut, s: &str) {
    // Topic names are at most 249 bytes (validated where topics are named).
    out.put_i16(s.len() as i16);
    out.put_slice(s.as_bytes());
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
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn subscriptions_and_assignments_round_trip(
            assignment in proptest::collection::btree_set(("[a-z.]{1,12}", 0u32..1000), 0..20),
        ) {
            let pairs: Vec<(String, u32)> = assignment.into_iter().collect();
            prop_assert_eq!(decode_assignment(&encode_assignment(&pairs)), Some(pairs.clone()));
            let mut topics: Vec<String> = pairs.iter().map(|(t, _)| t.clone()).collect();
            topics.dedup();
            prop_assert_eq!(decode_subscription(&encode_subscription(&topics)), Some(topics));
        }

        /// Arbitrary bytes give an answer or `None`: no panic, no allocation from a count.
        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode_subscription(&bytes);
            let _ = decode_assignment(&bytes);
        }
    }

    #[test]
    fn a_lying_count_is_refused_not_allocated() {
        let mut bytes = 0i16.to_be_bytes().to_vec();
        bytes.extend_from_slice(&i32::MAX.to_be_bytes());
        assert_eq!(decode_subscription(&bytes), None);
        assert_eq!(decode_assignment(&bytes), None);
    }
}
