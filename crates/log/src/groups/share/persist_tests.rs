//! The share log's settlements: runs as logged now, and the per-offset form older logs hold,
//! replayed to the same state.

use logd_storage::StateMachine;

use super::persist::{SavedShares, Settled, ShareRecord, runs};

fn key() -> (String, String, u32) {
    ("workers".into(), "jobs".into(), 0)
}

#[test]
fn consecutive_offsets_settled_alike_are_one_run() {
    let offsets = [
        (3, Settled::Acknowledged),
        (4, Settled::Acknowledged),
        (5, Settled::Archived),
        (7, Settled::Archived),
        (8, Settled::Acknowledged),
    ];
    assert_eq!(
        runs(&offsets),
        [
            (3, 4, Settled::Acknowledged),
            (5, 5, Settled::Archived),
            (7, 7, Settled::Archived),
            (8, 8, Settled::Acknowledged),
        ]
    );
    assert!(runs(&[]).is_empty());
}

#[test]
fn runs_and_the_older_per_offset_settlements_replay_alike() {
    let mut saved = SavedShares::default();
    saved.apply(ShareRecord::Initialized {
        key: key(),
        start: 0,
    });
    saved.apply(ShareRecord::Acquired {
        key: key(),
        first: 0,
        last: 9,
    });
    // An older log's form: one entry an offset.
    saved.apply(ShareRecord::Settled {
        key: key(),
        offsets: vec![(0, Settled::Acknowledged), (1, Settled::Archived)],
    });
    saved.apply(ShareRecord::SettledRuns {
        key: key(),
        runs: vec![(2, 4, Settled::Acknowledged), (6, 7, Settled::Archived)],
    });
    // A run whose bounds are reversed (bytes no build writes) settles nothing, and does not
    // panic.
    saved.apply(ShareRecord::SettledRuns {
        key: key(),
        runs: vec![(9, 8, Settled::Acknowledged)],
    });
    let p = &saved.partitions[&key()];
    // The settled head (0-4) is dropped; 5 is still in flight, so 6 and 7 stay, settled.
    assert_eq!((p.start, p.end), (5, 10));
    let states: Vec<(i64, Option<Settled>)> = p.records.iter().map(|(&o, r)| (o, r.1)).collect();
    assert_eq!(
        states,
        [
            (5, None),
            (6, Some(Settled::Archived)),
            (7, Some(Settled::Archived)),
            (8, None),
            (9, None),
        ]
    );
}
