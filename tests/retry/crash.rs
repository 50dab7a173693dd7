//! A long randomized run: a deterministic rule fails some records transiently (some recover,
//! some run out of attempts) and some permanently, and the worker is crashed at random
//! transport operations (an append or a commit fails and the worker is dropped, then rebuilt
//! from the group's commits, with its dedupe store reopened). Every source record must end
//! processed or dead-lettered and no record may be handled more than `max_attempts` times. The
//! same checker must catch the broken variant that commits before the dead-letter or retry
//! append. With a state directory (the hop journal), a crash between a hop's append and its
//! commit leaves one copy, never two; the control run without one shows the duplicates such
//! crashes leave.

use std::collections::BTreeSet;
use std::time::Duration;

use logd::{Clock, Log, ManualClock};
use logd_retry::{
    CommitOrder, DedupeConfig, DedupeStore, Error, Failure, Jitter, Message, Outcome, RetryConfig,
    RetryPolicy, RetryWorker,
};
use logd_storage::SplitMix64;

use super::{Probe, copies_written_twice, engine, produce_task, read_all};
use logd_retry::Headers;

const TASKS: u32 = 200;
const PARTITIONS: u32 = 3;
const MAX_ATTEMPTS: u32 = 3;

/// How task `i` fares: `Err(true)` permanent failure, else the failures before a success
/// (more than `MAX_ATTEMPTS - 1` means it runs out of attempts).
fn failures_before_success(task: u32) -> Result<u32, bool> {
    if task.is_multiple_of(17) {
        Err(true)
    } else {
        Ok(task % 4)
    }
}

/// What one run saw.
struct Run {
    succeeded: BTreeSet<u32>,
    max_attempt: u32,
    crashes: u32,
}

fn run(seed: u64, commit_order: CommitOrder, journal: bool) -> (Log, Run, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let (log, clock) = engine(&dir.path().join("log"), PARTITIONS, 1_800_000_000_000);
    for task in 0..TASKS {
        produce_task(&log, task, PARTITIONS);
    }
    let config = RetryConfig {
        policy: RetryPolicy {
            base: Duration::from_millis(100),
            cap: Duration::from_secs(5),
            max_attempts: MAX_ATTEMPTS,
            jitter: Jitter::Full,
        },
        seed,
        tiers: [1, 10].map(Duration::from_secs).to_vec(),
        commit_order,
        state_dir: journal.then(|| dir.path().join("worker-state")),
        ..RetryConfig::new("workers", "tasks")
    };
    let mut rng = SplitMix64::new(seed);
    let mut seen = Run {
        succeeded: BTreeSet::new(),
        max_attempt: 0,
        crashes: 0,
    };
    let mut handler = |m: &Message, attempt: u32| {
        let task: u32 = m.header_str("task-id").unwrap().parse().unwrap();
        seen.max_attempt = seen.max_attempt.max(attempt);
        match failures_before_success(task) {
            Err(_) => Outcome::Permanent(Failure::new("Poison", format!("task {task}"))),
            Ok(failures) if attempt <= failures => {
                Outcome::Transient(Failure::new("Flaky", format!("task {task} try {attempt}")))
            }
            Ok(_) => {
                seen.succeeded.insert(task);
                Outcome::Success
            }
        }
    };
    let mut crashes = 0;
    loop {
        // Forty crashes at random moments, then a run to the end.
        let budget = if crashes < 40 {
            1 + rng.below(25)
        } else {
            u64::MAX
        };
        let transport = Probe::new(&log, budget);
        let dedupe = DedupeStore::open(
            dir.path().join("dedupe"),
            DedupeConfig::default(),
            clock.now_ms(),
        )
        .unwrap();
        // Settling the hop a crash left in flight uses the transport: it can crash too.
        let mut worker = match RetryWorker::new(transport, config.clone(), Some(dedupe)) {
            Ok(worker) => worker,
            Err(Error::Transport(_)) => {
                crashes += 1;
                continue;
            }
            Err(e) => panic!("{e}"),
        };
        let outcome = drive(&mut worker, &clock, &mut handler);
        match outcome {
            Ok(()) => break,
            Err(Error::Transport(_)) => crashes += 1,
            Err(e) => panic!("{e}"),
        }
    }
    seen.crashes = crashes;
    (log, seen, dir)
}

fn drive(
    worker: &mut RetryWorker<Probe>,
    clock: &ManualClock,
    handler: &mut impl FnMut(&Message, u32) -> Outcome,
) -> logd_retry::Result<()> {
    loop {
        let poll = worker.poll_once(handler)?;
        if poll.handled > 0 {
            continue;
        }
        match poll.next_due {
            Some(due) => clock.advance(due - clock.now_ms()),
            None => return Ok(()),
        }
    }
}

/// The tasks neither processed nor dead-lettered.
fn lost(log: &Log, run: &Run) -> Vec<u32> {
    let dead: BTreeSet<u32> = read_all(log, "tasks.dlq")
        .iter()
        .map(|m| m.header_str("task-id").unwrap().parse().unwrap())
        .collect();
    (0..TASKS)
        .filter(|t| !run.succeeded.contains(t) && !dead.contains(t))
        .collect()
}

#[test]
fn crashed_at_random_moments_every_record_ends_processed_or_dead_lettered() {
    for seed in [1, 2] {
        let (log, run, _dir) = run(seed, CommitOrder::AfterAppend, true);
        assert_eq!(run.crashes, 40);
        assert_eq!(lost(&log, &run), Vec::<u32>::new(), "seed {seed}");
        assert!(
            run.max_attempt <= MAX_ATTEMPTS,
            "attempts never exceed the maximum"
        );
        for task in 0..TASKS {
            let expect_success = matches!(failures_before_success(task), Ok(f) if f < MAX_ATTEMPTS);
            assert_eq!(run.succeeded.contains(&task), expect_success, "task {task}");
        }
        assert_eq!(
            copies_written_twice(&log),
            0,
            "seed {seed}: the journal settles hops"
        );
    }
}

#[test]
fn without_a_state_directory_the_same_crashes_write_copies_twice() {
    let twice: usize = [1, 2]
        .into_iter()
        .map(|seed| copies_written_twice(&run(seed, CommitOrder::AfterAppend, false).0))
        .sum();
    assert!(
        twice > 0,
        "crashes between a hop's append and its commit must leave duplicates without a journal"
    );
}

#[test]
fn the_checker_catches_a_worker_that_commits_before_it_appends() {
    let caught = (1..=5).any(|seed| {
        let (log, run, _dir) = run(seed, CommitOrder::BeforeAppend, false);
        !lost(&log, &run).is_empty()
    });
    assert!(
        caught,
        "committing before the dead-letter append must lose records under crashes"
    );
}
