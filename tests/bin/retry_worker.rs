//! A retry worker over an engine directory, until its work is done or it is killed. Task `i`
//! (header `task-id`) fails permanently if `i % 17 == 0`, else transiently `i % 4` times
//! before it succeeds (so with 3 attempts, `i % 4 == 3` runs out); successes are recorded in
//! the dedupe store, the rest ends in `tasks.dlq`. The kill test checks every task ended in
//! one or the other.
//!
//! Usage: `logd-retry-worker DATA_DIR DEDUPE_DIR [STATE_DIR]`

use std::process::ExitCode;
use std::time::Duration;

use logd::{Config, Log};
use logd_retry::Headers;
use logd_retry::{
    DedupeConfig, DedupeStore, Embedded, Failure, Jitter, Outcome, RetryConfig, RetryPolicy,
    RetryWorker, Transport,
};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(data), Some(dedupe_dir)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: logd-retry-worker DATA_DIR DEDUPE_DIR");
        return ExitCode::from(2);
    };
    // A third argument: the worker's state directory (its hop journal).
    match run(data, dedupe_dir, args.get(3).map(String::as_str)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

fn run(data: &str, dedupe_dir: &str, state_dir: Option<&str>) -> logd_retry::Result<()> {
    let log = Log::open(data, Config::default())?;
    let transport = Embedded::new(log);
    let dedupe = DedupeStore::open(dedupe_dir, DedupeConfig::default(), transport.now_ms())?;
    let config = RetryConfig {
        policy: RetryPolicy {
            base: Duration::from_millis(5),
            cap: Duration::from_millis(50),
            max_attempts: 3,
            jitter: Jitter::Full,
        },
        tiers: vec![Duration::from_millis(20), Duration::from_millis(100)],
        id_header: Some("task-id".into()),
        state_dir: state_dir.map(Into::into),
        ..RetryConfig::new("workers", "tasks")
    };
    let mut worker = RetryWorker::new(transport, config, Some(dedupe))?;
    let mut handler = |m: &logd_retry::Message, attempt: u32| {
        let task: u32 = m
            .header_str("task-id")
            .and_then(|t| t.parse().ok())
            .unwrap_or(0);
        if task.is_multiple_of(17) {
            Outcome::Permanent(Failure::new("Poison", format!("task {task}")))
        } else if attempt <= task % 4 {
            Outcome::Transient(Failure::new("Flaky", format!("task {task} try {attempt}")))
        } else {
            Outcome::Success
        }
    };
    loop {
        let poll = worker.poll_once(&mut handler)?;
        if poll.handled > 0 {
            continue;
        }
        match poll.next_due {
            Some(due) => {
                let wait = (due - worker.transport_mut().now_ms()).max(1) as u64;
                std::thread::sleep(Duration::from_millis(wait));
            }
            None => return Ok(()),
        }
    }
}
