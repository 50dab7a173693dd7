//! Frames of the offset log and the snapshot: a length and a CRC around a bincode payload.
//!
//! ```text
//! 4 bytes  length   u32 big-endian, bytes of payload
//! 4 bytes  crc      u32 big-endian, CRC-32 (IEEE) of the payload
//! length   payload  bincode 1 (little-endian, fixed-width integers, u64 lengths)
//! ```

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// Bytes before a frame's payload.
pub(crate) const FRAME_HEADER_LEN: usize = 8;
/// Largest payload accepted when reading, so a damaged length cannot ask for gigabytes.
pub(crate) const MAX_PAYLOAD: usize = 64 << 20;

/// What one frame of the offset log records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Entry {
    /// One commit call: all of its partitions, or none.
    Commit {
        group: String,
        offsets: Vec<StoredCommit>,
    },
    /// A group and all its offsets deleted.
    DeleteGroup { group: String },
    /// Some offsets of a group deleted.
    DeleteOffsets {
        group: String,
        partitions: Vec<(String, i32)>,
    },
}

/// One partition's commit as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct StoredCommit {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub metadata: String,
    pub commit_timestamp: i64,
}

/// Encodes `value` as a frame.
pub(crate) fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    let payload =
        bincode::serialize(value).expect("in-memory serialization of plain data cannot fail");
    let mut out = Vec::with_capacity(FRAME_HEADER_LEN + payload.len());
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(&crc32fast::hash(&payload).to_be_bytes());
    out.extend_from_slice(&payload);
    out
}

/// How decoding the frame at the start of a buffer went.
#[derive(Debug)]
pub(crate) enum Decoded<T> {
    /// A whole valid frame and its total size.
    Frame(T, usize),
    /// Fewer bytes than the frame announces: a torn tail, or a damaged length.
    Truncated,
    /// Checksum or payload wrong.
    Invalid(&'static str),
}

/// Decodes the frame at the start of `buf`.
pub(crate) fn decode<T: DeserializeOwned>(buf: &[u8]) -> Decoded<T> {
    let Some((header, rest)) = buf.split_first_chunk::<FRAME_HEADER_LEN>() else {
        return Decoded::Truncated;
    };
    let len = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
    let crc = u32::from_be_bytes([header[4], header[5], header[6], header[7]]);
    if len > MAX_PAYLOAD {
        return Decoded::Invalid("frame length beyond the maximum");
    }
    let Some(payload) = rest.get(..len) else {
        return Decoded::Truncated;
    };
    if crc32fast::hash(payload) != crc {
        return Decoded::Invalid("frame checksum mismatch");
    }
    // Limit bincode's allocations to the payload's own size: a valid CRC over hostile bytes
    // must not turn a length field into a huge allocation.
    let options = bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .with_little_endian()
        .with_limit(len as u64)
        .allow_trailing_bytes();
    use bincode::Options;
    match options.deserialize(payload) {
        Ok(value) => Decoded::Frame(value, FRAME_HEADER_LEN + len),
        Err(_) => Decoded::Invalid("frame payload does not decode"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn arb_entry() -> impl Strategy<Value = Entry> {
        let commit = (".{0,12}", 0..100i32, 0..i64::MAX, ".{0,20}", any::<i64>()).prop_map(
            |(topic, partition, offset, metadata, commit_timestamp)| StoredCommit {
                topic,
                partition,
                offset,
                metadata,
                commit_timestamp,
            },
        );
        prop_oneof![
            (".{1,12}", proptest::collection::vec(commit, 0..5))
                .prop_map(|(group, offsets)| Entry::Commit { group, offsets }),
            ".{1,12}".prop_map(|group| Entry::DeleteGroup { group }),
            (
                ".{1,12}",
                proptest::collection::vec((".{0,8}", any::<i32>()), 0..4)
            )
                .prop_map(|(group, partitions)| Entry::DeleteOffsets { group, partitions }),
        ]
    }

    proptest! {
        #[test]
        fn frames_round_trip(entry in arb_entry()) {
            let bytes = encode(&entry);
            match decode::<Entry>(&bytes) {
                Decoded::Frame(back, len) => {
                    prop_assert_eq!(back, entry);
                    prop_assert_eq!(len, bytes.len());
                }
                other => prop_assert!(false, "{other:?}"),
            }
            for cut in 0..bytes.len() {
                prop_assert!(matches!(decode::<Entry>(&bytes[..cut]), Decoded::Truncated));
            }
        }

        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode::<Entry>(&bytes);
        }

        #[test]
        fn a_valid_crc_over_hostile_payload_is_rejected_not_allocated(payload in proptest::collection::vec(any::<u8>(), 0..64)) {
            // Re-frame arbitrary payload with a correct CRC: only bincode stands in the way.
            let mut bytes = (payload.len() as u32).to_be_bytes().to_vec();
            bytes.extend_from_slice(&crc32fast::hash(&payload).to_be_bytes());
            bytes.extend_from_slice(&payload);
            let _ = decode::<Entry>(&bytes);
        }
    }

    #[test]
    fn golden_commit_frame() {
        let entry = Entry::DeleteGroup { group: "g".into() };
        let bytes = encode(&entry);
        // payload: enum variant 1 as u32 LE, string length 1 as u64 LE, "g".
        let payload = [1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, b'g'];
        assert_eq!(&bytes[0..4], &(payload.len() as u32).to_be_bytes()); // length
        assert_eq!(&bytes[4..8], &crc32fast::hash(&payload).to_be_bytes()); // crc
        assert_eq!(&bytes[8..], &payload); // payload
    }
}
