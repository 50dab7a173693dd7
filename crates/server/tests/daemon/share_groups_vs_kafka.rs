//! Share groups over a topic's lifetime on logd and on a real Apache Kafka 4.4 cluster, with
//! confluent-kafka's `ShareConsumer` (librdkafka 2.16) running the same script
//! (`share_lifetime.py`) against both, whose lines must be the same: DeleteRecords past
//! records a member left released (the queue goes on from the new log start), a group with
//! `share.isolation.level=read_committed` beside an aborted and a committed transaction
//! (only the committed records come), and a topic deleted and created again under its name
//! (the group starts it afresh, as Kafka keys share state by topic id); and a member process
//! that dies without closing, whose records come back when its connection closes (Kafka's
//! share session cache releases a disconnected client's records), not after their locks. And
//! raw ShareFetch requests with the group and member ids and session epochs Kafka refuses, and
//! raw ShareFetch requests whose record limit ends inside a batch (Kafka's batch-optimized
//! acquisition takes the batch whole, and answers with only the batches acquired).

use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::share_fetch_request::{
    AcknowledgementBatch, FetchPartition, FetchTopic,
};
use kafka_protocol::messages::{
    ApiKey, GroupId, IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
    MetadataRequest, MetadataResponse, ProduceRequest, ProduceResponse, ShareFetchRequest,
    ShareFetchResponse, ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse, TopicName,
};
use logd_storage::batch::{BatchBuilder, BatchIter, Compression};

use super::python_script;
use super::raw_wire::{GROUP_KEY, Raw, coordinator, leader, s, same_answers_as_kafka};

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
    let named = topic_id(&mut c, topic);
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

/// `topic`'s id, asked of `c`.
fn topic_id(c: &mut Raw, topic: &str) -> FetchTopic {
    let mut request = MetadataRequest::default();
    let mut named = kafka_protocol::messages::metadata_request::MetadataRequestTopic::default();
    named.name = Some(TopicName(s(topic)));
    request.topics = Some(vec![named]);
    let metadata: MetadataResponse = c.call(ApiKey::Metadata, 12, &request);
    let mut fetched = FetchTopic::default();
    fetched.topic_id = metadata.topics[0].topic_id;
    fetched
}

/// What `member` takes of partition 0 of `topic`, asking for `max_records` (waiting up to a
/// second a request, a few times, from epoch 0): the offsets acquired and the base offsets
/// of the batches answered.
fn take(c: &mut Raw, topic: &FetchTopic, member: &str, max_records: i32) -> String {
    for epoch in 0..10 {
        let mut t = topic.clone();
        t.partitions = vec![FetchPartition::default()];
        let mut request = ShareFetchRequest::default();
        request.group_id = Some(GroupId(s("share-vs-batches")));
        request.member_id = Some(s(member));
        request.share_session_epoch = epoch;
        request.max_wait_ms = 1000;
        request.min_bytes = 1;
        request.max_records = max_records;
        request.batch_size = max_records;
        request.max_bytes = 1 << 20;
        request.topics = if epoch == 0 { vec![t] } else { vec![] };
        let response: ShareFetchResponse = c.call(ApiKey::ShareFetch, 1, &request);
        assert_eq!(response.error_code, 0, "{:?}", response.error_message);
        let Some(p) = response
            .responses
            .first()
            .and_then(|t| t.partitions.first())
        else {
            continue;
        };
        let (Some(first), Some(last)) = (p.acquired_records.first(), p.acquired_records.last())
        else {
            continue;
        };
        let records = p.records.clone().unwrap_or_default();
        let bases: Vec<String> = BatchIter::new(&records, 0)
            .map(|item| item.unwrap().1.header.base_offset.to_string())
            .collect();
        return format!(
            "{member} asked {max_records}: took {}-{} in batches {}",
            first.first_offset,
            last.last_offset,
            bases.join(",")
        );
    }
    format!("{member} asked {max_records}: took nothing")
}

/// Three batches of ten records, then members asking for fewer records than a batch holds.
fn batch_takes(bootstrap: &str) -> Vec<String> {
    let topic = "share-vs-batches";
    logd_client::Client::connect(bootstrap)
        .unwrap()
        .create_topic(topic, 1, &[])
        .unwrap();
    let mut c = leader(bootstrap, topic, 0);
    let named = topic_id(&mut c, topic);
    let mut reset = AlterableConfig::default();
    reset.name = s("share.auto.offset.reset");
    reset.value = Some(s("earliest"));
    let mut resource = AlterConfigsResource::default();
    resource.resource_type = 32; // GROUP
    resource.resource_name = s("share-vs-batches");
    resource.configs = vec![reset];
    let mut request = IncrementalAlterConfigsRequest::default();
    request.resources = vec![resource];
    let altered: IncrementalAlterConfigsResponse =
        c.call(ApiKey::IncrementalAlterConfigs, 1, &request);
    let altered = altered.responses[0].error_code;
    for batch in 0..3 {
        let mut builder = BatchBuilder::new(Compression::None);
        for i in 0..10 {
            builder.push(
                1_700_000_000_000 + i,
                None,
                Some(format!("{batch}-{i}").as_bytes()),
                &[],
            );
        }
        let mut data = PartitionProduceData::default();
        data.index = 0;
        data.records = Some(builder.build(0).unwrap().into());
        let mut t = TopicProduceData::default();
        t.name = TopicName(s(topic));
        t.partition_data = vec![data];
        let mut request = ProduceRequest::default();
        request.acks = -1;
        request.timeout_ms = 30_000;
        request.topic_data = vec![t];
        let response: ProduceResponse = c.call(ApiKey::Produce, 9, &request);
        assert_eq!(response.responses[0].partition_responses[0].error_code, 0);
    }
    // The members join first: Kafka starts a share-partition only for a group that exists.
    let members = [
        "AAAAAAAAAAAAAAAAAAAAAQ",
        "AAAAAAAAAAAAAAAAAAAAAg",
        "AAAAAAAAAAAAAAAAAAAAAw",
    ];
    let mut joined = Vec::new();
    for member in members {
        let heartbeat = |c: &mut Raw| {
            let mut request = ShareGroupHeartbeatRequest::default();
            request.group_id = GroupId(s("share-vs-batches"));
            request.member_id = s(member);
            request.member_epoch = 0;
            request.subscribed_topic_names = Some(vec![TopicName(s(topic))]);
            let response: ShareGroupHeartbeatResponse =
                c.call(ApiKey::ShareGroupHeartbeat, 1, &request);
            response.error_code
        };
        let mut at = coordinator(bootstrap, GROUP_KEY, "share-vs-batches", heartbeat);
        joined.push(format!("{member} joined: {}", heartbeat(&mut at)));
    }
    vec![
        format!("group configs altered: {altered}"),
        joined.join("; "),
        take(&mut c, &named, "AAAAAAAAAAAAAAAAAAAAAQ", 3),
        take(&mut c, &named, "AAAAAAAAAAAAAAAAAAAAAg", 7),
        take(&mut c, &named, "AAAAAAAAAAAAAAAAAAAAAw", 12),
    ]
}

#[test]
fn a_share_fetchs_record_limit_takes_whole_batches_as_on_kafka() {
    same_answers_as_kafka(
        batch_takes,
        &[
            "group configs altered: 0",
            "AAAAAAAAAAAAAAAAAAAAAQ asked 3: took 0-9 in batches 0",
            "AAAAAAAAAAAAAAAAAAAAAg asked 7: took 10-19 in batches 10",
            "AAAAAAAAAAAAAAAAAAAAAw asked 12: took 20-29 in batches 20",
        ],
    );
}
