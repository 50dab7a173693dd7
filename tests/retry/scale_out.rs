//! Retry workers as members of one group over the embedded engine: workers on threads share
//! the source's partitions (each partition number of the source and of its retry tiers to one
//! worker), a worker that stops hands its partitions to the others and one that starts takes
//! some, every task ends processed once or dead-lettered, and with `Ordering::PerKey` each
//! key's tasks are processed in order throughout; and a worker the group replaced cannot commit
//! over its successor.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use logd::{Clock, Config, Log, TopicConfig};
use logd_retry::{
    Embedded, Failure, Jitter, Message, Ordering, Outcome, RetryConfig, RetryPolicy, RetryWorker,
};

use super::{engine, produce_keyed, produce_task, read_all};
use logd_retry::Headers;

const PARTITIONS: u32 = 6;
const TASKS: u32 = 600;
const MAX_ATTEMPTS: u32 = 3;

/// What the workers did, shared by their threads.
#[derive(Default)]
struct Seen {
    /// Task -> workers that processed it successfully.
    processed: BTreeMap<u32, Vec<&'static str>>,
    /// Key -> its tasks in the order they were processed.
    by_key: BTreeMap<String, Vec<u32>>,
    /// Worker -> source partitions of the records it was handed (tiers included).
    partitions: BTreeMap<&'static str, BTreeSet<u32>>,
    /// Worker -> the partitions it owned at its last look.
    owned: BTreeMap<&'static str, Vec<u32>>,
    max_attempt: u32,
}

/// Keys shared by several tasks, each key in one partition.
const KEYS: u32 = 60;

fn config(ordering: Ordering) -> RetryConfig {
    RetryConfig {
        ordering,
        policy: RetryPolicy {
            base: Duration::from_millis(20),
            cap: Duration::from_millis(100),
            max_attempts: MAX_ATTEMPTS,
            jitter: Jitter::Equal,
        },
        tiers: [50, 200].map(Duration::from_millis).to_vec(),
        ..RetryConfig::new("workers", "tasks")
    }
}

/// Task 10n+3 always fails for a while (dead-lettered after its attempts), 10n+7 is poison
/// (dead-lettered at once), 7n+5 fails once (some of a key's tasks, not all); the rest
/// succeed.
fn outcome(task: u32, attempt: u32) -> Outcome {
    match (task % 10, task % 7, attempt) {
        (3, ..) => Outcome::Transient(Failure::new("Timeout", "never answers")),
        (7, ..) => Outcome::Permanent(Failure::new("BadInput", "malformed")),
        (_, 5, 1) => Outcome::Transient(Failure::new("Timeout", "once")),
        _ => Outcome::Success,
    }
}

/// A worker named `name` on its own thread, polling until `stop` is set.
fn start(
    log: &Log,
    name: &'static str,
    ordering: Ordering,
    seen: &Arc<Mutex<Seen>>,
    stop: &Arc<AtomicBool>,
) -> JoinHandle<()> {
    let (log, seen, stop) = (log.clone(), seen.clone(), stop.clone());
    std::thread::spawn(move || {
        let mut worker = RetryWorker::new(Embedded::new(log), config(ordering), None).unwrap();
        let mut handler = |m: &Message, attempt: u32| {
            let task: u32 = m.header_str("task-id").unwrap().parse().unwrap();
            let outcome = outcome(task, attempt);
            let mut seen = seen.lock().unwrap();
            seen.partitions.entry(name).or_default().insert(m.partition);
            seen.max_attempt = seen.max_attempt.max(attempt);
            if outcome == Outcome::Success {
                seen.processed.entry(task).or_default().push(name);
                let key = String::from_utf8_lossy(m.key.as_deref().unwrap()).into_owned();
                seen.by_key.entry(key).or_default().push(task);
            }
            outcome
        };
        while !stop.load(AtomicOrdering::SeqCst) {
            let poll = worker.poll_once(&mut handler).unwrap();
            seen.lock().unwrap().owned.insert(name, worker.owned());
            if poll.handled == 0 {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        // Dropping the worker leaves the group: its partitions go to the others at once.
    })
}

fn wait_for(what: &str, seen: &Mutex<Seen>, done: impl Fn(&Seen) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done(&seen.lock().unwrap()) {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn owns(seen: &Seen, name: &str, partitions: usize) -> bool {
    seen.owned.get(name).is_some_and(|o| o.len() == partitions)
}

#[test]
fn workers_in_one_group_share_the_partitions_and_take_over_from_each_other() {
    scale_out(Ordering::Unordered);
}

#[test]
fn per_key_order_holds_across_workers_that_come_and_go() {
    let seen = scale_out(Ordering::PerKey);
    for (key, tasks) in &seen.by_key {
        assert!(tasks.is_sorted(), "{key}: processed in the order {tasks:?}");
    }
}

/// Two workers share the tasks, one stops, a third joins; checks every task's fate and
/// returns what the workers saw.
fn scale_out(ordering: Ordering) -> Seen {
    let dir = tempfile::tempdir().unwrap();
    // A real clock: the workers' retries become due while they run on their threads.
    let log = Log::open(dir.path(), Config::default()).unwrap();
    let topic = TopicConfig {
        partitions: PARTITIONS,
        ..TopicConfig::default()
    };
    log.create_topic("tasks", topic).unwrap();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let stops: Vec<Arc<AtomicBool>> = (0..3).map(|_| Arc::new(AtomicBool::new(false))).collect();
    let a = start(&log, "a", ordering, &seen, &stops[0]);
    let b = start(&log, "b", ordering, &seen, &stops[1]);
    wait_for("a and b own three partitions each", &seen, |s| {
        owns(s, "a", 3) && owns(s, "b", 3)
    });
    for id in 0..TASKS {
        let key = id % KEYS;
        produce_keyed(&log, id, &format!("k{key}"), key % PARTITIONS);
    }
    wait_for("a third of the tasks are processed", &seen, |s| {
        s.processed.len() as u32 >= TASKS / 3
    });
    {
        // Each handled records of its own partitions only, and between them all of them.
        let seen = seen.lock().unwrap();
        let (of_a, of_b) = (&seen.partitions["a"], &seen.partitions["b"]);
        assert!(of_a.is_disjoint(of_b), "a read {of_a:?}, b read {of_b:?}");
        assert_eq!(of_a.len() + of_b.len(), PARTITIONS as usize);
    }
    stops[1].store(true, AtomicOrdering::SeqCst);
    b.join().unwrap();
    wait_for("a owns every partition after b left", &seen, |s| {
        owns(s, "a", PARTITIONS as usize)
    });
    let c = start(&log, "c", ordering, &seen, &stops[2]);
    wait_for("c takes three partitions from a", &seen, |s| {
        owns(s, "a", 3) && owns(s, "c", 3)
    });
    let dead = |log: &Log| read_all(log, "tasks.dlq").len() as u32;
    let expected_dead = (0..TASKS).filter(|t| matches!(t % 10, 3 | 7)).count() as u32;
    let deadline = Instant::now() + Duration::from_secs(60);
    while seen.lock().unwrap().processed.len() as u32 + dead(&log) < TASKS {
        assert!(Instant::now() < deadline, "tasks left unresolved");
        std::thread::sleep(Duration::from_millis(20));
    }
    for stop in &stops {
        stop.store(true, AtomicOrdering::SeqCst);
    }
    a.join().unwrap();
    c.join().unwrap();

    let seen = std::mem::take(&mut *seen.lock().unwrap());
    assert!(seen.partitions.contains_key("c"), "c took work over");
    for (task, by) in &seen.processed {
        assert_eq!(by.len(), 1, "task {task} processed by {by:?}");
    }
    let dead_tasks: BTreeSet<u32> = read_all(&log, "tasks.dlq")
        .iter()
        .map(|m| m.header_str("task-id").unwrap().parse().unwrap())
        .collect();
    assert_eq!(
        dead_tasks.len() as u32,
        expected_dead,
        "each dead-lettered once"
    );
    for task in 0..TASKS {
        let processed = seen.processed.contains_key(&task);
        assert_ne!(
            processed,
            dead_tasks.contains(&task),
            "task {task}: lost or both"
        );
        assert_eq!(
            dead_tasks.contains(&task),
            matches!(task % 10, 3 | 7),
            "task {task}"
        );
    }
    assert!(seen.max_attempt <= MAX_ATTEMPTS, "{}", seen.max_attempt);
    seen
}

#[test]
fn a_worker_the_group_replaced_cannot_commit_over_its_successor() {
    let dir = tempfile::tempdir().unwrap();
    let (log, clock) = engine(dir.path(), 1, 1_000_000);
    for id in 0..3 {
        produce_task(&log, id, 1);
    }
    let settings = config(Ordering::Unordered);
    let mut zombie = RetryWorker::new(Embedded::new(log.clone()), settings.clone(), None).unwrap();
    assert_eq!(zombie.owned(), [0]);
    let mut successor = None;
    let mut handled = 0;
    // The zombie stalls in its first record past its session (45 s), and a new worker takes
    // the group over meanwhile.
    let poll = zombie
        .poll_once(&mut |_: &Message, _| {
            handled += 1;
            if successor.is_none() {
                clock.advance(46_000);
                successor = Some(
                    RetryWorker::new(Embedded::new(log.clone()), settings.clone(), None).unwrap(),
                );
            }
            Outcome::Success
        })
        .unwrap();
    // It handles its fetch (records it already had) and commits once, at its end: refused.
    assert_eq!(
        (handled, poll.handled),
        (3, 3),
        "the zombie handled its fetch"
    );
    let committed = log.offsets().fetch("workers", "tasks", 0).map(|c| c.offset);
    assert_eq!(committed, None, "the zombie's commit was refused");
    drop(zombie);
    let mut successor = successor.unwrap();
    assert_eq!(successor.owned(), [0]);
    let mut tasks = Vec::new();
    successor
        .poll_once(&mut |m: &Message, _| {
            tasks.push(m.header_str("task-id").unwrap().to_owned());
            Outcome::Success
        })
        .unwrap();
    assert_eq!(
        tasks,
        ["0", "1", "2"],
        "the successor starts from the last commit"
    );
    let committed = log.offsets().fetch("workers", "tasks", 0).map(|c| c.offset);
    assert_eq!(committed, Some(3));
    assert!(clock.now_ms() > 1_000_000);
}
