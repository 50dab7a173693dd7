//! `engine/*`: the embedded engine against `logd-storage` underneath it, in the same run.
//! Producer throughput (keyed 100-byte records) vs encoding the same records into batches and
//! appending them directly; consumer throughput vs reading and decoding directly; commit
//! latency; append-to-wake latency of a waiting consumer; a group's settle among 100 and among
//! 10,000 settled groups (the ratio stays near 1: a settle logs its own group only).

use std::sync::mpsc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, black_box, criterion_group};
use logd::groups::classic::{JoinRequest, JoinStatus};
use logd::{
    AutoOffsetReset, Config, Consumer, ConsumerConfig, FsyncPolicy, Log, Producer, ProducerConfig,
    ProducerRecord, TopicConfig, TopicPartition,
};
use logd_storage::batch::{BatchBuilder, BatchIter, Compression};
use logd_storage::{LogConfig, Offset, PartitionLog};

const RECORDS: usize = 200_000;
const VALUE: [u8; 100] = [b'v'; 100];

fn never_topic() -> TopicConfig {
    TopicConfig {
        partitions: 1,
        fsync: FsyncPolicy::Never,
        retention_ms: None,
        ..TopicConfig::default()
    }
}

fn key(i: usize) -> String {
    format!("key-{:06}", i % 1000)
}

/// Sends `RECORDS` keyed records through a fresh engine's `Producer` and flushes; the time
/// from the first send to the end of the flush.
fn send_all(config: ProducerConfig) -> Duration {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = Log::open(dir.path(), Config::default()).expect("open");
    log.create_topic("t", never_topic()).expect("topic");
    let producer = Producer::new(&log, config);
    let started = Instant::now();
    for i in 0..RECORDS {
        let k = key(i);
        let record = ProducerRecord::new("t", &VALUE[..])
            .key(&k)
            .timestamp(i as i64);
        black_box(producer.send(record).expect("send"));
    }
    producer.flush().expect("flush");
    started.elapsed()
}

fn produce(c: &mut Criterion) {
    let mut group = c.benchmark_group("engine/produce/100B-keyed");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(5));
    group.throughput(Throughput::Elements(RECORDS as u64));
    group.bench_function(BenchmarkId::new("logd", "producer-send+flush"), |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| send_all(ProducerConfig::default()))
                .sum()
        })
    });
    group.bench_function(BenchmarkId::new("baseline", "storage-encode+append"), |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| {
                    let dir = tempfile::tempdir().expect("temp dir");
                    let config = LogConfig {
                        fsync: FsyncPolicy::Never,
                        retention_ms: None,
                        ..LogConfig::default()
                    };
                    let log = PartitionLog::open(dir.path(), config).expect("open");
                    let started = Instant::now();
                    let mut builder = BatchBuilder::new(Compression::None);
                    for i in 0..RECORDS {
                        let k = key(i);
                        builder.push(i as i64, Some(k.as_bytes()), Some(&VALUE), &[]);
                        // The producer's default batch size, 16 KiB.
                        if builder.size() >= 16 << 10 {
                            log.append(&mut builder.build(0).expect("build"))
                                .expect("append");
                            builder = BatchBuilder::new(Compression::None);
                        }
                    }
                    if !builder.is_empty() {
                        log.append(&mut builder.build(0).expect("build"))
                            .expect("append");
                    }
                    started.elapsed()
                })
                .sum()
        })
    });
    group.finish();
}

/// Producer throughput in batches of about 1,000 records, idempotent (the default) and not, in
/// the same run: the producer id and sequence cost one lookup per batch in the partition.
fn produce_idempotence(c: &mut Criterion) {
    let mut group = c.benchmark_group("engine/produce/1000-record-batches");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(5));
    group.throughput(Throughput::Elements(RECORDS as u64));
    for idempotence in [true, false] {
        let name = if idempotence {
            "idempotent"
        } else {
            "not-idempotent"
        };
        let config = ProducerConfig {
            // About 1,000 keyed 100-byte records per batch.
            batch_bytes: 150_000,
            linger: Duration::from_secs(1),
            idempotence,
            ..ProducerConfig::default()
        };
        group.bench_function(BenchmarkId::new("logd", name), |b| {
            b.iter_custom(|iters| (0..iters).map(|_| send_all(config.clone())).sum())
        });
    }
    group.finish();
}

fn consume(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = Log::open(dir.path(), Config::default()).expect("open");
    log.create_topic("t", never_topic()).expect("topic");
    {
        let producer = Producer::new(&log, ProducerConfig::default());
        for i in 0..RECORDS {
            producer
                .send(ProducerRecord::new("t", &VALUE[..]).key(&key(i)))
                .expect("send");
        }
        producer.flush().expect("flush");
    }
    let mut group = c.benchmark_group("engine/consume/100B");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(4));
    group.throughput(Throughput::Elements(RECORDS as u64));
    group.bench_function("logd/consumer-poll", |b| {
        b.iter(|| {
            let mut consumer = Consumer::new(
                &log,
                ConsumerConfig {
                    auto_offset_reset: AutoOffsetReset::Earliest,
                    max_poll_records: 10_000,
                    ..ConsumerConfig::default()
                },
            );
            consumer
                .assign(vec![TopicPartition::new("t", 0)])
                .expect("assign");
            let mut seen = 0;
            while seen < RECORDS {
                seen += black_box(consumer.poll(Duration::from_secs(1)).expect("poll")).len();
            }
        })
    });
    let partition = log.partition("t", 0).expect("partition");
    group.bench_function("baseline/storage-read+decode", |b| {
        b.iter(|| {
            let mut next = 0;
            let mut seen = 0;
            while seen < RECORDS {
                let bytes = partition.read(Offset(next), 1 << 20).expect("read");
                for item in BatchIter::new(&bytes, 0) {
                    let (_, batch) = item.expect("batch");
                    for record in batch.records(1 << 20).expect("records").iter() {
                        black_box(record.expect("record"));
                        seen += 1;
                    }
                    next = batch.header.next_offset();
                }
            }
        })
    });
    group.finish();
}

fn join_request(member_id: Option<String>) -> JoinRequest {
    JoinRequest {
        member_id,
        group_instance_id: None,
        client_id: "bench".into(),
        client_host: "/127.0.0.1".into(),
        require_known_member_id: false,
        protocol_type: "consumer".into(),
        protocols: vec![("range".into(), bytes::Bytes::from_static(b"t"))],
        session_timeout_ms: 60_000,
        rebalance_timeout_ms: 60_000,
    }
}

/// Member `member` (a new one if `None`) joins group `id` alone and assigns itself: the group
/// settles at a new generation, durably. Returns the member id.
fn settle(log: &Log, id: &str, member: Option<String>) -> String {
    let coordinator = log.coordinator();
    let now = log.clock().now_ms();
    let JoinStatus::Joined(joined) = log
        .join_classic(id, join_request(member), now)
        .expect("join")
    else {
        panic!("a lone member joins at once");
    };
    let assignment = vec![(joined.member_id.clone(), bytes::Bytes::from_static(b"all"))];
    coordinator
        .sync_and_wait(
            id,
            &joined.member_id,
            joined.generation,
            Some(assignment),
            log.clock(),
            Duration::from_secs(5),
        )
        .expect("sync");
    joined.member_id
}

fn group_settle(c: &mut Criterion) {
    let mut group = c.benchmark_group("engine/group-settle");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(4));
    for groups in [100, 10_000] {
        let dir = tempfile::tempdir().expect("temp dir");
        let log = Log::open(dir.path(), Config::default()).expect("open");
        for g in 0..groups {
            settle(&log, &format!("group-{g:06}"), None);
        }
        let mut member = settle(&log, "bench", None);
        group.bench_function(BenchmarkId::new("among", groups), |b| {
            b.iter(|| member = settle(&log, "bench", Some(member.clone())))
        });
    }
    group.finish();
}

fn commit(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = Log::open(dir.path(), Config::default()).expect("open");
    log.create_topic("t", never_topic()).expect("topic");
    let mut consumer = Consumer::new(
        &log,
        ConsumerConfig {
            group_id: Some("g".into()),
            ..ConsumerConfig::default()
        },
    );
    consumer
        .assign(vec![TopicPartition::new("t", 0)])
        .expect("assign");
    let tp = TopicPartition::new("t", 0);
    let mut offset = 0;
    let mut group = c.benchmark_group("engine/commit");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(4));
    group.bench_function("one-partition-durable", |b| {
        b.iter(|| {
            offset += 1;
            consumer
                .commit_offsets(&[(tp.clone(), offset)])
                .expect("commit");
        })
    });
    group.finish();
}

fn wake(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = Log::open(dir.path(), Config::default()).expect("open");
    log.create_topic("t", never_topic()).expect("topic");
    let (go, started) = mpsc::channel::<()>();
    let (woke_tx, woke) = mpsc::channel::<Instant>();
    let reader = {
        let log = log.clone();
        std::thread::spawn(move || {
            let mut consumer = Consumer::new(
                &log,
                ConsumerConfig {
                    auto_offset_reset: AutoOffsetReset::Latest,
                    ..ConsumerConfig::default()
                },
            );
            consumer
                .assign(vec![TopicPartition::new("t", 0)])
                .expect("assign");
            consumer
                .position(&TopicPartition::new("t", 0))
                .expect("position");
            while started.recv().is_ok() {
                // The consumer is waiting in poll before the append happens.
                let records = consumer.poll(Duration::from_secs(10)).expect("poll");
                assert_eq!(records.len(), 1);
                woke_tx.send(Instant::now()).expect("report");
            }
        })
    };
    let mut batch = BatchBuilder::new(Compression::None);
    batch.push(0, None, Some(&VALUE), &[]);
    let template = batch.build(0).expect("build");
    let mut group = c.benchmark_group("engine/append-to-wake");
    group
        .sample_size(50)
        .measurement_time(Duration::from_secs(4));
    // Criterion reports the mean; every sample is kept too, for the percentiles printed below.
    let mut samples: Vec<Duration> = Vec::new();
    group.bench_function("never", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                go.send(()).expect("start the reader");
                // Give the reader time to block in poll, so the wake-up is what is measured.
                std::thread::sleep(Duration::from_micros(300));
                let appended = Instant::now();
                log.append("t", 0, &mut template.clone()).expect("append");
                let latency = woke
                    .recv()
                    .expect("woke")
                    .saturating_duration_since(appended);
                samples.push(latency);
                total += latency;
            }
            total
        })
    });
    group.finish();
    // A filter that skips this benchmark (`cargo bench -- storage/append`) leaves no samples.
    if !samples.is_empty() {
        samples.sort();
        let at = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize];
        eprintln!(
            "engine/append-to-wake/never percentiles over {} wake-ups: p50 {:?} p90 {:?} p99 {:?}",
            samples.len(),
            at(0.5),
            at(0.9),
            at(0.99)
        );
    }
    drop(go);
    reader.join().expect("reader");
}

criterion_group!(
    benches,
    produce,
    produce_idempotence,
    consume,
    commit,
    wake,
    group_settle
);
