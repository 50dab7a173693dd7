//! Transactions' answers on logd and on a real Apache Kafka cluster, request by request: the
//! same InitProducerId, AddPartitionsToTxn, Produce, AddOffsetsToTxn, TxnOffsetCommit, EndTxn,
//! DescribeTransactions and ListTransactions requests (transaction version 1, as clients send
//! them to logd), sent raw to the transaction coordinator and the partitions' leaders, with
//! the refusals a client can run into (a timeout above the broker's maximum, an end with
//! nothing open, a wrong epoch or producer id, an unknown topic beside a known one, a write to
//! a partition outside the transaction, a fenced producer, a retried or contrary end), must get
//! the same codes and states. The codes were first taken from Kafka's source and its clients'
//! behaviour; this replays them against Kafka itself.

use std::time::{Duration, Instant};

use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse, ApiKey, DescribeGroupsRequest, DescribeGroupsResponse,
    DescribeTransactionsRequest, DescribeTransactionsResponse, EndTxnRequest, EndTxnResponse,
    GroupId, InitProducerIdRequest, InitProducerIdResponse, ProduceRequest, ProduceResponse,
    ProducerId, TopicName, TransactionalId, TxnOffsetCommitRequest, TxnOffsetCommitResponse,
};
use kafka_protocol::messages::{ListTransactionsRequest, ListTransactionsResponse};
use logd_storage::batch::{BatchBuilder, Compression};

use super::raw_wire::{
    GROUP_KEY, Raw, TRANSACTION_KEY, coordinator, leader, s, same_answers_as_kafka,
};

/// A producer's identity in the transaction.
#[derive(Clone, Copy)]
struct Producer {
    id: i64,
    epoch: i16,
}

/// InitProducerId (v5) for `id`, asked again while the coordinator is loading or busy
/// (COORDINATOR_LOAD_IN_PROGRESS, CONCURRENT_TRANSACTIONS), as clients do.
fn init(c: &mut Raw, id: &str, timeout_ms: i32) -> InitProducerIdResponse {
    let mut request = InitProducerIdRequest::default();
    request.transactional_id = Some(TransactionalId(s(id)));
    request.transaction_timeout_ms = timeout_ms;
    request.producer_id = ProducerId(-1);
    request.producer_epoch = -1;
    let started = Instant::now();
    loop {
        let response: InitProducerIdResponse = c.call(ApiKey::InitProducerId, 5, &request);
        if !matches!(response.error_code, 14 | 51) || started.elapsed() > Duration::from_secs(60) {
            return response;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// AddPartitionsToTxn (v3) of `partitions` (topic, partition): each partition's code, in
/// the order asked.
fn add(c: &mut Raw, id: &str, p: Producer, partitions: &[(&str, i32)]) -> Vec<i16> {
    let mut request = AddPartitionsToTxnRequest::default();
    request.v3_and_below_transactional_id = TransactionalId(s(id));
    request.v3_and_below_producer_id = ProducerId(p.id);
    request.v3_and_below_producer_epoch = p.epoch;
    request.v3_and_below_topics = partitions
        .iter()
        .map(|(topic, partition)| {
            let mut t = AddPartitionsToTxnTopic::default();
            t.name = TopicName(s(topic));
            t.partitions = vec![*partition];
            t
        })
        .collect();
    let response: AddPartitionsToTxnResponse = c.call(ApiKey::AddPartitionsToTxn, 3, &request);
    partitions
        .iter()
        .map(|(topic, partition)| {
            response
                .results_by_topic_v3_and_below
                .iter()
                .filter(|t| t.name.as_str() == *topic)
                .flat_map(|t| &t.results_by_partition)
                .find(|r| r.partition_index == *partition)
                .map_or(-100, |r| r.partition_error_code)
        })
        .collect()
}

fn end(c: &mut Raw, id: &str, p: Producer, commit: bool) -> i16 {
    let mut request = EndTxnRequest::default();
    request.transactional_id = TransactionalId(s(id));
    request.producer_id = ProducerId(p.id);
    request.producer_epoch = p.epoch;
    request.committed = commit;
    let response: EndTxnResponse = c.call(ApiKey::EndTxn, 4, &request);
    response.error_code
}

/// A transactional batch of one record from `p` at `sequence` to `topic`'s `partition`.
fn produce(
    bootstrap: &str,
    id: &str,
    topic: &str,
    partition: i32,
    p: Producer,
    sequence: i32,
) -> i16 {
    let mut builder = BatchBuilder::new(Compression::None)
        .transactional()
        .producer(p.id, p.epoch, sequence);
    builder.push(1_700_000_000_000, None, Some(b"work"), &[]);
    let mut data = PartitionProduceData::default();
    data.index = partition;
    data.records = Some(builder.build(0).unwrap().into());
    let mut t = TopicProduceData::default();
    t.name = TopicName(s(topic));
    t.partition_data = vec![data];
    let mut request = ProduceRequest::default();
    request.transactional_id = Some(TransactionalId(s(id)));
    request.acks = -1;
    request.timeout_ms = 30_000;
    request.topic_data = vec![t];
    let response: ProduceResponse =
        leader(bootstrap, topic, partition).call(ApiKey::Produce, 11, &request);
    response.responses[0].partition_responses[0].error_code
}

/// DescribeTransactions of `ids`: each one's code, state and partition count, by id. Kafka
/// also lists the `__consumer_offsets` partition an AddOffsetsToTxn brought in; logd keeps
/// offsets in its own store and has no such topic to name, so only other topics are counted.
fn describe(c: &mut Raw, ids: &[&str]) -> Vec<String> {
    let mut request = DescribeTransactionsRequest::default();
    request.transactional_ids = ids.iter().map(|id| TransactionalId(s(id))).collect();
    let response: DescribeTransactionsResponse = c.call(ApiKey::DescribeTransactions, 0, &request);
    let mut found: Vec<String> = response
        .transaction_states
        .iter()
        .map(|t| {
            let partitions: usize = t
                .topics
                .iter()
                .filter(|t| t.topic.as_str() != "__consumer_offsets")
                .map(|t| t.partitions.len())
                .sum();
            format!(
                "{} {} {} partitions {partitions}",
                t.transactional_id.as_str(),
                t.error_code,
                t.transaction_state.as_str()
            )
        })
        .collect();
    found.sort();
    found
}

/// The script against `bootstrap`: one line per request, naming what was asked and what came
/// back.
fn answers(bootstrap: &str, topic: &str, id: &str) -> Vec<String> {
    logd_client::Client::connect(bootstrap)
        .unwrap()
        .create_topic(topic, 2, &[])
        .unwrap();
    let mut c = coordinator(bootstrap, TRANSACTION_KEY, id, |c| {
        let mut request = DescribeTransactionsRequest::default();
        request.transactional_ids = vec![TransactionalId(s(id))];
        let response: DescribeTransactionsResponse =
            c.call(ApiKey::DescribeTransactions, 0, &request);
        response.transaction_states[0].error_code
    });
    let mut lines = Vec::new();
    let mut say = |step: &str, what: String| lines.push(format!("{step}: {what}"));

    for line in describe(&mut c, &[id]) {
        say("describe before init", line.replacen(id, "ID", 1));
    }
    let started = init(&mut c, id, 60_000);
    say(
        "init",
        format!("{} epoch {}", started.error_code, started.producer_epoch),
    );
    let p = Producer {
        id: started.producer_id.0,
        epoch: started.producer_epoch,
    };
    let long = init(&mut c, &format!("{id}-long"), i32::MAX);
    say(
        "init with a timeout above the maximum",
        long.error_code.to_string(),
    );
    say(
        "commit with nothing open",
        end(&mut c, id, p, true).to_string(),
    );
    let ahead = Producer {
        epoch: p.epoch + 1,
        ..p
    };
    say(
        "add at a newer epoch",
        format!("{:?}", add(&mut c, id, ahead, &[(topic, 0)])),
    );
    let other = Producer {
        id: p.id + 1000,
        ..p
    };
    say(
        "add as another producer id",
        format!("{:?}", add(&mut c, id, other, &[(topic, 0)])),
    );
    let mixed = add(&mut c, id, p, &[(topic, 0), ("no-such-topic-vs", 0)]);
    say("add beside an unknown topic", format!("{mixed:?}"));
    say(
        "produce before the partition is added",
        produce(bootstrap, id, topic, 1, p, 0).to_string(),
    );
    say("add", format!("{:?}", add(&mut c, id, p, &[(topic, 0)])));
    say(
        "produce",
        produce(bootstrap, id, topic, 0, p, 0).to_string(),
    );

    let mut offsets = AddOffsetsToTxnRequest::default();
    offsets.transactional_id = TransactionalId(s(id));
    offsets.producer_id = ProducerId(p.id);
    offsets.producer_epoch = p.epoch;
    offsets.group_id = GroupId(s(&format!("{id}-group")));
    let added: AddOffsetsToTxnResponse = c.call(ApiKey::AddOffsetsToTxn, 4, &offsets);
    say("add offsets", added.error_code.to_string());
    let mut partition = TxnOffsetCommitRequestPartition::default();
    partition.partition_index = 0;
    partition.committed_offset = 1;
    let mut t = TxnOffsetCommitRequestTopic::default();
    t.name = TopicName(s(topic));
    t.partitions = vec![partition];
    let mut commit = TxnOffsetCommitRequest::default();
    commit.transactional_id = TransactionalId(s(id));
    commit.group_id = GroupId(s(&format!("{id}-group")));
    commit.producer_id = ProducerId(p.id);
    commit.producer_epoch = p.epoch;
    commit.generation_id = -1;
    commit.topics = vec![t];
    // To the group's coordinator, as producers send it.
    let mut g = coordinator(bootstrap, GROUP_KEY, &format!("{id}-group"), |g| {
        let mut probe = DescribeGroupsRequest::default();
        probe.groups = vec![GroupId(s(&format!("{id}-group")))];
        let described: DescribeGroupsResponse = g.call(ApiKey::DescribeGroups, 5, &probe);
        described.groups[0].error_code
    });
    let committed: TxnOffsetCommitResponse = g.call(ApiKey::TxnOffsetCommit, 3, &commit);
    say(
        "commit offsets in the transaction",
        committed.topics[0].partitions[0].error_code.to_string(),
    );

    for line in describe(&mut c, &[id]) {
        say("describe", line.replacen(id, "ID", 1));
    }
    let mut list = ListTransactionsRequest::default();
    list.state_filters = vec![s("Ongoing"), s("Bogus")];
    let listed: ListTransactionsResponse = c.call(ApiKey::ListTransactions, 1, &list);
    let ours: Vec<&str> = listed
        .transaction_states
        .iter()
        .filter(|t| t.transactional_id.as_str() == id)
        .map(|t| t.transaction_state.as_str())
        .collect();
    let unknown: Vec<&str> = listed
        .unknown_state_filters
        .iter()
        .map(|f| f.as_str())
        .collect();
    say(
        "list ongoing",
        format!("{} {ours:?} unknown {unknown:?}", listed.error_code),
    );

    say(
        "abort as another producer id",
        end(&mut c, id, other, false).to_string(),
    );
    say("commit", end(&mut c, id, p, true).to_string());
    // Kafka answers CONCURRENT_TRANSACTIONS while its markers are still being written, as
    // clients retry; the answer after that is the one compared.
    let started_retry = Instant::now();
    let retried = loop {
        let code = end(&mut c, id, p, true);
        if code != 51 || started_retry.elapsed() > Duration::from_secs(10) {
            break code;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    say("commit again", retried.to_string());
    say(
        "abort after the commit",
        end(&mut c, id, p, false).to_string(),
    );

    let again = init(&mut c, id, 60_000);
    say(
        "init again",
        format!(
            "{} same id {} epoch grew {}",
            again.error_code,
            again.producer_id.0 == p.id,
            again.producer_epoch > p.epoch
        ),
    );
    say(
        "add as the fenced producer",
        format!("{:?}", add(&mut c, id, p, &[(topic, 0)])),
    );
    say(
        "produce as the fenced producer",
        produce(bootstrap, id, topic, 0, p, 1).to_string(),
    );
    for line in describe(&mut c, &[id]) {
        say("describe after", line.replacen(id, "ID", 1));
    }
    lines
}

#[test]
fn transactional_requests_answer_on_logd_as_on_kafka() {
    same_answers_as_kafka(
        |b| answers(b, "txn-vs", "txn-vs"),
        &[
            "init with a timeout above the maximum: 50",
            "produce before the partition is added: 120",
        ],
    );
}
