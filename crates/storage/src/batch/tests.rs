use bytes::Bytes;
use proptest::prelude::*;

use super::*;
use crate::error::Error;

const KAFKA_PYTHON_NONE: &[u8] = include_bytes!("testdata/kafka-python-none.bin");
const KAFKA_PYTHON_COMPRESSED: [(&str, Compression, &[u8]); 4] = [
    (
        "gzip",
        Compression::Gzip,
        include_bytes!("testdata/kafka-python-gzip.bin"),
    ),
    (
        "snappy",
        Compression::Snappy,
        include_bytes!("testdata/kafka-python-snappy.bin"),
    ),
    (
        "lz4",
        Compression::Lz4,
        include_bytes!("testdata/kafka-python-lz4.bin"),
    ),
    (
        "zstd",
        Compression::Zstd,
        include_bytes!("testdata/kafka-python-zstd.bin"),
    ),
];
const LIMIT: usize = 1 << 20;

type OwnedHeaders = Vec<(Vec<u8>, Option<Vec<u8>>)>;
/// (offset, timestamp, key, value, headers)
type OwnedRecord = (i64, i64, Option<Vec<u8>>, Option<Vec<u8>>, OwnedHeaders);

/// The records `testdata/kafka_python_batches.py` writes.
fn expected_records() -> Vec<OwnedRecord> {
    vec![
        (
            0,
            1796011734556,
            Some(b"k1".to_vec()),
            Some(b"hello".to_vec()),
            vec![],
        ),
        (
            1,
            1796011734557,
            None,
            Some(b"world".to_vec()),
            vec![
                (b"h1".to_vec(), Some(b"v1".to_vec())),
                (b"h1".to_vec(), None),
            ],
        ),
        (2, 1796011734550, Some(b"k3".to_vec()), None, vec![]),
        (
            3,
            1796011734560,
            Some(b"k4".to_vec()),
            Some(b"abcdefgh".repeat(16)),
            vec![],
        ),
    ]
}

fn decoded(bytes: &[u8]) -> Vec<OwnedRecord> {
    let (batch, rest) = BatchRef::parse(bytes, 0).unwrap();
    assert!(rest.is_empty());
    batch.validate(0, LIMIT).unwrap();
    let records = batch.records(LIMIT).unwrap();
    records
        .iter()
        .map(|r| {
            let r = r.unwrap();
            (
                r.offset,
                r.timestamp,
                r.key.map(<[u8]>::to_vec),
                r.value.map(<[u8]>::to_vec),
                r.headers
                    .map(|h| (h.key.to_vec(), h.value.map(<[u8]>::to_vec)))
                    .collect(),
            )
        })
        .collect()
}

#[test]
fn golden_kafka_python_batch_header_field_by_field() {
    let b = KAFKA_PYTHON_NONE;
    // base_offset: 0, the producer's placeholder.
    assert_eq!(&b[0..8], &[0, 0, 0, 0, 0, 0, 0, 0]);
    // batch_length: 233 = 245 bytes total - 12.
    assert_eq!(&b[8..12], &233i32.to_be_bytes());
    assert_eq!(b.len(), 245);
    // partition_leader_epoch: 0.
    assert_eq!(&b[12..16], &[0, 0, 0, 0]);
    // magic: 2.
    assert_eq!(b[16], 2);
    // crc: CRC-32C of bytes 21.. (attributes to end).
    assert_eq!(&b[17..21], &crate::crc::crc32c(&b[21..]).to_be_bytes());
    // attributes: 0 (no compression, create time, not transactional, not control).
    assert_eq!(&b[21..23], &[0, 0]);
    // last_offset_delta: 3 (four records).
    assert_eq!(&b[23..27], &3i32.to_be_bytes());
    // base_timestamp: the first record's timestamp.
    assert_eq!(&b[27..35], &1796011734556i64.to_be_bytes());
    // max_timestamp: the largest record timestamp, the fourth record's.
    assert_eq!(&b[35..43], &1796011734560i64.to_be_bytes());
    // producer_id -1, producer_epoch -1, base_sequence -1: not idempotent.
    assert_eq!(&b[43..53], &[0xff; 10]);
    assert_eq!(&b[53..57], &[0xff; 4]);
    // record_count: 4.
    assert_eq!(&b[57..61], &4i32.to_be_bytes());
    // First record: length 13 (zigzag 0x1a), attributes 0, timestamp delta 0, offset delta 0,
    // key length 2 (0x04) "k1", value length 5 (0x0a) "hello", header count 0.
    assert_eq!(&b[61..75], b"\x1a\x00\x00\x00\x04k1\x0ahello\x00");

    let header = BatchHeader::parse(b, 0).unwrap();
    assert_eq!(header.batch_length, 233);
    assert_eq!(header.last_offset_delta, 3);
    assert_eq!(header.max_timestamp, 1796011734560);
    assert_eq!(header.record_count, 4);
    assert_eq!(header.compression().unwrap(), Compression::None);
}

#[test]
fn golden_kafka_python_batches_decode_with_every_codec() {
    assert_eq!(decoded(KAFKA_PYTHON_NONE), expected_records());
    for (name, codec, bytes) in KAFKA_PYTHON_COMPRESSED {
        let header = BatchHeader::parse(bytes, 0).unwrap();
        assert_eq!(header.compression().unwrap(), codec, "{name}");
        assert_eq!(decoded(bytes), expected_records(), "{name}");
    }
}

#[test]
fn builder_reproduces_kafka_python_bytes_exactly() {
    let mut builder = BatchBuilder::new(Compression::None);
    for (_, ts, key, value, headers) in expected_records() {
        let headers: Vec<(&[u8], Option<&[u8]>)> = headers
            .iter()
            .map(|(k, v)| (k.as_slice(), v.as_deref()))
            .collect();
        builder.push(ts, key.as_deref(), value.as_deref(), &headers);
    }
    assert_eq!(builder.build(0).unwrap(), KAFKA_PYTHON_NONE);
}

#[test]
fn owned_decoding_shares_the_buffer() {
    let bytes = Bytes::from_static(KAFKA_PYTHON_NONE);
    let records = Record::decode_all(&bytes, LIMIT).unwrap();
    assert_eq!(records.len(), 4);
    let value = records[0].value.as_ref().unwrap();
    assert_eq!(&value[..], b"hello");
    let inside = bytes.as_ptr() as usize..bytes.as_ptr() as usize + bytes.len();
    assert!(
        inside.contains(&(value.as_ptr() as usize)),
        "value was copied"
    );
    assert_eq!(
        records[1].headers.len(),
        2,
        "duplicate header keys are kept"
    );
}

#[test]
fn a_flipped_bit_anywhere_in_the_crc_range_is_caught() {
    for at in ATTRIBUTES..KAFKA_PYTHON_NONE.len() {
        let mut bad = KAFKA_PYTHON_NONE.to_vec();
        bad[at] ^= 0x10;
        let (batch, _) = BatchRef::parse(&bad, 0).unwrap();
        assert!(
            matches!(batch.verify_crc(0), Err(Error::ChecksumMismatch { .. })),
            "flip at {at} not caught"
        );
    }
}

#[test]
fn validate_rejects_what_a_producer_must_not_send() {
    let mut old_magic = KAFKA_PYTHON_NONE.to_vec();
    old_magic[MAGIC] = 1;
    assert!(matches!(
        BatchRef::parse(&old_magic, 7),
        Err(Error::UnsupportedMagic {
            position: 7,
            magic: 1
        })
    ));

    let short = &KAFKA_PYTHON_NONE[..100];
    assert!(matches!(
        BatchRef::parse(short, 0),
        Err(Error::Truncated {
            needed: 245,
            available: 100,
            ..
        })
    ));

    // A record count that disagrees with last_offset_delta, with the CRC fixed up so only the
    // structure is wrong.
    let mut wrong_count = KAFKA_PYTHON_NONE.to_vec();
    wrong_count[RECORD_COUNT + 3] = 5;
    let crc = crate::crc::crc32c(&wrong_count[ATTRIBUTES..]);
    wrong_count[CRC..CRC + 4].copy_from_slice(&crc.to_be_bytes());
    let (batch, _) = BatchRef::parse(&wrong_count, 0).unwrap();
    assert!(matches!(
        batch.validate(0, LIMIT),
        Err(Error::InvalidBatch { .. })
    ));

    // A max timestamp that does not match the records is not refused: validation says what
    // the records carry, for append to set (as Kafka's LogValidator does).
    let mut wrong_max = KAFKA_PYTHON_NONE.to_vec();
    wrong_max[MAX_TIMESTAMP + 7] ^= 1;
    let crc = crate::crc::crc32c(&wrong_max[ATTRIBUTES..]);
    wrong_max[CRC..CRC + 4].copy_from_slice(&crc.to_be_bytes());
    let (batch, _) = BatchRef::parse(&wrong_max, 0).unwrap();
    let (_, true_max) = batch.validate(0, LIMIT).unwrap().timestamps.unwrap();
    let (original, _) = BatchRef::parse(KAFKA_PYTHON_NONE, 0).unwrap();
    assert_eq!(true_max, original.header.max_timestamp);
    assert_ne!(batch.header.max_timestamp, true_max);
    assert!(set_max_timestamp(&mut wrong_max, false, true_max));
    assert_eq!(
        wrong_max, KAFKA_PYTHON_NONE,
        "the batch as the client built it"
    );
    assert!(
        !set_max_timestamp(&mut wrong_max, false, true_max),
        "nothing to change"
    );
}

#[test]
fn negative_lengths_and_counts_are_rejected_by_validation_and_by_the_iterator() {
    let mut builder = BatchBuilder::new(Compression::None);
    builder.push(0, Some(b"k"), Some(b"v"), &[(b"h", Some(b"x"))]);
    let good = builder.build(0).unwrap();
    // The one record after the header, as zigzag varints (n is written 2n, -1 as 01):
    // length, attributes, timestamp delta, offset delta, key length 02 'k', value length
    // 02 'v', header count 02, header key length 02 'h', header value length 02 'x'.
    let record = &good[HEADER_LEN..];
    assert_eq!(&record[1..], b"\x00\x00\x00\x02k\x02v\x02\x02h\x02x");
    for (field, at, byte) in [
        ("record length -1", 0, 0x01),
        ("key length -2", 4, 0x03),
        ("value length -2", 6, 0x03),
        ("header count -1", 8, 0x01),
        ("header key length -1 (null)", 9, 0x01),
        ("header value length -2", 11, 0x03),
    ] {
        let mut bad = good.clone();
        bad[HEADER_LEN + at] = byte;
        let crc = crate::crc::crc32c(&bad[ATTRIBUTES..]);
        bad[CRC..CRC + 4].copy_from_slice(&crc.to_be_bytes());
        let (batch, _) = BatchRef::parse(&bad, 0).unwrap();
        assert!(batch.validate(0, LIMIT).is_err(), "{field}: validated");
        let records = batch.records(LIMIT).unwrap();
        assert!(
            records.iter().any(|r| r.is_err()),
            "{field}: iterated without an error"
        );
    }
}

/// A record as the proptests make them: timestamp, key, value, headers.
type ArbRecord = (i64, Option<Vec<u8>>, Option<Vec<u8>>, OwnedHeaders);

fn arb_record() -> impl Strategy<Value = ArbRecord> {
    (
        0i64..4_000_000_000_000,
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..40)),
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..300)),
        proptest::collection::vec(
            (
                proptest::collection::vec(any::<u8>(), 0..10),
                proptest::option::of(proptest::collection::vec(any::<u8>(), 0..10)),
            ),
            0..3,
        ),
    )
}

/// Pushes every `arb_record` into `builder`.
fn push_all(builder: &mut BatchBuilder, records: &[ArbRecord]) {
    for (ts, key, value, headers) in records {
        let headers: Vec<(&[u8], Option<&[u8]>)> = headers
            .iter()
            .map(|(k, v)| (k.as_slice(), v.as_deref()))
            .collect();
        builder.push(*ts, key.as_deref(), value.as_deref(), &headers);
    }
}

/// Any of the five codecs.
pub(super) fn arb_compression() -> impl Strategy<Value = Compression> {
    prop_oneof![
        Just(Compression::None),
        Just(Compression::Gzip),
        Just(Compression::Snappy),
        Just(Compression::Lz4),
        Just(Compression::Zstd),
    ]
}

proptest! {
    #[test]
    fn build_then_decode_round_trips(
        records in proptest::collection::vec(arb_record(), 1..20),
        codec in arb_compression(),
        base_offset in 0i64..1 << 40,
        recycled in proptest::collection::vec(any::<u8>(), 0..200),
    ) {
        // A producer builds in a buffer an earlier batch used: none of its bytes may show.
        let mut builder = BatchBuilder::with_buffer(codec, recycled);
        push_all(&mut builder, &records);
        let bytes = builder.build(base_offset).unwrap();
        let (batch, rest) = BatchRef::parse(&bytes, 0).unwrap();
        prop_assert!(rest.is_empty());
        batch.validate(0, LIMIT).unwrap();
        prop_assert_eq!(batch.header.base_offset, base_offset);
        prop_assert_eq!(batch.header.record_count as usize, records.len());
        let decoded = batch.records(LIMIT).unwrap();
        for (i, (r, (ts, key, value, headers))) in decoded.iter().zip(&records).enumerate() {
            let r = r.unwrap();
            prop_assert_eq!(r.offset, base_offset + i as i64);
            prop_assert_eq!(r.timestamp, *ts);
            prop_assert_eq!(r.key, key.as_deref());
            prop_assert_eq!(r.value, value.as_deref());
            let got: Vec<_> = r.headers.map(|h| (h.key.to_vec(), h.value.map(<[u8]>::to_vec))).collect();
            prop_assert_eq!(&got, headers);
        }
        prop_assert_eq!(decoded.iter().count(), records.len());
        let mut fresh = BatchBuilder::new(codec);
        push_all(&mut fresh, &records);
        prop_assert_eq!(fresh.build(base_offset).unwrap(), bytes);
    }

    #[test]
    fn retained_records_keep_their_offsets_timestamps_and_bytes(
        records in proptest::collection::vec(arb_record(), 1..20),
        keep in proptest::collection::vec(any::<bool>(), 20),
        codec in arb_compression(),
        base_offset in 0i64..1 << 40,
        horizon in proptest::option::of(0i64..4_000_000_000_000),
    ) {
        let mut builder = BatchBuilder::new(codec).producer(11, 2, 500);
        push_all(&mut builder, &records);
        let bytes = builder.build(base_offset).unwrap();
        let (batch, _) = BatchRef::parse(&bytes, 0).unwrap();
        let rewritten =
            retain_records(&batch, LIMIT, horizon, |r| keep[r.offset_delta as usize]).unwrap();
        let (cleaned, rest) = BatchRef::parse(&rewritten, 0).unwrap();
        prop_assert!(rest.is_empty());
        cleaned.verify_crc(0).unwrap();
        let (h, original) = (cleaned.header, batch.header);
        prop_assert_eq!(h.base_offset, original.base_offset);
        prop_assert_eq!(h.last_offset_delta, original.last_offset_delta);
        prop_assert_eq!(h.max_timestamp, original.max_timestamp);
        prop_assert_eq!((h.producer_id, h.producer_epoch, h.base_sequence), (11, 2, 500));
        prop_assert_eq!(h.compression().unwrap(), codec);
        prop_assert_eq!(h.delete_horizon(), horizon);
        let expected: Vec<_> = records
            .iter()
            .enumerate()
            .filter(|(i, _)| keep[*i])
            .collect();
        prop_assert_eq!(h.record_count as usize, expected.len());
        let decoded = cleaned.records(LIMIT).unwrap();
        let got: Vec<_> = decoded.iter().map(|r| r.unwrap()).collect();
        prop_assert_eq!(got.len(), expected.len());
        for (r, (i, (ts, key, value, headers))) in got.iter().zip(expected) {
            prop_assert_eq!(r.offset, base_offset + i as i64);
            prop_assert_eq!(r.timestamp, *ts);
            prop_assert_eq!(r.key, key.as_deref());
            prop_assert_eq!(r.value, value.as_deref());
            let got: Vec<_> = r.headers.map(|h| (h.key.to_vec(), h.value.map(<[u8]>::to_vec))).collect();
            prop_assert_eq!(&got, headers);
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        for item in BatchIter::new(&bytes, 0) {
            let Ok((position, batch)) = item else { break };
            let _ = batch.validate(position, 1 << 16);
            if let Ok(records) = batch.records(1 << 16) {
                for r in records.iter().flatten() {
                    let _ = r.headers.count();
                }
            }
        }
    }

    #[test]
    fn corrupting_a_valid_batch_never_panics(at in 0usize..245, byte: u8, cut in 0usize..=245) {
        let mut bytes = KAFKA_PYTHON_NONE.to_vec();
        bytes[at] = byte;
        bytes.truncate(cut);
        if let Ok((batch, _)) = BatchRef::parse(&bytes, 0) {
            let _ = batch.validate(0, LIMIT);
            // Skip the CRC: the record parser must survive garbage on its own.
            if let Ok(records) = batch.records(LIMIT) {
                for r in records.iter().flatten() { let _ = r.headers.count(); }
            }
        }
    }
}

/// Found by the `batch_decode` fuzz target: offsets near `i64::MAX` and a maximal last offset
/// delta overflowed the offset arithmetic.
#[test]
fn hostile_offsets_do_not_overflow() {
    let mut builder = BatchBuilder::new(Compression::None);
    builder.push(0, None, Some(b"x"), &[]);
    builder.push(0, None, Some(b"y"), &[]);
    let bytes = builder.build(i64::MAX).unwrap();
    let (batch, _) = BatchRef::parse(&bytes, 0).unwrap();
    assert_eq!(batch.header.next_offset(), i64::MAX);
    let offsets: Vec<i64> = batch
        .records(LIMIT)
        .unwrap()
        .iter()
        .map(|r| r.unwrap().offset)
        .collect();
    assert_eq!(offsets, vec![i64::MAX, i64::MIN], "wraps, does not panic");

    let mut huge_delta = bytes.clone();
    huge_delta[LAST_OFFSET_DELTA..LAST_OFFSET_DELTA + 4].copy_from_slice(&i32::MAX.to_be_bytes());
    let crc = crate::crc::crc32c(&huge_delta[ATTRIBUTES..]);
    huge_delta[CRC..CRC + 4].copy_from_slice(&crc.to_be_bytes());
    let (batch, _) = BatchRef::parse(&huge_delta, 0).unwrap();
    assert!(matches!(
        batch.validate(0, LIMIT),
        Err(Error::InvalidBatch { .. })
    ));
}
