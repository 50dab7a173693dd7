//! Share groups (KIP-932) with Kafka's own `KafkaShareConsumer` (kafka-clients 4.4, in
//! `java/src/ShareConsumers.java`) and confluent-kafka's `ShareConsumer` (librdkafka 2.16)
//! against a real daemon: members dividing one partition with
//! each record accepted once; release (counted again), reject (never again) and the delivery
//! limit; a member killed with SIGKILL while it holds records, which reach another member
//! when its connection closes, with their count raised; a member renewing its lock (KIP-1222,
//! ShareFetch and ShareAcknowledge v2) to keep a record past it; and logd itself killed with
//! SIGKILL, after which nothing acknowledged comes again and what was held does, counted.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};

use super::java_clients::java;
use super::{Daemon, python_script};

/// Runs a mode of the program to its end; its output lines.
fn run(addr: &str, args: &[&str]) -> Vec<String> {
    let mut all = vec![addr];
    all.extend_from_slice(args);
    let output = java("ShareConsumers", &all).output().expect("java");
    let printed = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "ShareConsumers {args:?}:\n{printed}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    printed.lines().map(str::to_owned).collect()
}

/// Each `GOT offset count` line: offset to delivery count.
fn got(lines: &[String]) -> BTreeMap<i64, i16> {
    lines
        .iter()
        .filter_map(|l| l.strip_prefix("GOT "))
        .map(|l| {
            let (offset, count) = l.split_once(' ').unwrap();
            (offset.parse().unwrap(), count.parse().unwrap())
        })
        .collect()
}

/// Starts `hold TOPIC GROUP accept`: returns the process, the offsets it accepted and those
/// it holds (with their counts) once it says it holds them.
fn hold(
    addr: &str,
    topic: &str,
    group: &str,
    accept: &str,
) -> (Child, Vec<i64>, BTreeMap<i64, i16>) {
    let mut child = java("ShareConsumers", &[addr, "hold", topic, group, accept])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("java");
    let out = BufReader::new(child.stdout.take().unwrap());
    let (mut accepted, mut held) = (Vec::new(), BTreeMap::new());
    for line in out.lines() {
        let line = line.unwrap();
        if let Some(offset) = line.strip_prefix("ACCEPTED ") {
            accepted.push(offset.parse().unwrap());
        } else if let Some(rest) = line.strip_prefix("HELD ") {
            let (offset, count) = rest.split_once(' ').unwrap();
            held.insert(offset.parse().unwrap(), count.parse().unwrap());
        } else if line == "HOLDING" {
            return (child, accepted, held);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("the holding consumer ended before it held records");
}

/// Drains the group (quiet for `quiet_ms` at the end): exactly `expected` come, each record
/// the killed consumer held with its count raised by one, any other once, or twice if the
/// killed client had fetched it ahead without handing it out.
fn drain_and_check(
    addr: &str,
    quiet_ms: &str,
    expected: std::ops::Range<i64>,
    held: &BTreeMap<i64, i16>,
) {
    let lines = run(addr, &["drain", "jobs", "workers", quiet_ms]);
    let drained = got(&lines);
    assert_eq!(
        drained.keys().copied().collect::<Vec<_>>(),
        expected.collect::<Vec<_>>(),
        "{lines:#?}"
    );
    for (offset, count) in &drained {
        match held.get(offset) {
            Some(before) => assert_eq!(*count, before + 1, "offset {offset}: {lines:#?}"),
            None => assert!((1..=2).contains(count), "offset {offset}: {lines:#?}"),
        }
    }
}

#[test]
fn java_share_consumers_divide_one_partition_and_accept_each_record_once() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &[]);
    run(&daemon.addr, &["setup", "jobs", "workers", "200"]);
    let lines = run(&daemon.addr, &["share", "jobs", "workers", "200"]);
    assert!(lines.contains(&"SEEN 200".to_owned()), "{lines:#?}");
    assert!(
        !lines.iter().any(|l| l.starts_with("DUPLICATE")),
        "{lines:#?}"
    );
    // Both members got records of the one partition.
    for member in ["MEMBER 0 ", "MEMBER 1 "] {
        let count: usize = lines
            .iter()
            .find_map(|l| l.strip_prefix(member))
            .unwrap()
            .parse()
            .unwrap();
        assert!(count > 0, "{member}got nothing: {lines:#?}");
    }
    // Kafka's own tool (kafka-share-groups.sh) lists the group and describes where it is.
    let tool = |args: &[&str]| {
        let mut all = vec!["--bootstrap-server", daemon.addr.as_str()];
        all.extend_from_slice(args);
        let out = java(
            "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
            &all,
        )
        .output()
        .expect("java");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(tool(&["--list"]).lines().any(|l| l == "workers"));
    let described = tool(&["--describe", "--group", "workers"]);
    let row: Vec<&str> = described
        .lines()
        .find(|l| l.starts_with("workers"))
        .unwrap_or_else(|| panic!("{described}"))
        .split_whitespace()
        .collect();
    assert_eq!(row[..4], ["workers", "jobs", "0", "200"], "{described}");
}

#[test]
fn released_records_come_again_counted_rejected_ones_never_and_the_limit_archives() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &["--metrics-listen", "127.0.0.1:0"]);
    run(
        &daemon.addr,
        &[
            "setup",
            "jobs",
            "workers",
            "4",
            "share.delivery.count.limit=3",
            "errors.deadletterqueue.topic.name=dlq.jobs",
            "errors.deadletterqueue.copy.record.enable=true",
        ],
    );
    let lines = run(&daemon.addr, &["release-reject", "jobs", "workers"]);
    let deliveries: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("DELIVERY "))
        .collect();
    // As Apache Kafka 4.4 answered the same program: offset 0, released each time, comes
    // three times and is then archived; offset 1, rejected, once.
    assert_eq!(
        deliveries,
        ["0 1", "1 1", "2 1", "3 1", "0 2", "0 3"],
        "{lines:#?}"
    );
    // Both archived records are in the dead-letter topic, copied, with Kafka's context headers
    // as Kafka's consumer reads them, and logd's.
    let letters: Vec<String> = run(&daemon.addr, &["letters", "dlq.jobs", "-"])
        .into_iter()
        .filter(|l| l.starts_with("LETTER "))
        .collect();
    assert_eq!(letters.len(), 2, "{letters:#?}");
    for (letter, expected) in letters.iter().zip([
        [
            "LETTER key-1 job-1",
            "__dlq.errors.topic=jobs",
            "__dlq.errors.partition=0",
            "__dlq.errors.offset=1",
            "__dlq.errors.group=workers",
            "__dlq.errors.delivery.count=1",
            "__dlq.errors.message=Offset rejected by client.",
            "logd.dlq.reason=permanent",
        ],
        [
            "LETTER key-0 job-0",
            "__dlq.errors.topic=jobs",
            "__dlq.errors.partition=0",
            "__dlq.errors.offset=0",
            "__dlq.errors.group=workers",
            "__dlq.errors.delivery.count=3",
            "__dlq.errors.message=Offset delivery count exceeded the threshold.",
            "logd.dlq.reason=max-attempts",
        ],
    ]) {
        for part in expected {
            assert!(letter.contains(part), "{part:?} not in {letter}");
        }
    }
    // `logd dlq list` reads them as it reads logd-retry's letters.
    let (ok, listed, err) = super::logd(
        &["dlq", "--bootstrap", &daemon.addr, "list", "dlq.jobs"],
        "",
    );
    assert!(ok, "{err}");
    for row in [
        "jobs/0/1",
        "permanent",
        "jobs/0/0",
        "max-attempts",
        "share.delivery.limit",
    ] {
        assert!(listed.contains(row), "{row:?} not in\n{listed}");
    }
    // /metrics counts what the group's records went through.
    let scraped = super::metrics::scrape(daemon.metrics.as_deref().unwrap());
    for (series, value) in [
        (r#"logd_share_redelivered_total{group="workers"}"#, 2.0),
        (
            r#"logd_share_archived_total{group="workers",reason="rejected"}"#,
            1.0,
        ),
        (
            r#"logd_share_archived_total{group="workers",reason="delivery_limit"}"#,
            1.0,
        ),
        (r#"logd_share_dead_lettered_total{group="workers"}"#, 2.0),
    ] {
        assert_eq!(scraped.get(series), Some(&value), "{series}");
    }
    // The console shows the group: its partition's states and its counters.
    let (status, body) =
        super::metrics::get(daemon.metrics.as_deref().unwrap(), "/api/v1/share-groups");
    assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
    let shown: serde_json::Value = serde_json::from_str(&body).unwrap();
    let workers = &shown["share_groups"][0];
    assert_eq!(workers["group"], "workers", "{body}");
    assert_eq!(workers["dead_lettered"], 2, "{body}");
    let partition = &workers["partitions"][0];
    assert_eq!(
        (
            &partition["start_offset"],
            &partition["lag"],
            &partition["acquired"]
        ),
        (
            &serde_json::json!(4),
            &serde_json::json!(0),
            &serde_json::json!(0)
        ),
        "{body}"
    );
    // `logd groups` describes the share group and moves where it reads from
    // (AlterShareGroupOffsets): every record comes again, counted afresh.
    let groups = |args: &[&str]| {
        let mut all = vec!["groups", "--bootstrap", daemon.addr.as_str()];
        all.extend_from_slice(args);
        let (ok, out, err) = super::logd(&all, "");
        assert!(ok, "{args:?}: {err}");
        out
    };
    let row = |described: &str| -> Vec<String> {
        described
            .lines()
            .find(|l| l.starts_with("jobs "))
            .unwrap_or_else(|| panic!("{described}"))
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    };
    assert!(
        groups(&["list"]).lines().any(|g| g == "workers"),
        "logd groups list names the share group"
    );
    let described = groups(&["describe", "workers"]);
    assert!(
        described.contains("share group workers: state Empty"),
        "{described}"
    );
    // Start, log end, lag, then (from logd) records in flight: none, all four done with.
    assert_eq!(
        row(&described),
        ["jobs", "0", "4", "4", "0", "0", "0", "0", "0", "0"],
        "{described}"
    );
    let reset = groups(&[
        "reset-offsets",
        "workers",
        "--topic",
        "jobs",
        "--to-earliest",
        "--execute",
    ]);
    assert!(
        reset.contains("set 1 start offset(s) for share group workers"),
        "{reset}"
    );
    assert_eq!(
        row(&groups(&["describe", "workers"])),
        ["jobs", "0", "0", "4", "4", "0", "0", "0", "0", "0"]
    );
    let again = got(&run(&daemon.addr, &["drain", "jobs", "workers", "3000"]));
    assert_eq!(again, BTreeMap::from([(0, 1), (1, 1), (2, 1), (3, 1)]));
}

#[test]
fn a_killed_members_records_reach_another_when_its_connection_closes() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &["--metrics-listen", "127.0.0.1:0"]);
    run(
        &daemon.addr,
        &[
            "setup",
            "jobs",
            "workers",
            "10",
            "share.record.lock.duration.ms=60000",
        ],
    );
    let (mut holder, accepted, held) = hold(&daemon.addr, "jobs", "workers", "3");
    assert_eq!(accepted, [0, 1, 2]);
    assert!(
        !held.is_empty() && held.values().all(|&c| c == 1),
        "{held:?}"
    );
    // /metrics shows what the group holds and how far it has to go.
    let scraped = super::metrics::scrape(daemon.metrics.as_deref().unwrap());
    let series = |name: &str, state: &str| {
        let labels = r#"group="workers",topic="jobs",partition="0""#;
        match state {
            "" => scraped[&format!("{name}{{{labels}}}")],
            state => scraped[&format!(r#"{name}{{{labels},state="{state}"}}"#)],
        }
    };
    assert!(series("logd_share_records", "acquired") >= held.len() as f64);
    assert_eq!(series("logd_share_lag", ""), 7.0);
    // So does `logd groups describe`: start 3, log end 10, lag 7, the held records acquired.
    let (ok, described, err) = super::logd(
        &["groups", "--bootstrap", &daemon.addr, "describe", "workers"],
        "",
    );
    assert!(ok, "{err}");
    let row: Vec<&str> = described
        .lines()
        .find(|l| l.starts_with("jobs "))
        .unwrap_or_else(|| panic!("{described}"))
        .split_whitespace()
        .collect();
    assert_eq!(row[..5], ["jobs", "0", "3", "10", "7"], "{described}");
    let acquired: usize = row[7].parse().unwrap();
    assert!(acquired >= held.len(), "{described}");
    holder.kill().unwrap();
    holder.wait().unwrap();
    // Its connection closed with it: its share session ends and the held records go back
    // at once, as Kafka 4.4's share session cache releases them, long before their 60 s
    // locks would (the drain ends after 8 s without a record).
    drain_and_check(&daemon.addr, "8000", 3..10, &held);
}

#[test]
fn a_java_member_renews_its_lock_and_keeps_a_record_past_the_lock_duration() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &[]);
    let lock = "share.record.lock.duration.ms=15000";
    run(&daemon.addr, &["setup", "jobs", "workers", "1", lock]);
    // The holder keeps offset 0 for 24 s, renewing its 15 s lock (ShareAcknowledge or
    // ShareFetch v2 with RENEW, which Kafka 4.4's client sends only to a broker serving v2).
    let mut holder = java(
        "ShareConsumers",
        &[&daemon.addr, "renew", "jobs", "workers", "24000"],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .expect("java");
    let mut lines = BufReader::new(holder.stdout.take().unwrap()).lines();
    let first = lines.next().expect("the holder's first line").unwrap();
    assert_eq!(first, "HELD 0 1");
    // Another member looks for 30 s: without the renewals offset 0 would reach it at 15 s.
    let drained = run(&daemon.addr, &["drain", "jobs", "workers", "20000"]);
    assert!(got(&drained).is_empty(), "{drained:#?}");
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    assert!(holder.wait().unwrap().success(), "{rest:#?}");
    let renewed = rest.iter().filter(|l| *l == "RENEWED 0 1").count();
    assert!(renewed >= 5, "{rest:#?}");
    assert_eq!(
        rest.last().map(String::as_str),
        Some("ACCEPTED 0 LOCK 15000")
    );
}

#[test]
fn after_logd_is_killed_nothing_acknowledged_comes_again_and_held_records_come_counted() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &["--fsync", "always"]);
    let addr = daemon.addr.clone();
    run(&addr, &["setup", "jobs", "workers", "10"]);
    let (mut holder, accepted, held) = hold(&addr, "jobs", "workers", "4");
    assert_eq!(accepted, [0, 1, 2, 3]);
    daemon.kill();
    holder.kill().unwrap();
    holder.wait().unwrap();
    let _restarted = Daemon::start_on(dir.path(), &addr, &["--fsync", "always"]);
    drain_and_check(&addr, "8000", 4..10, &held);
}

const CONFLUENT_SHARE: &str = r#"
import sys, time
from confluent_kafka import ShareConsumer, Producer, AcknowledgeType
from confluent_kafka.admin import (AdminClient, NewTopic, ConfigResource, ConfigEntry,
    AlterConfigOpType, ResourceType)
addr = sys.argv[1]
a = AdminClient({"bootstrap.servers": addr})
for t, f in a.create_topics([NewTopic("jobs", num_partitions=1)]).items():
    f.result()
r = ConfigResource(ResourceType.GROUP, "workers", incremental_configs=[
    ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
for _, f in a.incremental_alter_configs([r]).items():
    f.result()
p = Producer({"bootstrap.servers": addr})
for i in range(60):
    p.produce("jobs", f"job-{i}".encode())
p.flush(10)
members = [ShareConsumer({"bootstrap.servers": addr, "group.id": "workers",
    "share.acknowledgement.mode": "explicit"}) for _ in range(2)]
for m in members:
    m.subscribe(["jobs"])
accepted, deliveries = {}, []
end = time.time() + 60
while len(accepted) < 59 and time.time() < end:
    for i, m in enumerate(members):
        for msg in m.poll(0.5):
            if msg.error():
                print("ERROR", msg.error())
                continue
            deliveries.append((msg.offset(), msg.delivery_count()))
            if msg.offset() == 0 and msg.delivery_count() == 1:
                m.acknowledge(msg, AcknowledgeType.RELEASE)
            elif msg.offset() == 1:
                m.acknowledge(msg, AcknowledgeType.REJECT)
            else:
                if msg.offset() in accepted:
                    print("TWICE", msg.offset())
                accepted[msg.offset()] = i
                m.acknowledge(msg, AcknowledgeType.ACCEPT)
        m.commit_sync()
for m in members:
    m.close()
print("ACCEPTED", len(accepted), "BY", sorted(set(accepted.values())))
print("OFFSET0", [c for o, c in deliveries if o == 0])
print("OFFSET1", [c for o, c in deliveries if o == 1])
"#;

#[test]
fn confluent_kafkas_share_consumers_divide_release_and_reject() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &[]);
    let out = python_script(CONFLUENT_SHARE, &[&daemon.addr])
        .output()
        .expect("python3");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // Every record but the rejected one accepted once, by both members between them; the
    // released one again with its count raised; the rejected one never again.
    for expected in ["ACCEPTED 59 BY [0, 1]", "OFFSET0 [1, 2]", "OFFSET1 [1]"] {
        assert!(
            stdout.contains(expected),
            "{expected:?} missing:\n{stdout}\n{stderr}"
        );
    }
    assert!(
        !stdout.contains("TWICE") && !stdout.contains("ERROR"),
        "{stdout}"
    );
}
