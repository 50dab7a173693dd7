//! The offset store under load that never pauses, on a real daemon with `--fsync always`: 50
//! connections commit without a break; the `offsets` state log folds while they run, its
//! directory stays bounded, and a restart after `kill -9` replays it in well under a second
//! with every acknowledged commit.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::{
    ApiKey, GroupId, OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest,
    OffsetFetchResponse, TopicName,
};

use super::Daemon;
use super::raw_wire::{Raw, s};

const COMMITTERS: usize = 50;
const TOPIC: &str = "ledger";
/// The offsets log folds at 4 MiB (`docs/format.md`).
const FOLD_AT: u64 = 4 << 20;

fn commit(group: &str, offset: i64) -> OffsetCommitRequest {
    let mut partition = OffsetCommitRequestPartition::default();
    partition.partition_index = 0;
    partition.committed_offset = offset;
    // Metadata as a consumer library writes it, so each record weighs what a real one does.
    partition.committed_metadata = Some(s(&format!("{offset:0>120}")));
    let mut topic = OffsetCommitRequestTopic::default();
    topic.name = TopicName(s(TOPIC));
    topic.partitions = vec![partition];
    let mut request = OffsetCommitRequest::default();
    request.group_id = GroupId(s(group));
    request.generation_id_or_member_epoch = -1;
    request.topics = vec![topic];
    request
}

fn committed(raw: &mut Raw, group: &str) -> i64 {
    let mut topic = OffsetFetchRequestTopic::default();
    topic.name = TopicName(s(TOPIC));
    topic.partition_indexes = vec![0];
    let mut request = OffsetFetchRequest::default();
    request.group_id = GroupId(s(group));
    request.topics = Some(vec![topic]);
    let answer: OffsetFetchResponse = raw.call(ApiKey::OffsetFetch, 7, &request);
    assert_eq!(answer.error_code, 0, "{group}");
    answer.topics[0].partitions[0].committed_offset
}

/// The offsets directory's bytes, the generation of its newest log (the folds so far) and
/// that log's bytes.
fn offsets_dir(data: &std::path::Path) -> (u64, u64, u64) {
    let (mut bytes, mut newest) = (0, (0, 0));
    for entry in std::fs::read_dir(data.join("offsets"))
        .into_iter()
        .flatten()
    {
        let Ok(entry) = entry else { continue };
        let len = entry.metadata().map(|m| m.len()).unwrap_or(0);
        bytes += len;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(generation) = name
            .strip_prefix("offsets-")
            .and_then(|n| n.strip_suffix(".log"))
            .and_then(|digits| digits.parse().ok())
        {
            newest = newest.max((generation, len));
        }
    }
    (bytes, newest.0, newest.1)
}

#[test]
fn committers_that_never_pause_keep_the_offsets_directory_bounded_and_restart_fast() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &["--fsync", "always"]);
    let (ok, _, err) = super::logd(
        &["topics", "create", TOPIC, "--bootstrap", &daemon.addr],
        "",
    );
    assert!(ok, "{err}");
    let stop = Arc::new(AtomicBool::new(false));
    let total = Arc::new(AtomicU64::new(0));
    let committers: Vec<_> = (0..COMMITTERS)
        .map(|c| {
            let (addr, stop, total) = (daemon.addr.clone(), stop.clone(), total.clone());
            std::thread::spawn(move || {
                let mut raw = Raw::connect(&addr);
                let group = format!("committer-{c:02}");
                let mut acked = 0;
                while !stop.load(Ordering::Relaxed) {
                    let answer: OffsetCommitResponse =
                        raw.call(ApiKey::OffsetCommit, 8, &commit(&group, acked + 1));
                    assert_eq!(answer.topics[0].partitions[0].error_code, 0, "{group}");
                    acked += 1;
                    total.fetch_add(1, Ordering::Relaxed);
                }
                (group, acked)
            })
        })
        .collect();
    // Run until the log has folded three times (about 65,000 commits) and the current one is
    // near its fold, so the restart replays a full log; sample the directory meanwhile.
    let started = Instant::now();
    let mut peak = 0;
    loop {
        let (bytes, generation, current) = offsets_dir(dir.path());
        peak = peak.max(bytes);
        if generation >= 3 && current >= FOLD_AT * 3 / 4 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "{} commits in {:?} folded the offsets log only {generation} times",
            total.load(Ordering::Relaxed),
            started.elapsed()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::Relaxed);
    let acked: Vec<(String, i64)> = committers.into_iter().map(|c| c.join().unwrap()).collect();
    let commits = total.load(Ordering::Relaxed);
    let elapsed = started.elapsed();
    // A log, the one it replaces for the instant of the switch, each at most FOLD_AT plus one
    // round of 50 records, and a snapshot of 50 groups.
    let bound = 2 * FOLD_AT + (1 << 20);
    assert!(
        peak <= bound,
        "the offsets directory peaked at {peak} bytes"
    );
    let replayed = offsets_dir(dir.path()).2;
    daemon.kill();
    let restarting = Instant::now();
    let daemon = Daemon::start(dir.path(), &["--fsync", "always"]);
    let restart = restarting.elapsed();
    eprintln!(
        "{commits} commits from {COMMITTERS} connections in {elapsed:?} ({:.0}/s); offsets \
         directory peaked at {peak} bytes; restart after kill -9, replaying {replayed} bytes, \
         in {restart:?}",
        commits as f64 / elapsed.as_secs_f64()
    );
    assert!(restart < Duration::from_secs(1), "restart took {restart:?}");
    let mut raw = Raw::connect(&daemon.addr);
    for (group, offset) in acked {
        assert_eq!(committed(&mut raw, &group), offset, "{group}");
    }
}
