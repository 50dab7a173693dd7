//! What the log cleaner costs the clients beside it (`benches/cleaner.sh`): produce and fetch
//! latency on a plain topic while the engine's cleaner thread compacts a large topic of the
//! same engine, against the same workload before that topic is altered to compact, in
//! alternated rounds. Each
//! produce is one small batch appended under fsync `always` (the default, so the cleaner's
//! writes and fsyncs compete with it for the disk); each fetch reads 64 KiB from a random
//! offset of the plain topic. Prints one line per round:
//! `ROUND MODE produce_p50_us produce_p99_us fetch_p50_us fetch_p99_us cleaned_mb`.
//!
//! Usage: `logd-cleaner-latency DIR MB ROUNDS [RATE_MB_PER_S]` (no rate: unlimited)

use std::process::ExitCode;
use std::time::{Duration, Instant};

use logd::{CleanupPolicy, Config, Housekeeping, Log, TopicConfig};
use logd_storage::batch::{BatchBuilder, Compression};
use logd_storage::{Offset, SplitMix64};

/// How long each round measures at least.
const ROUND: Duration = Duration::from_secs(4);

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(dir), Some(mb), Some(rounds)) = (
        args.get(1),
        args.get(2).and_then(|a| a.parse::<u64>().ok()),
        args.get(3).and_then(|a| a.parse::<u32>().ok()),
    ) else {
        eprintln!("usage: logd-cleaner-latency DIR MB ROUNDS [RATE_MB_PER_S]");
        return ExitCode::from(2);
    };
    let rate = args
        .get(4)
        .and_then(|a| a.parse::<u64>().ok())
        .map(|r| r << 20);
    // The engine's own cleaner thread, waking every 10 ms, at the rate asked.
    let config = Config {
        housekeeping: Housekeeping {
            cleaner_backoff: Duration::from_millis(10),
            cleaner_io_max_bytes_per_sec: rate,
            ..Housekeeping::default()
        },
        ..Config::default()
    };
    let log = Log::open(dir, config).expect("open the engine");
    // The records carry timestamps near 0: without retention off, the housekeeping thread
    // would be deleting segments in the middle of the measurements.
    let plain = TopicConfig {
        segment_bytes: 64 << 20,
        retention_ms: None,
        ..TopicConfig::default()
    };
    log.create_topic("plain", plain).expect("plain topic");
    let mut rng = SplitMix64::new(7);
    for i in 0..20_000 {
        log.append("plain", 0, &mut batch(&mut rng, i, 1))
            .expect("fill plain");
    }
    for round in 0..rounds {
        // A fresh topic each round: MB of 1 KiB values over 1,000 keys in 1 MiB segments,
        // written as a plain topic (the idle measurement), then altered to compact (the
        // cleaner takes it at once, and one pass drops nearly all of it).
        let name = format!("table{round}");
        let mut table = TopicConfig {
            segment_bytes: 1 << 20,
            fsync: logd::FsyncPolicy::Never,
            retention_ms: None,
            ..TopicConfig::default()
        };
        log.create_topic(&name, table.clone())
            .expect("compacted topic");
        for i in 0..mb * 1024 / 32 {
            log.append(&name, 0, &mut batch(&mut rng, i as i64, 32))
                .expect("fill the compacted topic");
        }
        log.partition(&name, 0).unwrap().flush().unwrap();
        for cleaning in [false, true] {
            let freed_before = log.cleaner_stats().bytes_freed;
            if cleaning {
                table.cleanup_policy = CleanupPolicy::Compact;
                log.alter_topic_config(&name, table.clone())
                    .expect("alter to compact");
            }
            // Idle: ROUND. Cleaning: until the pass over the topic has ended (its bytes are
            // counted as freed), so the window holds the cleaning and nothing else.
            let done = || !cleaning || log.cleaner_stats().bytes_freed > freed_before;
            let (produce, fetch) = measure(&log, &mut rng, done);
            println!(
                "ROUND {round} {} {} {} {} {} {}",
                if cleaning { "cleaning" } else { "idle" },
                percentile(&produce, 50),
                percentile(&produce, 99),
                percentile(&fetch, 50),
                percentile(&fetch, 99),
                (log.cleaner_stats().bytes_freed - freed_before) >> 20
            );
        }
        log.delete_topic(&name).expect("delete the compacted topic");
    }
    ExitCode::SUCCESS
}

/// Produce and fetch latencies (µs) on the plain topic, one of each in turn, for at least
/// ROUND and until `done` (at most a minute).
fn measure(log: &Log, rng: &mut SplitMix64, done: impl Fn() -> bool) -> (Vec<u64>, Vec<u64>) {
    let partition = log.partition("plain", 0).unwrap();
    let (mut produce, mut fetch) = (Vec::new(), Vec::new());
    let started = Instant::now();
    while started.elapsed() < ROUND || (!done() && started.elapsed() < Duration::from_secs(60)) {
        let mut one = batch(rng, 0, 1);
        let t = Instant::now();
        log.append("plain", 0, &mut one).expect("produce");
        produce.push(t.elapsed().as_micros() as u64);
        let at = rng.below(partition.end_offset().0 as u64) as i64;
        let t = Instant::now();
        let bytes = partition.read(Offset(at), 64 << 10).expect("fetch");
        fetch.push(t.elapsed().as_micros() as u64);
        assert!(!bytes.is_empty());
    }
    (produce, fetch)
}

/// `count` records keyed over 1,000 keys with 1 KiB values.
fn batch(rng: &mut SplitMix64, ts: i64, count: usize) -> Vec<u8> {
    let value = vec![b'v'; 1024];
    let mut builder = BatchBuilder::new(Compression::None);
    for _ in 0..count {
        let key = format!("key-{}", rng.below(1_000));
        builder.push(ts, Some(key.as_bytes()), Some(&value), &[]);
    }
    builder.build(0).unwrap()
}

fn percentile(samples: &[u64], p: usize) -> u64 {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}
