//! Share groups on the wire (KIP-932): ShareGroupHeartbeat, ShareFetch (share sessions and
//! their epochs, acknowledgements carried on fetches, a long poll; version 2's acquire mode and
//! lock renewal, KIP-1206 and KIP-1222) and ShareAcknowledge, over the engine's share groups
//! (`logd::groups::share`), which own every rule. A share session is (group, member): epoch 0 opens it
//! with the partitions named, each later request must carry the next epoch and adds
//! partitions or forgets them, -1 closes it (acknowledging, fetching nothing). The acquire
//! modes are Kafka 4.4's: batch-optimized (v1's only one, v2's default) takes new records to
//! the end of the batch `max_records` ends in, record-limit never more than `max_records`;
//! the answer holds only the batches with acquired records, as Kafka slices it. READ on the group (GROUP_AUTHORIZATION_FAILED) for all
//! three; a fetch also needs READ on each topic it reads (TOPIC_AUTHORIZATION_FAILED, per
//! partition). An acknowledgement checks no topic: it applies only to records the member was
//! handed, which a fetch it was allowed made.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_protocol::ResponseError;
use kafka_protocol::messages::share_fetch_response::{
    AcquiredRecords, PartitionData, ShareFetchableTopicResponse,
};
use kafka_protocol::messages::share_group_heartbeat_response::{Assignment, TopicPartitions};
use kafka_protocol::messages::{
    DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse, ShareAcknowledgeRequest,
    ShareAcknowledgeResponse, ShareFetchRequest, ShareFetchResponse, ShareGroupDescribeRequest,
    ShareGroupDescribeResponse, ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse, TopicName,
    describe_share_group_offsets_response, share_acknowledge_response,
    share_group_describe_response,
};
use kafka_protocol::protocol::StrBytes;
use logd::groups::share::{AcknowledgeType, AcquireMode};
use logd_protocol::share_versions;
use parking_lot::Mutex;

use crate::acl::{Operation, ResourceType};
use crate::admin::Guard;
use crate::auth::Peer;
use crate::codes;
use crate::engine_codes::for_engine_error;
use crate::observer::BrokerObserver;

/// Records per fetch when the request names no maximum.
const DEFAULT_MAX_RECORDS: usize = 500;

pub(super) fn text(s: impl Into<String>) -> StrBytes {
    StrBytes::from_string(s.into())
}

type Answers = std::collections::BTreeMap<([u8; 16], i32), PartitionData>;

/// The answer for `key`, begun with the leader (this node) if not yet there.
fn partition_data(answers: &mut Answers, node_id: i32, key: ([u8; 16], i32)) -> &mut PartitionData {
    answers.entry(key).or_insert_with(|| {
        let mut d = PartitionData::default();
        d.partition_index = key.1;
        d.current_leader.leader_id = node_id;
        d
    })
}

/// Why a ShareFetch is INVALID_REQUEST as a whole, if it is: an acquire mode Kafka does not
/// define, or a renewing fetch (`is_renew_ack`) that asks for records, which Kafka refuses.
fn refused_fetch(request: &ShareFetchRequest, mode: i8, renews: bool) -> Option<String> {
    if !matches!(
        mode,
        share_versions::BATCH_OPTIMIZED | share_versions::RECORD_LIMIT
    ) {
        return Some(format!("unknown share acquire mode {mode}"));
    }
    let asks = [
        ("maxBytes", request.max_bytes),
        ("minBytes", request.min_bytes),
        ("maxRecords", request.max_records),
        ("maxWaitMs", request.max_wait_ms),
    ];
    let asked: Vec<&str> = asks
        .iter()
        .filter(|(_, v)| *v != 0)
        .map(|(name, _)| *name)
        .collect();
    (renews && !asked.is_empty()).then(|| {
        format!(
            "a renewing ShareFetch must fetch nothing; it sets {}",
            asked.join(", ")
        )
    })
}

/// Share sessions at most, as Kafka's `group.share.max.share.sessions` (its default): one
/// more at epoch 0 is SHARE_SESSION_LIMIT_REACHED. Sessions end at epoch -1 and when their
/// connection closes, so a crashed client holds none for long.
const MAX_SHARE_SESSIONS: usize = 2_000;

/// A share session: the partitions it fetches (topic id, partition), its next epoch, and the
/// connection that opened it (whose close ends it).
#[derive(Debug, Default)]
struct Session {
    partitions: BTreeSet<([u8; 16], i32)>,
    next_epoch: i32,
    connection: u64,
}

/// ShareGroupHeartbeat, ShareFetch and ShareAcknowledge.
#[derive(Debug)]
pub(super) struct ShareApi {
    pub(super) log: logd::Log,
    pub(super) guard: Guard,
    pub(super) node_id: i32,
    sessions: Mutex<HashMap<(String, String), Session>>,
    /// Told how many sessions are open after each change.
    observer: Arc<dyn BrokerObserver>,
}

impl ShareApi {
    /// Topic `name`'s id and partition count (`None` when unknown), and its id as answers
    /// carry it (zeros when unknown).
    pub(super) fn topic_id(&self, name: &str) -> (Option<([u8; 16], u32)>, uuid::Uuid) {
        let id = self.log.topic_id_and_partitions(name).ok();
        (id, uuid::Uuid::from_bytes(id.map_or([0; 16], |(id, _)| id)))
    }

    pub(super) fn new(
        log: logd::Log,
        guard: Guard,
        node_id: i32,
        observer: Arc<dyn BrokerObserver>,
    ) -> ShareApi {
        ShareApi {
            log,
            guard,
            node_id,
            sessions: Mutex::new(HashMap::new()),
            observer,
        }
    }

    /// The group and member a fetch or acknowledgement names, checked in Kafka 4.4's order: a
    /// missing (null) group id is INVALID_REQUEST (an empty one is a group id), a group the caller may not read
    /// GROUP_AUTHORIZATION_FAILED, a member id missing, empty or longer than 36 characters
    /// INVALID_REQUEST. As on Kafka, the broker serving a share-partition does not ask the
    /// coordinator whether the member is in the group: records go to the member id asking,
    /// and back when its session ends.
    fn caller<'r>(
        &self,
        group: Option<&'r kafka_protocol::messages::GroupId>,
        member: Option<&'r StrBytes>,
        peer: &Peer,
    ) -> Result<(&'r str, &'r str), (i16, &'static str)> {
        let Some(group) = group else {
            return Err((codes::INVALID_REQUEST, "Invalid group id in the request."));
        };
        if !self.may_read_group(peer, group) {
            return Err((codes::GROUP_AUTHORIZATION_FAILED, ""));
        }
        let Some(member) = member.filter(|m| !m.is_empty() && m.chars().count() <= 36) else {
            return Err((codes::INVALID_REQUEST, "Invalid member id in the request."));
        };
        Ok((group.0.as_str(), member.as_str()))
    }

    /// The group's `share.record.lock.duration.ms`, as fetches and acknowledgements answer it.
    fn lock_timeout_ms(&self, group: &str) -> i32 {
        i32::try_from(self.log.share_lock_duration_ms(group)).unwrap_or(i32::MAX)
    }

    fn may_read_group(&self, peer: &Peer, group: &str) -> bool {
        self.guard
            .allowed(&peer.caller, Operation::Read, ResourceType::Group, group)
    }

    pub(super) fn share_group_heartbeat(
        &self,
        request: ShareGroupHeartbeatRequest,
        client_id: &str,
        peer: &Peer,
    ) -> ShareGroupHeartbeatResponse {
        let mut response = ShareGroupHeartbeatResponse::default();
        let group = request.group_id.0.as_str();
        if !self.may_read_group(peer, group) {
            response.error_code = codes::GROUP_AUTHORIZATION_FAILED;
            return response;
        }
        let subscribed: Option<Vec<String>> = request
            .subscribed_topic_names
            .map(|names| names.iter().map(|t| t.0.to_string()).collect());
        if let Some(topics) = &subscribed
            && let Some(refused) = topics.iter().find(|t| {
                !self
                    .guard
                    .allowed(&peer.caller, Operation::Describe, ResourceType::Topic, t)
            })
        {
            response.error_code = codes::TOPIC_AUTHORIZATION_FAILED;
            response.error_message = Some(text(format!("Topic {refused} is not authorized.")));
            return response;
        }
        let member = request.member_id.as_str();
        match self.log.share_heartbeat(
            group,
            member,
            request.member_epoch,
            subscribed,
            (client_id, &peer.member_host()),
        ) {
            Ok(beat) => {
                response.member_id = Some(text(member));
                response.member_epoch = beat.member_epoch;
                response.heartbeat_interval_ms =
                    i32::try_from(self.log.share_heartbeat_interval_ms(group)).unwrap_or(5_000);
                response.assignment = beat.assignment.map(|assigned| {
                    let mut assignment = Assignment::default();
                    assignment.topic_partitions = assigned
                        .into_iter()
                        .filter_map(|(topic, partitions)| {
                            let (id, _) = self.log.topic_id_and_partitions(&topic).ok()?;
                            let mut tp = TopicPartitions::default();
                            tp.topic_id = uuid::Uuid::from_bytes(id);
                            tp.partitions = partitions.iter().map(|&p| p as i32).collect();
                            Some(tp)
                        })
                        .collect();
                    assignment
                });
            }
            Err(e) => {
                response.error_code = for_engine_error(&e);
                response.error_message = Some(text(e.to_string()));
            }
        }
        response
    }

    /// ShareGroupDescribe: each group's state, epochs and members with their subscriptions and
    /// assignments; DESCRIBE on the group; a group that is not a share group is
    /// GROUP_ID_NOT_FOUND.
    pub(super) fn share_group_describe(
        &self,
        request: ShareGroupDescribeRequest,
        peer: &Peer,
    ) -> ShareGroupDescribeResponse {
        use share_group_describe_response::{Assignment, DescribedGroup, Member, TopicPartitions};
        let mut response = ShareGroupDescribeResponse::default();
        let known = self.log.share_group_ids();
        for id in request.group_ids {
            let mut group = DescribedGroup::default();
            group.group_id = id.clone();
            group.authorized_operations = i32::MIN;
            let name = id.0.as_str();
            if !self
                .guard
                .allowed(&peer.caller, Operation::Describe, ResourceType::Group, name)
            {
                group.error_code = codes::GROUP_AUTHORIZATION_FAILED;
            } else if !known.iter().any(|k| k == name) {
                group.error_code = codes::GROUP_ID_NOT_FOUND;
                group.error_message = Some(text(format!("Group {name} not found.")));
            } else {
                let (epoch, members) = self.log.share_group_members(name).unwrap_or_default();
                group.group_state = text(if members.is_empty() {
                    "Empty"
                } else {
                    "Stable"
                });
                group.group_epoch = epoch;
                group.assignment_epoch = epoch;
                group.assignor_name = text("simple");
                group.members = members
                    .into_iter()
                    .map(|m| {
                        let mut member = Member::default();
                        member.member_id = text(m.member_id);
                        member.member_epoch = m.member_epoch;
                        member.client_id = text(m.client_id);
                        member.client_host = text(m.client_host);
                        member.subscribed_topic_names = m
                            .subscribed
                            .into_iter()
                            .map(|t| TopicName(text(t)))
                            .collect();
                        let mut assignment = Assignment::default();
                        assignment.topic_partitions = m
                            .assignment
                            .into_iter()
                            .filter_map(|(topic, partitions)| {
                                let (id, _) = self.log.topic_id_and_partitions(&topic).ok()?;
                                let mut tp = TopicPartitions::default();
                                tp.topic_id = uuid::Uuid::from_bytes(id);
                                tp.topic_name = TopicName(text(topic));
                                tp.partitions = partitions.iter().map(|&p| p as i32).collect();
                                Some(tp)
                            })
                            .collect();
                        member.assignment = assignment;
                        member
                    })
                    .collect();
            }
            response.groups.push(group);
        }
        response
    }

    /// DescribeShareGroupOffsets: each share-partition's start offset and (version 1) lag, -1
    /// where the group has not read the partition yet, for the partitions named or, with
    /// none, every one the group has read; DESCRIBE on the group and on each topic.
    pub(super) fn describe_share_group_offsets(
        &self,
        request: DescribeShareGroupOffsetsRequest,
        peer: &Peer,
    ) -> DescribeShareGroupOffsetsResponse {
        use describe_share_group_offsets_response::{
            DescribeShareGroupOffsetsResponseGroup as Group,
            DescribeShareGroupOffsetsResponsePartition as Partition,
            DescribeShareGroupOffsetsResponseTopic as Topic,
        };
        let mut response = DescribeShareGroupOffsetsResponse::default();
        for wanted in request.groups {
            let mut group = Group::default();
            group.group_id = wanted.group_id.clone();
            let name = wanted.group_id.0.as_str();
            if !self
                .guard
                .allowed(&peer.caller, Operation::Describe, ResourceType::Group, name)
            {
                group.error_code = codes::GROUP_AUTHORIZATION_FAILED;
                response.groups.push(group);
                continue;
            }
            // A group that is not a share group (unknown, or classic) has read nothing: Kafka
            // answers it so.
            let starts: std::collections::BTreeMap<(String, u32), _> = self
                .log
                .share_partitions(name)
                .into_iter()
                .map(|p| ((p.topic.clone(), p.partition), p))
                .collect();
            let asked: Vec<(String, Vec<i32>)> = match wanted.topics {
                Some(topics) => topics
                    .into_iter()
                    .map(|t| (t.topic_name.0.to_string(), t.partitions))
                    .collect(),
                None => {
                    let mut all: std::collections::BTreeMap<String, Vec<i32>> = Default::default();
                    for (topic, partition) in starts.keys() {
                        all.entry(topic.clone())
                            .or_default()
                            .push(*partition as i32);
                    }
                    all.into_iter().collect()
                }
            };
            for (topic_name, partitions) in asked {
                let mut topic = Topic::default();
                topic.topic_name = TopicName(text(topic_name.clone()));
                let (id, uuid) = self.topic_id(&topic_name);
                topic.topic_id = uuid;
                let refused = !self.guard.allowed(
                    &peer.caller,
                    Operation::Describe,
                    ResourceType::Topic,
                    &topic_name,
                );
                for index in partitions {
                    let mut p = Partition::default();
                    p.partition_index = index;
                    p.start_offset = -1;
                    if refused {
                        p.error_code = codes::TOPIC_AUTHORIZATION_FAILED;
                    } else if id.is_none_or(|(_, count)| index < 0 || index as u32 >= count) {
                        p.error_code = codes::UNKNOWN_TOPIC_OR_PARTITION;
                    } else if let Some(state) = starts.get(&(topic_name.clone(), index as u32)) {
                        p.start_offset = state.start_offset;
                        // A start past the high watermark (altered there) has no lag: -1,
                        // as Kafka 4.4 answers it.
                        if let Ok(log) = self.log.partition(&topic_name, index as u32) {
                            let lag = state.lag(log.high_watermark().0).unwrap_or(-1);
                            share_versions::set_lag(&mut p, lag);
                        }
                    }
                    topic.partitions.push(p);
                }
                group.topics.push(topic);
            }
            response.groups.push(group);
        }
        response
    }

    /// The session of (`group`, `member`) after a request at `epoch` on `connection` naming
    /// `named` and forgetting `forgotten`: its partitions, or the error code that refuses the
    /// request. As Kafka's `SharePartitionManager::newContext`: epoch 0 opens a session (one
    /// there is replaced; SHARE_SESSION_LIMIT_REACHED past the cache's bound), -1 ends one
    /// (the caller gives its records back), and any other epoch must be the session's next
    /// (SHARE_SESSION_NOT_FOUND without a session, INVALID_SHARE_SESSION_EPOCH otherwise).
    fn session(
        &self,
        (group, member): (&str, &str),
        epoch: i32,
        named: &[([u8; 16], i32)],
        forgotten: &[([u8; 16], i32)],
        connection: u64,
    ) -> Result<BTreeSet<([u8; 16], i32)>, i16> {
        let mut sessions = self.sessions.lock();
        let key = (group.to_owned(), member.to_owned());
        match epoch {
            0 => {
                if !sessions.contains_key(&key) && sessions.len() >= MAX_SHARE_SESSIONS {
                    return Err(ResponseError::ShareSessionLimitReached.code());
                }
                let session = Session {
                    partitions: named.iter().copied().collect(),
                    next_epoch: 1,
                    connection,
                };
                let partitions = session.partitions.clone();
                sessions.insert(key, session);
                self.observer.share_sessions(sessions.len());
                Ok(partitions)
            }
            -1 => {
                let ended = sessions.remove(&key);
                self.observer.share_sessions(sessions.len());
                ended
                    .map(|s| s.partitions)
                    .ok_or(ResponseError::ShareSessionNotFound.code())
            }
            epoch => {
                let Some(session) = sessions.get_mut(&key) else {
                    return Err(ResponseError::ShareSessionNotFound.code());
                };
                if epoch != session.next_epoch {
                    return Err(ResponseError::InvalidShareSessionEpoch.code());
                }
                session.next_epoch = if epoch == i32::MAX { 1 } else { epoch + 1 };
                session.partitions.extend(named.iter().copied());
                for f in forgotten {
                    session.partitions.remove(f);
                }
                Ok(session.partitions.clone())
            }
        }
    }

    /// Applies one partition's acknowledgements: the code and message to answer. RENEW (4) is
    /// a type only in a request that says it `renews` (version 2's `is_renew_ack`), as Kafka
    /// checks it.
    fn acknowledge<'b>(
        &self,
        (group, member): (&str, &str),
        topic: Option<&str>,
        partition: i32,
        batches: impl Iterator<Item = (i64, i64, &'b [i8])>,
        renews: bool,
    ) -> (i16, Option<String>) {
        let Some(topic) = topic else {
            return (codes::UNKNOWN_TOPIC_ID, None);
        };
        let mut converted = Vec::new();
        for (first, last, types) in batches {
            let Some(types) = types
                .iter()
                .map(|&t| AcknowledgeType::from_code(t))
                .collect::<Option<Vec<_>>>()
            else {
                return (
                    codes::INVALID_REQUEST,
                    Some(format!("an acknowledge type of {types:?} is unknown")),
                );
            };
            if !renews && types.contains(&AcknowledgeType::Renew) {
                return (
                    codes::INVALID_REQUEST,
                    Some("a RENEW acknowledgement in a request without is_renew_ack".into()),
                );
            }
            converted.push((first, last, types));
        }
        match self.log.share_acknowledge(
            group,
            member,
            topic,
            partition as u32,
            &converted,
            &Default::default(),
        ) {
            Ok(_) => (0, None),
            Err(e) => (for_engine_error(&e), Some(e.to_string())),
        }
    }

    pub(super) fn share_fetch(
        &self,
        request: ShareFetchRequest,
        peer: &Peer,
    ) -> ShareFetchResponse {
        let mut response = ShareFetchResponse::default();
        let (group, member) =
            match self.caller(request.group_id.as_ref(), request.member_id.as_ref(), peer) {
                Ok(caller) => caller,
                Err((code, message)) => {
                    response.error_code = code;
                    response.error_message = (!message.is_empty()).then(|| text(message));
                    return response;
                }
            };
        let mode = share_versions::acquire_mode(&request);
        let renews = share_versions::fetch_renews(&request);
        if let Some(refused) = refused_fetch(&request, mode, renews) {
            response.error_code = codes::INVALID_REQUEST;
            response.error_message = Some(text(refused));
            return response;
        }
        response.acquisition_lock_timeout_ms = self.lock_timeout_ms(group);
        let named: Vec<([u8; 16], i32)> = request
            .topics
            .iter()
            .flat_map(|t| {
                let id = *t.topic_id.as_bytes();
                t.partitions.iter().map(move |p| (id, p.partition_index))
            })
            .collect();
        let forgotten: Vec<([u8; 16], i32)> = request
            .forgotten_topics_data
            .iter()
            .flat_map(|t| {
                let id = *t.topic_id.as_bytes();
                t.partitions.iter().map(move |&p| (id, p))
            })
            .collect();
        let acknowledges = request.topics.iter().any(|t| {
            t.partitions
                .iter()
                .any(|p| !p.acknowledgement_batches.is_empty())
        });
        if request.share_session_epoch == 0 && acknowledges {
            // Kafka: "Acknowledge data present in Initial Fetch Request"; nothing is applied.
            response.error_code = codes::INVALID_REQUEST;
            response.error_message = Some(text("acknowledgements in a ShareFetch at epoch 0"));
            return response;
        }
        let partitions = match self.session(
            (group, member),
            request.share_session_epoch,
            &named,
            &forgotten,
            peer.connection,
        ) {
            // Each fetch of a session starts at the next partition, as Kafka's round-robin
            // `PartitionRotateStrategy` (by the session epoch), so that under a backlog the
            // last partitions are served as often as the first.
            Ok(partitions) => {
                let mut partitions: Vec<_> = partitions.into_iter().collect();
                if !partitions.is_empty() {
                    let by = request.share_session_epoch.max(0) as usize % partitions.len();
                    partitions.rotate_left(by);
                }
                partitions
            }
            Err(code) => {
                response.error_code = code;
                return response;
            }
        };
        // Answers per partition: (topic id, partition) to its data.
        let mut answers = Answers::new();
        for t in &request.topics {
            let id = *t.topic_id.as_bytes();
            let name = self.log.topic_name_by_id(&id);
            for p in t
                .partitions
                .iter()
                .filter(|p| !p.acknowledgement_batches.is_empty())
            {
                let batches = p.acknowledgement_batches.iter();
                let (code, message) = self.acknowledge(
                    (group, member),
                    name.as_deref(),
                    p.partition_index,
                    batches.map(|b| (b.first_offset, b.last_offset, &b.acknowledge_types[..])),
                    renews,
                );
                let d = partition_data(&mut answers, self.node_id, (id, p.partition_index));
                d.acknowledge_error_code = code;
                d.acknowledge_error_message = message.map(text);
            }
        }
        if request.share_session_epoch == -1 {
            // The session is over: what its member still holds goes back, as Kafka's
            // `releaseSession` does.
            self.release(group, member);
        }
        // A renewing request only acknowledges (KIP-1222): the member is still at work.
        if request.share_session_epoch != -1 && !renews {
            let max_records = usize::try_from(request.max_records)
                .ok()
                .filter(|&n| n > 0)
                .unwrap_or(DEFAULT_MAX_RECORDS);
            let max_bytes = usize::try_from(request.max_bytes).unwrap_or(0).max(1);
            let limit = (max_records, max_bytes);
            let mode = match mode {
                share_versions::RECORD_LIMIT => AcquireMode::RecordLimit,
                _ => AcquireMode::BatchOptimized,
            };
            let deadline =
                Instant::now() + Duration::from_millis(request.max_wait_ms.max(0) as u64);
            loop {
                let seen = self.log.append_count();

                let got = self.fetch_once(group, member, &partitions, limit, mode, peer);
                let any = got
                    .iter()
                    .any(|(_, d)| !d.acquired_records.is_empty() || d.error_code != 0);
                for (key, fetched) in got {
                    let d = partition_data(&mut answers, self.node_id, key);
                    d.error_code = fetched.error_code;
                    d.error_message = fetched.error_message;
                    d.records = fetched.records;
                    d.acquired_records = fetched.acquired_records;
                }
                let now = Instant::now();
                if any || now >= deadline {
                    break;
                }
                // Wake on an append; come back for locks that expire meanwhile too.
                self.log
                    .wait_for_append(seen, (deadline - now).min(Duration::from_millis(200)));
            }
        }
        let mut by_topic: std::collections::BTreeMap<[u8; 16], Vec<PartitionData>> =
            Default::default();
        for ((id, _), d) in answers {
            by_topic.entry(id).or_default().push(d);
        }
        response.responses = by_topic
            .into_iter()
            .map(|(id, partitions)| {
                let mut t = ShareFetchableTopicResponse::default();
                t.topic_id = uuid::Uuid::from_bytes(id);
                t.partitions = partitions;
                t
            })
            .collect();
        response
    }

    /// One look at the session's partitions: what each acquired for the member (only those
    /// with records or an error).
    fn fetch_once(
        &self,
        group: &str,
        member: &str,
        partitions: &[([u8; 16], i32)],
        (max_records, max_bytes): (usize, usize),
        mode: AcquireMode,
        peer: &Peer,
    ) -> Vec<(([u8; 16], i32), PartitionData)> {
        let mut out = Vec::new();
        let mut records_left = max_records;
        let mut bytes_left = max_bytes;
        for &(id, partition) in partitions {
            if records_left == 0 || bytes_left == 0 {
                break;
            }
            let mut d = PartitionData::default();
            d.partition_index = partition;
            let Some(topic) = self.log.topic_name_by_id(&id) else {
                d.error_code = codes::UNKNOWN_TOPIC_ID;
                out.push(((id, partition), d));
                continue;
            };
            if !self
                .guard
                .allowed(&peer.caller, Operation::Read, ResourceType::Topic, &topic)
            {
                d.error_code = codes::TOPIC_AUTHORIZATION_FAILED;
                out.push(((id, partition), d));
                continue;
            }
            match self.log.share_fetch(
                group,
                member,
                &topic,
                partition as u32,
                (records_left, bytes_left),
                mode,
            ) {
                Ok((acquired, _, bytes)) if !acquired.is_empty() => {
                    records_left -= acquired
                        .iter()
                        .map(|r| (r.last_offset - r.first_offset + 1) as usize)
                        .sum::<usize>()
                        .min(records_left);
                    bytes_left = bytes_left.saturating_sub(bytes.len());
                    d.records = Some(bytes);
                    d.acquired_records = acquired
                        .into_iter()
                        .map(|r| {
                            let mut a = AcquiredRecords::default();
                            a.first_offset = r.first_offset;
                            a.last_offset = r.last_offset;
                            a.delivery_count = r.delivery_count as i16;
                            a
                        })
                        .collect();
                    out.push(((id, partition), d));
                }
                Ok(_) => {}
                Err(e) => {
                    d.error_code = for_engine_error(&e);
                    d.error_message = Some(text(e.to_string()));
                    out.push(((id, partition), d));
                }
            }
        }
        out
    }

    pub(super) fn share_acknowledge(
        &self,
        request: ShareAcknowledgeRequest,
        peer: &Peer,
    ) -> ShareAcknowledgeResponse {
        let mut response = ShareAcknowledgeResponse::default();
        let (group, member) =
            match self.caller(request.group_id.as_ref(), request.member_id.as_ref(), peer) {
                Ok(caller) => caller,
                Err((code, message)) => {
                    response.error_code = code;
                    response.error_message = (!message.is_empty()).then(|| text(message));
                    return response;
                }
            };
        if request.share_session_epoch == 0 {
            response.error_code = codes::INVALID_REQUEST;
            response.error_message = Some(text("ShareAcknowledge cannot open a share session"));
            return response;
        }
        let epoch = request.share_session_epoch;
        if let Err(code) = self.session((group, member), epoch, &[], &[], peer.connection) {
            response.error_code = code;
            return response;
        }
        share_versions::set_lock_timeout_ms(&mut response, self.lock_timeout_ms(group));
        let renews = share_versions::acknowledge_renews(&request);
        for t in &request.topics {
            let id = *t.topic_id.as_bytes();
            let name = self.log.topic_name_by_id(&id);
            let mut topic = share_acknowledge_response::ShareAcknowledgeTopicResponse::default();
            topic.topic_id = t.topic_id;
            for p in &t.partitions {
                let batches = p.acknowledgement_batches.iter();
                let (code, message) = self.acknowledge(
                    (group, member),
                    name.as_deref(),
                    p.partition_index,
                    batches.map(|b| (b.first_offset, b.last_offset, &b.acknowledge_types[..])),
                    renews,
                );
                let mut d = share_acknowledge_response::PartitionData::default();
                d.partition_index = p.partition_index;
                d.error_code = code;
                d.error_message = message.map(text);
                d.current_leader.leader_id = self.node_id;
                topic.partitions.push(d);
            }
            response.responses.push(topic);
        }
        if epoch == -1 {
            self.release(group, member);
        }
        response
    }

    /// Gives back every record `member` of `group` holds, its share session over.
    fn release(&self, group: &str, member: &str) {
        if let Err(e) = self.log.share_leave(group, member) {
            tracing::warn!(group, member, error = %e, "giving back a share session's records failed");
        }
    }

    /// Ends the share sessions connection `connection` opened and gives their members'
    /// records back (Kafka's share session cache on a disconnect: a client that crashed
    /// holds nothing past its connection). Their members stay in the group until their
    /// heartbeats stop for `share.session.timeout.ms`.
    pub(super) fn connection_closed(&self, connection: u64) {
        let ended: Vec<(String, String)> = {
            let mut sessions = self.sessions.lock();
            let keys: Vec<_> = sessions
                .iter()
                .filter(|(_, s)| s.connection == connection)
                .map(|(k, _)| k.clone())
                .collect();
            for key in &keys {
                sessions.remove(key);
            }
            if !keys.is_empty() {
                self.observer.share_sessions(sessions.len());
            }
            keys
        };
        for (group, member) in ended {
            self.release(&group, &member);
        }
    }
}
