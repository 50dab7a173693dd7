//! Transactions on the wire, through `Broker::handle_frame` over a real engine: a
//! transactional producer's whole life in Kafka's requests (InitProducerId with a
//! transactional id, AddPartitionsToTxn, Produce, AddOffsetsToTxn, TxnOffsetCommit, EndTxn),
//! read_committed and read_uncommitted fetches (the last stable offset, the aborted
//! transactions or null), ListOffsets and OffsetFetch as a read_committed consumer uses them,
//! fencing and its codes per version, and DescribeTransactions and ListTransactions.

use bytes::Bytes;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol::messages::*;
use logd::{Config, Log, TopicConfig};
use logd_kafka::{Broker, BrokerConfig};
use logd_storage::batch::{BatchBuilder, Compression};

use crate::common::{call, s};

fn broker(dir: &std::path::Path) -> Broker {
    let log = Log::open(dir, Config::default()).unwrap();
    log.create_topic("orders", TopicConfig::default()).unwrap();
    Broker::new(log, BrokerConfig::default())
}

fn code(e: ResponseError) -> i16 {
    e.code()
}

fn txn_id() -> TransactionalId {
    TransactionalId(s("app-1"))
}

fn init(broker: &Broker, version: i16) -> InitProducerIdResponse {
    let mut request = InitProducerIdRequest::default();
    request.transactional_id = Some(txn_id());
    request.transaction_timeout_ms = 60_000;
    if version >= 3 {
        request.producer_id = ProducerId(-1);
        request.producer_epoch = -1;
    }
    call(broker, ApiKey::InitProducerId, version, &request)
}

fn add_partition(broker: &Broker, pid: i64, epoch: i16) -> i16 {
    let mut topic = AddPartitionsToTxnTopic::default();
    topic.name = TopicName(s("orders"));
    topic.partitions = vec![0];
    let mut request = AddPartitionsToTxnRequest::default();
    request.v3_and_below_transactional_id = txn_id();
    request.v3_and_below_producer_id = ProducerId(pid);
    request.v3_and_below_producer_epoch = epoch;
    request.v3_and_below_topics = vec![topic];
    let r: AddPartitionsToTxnResponse = call(broker, ApiKey::AddPartitionsToTxn, 3, &request);
    r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
}

fn produce(broker: &Broker, pid: i64, epoch: i16, sequence: i32, values: &[&str]) -> i16 {
    produce_at(broker, 9, pid, epoch, sequence, values)
}

fn produce_at(
    broker: &Broker,
    version: i16,
    pid: i64,
    epoch: i16,
    sequence: i32,
    values: &[&str],
) -> i16 {
    let mut builder = BatchBuilder::new(Compression::None)
        .producer(pid, epoch, sequence)
        .transactional();
    for v in values {
        builder.push(1_700_000_000_000, None, Some(v.as_bytes()), &[]);
    }
    let mut partition = PartitionProduceData::default();
    partition.index = 0;
    partition.records = Some(Bytes::from(builder.build(0).unwrap()));
    let mut topic = TopicProduceData::default();
    topic.name = TopicName(s("orders"));
    topic.partition_data = vec![partition];
    let mut request = ProduceRequest::default();
    request.transactional_id = Some(txn_id());
    request.acks = -1;
    request.timeout_ms = 10_000;
    request.topic_data = vec![topic];
    let r: ProduceResponse = call(broker, ApiKey::Produce, version, &request);
    r.responses[0].partition_responses[0].error_code
}

fn end(broker: &Broker, pid: i64, epoch: i16, commit: bool, version: i16) -> i16 {
    let mut request = EndTxnRequest::default();
    request.transactional_id = txn_id();
    request.producer_id = ProducerId(pid);
    request.producer_epoch = epoch;
    request.committed = commit;
    let r: EndTxnResponse = call(broker, ApiKey::EndTxn, version, &request);
    r.error_code
}

/// A fetch of orders-0 from `offset` at `isolation`.
fn fetch(broker: &Broker, offset: i64, isolation: i8) -> fetch_response::PartitionData {
    let mut partition = FetchPartition::default();
    partition.fetch_offset = offset;
    partition.partition_max_bytes = 1 << 20;
    let mut topic = FetchTopic::default();
    topic.topic = TopicName(s("orders"));
    topic.partitions = vec![partition];
    let mut request = FetchRequest::default();
    request.replica_id = BrokerId(-1);
    request.max_bytes = 1 << 20;
    request.isolation_level = isolation;
    request.topics = vec![topic];
    let r: FetchResponse = call(broker, ApiKey::Fetch, 12, &request);
    r.responses[0].partitions[0].clone()
}

/// The values of the data records fetched (control batches are no records to a client).
fn values(data: &fetch_response::PartitionData) -> Vec<String> {
    let bytes = data.records.clone().unwrap_or_default();
    let mut out = Vec::new();
    for item in logd_storage::batch::BatchIter::new(&bytes, 0) {
        let (_, batch) = item.unwrap();
        if batch.header.is_control() {
            continue;
        }
        for record in batch.records(1 << 20).unwrap().iter() {
            out.push(String::from_utf8(record.unwrap().value.unwrap().to_vec()).unwrap());
        }
    }
    out
}

fn latest(broker: &Broker, isolation: i8) -> i64 {
    let mut partition = ListOffsetsPartition::default();
    partition.timestamp = -1;
    let mut topic = ListOffsetsTopic::default();
    topic.name = TopicName(s("orders"));
    topic.partitions = vec![partition];
    let mut request = ListOffsetsRequest::default();
    request.replica_id = BrokerId(-1);
    request.isolation_level = isolation;
    request.topics = vec![topic];
    let r: ListOffsetsResponse = call(broker, ApiKey::ListOffsets, 7, &request);
    r.topics[0].partitions[0].offset
}

#[test]
fn a_transactional_producer_commits_and_aborts_as_kafka_clients_expect() {
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path());
    let r = init(&broker, 4);
    assert_eq!((r.error_code, r.producer_epoch), (0, 0));
    let pid = r.producer_id.0;
    assert_eq!(add_partition(&broker, pid, 0), 0);
    assert_eq!(produce(&broker, pid, 0, 0, &["a", "b"]), 0);
    // Open: a read_committed reader stops before it, a read_uncommitted one sees it.
    let committed = fetch(&broker, 0, 1);
    assert_eq!(
        (committed.high_watermark, committed.last_stable_offset),
        (2, 0)
    );
    assert_eq!(values(&committed), Vec::<String>::new());
    assert_eq!(committed.aborted_transactions, Some(vec![]));
    let uncommitted = fetch(&broker, 0, 0);
    assert_eq!(values(&uncommitted), ["a", "b"]);
    assert_eq!(uncommitted.aborted_transactions, None);
    assert_eq!((latest(&broker, 1), latest(&broker, 0)), (0, 2));
    assert_eq!(end(&broker, pid, 0, true, 3), 0);
    assert_eq!(end(&broker, pid, 0, true, 3), 0, "a retried EndTxn");
    let committed = fetch(&broker, 0, 1);
    assert_eq!(committed.last_stable_offset, 3);
    assert_eq!(values(&committed), ["a", "b"]);
    // An aborted one: told to the read_committed reader, never to the other.
    assert_eq!(add_partition(&broker, pid, 0), 0);
    assert_eq!(produce(&broker, pid, 0, 2, &["x"]), 0);
    assert_eq!(end(&broker, pid, 0, false, 3), 0);
    let committed = fetch(&broker, 3, 1);
    let aborted = committed.aborted_transactions.clone().unwrap();
    assert_eq!(aborted.len(), 1);
    assert_eq!(
        (aborted[0].producer_id.0, aborted[0].first_offset),
        (pid, 3)
    );
    assert_eq!(
        values(&committed),
        ["x"],
        "the client drops it, as Kafka sends it"
    );
    assert_eq!(fetch(&broker, 3, 0).aborted_transactions, None);
    assert_eq!(latest(&broker, 1), 5);
    // Produce outside the transaction: INVALID_TXN_STATE, or from version 11 (KIP-890's
    // TRANSACTION_ABORTABLE) what Kafka answers its newer clients.
    assert_eq!(
        produce(&broker, pid, 0, 3, &["y"]),
        code(ResponseError::InvalidTxnState)
    );
    assert_eq!(
        produce_at(&broker, 11, pid, 0, 3, &["y"]),
        code(ResponseError::TransactionAbortable)
    );
}

#[test]
fn a_second_instance_fences_the_first_with_the_codes_of_each_version() {
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path());
    let first = init(&broker, 4);
    let pid = first.producer_id.0;
    assert_eq!(add_partition(&broker, pid, 0), 0);
    assert_eq!(produce(&broker, pid, 0, 0, &["zombie"]), 0);
    let second = init(&broker, 4);
    assert_eq!((second.producer_id.0, second.producer_epoch), (pid, 1));
    assert_eq!(
        fetch(&broker, 0, 1).last_stable_offset,
        2,
        "aborted by the fencing"
    );
    // A leader answers a fenced epoch as producers expect from it (Kafka's
    // AddPartitionsToTxnManager turns the coordinator's PRODUCER_FENCED into this).
    assert_eq!(
        produce(&broker, pid, 0, 1, &["late"]),
        code(ResponseError::InvalidProducerEpoch)
    );
    assert_eq!(
        end(&broker, pid, 0, true, 3),
        code(ResponseError::ProducerFenced)
    );
    assert_eq!(
        end(&broker, pid, 0, true, 1),
        code(ResponseError::InvalidProducerEpoch)
    );
    assert_eq!(
        add_partition(&broker, pid, 0),
        code(ResponseError::ProducerFenced)
    );
    // KIP-360: the old instance naming its epoch is fenced too.
    let mut request = InitProducerIdRequest::default();
    request.transactional_id = Some(txn_id());
    request.transaction_timeout_ms = 60_000;
    request.producer_id = ProducerId(pid);
    request.producer_epoch = 0;
    let r: InitProducerIdResponse = call(&broker, ApiKey::InitProducerId, 4, &request);
    assert_eq!(r.error_code, code(ResponseError::ProducerFenced));
    let r: InitProducerIdResponse = call(&broker, ApiKey::InitProducerId, 3, &request);
    assert_eq!(r.error_code, code(ResponseError::InvalidProducerEpoch));
    // A timeout over the maximum.
    request.producer_id = ProducerId(-1);
    request.producer_epoch = -1;
    request.transaction_timeout_ms = 900_001;
    let r: InitProducerIdResponse = call(&broker, ApiKey::InitProducerId, 4, &request);
    assert_eq!(r.error_code, code(ResponseError::InvalidTransactionTimeout));
}

#[test]
fn offsets_sent_to_a_transaction_are_unstable_until_it_commits() {
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path());
    let pid = init(&broker, 4).producer_id.0;
    let mut request = AddOffsetsToTxnRequest::default();
    request.transactional_id = txn_id();
    request.producer_id = ProducerId(pid);
    request.group_id = GroupId(s("readers"));
    let r: AddOffsetsToTxnResponse = call(&broker, ApiKey::AddOffsetsToTxn, 3, &request);
    assert_eq!(r.error_code, 0);
    let mut partition = TxnOffsetCommitRequestPartition::default();
    partition.committed_offset = 42;
    partition.committed_leader_epoch = -1;
    let mut topic = TxnOffsetCommitRequestTopic::default();
    topic.name = TopicName(s("orders"));
    topic.partitions = vec![partition];
    let mut commit = TxnOffsetCommitRequest::default();
    commit.transactional_id = txn_id();
    commit.group_id = GroupId(s("readers"));
    commit.producer_id = ProducerId(pid);
    commit.generation_id = -1;
    commit.topics = vec![topic];
    let r: TxnOffsetCommitResponse = call(&broker, ApiKey::TxnOffsetCommit, 3, &commit);
    assert_eq!(r.topics[0].partitions[0].error_code, 0);
    let fetch_offset = |stable: bool| {
        let mut topic = OffsetFetchRequestTopic::default();
        topic.name = TopicName(s("orders"));
        topic.partition_indexes = vec![0];
        let mut request = OffsetFetchRequest::default();
        request.group_id = GroupId(s("readers"));
        request.topics = Some(vec![topic]);
        request.require_stable = stable;
        let r: OffsetFetchResponse = call(&broker, ApiKey::OffsetFetch, 7, &request);
        let p = &r.topics[0].partitions[0];
        (p.error_code, p.committed_offset)
    };
    assert_eq!(
        fetch_offset(true),
        (code(ResponseError::UnstableOffsetCommit), -1)
    );
    assert_eq!(fetch_offset(false), (0, -1));
    assert_eq!(end(&broker, pid, 0, true, 3), 0);
    assert_eq!(fetch_offset(true), (0, 42));
}

#[test]
fn transactions_are_described_and_listed_with_kafkas_state_names() {
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path());
    let pid = init(&broker, 4).producer_id.0;
    assert_eq!(add_partition(&broker, pid, 0), 0);
    let mut request = DescribeTransactionsRequest::default();
    request.transactional_ids = vec![txn_id(), TransactionalId(s("nobody"))];
    let r: DescribeTransactionsResponse = call(&broker, ApiKey::DescribeTransactions, 0, &request);
    let state = &r.transaction_states[0];
    assert_eq!(
        (state.error_code, &*state.transaction_state),
        (0, "Ongoing")
    );
    assert_eq!(
        (state.producer_id.0, state.transaction_timeout_ms),
        (pid, 60_000)
    );
    assert_eq!(state.topics[0].partitions, [0]);
    assert!(state.transaction_start_time_ms > 0);
    assert_eq!(
        r.transaction_states[1].error_code,
        code(ResponseError::TransactionalIdNotFound)
    );
    let list = |states: &[&str], duration: i64| {
        let mut request = ListTransactionsRequest::default();
        request.state_filters = states
            .iter()
            .map(|s| StrBytes::from_string((*s).to_owned()))
            .collect();
        request.duration_filter = duration;
        let r: ListTransactionsResponse = call(&broker, ApiKey::ListTransactions, 1, &request);
        let names: Vec<String> = r
            .transaction_states
            .iter()
            .map(|t| t.transactional_id.to_string())
            .collect();
        let unknown: Vec<String> = r
            .unknown_state_filters
            .iter()
            .map(|s| s.to_string())
            .collect();
        (names, unknown)
    };
    assert_eq!(list(&[], -1), (vec!["app-1".to_owned()], vec![]));
    assert_eq!(
        list(&["Ongoing", "Bogus"], -1),
        (vec!["app-1".to_owned()], vec!["Bogus".to_owned()])
    );
    assert_eq!(list(&["CompleteCommit"], -1).0, Vec::<String>::new());
    assert_eq!(
        list(&[], 3_600_000).0,
        Vec::<String>::new(),
        "open for less than an hour"
    );
}

use kafka_protocol::protocol::StrBytes;
