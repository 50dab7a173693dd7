//! The engine's own files (topic metadata, partition directories, the offset store, the group
//! logs, producer snapshots and the producer id block) through a power cut at every storage
//! operation of create, produce, commit, a group's settle, a consumer-protocol member's join
//! and delete: the engine always reopens, each topic is either whole or
//! absent, what was acknowledged is there, a retry of an acknowledged batch is recognised, and
//! no producer id is handed out twice.

use std::sync::Arc;

use logd::groups::consumer::Heartbeat;
use logd::{
    Config, Log, ManualClock, Producer, ProducerConfig, ProducerRecord, SubscriptionChange,
    TopicConfig,
};
use logd_offsets::OffsetCommit;
use logd_storage::batch::{BatchBuilder, BatchHeader, Compression};
use logd_storage::{CrashMode, Offset, SimFs};

const DIR: &str = "/data";

#[derive(Debug, Default)]
struct Acked {
    orders_created: bool,
    produced: Vec<(u32, i64)>,
    committed: Option<i64>,
    /// The member and generation of group `g` once its sync returned (settled durably).
    settled: Option<(String, i32)>,
    /// The epoch and partitions member `m` of consumer-protocol group `c` was answered.
    consumer: Option<(i32, usize)>,
    audit_deleted: bool,
}

fn open(fs: &SimFs) -> logd::Result<Log> {
    Log::open_with(
        Arc::new(fs.clone()),
        Arc::new(ManualClock::new(1_000)),
        DIR,
        Config::default(),
    )
}

fn workload(fs: &SimFs) -> Acked {
    let mut acked = Acked::default();
    let Ok(log) = open(fs) else { return acked };
    if log.create_topic("audit", TopicConfig::default()).is_err() {
        return acked;
    }
    if log
        .create_topic(
            "orders",
            TopicConfig {
                partitions: 2,
                ..TopicConfig::default()
            },
        )
        .is_err()
    {
        return acked;
    }
    acked.orders_created = true;
    let producer = Producer::new(&log, ProducerConfig::default());
    for i in 0..6 {
        let value = format!("order {i}");
        let Ok(delivery) = producer.send(ProducerRecord::new("orders", &value).partition(i % 2))
        else {
            return acked;
        };
        match delivery.wait() {
            Ok(meta) => acked.produced.push((meta.partition, meta.offset)),
            Err(_) => return acked,
        }
    }
    let commit = OffsetCommit {
        topic: "orders".into(),
        partition: 0,
        offset: 2,
        metadata: String::new(),
    };
    if log.offsets().commit("billing", &[commit], 0).is_err() {
        return acked;
    }
    acked.committed = Some(2);
    match super::settle_alone(&log, "g") {
        Some(settled) => acked.settled = Some(settled),
        None => return acked,
    }
    let beat = Heartbeat {
        member_id: "m".into(),
        member_epoch: 0,
        instance_id: None,
        subscribed: None,
        assignor: None,
        owned: Some(Default::default()),
    };
    let subscription = SubscriptionChange {
        names: Some(["orders".to_owned()].into()),
        regex: None,
    };
    match log.consumer_heartbeat("c", beat, subscription, ("app", "/127.0.0.1"), &|_| true) {
        Ok(answer) => {
            let assigned = answer.assignment.unwrap_or_default();
            let partitions = assigned.values().map(|p| p.len()).sum();
            acked.consumer = Some((answer.member_epoch, partitions));
        }
        Err(_) => return acked,
    }
    if log.delete_topic("audit").is_ok() {
        acked.audit_deleted = true;
    }
    acked
}

#[test]
fn the_engine_reopens_whole_after_a_power_cut_anywhere() {
    let total = {
        let fs = SimFs::new();
        let acked = workload(&fs);
        assert!(
            acked.audit_deleted,
            "the workload runs to the end without a cut"
        );
        fs.ops()
    };
    let mut states = 0;
    for cut in 0..=total {
        let fs = SimFs::new();
        fs.cut_power_after(cut);
        let acked = workload(&fs);
        for mode in [
            CrashMode::DropUnsynced,
            CrashMode::KeepSomeUnsynced,
            CrashMode::TearTail,
        ] {
            states += 1;
            let image = fs.crash_image(mode, cut);
            let log =
                open(&image).unwrap_or_else(|e| panic!("cut {cut} {mode:?}: reopen failed: {e}"));
            let topics = log.list_topics();
            if acked.orders_created {
                assert!(
                    topics.contains(&"orders".to_owned()),
                    "cut {cut} {mode:?}: orders lost"
                );
            }
            for topic in &topics {
                let described = log.describe_topic(topic).unwrap();
                assert_eq!(
                    described.partitions.len() as u32,
                    described.config.partitions,
                    "cut {cut}: {topic} is partial"
                );
            }
            if let Some((member, generation)) = &acked.settled {
                let group = log.describe_group("g").unwrap();
                assert!(
                    group.generation >= *generation
                        && group.members.iter().any(|(m, _)| m.member_id == *member),
                    "cut {cut} {mode:?}: the settled group was lost: {group:?}"
                );
            }
            if let Some((epoch, partitions)) = acked.consumer {
                let group = log.describe_consumer_group("c");
                let member = group.as_ref().and_then(|g| g.members.first());
                assert!(
                    member.is_some_and(|m| m.member_id == "m"
                        && m.member_epoch == epoch
                        && m.assigned.values().map(|p| p.len()).sum::<usize>() == partitions),
                    "cut {cut} {mode:?}: the answered heartbeat was lost: {group:?}"
                );
            }
            if acked.audit_deleted {
                assert!(
                    !topics.contains(&"audit".to_owned()),
                    "cut {cut} {mode:?}: a deleted topic came back"
                );
            }
            let mut producer_ids = Vec::new();
            for (partition, offset) in &acked.produced {
                let plog = log.partition("orders", *partition).unwrap();
                assert!(
                    plog.high_watermark().0 > *offset,
                    "cut {cut} {mode:?}: acknowledged {partition}@{offset} lost"
                );
                // The embedded producer is idempotent: the same batch again is a duplicate.
                let stored = plog.read(Offset(*offset), 1).unwrap();
                let header = BatchHeader::parse(&stored, 0).unwrap();
                assert!(header.producer_id >= 0, "cut {cut}: not idempotent");
                producer_ids.push(header.producer_id);
                let mut retry = BatchBuilder::new(Compression::None).producer(
                    header.producer_id,
                    header.producer_epoch,
                    header.base_sequence,
                );
                retry.push(0, None, Some(b"retry"), &[]);
                let info = log
                    .append("orders", *partition, &mut retry.build(0).unwrap())
                    .unwrap();
                assert!(
                    info.duplicate && info.base_offset.0 == *offset,
                    "cut {cut} {mode:?}: retry of {partition}@{offset} answered {info:?}"
                );
            }
            let fresh = log.init_producer_id().unwrap();
            assert!(
                producer_ids.iter().all(|&id| id < fresh),
                "cut {cut} {mode:?}: producer id {fresh} handed out again"
            );
            if let Some(offset) = acked.committed {
                assert_eq!(
                    log.offsets()
                        .fetch("billing", "orders", 0)
                        .map(|c| c.offset),
                    Some(offset),
                    "cut {cut} {mode:?}"
                );
            }
        }
    }
    // Three images per storage operation of the workload (about a hundred operations).
    assert!(states > 250, "{states} crash states");
}
