//! A child commits offsets and prints each acknowledged commit; it is killed with SIGKILL at
//! random moments, and the reopened store must hold every acknowledged commit.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use logd_offsets::{OffsetStore, OffsetStoreConfig};
use logd_storage::SplitMix64;

#[test]
fn sigkill_at_random_moments_never_loses_an_acknowledged_commit() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = SplitMix64::new(0x0ff5e7);
    let mut next = 0i64;
    // Last acknowledged commit per partition.
    let mut acked = [None::<i64>; 4];
    for cycle in 0..20 {
        let mut child = Command::new(env!("CARGO_BIN_EXE_logd-offsets-writer"))
            .arg(dir.path())
            .arg(next.to_string())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let kill_after = 1 + rng.below(60);
        let mut seen = Vec::new();
        for line in lines.by_ref() {
            seen.push(line.unwrap().parse::<i64>().unwrap());
            if seen.len() as u64 >= kill_after {
                break;
            }
        }
        child.kill().unwrap();
        child.wait().unwrap();
        seen.extend(
            lines
                .map_while(Result::ok)
                .map(|l| l.parse::<i64>().unwrap()),
        );
        assert!(!seen.is_empty(), "cycle {cycle}: nothing acknowledged");
        for n in &seen {
            acked[(n % 4) as usize] = Some(*n);
        }
        let last = *seen.last().unwrap();

        let store = OffsetStore::open(dir.path(), OffsetStoreConfig::default()).unwrap();
        for (partition, acked) in acked.iter_mut().enumerate() {
            let stored = store
                .fetch("g", "orders", partition as i32)
                .map(|c| c.offset);
            // The stored offset is the last acknowledged one, or the commit that was in flight
            // when the child died (the next number, if it is this partition's).
            let in_flight = last + 1;
            let ok = stored == *acked
                || (stored == Some(in_flight) && in_flight % 4 == partition as i64);
            assert!(
                ok,
                "cycle {cycle}, partition {partition}: stored {stored:?}, acknowledged {acked:?}"
            );
            if let Some(offset) = stored {
                let committed = store.fetch("g", "orders", partition as i32).unwrap();
                assert_eq!(committed.metadata, format!("commit {offset}"));
            }
            // What survived, verified above, is the baseline for the next cycle.
            *acked = stored;
        }
        drop(store);
        // The next run starts after the in-flight commit, whether or not it landed.
        next = last + 2;
    }
}
