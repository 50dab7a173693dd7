//! The share store's locking: a fetch's log read holds no lock, so fetches of other
//! share-partitions and acknowledgements of its own go on while it reads.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use super::consumer_tests::window;
use super::store::ShareStates;
use super::*;

fn acquire(
    states: &ShareStates,
    key: &(String, String, u32),
    member: &str,
    end: i64,
) -> Vec<AcquiredRecords> {
    let limits = ShareLimits::default();
    let (acquired, _, ()) = states
        .acquire(
            key.clone(),
            member,
            100,
            &limits,
            &|| None,
            0,
            0,
            || Ok(0),
            |_| i64::MIN,
            |_| Ok(window(i64::MIN, end)),
        )
        .unwrap();
    acquired
}

#[test]
fn a_fetch_reading_the_log_holds_no_lock_over_other_share_partitions_nor_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let states = Arc::new(ShareStates::open(Arc::new(logd_storage::RealFs), dir.path()).unwrap());
    let a = ("g".to_owned(), "t".to_owned(), 0);
    let b = ("g".to_owned(), "t".to_owned(), 1);
    assert_eq!(acquire(&states, &a, "m", 5).len(), 1);
    // A fetch of `a` whose log read does not return until told.
    let (entered, reading) = mpsc::channel();
    let (finish, finished) = mpsc::channel::<()>();
    let reader = {
        let (states, a) = (states.clone(), a.clone());
        std::thread::spawn(move || {
            let limits = ShareLimits::default();
            states
                .acquire(
                    a,
                    "n",
                    100,
                    &limits,
                    &|| None,
                    0,
                    0,
                    || Ok(0),
                    |_| i64::MIN,
                    |_| {
                        entered.send(()).unwrap();
                        finished.recv().unwrap();
                        Ok(window(i64::MIN, 10))
                    },
                )
                .unwrap()
                .0
        })
    };
    reading.recv().unwrap();
    // Meanwhile `b` is fetched and `a`'s held records accepted, from another thread, within a
    // bound (a lock held across the read would hold them until the read ends).
    let (done, others) = mpsc::channel();
    {
        let (states, a, b) = (states.clone(), a.clone(), b.clone());
        std::thread::spawn(move || {
            let got_b = acquire(&states, &b, "m", 3);
            let limits = ShareLimits::default();
            let accepted = states.acknowledge(
                &a,
                "m",
                &[(0, 4, vec![AcknowledgeType::Accept])],
                &limits,
                &|| None,
                &BTreeMap::new(),
                0,
            );
            done.send((got_b, accepted.is_ok())).unwrap();
        });
    }
    let (got_b, accepted) = others
        .recv_timeout(Duration::from_secs(20))
        .expect("blocked behind the read");
    assert_eq!(got_b.len(), 1);
    assert!(accepted);
    finish.send(()).unwrap();
    let got_a = reader.join().unwrap();
    assert_eq!(
        (got_a[0].first_offset, got_a[0].last_offset),
        (5, 9),
        "what the read held, after what was acquired before it"
    );
}
