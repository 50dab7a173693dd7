//! Share groups' dead-letter topics (KIP-1191) through the engine: what a letter holds (Kafka's
//! context headers, logd's, the record when copied), Kafka's rules for the topic, and power
//! cuts: a record's archiving and its letter happen together, and the letter once.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use logd_storage::batch::Record;
use logd_storage::{Offset, SimFs};

use super::*;
use crate::{Config, Housekeeping, Log, ManualClock, Producer, ProducerConfig, TopicConfig};

fn open(storage: Arc<dyn logd_storage::Storage>, dir: &Path, config: Config) -> crate::Result<Log> {
    Log::open_with(storage, Arc::new(ManualClock::new(1_000)), dir, config)
}

fn quiet() -> Config {
    Config {
        housekeeping: Housekeeping {
            enabled: false,
            ..Housekeeping::default()
        },
        ..Config::default()
    }
}

/// `jobs` with `records` keyed records carrying a `trace` header, and `dlq.jobs` enabled for
/// share groups.
fn topics(log: &Log, records: usize) -> crate::Result<()> {
    log.create_topic("jobs", TopicConfig::default())?;
    let mut dlq = TopicConfig::default();
    dlq.inert.insert(DLQ_GROUP_ENABLE.into(), "true".into());
    log.create_topic("dlq.jobs", dlq)?;
    let producer = Producer::new(log, ProducerConfig::default());
    for i in 0..records {
        let (key, value, trace) = (format!("k{i}"), format!("job-{i}"), format!("t{i}"));
        producer
            .send(
                crate::ProducerRecord::new("jobs", value.as_str())
                    .key(key.as_str())
                    .header("trace", trace.as_str())
                    .timestamp(500 + i as i64),
            )?
            .wait()?;
    }
    Ok(())
}

fn configure(log: &Log, group: &str, settings: &[(&str, &str)]) -> crate::Result<()> {
    let mut all = vec![("share.auto.offset.reset", "earliest")];
    all.extend_from_slice(settings);
    let changes: Vec<_> = all.iter().map(|(k, v)| (*k, Some(*v))).collect();
    log.alter_group_configs(group, &changes, false)
}

fn member(log: &Log, group: &str) -> ShareConsumer {
    let mut consumer = ShareConsumer::new(
        log,
        ShareConsumerConfig {
            group_id: group.into(),
            acknowledgement_mode: AcknowledgementMode::Explicit,
            ..ShareConsumerConfig::default()
        },
    );
    consumer.subscribe(vec!["jobs".into()]).unwrap();
    consumer
}

fn letters(log: &Log, topic: &str) -> Vec<Record> {
    let partition = log.partition(topic, 0).unwrap();
    let mut all = Vec::new();
    let mut at = 0;
    while at < partition.high_watermark().0 {
        let bytes = partition.read(Offset(at), 1 << 20).unwrap();
        let records = Record::decode_all(&bytes, 1 << 26).unwrap();
        at = records.last().unwrap().offset + 1;
        all.extend(records);
    }
    all
}

fn header<'a>(record: &'a Record, name: &str) -> Option<&'a str> {
    record
        .headers
        .iter()
        .rev()
        .find(|h| h.key.as_ref() == name.as_bytes())
        .and_then(|h| std::str::from_utf8(h.value.as_deref()?).ok())
}

#[test]
fn rejected_and_exhausted_records_become_letters_with_kafkas_and_logds_headers() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(Arc::new(logd_storage::RealFs), dir.path(), quiet()).unwrap();
    topics(&log, 3).unwrap();
    let limit = [("share.delivery.count.limit", "2")];
    configure(&log, "copying", &limit).unwrap();
    configure(
        &log,
        "copying",
        &[
            ("errors.deadletterqueue.topic.name", "dlq.jobs"),
            ("errors.deadletterqueue.copy.record.enable", "true"),
        ],
    )
    .unwrap();
    configure(
        &log,
        "plain",
        &[("errors.deadletterqueue.topic.name", "dlq.jobs")],
    )
    .unwrap();
    for group in ["copying", "plain"] {
        let mut m = member(&log, group);
        let got = m.poll(Duration::ZERO).unwrap();
        assert_eq!(got.len(), 3);
        m.acknowledge(&got[0], AcknowledgeType::Reject).unwrap();
        m.acknowledge(&got[1], AcknowledgeType::Release).unwrap();
        m.acknowledge(&got[2], AcknowledgeType::Accept).unwrap();
        m.commit().unwrap();
        if group == "copying" {
            // Its delivery limit is 2: released again, offset 1 is archived.
            let again = m.poll(Duration::ZERO).unwrap();
            assert_eq!((again[0].record.offset, again[0].delivery_count), (1, 2));
            m.acknowledge(&again[0], AcknowledgeType::Release).unwrap();
            m.commit().unwrap();
        }
        m.close().unwrap();
    }
    let written = letters(&log, "dlq.jobs");
    let summary: Vec<_> = written
        .iter()
        .map(|l| {
            (
                header(l, "__dlq.errors.group").unwrap(),
                header(l, "__dlq.errors.offset").unwrap(),
                header(l, "__dlq.errors.delivery.count").unwrap(),
                header(l, "__dlq.errors.message").unwrap(),
                header(l, "logd.dlq.reason").unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                "copying",
                "0",
                "1",
                "Offset rejected by client.",
                "permanent"
            ),
            (
                "copying",
                "1",
                "2",
                "Offset delivery count exceeded the threshold.",
                "max-attempts"
            ),
            ("plain", "0", "1", "Offset rejected by client.", "permanent"),
        ]
    );
    let (copied, plain) = (&written[0], &written[2]);
    assert_eq!(copied.key.as_deref(), Some(&b"k0"[..]));
    assert_eq!(copied.value.as_deref(), Some(&b"job-0"[..]));
    assert_eq!(header(copied, "trace"), Some("t0"));
    assert_eq!((plain.key.clone(), plain.value.clone()), (None, None));
    assert_eq!(header(plain, "trace"), None);
    for letter in &written {
        assert_eq!(header(letter, "__dlq.errors.topic"), Some("jobs"));
        assert_eq!(header(letter, "__dlq.errors.partition"), Some("0"));
        assert_eq!(header(letter, "logd.dlq.original.topic"), Some("jobs"));
        assert_eq!(header(letter, "logd.dlq.original.partition"), Some("0"));
        assert_eq!(
            header(letter, "logd.dlq.original.offset"),
            header(letter, "__dlq.errors.offset")
        );
        assert_eq!(
            header(letter, "logd.dlq.attempts"),
            header(letter, "__dlq.errors.delivery.count")
        );
        assert_eq!(
            header(letter, "logd.dlq.consumer.group"),
            header(letter, "__dlq.errors.group")
        );
        // Timestamped at the write (the clock), as Kafka; the source's own is kept apart.
        assert_eq!(letter.timestamp, 1_000);
        let offset: i64 = header(letter, "__dlq.errors.offset")
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(
            header(letter, "logd.dlq.original.timestamp"),
            Some((500 + offset).to_string().as_str())
        );
    }
    assert_eq!(
        log.share_counters("copying"),
        ShareCounters {
            redelivered: 1,
            rejected: 1,
            at_delivery_limit: 1,
            dead_lettered: 2,
        }
    );
    assert_eq!(
        (
            log.share_counters("plain").rejected,
            log.share_counters("plain").dead_lettered
        ),
        (1, 1)
    );
    // Nothing archived is delivered again, and nothing is written twice on a restart.
    drop(log);
    let log = open(Arc::new(logd_storage::RealFs), dir.path(), quiet()).unwrap();
    assert_eq!(letters(&log, "dlq.jobs").len(), 3);
    assert!(
        member(&log, "copying")
            .poll(Duration::ZERO)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn kafkas_rules_for_the_topic_hold_and_archiving_goes_on_without_it() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(Arc::new(logd_storage::RealFs), dir.path(), quiet()).unwrap();
    topics(&log, 1).unwrap();
    log.create_topic("dlq.not-enabled", TopicConfig::default())
        .unwrap();
    let mut enabled = TopicConfig::default();
    enabled.inert.insert(DLQ_GROUP_ENABLE.into(), "true".into());
    log.create_topic("unprefixed", enabled).unwrap();
    for (group, topic) in [
        ("a", "dlq.not-enabled"),
        ("b", "unprefixed"),
        ("c", "dlq.missing"),
        ("d", "__internal"),
    ] {
        configure(&log, group, &[("errors.deadletterqueue.topic.name", topic)]).unwrap();
        let mut m = member(&log, group);
        let got = m.poll(Duration::ZERO).unwrap();
        m.acknowledge(&got[0], AcknowledgeType::Reject).unwrap();
        m.commit().unwrap();
        assert!(
            m.poll(Duration::ZERO).unwrap().is_empty(),
            "{group}: archived"
        );
    }
    assert!(letters(&log, "dlq.not-enabled").is_empty());
    assert!(letters(&log, "unprefixed").is_empty());
    assert!(log.partition_count("dlq.missing").is_err(), "not created");
    drop(log);
    // With auto-creation (Kafka's `errors.deadletterqueue.auto.create.topics.enable`) and no
    // prefix, a missing topic is created enabled, and a prefix-less name is fine.
    let config = Config {
        auto_create_dead_letter_topics: true,
        dead_letter_topic_prefix: String::new(),
        ..quiet()
    };
    let log = open(Arc::new(logd_storage::RealFs), dir.path(), config).unwrap();
    Producer::new(&log, ProducerConfig::default())
        .send(crate::ProducerRecord::new("jobs", "again"))
        .unwrap()
        .wait()
        .unwrap();
    for (group, topic) in [("c", "dlq.missing"), ("b", "unprefixed")] {
        let mut m = member(&log, group);
        let got = m.poll(Duration::ZERO).unwrap();
        assert_eq!(got.len(), 1);
        m.acknowledge(&got[0], AcknowledgeType::Reject).unwrap();
        m.commit().unwrap();
        let written = letters(&log, topic);
        assert_eq!(written.len(), 1, "{group}");
        assert_eq!(header(&written[0], "__dlq.errors.offset"), Some("1"));
    }
    let created = log.describe_topic("dlq.missing").unwrap().config;
    assert_eq!(
        created.inert.get(DLQ_GROUP_ENABLE).map(String::as_str),
        Some("true")
    );
}

/// What the power-cut workload was answered: offsets whose rejection or archiving at the
/// limit was answered, and offsets whose acceptance was sent (answered or not).
#[derive(Debug, Default)]
struct Sent {
    archived: BTreeSet<i64>,
    accepts: BTreeSet<i64>,
}

/// Rejects, releases to the limit and accepts on a simulated disk until done or the power is
/// cut: 0, 2 and 4 rejected, 3 released twice (the limit is 2), 1 and 5 accepted.
fn workload(fs: &SimFs) -> Sent {
    let mut sent = Sent::default();
    let run = |sent: &mut Sent| -> crate::Result<()> {
        let log = open(Arc::new(fs.clone()), Path::new("/d"), quiet())?;
        topics(&log, 6)?;
        configure(
            &log,
            "g",
            &[
                ("share.delivery.count.limit", "2"),
                ("errors.deadletterqueue.topic.name", "dlq.jobs"),
            ],
        )?;
        let mut m = member(&log, "g");
        let got = m.poll(Duration::ZERO)?;
        for record in &got {
            let kind = match record.record.offset {
                0 | 2 | 4 => AcknowledgeType::Reject,
                1 | 5 => AcknowledgeType::Accept,
                _ => AcknowledgeType::Release,
            };
            if kind == AcknowledgeType::Accept {
                sent.accepts.insert(record.record.offset);
            }
            m.acknowledge(record, kind)?;
        }
        m.commit()?;
        sent.archived.extend([0, 2, 4]);
        let again = m.poll(Duration::ZERO)?;
        for record in &again {
            m.acknowledge(record, AcknowledgeType::Release)?;
        }
        m.commit()?;
        sent.archived.insert(3);
        Ok(())
    };
    if logd_storage::create_dir_durable(fs, Path::new("/d")).is_ok() {
        let _ = run(&mut sent);
    }
    sent
}

#[test]
fn a_power_cut_never_writes_a_letter_twice_nor_archives_without_one() {
    let mut saw_letters = 0;
    let states = SimFs::every_power_cut(workload, |image, sent, cut, mode| {
        let log = open(Arc::new(image), Path::new("/d"), quiet())
            .unwrap_or_else(|e| panic!("cut {cut} {mode:?}: reopen failed: {e}"));
        let written: Vec<i64> = match log.partition_count("dlq.jobs") {
            Ok(_) => letters(&log, "dlq.jobs")
                .iter()
                .map(|l| header(l, "__dlq.errors.offset").unwrap().parse().unwrap())
                .collect(),
            Err(_) => Vec::new(),
        };
        let unique: BTreeSet<i64> = written.iter().copied().collect();
        assert_eq!(
            unique.len(),
            written.len(),
            "cut {cut} {mode:?}: a letter twice: {written:?}"
        );
        saw_letters += usize::from(!written.is_empty());
        for offset in &sent.archived {
            assert!(
                unique.contains(offset),
                "cut {cut} {mode:?}: answered {offset} has no letter"
            );
        }
        if log.partition_count("jobs").is_err() {
            return;
        }
        // The cut may have come before the group's configs were durable.
        configure(&log, "g", &[]).unwrap();
        let mut again = ShareConsumer::new(
            &log,
            ShareConsumerConfig {
                group_id: "g".into(),
                ..ShareConsumerConfig::default()
            },
        );
        again.subscribe(vec!["jobs".into()]).unwrap();
        let delivered: BTreeSet<i64> = again
            .poll(Duration::ZERO)
            .unwrap()
            .iter()
            .map(|r| r.record.offset)
            .collect();
        let produced = log.partition("jobs", 0).unwrap().high_watermark().0;
        for offset in 0..produced {
            let lettered = unique.contains(&offset);
            assert!(
                !(lettered && delivered.contains(&offset)),
                "cut {cut} {mode:?}: {offset} has a letter and is delivered again"
            );
            assert!(
                lettered || delivered.contains(&offset) || sent.accepts.contains(&offset),
                "cut {cut} {mode:?}: {offset} archived without its letter"
            );
        }
    });
    assert!(states > 100, "{states} crash states");
    assert!(saw_letters > 0, "no crash state had letters");
}
