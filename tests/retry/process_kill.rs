//! The retry worker as a real process, killed with SIGKILL at random moments and restarted over
//! the same engine directory: afterwards every task is either recorded as processed in the
//! dedupe store or a dead letter, and each where its rule says.

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::time::Duration;

use logd::{Config, Log, TopicConfig};
use logd_retry::{DedupeConfig, DedupeStore};
use logd_storage::SplitMix64;

use super::{copies_written_twice, produce_task, read_all};
use logd_retry::Headers;

const TASKS: u32 = 300;

#[test]
fn a_worker_killed_at_random_moments_ends_every_task_processed_or_dead_lettered() {
    let dir = tempfile::tempdir().unwrap();
    let (data, dedupe_dir) = (dir.path().join("data"), dir.path().join("dedupe"));
    {
        let log = Log::open(&data, Config::default()).unwrap();
        log.create_topic(
            "tasks",
            TopicConfig {
                partitions: 3,
                ..TopicConfig::default()
            },
        )
        .unwrap();
        for task in 0..TASKS {
            produce_task(&log, task, 3);
        }
    }
    let worker = || {
        Command::new(env!("CARGO_BIN_EXE_logd-retry-worker"))
            .arg(&data)
            .arg(&dedupe_dir)
            .arg(dir.path().join("worker-state"))
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn the worker")
    };
    let mut rng = SplitMix64::new(42);
    let mut kills = 0;
    for _ in 0..12 {
        let mut child = worker();
        std::thread::sleep(Duration::from_millis(20 + rng.below(120)));
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap();
            kills += 1;
        }
        child.wait().unwrap();
    }
    assert!(
        kills >= 3,
        "the worker must die mid-run a few times ({kills})"
    );
    let finished = worker().wait_with_output().unwrap();
    assert!(
        finished.status.success(),
        "{}",
        String::from_utf8_lossy(&finished.stderr)
    );

    let log = Log::open(&data, Config::default()).unwrap();
    let dead: BTreeSet<u32> = read_all(&log, "tasks.dlq")
        .iter()
        .map(|m| m.header_str("task-id").unwrap().parse().unwrap())
        .collect();
    let dedupe =
        DedupeStore::open(&dedupe_dir, DedupeConfig::default(), log.clock().now_ms()).unwrap();
    for task in 0..TASKS {
        let should_succeed = !task.is_multiple_of(17) && task % 4 < 3;
        let processed = dedupe.contains(&task.to_string());
        assert_eq!(
            processed, should_succeed,
            "task {task}: processed = {processed}"
        );
        assert_eq!(
            dead.contains(&task),
            !should_succeed,
            "task {task} dead-lettered?"
        );
    }
    assert_eq!(
        copies_written_twice(&log),
        0,
        "the hop journal settles interrupted hops"
    );
}
