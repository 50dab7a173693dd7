//! [`AsyncClient`]'s transaction calls, for `logd transactions`, against logd or a Kafka
//! cluster: list (every broker asked, as Kafka's admin client does), describe (each broker
//! until the id's coordinator answers), and the abort of a hanging transaction, as Kafka's
//! admin `abortTransaction` does it: DescribeProducers at the partition's leader finds the
//! producer whose transaction starts at the offset given, and WriteTxnMarkers there aborts it.

use kafka_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use kafka_protocol::messages::{
    ApiKey, DescribeTransactionsRequest, DescribeTransactionsResponse, ListTransactionsRequest,
    ListTransactionsResponse, ProducerId, TopicName, TransactionalId, WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
};
use kafka_protocol::protocol::StrBytes;
use logd_protocol::codes;

use crate::client::AsyncClient;
use crate::error::{Error, Result};
use crate::routing::Route;

const LIST_TRANSACTIONS: i16 = 0;
const DESCRIBE_TRANSACTIONS: i16 = 0;
const WRITE_TXN_MARKERS: i16 = 1;

/// A transactional id as ListTransactions and DescribeTransactions report it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionInfo {
    /// The transactional id.
    pub transactional_id: String,
    /// Its producer id.
    pub producer_id: i64,
    /// Its epoch (-1 from a listing).
    pub epoch: i16,
    /// Kafka's state name (`Empty`, `Ongoing`, `PrepareCommit`, `CompleteAbort`, ...).
    pub state: String,
    /// Its transaction timeout (ms; -1 from a listing).
    pub timeout_ms: i32,
    /// When its open transaction began (ms), -1 when none is open or from a listing.
    pub start_ms: i64,
    /// The partitions in its open transaction (none from a listing).
    pub partitions: Vec<(String, i32)>,
}

impl AsyncClient {
    /// Every transactional id the cluster's coordinators know, by id.
    pub async fn list_transactions(&mut self) -> Result<Vec<TransactionInfo>> {
        let mut found = Vec::new();
        for broker in self.wire.every_broker().await? {
            let route = broker.map_or(Route::Any, Route::Broker);
            let response: ListTransactionsResponse = self
                .wire
                .call_to(
                    route,
                    ApiKey::ListTransactions,
                    LIST_TRANSACTIONS,
                    &ListTransactionsRequest::default(),
                )
                .await?;
            if response.error_code != 0 {
                return Err(Error::Kafka {
                    what: "listing transactions".into(),
                    code: response.error_code,
                });
            }
            found.extend(
                response
                    .transaction_states
                    .into_iter()
                    .map(|t| TransactionInfo {
                        transactional_id: t.transactional_id.to_string(),
                        producer_id: t.producer_id.0,
                        epoch: -1,
                        state: t.transaction_state.to_string(),
                        timeout_ms: -1,
                        start_ms: -1,
                        partitions: Vec::new(),
                    }),
            );
        }
        found.sort_by(|a, b| a.transactional_id.cmp(&b.transactional_id));
        Ok(found)
    }

    /// `transactional_id`'s state and open transaction, from its coordinator (each broker is
    /// asked until one is not answering NOT_COORDINATOR).
    pub async fn describe_transaction(
        &mut self,
        transactional_id: &str,
    ) -> Result<TransactionInfo> {
        let mut request = DescribeTransactionsRequest::default();
        request.transactional_ids = vec![TransactionalId(StrBytes::from_string(
            transactional_id.to_owned(),
        ))];
        let mut last = codes::NOT_COORDINATOR;
        for broker in self.wire.every_broker().await? {
            let route = broker.map_or(Route::Any, Route::Broker);
            let response: DescribeTransactionsResponse = self
                .wire
                .call_to(
                    route,
                    ApiKey::DescribeTransactions,
                    DESCRIBE_TRANSACTIONS,
                    &request,
                )
                .await?;
            let Some(t) = response.transaction_states.into_iter().next() else {
                continue;
            };
            last = t.error_code;
            if t.error_code == codes::NOT_COORDINATOR {
                continue;
            }
            if t.error_code != 0 {
                break;
            }
            let mut partitions: Vec<(String, i32)> = t
                .topics
                .iter()
                .flat_map(|d| d.partitions.iter().map(|p| (d.topic.to_string(), *p)))
                .collect();
            partitions.sort();
            return Ok(TransactionInfo {
                transactional_id: t.transactional_id.to_string(),
                producer_id: t.producer_id.0,
                epoch: t.producer_epoch,
                state: t.transaction_state.to_string(),
                timeout_ms: t.transaction_timeout_ms,
                start_ms: t.transaction_start_time_ms,
                partitions,
            });
        }
        Err(Error::Kafka {
            what: format!("transactional id {transactional_id}"),
            code: last,
        })
    }

    /// Aborts the transaction open in `topic`'s `partition` since `start_offset` (a hanging
    /// one: its producer is gone), writing an abort marker at its producer's epoch. Returns
    /// the producer id.
    pub async fn abort_transaction(
        &mut self,
        topic: &str,
        partition: i32,
        start_offset: i64,
    ) -> Result<i64> {
        let producer = self
            .producers(topic)
            .await?
            .into_iter()
            .find(|p| p.partition == partition && p.txn_start_offset == start_offset)
            .ok_or_else(|| Error::Kafka {
                what: format!(
                    "no transaction in {topic}-{partition} starts at offset {start_offset}"
                ),
                code: codes::INVALID_REQUEST,
            })?;
        let mut target = WritableTxnMarkerTopic::default();
        target.name = TopicName(StrBytes::from_string(topic.to_owned()));
        target.partition_indexes = vec![partition];
        let mut marker = WritableTxnMarker::default();
        marker.producer_id = ProducerId(producer.producer_id);
        marker.producer_epoch = i16::try_from(producer.epoch).unwrap_or(i16::MAX);
        marker.coordinator_epoch = producer.coordinator_epoch;
        marker.transaction_result = false;
        marker.topics = vec![target];
        let mut request = WriteTxnMarkersRequest::default();
        request.markers = vec![marker];
        let response: WriteTxnMarkersResponse = self
            .wire
            .call_to(
                Route::Leader(topic, partition),
                ApiKey::WriteTxnMarkers,
                WRITE_TXN_MARKERS,
                &request,
            )
            .await?;
        let code = response
            .markers
            .iter()
            .flat_map(|m| &m.topics)
            .flat_map(|t| &t.partitions)
            .map(|p| p.error_code)
            .find(|c| *c != 0)
            .unwrap_or(0);
        match code {
            0 => Ok(producer.producer_id),
            code => Err(Error::Kafka {
                what: format!("aborting the transaction in {topic}-{partition}"),
                code,
            }),
        }
    }
}
