//! Simulated power cuts at every storage operation of a workload of two transactional
//! producers that commit and abort, with plain appends, rolls, retention and reopens. After
//! each cut, under each crash mode, the reopened log must know every acknowledged abort (its
//! aborted-transaction index entry, with the transaction's first offset) and no acknowledged
//! commit as an abort, and must agree with a second recovery that rebuilds the producer state
//! and every index from the log alone (no snapshot): the trusted path and the rebuilt one
//! give the same open transactions, last stable offset and aborted transactions.

use std::path::Path;
use std::sync::Arc;

use super::*;
use crate::{AbortedTxn, CrashMode, Marker, SimFs, SplitMix64, Storage};

const DIR: &str = "/data/txn-0";

fn crash_config() -> LogConfig {
    LogConfig {
        segment_bytes: 1100,
        index_interval_bytes: 100,
        checkpoint_interval_bytes: 400,
        retention_bytes: Some(2500),
        ..small_config()
    }
}

/// What the workload was acknowledged.
#[derive(Debug, Default)]
struct History {
    /// Acknowledged abort markers: (producer, its transaction's first acknowledged offset,
    /// marker offset).
    aborts: Vec<(i64, i64, i64)>,
    /// Acknowledged commit markers' offsets.
    commits: Vec<i64>,
}

fn workload(fs: &SimFs, seed: u64) -> History {
    let mut rng = SplitMix64::new(seed);
    let mut history = History::default();
    let storage: Arc<dyn Storage> = Arc::new(fs.clone());
    let open = || PartitionLog::open_with(storage.clone(), Path::new(DIR), crash_config());
    let Ok(mut log) = open() else { return history };
    let mut sequences = [0i32; 2];
    // Each producer's open transaction's first acknowledged offset.
    let mut first: [Option<i64>; 2] = [None; 2];
    for step in 0..50 {
        let id = rng.below(2) as usize;
        let result = match rng.below(10) {
            0 => log.roll().map(|_| ()),
            1 => log.apply_retention(0).map(|_| ()),
            2 => {
                drop(log);
                match open() {
                    Ok(reopened) => {
                        log = reopened;
                        Ok(())
                    }
                    Err(_) => return history,
                }
            }
            3 => log
                .append(&mut batch_of(&[vec![b'p'; 30]], step))
                .map(|_| ()),
            4 | 5 => {
                let commit = rng.below(2) == 0;
                let marker = Marker {
                    producer_id: id as i64,
                    producer_epoch: 0,
                    coordinator_epoch: 0,
                    commit,
                };
                log.append_marker(&marker, step)
                    .map(|offset| match (commit, first[id].take()) {
                        (true, _) => history.commits.push(offset.0),
                        (false, Some(f)) => history.aborts.push((id as i64, f, offset.0)),
                        (false, None) => {}
                    })
            }
            _ => {
                let count = 1 + rng.below(3) as i32;
                let mut builder = BatchBuilder::new(Compression::None)
                    .producer(id as i64, 0, sequences[id])
                    .transactional();
                for i in 0..count {
                    builder.push(
                        step,
                        None,
                        Some(format!("{seed}-{step}-{i}").as_bytes()),
                        &[],
                    );
                }
                log.append(&mut builder.build(0).unwrap()).map(|info| {
                    sequences[id] += count;
                    first[id].get_or_insert(info.base_offset.0);
                })
            }
        };
        if result.is_err() {
            return history;
        }
    }
    history
}

/// What a recovered log says of its transactions.
fn transactions(log: &PartitionLog) -> (Vec<(i64, i64)>, Offset, Vec<AbortedTxn>) {
    let open = log
        .open_transactions()
        .iter()
        .map(|t| (t.producer_id, t.first_offset.0))
        .collect();
    let all = log.aborted_transactions(log.log_start_offset(), log.end_offset());
    (open, log.last_stable_offset(), all)
}

fn check(image: SimFs, history: &History) -> Vec<String> {
    let storage: Arc<dyn Storage> = Arc::new(image);
    let log = match PartitionLog::open_with(storage.clone(), DIR, crash_config()) {
        Ok(log) => log,
        Err(e) => return vec![format!("reopen failed: {e}")],
    };
    let mut violations = Vec::new();
    let start = log.log_start_offset().0;
    let trusted = transactions(&log);
    for &(producer, first, marker) in history.aborts.iter().filter(|a| a.2 >= start) {
        if !trusted
            .2
            .iter()
            .any(|a| (a.producer_id, a.first_offset, a.last_offset) == (producer, first, marker))
        {
            violations.push(format!(
                "acknowledged abort of producer {producer} ({first}..{marker}) missing: {:?}",
                trusted.2
            ));
        }
    }
    for commit in &history.commits {
        if trusted.2.iter().any(|a| a.last_offset == *commit) {
            violations.push(format!("commit marker at {commit} indexed as an abort"));
        }
    }
    drop(log);
    let dir = Path::new(DIR);
    for name in storage.list_dir(dir).unwrap() {
        if name.ends_with(".snapshot") {
            storage.remove_file(&dir.join(name)).unwrap();
        }
    }
    match PartitionLog::open_with(storage, DIR, crash_config()) {
        Ok(rebuilt) => {
            let again = transactions(&rebuilt);
            if again != trusted {
                violations.push(format!(
                    "recovery trusted {trusted:?}, the log alone says {again:?}"
                ));
            }
        }
        Err(e) => violations.push(format!("reopen without snapshots failed: {e}")),
    }
    violations
}

#[test]
fn every_acknowledged_abort_survives_any_crash_point_and_matches_a_rebuild() {
    let mut states = 0;
    let mut aborts = 0;
    for seed in [11, 12, 13] {
        let total_ops = {
            let fs = SimFs::new();
            aborts += workload(&fs, seed).aborts.len();
            fs.ops()
        };
        for cut in 0..=total_ops {
            let fs = SimFs::new();
            fs.cut_power_after(cut);
            let history = workload(&fs, seed);
            for (m, mode) in [
                CrashMode::DropUnsynced,
                CrashMode::KeepSomeUnsynced,
                CrashMode::TearTail,
            ]
            .into_iter()
            .enumerate()
            {
                states += 1;
                let image = fs.crash_image(mode, cut * 31 + m as u64);
                let violations = check(image, &history);
                assert!(
                    violations.is_empty(),
                    "seed {seed}, cut after op {cut}, {mode:?}: {violations:#?}"
                );
            }
        }
    }
    assert!(
        aborts >= 6,
        "the workloads acknowledged only {aborts} aborts"
    );
    assert!(states >= 1500, "only {states} crash states checked");
}
