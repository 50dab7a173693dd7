//! `logd groups` against groups that librdkafka's balanced consumer built: two groups on one
//! topic keep independent positions, describe shows the right lag, reset-offsets moves a group
//! exactly where asked (and a dry run moves nothing), and a group with live members cannot be
//! reset or deleted.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use super::{Daemon, librdkafka, logd};

/// Produces `k<i>:r<i>` for `range` into `events`.
fn produce(addr: &str, range: std::ops::Range<usize>) {
    let lines: Vec<String> = range.map(|i| format!("k{i}:r{i}")).collect();
    librdkafka::produce(addr, "events", "none", &lines);
}

/// Consumes `events` in `group` until the end of every partition; (partition, offset) pairs.
fn consume(addr: &str, group: &str) -> BTreeSet<(u32, i64)> {
    librdkafka::consume_in_group(addr, group, "events")
        .into_iter()
        .map(|r| (r.partition as u32, r.offset))
        .collect()
}

/// `logd groups ARGS` against `addr`; panics with stderr on failure.
fn groups(addr: &str, args: &[&str]) -> String {
    let mut all = vec!["groups", "--bootstrap", addr];
    all.extend_from_slice(args);
    let (ok, stdout, stderr) = logd(&all, "");
    assert!(ok, "logd {all:?} failed: {stderr}");
    stdout
}

/// Per partition of `events`: (committed, log end, lag) from `logd groups describe`.
fn lag(addr: &str, group: &str) -> BTreeMap<u32, (i64, i64, i64)> {
    groups(addr, &["describe", group])
        .lines()
        .filter(|l| l.starts_with("events "))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let n = |i: usize| f[i].parse::<i64>().unwrap();
            (f[1].parse().unwrap(), (n(2), n(3), n(4)))
        })
        .collect()
}

fn total_lag(rows: &BTreeMap<u32, (i64, i64, i64)>) -> i64 {
    rows.values().map(|(_, _, lag)| lag).sum()
}

#[test]
fn two_groups_lag_and_reset_offsets_through_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(
        dir.path(),
        &[
            "--default-partitions",
            "2",
            "--group-initial-rebalance-delay-ms",
            "0",
        ],
    );
    let addr = daemon.addr.as_str();
    produce(addr, 0..20);
    assert_eq!(consume(addr, "a").len(), 20);
    assert_eq!(consume(addr, "b").len(), 20);
    produce(addr, 20..50);

    for group in ["a", "b"] {
        let rows = lag(addr, group);
        assert_eq!(rows.len(), 2, "{rows:?}");
        for (committed, end, lag) in rows.values() {
            assert_eq!(*lag, end - committed);
        }
        assert_eq!(total_lag(&rows), 30, "group {group}: {rows:?}");
    }
    assert_eq!(
        consume(addr, "a").len(),
        30,
        "a reads only what is new to it"
    );
    assert_eq!(total_lag(&lag(addr, "a")), 0);
    assert_eq!(total_lag(&lag(addr, "b")), 30, "b is untouched by a");

    // A dry run prints the plan and changes nothing.
    let before = lag(addr, "a");
    let plan = groups(
        addr,
        &[
            "reset-offsets",
            "a",
            "--topic",
            "events",
            "--to-offset",
            "5",
            "--dry-run",
        ],
    );
    assert!(plan.contains("dry run"), "{plan}");
    let planned: Vec<&str> = plan.lines().filter(|l| l.starts_with("events ")).collect();
    assert_eq!(planned.len(), 2, "{plan}");
    assert!(
        planned
            .iter()
            .all(|l| l.split_whitespace().nth(3) == Some("5")),
        "{plan}"
    );
    assert_eq!(lag(addr, "a"), before);

    groups(
        addr,
        &[
            "reset-offsets",
            "a",
            "--topic",
            "events",
            "--to-offset",
            "5",
            "--execute",
        ],
    );
    let after = lag(addr, "a");
    assert!(
        after.values().all(|(committed, _, _)| *committed == 5),
        "{after:?}"
    );
    let replayed = consume(addr, "a");
    let expected: BTreeSet<(u32, i64)> = after
        .iter()
        .flat_map(|(p, (_, end, _))| (5..*end).map(move |o| (*p, o)))
        .collect();
    assert_eq!(replayed, expected, "replays exactly from offset 5");

    // --shift-by and --to-earliest on every topic the group has offsets for.
    groups(
        addr,
        &[
            "reset-offsets",
            "b",
            "--all-topics",
            "--shift-by",
            "-3",
            "--execute",
        ],
    );
    let shifted = lag(addr, "b");
    assert_eq!(total_lag(&shifted), 36, "{shifted:?}");
    groups(
        addr,
        &[
            "reset-offsets",
            "b",
            "--all-topics",
            "--to-earliest",
            "--execute",
        ],
    );
    assert_eq!(total_lag(&lag(addr, "b")), 50);

    let listed = groups(addr, &["list"]);
    assert_eq!(listed.lines().collect::<Vec<_>>(), vec!["a", "b"]);
    groups(addr, &["delete", "b"]);
    assert_eq!(groups(addr, &["list"]).trim(), "a");
    let (ok, _, stderr) = logd(&["groups", "--bootstrap", addr, "describe", "b"], "");
    assert!(!ok && stderr.contains("does not exist"), "{stderr}");
}

#[test]
fn a_group_with_live_members_cannot_be_reset_or_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &["--group-initial-rebalance-delay-ms", "0"]);
    let addr = daemon.addr.as_str();
    produce(addr, 0..5);
    let member = librdkafka::Member::join(addr, "live", "events", 6000);
    let start = Instant::now();
    loop {
        // Until the member joins, the group does not exist.
        let (_, described, _) = logd(&["groups", "--bootstrap", addr, "describe", "live"], "");
        if described.contains("state Stable, protocol range, 1 member(s)") {
            assert!(
                described.contains("/127.0.0.1"),
                "member host shown: {described}"
            );
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "never stable: {described}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let (ok, _, stderr) = logd(
        &[
            "groups",
            "--bootstrap",
            addr,
            "reset-offsets",
            "live",
            "--topic",
            "events",
            "--to-earliest",
            "--execute",
        ],
        "",
    );
    assert!(!ok && stderr.contains("active member"), "{stderr}");
    let (ok, _, stderr) = logd(&["groups", "--bootstrap", addr, "delete", "live"], "");
    assert!(!ok && stderr.contains("active members"), "{stderr}");
    // A graceful stop (LeaveGroup) empties the group at once.
    drop(member);
    let described = groups(addr, &["describe", "live"]);
    assert!(described.contains("state Empty"), "{described}");
    groups(
        addr,
        &[
            "reset-offsets",
            "live",
            "--topic",
            "events",
            "--to-earliest",
            "--execute",
        ],
    );
    groups(addr, &["delete", "live"]);
}
