//! Transactions through the engine: commit and abort as read_committed readers see them, a
//! retried end writing nothing, fencing by a new instance and by the timeout, offsets that
//! commit with the transaction, produce-side verification, a crash between the decision and
//! the markers; a model test of the coordinator and the last stable offset against a
//! reference through crashes, timeouts and fencing; and power cuts of the whole engine.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use logd_offsets::OffsetCommit;
use logd_storage::batch::{BatchBuilder, BatchIter, Compression};
use logd_storage::{ReadCommitted, SimFs, Storage};
use proptest::prelude::*;

use super::TxnState;
use crate::{
    AppendInfo, Clock, Config, Error, Housekeeping, Log, ManualClock, Offset, TopicConfig,
};

fn open_on(storage: Arc<dyn Storage>, dir: &Path, clock: Arc<ManualClock>) -> crate::Result<Log> {
    let config = Config {
        housekeeping: Housekeeping {
            enabled: false,
            ..Housekeeping::default()
        },
        ..Config::default()
    };
    let log = Log::open_with(storage, clock, dir, config)?;
    if log.partition_count("out").is_err() {
        log.create_topic(
            "out",
            TopicConfig {
                partitions: 2,
                ..TopicConfig::default()
            },
        )?;
    }
    Ok(log)
}

fn open(dir: &Path, clock: Arc<ManualClock>) -> Log {
    open_on(Arc::new(logd_storage::RealFs), dir, clock).unwrap()
}

/// A transactional batch of `values` to `out`-`partition`.
fn send(
    log: &Log,
    partition: u32,
    (producer_id, epoch): (i64, i16),
    sequence: i32,
    values: &[&str],
) -> crate::Result<AppendInfo> {
    let mut builder = BatchBuilder::new(Compression::None)
        .producer(producer_id, epoch, sequence)
        .transactional();
    for v in values {
        builder.push(0, None, Some(v.as_bytes()), &[]);
    }
    log.append("out", partition, &mut builder.build(0).unwrap())
}

/// What a read_committed reader of `out`-`partition` sees from the start.
fn committed(log: &Log, partition: u32) -> Vec<String> {
    let p = log.partition("out", partition).unwrap();
    let upper = p.last_stable_offset();
    let mut filter = ReadCommitted::new(p.aborted_transactions(Offset(0), upper));
    let mut out = Vec::new();
    let mut next = 0;
    while next < upper.0 {
        let bytes = p.read(Offset(next), 1 << 20).unwrap();
        for item in BatchIter::new(&bytes, 0) {
            let (_, batch) = item.unwrap();
            if batch.header.base_offset >= upper.0 {
                return out;
            }
            next = batch.header.next_offset();
            if !filter.keep(&batch) {
                continue;
            }
            for record in batch.records(1 << 20).unwrap().iter() {
                out.push(String::from_utf8(record.unwrap().value.unwrap().to_vec()).unwrap());
            }
        }
    }
    out
}

fn state(log: &Log, id: &str) -> TxnState {
    let all = log.transactions();
    all.iter()
        .find(|t| t.transactional_id == id)
        .map(|t| t.state)
        .unwrap()
}

#[test]
fn commits_and_aborts_reach_read_committed_readers_and_a_retried_end_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), Arc::new(ManualClock::new(0)));
    let (pid, epoch) = log.init_transactional_producer("t", 60_000, None).unwrap();
    assert_eq!(epoch, 0);
    let parts = [("out".to_owned(), 0), ("out".to_owned(), 1)];
    log.add_partitions_to_txn("t", pid, epoch, &parts).unwrap();
    assert_eq!(state(&log, "t"), TxnState::Ongoing);
    send(&log, 0, (pid, epoch), 0, &["a", "b"]).unwrap();
    send(&log, 1, (pid, epoch), 0, &["c"]).unwrap();
    let p0 = log.partition("out", 0).unwrap();
    assert_eq!(p0.last_stable_offset(), Offset(0));
    assert_eq!(committed(&log, 0), Vec::<String>::new());
    log.end_txn("t", pid, epoch, true).unwrap();
    assert_eq!(state(&log, "t"), TxnState::CompleteCommit);
    assert_eq!(
        (committed(&log, 0), committed(&log, 1)),
        (vec!["a".into(), "b".into()], vec!["c".into()])
    );
    assert_eq!(p0.last_stable_offset(), Offset(3));
    // A retried commit: answered, nothing written.
    log.end_txn("t", pid, epoch, true).unwrap();
    assert_eq!(p0.end_offset(), Offset(3));
    assert!(matches!(
        log.end_txn("t", pid, epoch, false),
        Err(Error::InvalidTxnState(_))
    ));
    // The next transaction aborts.
    log.add_partitions_to_txn("t", pid, epoch, &parts[..1])
        .unwrap();
    send(&log, 0, (pid, epoch), 2, &["x"]).unwrap();
    log.end_txn("t", pid, epoch, false).unwrap();
    log.end_txn("t", pid, epoch, false).unwrap();
    assert_eq!(p0.end_offset(), Offset(5), "one abort marker, not two");
    assert_eq!(committed(&log, 0), ["a", "b"]);
    assert_eq!(p0.aborted_transactions(Offset(0), Offset(5)).len(), 1);
    // Nothing open: ending is refused.
    log.init_transactional_producer("u", 60_000, None).unwrap();
    let (u, _) = log.init_transactional_producer("u", 60_000, None).unwrap();
    assert!(matches!(
        log.end_txn("u", u, 1, true),
        Err(Error::InvalidTxnState(_))
    ));
}

#[test]
fn a_new_instance_fences_the_old_one_and_aborts_what_it_left() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), Arc::new(ManualClock::new(0)));
    let (pid, old) = log.init_transactional_producer("t", 60_000, None).unwrap();
    log.add_partitions_to_txn("t", pid, old, &[("out".into(), 0)])
        .unwrap();
    send(&log, 0, (pid, old), 0, &["zombie"]).unwrap();
    let (same, new) = log.init_transactional_producer("t", 60_000, None).unwrap();
    assert_eq!((same, new), (pid, old + 1));
    assert_eq!(state(&log, "t"), TxnState::CompleteAbort);
    let p0 = log.partition("out", 0).unwrap();
    assert_eq!(p0.last_stable_offset(), Offset(2));
    assert!(matches!(
        send(&log, 0, (pid, old), 1, &["late"]),
        Err(Error::ProducerFenced { .. })
    ));
    assert!(matches!(
        log.end_txn("t", pid, old, true),
        Err(Error::ProducerFenced { .. })
    ));
    assert!(matches!(
        log.add_partitions_to_txn("t", pid, old, &[("out".into(), 0)]),
        Err(Error::ProducerFenced { .. })
    ));
    assert!(matches!(
        log.end_txn("t", pid + 1, new, true),
        Err(Error::InvalidProducerIdMapping { .. })
    ));
    // The new instance works from sequence 0.
    log.add_partitions_to_txn("t", pid, new, &[("out".into(), 0)])
        .unwrap();
    send(&log, 0, (pid, new), 0, &["fresh"]).unwrap();
    log.end_txn("t", pid, new, true).unwrap();
    assert_eq!(committed(&log, 0), ["fresh"]);
    // KIP-360: a client naming the epoch before the last bump gets the same answer again;
    // one naming an older one is fenced.
    assert_eq!(
        log.init_transactional_producer("t", 60_000, Some((pid, new)))
            .unwrap(),
        (pid, new + 1)
    );
    assert_eq!(
        log.init_transactional_producer("t", 60_000, Some((pid, new)))
            .unwrap(),
        (pid, new + 1)
    );
    assert!(matches!(
        log.init_transactional_producer("t", 60_000, Some((pid, old))),
        Err(Error::ProducerFenced { .. })
    ));
    assert!(matches!(
        log.init_transactional_producer("t", 900_001, None),
        Err(Error::InvalidTransactionTimeout { .. })
    ));
}

#[test]
fn a_dead_producers_transaction_is_aborted_after_its_timeout_and_the_stable_offset_moves() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_000));
    let log = open(dir.path(), clock.clone());
    let (pid, epoch) = log.init_transactional_producer("t", 5_000, None).unwrap();
    log.add_partitions_to_txn("t", pid, epoch, &[("out".into(), 0)])
        .unwrap();
    send(&log, 0, (pid, epoch), 0, &["never"]).unwrap();
    log.append("out", 0, &mut {
        let mut b = BatchBuilder::new(Compression::None);
        b.push(0, None, Some(b"plain"), &[]);
        b.build(0).unwrap()
    })
    .unwrap();
    let p0 = log.partition("out", 0).unwrap();
    assert_eq!(p0.last_stable_offset(), Offset(0));
    clock.advance(4_999);
    assert_eq!(log.abort_expired_transactions().unwrap(), 0);
    clock.advance(1);
    assert_eq!(log.abort_expired_transactions().unwrap(), 1);
    assert_eq!(p0.last_stable_offset(), Offset(3));
    assert_eq!(committed(&log, 0), ["plain"]);
    assert!(matches!(
        log.end_txn("t", pid, epoch, true),
        Err(Error::ProducerFenced { .. })
    ));
    assert_eq!(log.transactions()[0].epoch, epoch + 1);
}

#[test]
fn offsets_commit_with_the_transaction_and_never_without_it() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), Arc::new(ManualClock::new(0)));
    let (pid, epoch) = log.init_transactional_producer("t", 60_000, None).unwrap();
    let offsets = |offset| {
        vec![OffsetCommit {
            topic: "in".into(),
            partition: 3,
            offset,
            metadata: "m".into(),
        }]
    };
    assert!(matches!(
        log.txn_offset_commit("t", pid, epoch, "g", &offsets(7)),
        Err(Error::InvalidTxnState(_))
    ));
    log.add_offsets_to_txn("t", pid, epoch, "g").unwrap();
    log.txn_offset_commit("t", pid, epoch, "g", &offsets(7))
        .unwrap();
    assert!(
        log.pending_transactional_offsets("g")
            .contains(&("in".into(), 3))
    );
    assert!(log.offsets().fetch("g", "in", 3).is_none());
    log.end_txn("t", pid, epoch, false).unwrap();
    assert!(log.offsets().fetch("g", "in", 3).is_none());
    assert!(log.pending_transactional_offsets("g").is_empty());
    log.add_offsets_to_txn("t", pid, epoch, "g").unwrap();
    log.txn_offset_commit("t", pid, epoch, "g", &offsets(9))
        .unwrap();
    log.end_txn("t", pid, epoch, true).unwrap();
    assert_eq!(log.offsets().fetch("g", "in", 3).unwrap().offset, 9);
    assert!(matches!(
        log.txn_offset_commit("t", pid, epoch, "g", &offsets(-1)),
        Err(Error::InvalidTxnState(_) | Error::Offsets(_))
    ));
}

#[test]
fn a_transactional_batch_outside_its_transaction_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), Arc::new(ManualClock::new(0)));
    let (pid, epoch) = log.init_transactional_producer("t", 60_000, None).unwrap();
    assert!(matches!(
        send(&log, 0, (pid, epoch), 0, &["x"]),
        Err(Error::InvalidTxnState(_))
    ));
    log.add_partitions_to_txn("t", pid, epoch, &[("out".into(), 1)])
        .unwrap();
    assert!(matches!(
        send(&log, 0, (pid, epoch), 0, &["x"]),
        Err(Error::InvalidTxnState(_))
    ));
    let idempotent = log.init_producer_id().unwrap();
    assert!(matches!(
        send(&log, 0, (idempotent, 0), 0, &["x"]),
        Err(Error::InvalidTxnState(_))
    ));
    assert!(matches!(
        log.add_partitions_to_txn("t", pid, epoch, &[("nope".into(), 0)]),
        Err(Error::UnknownTopic(_))
    ));
    assert_eq!(log.partition("out", 0).unwrap().end_offset(), Offset(0));
}

#[test]
fn markers_a_crash_interrupted_are_written_on_the_next_open() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(0));
    let log = open(dir.path(), clock.clone());
    let (pid, epoch) = log.init_transactional_producer("t", 60_000, None).unwrap();
    log.add_partitions_to_txn("t", pid, epoch, &[("out".into(), 0)])
        .unwrap();
    send(&log, 0, (pid, epoch), 0, &["kept"]).unwrap();
    log.add_offsets_to_txn("t", pid, epoch, "g").unwrap();
    let offsets = [OffsetCommit {
        topic: "in".into(),
        partition: 0,
        offset: 4,
        metadata: String::new(),
    }];
    log.txn_offset_commit("t", pid, epoch, "g", &offsets)
        .unwrap();
    // The decision is logged, and the process dies before any marker.
    let decided = log.shared.txns.end("t", pid, epoch, true, 0).unwrap();
    assert!(decided.is_some());
    drop(decided);
    drop(log);
    let log = open(dir.path(), clock);
    assert_eq!(state(&log, "t"), TxnState::CompleteCommit);
    assert_eq!(committed(&log, 0), ["kept"]);
    assert_eq!(log.offsets().fetch("g", "in", 0).unwrap().offset, 4);
    // The client's retry of its EndTxn is answered, and writes nothing.
    log.end_txn("t", pid, epoch, true).unwrap();
    assert_eq!(log.partition("out", 0).unwrap().end_offset(), Offset(2));
}

#[test]
fn a_finish_that_fails_is_taken_up_again_by_housekeeping_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(0));
    let config = Config {
        housekeeping: Housekeeping {
            enabled: true,
            ..Housekeeping::default()
        },
        ..Config::default()
    };
    let storage = Arc::new(logd_storage::RealFs);
    let log = Log::open_with(storage, clock.clone(), dir.path(), config).unwrap();
    log.create_topic(
        "out",
        TopicConfig {
            partitions: 2,
            ..TopicConfig::default()
        },
    )
    .unwrap();
    let (pid, epoch) = log.init_transactional_producer("t", 60_000, None).unwrap();
    log.add_partitions_to_txn("t", pid, epoch, &[("out".into(), 0), ("out".into(), 1)])
        .unwrap();
    send(&log, 0, (pid, epoch), 0, &["a"]).unwrap();
    send(&log, 1, (pid, epoch), 0, &["b"]).unwrap();
    log.shared.txns.fail_completions.store(1, Ordering::SeqCst);
    assert!(log.end_txn("t", pid, epoch, true).is_err());
    assert_eq!(state(&log, "t"), TxnState::PrepareCommit);
    // The producer's retry waits, as on Kafka, while the finish is outstanding...
    let started = std::time::Instant::now();
    loop {
        match log.end_txn("t", pid, epoch, true) {
            Err(Error::ConcurrentTransactions(_)) => {}
            Ok(()) => break,
            Err(e) => panic!("{e}"),
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "never finished"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // ...and housekeeping finishes it: complete, every marker written once, the stable
    // offsets at the ends, and the id usable again.
    assert_eq!(state(&log, "t"), TxnState::CompleteCommit);
    for partition in 0..2 {
        let p = log.partition("out", partition).unwrap();
        assert_eq!(p.last_stable_offset(), p.end_offset());
    }
    assert_eq!(committed(&log, 0), ["a"]);
    assert_eq!(committed(&log, 1), ["b"]);
    log.add_partitions_to_txn("t", pid, epoch, &[("out".into(), 0)])
        .unwrap();
    send(&log, 0, (pid, epoch), 1, &["c"]).unwrap();
    log.end_txn("t", pid, epoch, true).unwrap();
    assert_eq!(committed(&log, 0), ["a", "c"]);

    // A timed-out transaction whose abort fails part-way is finished the same way.
    log.add_partitions_to_txn("t", pid, epoch, &[("out".into(), 1)])
        .unwrap();
    send(&log, 1, (pid, epoch), 1, &["late"]).unwrap();
    log.shared.txns.fail_completions.store(1, Ordering::SeqCst);
    clock.advance(60_000);
    let started = std::time::Instant::now();
    while state(&log, "t") != TxnState::CompleteAbort {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "abort never finished"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(log.shared.txns.fail_completions.load(Ordering::SeqCst), 0);
    let p = log.partition("out", 1).unwrap();
    assert_eq!(p.last_stable_offset(), p.end_offset());
    assert_eq!(committed(&log, 1), ["b"]);
}

#[test]
fn ids_decide_in_parallel_and_share_the_coordinators_fsyncs() {
    // Every fsync takes 10 ms. Sixteen ids each run five transactions; under one coordinator
    // lock their decisions (three logged records a transaction) would queue one fsync after
    // another: 16 x 5 x 3 x 10 ms = 2.4 s at least.
    let fs = SimFs::new();
    let clock = Arc::new(ManualClock::new(0));
    let log = open_on(Arc::new(fs.clone()), Path::new("/e"), clock).unwrap();
    fs.set_sync_delay(Duration::from_millis(10));
    let ops_before = fs.ops();
    let (ids, rounds) = (16, 5);
    let serial = Duration::from_millis(10) * (ids * rounds * 3) as u32;
    let started = std::time::Instant::now();
    std::thread::scope(|s| {
        for i in 0..ids {
            let log = &log;
            s.spawn(move || {
                let id = format!("t{i}");
                let (pid, epoch) = log.init_transactional_producer(&id, 60_000, None).unwrap();
                let partition = (i % 2) as u32;
                for round in 0..rounds {
                    log.add_partitions_to_txn(&id, pid, epoch, &[("out".into(), partition)])
                        .unwrap();
                    send(log, partition, (pid, epoch), round as i32, &[&id]).unwrap();
                    log.end_txn(&id, pid, epoch, true).unwrap();
                }
            });
        }
    });
    let took = started.elapsed();
    assert!(
        took < serial / 3,
        "{took:?} for what one lock makes at least {serial:?}"
    );
    for partition in 0..2 {
        assert_eq!(committed(&log, partition).len(), ids / 2 * rounds);
    }
    eprintln!(
        "{} transactions of {ids} ids in {took:?} ({} file operations; one lock: >= {serial:?})",
        ids * rounds,
        fs.ops() - ops_before
    );
}

#[test]
fn one_transactions_markers_wait_for_their_fsyncs_together() {
    // Every fsync takes 40 ms. An EndTxn over six partitions logs its decision, writes six
    // markers and logs its completion: 8 x 40 ms one after another, 3 x 40 ms with the
    // markers' fsyncs at once.
    let fs = SimFs::new();
    let clock = Arc::new(ManualClock::new(0));
    let log = open_on(Arc::new(fs.clone()), Path::new("/e"), clock).unwrap();
    let wide = TopicConfig {
        partitions: 6,
        ..TopicConfig::default()
    };
    log.create_topic("wide", wide).unwrap();
    let (pid, epoch) = log.init_transactional_producer("t", 60_000, None).unwrap();
    let partitions: Vec<(String, u32)> = (0..6).map(|p| ("wide".to_owned(), p)).collect();
    log.add_partitions_to_txn("t", pid, epoch, &partitions)
        .unwrap();
    for p in 0..6 {
        let mut builder = BatchBuilder::new(Compression::None)
            .producer(pid, epoch, 0)
            .transactional();
        builder.push(0, None, Some(b"v"), &[]);
        log.append("wide", p, &mut builder.build(0).unwrap())
            .unwrap();
    }
    let fsync = Duration::from_millis(40);
    fs.set_sync_delay(fsync);
    let started = std::time::Instant::now();
    log.end_txn("t", pid, epoch, true).unwrap();
    let took = started.elapsed();
    assert!(took >= fsync * 3, "{took:?}: not every fsync waited for");
    assert!(
        took < fsync * 6,
        "{took:?}: the markers' fsyncs ran one after another"
    );
    for p in 0..6 {
        let log = log.partition("wide", p).unwrap();
        assert_eq!(log.last_stable_offset(), Offset(2), "wide-{p}");
        assert_eq!(log.high_watermark(), Offset(2), "wide-{p}");
    }
}

/// One thing a transactional client, its coordinator, the clock or the machine does.
#[derive(Debug, Clone)]
enum Op {
    /// Instance `id` (re)initialises: the one before is fenced.
    Init {
        id: usize,
    },
    Add {
        id: usize,
        partition: u32,
    },
    Send {
        id: usize,
        partition: u32,
        records: usize,
    },
    End {
        id: usize,
        commit: bool,
    },
    /// An EndTxn whose markers are written but whose completion fails to log: the id stays
    /// preparing until housekeeping or a restart finishes it.
    FailedEnd {
        id: usize,
        commit: bool,
    },
    /// Time passes; housekeeping finishes interrupted transactions and aborts timed-out ones.
    Tick {
        ms: i64,
    },
    /// The engine restarts.
    Restart,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => (0..2usize).prop_map(|id| Op::Init { id }),
        3 => (0..2usize, 0..2u32).prop_map(|(id, partition)| Op::Add { id, partition }),
        5 => (0..2usize, 0..2u32, 1..3usize).prop_map(|(id, partition, records)| Op::Send { id, partition, records }),
        3 => (0..2usize, any::<bool>()).prop_map(|(id, commit)| Op::End { id, commit }),
        2 => (0..2usize, any::<bool>()).prop_map(|(id, commit)| Op::FailedEnd { id, commit }),
        1 => (1..4_000i64).prop_map(|ms| Op::Tick { ms }),
        1 => Just(Op::Restart),
    ]
}

/// The reference's view of one transactional id.
#[derive(Debug, Clone, Default)]
struct Client {
    /// Producer id and epoch, once initialised.
    producer: Option<(i64, i16)>,
    /// Partitions added to the open transaction, and the values sent to each.
    open: BTreeMap<u32, Vec<String>>,
    started: Option<i64>,
    sequences: [i32; 2],
    /// A failed end is still to finish: every call of the id is CONCURRENT_TRANSACTIONS.
    finishing: bool,
}

/// A record in the reference: its offset, value, the id that sent it, and whether its
/// transaction committed (`Some(true)`), aborted, or is open.
type Sent = (i64, String, usize, Option<bool>);

/// What a read_committed reader must see: committed records below the first still open.
fn expected(records: &[Sent]) -> Vec<String> {
    let stable = records
        .iter()
        .find(|r| r.3.is_none())
        .map_or(i64::MAX, |r| r.0);
    records
        .iter()
        .filter(|r| r.3 == Some(true) && r.0 < stable)
        .map(|r| r.1.clone())
        .collect()
}

/// Decides client `id`'s open records: committed or aborted.
fn decide(records: &mut [Vec<Sent>; 2], id: usize, commit: bool) {
    for record in records.iter_mut().flatten() {
        if record.2 == id && record.3.is_none() {
            record.3 = Some(commit);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// Whatever clients do, crash or time out, a read_committed reader of each partition sees
    /// exactly the committed transactions' records in order, each partition's last stable
    /// offset is its oldest open transaction's start (or its end), and no transaction is left
    /// open in a partition without its id's transaction being open.
    #[test]
    fn the_coordinator_and_the_stable_offset_match_a_reference(ops in prop::collection::vec(op(), 1..60)) {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(0));
        let mut log = open(dir.path(), clock.clone());
        let ids = ["a", "b"];
        let mut clients = [Client::default(), Client::default()];
        let mut records: [Vec<Sent>; 2] = Default::default();
        let timeout = 5_000;
        for (step, op) in ops.into_iter().enumerate() {
            match op {
                Op::Init { id } => {
                    let got = log.init_transactional_producer(ids[id], timeout, None);
                    if clients[id].finishing {
                        prop_assert!(matches!(got, Err(Error::ConcurrentTransactions(_))), "init: {got:?}");
                        continue;
                    }
                    let got = got.unwrap();
                    decide(&mut records, id, false);
                    let c = &mut clients[id];
                    c.producer = Some(got);
                    c.open.clear();
                    c.started = None;
                    c.sequences = [0; 2];
                }
                Op::Add { id, partition } => {
                    let c = &mut clients[id];
                    let Some((pid, epoch)) = c.producer else { continue };
                    match log.add_partitions_to_txn(ids[id], pid, epoch, &[("out".into(), partition)]) {
                        Err(Error::ConcurrentTransactions(_)) if c.finishing => {}
                        Ok(()) => {
                            c.started.get_or_insert(clock.now_ms());
                            c.open.entry(partition).or_default();
                        }
                        Err(Error::ProducerFenced { .. }) => c.producer = None,
                        Err(e) => prop_assert!(false, "add: {e}"),
                    }
                }
                Op::Send { id, partition, records: count } => {
                    let c = &mut clients[id];
                    let Some(producer) = c.producer else { continue };
                    let values: Vec<String> = (0..count).map(|r| format!("{step}-{r}")).collect();
                    let refs: Vec<&str> = values.iter().map(String::as_str).collect();
                    let seq = c.sequences[partition as usize];
                    let result = send(&log, partition, producer, seq, &refs);
                    match (result, c.open.get_mut(&partition)) {
                        (Ok(info), Some(sent)) => {
                            for (i, value) in values.iter().enumerate() {
                                let offset = info.base_offset.0 + i as i64;
                                records[partition as usize].push((offset, value.clone(), id, None));
                            }
                            sent.extend(values);
                            c.sequences[partition as usize] += count as i32;
                        }
                        (Err(Error::InvalidTxnState(_)), None) => {}
                        (Err(Error::ConcurrentTransactions(_)), _) if c.finishing => {}
                        (Err(Error::ProducerFenced { .. }), _) => c.producer = None,
                        (other, open) => prop_assert!(false, "send: {other:?} with {open:?}"),
                    }
                }
                Op::End { id, commit } => {
                    let c = &mut clients[id];
                    let Some((pid, epoch)) = c.producer else { continue };
                    match log.end_txn(ids[id], pid, epoch, commit) {
                        Err(Error::ConcurrentTransactions(_)) if c.finishing => {}
                        Ok(()) => {
                            decide(&mut records, id, commit);
                            c.open.clear();
                            c.started = None;
                        }
                        Err(Error::InvalidTxnState(_)) => prop_assert!(c.open.is_empty()),
                        Err(Error::ProducerFenced { .. }) => c.producer = None,
                        Err(e) => prop_assert!(false, "end: {e}"),
                    }
                }
                Op::FailedEnd { id, commit } => {
                    let c = &mut clients[id];
                    let Some((pid, epoch)) = c.producer else { continue };
                    let fail = &log.shared.txns.fail_completions;
                    fail.store(1, std::sync::atomic::Ordering::SeqCst);
                    let ended = log.end_txn(ids[id], pid, epoch, commit);
                    let injected = fail.swap(0, std::sync::atomic::Ordering::SeqCst) == 0;
                    match ended {
                        Err(Error::InvalidTxnState(_)) if injected => {
                            // The markers are written: readers see the decision at once.
                            prop_assert!(state(&log, ids[id]).is_preparing());
                            decide(&mut records, id, commit);
                            c.open.clear();
                            c.started = None;
                            c.finishing = true;
                        }
                        Err(Error::ConcurrentTransactions(_)) if c.finishing => {}
                        Ok(()) | Err(Error::InvalidTxnState(_)) => prop_assert!(c.open.is_empty()),
                        Err(Error::ProducerFenced { .. }) => c.producer = None,
                        Err(e) => prop_assert!(false, "failed end: {e}"),
                    }
                }
                Op::Tick { ms } => {
                    clock.advance(ms);
                    log.finish_interrupted_transactions().unwrap();
                    for c in &mut clients {
                        c.finishing = false;
                    }
                    log.abort_expired_transactions().unwrap();
                    let now = clock.now_ms();
                    for (id, c) in clients.iter_mut().enumerate() {
                        if c.started.is_some_and(|s| now - s >= i64::from(timeout)) {
                            // Aborted and fenced: the client learns it on its next call.
                            decide(&mut records, id, false);
                            c.open.clear();
                            c.started = None;
                        }
                    }
                }
                Op::Restart => {
                    drop(log);
                    log = open(dir.path(), clock.clone());
                    for c in &mut clients {
                        c.finishing = false;
                    }
                }
            }
            for partition in 0..2u32 {
                prop_assert_eq!(committed(&log, partition), expected(&records[partition as usize]));
                let p = log.partition("out", partition).unwrap();
                let open_ids: Vec<i64> = p.open_transactions().iter().map(|t| t.producer_id).collect();
                for pid in open_ids {
                    let owner = log.transactions().into_iter().find(|t| t.producer_id == pid);
                    let holds = owner.is_some_and(|t| {
                        t.state == TxnState::Ongoing && t.partitions.contains(&("out".to_owned(), partition))
                    });
                    prop_assert!(holds, "producer {} has a transaction open in out-{} that no id holds", pid, partition);
                }
            }
        }
    }
}

/// What the power-cut workload was answered: values of acknowledged commits per partition,
/// and values of acknowledged aborts.
type Acked = (Vec<String>, Vec<String>);

fn engine_workload(fs: &SimFs) -> Acked {
    let mut acked: Acked = Default::default();
    let clock = Arc::new(ManualClock::new(0));
    let Ok(log) = open_on(Arc::new(fs.clone()), Path::new("/e"), clock) else {
        return acked;
    };
    let Ok((pid, epoch)) = log.init_transactional_producer("t", 60_000, None) else {
        return acked;
    };
    for round in 0..3 {
        if log
            .add_partitions_to_txn("t", pid, epoch, &[("out".into(), 0)])
            .is_err()
        {
            return acked;
        }
        let value = format!("r{round}");
        if send(&log, 0, (pid, epoch), round, &[&value]).is_err() {
            return acked;
        }
        let commit = round != 1;
        if log.end_txn("t", pid, epoch, commit).is_err() {
            return acked;
        }
        match commit {
            true => acked.0.push(value),
            false => acked.1.push(value),
        }
    }
    acked
}

#[test]
fn a_power_cut_never_loses_an_acknowledged_end_nor_leaves_a_transaction_hanging() {
    let states = SimFs::every_power_cut(engine_workload, |image, (commits, aborts), cut, mode| {
        let clock = Arc::new(ManualClock::new(0));
        let log = match open_on(Arc::new(image), Path::new("/e"), clock.clone()) {
            Ok(log) => log,
            Err(e) => {
                assert!(
                    commits.is_empty() && aborts.is_empty(),
                    "cut {cut} {mode:?}: {e}"
                );
                return;
            }
        };
        let seen = committed(&log, 0);
        for value in commits {
            assert!(
                seen.contains(value),
                "cut {cut} {mode:?}: committed {value} lost: {seen:?}"
            );
        }
        for value in aborts {
            assert!(
                !seen.contains(value),
                "cut {cut} {mode:?}: aborted {value} visible"
            );
        }
        // Whatever the crash left open ends by its timeout: the stable offset reaches the end.
        clock.advance(60_000);
        log.abort_expired_transactions().unwrap();
        let p = log.partition("out", 0).unwrap();
        assert_eq!(
            p.last_stable_offset(),
            p.end_offset(),
            "cut {cut} {mode:?}: a transaction hangs"
        );
    });
    assert!(states > 250, "{states} crash states");
}

#[test]
fn the_embedded_consumer_reads_committed_or_everything_but_never_a_marker() {
    use crate::{AutoOffsetReset, Consumer, ConsumerConfig, IsolationLevel, TopicPartition};
    use std::time::Duration;
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), Arc::new(ManualClock::new(0)));
    let (pid, epoch) = log.init_transactional_producer("t", 60_000, None).unwrap();
    let part = [("out".to_owned(), 0)];
    log.add_partitions_to_txn("t", pid, epoch, &part).unwrap();
    send(&log, 0, (pid, epoch), 0, &["c1", "c2"]).unwrap();
    log.end_txn("t", pid, epoch, true).unwrap();
    log.add_partitions_to_txn("t", pid, epoch, &part).unwrap();
    send(&log, 0, (pid, epoch), 2, &["aborted"]).unwrap();
    log.end_txn("t", pid, epoch, false).unwrap();
    log.add_partitions_to_txn("t", pid, epoch, &part).unwrap();
    send(&log, 0, (pid, epoch), 3, &["open"]).unwrap();
    let read = |isolation| {
        let mut consumer = Consumer::new(
            &log,
            ConsumerConfig {
                auto_offset_reset: AutoOffsetReset::Earliest,
                isolation,
                max_poll_records: 1,
                ..ConsumerConfig::default()
            },
        );
        let tp = TopicPartition::new("out", 0);
        consumer.assign(vec![tp.clone()]).unwrap();
        let mut values = Vec::new();
        while !consumer.at_end(&tp).unwrap() {
            for r in consumer.poll(Duration::ZERO).unwrap() {
                values.push(String::from_utf8(r.value.unwrap().to_vec()).unwrap());
            }
        }
        consumer.seek_to_end(&tp).unwrap();
        (values, consumer.position(&tp).unwrap())
    };
    // Offsets: c1 0, c2 1, commit 2, aborted 3, abort 4, open 5.
    assert_eq!(
        read(IsolationLevel::ReadCommitted),
        (vec!["c1".into(), "c2".into()], 5)
    );
    assert_eq!(
        read(IsolationLevel::ReadUncommitted),
        (
            vec!["c1".into(), "c2".into(), "aborted".into(), "open".into()],
            6
        )
    );
    log.end_txn("t", pid, epoch, true).unwrap();
    assert_eq!(
        read(IsolationLevel::ReadCommitted),
        (vec!["c1".into(), "c2".into(), "open".into()], 7)
    );
}
