//! The end-to-end benchmark's embedded half (`benches/e2e.sh`): produce N records of 100 bytes
//! through the engine's `Producer`, then consume them with a `Consumer`, and print records/s.
//!
//! `cargo run --release -p logd --example throughput -- [N] [always|interval|never]`

use std::time::{Duration, Instant};

use logd::{
    AutoOffsetReset, Config, Consumer, ConsumerConfig, FsyncPolicy, Log, Producer, ProducerConfig,
    ProducerRecord, TopicConfig, TopicPartition,
};

fn main() -> logd::Result<()> {
    let mut args = std::env::args().skip(1);
    let n: usize = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let fsync = match args.next().as_deref() {
        Some("interval") => FsyncPolicy::Interval(FsyncPolicy::DEFAULT_INTERVAL),
        Some("never") => FsyncPolicy::Never,
        _ => FsyncPolicy::Always,
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let log = Log::open(dir.path(), Config::default())?;
    log.create_topic(
        "bench",
        TopicConfig {
            partitions: 1,
            fsync,
            ..TopicConfig::default()
        },
    )?;
    let value = [b'x'; 100];

    let producer = Producer::new(
        &log,
        ProducerConfig {
            batch_bytes: 1 << 20,
            ..ProducerConfig::default()
        },
    );
    let started = Instant::now();
    for _ in 0..n {
        producer.send(ProducerRecord::new("bench", &value[..]).partition(0))?;
    }
    producer.flush()?;
    let produce = started.elapsed();

    let mut consumer = Consumer::new(
        &log,
        ConsumerConfig {
            auto_offset_reset: AutoOffsetReset::Earliest,
            max_poll_records: 10_000,
            ..ConsumerConfig::default()
        },
    );
    consumer.assign(vec![TopicPartition::new("bench", 0)])?;
    let started = Instant::now();
    let mut seen = 0;
    while seen < n {
        seen += consumer.poll(Duration::from_secs(5))?.len();
    }
    let consume = started.elapsed();
    let rate = |d: Duration| n as f64 / d.as_secs_f64();
    println!(
        "embedded produce {:.0} records/s {:.1} MB/s",
        rate(produce),
        rate(produce) * 100.0 / 1e6
    );
    println!(
        "embedded consume {:.0} records/s {:.1} MB/s",
        rate(consume),
        rate(consume) * 100.0 / 1e6
    );
    Ok(())
}
