//! The retry worker over a share group (`ShareWorker`), crashed at random: a deterministic rule
//! fails some records transiently (some recover, some run out of attempts) and some for good;
//! the handler crashes the worker at random records (it vanishes holding what it acquired, its
//! handled records unacknowledged, as a killed process does) and every third crash the engine
//! is closed and reopened too. Every record must end processed or in the dead-letter topic
//! (once, copied, with its error and reason), none is handled past `max_attempts`, and one that
//! keeps failing never succeeds.

use std::collections::{BTreeMap, BTreeSet};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::Duration;

use logd::{Config, Log, ManualClock, TopicConfig};
use logd_retry::{Failure, Headers, Jitter, Message, Outcome, RetryPolicy, ShareWorker};
use logd_storage::{RealFs, SplitMix64};

use super::{produce_task, read_all};

const TASKS: u32 = 200;
const PARTITIONS: u32 = 3;
const MAX_ATTEMPTS: u32 = 3;
const CRASHES: u32 = 30;
const CRASH: &str = "simulated worker crash";

/// How task `i` fares: `Err` a permanent failure, else the failures before a success.
fn failures_before_success(task: u32) -> Result<u32, ()> {
    if task.is_multiple_of(17) {
        Err(())
    } else {
        Ok(task % 4)
    }
}

fn open(dir: &std::path::Path, clock: &Arc<ManualClock>) -> Log {
    Log::open_with(Arc::new(RealFs), clock.clone(), dir, Config::default()).unwrap()
}

fn policy() -> RetryPolicy {
    RetryPolicy {
        base: Duration::from_millis(100),
        cap: Duration::from_secs(5),
        max_attempts: MAX_ATTEMPTS,
        jitter: Jitter::Full,
    }
}

fn setup(log: &Log) {
    log.create_topic(
        "tasks",
        TopicConfig {
            partitions: PARTITIONS,
            ..TopicConfig::default()
        },
    )
    .unwrap();
    let mut dlq = TopicConfig::default();
    dlq.inert
        .insert(logd::groups::share::DLQ_GROUP_ENABLE.into(), "true".into());
    log.create_topic("dlq.tasks", dlq).unwrap();
    log.alter_group_configs(
        "workers",
        &[("share.auto.offset.reset", Some("earliest"))],
        false,
    )
    .unwrap();
    for task in 0..TASKS {
        produce_task(log, task, PARTITIONS);
    }
}

/// What a run saw: tasks the handler succeeded on, and each task's letters.
struct Run {
    succeeded: BTreeSet<u32>,
    letters: BTreeMap<u32, Vec<Message>>,
    restarts: u32,
}

fn run(seed: u64) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let mut log = open(dir.path(), &clock);
    setup(&log);
    let mut rng = SplitMix64::new(seed);
    let mut succeeded = BTreeSet::new();
    let (mut crashes, mut restarts) = (0, 0);
    loop {
        let mut worker =
            ShareWorker::new(&log, "workers", "tasks", &policy(), Some("dlq.tasks"), 5).unwrap();
        let crash_at = if crashes < CRASHES {
            1 + rng.below(10)
        } else {
            u64::MAX
        };
        let mut count = 0u64;
        let mut handler = |m: &Message, attempt: u32| {
            count += 1;
            if count == crash_at {
                std::panic::panic_any(CRASH);
            }
            let task: u32 = m.header_str("task-id").unwrap().parse().unwrap();
            assert!(
                attempt <= MAX_ATTEMPTS,
                "task {task} handled at attempt {attempt}"
            );
            match failures_before_success(task) {
                Err(()) => Outcome::Permanent(Failure::new("Poison", format!("task {task}"))),
                Ok(failures) if attempt <= failures => {
                    Outcome::Transient(Failure::new("Flaky", format!("task {task} try {attempt}")))
                }
                Ok(_) => {
                    succeeded.insert(task);
                    Outcome::Success
                }
            }
        };
        let mut quiet = 0;
        let crashed = loop {
            match catch_unwind(AssertUnwindSafe(|| {
                worker.poll_once(Duration::ZERO, &mut handler)
            })) {
                Err(_) => break true,
                // Nothing now: the backoff, or a dead worker's locks, hold records back.
                Ok(Ok(0)) if quiet < 100 => {
                    quiet += 1;
                    clock.advance(1_000);
                }
                Ok(Ok(0)) => break false,
                Ok(Ok(_)) => quiet = 0,
                Ok(Err(e)) => panic!("{e}"),
            }
        };
        if !crashed {
            worker.close().unwrap();
            break;
        }
        // Gone without a word: what it held comes back when its locks expire.
        crashes += 1;
        drop(worker);
        if crashes % 3 == 0 {
            restarts += 1;
            drop(log);
            log = open(dir.path(), &clock);
        }
    }
    let mut letters: BTreeMap<u32, Vec<Message>> = BTreeMap::new();
    for letter in read_all(&log, "dlq.tasks") {
        let task = letter.header_str("task-id").unwrap().parse().unwrap();
        letters.entry(task).or_default().push(letter);
    }
    Run {
        succeeded,
        letters,
        restarts,
    }
}

#[test]
fn share_workers_crashed_at_random_end_every_record_processed_or_dead_lettered_once() {
    // The crashes are panics of the handler: keep their messages out of the test's output.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if info.payload().downcast_ref::<&str>() != Some(&CRASH) {
            default_hook(info);
        }
    }));
    for seed in [1, 2] {
        let run = run(seed);
        assert_eq!(run.restarts, CRASHES / 3, "seed {seed}");
        for task in 0..TASKS {
            let letters = run.letters.get(&task).map_or(&[][..], Vec::as_slice);
            assert!(
                letters.len() <= 1,
                "seed {seed}: task {task} dead-lettered twice"
            );
            let letter = letters.first();
            assert!(
                run.succeeded.contains(&task) || letter.is_some(),
                "seed {seed}: task {task} neither processed nor dead-lettered"
            );
            let reason = letter.and_then(|l| l.header_str("logd.dlq.reason"));
            match failures_before_success(task) {
                // A crash costs the records a worker held an attempt each, so a task that
                // would have succeeded may run out; it is never lost.
                Ok(f) if f < MAX_ATTEMPTS => {}
                Ok(_) => {
                    assert!(
                        !run.succeeded.contains(&task),
                        "task {task} past its attempts"
                    );
                    assert_eq!(reason, Some("max-attempts"), "seed {seed}: task {task}");
                }
                Err(()) => {
                    assert!(!run.succeeded.contains(&task), "task {task}");
                    // Rejected with its error, or out of attempts when crashes held it to its
                    // last.
                    match reason {
                        Some("permanent") => assert_eq!(
                            letter.unwrap().header_str("logd.dlq.error.class"),
                            Some("Poison"),
                            "seed {seed}: task {task}"
                        ),
                        other => assert_eq!(other, Some("max-attempts"), "task {task}"),
                    }
                }
            }
            if let Some(letter) = letter {
                assert_eq!(
                    letter.value.as_deref(),
                    Some(format!("task-{task}").as_bytes()),
                    "seed {seed}: the record is copied"
                );
            }
        }
        // Crashes cost attempts, not outcomes wholesale: most go as their rule says.
        let as_ruled = (0..TASKS)
            .filter(|t| matches!(failures_before_success(*t), Ok(f) if f < MAX_ATTEMPTS))
            .filter(|t| run.succeeded.contains(t))
            .count();
        assert!(as_ruled > 120, "seed {seed}: only {as_ruled} succeeded");
        let poisoned = run
            .letters
            .values()
            .flatten()
            .filter(|l| l.header_str("logd.dlq.error.class") == Some("Poison"));
        assert!(
            poisoned.count() > 5,
            "seed {seed}: rejections carry the worker's error"
        );
    }
}
