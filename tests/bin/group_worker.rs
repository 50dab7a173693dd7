//! A retry worker that is a member of group `workers` on a broker or cluster (`GroupRemote`:
//! librdkafka holds the membership), handling `tasks` under `Ordering::PerKey` until it is
//! killed. Task `i` (header `task-id`) fails permanently if `i % 17 == 0`, else transiently
//! `i % 4` times before it succeeds (with 3 attempts, `i % 4 == 3` runs out). Every handler
//! call is written to EVENTS before the handler returns, one line each:
//! `NANOS NAME TASK KEY PARTITION ATTEMPT OUTCOME` (OUTCOME `ok`, `retry` or `poison`); after a
//! poll that ended at a commit the group refused, `NANOS NAME - - - - refused`; when the
//! partitions it owns change, `NANOS NAME - - - - owns 0,3`. A line is in the page cache once
//! written, so a SIGKILL after it keeps it.
//!
//! With HANDLER_MS (the scaling benchmark, `benches/retry_scale.sh`), every record succeeds
//! after the handler sleeps that long, as a handler waiting on a service would.
//!
//! Usage: `logd-group-worker BOOTSTRAP NAME EVENTS [HANDLER_MS]`

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use logd_client::{Client, ClientSecurity, GroupRemote};
use logd_retry::{
    Failure, Headers, Jitter, Message, Ordering, Outcome, RetryConfig, RetryPolicy, RetryWorker,
};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (bootstrap, name, events, handler_ms) = match &args[..] {
        [_, bootstrap, name, events] => (bootstrap, name, events, None),
        [_, bootstrap, name, events, ms] if ms.parse::<u64>().is_ok() => {
            (bootstrap, name, events, ms.parse().ok())
        }
        _ => {
            eprintln!("usage: logd-group-worker BOOTSTRAP NAME EVENTS [HANDLER_MS]");
            return ExitCode::from(2);
        }
    };
    match run(bootstrap, name, events, handler_ms) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{name}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(
    bootstrap: &str,
    name: &str,
    events: &str,
    handler_ms: Option<u64>,
) -> Result<(), Box<dyn std::error::Error>> {
    let events = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(events)?;
    let security = ClientSecurity::default();
    let client = Client::connect_with(bootstrap, &security)?;
    let transport = GroupRemote::new(client, bootstrap, &security)?;
    let config = RetryConfig {
        ordering: Ordering::PerKey,
        policy: RetryPolicy {
            base: Duration::from_millis(20),
            cap: Duration::from_millis(100),
            max_attempts: 3,
            jitter: Jitter::Full,
        },
        tiers: vec![Duration::from_millis(50), Duration::from_millis(200)],
        ..RetryConfig::new("workers", "tasks")
    };
    let mut worker = RetryWorker::new(transport, config, None)?;
    let failed_write = std::cell::Cell::new(None);
    let mut handler = |m: &Message, attempt: u32| {
        let task: u32 = m
            .header_str("task-id")
            .and_then(|t| t.parse().ok())
            .unwrap_or(0);
        let (outcome, said) = if let Some(ms) = handler_ms {
            std::thread::sleep(Duration::from_millis(ms));
            (Outcome::Success, "ok")
        } else if task.is_multiple_of(17) {
            let poison = Failure::new("Poison", format!("task {task}"));
            (Outcome::Permanent(poison), "poison")
        } else if attempt <= task % 4 {
            let flaky = Failure::new("Flaky", format!("task {task} try {attempt}"));
            (Outcome::Transient(flaky), "retry")
        } else {
            (Outcome::Success, "ok")
        };
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let key = String::from_utf8_lossy(m.key.as_deref().unwrap_or_default()).into_owned();
        let line = format!(
            "{nanos} {name} {task} {key} {} {attempt} {said} {}@{}\n",
            m.partition, m.topic, m.offset
        );
        if let Err(e) = (&events).write_all(line.as_bytes()) {
            failed_write.set(Some(e));
        }
        outcome
    };
    let mut refused = 0;
    let mut owned = Vec::new();
    loop {
        let poll = worker.poll_once(&mut handler)?;
        if let Some(e) = failed_write.take() {
            return Err(e.into());
        }
        // A commit the group refused: the record handled last is redelivered, and may be
        // handled again by whoever owns its partition next.
        if worker.stats().refused_commits > refused {
            refused = worker.stats().refused_commits;
            let nanos = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            writeln!(&events, "{nanos} {name} - - - - refused")?;
        }
        if worker.owned() != owned {
            owned = worker.owned();
            let nanos = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            let list: Vec<String> = owned.iter().map(u32::to_string).collect();
            writeln!(&events, "{nanos} {name} - - - - owns {}", list.join(","))?;
        }
        if poll.handled == 0 {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
