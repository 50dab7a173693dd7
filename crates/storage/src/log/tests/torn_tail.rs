//! Cut or flip every byte of the last batches of a crashed log: reopening keeps exactly the
//! longest valid prefix, and appends continue right after it.

use std::path::Path;
use std::sync::Arc;

use super::*;
use crate::batch::{BatchIter, PARTITION_LEADER_EPOCH};
use crate::{CrashMode, SimFs, Storage};

const DIR: &str = "/p";
const SEGMENT: &str = "/p/00000000000000000000.log";

/// A crashed log: every batch past the (initial, empty) checkpoint, nothing closed.
fn crashed_log(batches: usize) -> (SimFs, Vec<(usize, usize)>) {
    let fs = SimFs::new();
    let config = LogConfig {
        checkpoint_interval_bytes: 1 << 20,
        segment_bytes: 1 << 20,
        ..small_config()
    };
    let log = PartitionLog::open_with(Arc::new(fs.clone()), DIR, config).unwrap();
    for i in 0..batches {
        let values: Vec<Vec<u8>> = (0..3).map(|j| format!("b{i}r{j}").into_bytes()).collect();
        log.append(&mut batch_of(&values, i as i64)).unwrap();
    }
    // The image is taken before the log is dropped: as if the process died here.
    let image = fs.crash_image(CrashMode::TearTail, 0);
    std::mem::drop(log);
    let file = image.open(Path::new(SEGMENT), false).unwrap();
    let bytes = file.map(file.size().unwrap()).unwrap();
    let spans = BatchIter::new(&bytes, 0)
        .map(|b| {
            let (at, batch) = b.unwrap();
            (at, batch.bytes.len())
        })
        .collect();
    (image, spans)
}

fn copy(fs: &SimFs) -> SimFs {
    fs.crash_image(CrashMode::DropUnsynced, 0)
}

fn check_prefix(fs: SimFs, surviving_batches: usize) {
    let log = PartitionLog::open_with(Arc::new(fs), DIR, small_config()).unwrap();
    let expected = surviving_batches as i64 * 3;
    assert_eq!(log.end_offset().0, expected);
    let all = read_all(&log, 0).unwrap();
    assert_eq!(all.len() as i64, expected);
    for (offset, (_, value)) in &all {
        assert_eq!(
            value,
            &format!("b{}r{}", offset / 3, offset % 3).into_bytes()
        );
    }
    let next = log.append(&mut batch_of(&[b"after".to_vec()], 99)).unwrap();
    assert_eq!(
        next.base_offset.0, expected,
        "appends continue after the valid prefix"
    );
}

#[test]
fn truncation_at_every_byte_of_the_tail_keeps_the_longest_valid_prefix() {
    // A real process crash cannot tear bytes (the page cache keeps them), so the image is
    // rebuilt with the tail cut by hand.
    let (image, spans) = crashed_log(6);
    let tail_start = spans[3].0;
    let end = spans.last().map(|(at, len)| at + len).unwrap();
    for cut in tail_start..end {
        let fs = copy(&image);
        fs.open(Path::new(SEGMENT), false)
            .unwrap()
            .set_len(cut as u64)
            .unwrap();
        let surviving = spans.iter().filter(|(at, len)| at + len <= cut).count();
        check_prefix(fs, surviving);
    }
}

#[test]
fn a_flipped_byte_anywhere_in_the_tail_drops_that_batch_and_everything_after() {
    let (image, spans) = crashed_log(6);
    for (index, &(at, len)) in spans.iter().enumerate().skip(3) {
        for pos in at..at + len {
            let fs = copy(&image);
            let file = fs.open(Path::new(SEGMENT), false).unwrap();
            let mut byte = [0u8];
            file.read_exact_at(&mut byte, pos as u64).unwrap();
            file.write_all_at(&[byte[0] ^ 0x40], pos as u64).unwrap();
            // The leader epoch is the one field neither the CRC nor recovery checks: Kafka
            // rewrites it freely, and so may a flip.
            let harmless =
                (at + PARTITION_LEADER_EPOCH..at + PARTITION_LEADER_EPOCH + 4).contains(&pos);
            check_prefix(fs, if harmless { spans.len() } else { index });
        }
    }
}
