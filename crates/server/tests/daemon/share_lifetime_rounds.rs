//! An accelerated lifetime of a share group (issue 50), with confluent-kafka's ShareConsumer
//! against a real logd under `--fsync always`, in three rounds over a two-partition topic
//! whose records live 15 s (`retention.ms`, `segment.ms` 1 s, retention checked every
//! 500 ms), read_committed, 60 s locks and 100 record locks a partition. Each round writes 40
//! plain records, an aborted transaction of 10 and a committed one of 20; a member takes
//! records and dies without closing; another drains. Round 1 first deletes and recreates the
//! topic, and ends with 300 records nobody drains, which a dying member leaves available and
//! retention then deletes under the group; round 2 drains after logd is killed with SIGKILL.
//! Throughout: every round's committed records come (delivery never stops, neither behind the
//! deleted records nor after the kill), no aborted record ever comes, nothing of the deleted
//! topic comes after it was recreated, and no record comes again after its acceptance was
//! answered; at the end no share session is open, the group has no member, and nothing is
//! held.

use std::collections::BTreeMap;
use std::time::Duration;

use super::{Daemon, python_script};

const SCRIPT: &str = include_str!("share_rounds.py");

fn step(addr: &str, args: &[&str]) -> Vec<String> {
    let mut all = vec![addr];
    all.extend_from_slice(args);
    let out = python_script(SCRIPT, &all).output().expect("python3");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{args:?}:\n{stdout}\n{stderr}");
    stdout.lines().map(str::to_owned).collect()
}

/// A drain's (time, value) of each `prefix` line.
fn timed<'a>(lines: &'a [String], prefix: &str) -> Vec<(f64, &'a str)> {
    lines
        .iter()
        .filter_map(|l| l.strip_prefix(prefix))
        .map(|rest| {
            let mut parts = rest.split_whitespace();
            let t: f64 = parts.next().unwrap().parse().unwrap();
            (t, parts.next().unwrap())
        })
        .collect()
}

#[test]
fn a_share_group_keeps_delivering_through_retention_recreation_aborts_crashes_and_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--fsync",
        "always",
        "--retention-check-ms",
        "500",
        "--metrics-listen",
        "127.0.0.1:0",
    ];
    let mut daemon = Daemon::start(dir.path(), &args);
    let addr = daemon.addr.clone();
    let mut drains: Vec<(u32, Vec<String>)> = Vec::new();
    for round in 0..3u32 {
        let r = round.to_string();
        let fresh = ["new", "recreate", "same"][round as usize];
        step(&addr, &["produce", &r, fresh]);
        let held = step(&addr, &["hold", &r]);
        assert!(
            held.iter().any(|l| l.starts_with("HELD ") && l != "HELD 0"),
            "{held:?}"
        );
        if round == 2 {
            daemon.kill();
            daemon = Daemon::start_on(dir.path(), &addr, &args);
        }
        let drained = step(&addr, &["drain", &r]);
        assert!(
            drained.iter().any(|l| l == "MISSING 0"),
            "round {round}: {drained:#?}"
        );
        drains.push((round, drained));
        if round == 1 {
            // Records nobody drains, some taken by a member that dies: retention deletes them
            // while they are available, below the group's start.
            step(&addr, &["leftover", &r]);
            step(&addr, &["hold", &r]);
        }
        if round < 2 {
            // Past the records' 15 s retention.
            std::thread::sleep(Duration::from_secs(17));
        }
    }
    let mut acked: BTreeMap<&str, f64> = BTreeMap::new();
    for (round, lines) in &drains {
        assert!(!lines.iter().any(|l| l.starts_with("ERROR")), "{lines:#?}");
        for (t, value) in timed(lines, "GOT ") {
            assert!(
                !value.contains("-a-"),
                "round {round}: aborted {value} delivered"
            );
            if *round >= 1 {
                assert!(
                    !value.starts_with("0-"),
                    "round {round}: {value} of the deleted topic delivered"
                );
            }
            if let Some(at) = acked.get(value) {
                assert!(
                    t < *at,
                    "round {round}: {value} delivered at {t} after its acceptance at {at}"
                );
            }
        }
        for (t, value) in timed(lines, "ACKED ") {
            acked.entry(value).or_insert(t);
        }
    }
    // What the broker keeps is bounded: every client gone, no share session is open (each
    // ended with its connection, crashed ones included; the cache holds 2,000 at most), the
    // group has no member (the last round's dead one went with the restart, the drainer
    // left; a dead one would stay only until its session timeout), and no record is held,
    // on either partition.
    let scraped = super::metrics::scrape(daemon.metrics.as_deref().unwrap());
    assert_eq!(scraped.get("logd_share_sessions").copied(), Some(0.0));
    let members = scraped.get(r#"logd_share_members{group="lifetime-workers"}"#);
    assert_eq!(members.copied(), Some(0.0));
    for partition in 0..2 {
        let key = format!(
            r#"logd_share_records{{group="lifetime-workers",topic="lifetime",partition="{partition}",state="acquired"}}"#
        );
        assert_eq!(scraped.get(&key).copied(), Some(0.0), "{key}");
    }
}
