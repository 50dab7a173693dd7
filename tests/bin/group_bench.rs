//! The retry workers' scaling benchmark (`benches/retry_scale.sh`): for 1, 2 and 4 worker
//! processes (`logd-group-worker` with a handler that takes HANDLER_MS per record) in one
//! group on logd's broker (in this process, a fresh one each round) over a topic of 12
//! partitions holding RECORDS records, the steady rate of processed records (from the moment
//! every worker has processed a record to nine tenths of the records, so the group's join and
//! its rebalances are not counted) and its ratio to one worker's.
//! Prints `WORKERS N PER_S RATIO` per round.
//!
//! Usage: `logd-group-bench RECORDS HANDLER_MS`

use std::path::Path;
use std::process::{Child, Command, ExitCode};
use std::time::{Duration, Instant};

use bytes::Bytes;
use logd_client::{Client, Remote};
use logd_retry::{IdempotentAppender, OutRecord, Transport};

#[path = "../support/serve_logd.rs"]
mod serve_logd;
use serve_logd::serve_logd;

const PARTITIONS: u32 = 12;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let parsed = match &args[..] {
        [_, records, ms] => records.parse::<usize>().ok().zip(ms.parse::<u64>().ok()),
        _ => None,
    };
    let Some((records, handler_ms)) = parsed else {
        eprintln!("usage: logd-group-bench RECORDS HANDLER_MS");
        return ExitCode::from(2);
    };
    let mut one = None;
    for workers in [1, 2, 4] {
        match round(records, handler_ms, workers) {
            Ok(rate) => {
                let base = *one.get_or_insert(rate);
                println!("WORKERS {workers} {rate:.0} {:.2}", rate / base);
            }
            Err(e) => {
                eprintln!("{workers} workers: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

/// One round: a fresh broker, the records, `workers` workers; their steady rate per second.
fn round(records: usize, handler_ms: u64, workers: usize) -> Result<f64, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let addr = serve_logd(&dir.path().join("data"))?;
    let mut client = Client::connect(&addr).map_err(|e| e.to_string())?;
    client
        .create_topic("tasks", PARTITIONS as i32, &[])
        .map_err(|e| e.to_string())?;
    let mut remote = Remote::new(client);
    let mut appender = IdempotentAppender::new();
    for i in 0..records {
        let record = OutRecord {
            timestamp: remote.now_ms(),
            key: Some(Bytes::from(format!("k{i}"))),
            value: Some(Bytes::from_static(b"task")),
            headers: vec![("task-id".into(), Some(Bytes::from(i.to_string())))],
        };
        appender
            .send(&mut remote, "tasks", i as u32 % PARTITIONS, &record)
            .map_err(|e| e.to_string())?;
    }
    let worker_bin = std::env::current_exe()
        .map_err(|e| e.to_string())?
        .with_file_name("logd-group-worker");
    let mut children: Vec<Child> = (0..workers)
        .map(|w| {
            Command::new(&worker_bin)
                .arg(&addr)
                .arg(format!("w{w}"))
                .arg(dir.path().join(format!("w{w}.events")))
                .arg("--handler-ms")
                .arg(handler_ms.to_string())
                .spawn()
                .map_err(|e| format!("{}: {e}", worker_bin.display()))
        })
        .collect::<Result<_, _>>()?;
    let processed = || count_processed(dir.path());
    let deadline = Instant::now() + Duration::from_secs(600);
    let wait_for = |target: usize| -> Result<Instant, String> {
        while processed() < target {
            if Instant::now() > deadline {
                return Err(format!("{} of {records} processed in time", processed()));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(Instant::now())
    };
    // The window opens once every worker has processed a record: the group's join and the
    // rebalances as members arrive one by one are not the steady rate.
    while !settled(dir.path(), workers) {
        if Instant::now() > deadline {
            return Err(format!("the {workers} workers never shared the partitions"));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let (started, from) = (Instant::now(), processed());
    let to = records * 9 / 10;
    if from >= to {
        return Err(format!(
            "{from} of {records} were processed before the group settled: give more records"
        ));
    }
    let ended = wait_for(to)?;
    for child in &mut children {
        let _ = child.kill();
        let _ = child.wait();
    }
    Ok((to - from) as f64 / (ended - started).as_secs_f64())
}

/// Whether each of the `workers` workers has processed a record: a worker processes only what
/// the group assigned it, so all of them are in the group's current generation by then.
fn settled(dir: &Path, workers: usize) -> bool {
    (0..workers).all(|w| {
        std::fs::read_to_string(dir.join(format!("w{w}.events")))
            .is_ok_and(|text| text.lines().any(|l| l.contains(" ok ")))
    })
}

/// Records the workers processed so far (lines ending in `ok` in their event files).
fn count_processed(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "events"))
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .map(|text| text.lines().filter(|l| l.contains(" ok ")).count())
        .sum()
}
