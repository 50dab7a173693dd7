//! Recompressing a producer's batches into a topic's codec (Kafka `compression.type` set to a
//! codec rather than `producer`), as Kafka's `LogValidator` rebuilds a batch whose codec is not
//! the topic's: the records, their offset deltas and timestamps, the producer's id, epoch and
//! sequence and the transactional bit stay; only the payload's codec changes. Control batches
//! are never recompressed (Kafka leaves them too).

use super::compression::Compression;
use super::header::*;
use super::retain::rewrite;
use crate::error::Result;

/// `batches` with every batch not already in `codec` rewritten in it, or `None` when every
/// batch already is (the input is then stored as sent). Each batch is validated before it is
/// rewritten, so a damaged or malformed batch is refused (as `append` would refuse it) rather
/// than given a fresh checksum; the rewritten batches are validated by `append` like any other. A compressed
/// payload may expand to at most `max_decompressed` bytes.
pub fn recompress(
    batches: &[u8],
    codec: Compression,
    max_decompressed: usize,
) -> Result<Option<Vec<u8>>> {
    let needs = |batch: &BatchRef<'_>| {
        !batch.header.is_control() && batch.header.compression().ok() != Some(codec)
    };
    let mut any = false;
    for item in BatchIter::new(batches, 0) {
        let (_, batch) = item?;
        any |= needs(&batch);
    }
    if !any {
        return Ok(None);
    }
    let mut out = Vec::with_capacity(batches.len());
    for item in BatchIter::new(batches, 0) {
        let (position, batch) = item?;
        if !needs(&batch) {
            out.extend_from_slice(batch.bytes);
            continue;
        }
        // Checked as `append` checks it (CRC, records filling the batch), so a batch is never
        // rewritten into something other than what its producer sent.
        batch.validate(position, max_decompressed)?;
        out.extend_from_slice(&rewrite(
            &batch,
            max_decompressed,
            None,
            Some(codec),
            |_| true,
        )?);
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::tests::arb_compression as codec;
    use super::*;
    use crate::Error;
    use crate::batch::BatchBuilder;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        #[test]
        fn recompressing_keeps_every_record_and_the_producer_fields(
            from in codec(),
            to in codec(),
            values in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..200), 1..20),
        ) {
            let mut builder = BatchBuilder::new(from).producer(7, 1, 40);
            for (i, v) in values.iter().enumerate() {
                builder.push(1_000 + i as i64, Some(b"k"), Some(v), &[(b"h", Some(b"x"))]);
            }
            let sent = builder.build(0).unwrap();
            let stored = recompress(&sent, to, 1 << 20).unwrap();
            prop_assert_eq!(stored.is_none(), from == to, "rewritten only when the codec differs");
            let stored = stored.unwrap_or_else(|| sent.clone());
            let (batch, rest) = BatchRef::parse(&stored, 0).unwrap();
            prop_assert!(rest.is_empty());
            batch.validate(0, 1 << 20).unwrap();
            prop_assert_eq!(batch.header.compression().unwrap(), to);
            let (original, _) = BatchRef::parse(&sent, 0).unwrap();
            let h = (batch.header.producer_id, batch.header.producer_epoch, batch.header.base_sequence);
            prop_assert_eq!(h, (7, 1, 40));
            prop_assert_eq!(batch.header.max_timestamp, original.header.max_timestamp);
            let records = |b: &BatchRef<'_>| -> Vec<(i64, Option<Vec<u8>>)> {
                b.records(1 << 20).unwrap().iter()
                    .map(|r| { let r = r.unwrap(); (r.timestamp, r.value.map(<[u8]>::to_vec)) })
                    .collect()
            };
            prop_assert_eq!(records(&batch), records(&original));
        }
    }

    #[test]
    fn a_damaged_batch_is_refused_not_given_a_fresh_checksum() {
        let mut builder = BatchBuilder::new(Compression::None);
        builder.push(0, None, Some(b"v"), &[]);
        let mut sent = builder.build(0).unwrap();
        let last = sent.len() - 1;
        sent[last] ^= 1;
        assert!(matches!(
            recompress(&sent, Compression::Zstd, 1 << 20),
            Err(Error::ChecksumMismatch { .. })
        ));
    }
}
