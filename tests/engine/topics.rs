//! Topic lifecycle: create, describe, list, add partitions, alter configs and delete, persisted
//! across a reopen; bad names and duplicates refused; the producer's linger sends without a
//! flush.

use std::time::{Duration, Instant};

use logd::{Error, FsyncPolicy, Producer, ProducerConfig, ProducerRecord, TopicConfig};

use super::open;

#[test]
fn topics_and_their_config_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let config = TopicConfig {
        partitions: 3,
        retention_ms: Some(60_000),
        fsync: FsyncPolicy::Interval(Duration::from_millis(200)),
        ..TopicConfig::default()
    };
    let id = {
        let log = open(dir.path());
        let created = log.create_topic("orders", config.clone()).unwrap();
        log.create_topic("audit", TopicConfig::default()).unwrap();
        assert!(matches!(
            log.create_topic("orders", TopicConfig::default()),
            Err(Error::TopicExists(_))
        ));
        assert!(matches!(
            log.create_topic("bad/name", TopicConfig::default()),
            Err(Error::InvalidTopicName { .. })
        ));
        assert!(matches!(
            log.create_topic(
                "zero",
                TopicConfig {
                    partitions: 0,
                    ..TopicConfig::default()
                }
            ),
            Err(Error::InvalidConfig(_))
        ));
        let producer = Producer::new(&log, ProducerConfig::default());
        producer
            .send(ProducerRecord::new("orders", "x").partition(2))
            .unwrap()
            .wait()
            .unwrap();
        log.add_partitions("orders", 5).unwrap();
        assert!(matches!(
            log.add_partitions("orders", 2),
            Err(Error::InvalidConfig(_))
        ));
        created.id
    };
    let log = open(dir.path());
    assert_eq!(
        log.list_topics(),
        vec!["audit".to_owned(), "orders".to_owned()]
    );
    let orders = log.describe_topic("orders").unwrap();
    assert_eq!(orders.id, id, "topic ids are stable");
    assert_eq!(
        orders.config,
        TopicConfig {
            partitions: 5,
            ..config
        }
    );
    assert_eq!(orders.partitions.len(), 5);
    assert_eq!(orders.partitions[2].log_end, 1);

    log.offsets()
        .commit(
            "g",
            &[logd_offsets::OffsetCommit {
                topic: "orders".into(),
                partition: 2,
                offset: 1,
                metadata: String::new(),
            }],
            0,
        )
        .unwrap();
    log.delete_topic("orders").unwrap();
    assert!(matches!(
        log.describe_topic("orders"),
        Err(Error::UnknownTopic(_))
    ));
    assert!(
        !dir.path().join("topics/orders").exists(),
        "its files are gone"
    );
    assert!(
        log.offsets().group_offsets("g").is_empty(),
        "and so are the offsets committed for it"
    );
    drop(log);
    assert_eq!(open(dir.path()).list_topics(), vec!["audit".to_owned()]);
}

#[test]
fn unknown_topics_are_refused_unless_auto_created() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    let producer = Producer::new(&log, ProducerConfig::default());
    assert!(matches!(
        producer.send(ProducerRecord::new("nope", "x")),
        Err(Error::UnknownTopic(_))
    ));
    drop((producer, log));
    let auto = logd::Log::open(
        dir.path(),
        logd::Config {
            auto_create_topics: true,
            ..logd::Config::default()
        },
    )
    .unwrap();
    let producer = Producer::new(&auto, ProducerConfig::default());
    producer
        .send(ProducerRecord::new("fresh", "x"))
        .unwrap()
        .wait()
        .unwrap();
    assert_eq!(
        auto.describe_topic("fresh").unwrap().partitions.len(),
        1,
        "Kafka's default of one partition"
    );
}

#[test]
fn linger_sends_a_partial_batch_without_a_flush() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    super::topic(&log, "t", 1);
    let producer = Producer::new(
        &log,
        ProducerConfig {
            linger: Duration::from_millis(20),
            batch_bytes: 1 << 20,
            ..ProducerConfig::default()
        },
    );
    let started = Instant::now();
    let first = producer.send(ProducerRecord::new("t", "a")).unwrap();
    let second = producer.send(ProducerRecord::new("t", "b")).unwrap();
    let (a, b) = (first.wait().unwrap(), second.wait().unwrap());
    assert_eq!((a.offset, b.offset), (0, 1), "one batch, in order");
    assert!(
        started.elapsed() >= Duration::from_millis(15),
        "held for the linger"
    );
    assert_eq!(log.describe_topic("t").unwrap().partitions[0].log_end, 2);
}

#[test]
fn a_batch_lingers_from_its_own_first_record() {
    // The linger thread keeps batches in the order they opened; the first batch here closes
    // early (full), and the second, opened half a linger later, must still get a whole linger
    // rather than leave when the first one's time comes up.
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    super::topic(&log, "t", 1);
    let linger = Duration::from_secs(1);
    let value = [b'v'; 100];
    let producer = Producer::new(
        &log,
        ProducerConfig {
            linger,
            batch_bytes: 150,
            ..ProducerConfig::default()
        },
    );
    let log_end = || log.describe_topic("t").unwrap().partitions[0].log_end;
    let first = producer.send(ProducerRecord::new("t", &value[..])).unwrap();
    std::thread::sleep(linger / 2);
    let opened = Instant::now();
    let second = producer.send(ProducerRecord::new("t", &value[..])).unwrap();
    assert_eq!(
        first.wait().unwrap().offset,
        0,
        "the full batch left at once"
    );
    std::thread::sleep(linger * 7 / 10);
    // Past the first batch's linger, before the second's (unless this thread slept late).
    if opened.elapsed() < linger * 19 / 20 {
        assert_eq!(log_end(), 1, "the second batch is still lingering");
    }
    assert_eq!(second.wait().unwrap().offset, 1);
    assert!(
        opened.elapsed() >= linger * 9 / 10,
        "held for its own linger"
    );
}

#[test]
fn batches_stay_within_batch_bytes_and_flush_reports_a_lost_batch() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    log.create_topic(
        "t",
        TopicConfig {
            max_batch_bytes: 2048,
            ..TopicConfig::default()
        },
    )
    .unwrap();
    let value = [b'v'; 100];
    // Closing a batch before a record would overflow it keeps every batch under 2048 bytes.
    let fits = Producer::new(
        &log,
        ProducerConfig {
            batch_bytes: 2000,
            linger: Duration::from_secs(60),
            ..ProducerConfig::default()
        },
    );
    for _ in 0..100 {
        fits.send(ProducerRecord::new("t", &value[..])).unwrap();
    }
    fits.flush().unwrap();
    assert_eq!(log.describe_topic("t").unwrap().partitions[0].log_end, 100);

    // A producer whose batches exceed what the topic accepts learns it at flush, even if it
    // never waited on a delivery.
    let too_big = Producer::new(
        &log,
        ProducerConfig {
            batch_bytes: 8192,
            linger: Duration::from_secs(60),
            ..ProducerConfig::default()
        },
    );
    for _ in 0..60 {
        too_big.send(ProducerRecord::new("t", &value[..])).unwrap();
    }
    assert!(matches!(too_big.flush(), Err(Error::Delivery(_))));
    assert!(too_big.flush().is_ok(), "reported once");
}

/// The engine on a fresh simulated file system, at `/data`.
fn open_on_sim() -> (logd_storage::SimFs, logd::Log) {
    let fs = logd_storage::SimFs::new();
    let log = reopen_on(&fs);
    (fs, log)
}

/// The engine at `/data` on `fs`.
fn reopen_on(fs: &logd_storage::SimFs) -> logd::Log {
    logd::Log::open_with(
        std::sync::Arc::new(fs.clone()),
        std::sync::Arc::new(logd::SystemClock),
        "/data",
        logd::Config::default(),
    )
    .unwrap()
}

#[test]
fn a_creation_that_fails_part_way_leaves_nothing_and_says_which_limit() {
    use logd_storage::{FaultKind, Storage};
    use std::path::Path;
    let (fs, log) = open_on_sim();
    let config = TopicConfig {
        partitions: 8,
        ..TopicConfig::default()
    };
    // Out of descriptors (EMFILE) at the 13th file the creation makes: partitions 0-2 or so
    // exist by then.
    fs.fail_nth(FaultKind::Create, 12, 24);
    let err = log
        .create_topic("many", config.clone())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("too many open files") && err.contains("ulimit -n"),
        "{err}"
    );
    assert!(log.list_topics().is_empty());
    let left: Vec<_> = fs.list_dir(Path::new("/data/topics")).unwrap();
    assert!(left.is_empty(), "left behind: {left:?}");
    // Nothing stands in the way of trying again, and the data directory reopens clean.
    log.create_topic("many", config).unwrap();
    assert_eq!(log.list_topics(), vec!["many".to_owned()]);
}

#[test]
fn altered_configs_apply_at_once_and_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let config = TopicConfig {
        partitions: 2,
        ..TopicConfig::default()
    };
    {
        let log = open(dir.path());
        log.create_topic("orders", config.clone()).unwrap();
        let altered = TopicConfig {
            retention_ms: Some(3_600_000),
            segment_bytes: 4096,
            max_batch_bytes: 512,
            ..config.clone()
        };
        let described = log.alter_topic_config("orders", altered.clone()).unwrap();
        assert_eq!(described.config, altered);
        // Applied to the open partitions: a batch over the new limit is refused.
        let producer = Producer::new(&log, ProducerConfig::default());
        let refused = producer
            .send(ProducerRecord::new("orders", &[7u8; 2048][..]).partition(1))
            .unwrap()
            .wait();
        assert!(refused.is_err(), "{refused:?}");
        let partition = log.partition("orders", 0).unwrap();
        assert_eq!(partition.config().segment_bytes, 4096);
        assert_eq!(partition.config().retention_ms, Some(3_600_000));
        // What alter may not change.
        for bad in [
            TopicConfig {
                partitions: 3,
                ..altered.clone()
            },
            TopicConfig {
                fsync: FsyncPolicy::Never,
                ..altered.clone()
            },
            TopicConfig {
                segment_bytes: 10,
                ..altered.clone()
            },
        ] {
            assert!(matches!(
                log.alter_topic_config("orders", bad),
                Err(Error::InvalidConfig(_)) | Err(Error::Storage(_))
            ));
        }
        assert!(matches!(
            log.alter_topic_config("nope", altered),
            Err(Error::UnknownTopic(_))
        ));
    }
    let log = open(dir.path());
    let orders = log.describe_topic("orders").unwrap();
    assert_eq!(orders.config.retention_ms, Some(3_600_000));
    assert_eq!(
        log.partition("orders", 1).unwrap().config().max_batch_bytes,
        512
    );
}

#[test]
fn creating_a_partition_costs_its_three_files_and_one_fsync() {
    // Storage operations (creates, writes, syncs, renames) a topic of `partitions` takes.
    let creation_ops = |partitions: u32| {
        let (fs, log) = open_on_sim();
        let before = fs.ops();
        let config = TopicConfig {
            partitions,
            ..TopicConfig::default()
        };
        log.create_topic("t", config).unwrap();
        fs.ops() - before
    };
    let per_partition = (creation_ops(101) - creation_ops(1)) as f64 / 100.0;
    // Its directory, three files and an fsync of its directory; the topic directory's fsync
    // for the new names is shared (it was 20: an fsync of the topic directory each, and a
    // checkpoint and producer snapshot through temporary files, for an empty log).
    assert!(
        per_partition <= 5.0,
        "{per_partition} operations per partition"
    );
}

#[test]
fn partitions_added_before_a_failure_stay_counted_across_a_reopen() {
    use logd_storage::FaultKind;
    let (fs, log) = open_on_sim();
    let two = TopicConfig {
        partitions: 2,
        ..TopicConfig::default()
    };
    log.create_topic("t", two).unwrap();
    // Out of descriptors at the 7th file: partitions 2 and 3 (three files each) open first.
    fs.fail_nth(FaultKind::Create, 6, 24);
    let err = log.add_partitions("t", 8).unwrap_err().to_string();
    assert!(err.contains("too many open files"), "{err}");
    let described = log.describe_topic("t").unwrap();
    assert_eq!(described.config.partitions, 4);
    assert_eq!(described.partitions.len(), 4);
    let mut batch = logd_storage::batch::BatchBuilder::new(logd::Compression::None);
    batch.push(0, None, Some(b"on a new partition"), &[]);
    log.append("t", 3, &mut batch.build(0).unwrap()).unwrap();
    drop(log);
    let log = reopen_on(&fs);
    assert_eq!(log.partition_count("t").unwrap(), 4);
    assert_eq!(log.partition("t", 3).unwrap().high_watermark().0, 1);
    // The rest can be added once the fault is gone.
    log.add_partitions("t", 8).unwrap();
    assert_eq!(log.partition_count("t").unwrap(), 8);
}
