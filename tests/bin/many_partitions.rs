//! Runs the engine with many partitions under a small open-file limit: sets its own soft
//! `RLIMIT_NOFILE`; `create` makes the topics, appends one record to every partition, reads
//! every partition back, closes, reopens and reads again; `open` (on what `create` left) only
//! opens and reads, in a fresh process, so its memory is the open engine's alone; `crash` opens,
//! appends a second record to every hundredth partition and exits without closing. `create`
//! first prints `CREATED MS`, the time the topic creations took. Prints
//! `OK PARTITIONS OPEN_MS ANON_BYTES_PER_PARTITION SCANNED TWICE`: the anonymous memory the last
//! open added per partition (from `/proc/self/status`), the partitions whose recovery had to
//! scan a tail, and those holding a second record; or the first error (exit 1).
//!
//! `produce` (the benchmark in `benches/partitions.sh`) makes a topic of one partition and one
//! of TOPICS x PARTITIONS_PER_TOPIC partitions under fsync `interval`, and sends the same
//! randomly keyed 100-byte records through the embedded producer to each in turn, three
//! rounds: prints `ROUND ONE_PER_S MANY_PER_S RATIO` per round.
//!
//! Usage: `logd-many-partitions create|open|crash|produce DIR TOPICS PARTITIONS_PER_TOPIC NOFILE
//! [MAX_OPEN_FILES [never]]` (`never`: the produce benchmark under fsync `never`)

use std::process::ExitCode;
use std::time::{Duration, Instant};

use logd::{Config, FsyncPolicy, Log, TopicConfig};
use logd_storage::Offset;
use logd_storage::batch::{BatchBuilder, Compression, Record};

/// Sets the soft open-file limit of this process.
#[allow(
    unsafe_code,
    reason = "setrlimit(2) is a system call libc exposes only as unsafe FFI"
)]
fn limit_open_files(soft: u64) -> std::io::Result<()> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes only into `limit`, which lives for the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    limit.rlim_cur = soft.min(limit.rlim_max);
    // SAFETY: setrlimit reads only `limit`, which lives for the call.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The process's anonymous resident memory in bytes (`RssAnon`).
fn anonymous_memory() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("RssAnon:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// What a run found: partitions, open time (ms), anonymous bytes per partition, partitions
/// recovery scanned, partitions with a second record.
type Found = (u32, u128, u64, usize, usize);

fn run(args: &[String]) -> Result<Found, String> {
    let number = |i: usize| -> Result<u64, String> {
        args.get(i)
            .and_then(|a| a.parse().ok())
            .ok_or_else(|| format!("argument {i} must be a number"))
    };
    let usage = "usage: create|open DIR TOPICS PARTITIONS NOFILE [MAX_OPEN_FILES]";
    let create = match args.get(1).map(String::as_str) {
        Some("create") => true,
        Some("open") => false,
        Some("crash") => return crash(args),
        Some("produce") => return produce(args, number(3)? as u32 * number(4)? as u32),
        _ => return Err(usage.into()),
    };
    let dir = args.get(2).ok_or(usage)?;
    let (topics, partitions, nofile) = (number(3)?, number(4)? as u32, number(5)?);
    let max_open_files = args
        .get(6)
        .map(|_| number(6))
        .transpose()?
        .map(|n| n as usize);
    limit_open_files(nofile).map_err(|e| format!("setrlimit: {e}"))?;
    let config = Config {
        max_open_files,
        ..Config::default()
    };
    let topic = TopicConfig {
        partitions,
        fsync: FsyncPolicy::Never,
        ..TopicConfig::default()
    };
    let names: Vec<String> = (0..topics).map(|t| format!("tenant-{t}")).collect();
    if create {
        let log = Log::open(dir, config.clone()).map_err(|e| format!("open: {e}"))?;
        let mut creating = Duration::ZERO;
        for name in &names {
            let started = Instant::now();
            log.create_topic(name, topic.clone())
                .map_err(|e| format!("create {name}: {e}"))?;
            creating += started.elapsed();
            for p in 0..partitions {
                let mut builder = BatchBuilder::new(Compression::None);
                builder.push(0, None, Some(format!("{name}/{p}").as_bytes()), &[]);
                let mut batch = builder.build(0).map_err(|e| e.to_string())?;
                log.append(name, p, &mut batch)
                    .map_err(|e| format!("append {name}/{p}: {e}"))?;
            }
        }
        read_all(&log, &names, partitions)?;
        println!("CREATED {}", creating.as_millis());
    }
    let before = anonymous_memory();
    let started = Instant::now();
    let log = Log::open(dir, config).map_err(|e| format!("reopen: {e}"))?;
    let reopen_ms = started.elapsed().as_millis();
    let total = topics as u32 * partitions;
    let per_partition = anonymous_memory().saturating_sub(before) / u64::from(total.max(1));
    let twice = read_all(&log, &names, partitions)?;
    let mut scanned = 0;
    for name in &names {
        for p in 0..partitions {
            let partition = log.partition(name, p).map_err(|e| e.to_string())?;
            if partition.recovery_report().scanned_bytes > 0 {
                scanned += 1;
            }
        }
    }
    Ok((total, reopen_ms, per_partition, scanned, twice))
}

/// Opens the engine, appends a second record to every hundredth partition, and exits: a
/// crash with unflushed tails in those partitions only.
fn crash(args: &[String]) -> Result<Found, String> {
    let dir = args
        .get(2)
        .ok_or("usage: crash DIR TOPICS PARTITIONS NOFILE [MAX_OPEN]")?;
    let number = |i: usize| -> Result<u64, String> {
        args.get(i)
            .and_then(|a| a.parse().ok())
            .ok_or_else(|| format!("argument {i} must be a number"))
    };
    let (topics, partitions) = (number(3)?, number(4)? as u32);
    let config = Config {
        max_open_files: args.get(6).and_then(|a| a.parse().ok()),
        ..Config::default()
    };
    limit_open_files(number(5)?).map_err(|e| format!("setrlimit: {e}"))?;
    let log = Log::open(dir, config).map_err(|e| format!("open: {e}"))?;
    for t in 0..topics {
        let name = format!("tenant-{t}");
        for p in (0..partitions).step_by(100) {
            let mut builder = BatchBuilder::new(Compression::None);
            builder.push(1, None, Some(format!("{name}/{p}/again").as_bytes()), &[]);
            let mut batch = builder.build(0).map_err(|e| e.to_string())?;
            log.append(&name, p, &mut batch)
                .map_err(|e| format!("append {name}/{p}: {e}"))?;
        }
    }
    // No close, no checkpoint (`exit` runs no destructor): as kill -9 would leave it, without
    // the core dump an abort may write.
    std::process::exit(3);
}

/// Records per round of the produce benchmark.
const RECORDS: u64 = 3_000_000;

/// The produce benchmark: one partition against `many` partitions, in the same run.
fn produce(args: &[String], many: u32) -> Result<Found, String> {
    use logd::{Producer, ProducerConfig, ProducerRecord};
    let dir = args
        .get(2)
        .ok_or("usage: produce DIR TOPICS PARTITIONS NOFILE [MAX_OPEN]")?;
    let nofile: u64 = args.get(5).and_then(|a| a.parse().ok()).ok_or("NOFILE")?;
    let max_open_files = args.get(6).and_then(|a| a.parse().ok());
    limit_open_files(nofile).map_err(|e| format!("setrlimit: {e}"))?;
    let config = Config {
        max_open_files,
        ..Config::default()
    };
    let log = Log::open(dir, config).map_err(|e| format!("open: {e}"))?;
    // `interval` (1 s) unless the seventh argument says `never`.
    let fsync = match args.get(7).map(String::as_str) {
        Some("never") => FsyncPolicy::Never,
        _ => FsyncPolicy::Interval(FsyncPolicy::DEFAULT_INTERVAL),
    };
    for (name, partitions) in [("one", 1), ("many", many)] {
        let topic = TopicConfig {
            partitions,
            fsync,
            ..TopicConfig::default()
        };
        log.create_topic(name, topic)
            .map_err(|e| format!("create {name}: {e}"))?;
    }
    let producer = Producer::new(&log, ProducerConfig::default());
    let value = [b'v'; 100];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut send_all = |topic: &str| -> Result<f64, String> {
        let started = Instant::now();
        for _ in 0..RECORDS {
            // xorshift: a random key per record, so records spread over every partition.
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let key = state.to_le_bytes();
            producer
                .send(ProducerRecord::new(topic, &value[..]).key(&key[..]))
                .map_err(|e| format!("send: {e}"))?;
        }
        producer.flush().map_err(|e| format!("flush: {e}"))?;
        Ok(RECORDS as f64 / started.elapsed().as_secs_f64())
    };
    for round in 1..=3 {
        let one = send_all("one")?;
        let spread = send_all("many")?;
        println!("ROUND {round} {one:.0} {spread:.0} {:.2}", spread / one);
    }
    Ok((many, 0, 0, 0, 0))
}

/// Reads every partition's record back (and, where `crash` wrote one, its second); returns how
/// many partitions hold two.
fn read_all(log: &Log, names: &[String], partitions: u32) -> Result<usize, String> {
    let mut twice = 0;
    for name in names {
        for p in 0..partitions {
            let partition = log
                .partition(name, p)
                .map_err(|e| format!("partition {name}/{p}: {e}"))?;
            let bytes = partition
                .read(Offset(0), 1 << 20)
                .map_err(|e| format!("read {name}/{p}: {e}"))?;
            let records = Record::decode_all(&bytes, 1 << 20).map_err(|e| e.to_string())?;
            let expected = format!("{name}/{p}");
            let again = format!("{name}/{p}/again");
            let values: Vec<Option<&[u8]>> = records.iter().map(|r| r.value.as_deref()).collect();
            match values[..] {
                [Some(first)] if first == expected.as_bytes() => {}
                [Some(first), Some(second)]
                    if first == expected.as_bytes() && second == again.as_bytes() =>
                {
                    twice += 1
                }
                _ => return Err(format!("{name}/{p} holds {records:?}")),
            }
        }
    }
    Ok(twice)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    match run(&args) {
        Ok((partitions, reopen_ms, per_partition, scanned, twice)) => {
            println!("OK {partitions} {reopen_ms} {per_partition} {scanned} {twice}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
