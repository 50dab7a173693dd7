//! Share groups on the wire, request by request, with Kafka's codes: membership and its
//! epochs, share sessions and their epochs, records acquired by a fetch and acknowledged by the
//! next one or by ShareAcknowledge, and the refusals of acknowledgements a member may not make.

use crate::common::{call, s};
use kafka_protocol::ResponseError;
use kafka_protocol::messages::share_acknowledge_request::{
    AcknowledgePartition, AcknowledgeTopic, AcknowledgementBatch,
};
use kafka_protocol::messages::share_fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::*;
use logd::{Config, Log, TopicConfig};
use logd_kafka::{Broker, BrokerConfig};
use logd_storage::batch::{BatchBuilder, Compression};

fn broker(dir: &std::path::Path) -> (Broker, uuid::Uuid) {
    let log = Log::open(dir, Config::default()).unwrap();
    log.create_topic(
        "jobs",
        TopicConfig {
            partitions: 1,
            ..TopicConfig::default()
        },
    )
    .unwrap();
    let mut batch = BatchBuilder::new(Compression::None);
    for i in 0..5 {
        batch.push(i, None, Some(format!("job-{i}").as_bytes()), &[]);
    }
    log.append("jobs", 0, &mut batch.build(0).unwrap()).unwrap();
    log.alter_group_configs(
        "workers",
        &[("share.auto.offset.reset", Some("earliest"))],
        false,
    )
    .unwrap();
    let (id, _) = log.topic_id_and_partitions("jobs").unwrap();
    (
        Broker::new(log, BrokerConfig::default()),
        uuid::Uuid::from_bytes(id),
    )
}

fn heartbeat(b: &Broker, member: &str, epoch: i32) -> ShareGroupHeartbeatResponse {
    let mut request = ShareGroupHeartbeatRequest::default();
    request.group_id = GroupId(s("workers"));
    request.member_id = s(member);
    request.member_epoch = epoch;
    if epoch == 0 {
        request.subscribed_topic_names = Some(vec![TopicName(s("jobs"))]);
    }
    call(b, ApiKey::ShareGroupHeartbeat, 1, &request)
}

fn fetch(
    b: &Broker,
    member: &str,
    epoch: i32,
    topic: Option<uuid::Uuid>,
    acks: Vec<(i64, i64, Vec<i8>)>,
) -> ShareFetchResponse {
    let mut request = ShareFetchRequest::default();
    request.group_id = Some(GroupId(s("workers")));
    request.member_id = Some(s(member));
    request.share_session_epoch = epoch;
    request.max_records = 100;
    request.max_bytes = 1 << 20;
    if let Some(id) = topic {
        let mut partition = FetchPartition::default();
        partition.acknowledgement_batches = acks
            .into_iter()
            .map(|(first, last, types)| {
                let mut batch = share_fetch_request::AcknowledgementBatch::default();
                batch.first_offset = first;
                batch.last_offset = last;
                batch.acknowledge_types = types;
                batch
            })
            .collect();
        let mut t = FetchTopic::default();
        t.topic_id = id;
        t.partitions = vec![partition];
        request.topics = vec![t];
    }
    call(b, ApiKey::ShareFetch, 1, &request)
}

fn acknowledge(
    b: &Broker,
    member: &str,
    epoch: i32,
    topic: uuid::Uuid,
    (first, last, types): (i64, i64, Vec<i8>),
) -> ShareAcknowledgeResponse {
    let mut batch = AcknowledgementBatch::default();
    batch.first_offset = first;
    batch.last_offset = last;
    batch.acknowledge_types = types;
    let mut partition = AcknowledgePartition::default();
    partition.acknowledgement_batches = vec![batch];
    let mut t = AcknowledgeTopic::default();
    t.topic_id = topic;
    t.partitions = vec![partition];
    let mut request = ShareAcknowledgeRequest::default();
    request.group_id = Some(GroupId(s("workers")));
    request.member_id = Some(s(member));
    request.share_session_epoch = epoch;
    request.topics = vec![t];
    call(b, ApiKey::ShareAcknowledge, 1, &request)
}

#[test]
fn members_join_heartbeat_and_are_fenced_by_epoch() {
    let dir = tempfile::tempdir().unwrap();
    let (b, topic) = broker(dir.path());
    let joined = heartbeat(&b, "a", 0);
    assert_eq!(joined.error_code, 0);
    assert!(joined.member_epoch > 0);
    assert_eq!(joined.heartbeat_interval_ms, 5_000);
    let assignment = joined.assignment.expect("an assignment on joining");
    assert_eq!(assignment.topic_partitions[0].topic_id, topic);
    assert_eq!(assignment.topic_partitions[0].partitions, [0]);
    // The same epoch again: no new assignment.
    let again = heartbeat(&b, "a", joined.member_epoch);
    assert_eq!(
        (again.error_code, again.member_epoch),
        (0, joined.member_epoch)
    );
    assert!(again.assignment.is_none());
    let stale = heartbeat(&b, "a", joined.member_epoch + 7);
    assert_eq!(stale.error_code, ResponseError::FencedMemberEpoch.code());
    assert_eq!(
        heartbeat(&b, "nobody", 3).error_code,
        ResponseError::UnknownMemberId.code()
    );
    assert_eq!(
        heartbeat(&b, "", 0).error_code,
        ResponseError::InvalidRequest.code()
    );
    heartbeat(&b, "b", 0);
    // Described and listed while it has members.
    let described = describe(&b, &["workers", "nothing"]);
    let group = &described.groups[0];
    assert_eq!(
        (group.error_code, group.group_state.as_str()),
        (0, "Stable")
    );
    assert_eq!(group.assignor_name.as_str(), "simple");
    let mut members: Vec<&str> = group.members.iter().map(|m| m.member_id.as_str()).collect();
    members.sort();
    assert_eq!(members, ["a", "b"]);
    let a = group
        .members
        .iter()
        .find(|m| m.member_id.as_str() == "a")
        .unwrap();
    assert_eq!(a.client_id.as_str(), "tester");
    assert_eq!(a.subscribed_topic_names[0].0.as_str(), "jobs");
    assert_eq!(a.assignment.topic_partitions[0].topic_id, topic);
    assert_eq!(
        described.groups[1].error_code,
        ResponseError::GroupIdNotFound.code()
    );
    assert_eq!(listed(&b), [("workers".to_owned(), "Stable".to_owned())]);
    for member in ["a", "b"] {
        let left = heartbeat(&b, member, -1);
        assert_eq!((left.error_code, left.member_epoch), (0, -1));
    }
    assert_eq!(listed(&b), [("workers".to_owned(), "Empty".to_owned())]);
    assert_eq!(
        describe(&b, &["workers"]).groups[0].group_state.as_str(),
        "Empty"
    );
    // An empty share group is deleted as any group is.
    let mut request = DeleteGroupsRequest::default();
    request.groups_names = vec![GroupId(s("workers"))];
    let deleted: DeleteGroupsResponse = call(&b, ApiKey::DeleteGroups, 2, &request);
    assert_eq!(deleted.results[0].error_code, 0);
    assert_eq!(
        describe(&b, &["workers"]).groups[0].error_code,
        ResponseError::GroupIdNotFound.code()
    );
}

fn describe(b: &Broker, groups: &[&str]) -> ShareGroupDescribeResponse {
    let mut request = ShareGroupDescribeRequest::default();
    request.group_ids = groups.iter().map(|g| GroupId(s(g))).collect();
    call(b, ApiKey::ShareGroupDescribe, 1, &request)
}

/// The share groups ListGroups lists (filtered by type), with their states.
fn listed(b: &Broker) -> Vec<(String, String)> {
    let mut request = ListGroupsRequest::default();
    request.types_filter = vec![s("share")];
    let r: ListGroupsResponse = call(b, ApiKey::ListGroups, 5, &request);
    r.groups
        .iter()
        .map(|g| {
            assert_eq!(g.protocol_type.as_str(), "share");
            (g.group_id.0.to_string(), g.group_state.to_string())
        })
        .collect()
}

#[test]
fn sessions_fetch_acknowledge_and_refuse_with_kafkas_codes() {
    let dir = tempfile::tempdir().unwrap();
    let (b, topic) = broker(dir.path());
    heartbeat(&b, "a", 0);
    heartbeat(&b, "b", 0);
    // A session epoch that was never opened.
    assert_eq!(
        fetch(&b, "a", 1, None, vec![]).error_code,
        ResponseError::ShareSessionNotFound.code()
    );
    let first = fetch(&b, "a", 0, Some(topic), vec![]);
    assert_eq!(first.error_code, 0);
    assert_eq!(first.acquisition_lock_timeout_ms, 30_000);
    let p = &first.responses[0].partitions[0];
    assert_eq!(
        (
            p.acquired_records[0].first_offset,
            p.acquired_records[0].last_offset
        ),
        (0, 4)
    );
    assert_eq!(p.acquired_records[0].delivery_count, 1);
    assert!(p.records.as_ref().is_some_and(|r| !r.is_empty()));
    // Epoch 1 next; 5 is refused.
    assert_eq!(
        fetch(&b, "a", 5, None, vec![]).error_code,
        ResponseError::InvalidShareSessionEpoch.code()
    );
    // b holds nothing: its acknowledgement is refused, and changes nothing.
    fetch(&b, "b", 0, Some(topic), vec![]);
    let refused = acknowledge(&b, "b", 1, topic, (0, 1, vec![1]));
    assert_eq!(
        refused.responses[0].partitions[0].error_code,
        ResponseError::InvalidRecordState.code()
    );
    let past = acknowledge(&b, "b", 2, topic, (0, 9, vec![1]));
    assert_eq!(
        past.responses[0].partitions[0].error_code,
        ResponseError::InvalidRequest.code()
    );
    // a accepts 0-1 and releases 2-4 on its next fetch, which takes 2-4 again (count 2).
    let next = fetch(&b, "a", 1, Some(topic), vec![(0, 4, vec![1, 1, 2, 2, 2])]);
    let p = &next.responses[0].partitions[0];
    assert_eq!(p.acknowledge_error_code, 0);
    assert_eq!(
        (
            p.acquired_records[0].first_offset,
            p.acquired_records[0].delivery_count
        ),
        (2, 2)
    );
    // An unknown acknowledge type.
    let unknown = acknowledge(&b, "a", 2, topic, (2, 2, vec![9]));
    assert_eq!(
        unknown.responses[0].partitions[0].error_code,
        ResponseError::InvalidRequest.code()
    );
    // Accepted with ShareAcknowledge; the session closes with -1.
    let done = acknowledge(&b, "a", 3, topic, (2, 4, vec![1]));
    assert_eq!(done.responses[0].partitions[0].error_code, 0);
    let closed = fetch(&b, "a", -1, None, vec![]);
    assert_eq!(closed.error_code, 0);
    assert_eq!(
        fetch(&b, "a", 4, None, vec![]).error_code,
        ResponseError::ShareSessionNotFound.code()
    );
    // Every record accepted: the share-partition starts after them.
    let offsets = share_offsets(&b, "workers", None);
    let partition = &offsets.groups[0].topics[0].partitions[0];
    assert_eq!((partition.error_code, partition.start_offset), (0, 5));
    let named = share_offsets(&b, "workers", Some(vec![0, 7]));
    let partitions = &named.groups[0].topics[0].partitions;
    assert_eq!(partitions[0].start_offset, 5);
    assert_eq!(
        partitions[1].error_code,
        ResponseError::UnknownTopicOrPartition.code()
    );
    // A group that is no share group has read nothing, as Kafka answers.
    let nothing = share_offsets(&b, "nothing", None);
    assert_eq!(nothing.groups[0].error_code, 0);
    assert!(nothing.groups[0].topics.is_empty());
}

/// The records `response` acquired: (first, last, delivery count) of each range.
fn acquired(response: &ShareFetchResponse) -> Vec<(i64, i64, i16)> {
    response
        .responses
        .iter()
        .flat_map(|t| &t.partitions)
        .flat_map(|p| &p.acquired_records)
        .map(|r| (r.first_offset, r.last_offset, r.delivery_count))
        .collect()
}

#[test]
fn a_session_that_ends_gives_its_records_back_and_bad_epochs_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (b, topic) = broker(dir.path());
    heartbeat(&b, "a", 0);
    // Closing a session that is not there, as Kafka: SHARE_SESSION_NOT_FOUND.
    assert_eq!(
        fetch(&b, "a", -1, None, vec![]).error_code,
        ResponseError::ShareSessionNotFound.code()
    );
    // Acknowledgements in the request that opens a session: INVALID_REQUEST, nothing fetched
    // nor opened.
    let refused = fetch(&b, "a", 0, Some(topic), vec![(0, 0, vec![1])]);
    assert_eq!(refused.error_code, ResponseError::InvalidRequest.code());
    assert!(acquired(&refused).is_empty());
    assert_eq!(
        fetch(&b, "a", 1, None, vec![]).error_code,
        ResponseError::ShareSessionNotFound.code()
    );
    assert_eq!(
        acquired(&fetch(&b, "a", 0, Some(topic), vec![])),
        [(0, 4, 1)]
    );
    // The session ends with -1 (accepting 0): the rest is given back at once.
    let closed = fetch(&b, "a", -1, Some(topic), vec![(0, 0, vec![1])]);
    assert_eq!(closed.error_code, 0);
    assert_eq!(
        acquired(&fetch(&b, "a", 0, Some(topic), vec![])),
        [(1, 4, 2)]
    );
    // So does ShareAcknowledge at -1, and its session is gone after it.
    let done = acknowledge(&b, "a", -1, topic, (1, 1, vec![1]));
    assert_eq!(done.responses[0].partitions[0].error_code, 0);
    assert_eq!(
        acknowledge(&b, "a", 2, topic, (2, 2, vec![1])).error_code,
        ResponseError::ShareSessionNotFound.code()
    );
    assert_eq!(
        acquired(&fetch(&b, "a", 0, Some(topic), vec![])),
        [(2, 4, 3)]
    );
    // An epoch 0 over a session replaces it and keeps what it holds (Kafka removes the
    // session without releasing): nothing new to take.
    assert!(acquired(&fetch(&b, "a", 0, Some(topic), vec![])).is_empty());
}

#[test]
fn the_share_session_cache_is_bounded_as_kafkas_default() {
    let dir = tempfile::tempdir().unwrap();
    let (b, _) = broker(dir.path());
    // Kafka's group.share.max.share.sessions defaults to 2,000.
    for i in 0..2_000 {
        assert_eq!(fetch(&b, &format!("m{i}"), 0, None, vec![]).error_code, 0);
    }
    assert_eq!(
        fetch(&b, "one-more", 0, None, vec![]).error_code,
        ResponseError::ShareSessionLimitReached.code()
    );
    // A session there may open again; one that ends makes room.
    assert_eq!(fetch(&b, "m7", 0, None, vec![]).error_code, 0);
    assert_eq!(fetch(&b, "m8", -1, None, vec![]).error_code, 0);
    assert_eq!(fetch(&b, "one-more", 0, None, vec![]).error_code, 0);
}

#[test]
fn each_fetch_of_a_session_starts_at_the_next_partition_so_none_starves() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path(), Config::default()).unwrap();
    let three = TopicConfig {
        partitions: 3,
        ..TopicConfig::default()
    };
    log.create_topic("backlog", three).unwrap();
    // Batches of one record, so a fetch's limit of 10 takes 10 (batch-optimized fetches
    // take whole batches).
    for partition in 0..3 {
        for i in 0..100 {
            let mut batch = BatchBuilder::new(Compression::None);
            batch.push(i, None, Some(b"work"), &[]);
            log.append("backlog", partition, &mut batch.build(0).unwrap())
                .unwrap();
        }
    }
    let earliest = [("share.auto.offset.reset", Some("earliest"))];
    log.alter_group_configs("workers", &earliest, false)
        .unwrap();
    let (id, _) = log.topic_id_and_partitions("backlog").unwrap();
    let b = Broker::new(log, BrokerConfig::default());
    let mut topic = FetchTopic::default();
    topic.topic_id = uuid::Uuid::from_bytes(id);
    topic.partitions = (0..3)
        .map(|index| {
            let mut p = FetchPartition::default();
            p.partition_index = index;
            p
        })
        .collect();
    // A backlog everywhere, and room for 10 records a fetch: each fetch serves the partition
    // after the last one's first.
    let mut served = Vec::new();
    for epoch in 0..6 {
        let mut request = ShareFetchRequest::default();
        request.group_id = Some(GroupId(s("workers")));
        request.member_id = Some(s("a"));
        request.share_session_epoch = epoch;
        request.max_records = 10;
        request.max_bytes = 1 << 20;
        if epoch == 0 {
            request.topics = vec![topic.clone()];
        }
        let response: ShareFetchResponse = call(&b, ApiKey::ShareFetch, 1, &request);
        assert_eq!(response.error_code, 0);
        let first = response.responses[0]
            .partitions
            .iter()
            .find(|p| !p.acquired_records.is_empty())
            .map(|p| p.partition_index);
        served.push(first.unwrap());
    }
    assert_eq!(served, [0, 1, 2, 0, 1, 2]);
}

fn alter_offsets(
    b: &Broker,
    group: &str,
    partition: i32,
    offset: i64,
) -> AlterShareGroupOffsetsResponse {
    use alter_share_group_offsets_request::*;
    let mut p = AlterShareGroupOffsetsRequestPartition::default();
    p.partition_index = partition;
    p.start_offset = offset;
    let mut topic = AlterShareGroupOffsetsRequestTopic::default();
    topic.topic_name = TopicName(s("jobs"));
    topic.partitions = vec![p];
    let mut request = AlterShareGroupOffsetsRequest::default();
    request.group_id = GroupId(s(group));
    request.topics = vec![topic];
    call(b, ApiKey::AlterShareGroupOffsets, 0, &request)
}

fn delete_offsets(b: &Broker, group: &str, topic: &str) -> DeleteShareGroupOffsetsResponse {
    use delete_share_group_offsets_request::*;
    let mut t = DeleteShareGroupOffsetsRequestTopic::default();
    t.topic_name = TopicName(s(topic));
    let mut request = DeleteShareGroupOffsetsRequest::default();
    request.group_id = GroupId(s(group));
    request.topics = vec![t];
    call(b, ApiKey::DeleteShareGroupOffsets, 0, &request)
}

#[test]
fn share_offsets_are_set_and_forgotten_with_kafkas_codes() {
    let dir = tempfile::tempdir().unwrap();
    let (b, topic) = broker(dir.path());
    // An unknown group becomes an empty share group starting where it is told.
    let altered = alter_offsets(&b, "workers", 0, 3);
    assert_eq!(
        (
            altered.error_code,
            altered.responses[0].partitions[0].error_code
        ),
        (0, 0)
    );
    assert_eq!(altered.responses[0].topic_id, topic);
    assert_eq!(listed(&b), [("workers".to_owned(), "Empty".to_owned())]);
    let bad = alter_offsets(&b, "workers", 9, 0);
    assert_eq!(
        bad.responses[0].partitions[0].error_code,
        ResponseError::UnknownTopicOrPartition.code()
    );
    // A member reads from there, and while it is in the group nothing is changed.
    heartbeat(&b, "a", 0);
    let got = fetch(&b, "a", 0, Some(topic), vec![]);
    let acquired = &got.responses[0].partitions[0].acquired_records;
    assert_eq!(acquired[0].first_offset, 3);
    assert_eq!(
        alter_offsets(&b, "workers", 0, 0).error_code,
        ResponseError::NonEmptyGroup.code()
    );
    assert_eq!(
        delete_offsets(&b, "workers", "jobs").error_code,
        ResponseError::NonEmptyGroup.code()
    );
    heartbeat(&b, "a", -1);
    // Moved back once it left: records 0.. come again, those it held dropped.
    assert_eq!(alter_offsets(&b, "workers", 0, 0).error_code, 0);
    let offsets = share_offsets(&b, "workers", None);
    assert_eq!(offsets.groups[0].topics[0].partitions[0].start_offset, 0);
    // Deleted: the group keeps nothing for the topic; twice is Kafka's "no offset information".
    let deleted = delete_offsets(&b, "workers", "jobs");
    assert_eq!(
        (deleted.error_code, deleted.responses[0].error_code),
        (0, 0)
    );
    assert!(
        share_offsets(&b, "workers", None).groups[0]
            .topics
            .is_empty()
    );
    let again = delete_offsets(&b, "workers", "jobs");
    assert_eq!(
        (
            again.responses[0].error_code,
            again.responses[0].error_message.as_deref()
        ),
        (
            ResponseError::UnknownTopicOrPartition.code(),
            Some("There is no offset information to delete.")
        )
    );
    assert_eq!(
        delete_offsets(&b, "workers", "none").responses[0].error_code,
        ResponseError::UnknownTopicOrPartition.code()
    );
    let unknown = delete_offsets(&b, "nobody", "jobs");
    assert_eq!(
        (unknown.error_code, unknown.error_message.as_deref()),
        (
            ResponseError::GroupIdNotFound.code(),
            Some("Group nobody not found.")
        )
    );
    // A classic group is not a share group.
    let mut commit = OffsetCommitRequest::default();
    commit.group_id = GroupId(s("classic"));
    commit.generation_id_or_member_epoch = -1;
    let mut partition = offset_commit_request::OffsetCommitRequestPartition::default();
    partition.committed_offset = 1;
    let mut t = offset_commit_request::OffsetCommitRequestTopic::default();
    t.name = TopicName(s("jobs"));
    t.partitions = vec![partition];
    commit.topics = vec![t];
    let _: OffsetCommitResponse = call(&b, ApiKey::OffsetCommit, 8, &commit);
    let classic = alter_offsets(&b, "classic", 0, 0);
    assert_eq!(
        (classic.error_code, classic.error_message.as_deref()),
        (
            ResponseError::GroupIdNotFound.code(),
            Some("Group classic is not a share group.")
        )
    );
}

fn share_offsets(
    b: &Broker,
    group: &str,
    partitions: Option<Vec<i32>>,
) -> DescribeShareGroupOffsetsResponse {
    use describe_share_group_offsets_request::*;
    let mut g = DescribeShareGroupOffsetsRequestGroup::default();
    g.group_id = GroupId(s(group));
    g.topics = partitions.map(|partitions| {
        let mut t = DescribeShareGroupOffsetsRequestTopic::default();
        t.topic_name = TopicName(s("jobs"));
        t.partitions = partitions;
        vec![t]
    });
    let mut request = DescribeShareGroupOffsetsRequest::default();
    request.groups = vec![g];
    call(b, ApiKey::DescribeShareGroupOffsets, 0, &request)
}

#[test]
fn embedded_share_consumers_and_wire_members_are_one_group() {
    use logd::groups::share::{ShareConsumer, ShareConsumerConfig};
    let dir = tempfile::tempdir().unwrap();
    let (b, _) = broker(dir.path());
    let mut embedded = ShareConsumer::new(
        b.log(),
        ShareConsumerConfig {
            group_id: "workers".into(),
            max_poll_records: 2,
            ..ShareConsumerConfig::default()
        },
    );
    embedded.subscribe(vec!["jobs".into()]).unwrap();
    assert_eq!(embedded.poll(std::time::Duration::ZERO).unwrap().len(), 2);
    let joined = heartbeat(&b, "wire", 0);
    assert_eq!(joined.error_code, 0);
    let described = describe(&b, &["workers"]);
    let mut members: Vec<(&str, &str)> = described.groups[0]
        .members
        .iter()
        .map(|m| (m.client_id.as_str(), m.member_id.as_str()))
        .collect();
    members.sort();
    assert_eq!(
        members,
        [("logd-embedded", embedded.member_id()), ("tester", "wire")]
    );
    // The group has members: its offsets stay put, whichever kind they are.
    heartbeat(&b, "wire", -1);
    assert_eq!(
        alter_offsets(&b, "workers", 0, 0).error_code,
        ResponseError::NonEmptyGroup.code()
    );
    embedded.close().unwrap();
    assert_eq!(alter_offsets(&b, "workers", 0, 0).error_code, 0);
}
