//! ConsumerGroupHeartbeat at scale, through the broker in process (`Broker::handle_frame`, the
//! wire's bytes without the socket): a KIP-848 group of MEMBERS members over one topic of as
//! many partitions joins, heartbeats until every member is stable, then every member heartbeats
//! ROUNDS more times, as each would every `consumer.heartbeat.interval.ms`. It prints, for a
//! group of 10 and one of MEMBERS in the same run: the joins' total time and the p99 of every
//! heartbeat until stable (those that change the group, logged and fsynced), and the steady
//! heartbeats' rate from one thread and their p50/p99/max latency, with the ratio of the big
//! group's p99 to the small one's (a heartbeat's cost is its member's change, so the ratio
//! stays near 1). Then a restart of the engine over the big group's state: its open time.
//!
//! `cargo bench -p logd-benches --bench heartbeats [-- MEMBERS ROUNDS]` (defaults 1000, 20).

use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};
use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use kafka_protocol::messages::{
    ApiKey, ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, GroupId, RequestHeader,
    ResponseHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use logd::{Config, FsyncPolicy, Log, TopicConfig};
use logd_kafka::{Broker, BrokerConfig};

const VERSION: i16 = 0;
const TOPIC: &str = "events";

/// One member as its client keeps it.
struct Member {
    id: String,
    epoch: i32,
    /// What it owns, by topic id, as last assigned; sent when it changed.
    owned: Vec<TopicPartitions>,
    owned_changed: bool,
}

fn frame(request: &ConsumerGroupHeartbeatRequest) -> Bytes {
    let mut header = RequestHeader::default();
    header.request_api_key = ApiKey::ConsumerGroupHeartbeat as i16;
    header.request_api_version = VERSION;
    header.client_id = Some(StrBytes::from_static_str("bench"));
    let mut out = BytesMut::new();
    header
        .encode(
            &mut out,
            ApiKey::ConsumerGroupHeartbeat.request_header_version(VERSION),
        )
        .expect("header");
    request.encode(&mut out, VERSION).expect("request");
    out.freeze()
}

/// One heartbeat of `member`; its latency. Panics on an error answer: the load is valid.
fn beat(broker: &Broker, member: &mut Member) -> Duration {
    let mut request = ConsumerGroupHeartbeatRequest::default();
    request.group_id = GroupId(StrBytes::from_static_str("g"));
    request.member_id = StrBytes::from_string(member.id.clone());
    request.member_epoch = member.epoch;
    if member.epoch == 0 {
        request.rebalance_timeout_ms = 300_000;
        request.subscribed_topic_names = Some(vec![TopicName(StrBytes::from_static_str(TOPIC))]);
    } else {
        request.rebalance_timeout_ms = -1;
    }
    if member.epoch == 0 || member.owned_changed {
        request.topic_partitions = Some(member.owned.clone());
        member.owned_changed = false;
    }
    let frame = frame(&request);
    let started = Instant::now();
    let mut response = broker
        .handle_frame(frame, "/127.0.0.1")
        .expect("served")
        .expect("a response")
        .freeze();
    let took = started.elapsed();
    response.advance(4);
    let version = ApiKey::ConsumerGroupHeartbeat.response_header_version(VERSION);
    ResponseHeader::decode(&mut response, version).expect("header");
    let answer = ConsumerGroupHeartbeatResponse::decode(&mut response, VERSION).expect("answer");
    assert_eq!(answer.error_code, 0, "{:?}", answer.error_message);
    member.epoch = answer.member_epoch;
    if let Some(assignment) = answer.assignment {
        member.owned = assignment
            .topic_partitions
            .into_iter()
            .map(|tp| {
                let mut owned = TopicPartitions::default();
                owned.topic_id = tp.topic_id;
                owned.partitions = tp.partitions;
                owned
            })
            .collect();
        member.owned_changed = true;
    }
    took
}

fn engine(dir: &std::path::Path) -> Log {
    Log::open(dir, Config::default()).expect("open")
}

/// A group of `members` joined and stable on a fresh engine in `dir`; the joins' time.
fn settled(dir: &std::path::Path, members: usize) -> (Broker, Vec<Member>, Settling) {
    let log = engine(dir);
    let topic = TopicConfig {
        partitions: members as u32,
        fsync: FsyncPolicy::Never,
        ..TopicConfig::default()
    };
    log.create_topic(TOPIC, topic).expect("topic");
    let broker = Broker::new(log, BrokerConfig::default());
    let mut group: Vec<Member> = (0..members)
        .map(|i| Member {
            id: format!("member-{i:05}"),
            epoch: 0,
            owned: Vec::new(),
            owned_changed: false,
        })
        .collect();
    let mut changes = Vec::new();
    let started = Instant::now();
    for member in &mut group {
        changes.push(beat(&broker, member));
    }
    let joins = started.elapsed();
    // Reconcile: every member heartbeats (reporting what it was given) until all are stable
    // at one epoch, as clients would over a few heartbeat intervals.
    for _ in 0..20 {
        for member in &mut group {
            changes.push(beat(&broker, member));
        }
        let epochs: std::collections::BTreeSet<i32> = group.iter().map(|m| m.epoch).collect();
        if epochs.len() == 1 && group.iter().all(|m| !m.owned_changed) {
            break;
        }
    }
    changes.sort();
    (broker, group, Settling { joins, changes })
}

/// How a group got to stable: the joins' time, and every heartbeat's latency until then (the
/// joins, and the heartbeats that reconciled, each logged and fsynced), sorted.
struct Settling {
    joins: Duration,
    changes: Vec<Duration>,
}

/// `rounds` heartbeats of every member; their latencies, sorted, and the time they took.
fn steady(broker: &Broker, group: &mut [Member], rounds: usize) -> (Vec<Duration>, Duration) {
    let mut latencies = Vec::with_capacity(group.len() * rounds);
    let started = Instant::now();
    for _ in 0..rounds {
        for member in group.iter_mut() {
            latencies.push(beat(broker, member));
        }
    }
    let took = started.elapsed();
    latencies.sort();
    (latencies, took)
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() as f64 * q) as usize).min(sorted.len() - 1)]
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let members = args.first().copied().unwrap_or(1_000);
    let rounds = args.get(1).copied().unwrap_or(20);
    let mut p99s = Vec::new();
    let mut kept = None;
    for size in [10, members] {
        let dir = tempfile::tempdir().expect("temp dir");
        let (broker, mut group, settling) = settled(dir.path(), size);
        let (latencies, took) = steady(&broker, &mut group, rounds);
        let rate = latencies.len() as f64 / took.as_secs_f64();
        let p99 = quantile(&latencies, 0.99);
        println!(
            "group of {size:>5}: joins {:>8.1?} in all, until stable p99 {:>8.1?} max {:>8.1?}; \
             steady heartbeats {rate:>7.0}/s from one thread, p50 {:>6.1?} p99 {p99:>6.1?} \
             max {:>6.1?}",
            settling.joins,
            quantile(&settling.changes, 0.99),
            settling.changes[settling.changes.len() - 1],
            quantile(&latencies, 0.5),
            latencies[latencies.len() - 1],
        );
        p99s.push(p99);
        drop(broker);
        kept = Some(dir);
    }
    println!(
        "p99 of a group of {members} over a group of 10: {:.2}",
        p99s[1].as_secs_f64() / p99s[0].as_secs_f64()
    );
    let dir = kept.expect("the big group's directory");
    let started = Instant::now();
    let log = engine(dir.path());
    let opened = started.elapsed();
    let described = log.describe_consumer_group("g").expect("the group");
    assert_eq!(described.members.len(), members);
    println!("restart over the group of {members}: open in {opened:.1?}");
}
