//! Random appends, reads, rolls, retention runs and reopens, applied to the log and to a plain
//! in-memory model; every read is compared.

use proptest::prelude::*;

use super::*;

#[derive(Debug, Clone)]
enum Op {
    Append {
        records: usize,
        size: usize,
        ts: i64,
    },
    Read {
        at: usize,
        max_bytes: usize,
    },
    Roll,
    Retention {
        now: i64,
    },
    Reopen,
    ForTimestamp {
        ts: i64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (1usize..6, 0usize..120, 0i64..1000).prop_map(|(records, size, ts)| Op::Append { records, size, ts }),
        3 => (0usize..1000, 1usize..600).prop_map(|(at, max_bytes)| Op::Read { at, max_bytes }),
        1 => Just(Op::Roll),
        1 => (0i64..2000).prop_map(|now| Op::Retention { now }),
        1 => Just(Op::Reopen),
        1 => (0i64..1100).prop_map(|ts| Op::ForTimestamp { ts }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn the_log_behaves_like_a_vec(ops in proptest::collection::vec(op(), 1..80), lazy in any::<bool>()) {
        let dir = tempfile::tempdir().unwrap();
        let config = LogConfig {
            retention_bytes: Some(3000),
            retention_ms: Some(500),
            fsync: if lazy { FsyncPolicy::Never } else { FsyncPolicy::Always },
            ..small_config()
        };
        let mut log = Some(PartitionLog::open(dir.path(), config.clone()).unwrap());
        // The model: (timestamp, value) by offset, and the first offset still kept.
        let mut model: Vec<(i64, Vec<u8>)> = Vec::new();
        let mut log_start = 0i64;
        for op in ops {
            let l = log.as_ref().unwrap();
            match op {
                Op::Append { records, size, ts } => {
                    let values: Vec<Vec<u8>> = (0..records)
                        .map(|i| format!("{}:{}", model.len() + i, "x".repeat(size)).into_bytes())
                        .collect();
                    let info = l.append(&mut batch_of(&values, ts)).unwrap();
                    prop_assert_eq!(info.base_offset.0, model.len() as i64);
                    for (i, v) in values.into_iter().enumerate() {
                        model.push((ts + i as i64, v));
                    }
                }
                Op::Read { at, max_bytes } => {
                    let end = model.len() as i64;
                    let from = log_start + at as i64 % (end - log_start + 1);
                    let bytes = l.read(Offset(from), max_bytes).unwrap();
                    let records = Record::decode_all(&bytes, 1 << 20).unwrap();
                    prop_assert_eq!(records.is_empty(), from == end);
                    if let Some(first) = records.first() {
                        prop_assert!(first.offset <= from);
                    }
                    // Visiting the same range passes the same records from `from` on.
                    let mut visited = Vec::new();
                    let next = l
                        .visit_records(Offset(from), max_bytes, |r| {
                            visited.push((r.offset, r.timestamp, r.value.map(<[u8]>::to_vec)));
                            true
                        })
                        .unwrap();
                    let expected: Vec<_> = records
                        .iter()
                        .filter(|r| r.offset >= from)
                        .map(|r| (r.offset, r.timestamp, r.value.as_deref().map(<[u8]>::to_vec)))
                        .collect();
                    prop_assert_eq!(next.0, expected.last().map_or(from, |r| r.0 + 1));
                    prop_assert_eq!(visited, expected);
                    for r in records {
                        let (ts, value) = &model[r.offset as usize];
                        prop_assert_eq!(r.timestamp, *ts);
                        prop_assert_eq!(r.value.as_deref(), Some(value.as_slice()));
                    }
                }
                Op::Roll => l.roll().unwrap(),
                Op::Retention { now } => {
                    let report = l.apply_retention(now).unwrap();
                    prop_assert!(report.log_start_offset.0 >= log_start);
                    prop_assert!(report.log_start_offset.0 <= model.len() as i64);
                    log_start = report.log_start_offset.0;
                }
                Op::Reopen => {
                    drop(log.take());
                    let reopened = PartitionLog::open(dir.path(), config.clone()).unwrap();
                    prop_assert_eq!(reopened.recovery_report().scanned_bytes, 0);
                    log = Some(reopened);
                }
                Op::ForTimestamp { ts } => {
                    let expected = model
                        .iter()
                        .enumerate()
                        .skip(log_start as usize)
                        .find(|(_, (t, _))| *t >= ts)
                        .map(|(o, _)| Offset(o as i64));
                    prop_assert_eq!(l.offset_for_timestamp(ts).unwrap(), expected);
                }
            }
            let l = log.as_ref().unwrap();
            prop_assert_eq!(l.end_offset().0, model.len() as i64);
            prop_assert_eq!(l.log_start_offset().0, log_start);
        }
        let l = log.as_ref().unwrap();
        let all = read_all(l, log_start).unwrap();
        prop_assert_eq!(all.len(), model.len() - log_start as usize);
        for (offset, (ts, value)) in all {
            prop_assert_eq!(&model[offset as usize], &(ts, value));
        }
    }
}
