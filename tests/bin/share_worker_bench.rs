//! One retry worker over a share group of the embedded engine (`logd_retry::ShareWorker`), its
//! handler taking HANDLER_MS per record, over a topic of 12 partitions holding RECORDS records
//! (`benches/retry_scale.sh` runs it beside the classic group's workers): the steady rate from
//! a tenth to nine tenths of the records, with BATCH records acquired (and their
//! acknowledgements made durable together) per poll. Prints `SHARE_WORKER BATCH PER_S`.
//!
//! With `memory`, instead: the engine's resident memory before and after 10,000 records of 5
//! partitions are acquired and held (in flight), and per record held. Prints
//! `IN_FLIGHT 10000 BYTES PER_RECORD`.
//!
//! Usage: `logd-share-worker-bench RECORDS HANDLER_MS BATCH...` or `... memory`

use std::process::ExitCode;
use std::time::{Duration, Instant};

use logd::{Config, Log, Producer, ProducerConfig, ProducerRecord, TopicConfig};
use logd_retry::{Jitter, Outcome, RetryPolicy, ShareWorker};

const PARTITIONS: u32 = 12;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("memory") {
        return match memory() {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("logd-share-worker-bench: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let (Some(records), Some(handler_ms)) = (
        args.get(1).and_then(|a| a.parse::<usize>().ok()),
        args.get(2).and_then(|a| a.parse::<u64>().ok()),
    ) else {
        eprintln!("usage: logd-share-worker-bench RECORDS HANDLER_MS BATCH...");
        return ExitCode::from(2);
    };
    for batch in args[3..].iter().filter_map(|a| a.parse::<usize>().ok()) {
        match round(records, handler_ms, batch) {
            Ok(rate) => println!("SHARE_WORKER {batch} {rate:.0}"),
            Err(e) => {
                eprintln!("logd-share-worker-bench: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

fn round(records: usize, handler_ms: u64, batch: usize) -> Result<f64, Box<dyn std::error::Error>> {
    let (_dir, log) = filled(records, PARTITIONS)?;
    let policy = RetryPolicy {
        base: Duration::from_millis(100),
        cap: Duration::from_secs(5),
        max_attempts: 5,
        jitter: Jitter::Full,
    };
    let mut worker = ShareWorker::new(&log, "workers", "tasks", &policy, None, batch)?;
    let (mut done, mut from, mut to) = (0usize, None, None);
    let mut handler = |_: &logd_retry::Message, _: u32| {
        std::thread::sleep(Duration::from_millis(handler_ms));
        Outcome::Success
    };
    while done < records {
        done += worker.poll_once(Duration::from_millis(100), &mut handler)?;
        if from.is_none() && done >= records / 10 {
            from = Some((Instant::now(), done));
        }
        if to.is_none() && done >= records * 9 / 10 {
            to = Some((Instant::now(), done));
        }
    }
    worker.close()?;
    let ((t0, n0), (t1, n1)) = (from.unwrap(), to.unwrap());
    Ok((n1 - n0) as f64 / (t1 - t0).as_secs_f64())
}

/// An engine in a temp dir whose topic `tasks` has `records` records spread over its
/// `partitions` partitions, and share group `workers` reading it from the start.
fn filled(
    records: usize,
    partitions: u32,
) -> Result<(tempfile::TempDir, Log), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let log = Log::open(dir.path(), Config::default())?;
    log.create_topic(
        "tasks",
        TopicConfig {
            partitions,
            ..TopicConfig::default()
        },
    )?;
    let producer = Producer::new(&log, ProducerConfig::default());
    let mut sent = Vec::new();
    for i in 0..records {
        let value = format!("task-{i}");
        let record = ProducerRecord::new("tasks", value.as_str()).partition(i as u32 % partitions);
        sent.push(producer.send(record)?);
    }
    for delivery in sent {
        delivery.wait()?;
    }
    log.alter_group_configs(
        "workers",
        &[("share.auto.offset.reset", Some("earliest"))],
        false,
    )?;
    Ok((dir, log))
}

/// This process's resident memory (VmRSS), in bytes.
fn resident() -> Result<u64, Box<dyn std::error::Error>> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .ok_or("no VmRSS")?;
    Ok(kb * 1024)
}

fn memory() -> Result<(), Box<dyn std::error::Error>> {
    const HELD: usize = 10_000;
    const SPREAD: u32 = 5;
    let (_dir, log) = filled(HELD, SPREAD)?;
    let before = resident()?;
    let mut held = 0;
    for partition in 0..SPREAD {
        // The group's default bound on locks per partition is 2,000.
        let (acquired, _) = log.share_acquire("workers", "m", "tasks", partition, 2_000)?;
        held += acquired
            .iter()
            .map(|r| (r.last_offset - r.first_offset + 1) as usize)
            .sum::<usize>();
    }
    let grown = resident()?.saturating_sub(before);
    println!(
        "IN_FLIGHT {held} {grown} {:.0}",
        grown as f64 / held.max(1) as f64
    );
    Ok(())
}
