//! Fetch, v4 to v18: each requested partition read from its fetch offset up to the byte
//! limits (at least one batch per response, KIP-74), long-polling until `min_bytes` arrive or
//! `max_wait_ms` passes. A read_committed fetch (isolation level 1) reads only below the last
//! stable offset and is told the aborted transactions in what it got; a read_uncommitted one
//! reads to the high watermark and is told none (null). Topics are named (v4-12) or identified by their stable id (v13+); a
//! client's leader epoch newer than this node's 0 is refused (UNKNOWN_LEADER_EPOCH). The answer
//! is encoded without copying records (`fetch_response.rs`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_protocol::messages::fetch_response::{
    AbortedTransaction, FetchableTopicResponse, PartitionData,
};
use kafka_protocol::messages::{FetchRequest, FetchResponse};
use logd_storage::Offset;
use logd_storage::batch::BatchHeader;

use super::offsets::LEADER_EPOCH;
use crate::acl::{Operation, ResourceType};
use crate::admin::Guard;
use crate::auth::Peer;
use crate::codes;
use crate::engine_codes;
use crate::observer::BrokerObserver;

/// The first version naming topics by id.
const TOPIC_IDS: i16 = 13;
/// The first version carrying the client's current leader epoch.
const LEADER_EPOCHS: i16 = 9;
/// Isolation level of a read_committed fetch.
const READ_COMMITTED: i8 = 1;

/// What a fetch may read of one requested topic, settled once before a long poll.
enum Access {
    /// The topic of this name.
    Read(String),
    /// Refused by the ACLs.
    Refused,
    /// An id no topic has.
    UnknownId,
}

/// Fetch.
#[derive(Debug)]
pub(super) struct FetchApi {
    pub(super) log: logd::Log,
    pub(super) guard: Guard,
    pub(super) observer: Arc<dyn BrokerObserver>,
}

impl FetchApi {
    /// Long-polls until `min_bytes` are available or `max_wait_ms` passes, woken by appends.
    pub(super) fn fetch(&self, request: &FetchRequest, version: i16, peer: &Peer) -> FetchResponse {
        let deadline = Instant::now() + Duration::from_millis(request.max_wait_ms.max(0) as u64);
        // Asked once, not at each look of a long poll.
        let access = self.access(request, version, peer);
        loop {
            let seen = self.log.append_count();
            let (response, bytes, failed) = self.fetch_once(request, version, &access);
            let now = Instant::now();
            if bytes >= request.min_bytes.max(0) as usize || failed || now >= deadline {
                self.report_fetched(&response, &access);
                return response;
            }
            self.log.wait_for_append(seen, deadline - now);
        }
    }

    /// The answer [`FetchApi::fetch`] gives if it gives it at its first look, without waiting;
    /// `None` if that fetch would wait for appends.
    pub(super) fn fetch_without_waiting(
        &self,
        request: &FetchRequest,
        version: i16,
        peer: &Peer,
    ) -> Option<FetchResponse> {
        let access = self.access(request, version, peer);
        let (response, bytes, failed) = self.fetch_once(request, version, &access);
        let answers = bytes >= request.min_bytes.max(0) as usize || failed;
        if !answers && request.max_wait_ms > 0 {
            return None;
        }
        self.report_fetched(&response, &access);
        Some(response)
    }

    /// What the request may read of each topic it names.
    fn access(&self, request: &FetchRequest, version: i16, peer: &Peer) -> Vec<Access> {
        request
            .topics
            .iter()
            .map(|t| {
                let name = if version >= TOPIC_IDS {
                    match self.log.topic_name_by_id(t.topic_id.as_bytes()) {
                        Some(name) => name,
                        None => return Access::UnknownId,
                    }
                } else {
                    t.topic.0.to_string()
                };
                match self
                    .guard
                    .allowed(&peer.caller, Operation::Read, ResourceType::Topic, &name)
                {
                    true => Access::Read(name),
                    false => Access::Refused,
                }
            })
            .collect()
    }

    /// Tells the observer what a fetch response carries, per topic.
    fn report_fetched(&self, response: &FetchResponse, access: &[Access]) {
        for (topic, access) in response.responses.iter().zip(access) {
            let Access::Read(name) = access else {
                continue;
            };
            let (mut records, mut bytes) = (0u64, 0u64);
            for partition in &topic.partitions {
                let Some(data) = &partition.records else {
                    continue;
                };
                bytes += data.len() as u64;
                records += record_count(data);
            }
            if bytes > 0 {
                self.observer.fetched(name, records, bytes);
            }
        }
    }

    /// One look at the partitions: the response, the record bytes in it, and whether a
    /// partition failed (which answers at once).
    fn fetch_once(
        &self,
        request: &FetchRequest,
        version: i16,
        access: &[Access],
    ) -> (FetchResponse, usize, bool) {
        let mut total = 0usize;
        let mut failed = false;
        let max_total = request.max_bytes.max(0) as usize;
        let mut response = FetchResponse::default();
        for (topic, access) in request.topics.iter().zip(access) {
            let mut topic_response = FetchableTopicResponse::default();
            if version >= TOPIC_IDS {
                topic_response.topic_id = topic.topic_id;
            } else {
                topic_response.topic = topic.topic.clone();
            }
            for requested in &topic.partitions {
                let mut data = PartitionData::default();
                data.partition_index = requested.partition;
                let partition = match access {
                    Access::Refused => Err(codes::TOPIC_AUTHORIZATION_FAILED),
                    Access::UnknownId => Err(codes::UNKNOWN_TOPIC_ID),
                    Access::Read(_)
                        if version >= LEADER_EPOCHS
                            && requested.current_leader_epoch > LEADER_EPOCH =>
                    {
                        Err(codes::UNKNOWN_LEADER_EPOCH)
                    }
                    Access::Read(name) => self
                        .log
                        .partition(name, u32::try_from(requested.partition).unwrap_or(u32::MAX))
                        .map_err(|e| engine_codes::for_engine_error(&e)),
                };
                match partition {
                    Err(code) => {
                        data.error_code = code;
                        data.high_watermark = -1;
                        failed = true;
                    }
                    Ok(log) => {
                        // Asked before the read: the stable offset only grows, so records
                        // cut at this one are stable, and it is at most the high watermark
                        // asked after.
                        let stable = (request.isolation_level == READ_COMMITTED)
                            .then(|| log.last_stable_offset().0);
                        // Up to the partition's and the response's byte limits, and at least
                        // one batch per response even over them (KIP-74): `read` always
                        // returns one whole batch.
                        let room = max_total.saturating_sub(total);
                        if total == 0 || room > 0 {
                            let limit = (requested.partition_max_bytes.max(0) as usize).min(room);
                            let read =
                                log.read(Offset(requested.fetch_offset), limit)
                                    .map(|bytes| match stable {
                                        Some(stable) => below(bytes, stable),
                                        None => bytes,
                                    });
                            match read {
                                // `read` returns at least one whole batch; past the first
                                // partition with data that may not exceed the response's
                                // limit (KIP-74), so it waits for the next fetch.
                                Ok(bytes) if total > 0 && bytes.len() > room => {}
                                Ok(bytes) => {
                                    total += bytes.len();
                                    data.records = Some(bytes);
                                }
                                Err(e) => {
                                    data.error_code = engine_codes::for_engine_error(&e.into());
                                    failed = true;
                                }
                            }
                        }
                        // Looked at after the read, so the answer never carries records past
                        // the high watermark it states (appends go on meanwhile).
                        data.high_watermark = log.high_watermark().0;
                        data.last_stable_offset = log.last_stable_offset().0;
                        // Null for read_uncommitted, as Kafka sends it.
                        data.aborted_transactions = None;
                        if let Some(stable) = stable {
                            data.last_stable_offset = stable;
                            let upper = data
                                .records
                                .as_deref()
                                .and_then(logd_storage::batch::offset_after)
                                .unwrap_or(requested.fetch_offset);
                            data.aborted_transactions =
                                Some(aborted(&log, requested.fetch_offset, upper));
                        }
                        if version >= 5 {
                            data.log_start_offset = log.log_start_offset().0;
                        }
                    }
                }
                if data.records.is_none() {
                    data.records = Some(bytes::Bytes::new());
                }
                topic_response.partitions.push(data);
            }
            response.responses.push(topic_response);
        }
        (response, total, failed)
    }
}

/// The whole batches of `bytes` that start below `stable`.
fn below(bytes: bytes::Bytes, stable: i64) -> bytes::Bytes {
    let mut end = 0;
    while let Ok(header) = BatchHeader::parse(&bytes[end..], end) {
        if header.base_offset >= stable || end + header.total_len() > bytes.len() {
            break;
        }
        end += header.total_len();
    }
    bytes.slice(..end)
}

/// The aborted transactions a read_committed fetch of `from..upper` is told of.
fn aborted(log: &logd::PartitionLog, from: i64, upper: i64) -> Vec<AbortedTransaction> {
    if upper <= from {
        return Vec::new();
    }
    log.aborted_transactions(Offset(from), Offset(upper))
        .into_iter()
        .map(|a| {
            let mut entry = AbortedTransaction::default();
            entry.producer_id = kafka_protocol::messages::ProducerId(a.producer_id);
            entry.first_offset = a.first_offset;
            entry
        })
        .collect()
}

/// Records in stored batches, read from their headers.
fn record_count(mut batches: &[u8]) -> u64 {
    let mut count = 0;
    while let Ok(header) = BatchHeader::parse(batches, 0) {
        count += header.record_count.max(0) as u64;
        let Some(rest) = batches.get(header.total_len()..) else {
            break;
        };
        batches = rest;
    }
    count
}
