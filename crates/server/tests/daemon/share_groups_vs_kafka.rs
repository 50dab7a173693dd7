//! Share groups over a topic's lifetime on logd and on a real Apache Kafka 4.4 cluster, with
//! confluent-kafka's `ShareConsumer` (librdkafka 2.16) running the same script
//! (`share_lifetime.py`) against both, whose lines must be the same: DeleteRecords past
//! records a member left released (the queue goes on from the new log start), a group with
//! `share.isolation.level=read_committed` beside an aborted and a committed transaction
//! (only the committed records come), and a topic deleted and created again under its name
//! (the group starts it afresh, as Kafka keys share state by topic id); and a member process
//! that dies without closing, whose records come back when its connection closes (Kafka's
//! share session cache releases a disconnected client's records), not after their locks.

use super::python_script;
use super::raw_wire::same_answers_as_kafka;

const SCRIPT: &str = include_str!("share_lifetime.py");

/// The script's lines for `scenario` against `bootstrap`, names starting with `prefix`.
fn lines(bootstrap: &str, scenario: &str, prefix: &str) -> Vec<String> {
    let out = python_script(SCRIPT, &[bootstrap, scenario, prefix])
        .output()
        .expect("python3");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{bootstrap}:\n{stdout}\n{stderr}");
    stdout.lines().map(str::to_owned).collect()
}

#[test]
fn delete_records_past_released_records_lets_the_queue_go_on_as_on_kafka() {
    same_answers_as_kafka(
        |b| lines(b, "delete-records", "share-vs-deleted"),
        &[
            "held some True",
            "log start 3000",
            "after delete-records offsets 3000-5999 twice 0",
        ],
    );
}

#[test]
fn a_read_committed_share_group_gets_only_committed_records_as_on_kafka() {
    same_answers_as_kafka(
        |b| lines(b, "read-committed", "share-vs-committed"),
        &["read_committed offsets 11-15 twice 0"],
    );
}

#[test]
fn a_recreated_topic_starts_afresh_for_a_share_group_as_on_kafka() {
    same_answers_as_kafka(
        |b| lines(b, "recreated", "share-vs-recreated"),
        &[
            "first topic offsets 0-9 twice 0",
            "recreated topic offsets 0-4 twice 0",
        ],
    );
}

#[test]
fn a_crashed_members_records_come_back_when_its_connection_closes_as_on_kafka() {
    same_answers_as_kafka(
        |b| lines(b, "crashed", "share-vs-crashed"),
        &[
            "the crashed member held some True",
            "after the crash offsets 0-9 twice 0",
            "redelivered at once True",
        ],
    );
}
