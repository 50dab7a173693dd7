//! Exactly-once hops over the wire: the retry worker as a process with a transactional id
//! (`logd-group-worker --exactly-once`, the remote transport), on logd and on Apache Kafka's
//! three-node cluster (`support/kafka_cluster.rs`), SIGKILLed again and again: by itself just
//! after a copy was appended inside its hop's transaction (before the source commit), and from
//! outside at a random moment. Each restart uses the same transactional id, which aborts what
//! the killed instance left open.
//!
//! Afterwards, read as read_committed (what the worker and any read_committed consumer see),
//! every retry copy and dead letter exists exactly once: per task as many tier copies as its
//! failures before the last attempt, and one dead letter for each task that must end there.
//! Read as read_uncommitted, the same topics hold copies twice (the aborted ones), which shows
//! the kills landed inside transactions: without them those would be duplicates.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use logd_client::{Client, Remote};
use logd_retry::message::{ATTEMPT, RETRY_ORIGINAL_OFFSET};
use logd_retry::{Headers, IdempotentAppender, Message, OutRecord, Transport};
use logd_storage::SplitMix64;

use super::read_through;

use super::serve_logd::serve_logd;

const PARTITIONS: u32 = 3;
const TASKS: u32 = 90;
/// The worker's tiers (`logd-group-worker`: 50 ms and 200 ms).
const TIERS: [&str; 2] = ["retry.50ms", "retry.200ms"];

#[test]
fn exactly_once_hops_on_logd_survive_kills_inside_transactions() {
    let dir = tempfile::tempdir().unwrap();
    let addr = serve_logd(dir.path()).unwrap();
    scenario(&addr, "eos-tasks");
}

#[test]
fn exactly_once_hops_on_a_real_kafka_cluster_survive_kills_inside_transactions() {
    let bootstrap = &crate::kafka_cluster::kafka_cluster().bootstrap;
    scenario(bootstrap, "eos-tasks");
}

#[test]
fn a_worker_whose_transactional_id_was_taken_over_stops_writing() {
    let dir = tempfile::tempdir().unwrap();
    let addr = serve_logd(dir.path()).unwrap();
    let mut client = Client::connect(&addr).unwrap();
    client.create_topic("fenced", 1, &[]).unwrap();
    let record = OutRecord {
        timestamp: 0,
        key: None,
        value: Some(Bytes::from_static(b"copy")),
        headers: Vec::new(),
    };
    let offsets = [("fenced".to_owned(), 0, 1)];
    let mut old = Remote::new(Client::connect(&addr).unwrap());
    old.init_transactions("fenced-worker").unwrap();
    old.append_in_transaction("fenced-worker", "fenced", 0, &record)
        .unwrap();
    // A newer instance with the same id aborts the old one's open transaction.
    let mut new = Remote::new(client);
    new.init_transactions("fenced-worker").unwrap();
    for attempt in 0..2 {
        let refused = old
            .commit_transaction("fenced-worker", "fenced-group", &offsets)
            .and_then(|()| {
                old.append_in_transaction("fenced-worker", "fenced", 0, &record)
                    .map(|_| ())
            })
            .expect_err("the fenced instance must not write");
        assert!(
            refused.to_string().contains("fenced"),
            "try {attempt}: {refused}"
        );
    }
    new.append_in_transaction("fenced-worker", "fenced", 0, &record)
        .unwrap();
    new.commit_transaction("fenced-worker", "fenced-group", &offsets)
        .unwrap();
    let mut committed = Remote::new(Client::connect(&addr).unwrap()).read_committed();
    assert_eq!(read_through(&mut committed, "fenced", 1).len(), 1);
    assert_eq!(
        committed.committed("fenced-group", "fenced", 0).unwrap(),
        Some(1)
    );
}

/// Task `task`'s copies under the worker's rules (3 attempts): (tier copies, dead letters).
fn expected_copies(task: u32) -> (usize, usize) {
    match (task.is_multiple_of(17), task % 4) {
        (true, _) => (0, 1),
        (false, 3) => (2, 1),
        (false, failures) => (failures as usize, 0),
    }
}

fn worker(bootstrap: &str, source: &str, dir: &Path, crash_at: Option<u32>) -> Child {
    let mut command = Command::new(env!("CARGO_BIN_EXE_logd-group-worker"));
    command
        .arg(bootstrap)
        .arg("w")
        .arg(dir.join("w.events"))
        .args(["--source", source, "--group", &format!("{source}-workers")])
        .args(["--exactly-once", &format!("{source}-worker"), "--no-group"]);
    if let Some(n) = crash_at {
        command.args(["--crash-at-append", &n.to_string()]);
    }
    command
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn the worker")
}

/// The copies in `source`'s tiers and dead-letter topic, by task: (tier copies, letters), and
/// how many (origin, attempt) pairs appear more than once.
fn copies(remote: &mut Remote, source: &str) -> (BTreeMap<u32, (usize, usize)>, usize) {
    let task = |m: &Message| -> u32 { m.header_str("task-id").unwrap().parse().unwrap() };
    let mut by_task: BTreeMap<u32, (usize, usize)> = BTreeMap::new();
    let mut seen: BTreeMap<(u32, String, String), usize> = BTreeMap::new();
    for tier in TIERS {
        for m in read_through(remote, &format!("{source}.{tier}"), PARTITIONS) {
            by_task.entry(task(&m)).or_default().0 += 1;
            let attempt = m.header_str(ATTEMPT).unwrap_or("").to_owned();
            let origin = m.header_str(RETRY_ORIGINAL_OFFSET).unwrap_or("").to_owned();
            *seen.entry((task(&m), origin, attempt)).or_default() += 1;
        }
    }
    for m in read_through(remote, &format!("{source}.dlq"), PARTITIONS) {
        by_task.entry(task(&m)).or_default().1 += 1;
        *seen
            .entry((task(&m), "dlq".into(), String::new()))
            .or_default() += 1;
    }
    let twice = seen.values().filter(|&&n| n > 1).count();
    (by_task, twice)
}

fn scenario(bootstrap: &str, source: &str) {
    let dir = tempfile::tempdir().unwrap();
    let mut client = Client::connect(bootstrap).unwrap();
    client.create_topic(source, PARTITIONS as i32, &[]).unwrap();
    let mut plain = Remote::new(client);
    let mut appender = IdempotentAppender::new();
    for task in 0..TASKS {
        let record = OutRecord {
            timestamp: plain.now_ms(),
            // A key per task: no task waits for another (`Ordering::PerKey` parks none).
            key: Some(Bytes::from(format!("k{task}"))),
            value: Some(Bytes::from(format!("task-{task}"))),
            headers: vec![("task-id".into(), Some(Bytes::from(task.to_string())))],
        };
        appender
            .send(&mut plain, source, task % PARTITIONS, &record)
            .unwrap();
    }
    // Killed by itself inside a transaction, run after run, each after a few hops.
    for crash_at in [4, 2, 6, 3, 5] {
        let status = worker(bootstrap, source, dir.path(), Some(crash_at))
            .wait()
            .unwrap();
        assert!(
            !status.success(),
            "the worker was to die at its append {crash_at}: {status}"
        );
    }
    // Killed from outside at a random moment.
    let mut rng = SplitMix64::new(7);
    let mut outside = worker(bootstrap, source, dir.path(), None);
    std::thread::sleep(Duration::from_millis(300 + rng.below(700)));
    outside.kill().unwrap();
    outside.wait().unwrap();

    let mut committed = Remote::new(Client::connect(bootstrap).unwrap()).read_committed();
    let expected: BTreeMap<u32, (usize, usize)> = (0..TASKS)
        .map(|t| (t, expected_copies(t)))
        .filter(|(_, c)| *c != (0, 0))
        .collect();
    let mut last = worker(bootstrap, source, dir.path(), None);
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut found = copies(&mut committed, source);
    while found.0 != expected && Instant::now() < deadline {
        assert!(
            last.try_wait().unwrap().is_none(),
            "the last worker stopped"
        );
        std::thread::sleep(Duration::from_millis(300));
        found = copies(&mut committed, source);
    }
    // A little longer: a copy written twice would show up now.
    std::thread::sleep(Duration::from_secs(1));
    found = copies(&mut committed, source);
    last.kill().unwrap();
    last.wait().unwrap();

    let (by_task, twice) = found;
    for task in 0..TASKS {
        let got = by_task.get(&task).copied().unwrap_or((0, 0));
        assert_eq!(
            got,
            expected_copies(task),
            "task {task}: (tier copies, dead letters) read_committed"
        );
    }
    assert_eq!(twice, 0, "a copy committed twice");
    let (raw, raw_twice) = copies(&mut plain, source);
    let raw_total: usize = raw.values().map(|(t, d)| t + d).sum();
    let total: usize = by_task.values().map(|(t, d)| t + d).sum();
    // One aborted copy per kill by itself (two kills may hit the same copy).
    assert!(
        raw_twice >= 1 && raw_total >= total + 5,
        "the kills were to leave aborted copies behind: {raw_twice} twice in {raw_total} \
         read_uncommitted against {total} committed"
    );
    eprintln!(
        "{total} copies exactly once read_committed; {raw_total} read_uncommitted, \
         {raw_twice} of them twice (aborted)"
    );
}
