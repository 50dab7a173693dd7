//! Walking every record of concatenated batches (the bytes of a read), each batch's CRC
//! checked just before its first record is handed out, while the next batch is pulled toward
//! the cache.
//!
//! Checking every CRC up front and then walking the records touches the bytes twice: the CRC
//! pass runs at memory speed and the walk (a serial chain of varints) at CPU speed, one after
//! the other. Walking batch by batch, and prefetching the next batch a few cache lines per
//! record, lets memory stream in while the CPU walks, so the next CRC check finds its batch in
//! cache (`docs/benchmarks.md`, `storage/read`).

use super::header::BatchIter;
use super::record::RecordRef;
use crate::error::{Error, Result};

/// Cache lines of the next batch requested per record walked: a 1000-record batch of 100-byte
/// values spans about 1,700 lines, so two per record have it in cache before it is reached.
const PREFETCH_LINES_PER_RECORD: usize = 2;
const CACHE_LINE: usize = 64;

/// Calls `f` with every record of the whole batches in `batches`, in order, until it returns
/// false. Each batch's structure and CRC are checked before its first record is passed; the
/// first bad batch ends the walk with its error, after the records of every good batch before
/// it. Compressed batches are decompressed up to `max_decompressed` bytes each.
pub fn walk_records(
    batches: &[u8],
    max_decompressed: usize,
    f: impl FnMut(RecordRef<'_>) -> bool,
) -> Result<()> {
    walk_with_positions(batches, &[], 0, max_decompressed, f).map_err(|(_, error)| error)
}

/// As [`walk_records`], reporting with an error the position of the batch it is about (counted
/// from `start_position`), since record-level errors do not carry one. `following` are the
/// bytes after `batches` (the next read's), prefetched while the last batch is walked.
pub(crate) fn walk_with_positions(
    batches: &[u8],
    following: &[u8],
    start_position: usize,
    max_decompressed: usize,
    mut f: impl FnMut(RecordRef<'_>) -> bool,
) -> std::result::Result<(), (usize, Error)> {
    let mut batch_iter = BatchIter::new(batches, start_position);
    loop {
        let next_position = start_position + (batches.len() - batch_iter.remaining().len());
        let Some(item) = batch_iter.next() else {
            break;
        };
        let (position, batch) = item.map_err(|e| (next_position, e))?;
        let at = |error| (position, error);
        batch.verify_crc(position).map_err(at)?;
        let records = batch.records(max_decompressed).map_err(at)?;
        let next_bytes = match batch_iter.remaining() {
            [] => following,
            rest => rest,
        };
        let mut ahead = Prefetcher::new(next_bytes, batch.bytes.len());
        for record in records.iter() {
            ahead.advance();
            if !f(record.map_err(at)?) {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// Requests the bytes after the current batch, a few cache lines at a time.
struct Prefetcher<'a> {
    bytes: &'a [u8],
    next: usize,
}

impl<'a> Prefetcher<'a> {
    /// Prefetches up to `len` bytes (about one batch) from the start of `next_bytes`.
    fn new(next_bytes: &'a [u8], len: usize) -> Prefetcher<'a> {
        Prefetcher {
            bytes: &next_bytes[..len.min(next_bytes.len())],
            next: 0,
        }
    }

    #[inline(always)]
    fn advance(&mut self) {
        for _ in 0..PREFETCH_LINES_PER_RECORD {
            if let Some(byte) = self.bytes.get(self.next) {
                prefetch(byte);
                self.next += CACHE_LINE;
            }
        }
    }
}

/// Asks the CPU to bring the cache line holding `byte` into cache, without waiting for it.
#[inline(always)]
fn prefetch(byte: &u8) {
    #[cfg(target_arch = "x86_64")]
    #[allow(unsafe_code, reason = "the prefetch intrinsic is unsafe to call")]
    // SAFETY: `byte` is a valid reference, and a prefetch never faults or changes memory.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(byte).cast());
    }
    // Elsewhere the walk runs as before: hardware prefetchers only.
    #[cfg(not(target_arch = "x86_64"))]
    let _ = byte;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::{ATTRIBUTES, BatchBuilder, Compression, Record};
    use bytes::Bytes;
    use proptest::prelude::*;

    fn batch(values: &[&[u8]], compression: Compression, base: i64) -> Vec<u8> {
        let mut builder = BatchBuilder::new(compression);
        for (i, v) in values.iter().enumerate() {
            builder.push(1000 + i as i64, Some(b"k"), Some(v), &[(b"h", Some(b"x"))]);
        }
        builder.build(base).unwrap()
    }

    fn walked(bytes: &[u8]) -> (Vec<(i64, Vec<u8>)>, Result<()>) {
        let mut seen = Vec::new();
        let result = walk_records(bytes, 1 << 20, |r| {
            seen.push((r.offset, r.value.unwrap().to_vec()));
            true
        });
        (seen, result)
    }

    #[test]
    fn walks_every_record_of_plain_and_compressed_batches_in_order() {
        let mut bytes = batch(&[b"a", b"b"], Compression::None, 0);
        bytes.extend(batch(&[b"c"], Compression::Gzip, 2));
        bytes.extend(batch(&[b"d", b"e"], Compression::Lz4, 3));
        let (seen, result) = walked(&bytes);
        result.unwrap();
        let expected: Vec<(i64, Vec<u8>)> = ["a", "b", "c", "d", "e"]
            .iter()
            .enumerate()
            .map(|(i, v)| (i as i64, v.as_bytes().to_vec()))
            .collect();
        assert_eq!(seen, expected);
    }

    #[test]
    fn a_corrupt_batch_ends_the_walk_after_the_good_ones_with_its_position() {
        let first = batch(&[b"a", b"b"], Compression::None, 0);
        let mut second = batch(&[b"c"], Compression::None, 2);
        let last = second.len() - 1;
        second[last] ^= 0xff;
        let mut bytes = first.clone();
        bytes.extend(&second);
        bytes.extend(batch(&[b"d"], Compression::None, 3));
        let (seen, result) = walked(&bytes);
        assert_eq!(
            seen.len(),
            2,
            "the records of the good batch, nothing after"
        );
        match result {
            Err(Error::ChecksumMismatch { position, .. }) => assert_eq!(position, first.len()),
            other => panic!("expected a checksum mismatch, got {other:?}"),
        }
    }

    #[test]
    fn stops_when_the_visitor_says_so() {
        let bytes = batch(&[b"a", b"b", b"c"], Compression::None, 0);
        let mut count = 0;
        walk_records(&bytes, 1 << 20, |_| {
            count += 1;
            count < 2
        })
        .unwrap();
        assert_eq!(count, 2);
    }

    proptest! {
        // The walk agrees with the owned decoder on what any buffer holds, and never panics
        // on bytes that are not batches at all.
        #[test]
        fn agrees_with_decode_all(
            values in proptest::collection::vec(
                proptest::collection::vec(any::<u8>(), 0..300),
                1..40,
            ),
            split in 1usize..8,
            flip in proptest::option::of((any::<usize>(), any::<u8>())),
        ) {
            let mut bytes = Vec::new();
            for (i, chunk) in values.chunks(split).enumerate() {
                let refs: Vec<&[u8]> = chunk.iter().map(Vec::as_slice).collect();
                bytes.extend(batch(&refs, Compression::None, (i * split) as i64));
            }
            if let Some((at, mask)) = flip {
                let at = ATTRIBUTES + at % (bytes.len() - ATTRIBUTES);
                bytes[at] ^= mask;
            }
            let (seen, result) = walked(&bytes);
            let mut decoded = Vec::new();
            let decode = Record::decode_each(&Bytes::from(bytes.clone()), 1 << 20, |r| {
                decoded.push((r.offset, r.value.unwrap().to_vec()));
                true
            });
            prop_assert_eq!(result.is_ok(), decode.is_ok());
            prop_assert_eq!(seen, decoded);
        }
    }
}
