//! The embedded engine keeps its promises without the embedder's help: interval fsyncs and
//! retention happen on the engine's own housekeeping thread; a consumer dropped by a panicking
//! thread leaves its group at once; dropping the last `Log` handle closes it cleanly; and a
//! second open of a data directory says who holds it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use logd::{
    Config, Consumer, ConsumerConfig, Error, FsyncPolicy, Housekeeping, Log, ManualClock,
    SystemClock, TopicConfig, TopicPartition,
};
use logd_storage::batch::{BatchBuilder, Compression};
use logd_storage::{CrashMode, FaultKind, LogConfig, PartitionLog, SimFs};

use super::{open, topic};

fn one_record(ts: i64) -> Vec<u8> {
    let mut builder = BatchBuilder::new(Compression::None);
    builder.push(ts, None, Some(&[b'r'; 200]), &[]);
    builder.build(0).unwrap()
}

/// Records a power cut at this moment would keep in partition `t`-0 of the engine on `fs`.
fn durable_records(fs: &SimFs) -> i64 {
    let image = fs.crash_image(CrashMode::DropUnsynced, 0);
    PartitionLog::open_with(Arc::new(image), "/data/topics/t/0", LogConfig::default())
        .map_or(0, |log| log.end_offset().0)
}

/// An engine on a simulated disk with one `IntervalMs(100)` topic holding one fresh record.
fn interval_engine(housekeeping: Housekeeping) -> (SimFs, Log) {
    let fs = SimFs::new();
    let config = Config {
        housekeeping,
        ..Config::default()
    };
    let log = Log::open_with(Arc::new(fs.clone()), Arc::new(SystemClock), "/data", config).unwrap();
    log.create_topic(
        "t",
        TopicConfig {
            fsync: FsyncPolicy::Interval(Duration::from_millis(100)),
            ..TopicConfig::default()
        },
    )
    .unwrap();
    log.append("t", 0, &mut one_record(0)).unwrap();
    (fs, log)
}

#[test]
fn an_interval_topic_is_made_durable_within_its_interval_without_the_embedder() {
    let (fs, _log) = interval_engine(Housekeeping::default());
    let started = Instant::now();
    while durable_records(&fs) == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "the append never became durable"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // The interval (100 ms) plus a housekeeping round's scheduling.
    assert!(
        started.elapsed() < Duration::from_millis(600),
        "{:?}",
        started.elapsed()
    );

    // The control: with housekeeping off and nobody flushing, the same append stays in the
    // page cache, which a power cut loses.
    let (fs, _log) = interval_engine(Housekeeping {
        enabled: false,
        ..Housekeeping::default()
    });
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(durable_records(&fs), 0);
}

#[test]
fn interval_syncs_go_on_past_a_poisoned_partition_and_poison_only_what_they_were_for() {
    // Housekeeping off: the test runs the rounds itself.
    let (fs, log) = interval_engine(Housekeeping {
        enabled: false,
        ..Housekeeping::default()
    });
    log.add_partitions("t", 3).unwrap();
    // Partition 0's own fsync fails: it alone is poisoned.
    fs.fail_nth(FaultKind::Sync, 0, 5);
    assert!(log.partition("t", 0).unwrap().flush().is_err());
    assert!(log.partition("t", 0).unwrap().is_poisoned());
    // Partition 2 (after the poisoned one) still gets its records synced by the next round.
    log.append("t", 2, &mut one_record(0)).unwrap();
    log.flush_interval_topics().unwrap();
    let durable = |p: u32| log.partition("t", p).unwrap().durable_end_offset().0;
    assert_eq!(durable(2), 1);
    // A failed round poisons the partitions with records waiting, and no other.
    log.append("t", 2, &mut one_record(0)).unwrap();
    fs.fail_nth(FaultKind::Sync, 0, 5);
    assert!(log.flush_interval_topics().is_err());
    assert!(log.partition("t", 2).unwrap().is_poisoned());
    assert!(
        !log.partition("t", 1).unwrap().is_poisoned(),
        "nothing waited in it"
    );
    log.append("t", 1, &mut one_record(0)).unwrap();
}

#[test]
fn retention_runs_without_the_embedder() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        housekeeping: Housekeeping {
            enabled: true,
            retention_check: Duration::from_millis(50),
            ..Housekeeping::default()
        },
        ..Config::default()
    };
    let clock = Arc::new(ManualClock::new(1_000_000));
    let log = Log::open_with(Arc::new(logd_storage::RealFs), clock, dir.path(), config).unwrap();
    log.create_topic(
        "t",
        TopicConfig {
            retention_ms: Some(1000),
            segment_bytes: 1024,
            ..TopicConfig::default()
        },
    )
    .unwrap();
    // Records from long ago fill several small segments.
    for _ in 0..20 {
        log.append("t", 0, &mut one_record(1_000)).unwrap();
    }
    let partition = log.partition("t", 0).unwrap();
    let started = Instant::now();
    while partition.log_start_offset().0 == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "retention never ran"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_member_whose_thread_panics_leaves_its_group_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    topic(&log, "t", 2);
    let config = ConsumerConfig {
        group_id: Some("g".into()),
        ..ConsumerConfig::default()
    };
    let mut survivor = Consumer::new(&log, config.clone());
    survivor.subscribe(vec!["t".into()]).unwrap();
    let doomed_log = log.clone();
    let doomed = std::thread::spawn(move || {
        let mut consumer = Consumer::new(&doomed_log, config);
        consumer.subscribe(vec!["t".into()]).unwrap();
        while consumer.assignment().is_empty() {
            consumer.poll(Duration::from_millis(50)).unwrap();
        }
        panic!("the handler failed while this thread held a member");
    });
    // The survivor polls (so the group can settle with one partition each) until the other
    // member got its partition and its thread died.
    let started = Instant::now();
    while !doomed.is_finished() {
        survivor.poll(Duration::from_millis(50)).unwrap();
        assert!(started.elapsed() < Duration::from_secs(30), "never settled");
    }
    assert!(doomed.join().is_err(), "the member's thread panicked");
    let started = Instant::now();
    while survivor.assignment().len() != 2 {
        survivor.poll(Duration::from_millis(50)).unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the panicked member's partition waited for its session timeout (45 s)"
        );
    }
    let all: Vec<TopicPartition> = vec![TopicPartition::new("t", 0), TopicPartition::new("t", 1)];
    let mut got = survivor.assignment().to_vec();
    got.sort_by_key(|tp| tp.partition);
    assert_eq!(got, all);
}

#[test]
fn dropping_the_last_handle_closes_the_engine_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    {
        let log = open(dir.path());
        topic(&log, "t", 1);
        let clone = log.clone();
        clone.append("t", 0, &mut one_record(0)).unwrap();
        drop(log);
        clone.append("t", 0, &mut one_record(1)).unwrap();
    }
    let log = open(dir.path());
    let partition = log.partition("t", 0).unwrap();
    assert_eq!(partition.end_offset().0, 2);
    assert_eq!(
        partition.recovery_report().scanned_bytes,
        0,
        "closed cleanly: nothing to scan"
    );
}

/// A clock that holds up the housekeeping thread's rounds and says when one is under way.
#[derive(Debug)]
struct SlowRounds(std::sync::mpsc::SyncSender<()>);

impl logd::Clock for SlowRounds {
    fn now_ms(&self) -> i64 {
        if std::thread::current().name() == Some("logd-housekeeping") {
            let _ = self.0.try_send(());
            std::thread::sleep(Duration::from_millis(300));
        }
        SystemClock.now_ms()
    }
}

#[test]
fn dropping_the_last_handle_during_a_housekeeping_round_unlocks_the_directory_at_once() {
    let fs = SimFs::new();
    let (round_began, round) = std::sync::mpsc::sync_channel(1);
    let log = Log::open_with(
        Arc::new(fs.clone()),
        Arc::new(SlowRounds(round_began)),
        "/data",
        Config::default(),
    )
    .unwrap();
    topic(&log, "t", 1);
    round.recv().unwrap();
    // The round holds the engine for a while yet; the drop waits for it.
    drop(log);
    let log = Log::open_with(
        Arc::new(fs.clone()),
        Arc::new(SystemClock),
        "/data",
        Config::default(),
    )
    .unwrap();
    assert_eq!(log.partition_count("t").unwrap(), 1);
}

#[test]
fn a_second_open_names_the_directory_and_this_process() {
    let dir = tempfile::tempdir().unwrap();
    let _first = open(dir.path());
    let Err(e) = Log::open(dir.path(), Config::default()) else {
        panic!("a second open succeeded");
    };
    assert!(
        matches!(&e, Error::Locked { dir: d, holder: Some(pid) }
            if d == dir.path() && *pid == std::process::id()),
        "{e:?}"
    );
    let message = e.to_string();
    assert!(
        message.contains(&dir.path().display().to_string())
            && message.contains("already open in this process"),
        "{message}"
    );
}

#[test]
fn a_seek_past_the_end_is_reset_by_the_policy_at_the_next_poll() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    topic(&log, "t", 1);
    for ts in 0..3 {
        log.append("t", 0, &mut one_record(ts)).unwrap();
    }
    let tp = TopicPartition::new("t", 0);
    let mut consumer = Consumer::new(
        &log,
        ConsumerConfig {
            auto_offset_reset: logd::AutoOffsetReset::Earliest,
            ..ConsumerConfig::default()
        },
    );
    consumer.assign(vec![tp.clone()]).unwrap();
    consumer.seek(&tp, 100).unwrap();
    let offsets: Vec<i64> = consumer
        .poll(Duration::from_millis(100))
        .unwrap()
        .iter()
        .map(|r| r.offset)
        .collect();
    assert_eq!(offsets, [0, 1, 2], "Earliest: read again from the start");
}
