use std::collections::BTreeMap;
use std::sync::Arc;

use logd_storage::{CrashMode, FaultKind, SimFs, SplitMix64};

use super::*;

fn commit(topic: &str, partition: i32, offset: i64) -> OffsetCommit {
    OffsetCommit {
        topic: topic.to_owned(),
        partition,
        offset,
        metadata: format!("m{offset}"),
    }
}

/// (group, partition) -> committed offset.
type State = BTreeMap<(String, i32), i64>;

fn small() -> OffsetStoreConfig {
    OffsetStoreConfig {
        snapshot_after_bytes: 600,
        ..OffsetStoreConfig::default()
    }
}

#[test]
fn commits_are_fetched_listed_deleted_and_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let store = OffsetStore::open(dir.path(), OffsetStoreConfig::default()).unwrap();
    assert_eq!(store.fetch("billing", "orders", 0), None);
    store
        .commit(
            "billing",
            &[commit("orders", 0, 3), commit("orders", 1, 7)],
            1000,
        )
        .unwrap();
    store
        .commit("billing", &[commit("orders", 0, 5)], 2000)
        .unwrap();
    store
        .commit("audit", &[commit("orders", 0, 1)], 3000)
        .unwrap();
    let got = store.fetch("billing", "orders", 0).unwrap();
    assert_eq!(
        (got.offset, got.metadata.as_str(), got.commit_timestamp),
        (5, "m5", 2000)
    );
    assert_eq!(
        store.list_groups(),
        vec!["audit".to_owned(), "billing".to_owned()]
    );
    store
        .delete_offsets("billing", &[("orders".to_owned(), 1)])
        .unwrap();
    assert!(store.delete_group("audit").unwrap());
    assert!(!store.delete_group("audit").unwrap());
    drop(store);

    let store = OffsetStore::open(dir.path(), OffsetStoreConfig::default()).unwrap();
    assert_eq!(store.list_groups(), vec!["billing".to_owned()]);
    let offsets = store.group_offsets("billing");
    assert_eq!(offsets.len(), 1);
    assert_eq!(
        (offsets[0].0.as_str(), offsets[0].1, offsets[0].2.offset),
        ("orders", 0, 5)
    );
}

#[test]
fn bad_commits_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = OffsetStore::open(dir.path(), OffsetStoreConfig::default()).unwrap();
    let mut long = commit("t", 0, 1);
    long.metadata = "x".repeat(4097);
    assert!(matches!(
        store.commit("g", &[long], 0),
        Err(Error::MetadataTooLarge {
            len: 4097,
            max: 4096
        })
    ));
    assert!(matches!(
        store.commit("g", &[commit("t", 0, -1)], 0),
        Err(Error::InvalidOffset { offset: -1, .. })
    ));
    assert!(matches!(
        store.commit("", &[commit("t", 0, 1)], 0),
        Err(Error::EmptyGroup)
    ));
    assert!(store.list_groups().is_empty(), "nothing partial stored");
    assert!(matches!(
        OffsetStore::open(dir.path(), OffsetStoreConfig::default()),
        Err(Error::Storage(logd_storage::Error::Locked { .. }))
    ));
}

#[test]
fn the_log_is_folded_into_snapshots_and_replays_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let store = OffsetStore::open(dir.path(), small()).unwrap();
    for i in 0..200 {
        store
            .commit(
                &format!("g{}", i % 3),
                &[commit("t", i % 4, i as i64)],
                i as i64,
            )
            .unwrap();
    }
    let before: Vec<_> = store
        .list_groups()
        .iter()
        .map(|g| store.group_offsets(g))
        .collect();
    let logs = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".log")
        })
        .count();
    assert_eq!(logs, 1, "old logs are deleted after each snapshot");
    assert!(dir.path().join("offsets.snapshot").exists());
    drop(store);
    let store = OffsetStore::open(dir.path(), small()).unwrap();
    let after: Vec<_> = store
        .list_groups()
        .iter()
        .map(|g| store.group_offsets(g))
        .collect();
    assert_eq!(before, after);
}

/// Commits with values derived from `seed` until done or the power is cut; returns the
/// acknowledged state (group -> partition -> offset) and every state that was attempted.
fn workload(fs: &SimFs, seed: u64) -> (State, Vec<State>) {
    let mut rng = SplitMix64::new(seed);
    let mut acked = BTreeMap::new();
    let mut attempts = vec![acked.clone()];
    let Ok(mut store) = OffsetStore::open_with(Arc::new(fs.clone()), "/o", small()) else {
        return (acked, attempts);
    };
    for step in 0..40 {
        if rng.below(10) == 0 {
            drop(store);
            match OffsetStore::open_with(Arc::new(fs.clone()), "/o", small()) {
                Ok(s) => store = s,
                Err(_) => return (acked, attempts),
            }
            continue;
        }
        let group = format!("g{}", rng.below(2));
        let commits: Vec<OffsetCommit> = (0..1 + rng.below(3))
            .map(|p| commit("t", p as i32, step * 10 + p as i64))
            .collect();
        let mut next = acked.clone();
        for c in &commits {
            next.insert((group.clone(), c.partition), c.offset);
        }
        attempts.push(next.clone());
        match store.commit(&group, &commits, step) {
            Ok(()) => acked = next,
            Err(_) => return (acked, attempts),
        }
    }
    (acked, attempts)
}

fn state_of(store: &OffsetStore) -> State {
    let mut state = BTreeMap::new();
    for group in store.list_groups() {
        for (_, partition, committed) in store.group_offsets(&group) {
            state.insert((group.clone(), partition), committed.offset);
        }
    }
    state
}

#[test]
fn a_power_cut_at_any_operation_keeps_every_acknowledged_commit() {
    let mut states = 0;
    for seed in [11, 12] {
        let total = {
            let fs = SimFs::new();
            workload(&fs, seed);
            fs.ops()
        };
        for cut in 0..=total {
            let fs = SimFs::new();
            fs.cut_power_after(cut);
            let (acked, attempts) = workload(&fs, seed);
            for mode in [
                CrashMode::DropUnsynced,
                CrashMode::KeepSomeUnsynced,
                CrashMode::TearTail,
            ] {
                states += 1;
                let image = fs.crash_image(mode, cut);
                let store =
                    OffsetStore::open_with(Arc::new(image), "/o", small()).unwrap_or_else(|e| {
                        panic!("seed {seed} cut {cut} {mode:?}: reopen failed: {e}")
                    });
                let state = state_of(&store);
                // The recovered state is the acknowledged one, or the one in-flight commit on
                // top of it: never older, never a mix.
                let position = attempts.iter().position(|a| *a == state);
                let acked_at = attempts.iter().rposition(|a| *a == acked).unwrap();
                assert!(
                    matches!(position, Some(p) if p >= acked_at),
                    "seed {seed} cut {cut} {mode:?}: recovered {state:?}, acknowledged {acked:?}"
                );
            }
        }
    }
    assert!(states > 500, "{states} crash states");
}

#[test]
fn a_torn_last_frame_is_cut_and_commits_continue() {
    let fs = SimFs::new();
    let store =
        OffsetStore::open_with(Arc::new(fs.clone()), "/o", OffsetStoreConfig::default()).unwrap();
    store.commit("g", &[commit("t", 0, 1)], 0).unwrap();
    store.commit("g", &[commit("t", 0, 2)], 0).unwrap();
    let image = fs.crash_image(CrashMode::DropUnsynced, 0);
    drop(store);
    let path = std::path::Path::new("/o/offsets-00000000000000000000.log");
    let len = {
        use logd_storage::Storage;
        image.open(path, false).unwrap().size().unwrap()
    };
    for cut in 0..len {
        let copy = image.crash_image(CrashMode::DropUnsynced, 0);
        {
            use logd_storage::Storage;
            copy.open(path, false).unwrap().set_len(cut).unwrap();
        }
        let store =
            OffsetStore::open_with(Arc::new(copy), "/o", OffsetStoreConfig::default()).unwrap();
        // Both frames have the same size: the longest valid prefix is kept, exactly.
        let expected = (cut >= len / 2).then_some(1);
        assert_eq!(
            store.fetch("g", "t", 0).map(|c| c.offset),
            expected,
            "cut at {cut}"
        );
        store.commit("g", &[commit("t", 0, 9)], 0).unwrap();
        assert_eq!(store.fetch("g", "t", 0).unwrap().offset, 9);
    }
}

#[test]
fn a_failed_fsync_poisons_and_keeps_acknowledged_commits() {
    for kind in [FaultKind::Write, FaultKind::Sync] {
        let fs = SimFs::new();
        let store =
            OffsetStore::open_with(Arc::new(fs.clone()), "/o", OffsetStoreConfig::default())
                .unwrap();
        store.commit("g", &[commit("t", 0, 1)], 0).unwrap();
        fs.fail_nth(kind, 0, 5);
        assert!(matches!(
            store.commit("g", &[commit("t", 0, 2)], 0),
            Err(Error::Storage(logd_storage::Error::Io { .. }))
        ));
        assert!(matches!(
            store.commit("g", &[commit("t", 0, 3)], 0),
            Err(Error::Storage(logd_storage::Error::Poisoned { .. }))
        ));
        let image = fs.crash_image(CrashMode::DropUnsynced, 0);
        drop(store);
        let store =
            OffsetStore::open_with(Arc::new(image), "/o", OffsetStoreConfig::default()).unwrap();
        assert_eq!(store.fetch("g", "t", 0).unwrap().offset, 1);
    }
}

#[test]
fn concurrent_commits_share_fsyncs_and_apply_in_log_order() {
    // Eight threads commit at once, each its own partition and all of them one shared
    // partition, through snapshots (a small threshold): every call returns once durable, what
    // the store shows is what a replay of its files gives (entries applied in log order, so
    // the shared partition ends at whichever commit the log holds last), and each thread's
    // partition ends at its last commit.
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(OffsetStore::open(dir.path(), small()).unwrap());
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let store = store.clone();
            std::thread::spawn(move || {
                for i in 0..100 {
                    let offsets = [
                        commit("own", t, i),
                        commit("shared", 0, t as i64 * 1000 + i),
                    ];
                    store.commit("g", &offsets, i).unwrap();
                    assert_eq!(store.fetch("g", "own", t).map(|c| c.offset), Some(i));
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let shown = store.group_offsets("g");
    assert_eq!(shown.len(), 9);
    for t in 0..8 {
        assert_eq!(store.fetch("g", "own", t).map(|c| c.offset), Some(99));
    }
    drop(store);
    let reopened = OffsetStore::open(dir.path(), small()).unwrap();
    assert_eq!(reopened.group_offsets("g"), shown);
}
