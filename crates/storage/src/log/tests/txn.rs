//! Transactions in a partition log: a model test of producers, markers, rolls, reopens and
//! lost snapshots against a reference, read in both isolation levels at random offsets; the
//! aborted-transaction index on disk (Kafka's layout, rebuilt when damaged, deleted with its
//! segment); and the cleaner's transaction rules.

use std::path::Path;

use proptest::prelude::*;

use super::*;
use crate::batch::BatchIter;
use crate::{AbortedTxn, Marker, ReadCommitted};

/// A batch of `values` (each keyed by its first byte) from producer `id` (epoch 0, none for
/// -1) at `sequence`, transactional or not.
fn producer_batch(id: i64, sequence: i32, values: &[Vec<u8>], transactional: bool) -> Vec<u8> {
    let builder = BatchBuilder::new(Compression::None);
    let mut builder = match id {
        -1 => builder,
        id => builder.producer(id, 0, sequence),
    };
    if transactional {
        builder = builder.transactional();
    }
    for v in values {
        builder.push(1_000, Some(&v[..1]), Some(v), &[]);
    }
    builder.build(0).unwrap()
}

fn marker(id: i64, commit: bool) -> Marker {
    Marker {
        producer_id: id,
        producer_epoch: 0,
        coordinator_epoch: 0,
        commit,
    }
}

/// The records a reader sees from `from`: read_committed stops at the last stable offset and
/// skips aborted transactions as Kafka's consumer does; read_uncommitted reads to the high
/// watermark. Control batches are never records.
fn read_records(log: &PartitionLog, from: i64, committed: bool) -> Vec<(i64, Vec<u8>)> {
    let upper = match committed {
        true => log.last_stable_offset().0,
        false => log.high_watermark().0,
    };
    let mut filter = ReadCommitted::new(match committed {
        true => log.aborted_transactions(Offset(from), Offset(upper)),
        false => Vec::new(),
    });
    let mut out = Vec::new();
    let mut next = from;
    'read: while next < upper {
        let bytes = log.read(Offset(next), 700).unwrap();
        assert!(!bytes.is_empty(), "nothing read at {next} below {upper}");
        for item in BatchIter::new(&bytes, 0) {
            let (_, batch) = item.unwrap();
            if batch.header.base_offset >= upper {
                break 'read;
            }
            next = batch.header.next_offset();
            if !filter.keep(&batch) || batch.header.is_control() {
                continue;
            }
            for record in batch.records(1 << 20).unwrap().iter() {
                let record = record.unwrap();
                if record.offset >= from {
                    out.push((record.offset, record.value.unwrap().to_vec()));
                }
            }
        }
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Open,
    Committed,
    Aborted,
}

/// The reference: every data record's offset, value, producer (if transactional) and fate.
#[derive(Debug, Default)]
struct Reference {
    records: Vec<(i64, Vec<u8>, Option<i64>, Fate)>,
    end: i64,
    /// Each producer's open transaction's first offset.
    open: [Option<i64>; 3],
}

impl Reference {
    fn lso(&self) -> i64 {
        self.open
            .iter()
            .flatten()
            .copied()
            .min()
            .unwrap_or(self.end)
            .min(self.end)
    }

    fn visible(&self, from: i64, committed: bool) -> Vec<(i64, Vec<u8>)> {
        self.records
            .iter()
            .filter(|(offset, _, _, fate)| {
                *offset >= from
                    && (!committed || (*fate == Fate::Committed && *offset < self.lso()))
            })
            .map(|(offset, value, _, _)| (*offset, value.clone()))
            .collect()
    }
}

#[derive(Debug, Clone)]
enum Op {
    Send {
        id: i64,
        records: usize,
        transactional: bool,
    },
    Plain {
        records: usize,
    },
    End {
        id: i64,
        commit: bool,
    },
    Roll,
    Reopen,
    /// Reopens without producer snapshots: recovery replays the whole log.
    ReopenWithoutSnapshots,
    Read {
        at: u64,
        committed: bool,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..3i64, 1..4usize, prop::bool::weighted(0.8))
            .prop_map(|(id, records, transactional)| Op::Send { id, records, transactional }),
        2 => (1..3usize).prop_map(|records| Op::Plain { records }),
        3 => (0..3i64, any::<bool>()).prop_map(|(id, commit)| Op::End { id, commit }),
        1 => Just(Op::Roll),
        1 => Just(Op::Reopen),
        1 => Just(Op::ReopenWithoutSnapshots),
        4 => (any::<u64>(), any::<bool>()).prop_map(|(at, committed)| Op::Read { at, committed }),
    ]
}

fn remove_snapshots(dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "snapshot") {
            std::fs::remove_file(path).unwrap();
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn reads_in_both_isolation_levels_match_a_reference(
        ops in prop::collection::vec(op(), 1..70),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let config = small_config();
        let mut log = Some(PartitionLog::open(dir.path(), config.clone()).unwrap());
        let mut reference = Reference::default();
        let mut sequences = [0i32; 3];
        for (step, op) in ops.into_iter().enumerate() {
            let l = log.as_ref().unwrap();
            match op {
                Op::Send { id, records, transactional } => {
                    let i = id as usize;
                    let values: Vec<Vec<u8>> =
                        (0..records).map(|r| format!("{step}-{r}").into_bytes()).collect();
                    let mut batch = producer_batch(id, sequences[i], &values, transactional);
                    let result = l.append(&mut batch);
                    if reference.open[i].is_some() && !transactional {
                        let refused = matches!(result, Err(crate::Error::InvalidTxnState { .. }));
                        prop_assert!(refused, "{:?}", result);
                        continue;
                    }
                    prop_assert_eq!(result.unwrap().base_offset.0, reference.end);
                    sequences[i] += records as i32;
                    if transactional {
                        reference.open[i].get_or_insert(reference.end);
                    }
                    for value in values {
                        let fate = if transactional { Fate::Open } else { Fate::Committed };
                        let owner = transactional.then_some(id);
                        reference.records.push((reference.end, value, owner, fate));
                        reference.end += 1;
                    }
                }
                Op::Plain { records } => {
                    let values: Vec<Vec<u8>> =
                        (0..records).map(|r| format!("{step}-{r}").into_bytes()).collect();
                    l.append(&mut batch_of(&values, 1_000)).unwrap();
                    for value in values {
                        reference.records.push((reference.end, value, None, Fate::Committed));
                        reference.end += 1;
                    }
                }
                Op::End { id, commit } => {
                    let offset = l.append_marker(&marker(id, commit), 2_000).unwrap();
                    prop_assert_eq!(offset.0, reference.end);
                    reference.end += 1;
                    let fate = if commit { Fate::Committed } else { Fate::Aborted };
                    for record in &mut reference.records {
                        if record.2 == Some(id) && record.3 == Fate::Open {
                            record.3 = fate;
                        }
                    }
                    reference.open[id as usize] = None;
                }
                Op::Roll => l.roll().unwrap(),
                Op::Reopen => {
                    drop(log.take());
                    log = Some(PartitionLog::open(dir.path(), config.clone()).unwrap());
                }
                Op::ReopenWithoutSnapshots => {
                    drop(log.take());
                    remove_snapshots(dir.path());
                    log = Some(PartitionLog::open(dir.path(), config.clone()).unwrap());
                }
                Op::Read { at, committed } => {
                    let from = (at % (reference.end as u64 + 1)) as i64;
                    prop_assert_eq!(
                        read_records(l, from, committed),
                        reference.visible(from, committed),
                        "from {} committed {}", from, committed
                    );
                }
            }
            let l = log.as_ref().unwrap();
            prop_assert_eq!(l.last_stable_offset().0, reference.lso());
            let open: Vec<i64> = l.open_transactions().iter().map(|t| t.first_offset.0).collect();
            let mut expected: Vec<i64> = reference.open.iter().flatten().copied().collect();
            expected.sort_unstable();
            prop_assert_eq!(open, expected);
        }
        let l = log.as_ref().unwrap();
        for committed in [false, true] {
            prop_assert_eq!(read_records(l, 0, committed), reference.visible(0, committed));
        }
    }
}

/// Producer 1 aborts a transaction of two records, producer 2 commits one of one record.
fn abort_and_commit(log: &PartitionLog) {
    let values = |v: &[&str]| v.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>();
    log.append(&mut producer_batch(1, 0, &values(&["a1", "a2"]), true))
        .unwrap();
    log.append(&mut producer_batch(2, 0, &values(&["c1"]), true))
        .unwrap();
    assert_eq!(log.last_stable_offset(), Offset(0));
    log.append_marker(&marker(1, false), 5).unwrap();
    assert_eq!(log.last_stable_offset(), Offset(2));
    log.append_marker(&marker(2, true), 6).unwrap();
    assert_eq!(log.last_stable_offset(), Offset(5));
}

const ABORTED: AbortedTxn = AbortedTxn {
    producer_id: 1,
    first_offset: 0,
    last_offset: 3,
    last_stable_offset: 2,
};

#[test]
fn the_index_file_is_kafkas_layout_and_survives_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(dir.path(), small_config()).unwrap();
    abort_and_commit(&log);
    assert_eq!(log.aborted_transactions(Offset(0), Offset(5)), [ABORTED]);
    assert_eq!(log.aborted_transactions(Offset(4), Offset(5)), []);
    assert_eq!(log.aborted_transactions(Offset(3), Offset(5)), [ABORTED]);
    log.close().unwrap();
    let bytes = std::fs::read(dir.path().join("00000000000000000000.txnindex")).unwrap();
    let mut expected = 0i16.to_be_bytes().to_vec();
    for field in [1i64, 0, 3, 2] {
        expected.extend_from_slice(&field.to_be_bytes());
    }
    assert_eq!(bytes, expected);
    let log = PartitionLog::open(dir.path(), small_config()).unwrap();
    assert_eq!(log.aborted_transactions(Offset(0), Offset(5)), [ABORTED]);
    assert_eq!(log.recovery_report().rebuilt_txn_indexes, 0);
}

#[test]
fn a_damaged_index_is_rebuilt_from_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(dir.path(), small_config()).unwrap();
    abort_and_commit(&log);
    log.close().unwrap();
    let path = dir.path().join("00000000000000000000.txnindex");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[1] = 9; // version 9
    bytes.extend_from_slice(&[1, 2, 3]); // and a torn entry
    std::fs::write(&path, bytes).unwrap();
    let log = PartitionLog::open(dir.path(), small_config()).unwrap();
    assert_eq!(log.recovery_report().rebuilt_txn_indexes, 1);
    assert_eq!(log.aborted_transactions(Offset(0), Offset(5)), [ABORTED]);
    assert_eq!(std::fs::read(&path).unwrap().len(), 34);
    assert_eq!(log.last_stable_offset(), Offset(5));
}

#[test]
fn an_index_goes_with_its_segment() {
    let dir = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(dir.path(), small_config()).unwrap();
    abort_and_commit(&log);
    log.roll().unwrap();
    log.append(&mut batch_of(&[b"later".to_vec()], 10)).unwrap();
    let path = dir.path().join("00000000000000000000.txnindex");
    assert!(path.exists());
    log.delete_records_before(Offset(6)).unwrap();
    assert!(!path.exists());
    assert_eq!(log.aborted_transactions(Offset(6), Offset(7)), []);
}

#[test]
fn an_open_transaction_survives_deletion_of_its_records_and_holds_the_stable_offset() {
    let dir = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(dir.path(), small_config()).unwrap();
    log.append(&mut producer_batch(1, 0, &[b"t".to_vec()], true))
        .unwrap();
    log.append(&mut batch_of(&[b"p".to_vec()], 10)).unwrap();
    log.roll().unwrap();
    log.delete_records_before(Offset(2)).unwrap();
    // Its first record is gone: the stable offset is the log start, not below it.
    assert_eq!(log.last_stable_offset(), Offset(2));
    drop(log);
    let log = PartitionLog::open(dir.path(), small_config()).unwrap();
    assert_eq!(log.open_transactions().len(), 1);
    log.append_marker(&marker(1, false), 20).unwrap();
    assert_eq!(log.last_stable_offset(), Offset(3));
}

#[test]
fn stale_markers_are_refused_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(dir.path(), small_config()).unwrap();
    log.append(&mut producer_batch(1, 0, &[b"t".to_vec()], true))
        .unwrap();
    let newer = Marker {
        coordinator_epoch: 4,
        ..marker(1, true)
    };
    log.append_marker(&newer, 5).unwrap();
    let stale = Marker {
        coordinator_epoch: 3,
        ..marker(1, false)
    };
    assert!(matches!(
        log.append_marker(&stale, 6),
        Err(crate::Error::TransactionCoordinatorFenced { .. })
    ));
    assert_eq!(log.end_offset(), Offset(2));
    assert!(!log.is_poisoned());
}

#[test]
fn the_cleaner_keeps_committed_values_markers_and_undecided_records() {
    let dir = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(dir.path(), small_config()).unwrap();
    let one = |v: &str| vec![v.as_bytes().to_vec()];
    // Key "k": committed "k-old" by producer 1, then "k-aborted" by producer 2, aborted.
    log.append(&mut producer_batch(1, 0, &one("k-old"), true))
        .unwrap();
    log.append_marker(&marker(1, true), 5).unwrap();
    log.append(&mut producer_batch(2, 0, &one("k-aborted"), true))
        .unwrap();
    log.append_marker(&marker(2, false), 6).unwrap();
    // Key "u": "u-1" committed plainly, then "u-open" in producer 1's open transaction, in a
    // segment of its own: undecided, so never cleaned.
    log.append(&mut producer_batch(-1, 0, &one("u-1"), false))
        .unwrap();
    log.roll().unwrap();
    log.append(&mut producer_batch(1, 1, &one("u-open"), true))
        .unwrap();
    log.roll().unwrap();
    log.append(&mut producer_batch(-1, 0, &one("x"), false))
        .unwrap();
    log.roll().unwrap();
    let options = crate::CleanOptions {
        now_ms: 10_000,
        min_compaction_lag_ms: 0,
        delete_retention_ms: 1_000,
        key_map_bytes: 1 << 20,
        first_dirty: Offset(0),
    };
    let report = log.clean(&options).unwrap();
    // Only the first segment is below the stable offset (5, producer 1's open transaction).
    assert_eq!(log.last_stable_offset(), Offset(5));
    assert_eq!(report.segments_cleaned, 1);
    assert_eq!(report.records_removed, 1, "only the aborted record goes");
    let committed = read_records(&log, 0, true);
    let values: Vec<&[u8]> = committed.iter().map(|(_, v)| &v[..]).collect();
    assert_eq!(values, [&b"k-old"[..], b"u-1"]);
    // The markers stayed: the abort is still known, and the index still serves it.
    assert_eq!(log.aborted_transactions(Offset(0), Offset(5)).len(), 1);
    let uncommitted = read_records(&log, 0, false);
    let values: Vec<&[u8]> = uncommitted.iter().map(|(_, v)| &v[..]).collect();
    assert_eq!(values, [&b"k-old"[..], b"u-1", b"u-open", b"x"]);
    // Once the transaction commits, its segment is cleaned too: "u-open" wins over "u-1".
    log.append_marker(&marker(1, true), 9).unwrap();
    log.roll().unwrap();
    let report = log.clean(&options).unwrap();
    assert!(report.segments_cleaned >= 3, "{report:?}");
    let committed = read_records(&log, 0, true);
    let values: Vec<&[u8]> = committed.iter().map(|(_, v)| &v[..]).collect();
    assert_eq!(values, [&b"k-old"[..], b"u-open", b"x"]);
}
