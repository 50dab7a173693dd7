//! Share groups over a topic's lifetime on logd and on a real Apache Kafka 4.4 cluster, with
//! confluent-kafka's `ShareConsumer` (librdkafka 2.16) running the same script
//! (`share_lifetime.py`) against both, whose lines must be the same: DeleteRecords past
//! records a member left released (the queue goes on from the new log start), a group with
//! `share.isolation.level=read_committed` beside an aborted and a committed transaction
//! (only the committed records come), and a topic deleted and created again under its name
//! (the group starts it afresh, as Kafka keys share state by topic id); and a member process
//! that dies without closing, whose records come back when its connection closes (Kafka's
//! share session cache releases a disconnected client's records), not after their locks. And
//! raw ShareFetch requests with the group and member ids and session epochs Kafka refuses.

use kafka_protocol::messages::share_fetch_request::{
    AcknowledgementBatch, FetchPartition, FetchTopic,
};
use kafka_protocol::messages::{
    ApiKey, GroupId, MetadataRequest, MetadataResponse, ShareFetchRequest, ShareFetchResponse,
};

use super::python_script;
use super::raw_wire::{Raw, leader, s, same_answers_as_kafka};

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

/// A ShareFetch (v1, no wait) of partition 0 of `topic` (naming the topic's id) by `member`
/// of `group` at `epoch`, with an acknowledgement of offset 0 when `acknowledging`: its
/// top-level code.
fn share_fetch(
    c: &mut Raw,
    (group, member): (&str, &str),
    epoch: i32,
    topic: &FetchTopic,
    acknowledging: bool,
) -> i16 {
    let mut partition = FetchPartition::default();
    if acknowledging {
        let mut batch = AcknowledgementBatch::default();
        batch.acknowledge_types = vec![1];
        partition.acknowledgement_batches = vec![batch];
    }
    let mut topic = topic.clone();
    topic.partitions = vec![partition];
    let mut request = ShareFetchRequest::default();
    request.group_id = Some(GroupId(s(group)));
    request.member_id = Some(s(member));
    request.share_session_epoch = epoch;
    request.max_records = 10;
    request.max_bytes = 1 << 20;
    request.topics = vec![topic];
    let response: ShareFetchResponse = c.call(ApiKey::ShareFetch, 1, &request);
    response.error_code
}

/// The refusals against `bootstrap`, one line each: what was asked, the code.
fn refusals(bootstrap: &str) -> Vec<String> {
    let topic = "share-vs-refusals";
    logd_client::Client::connect(bootstrap)
        .unwrap()
        .create_topic(topic, 1, &[])
        .unwrap();
    let mut c = leader(bootstrap, topic, 0);
    let mut request = MetadataRequest::default();
    let mut named = kafka_protocol::messages::metadata_request::MetadataRequestTopic::default();
    named.name = Some(kafka_protocol::messages::TopicName(s(topic)));
    request.topics = Some(vec![named]);
    let metadata: MetadataResponse = c.call(ApiKey::Metadata, 12, &request);
    let mut named = FetchTopic::default();
    named.topic_id = metadata.topics[0].topic_id;
    let group = "share-vs-refusals";
    let member = "AAAAAAAAAAAAAAAAAAAAAQ";
    let long = "m".repeat(37);
    let asks: [(&str, (&str, &str), i32, bool); 8] = [
        ("an empty group id", ("", member), 0, false),
        ("an empty member id", (group, ""), 0, false),
        ("a member id of 37 characters", (group, &long), 0, false),
        ("closing a session never opened", (group, member), -1, false),
        ("a next epoch without a session", (group, member), 3, false),
        (
            "acknowledging in the opening request",
            (group, member),
            0,
            true,
        ),
        ("opening a session", (group, member), 0, false),
        ("a wrong next epoch", (group, member), 5, false),
    ];
    asks.iter()
        .map(|(what, caller, epoch, acks)| {
            format!(
                "{what}: {}",
                share_fetch(&mut c, *caller, *epoch, &named, *acks)
            )
        })
        .collect()
}

#[test]
fn share_fetches_kafka_refuses_are_refused_with_its_codes() {
    same_answers_as_kafka(
        refusals,
        &[
            "an empty group id: 0",
            "an empty member id: 42",
            "closing a session never opened: 122",
            "acknowledging in the opening request: 42",
            "opening a session: 0",
            "a wrong next epoch: 123",
        ],
    );
}
