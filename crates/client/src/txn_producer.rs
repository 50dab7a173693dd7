//! [`AsyncClient`] as a transactional producer (Kafka's transactions, version 1: KIP-98 and
//! KIP-447), for callers that write raw batches, such as the remote retry worker's exactly-once
//! hops: InitProducerId with a transactional id at its coordinator (which fences an earlier
//! instance with the same id and aborts what it left open), then per transaction
//! AddPartitionsToTxn before a partition's first batch, Produce with the transactional id,
//! AddOffsetsToTxn and TxnOffsetCommit for a group's offsets, and EndTxn. It works against
//! logd and against a Kafka cluster (each request goes to the broker that must answer it).
//!
//! A coordinator still finishing the previous transaction answers CONCURRENT_TRANSACTIONS;
//! that is retried, as Kafka's producers retry it. Any other failure inside a transaction
//! leaves it to the caller to end it with [`AsyncClient::end_transaction`] (abort), or to start
//! over with [`AsyncClient::init_transactions`], which aborts it.

use std::collections::{BTreeSet, HashMap};

use kafka_protocol::ResponseError;
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse, ApiKey, EndTxnRequest, EndTxnResponse, GroupId,
    InitProducerIdRequest, InitProducerIdResponse, ProducerId, TopicName, TransactionalId,
    TxnOffsetCommitRequest, TxnOffsetCommitResponse,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use logd_storage::batch::BatchHeader;

use crate::client::AsyncClient;
use crate::error::{Error, Result};
use crate::routing::{Retry, Route};

const INIT_PRODUCER_ID: i16 = 3;
const ADD_PARTITIONS_TO_TXN: i16 = 3;
const ADD_OFFSETS_TO_TXN: i16 = 3;
const TXN_OFFSET_COMMIT: i16 = 3;
const END_TXN: i16 = 3;

/// One transactional producer's identity and its open transaction.
#[derive(Debug, Clone)]
pub struct TransactionalProducer {
    id: String,
    producer_id: i64,
    epoch: i16,
    /// Next sequence per partition, under this epoch.
    sequences: HashMap<(String, i32), i32>,
    /// Partitions in the open transaction.
    partitions: BTreeSet<(String, i32)>,
    /// Groups whose offsets the open transaction carries.
    groups: BTreeSet<String>,
}

impl TransactionalProducer {
    /// The transactional id.
    pub fn transactional_id(&self) -> &str {
        &self.id
    }

    /// Producer id and epoch, for stamping a batch.
    pub fn producer(&self) -> (i64, i16) {
        (self.producer_id, self.epoch)
    }

    /// The sequence the next batch to `topic`/`partition` starts at.
    pub fn next_sequence(&self, topic: &str, partition: i32) -> i32 {
        self.sequences
            .get(&(topic.to_owned(), partition))
            .copied()
            .unwrap_or(0)
    }

    /// Whether a transaction is open (a partition or a group was added to it).
    pub fn in_transaction(&self) -> bool {
        !self.partitions.is_empty() || !self.groups.is_empty()
    }

    fn id(&self) -> TransactionalId {
        TransactionalId(StrBytes::from_string(self.id.clone()))
    }
}

/// `Ok` for code 0, else the error naming `what`.
fn check(code: i16, what: impl FnOnce() -> String) -> Result<()> {
    match code {
        0 => Ok(()),
        code => Err(Error::Kafka { what: what(), code }),
    }
}

impl AsyncClient {
    /// Starts producing as transactional id `id` with transactions of at most `timeout_ms`:
    /// a new epoch of its producer id, which fences any earlier instance and aborts the
    /// transaction it left open.
    pub async fn init_transactions(
        &mut self,
        id: &str,
        timeout_ms: i32,
    ) -> Result<TransactionalProducer> {
        let mut request = InitProducerIdRequest::default();
        request.transactional_id = Some(TransactionalId(StrBytes::from_string(id.to_owned())));
        request.transaction_timeout_ms = timeout_ms;
        let response: InitProducerIdResponse = self
            .txn_call(
                Route::TxnCoordinator(id),
                ApiKey::InitProducerId,
                INIT_PRODUCER_ID,
                &request,
                |r: &InitProducerIdResponse| r.error_code,
            )
            .await?;
        check(response.error_code, || format!("transactional id {id}"))?;
        Ok(TransactionalProducer {
            id: id.to_owned(),
            producer_id: response.producer_id.0,
            epoch: response.producer_epoch,
            sequences: HashMap::new(),
            partitions: BTreeSet::new(),
            groups: BTreeSet::new(),
        })
    }

    /// Appends `batch` (stamped with [`TransactionalProducer::producer`] and the partition's
    /// [`TransactionalProducer::next_sequence`], transactional) inside `producer`'s
    /// transaction, opening one if none is; returns its offset.
    pub async fn send_in_transaction(
        &mut self,
        producer: &mut TransactionalProducer,
        topic: &str,
        partition: i32,
        batch: Vec<u8>,
    ) -> Result<i64> {
        let records = BatchHeader::parse(&batch, 0)?.last_offset_delta + 1;
        let key = (topic.to_owned(), partition);
        if !producer.partitions.contains(&key) {
            let mut t = AddPartitionsToTxnTopic::default();
            t.name = TopicName(StrBytes::from_string(topic.to_owned()));
            t.partitions = vec![partition];
            let mut request = AddPartitionsToTxnRequest::default();
            request.v3_and_below_transactional_id = producer.id();
            request.v3_and_below_producer_id = ProducerId(producer.producer_id);
            request.v3_and_below_producer_epoch = producer.epoch;
            request.v3_and_below_topics = vec![t];
            let code_of = |r: &AddPartitionsToTxnResponse| {
                r.results_by_topic_v3_and_below
                    .iter()
                    .flat_map(|t| &t.results_by_partition)
                    .map(|p| p.partition_error_code)
                    .find(|&code| code != 0)
                    .unwrap_or(r.error_code)
            };
            let response = self
                .txn_call(
                    Route::TxnCoordinator(&producer.id),
                    ApiKey::AddPartitionsToTxn,
                    ADD_PARTITIONS_TO_TXN,
                    &request,
                    code_of,
                )
                .await?;
            check(code_of(&response), || {
                format!("adding {topic}-{partition} to a transaction")
            })?;
            producer.partitions.insert(key.clone());
        }
        let offset = self
            .produce_as(Some(&producer.id), topic, partition, batch)
            .await?;
        let next = producer.sequences.entry(key).or_insert(0);
        *next = logd_storage::advance_sequence(*next, records);
        Ok(offset)
    }

    /// Commits `offsets` (topic, partition, next offset to read) for `group` inside
    /// `producer`'s transaction, opening one if none is: they take effect only if it commits.
    pub async fn send_offsets_to_transaction(
        &mut self,
        producer: &mut TransactionalProducer,
        group: &str,
        offsets: &[(String, i32, i64)],
    ) -> Result<()> {
        if !producer.groups.contains(group) {
            let mut request = AddOffsetsToTxnRequest::default();
            request.transactional_id = producer.id();
            request.producer_id = ProducerId(producer.producer_id);
            request.producer_epoch = producer.epoch;
            request.group_id = GroupId(StrBytes::from_string(group.to_owned()));
            let response: AddOffsetsToTxnResponse = self
                .txn_call(
                    Route::TxnCoordinator(&producer.id),
                    ApiKey::AddOffsetsToTxn,
                    ADD_OFFSETS_TO_TXN,
                    &request,
                    |r: &AddOffsetsToTxnResponse| r.error_code,
                )
                .await?;
            check(response.error_code, || {
                format!("adding group {group} to a transaction")
            })?;
            producer.groups.insert(group.to_owned());
        }
        let mut topics: Vec<TxnOffsetCommitRequestTopic> = Vec::new();
        for (topic, partition, offset) in offsets {
            let mut p = TxnOffsetCommitRequestPartition::default();
            p.partition_index = *partition;
            p.committed_offset = *offset;
            p.committed_leader_epoch = -1;
            p.committed_metadata = Some(StrBytes::default());
            match topics.iter_mut().find(|t| t.name.as_str() == topic) {
                Some(t) => t.partitions.push(p),
                None => {
                    let mut t = TxnOffsetCommitRequestTopic::default();
                    t.name = TopicName(StrBytes::from_string(topic.clone()));
                    t.partitions = vec![p];
                    topics.push(t);
                }
            }
        }
        let mut request = TxnOffsetCommitRequest::default();
        request.transactional_id = producer.id();
        request.group_id = GroupId(StrBytes::from_string(group.to_owned()));
        request.producer_id = ProducerId(producer.producer_id);
        request.producer_epoch = producer.epoch;
        // Not a member of the group (an assign() consumer): no generation to fence by; the
        // transactional id fences this writer's earlier instances.
        request.generation_id = -1;
        request.topics = topics;
        let code_of = |r: &TxnOffsetCommitResponse| {
            r.topics
                .iter()
                .flat_map(|t| &t.partitions)
                .map(|p| p.error_code)
                .find(|&code| code != 0)
                .unwrap_or(0)
        };
        let response = self
            .txn_call(
                Route::Coordinator(group),
                ApiKey::TxnOffsetCommit,
                TXN_OFFSET_COMMIT,
                &request,
                code_of,
            )
            .await?;
        check(code_of(&response), || {
            format!("committing group {group}'s offsets in a transaction")
        })
    }

    /// Commits (or with `commit` false aborts) `producer`'s open transaction; nothing to do
    /// when none is open.
    pub async fn end_transaction(
        &mut self,
        producer: &mut TransactionalProducer,
        commit: bool,
    ) -> Result<()> {
        if !producer.in_transaction() {
            return Ok(());
        }
        let mut request = EndTxnRequest::default();
        request.transactional_id = producer.id();
        request.producer_id = ProducerId(producer.producer_id);
        request.producer_epoch = producer.epoch;
        request.committed = commit;
        let response: EndTxnResponse = self
            .txn_call(
                Route::TxnCoordinator(&producer.id),
                ApiKey::EndTxn,
                END_TXN,
                &request,
                |r: &EndTxnResponse| r.error_code,
            )
            .await?;
        check(response.error_code, || {
            let verb = if commit { "committing" } else { "aborting" };
            format!("{verb} transactional id {}'s transaction", producer.id)
        })?;
        producer.partitions.clear();
        producer.groups.clear();
        Ok(())
    }

    /// Sends a transaction request where `route` says, again while the coordinator answers
    /// CONCURRENT_TRANSACTIONS (it is still completing the id's previous transaction).
    async fn txn_call<Req: Encodable, Resp: Decodable>(
        &mut self,
        route: Route<'_>,
        key: ApiKey,
        version: i16,
        request: &Req,
        code_of: impl Fn(&Resp) -> i16,
    ) -> Result<Resp> {
        let busy = ResponseError::ConcurrentTransactions.code();
        let mut retry = Retry::new();
        loop {
            let response = self
                .wire
                .routed(route, key, version, request, &code_of)
                .await?;
            if code_of(&response) == busy && retry.again().await {
                continue;
            }
            return Ok(response);
        }
    }
}
