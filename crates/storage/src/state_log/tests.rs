//! The state log against a model (a map of keys to values), through snapshots, reopenings,
//! torn tails, failed fsyncs and power cuts at every operation; and the negative control: a
//! writer that acknowledges before the fsync is caught by the same power-cut check.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::*;
use crate::{CrashMode, FaultKind, SimFs, SplitMix64};

/// The model: key -> value, set and removed.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Map(BTreeMap<String, u64>);

#[derive(Debug, Clone, Serialize, Deserialize)]
enum Change {
    Set(String, u64),
    Remove(String),
}

impl StateMachine for Map {
    type Record = Change;

    fn apply(&mut self, record: Change) {
        match record {
            Change::Set(k, v) => {
                self.0.insert(k, v);
            }
            Change::Remove(k) => {
                self.0.remove(&k);
            }
        }
    }
}

fn config(snapshot_after_bytes: u64) -> StateLogConfig {
    StateLogConfig {
        name: "model",
        snapshot_after_bytes,
    }
}

fn open(fs: &SimFs, snapshot_after_bytes: u64) -> Result<StateLog<Map>> {
    StateLog::open(Arc::new(fs.clone()), "/s", config(snapshot_after_bytes))
}

fn state(log: &StateLog<Map>) -> Map {
    log.read(Map::clone)
}

#[test]
fn records_apply_in_order_and_survive_reopen_through_snapshots() {
    let fs = SimFs::new();
    let mut model = Map::default();
    let mut log = open(&fs, 300).unwrap();
    let mut rng = SplitMix64::new(7);
    for step in 0..500 {
        let key = format!("k{}", rng.below(20));
        let change = if rng.below(4) == 0 {
            Change::Remove(key)
        } else {
            Change::Set(key, step)
        };
        model.apply(change.clone());
        log.append(change).unwrap();
        assert_eq!(state(&log), model, "step {step}");
        if rng.below(50) == 0 {
            drop(log);
            log = open(&fs, 300).unwrap();
            assert_eq!(state(&log), model, "reopened at step {step}");
        }
    }
    // Snapshots ran and folded the old logs away: one log, one snapshot.
    let files = {
        use crate::Storage;
        fs.list_dir(std::path::Path::new("/s")).unwrap()
    };
    assert!(files.contains(&"model.snapshot".to_owned()), "{files:?}");
    assert_eq!(
        files.iter().filter(|f| f.ends_with(".log")).count(),
        1,
        "{files:?}"
    );
}

#[test]
fn a_written_record_is_visible_only_once_durable() {
    let fs = SimFs::new();
    let log = open(&fs, 1 << 20).unwrap();
    let written = log.write(Change::Set("a".into(), 1)).unwrap();
    assert_eq!(state(&log), Map::default(), "not yet fsynced");
    log.wait(written).unwrap();
    assert_eq!(state(&log).0.get("a"), Some(&1));
}

/// Sets keys from `seed` until done or the power is cut; returns the acknowledged state and
/// every state that was attempted. `acknowledge_early` is the negative control: it counts a
/// record as acknowledged once written, before its fsync.
fn workload(fs: &SimFs, seed: u64, acknowledge_early: bool) -> (Map, Vec<Map>) {
    let mut rng = SplitMix64::new(seed);
    let mut acked = Map::default();
    let mut attempts = vec![acked.clone()];
    let Ok(mut log) = open(fs, 200) else {
        return (acked, attempts);
    };
    for step in 0..30 {
        if rng.below(10) == 0 {
            drop(log);
            match open(fs, 200) {
                Ok(l) => log = l,
                Err(_) => return (acked, attempts),
            }
            continue;
        }
        let change = Change::Set(format!("k{}", rng.below(4)), step);
        let mut next = acked.clone();
        next.apply(change.clone());
        attempts.push(next.clone());
        let result = if acknowledge_early {
            log.write(change).map(|_| ())
        } else {
            log.append(change)
        };
        match result {
            Ok(()) => acked = next,
            Err(_) => return (acked, attempts),
        }
    }
    (acked, attempts)
}

/// Cuts the power after every operation of the workload, reopens each crash image and checks
/// the recovered state is the acknowledged one or the one in flight on top of it. Returns how
/// many crash states broke that.
fn power_cuts(acknowledge_early: bool) -> (usize, usize) {
    let (mut states, mut lost) = (0, 0);
    for seed in [21, 22] {
        let total = {
            let fs = SimFs::new();
            workload(&fs, seed, acknowledge_early);
            fs.ops()
        };
        for cut in 0..=total {
            let fs = SimFs::new();
            fs.cut_power_after(cut);
            let (acked, attempts) = workload(&fs, seed, acknowledge_early);
            for mode in [
                CrashMode::DropUnsynced,
                CrashMode::KeepSomeUnsynced,
                CrashMode::TearTail,
            ] {
                states += 1;
                let image = fs.crash_image(mode, cut);
                let log = open(&image, 200).unwrap_or_else(|e| {
                    panic!("seed {seed} cut {cut} {mode:?}: reopen failed: {e}")
                });
                let recovered = state(&log);
                let position = attempts.iter().position(|a| *a == recovered);
                let acked_at = attempts.iter().rposition(|a| *a == acked).unwrap();
                if !matches!(position, Some(p) if p >= acked_at) {
                    lost += 1;
                }
            }
        }
    }
    (states, lost)
}

#[test]
fn a_power_cut_at_any_operation_keeps_every_acknowledged_record() {
    let (states, lost) = power_cuts(false);
    assert!(states > 500, "{states} crash states");
    assert_eq!(
        lost, 0,
        "{lost} of {states} crash states lost an acknowledged record"
    );
}

#[test]
fn the_power_cut_check_catches_a_writer_that_acknowledges_before_the_fsync() {
    let (states, lost) = power_cuts(true);
    assert!(
        lost > 0,
        "none of {states} crash states caught the unsynced acknowledgement"
    );
}

#[test]
fn a_torn_last_frame_is_cut_and_writes_continue() {
    let fs = SimFs::new();
    let log = open(&fs, 1 << 20).unwrap();
    log.append(Change::Set("a".into(), 1)).unwrap();
    log.append(Change::Set("a".into(), 2)).unwrap();
    let image = fs.crash_image(CrashMode::DropUnsynced, 0);
    drop(log);
    let path = std::path::Path::new("/s/model-00000000000000000000.log");
    let len = {
        use crate::Storage;
        image.open(path, false).unwrap().size().unwrap()
    };
    for cut in 0..len {
        let copy = image.crash_image(CrashMode::DropUnsynced, 0);
        {
            use crate::Storage;
            copy.open(path, false).unwrap().set_len(cut).unwrap();
        }
        let log = open(&copy, 1 << 20).unwrap();
        // Both frames have the same size: the longest valid prefix is kept, exactly.
        let expected = (cut >= len / 2).then_some(1);
        assert_eq!(state(&log).0.get("a").copied(), expected, "cut at {cut}");
        log.append(Change::Set("a".into(), 9)).unwrap();
        assert_eq!(state(&log).0.get("a"), Some(&9));
    }
}

#[test]
fn damage_before_the_last_frame_is_an_error_not_a_skip() {
    let fs = SimFs::new();
    let log = open(&fs, 1 << 20).unwrap();
    for v in 0..3 {
        log.append(Change::Set("a".into(), v)).unwrap();
    }
    drop(log);
    let path = std::path::Path::new("/s/model-00000000000000000000.log");
    {
        use crate::Storage;
        // Flip a payload byte of the first frame.
        fs.open(path, false)
            .unwrap()
            .write_all_at(&[0xff], 9)
            .unwrap();
    }
    let error = open(&fs, 1 << 20).unwrap_err();
    assert!(
        matches!(error, Error::Corrupted { position: 0, .. }),
        "{error}"
    );
}

#[test]
fn a_failed_fsync_poisons_and_keeps_acknowledged_records() {
    for kind in [FaultKind::Write, FaultKind::Sync] {
        let fs = SimFs::new();
        let log = open(&fs, 1 << 20).unwrap();
        log.append(Change::Set("a".into(), 1)).unwrap();
        fs.fail_nth(kind, 0, 5);
        assert!(matches!(
            log.append(Change::Set("a".into(), 2)),
            Err(Error::Io { .. })
        ));
        assert!(matches!(
            log.append(Change::Set("a".into(), 3)),
            Err(Error::Poisoned { .. })
        ));
        let image = fs.crash_image(CrashMode::DropUnsynced, 0);
        drop(log);
        assert_eq!(state(&open(&image, 1 << 20).unwrap()).0.get("a"), Some(&1));
    }
}

#[test]
fn concurrent_writers_share_fsyncs_and_apply_in_log_order() {
    let fs = SimFs::new();
    let log = Arc::new(open(&fs, 400).unwrap());
    let threads: Vec<_> = (0..8u64)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                for i in 0..100 {
                    log.append(Change::Set(format!("own{t}"), i)).unwrap();
                    log.append(Change::Set("shared".into(), t * 1000 + i))
                        .unwrap();
                    assert_eq!(state(&log).0.get(&format!("own{t}")), Some(&i));
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let shown = state(&log);
    assert_eq!(shown.0.len(), 9);
    drop(log);
    assert_eq!(state(&open(&fs, 400).unwrap()), shown);
}

/// Bytes of every file in the state log's directory, and of its logs alone.
fn disk_bytes(fs: &SimFs) -> (u64, u64) {
    use crate::Storage;
    let dir = std::path::Path::new("/s");
    let (mut all, mut logs) = (0, 0);
    for name in fs.list_dir(dir).unwrap_or_default() {
        let Ok(file) = fs.open(&dir.join(&name), false) else {
            continue;
        };
        let size = file.size().unwrap_or(0);
        all += size;
        if name.ends_with(".log") {
            logs += size;
        }
    }
    (all, logs)
}

/// The generation of the directory's newest log: how many folds have run.
fn newest_generation(fs: &SimFs) -> u64 {
    use crate::Storage;
    fs.list_dir(std::path::Path::new("/s"))
        .unwrap()
        .iter()
        .filter_map(|n| recover::parse_log_name("model", n))
        .max()
        .unwrap()
}

#[test]
fn writers_that_never_pause_still_fold_and_the_log_stays_bounded() {
    const FOLD_AT: u64 = 2_000;
    const WRITERS: u64 = 8;
    let fs = SimFs::new();
    // A disk whose fsync takes time: every fsync round finds records written during the last.
    fs.set_sync_delay(std::time::Duration::from_micros(500));
    let log = Arc::new(open(&fs, FOLD_AT).unwrap());
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let monitor = {
        let (fs, done) = (fs.clone(), done.clone());
        std::thread::spawn(move || {
            let mut peak = (0, 0);
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let (all, logs) = disk_bytes(&fs);
                peak = (peak.0.max(all), peak.1.max(logs));
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
            peak
        })
    };
    let writers: Vec<_> = (0..WRITERS)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                for i in 0..400 {
                    log.append(Change::Set(format!("t{t}-{}", i % 10), i))
                        .unwrap();
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().unwrap();
    }
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let (peak_all, peak_logs) = monitor.join().unwrap();
    // 3,200 records of about 40 bytes: 128 kB logged, which a fold that waits for a quiet
    // moment keeps in one log (it never finds one). Folding at every fsync past FOLD_AT keeps
    // the log under FOLD_AT plus one round (each writer has at most one record in flight),
    // with the old log beside the new one for the instant of the switch.
    let round = WRITERS * 64;
    assert!(
        peak_logs <= 2 * (FOLD_AT + round),
        "logs peaked at {peak_logs} bytes"
    );
    assert!(
        peak_all <= 2 * (FOLD_AT + round) + 2 * 4_096,
        "the directory peaked at {peak_all} bytes"
    );
    let folds = newest_generation(&fs);
    assert!(folds >= 40, "only {folds} folds in 128 kB of records");
    let shown = state(&log);
    assert_eq!(shown.0.len(), (WRITERS * 10) as usize);
    assert!(shown.0.values().all(|v| *v >= 390), "{shown:?}");
    drop(log);
    assert_eq!(state(&open(&fs, FOLD_AT).unwrap()), shown);
}

/// Three writers add keys of their own (`t<writer>-<i>`, in order) on a slow disk, folding
/// every few records, until done or the power is cut. Returns each writer's last acknowledged
/// and last attempted `i` (0 for none).
fn concurrent_workload(fs: &SimFs, skip_fsync: bool) -> Vec<(u64, u64)> {
    const WRITERS: usize = 3;
    let Ok(log) = open(fs, 200) else {
        return vec![(0, 0); WRITERS];
    };
    log.fold_skips_fsync
        .store(skip_fsync, std::sync::atomic::Ordering::Relaxed);
    let log = Arc::new(log);
    let writers: Vec<_> = (0..WRITERS)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                let (mut acked, mut attempted) = (0, 0);
                for i in 1..=12 {
                    attempted = i;
                    if log.append(Change::Set(format!("t{t}-{i:02}"), i)).is_err() {
                        break;
                    }
                    acked = i;
                }
                (acked, attempted)
            })
        })
        .collect();
    writers.into_iter().map(|w| w.join().unwrap()).collect()
}

/// Whether the recovered keys of each writer are its first `k` records, with `k` between
/// what it had acknowledged and what it had attempted: nothing acknowledged lost, nothing
/// skipped or invented.
fn recovered_as_acknowledged(recovered: &Map, outcome: &[(u64, u64)]) -> bool {
    outcome.iter().enumerate().all(|(t, &(acked, attempted))| {
        let prefix = format!("t{t}-");
        let mine: Vec<u64> = recovered
            .0
            .iter()
            .filter(|(k, _)| k.starts_with(&prefix))
            .map(|(_, v)| *v)
            .collect();
        let kept = mine.len() as u64;
        mine.iter().copied().eq(1..=kept) && acked <= kept && kept <= attempted
    })
}

/// Cuts the power at operations spread over the concurrent workload (its interleaving differs
/// run to run) and checks every crash image. Returns how many states were checked and how many
/// lost an acknowledged record or failed to open.
fn power_cuts_under_load(skip_fsync: bool) -> (usize, usize) {
    let total = {
        let fs = SimFs::new();
        fs.set_sync_delay(std::time::Duration::from_micros(300));
        concurrent_workload(&fs, skip_fsync);
        fs.ops()
    };
    let (mut states, mut lost) = (0, 0);
    for cut in (0..=total + 10).step_by(2) {
        let fs = SimFs::new();
        fs.set_sync_delay(std::time::Duration::from_micros(300));
        fs.cut_power_after(cut);
        let outcome = concurrent_workload(&fs, skip_fsync);
        for mode in CrashMode::ALL {
            states += 1;
            let image = fs.crash_image(mode, cut);
            match open(&image, 200) {
                Ok(log) if recovered_as_acknowledged(&state(&log), &outcome) => {}
                Ok(log) => {
                    lost += 1;
                    eprintln!(
                        "cut {cut} {mode:?}: {outcome:?} recovered {:?}",
                        state(&log)
                    );
                }
                Err(e) => {
                    lost += 1;
                    eprintln!("cut {cut} {mode:?}: reopen failed: {e}");
                }
            }
        }
    }
    (states, lost)
}

#[test]
fn a_power_cut_while_folding_under_concurrent_writers_keeps_every_acknowledged_record() {
    let (states, lost) = power_cuts_under_load(false);
    assert!(states > 150, "{states} crash states");
    assert_eq!(
        lost, 0,
        "{lost} of {states} crash states lost or reordered a record, or did not open"
    );
}

#[test]
fn the_power_cut_check_under_load_catches_a_fold_that_skips_the_fsync() {
    let (states, lost) = power_cuts_under_load(true);
    assert!(
        lost > 0,
        "none of {states} crash states caught the fold's missing fsync"
    );
}
