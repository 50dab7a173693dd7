//! Frames of a state log and its snapshot: a length and a CRC around a bincode payload.
//!
//! ```text
//! 4 bytes  length   u32 big-endian, bytes of payload
//! 4 bytes  crc      u32 big-endian, CRC-32C of the payload
//! length   payload  bincode 1 (little-endian, fixed-width integers, u64 lengths)
//! ```
//!
//! Frames written before logd 0.4 carry CRC-32 (IEEE) instead; reading accepts either, so
//! state written by an older logd opens, and every frame written now uses the checksum of
//! every other logd file.

use bincode::Options;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::crc::crc32c;

/// Bytes before a frame's payload.
pub(crate) const FRAME_HEADER_LEN: usize = 8;
/// Largest payload accepted when reading, so a damaged length cannot ask for gigabytes.
pub(crate) const MAX_PAYLOAD: usize = 64 << 20;

/// Encodes `value` as a frame.
pub(crate) fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    let payload =
        bincode::serialize(value).expect("in-memory serialization of plain data cannot fail");
    let mut out = Vec::with_capacity(FRAME_HEADER_LEN + payload.len());
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(&crc32c(&payload).to_be_bytes());
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
    if crc32c(payload) != crc && crc32fast::hash(payload) != crc {
        return Decoded::Invalid("frame checksum mismatch");
    }
    // Limit bincode's allocations to the payload's own size: a valid CRC over hostile bytes
    // must not turn a length field into a huge allocation.
    let options = bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .with_little_endian()
        .with_limit(len as u64)
        .allow_trailing_bytes();
    match options.deserialize(payload) {
        Ok(value) => Decoded::Frame(value, FRAME_HEADER_LEN + len),
        Err(_) => Decoded::Invalid("frame payload does not decode"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn frames_round_trip(entry in proptest::collection::vec((".{0,12}", any::<i64>()), 0..6)) {
            let bytes = encode(&entry);
            match decode::<Vec<(String, i64)>>(&bytes) {
                Decoded::Frame(back, len) => {
                    prop_assert_eq!(back, entry);
                    prop_assert_eq!(len, bytes.len());
                }
                other => prop_assert!(false, "{other:?}"),
            }
            for cut in 0..bytes.len() {
                let truncated = decode::<Vec<(String, i64)>>(&bytes[..cut]);
                prop_assert!(matches!(truncated, Decoded::Truncated));
            }
        }

        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode::<Vec<(String, i64)>>(&bytes);
        }

        #[test]
        fn a_valid_crc_over_hostile_payload_is_rejected_not_allocated(
            payload in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            // Re-frame arbitrary payload with a correct CRC: only bincode stands in the way.
            let mut bytes = (payload.len() as u32).to_be_bytes().to_vec();
            bytes.extend_from_slice(&crc32c(&payload).to_be_bytes());
            bytes.extend_from_slice(&payload);
            let _ = decode::<Vec<(String, i64)>>(&bytes);
        }
    }

    #[test]
    fn golden_frame() {
        let bytes = encode(&(1u32, "g".to_owned()));
        // payload: 1 as u32 LE, string length 1 as u64 LE, "g".
        let payload = [1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, b'g'];
        assert_eq!(&bytes[0..4], &(payload.len() as u32).to_be_bytes()); // length
        assert_eq!(&bytes[4..8], &crc32c(&payload).to_be_bytes()); // crc
        assert_eq!(&bytes[8..], &payload); // payload
    }

    #[test]
    fn a_frame_written_with_the_old_ieee_crc_still_reads_and_a_wrong_crc_does_not() {
        let payload = bincode::serialize(&(7u32, "old".to_owned())).unwrap();
        let frame = |crc: u32| {
            let mut bytes = (payload.len() as u32).to_be_bytes().to_vec();
            bytes.extend_from_slice(&crc.to_be_bytes());
            bytes.extend_from_slice(&payload);
            bytes
        };
        let ieee = crc32fast::hash(&payload);
        assert_ne!(ieee, crc32c(&payload));
        assert!(matches!(
            decode::<(u32, String)>(&frame(ieee)),
            Decoded::Frame((7, ref s), _) if s == "old"
        ));
        assert!(matches!(
            decode::<(u32, String)>(&frame(ieee ^ 1)),
            Decoded::Invalid("frame checksum mismatch")
        ));
    }
}
