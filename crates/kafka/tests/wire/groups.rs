//! The group APIs as a client sees them on the wire, through `Broker::handle_frame` over a real
//! engine: KIP-394 member ids, generations and the codes for stale or unknown members, the
//! leader's assignment relayed, commits during a rebalance, commit metadata round trips,
//! `assign()` commits, static members, describe/list/delete, OffsetDelete, and KIP-848's
//! heartbeat (incremental reassignment, commits by member epoch, Kafka's refusals).

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::Encodable;
use logd::groups::classic::GroupConfig;
use logd::{Config, Log, TopicConfig};
use logd_kafka::{Broker, BrokerConfig};

use crate::common::{call, s};

fn broker(dir: &std::path::Path) -> Broker {
    let config = Config {
        groups: GroupConfig {
            min_session_timeout_ms: 10,
            ..GroupConfig::default()
        },
        ..Config::default()
    };
    let log = Log::open(dir, config).unwrap();
    log.create_topic(
        "orders",
        TopicConfig {
            partitions: 2,
            ..TopicConfig::default()
        },
    )
    .unwrap();
    Broker::new(log, BrokerConfig::default())
}

/// The consumer protocol's subscription bytes for `topics` (version 0).
fn subscription(topics: &[&str]) -> Bytes {
    let mut sub = ConsumerProtocolSubscription::default();
    sub.topics = topics.iter().map(|t| s(t)).collect();
    let mut out = BytesMut::new();
    out.extend_from_slice(&0i16.to_be_bytes());
    sub.encode(&mut out, 0).unwrap();
    out.freeze()
}

fn join_request(member_id: &str, instance: Option<&str>) -> JoinGroupRequest {
    let mut protocol = JoinGroupRequestProtocol::default();
    protocol.name = s("range");
    protocol.metadata = subscription(&["orders"]);
    let mut request = JoinGroupRequest::default();
    request.group_id = GroupId(s("g"));
    request.session_timeout_ms = 10_000;
    request.rebalance_timeout_ms = 1_000;
    request.member_id = s(member_id);
    request.group_instance_id = instance.map(s);
    request.protocol_type = s("consumer");
    request.protocols = vec![protocol];
    request
}

fn join(broker: &Broker, member_id: &str) -> JoinGroupResponse {
    call(broker, ApiKey::JoinGroup, 5, &join_request(member_id, None))
}

/// KIP-394's two joins; returns the joined response.
fn join_new(broker: &Broker) -> JoinGroupResponse {
    let first = join(broker, "");
    assert_eq!(first.error_code, 79, "MEMBER_ID_REQUIRED");
    assert!(
        first.member_id.starts_with("tester-"),
        "{}",
        &*first.member_id
    );
    let joined = join(broker, &first.member_id);
    assert_eq!(joined.error_code, 0);
    joined
}

fn sync(
    broker: &Broker,
    member: &str,
    generation: i32,
    assignments: &[(&str, &[u8])],
) -> SyncGroupResponse {
    let mut request = SyncGroupRequest::default();
    request.group_id = GroupId(s("g"));
    request.generation_id = generation;
    request.member_id = s(member);
    request.assignments = assignments
        .iter()
        .map(|(m, a)| {
            let mut assignment = SyncGroupRequestAssignment::default();
            assignment.member_id = s(m);
            assignment.assignment = Bytes::copy_from_slice(a);
            assignment
        })
        .collect();
    call(broker, ApiKey::SyncGroup, 3, &request)
}

fn heartbeat(broker: &Broker, member: &str, generation: i32) -> i16 {
    let mut request = HeartbeatRequest::default();
    request.group_id = GroupId(s("g"));
    request.generation_id = generation;
    request.member_id = s(member);
    call::<_, HeartbeatResponse>(broker, ApiKey::Heartbeat, 3, &request).error_code
}

/// Commits `offset` with `metadata` on orders-0 and orders-`partition`; the codes per partition.
fn commit(
    broker: &Broker,
    member: &str,
    generation: i32,
    offsets: &[(i32, i64, &str)],
) -> Vec<i16> {
    let mut topic = OffsetCommitRequestTopic::default();
    topic.name = TopicName(s("orders"));
    topic.partitions = offsets
        .iter()
        .map(|(p, o, md)| {
            let mut partition = OffsetCommitRequestPartition::default();
            partition.partition_index = *p;
            partition.committed_offset = *o;
            partition.committed_metadata = Some(s(md));
            partition
        })
        .collect();
    let mut request = OffsetCommitRequest::default();
    request.group_id = GroupId(s("g"));
    request.generation_id_or_member_epoch = generation;
    request.member_id = s(member);
    request.topics = vec![topic];
    let response: OffsetCommitResponse = call(broker, ApiKey::OffsetCommit, 7, &request);
    response.topics[0]
        .partitions
        .iter()
        .map(|p| p.error_code)
        .collect()
}

/// (offset, metadata) committed for orders-`partition`.
fn fetch_offset(broker: &Broker, partition: i32) -> (i64, String) {
    let mut topic = OffsetFetchRequestTopic::default();
    topic.name = TopicName(s("orders"));
    topic.partition_indexes = vec![partition];
    let mut request = OffsetFetchRequest::default();
    request.group_id = GroupId(s("g"));
    request.topics = Some(vec![topic]);
    let response: OffsetFetchResponse = call(broker, ApiKey::OffsetFetch, 5, &request);
    let p = &response.topics[0].partitions[0];
    (
        p.committed_offset,
        p.metadata.as_deref().unwrap_or_default().to_owned(),
    )
}

fn leave(broker: &Broker, member: &str) -> i16 {
    let mut request = LeaveGroupRequest::default();
    request.group_id = GroupId(s("g"));
    request.member_id = s(member);
    call::<_, LeaveGroupResponse>(broker, ApiKey::LeaveGroup, 1, &request).error_code
}

#[test]
fn a_lone_member_joins_syncs_heartbeats_and_stale_calls_get_kafkas_codes() {
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path());
    let joined = join_new(&broker);
    assert_eq!(joined.generation_id, 1);
    assert_eq!(joined.leader, joined.member_id);
    assert_eq!(joined.protocol_name.as_deref(), Some("range"));
    assert_eq!(joined.members.len(), 1);
    assert_eq!(joined.members[0].metadata, subscription(&["orders"]));
    let me = joined.member_id.to_string();

    let synced = sync(&broker, &me, 1, &[(&me, b"all of it")]);
    assert_eq!(synced.error_code, 0);
    assert_eq!(&synced.assignment[..], b"all of it");
    assert_eq!(heartbeat(&broker, &me, 1), 0);
    assert_eq!(heartbeat(&broker, &me, 0), 22, "ILLEGAL_GENERATION");
    assert_eq!(heartbeat(&broker, "ghost", 1), 25, "UNKNOWN_MEMBER_ID");
    assert_eq!(sync(&broker, "ghost", 1, &[]).error_code, 25);
    assert_eq!(
        join(&broker, "made-up").error_code,
        25,
        "an id never handed out"
    );

    let mut bad_timeout = join_request("", None);
    bad_timeout.session_timeout_ms = 1;
    let refused: JoinGroupResponse = call(&broker, ApiKey::JoinGroup, 5, &bad_timeout);
    assert_eq!(refused.error_code, 26, "INVALID_SESSION_TIMEOUT");
    let mut no_group = join_request("", None);
    no_group.group_id = GroupId(s(""));
    let refused: JoinGroupResponse = call(&broker, ApiKey::JoinGroup, 5, &no_group);
    assert_eq!(refused.error_code, 24, "INVALID_GROUP_ID");

    // JoinGroup before v4 gets its member id at once.
    let old: JoinGroupResponse = call(&broker, ApiKey::JoinGroup, 3, &join_request("", None));
    assert_ne!(old.error_code, 79);
}

#[test]
fn commits_follow_the_generation_keep_metadata_and_survive_a_rebalance_being_prepared() {
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path());
    let a = join_new(&broker);
    let a_id = a.member_id.to_string();
    sync(&broker, &a_id, 1, &[(&a_id, b"A")]);

    assert_eq!(
        commit(&broker, &a_id, 1, &[(0, 42, "progress=41"), (1, 7, "")]),
        vec![0, 0]
    );
    assert_eq!(fetch_offset(&broker, 0), (42, "progress=41".to_owned()));
    assert_eq!(
        commit(&broker, &a_id, 0, &[(0, 1, "")]),
        vec![22],
        "stale generation"
    );
    assert_eq!(
        commit(&broker, "", -1, &[(0, 1, "")]),
        vec![25],
        "assign() commits wait for an empty group"
    );
    let huge = "x".repeat(5000);
    assert_eq!(
        commit(&broker, &a_id, 1, &[(0, 43, &huge), (1, 8, "")]),
        vec![12, 0],
        "OFFSET_METADATA_TOO_LARGE"
    );
    assert_eq!(
        fetch_offset(&broker, 0).0,
        42,
        "the oversized one is not stored"
    );
    assert_eq!(
        commit(&broker, &a_id, 1, &[(9, 1, "")]),
        vec![3],
        "no such partition"
    );

    // A second member's join parks until a rejoins; meanwhile a still commits at generation 1.
    std::thread::scope(|scope| {
        let b = scope.spawn(|| join_new(&broker));
        let start = std::time::Instant::now();
        while heartbeat(&broker, &a_id, 1) != 27 {
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "no rebalance started"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(
            commit(&broker, &a_id, 1, &[(0, 50, "")]),
            vec![0],
            "commit while preparing"
        );
        let a2 = join(&broker, &a_id);
        assert_eq!((a2.error_code, a2.generation_id), (0, 2));
        let b = b.join().unwrap();
        assert_eq!(b.generation_id, 2);
        assert!(b.members.is_empty(), "followers get no member list");
        assert_eq!(
            a2.members.len(),
            2,
            "the leader gets everyone's subscription"
        );
    });
    assert_eq!(fetch_offset(&broker, 0).0, 50);
    assert_eq!(fetch_offset(&broker, 1).0, 8);
}

#[test]
fn assign_commits_are_accepted_once_the_group_is_empty() {
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path());
    let a = join_new(&broker);
    assert_eq!(leave(&broker, &a.member_id), 0);
    assert_eq!(leave(&broker, &a.member_id), 25);
    assert_eq!(commit(&broker, "", -1, &[(1, 3, "manual")]), vec![0]);
    assert_eq!(fetch_offset(&broker, 1), (3, "manual".to_owned()));
    assert_eq!(
        fetch_offset(&broker, 0),
        (-1, String::new()),
        "nothing committed: -1"
    );
}

#[test]
fn a_static_member_rejoins_without_a_rebalance_and_its_old_id_is_fenced() {
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path());
    let first: JoinGroupResponse = call(
        &broker,
        ApiKey::JoinGroup,
        5,
        &join_request("", Some("host-1")),
    );
    assert_eq!(
        first.error_code, 0,
        "static members skip KIP-394's round trip"
    );
    let old_id = first.member_id.to_string();
    sync(&broker, &old_id, 1, &[(&old_id, b"P")]);
    let again: JoinGroupResponse = call(
        &broker,
        ApiKey::JoinGroup,
        5,
        &join_request("", Some("host-1")),
    );
    assert_eq!(again.error_code, 0);
    assert_ne!(&*again.member_id, old_id.as_str());
    assert_eq!(again.generation_id, 1, "no rebalance");
    let kept = sync(&broker, &again.member_id, 1, &[]);
    assert_eq!(&kept.assignment[..], b"P", "it keeps its assignment");
    let mut fenced = HeartbeatRequest::default();
    fenced.group_id = GroupId(s("g"));
    fenced.generation_id = again.generation_id;
    fenced.member_id = s(&old_id);
    fenced.group_instance_id = Some(s("host-1"));
    let response: HeartbeatResponse = call(&broker, ApiKey::Heartbeat, 3, &fenced);
    assert_eq!(response.error_code, 82, "FENCED_INSTANCE_ID");
    // Leaving by instance id (LeaveGroup v3).
    let mut identity = MemberIdentity::default();
    identity.group_instance_id = Some(s("host-1"));
    let mut request = LeaveGroupRequest::default();
    request.group_id = GroupId(s("g"));
    request.members = vec![identity];
    let response: LeaveGroupResponse = call(&broker, ApiKey::LeaveGroup, 3, &request);
    assert_eq!(
        (response.error_code, response.members[0].error_code),
        (0, 0)
    );
}

#[test]
fn groups_are_listed_described_deleted_and_their_offsets_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path());
    let a = join_new(&broker);
    let a_id = a.member_id.to_string();
    sync(&broker, &a_id, 1, &[(&a_id, b"A")]);
    commit(&broker, &a_id, 1, &[(0, 5, ""), (1, 6, "")]);

    let listed: ListGroupsResponse = call(
        &broker,
        ApiKey::ListGroups,
        2,
        &ListGroupsRequest::default(),
    );
    assert_eq!(listed.groups.len(), 1);
    assert_eq!(&*listed.groups[0].group_id, "g");

    let mut describe = DescribeGroupsRequest::default();
    describe.groups = vec![GroupId(s("g")), GroupId(s("nobody"))];
    let described: DescribeGroupsResponse = call(&broker, ApiKey::DescribeGroups, 4, &describe);
    let g = &described.groups[0];
    assert_eq!(
        (&*g.group_state, &*g.protocol_type, &*g.protocol_data),
        ("Stable", "consumer", "range")
    );
    assert_eq!(&*g.members[0].client_host, "/10.0.0.9");
    assert_eq!(&*g.members[0].client_id, "tester");
    assert_eq!(&g.members[0].member_assignment[..], b"A");
    assert_eq!(&*described.groups[1].group_state, "Dead");

    // Offsets of a topic the live member subscribes to cannot be deleted.
    let mut partition = OffsetDeleteRequestPartition::default();
    partition.partition_index = 1;
    let mut topic = OffsetDeleteRequestTopic::default();
    topic.name = TopicName(s("orders"));
    topic.partitions = vec![partition];
    let mut offset_delete = OffsetDeleteRequest::default();
    offset_delete.group_id = GroupId(s("g"));
    offset_delete.topics = vec![topic];
    let refused: OffsetDeleteResponse = call(&broker, ApiKey::OffsetDelete, 0, &offset_delete);
    assert_eq!(
        refused.topics[0].partitions[0].error_code, 86,
        "GROUP_SUBSCRIBED_TO_TOPIC"
    );

    let mut delete = DeleteGroupsRequest::default();
    delete.groups_names = vec![GroupId(s("g"))];
    let refused: DeleteGroupsResponse = call(&broker, ApiKey::DeleteGroups, 1, &delete);
    assert_eq!(refused.results[0].error_code, 68, "NON_EMPTY_GROUP");

    leave(&broker, &a_id);
    let deleted: OffsetDeleteResponse = call(&broker, ApiKey::OffsetDelete, 0, &offset_delete);
    assert_eq!(deleted.topics[0].partitions[0].error_code, 0);
    assert_eq!(fetch_offset(&broker, 1).0, -1);
    assert_eq!(fetch_offset(&broker, 0).0, 5, "only the named partition");

    let deleted: DeleteGroupsResponse = call(&broker, ApiKey::DeleteGroups, 1, &delete);
    assert_eq!(deleted.results[0].error_code, 0);
    let again: DeleteGroupsResponse = call(&broker, ApiKey::DeleteGroups, 1, &delete);
    assert_eq!(again.results[0].error_code, 69, "GROUP_ID_NOT_FOUND");
    assert_eq!(fetch_offset(&broker, 0).0, -1);
}

/// A ConsumerGroupHeartbeat (v1) of `member` at `epoch`, subscribing to `orders` when
/// `subscribe`, reporting `owned` partitions of `orders` when given.
fn consumer_beat(
    broker: &Broker,
    member: &str,
    epoch: i32,
    subscribe: bool,
    owned: Option<&[i32]>,
) -> ConsumerGroupHeartbeatResponse {
    let orders = broker.log().topic_id_and_partitions("orders").unwrap().0;
    let mut request = ConsumerGroupHeartbeatRequest::default();
    request.group_id = GroupId(s("kip848"));
    request.member_id = s(member);
    request.member_epoch = epoch;
    request.rebalance_timeout_ms = 30_000;
    if subscribe {
        request.subscribed_topic_names = Some(vec![TopicName(s("orders"))]);
    }
    request.topic_partitions = owned.map(|partitions| {
        let mut tp = consumer_group_heartbeat_request::TopicPartitions::default();
        tp.topic_id = uuid::Uuid::from_bytes(orders);
        tp.partitions = partitions.to_vec();
        // As clients send it: no entry for a topic of which nothing is owned.
        if partitions.is_empty() {
            vec![]
        } else {
            vec![tp]
        }
    });
    call(broker, ApiKey::ConsumerGroupHeartbeat, 1, &request)
}

fn assigned(response: &ConsumerGroupHeartbeatResponse) -> Option<Vec<i32>> {
    response.assignment.as_ref().map(|a| {
        let mut partitions: Vec<i32> = a
            .topic_partitions
            .iter()
            .flat_map(|tp| tp.partitions.clone())
            .collect();
        partitions.sort();
        partitions
    })
}

#[test]
fn kip_848_members_share_partitions_one_owner_at_a_time_and_commit_with_their_epoch() {
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path());
    let a = consumer_beat(&broker, "a", 0, true, Some(&[]));
    assert_eq!(a.error_code, 0, "{:?}", a.error_message);
    assert_eq!(assigned(&a), Some(vec![0, 1]));
    assert_eq!(a.heartbeat_interval_ms, 5_000);
    let b = consumer_beat(&broker, "b", 0, true, Some(&[]));
    assert_eq!(assigned(&b), Some(vec![]), "b waits for what a still owns");
    // a is asked to give one up, and keeps its epoch until it reports it did.
    let asked = consumer_beat(&broker, "a", a.member_epoch, false, Some(&[0, 1]));
    let kept = assigned(&asked).unwrap();
    assert_eq!((asked.member_epoch, kept.len()), (a.member_epoch, 1));
    let a_now = consumer_beat(&broker, "a", a.member_epoch, false, Some(&kept));
    assert!(a_now.member_epoch > a.member_epoch);
    let b_now = consumer_beat(&broker, "b", b.member_epoch, false, Some(&[]));
    let given = assigned(&b_now).unwrap();
    assert_eq!(given.len(), 1);
    assert_ne!(given, kept);

    // A commit carries the member's epoch: an old one is STALE_MEMBER_EPOCH, as is anyone
    // else's commit while the group has members.
    let commit = |member: &str, epoch: i32| -> i16 {
        let mut partition = OffsetCommitRequestPartition::default();
        partition.partition_index = kept[0];
        partition.committed_offset = 1;
        let mut topic = OffsetCommitRequestTopic::default();
        topic.name = TopicName(s("orders"));
        topic.partitions = vec![partition];
        let mut request = OffsetCommitRequest::default();
        request.group_id = GroupId(s("kip848"));
        request.member_id = s(member);
        request.generation_id_or_member_epoch = epoch;
        request.topics = vec![topic];
        let r: OffsetCommitResponse = call(&broker, ApiKey::OffsetCommit, 9, &request);
        r.topics[0].partitions[0].error_code
    };
    assert_eq!(commit("a", a_now.member_epoch), 0);
    assert_eq!(commit("a", a.member_epoch), 113, "STALE_MEMBER_EPOCH");
    // A member reads the group's offsets with its epoch too (OffsetFetch v9); an admin
    // (no member, epoch -1) always may.
    let fetch = |member: Option<&str>, epoch: i32| -> i16 {
        let mut group = offset_fetch_request::OffsetFetchRequestGroup::default();
        group.group_id = GroupId(s("kip848"));
        group.member_id = member.map(s);
        group.member_epoch = epoch;
        let mut request = OffsetFetchRequest::default();
        request.groups = vec![group];
        let r: OffsetFetchResponse = call(&broker, ApiKey::OffsetFetch, 9, &request);
        r.groups[0].error_code
    };
    assert_eq!(fetch(Some("a"), a_now.member_epoch), 0);
    assert_eq!(fetch(Some("a"), a.member_epoch), 113, "STALE_MEMBER_EPOCH");
    assert_eq!(fetch(Some("nobody"), 3), 25, "UNKNOWN_MEMBER_ID");
    assert_eq!(fetch(None, -1), 0);
    assert_eq!(commit("nobody", 1), 25, "UNKNOWN_MEMBER_ID");
    assert_eq!(commit("", -1), 25, "not while the group has members");

    // The group is the consumer protocol's while it has members: a classic join is refused.
    let classic: JoinGroupResponse = call(&broker, ApiKey::JoinGroup, 9, &{
        let mut r = join_request("", None);
        r.group_id = GroupId(s("kip848"));
        r
    });
    assert_eq!(classic.error_code, 23, "INCONSISTENT_GROUP_PROTOCOL");
    let listed: ListGroupsResponse = call(
        &broker,
        ApiKey::ListGroups,
        5,
        &ListGroupsRequest::default(),
    );
    let found = listed
        .groups
        .iter()
        .find(|g| g.group_id.0.as_str() == "kip848")
        .expect("listed");
    assert_eq!(
        (found.group_type.as_str(), found.group_state.as_str()),
        ("consumer", "Stable")
    );

    let mut describe = ConsumerGroupDescribeRequest::default();
    describe.group_ids = vec![GroupId(s("kip848")), GroupId(s("classic"))];
    let described: ConsumerGroupDescribeResponse =
        call(&broker, ApiKey::ConsumerGroupDescribe, 1, &describe);
    let group = &described.groups[0];
    assert_eq!(
        (group.error_code, group.group_state.as_str()),
        (0, "Stable")
    );
    assert_eq!(group.assignor_name.as_str(), "uniform");
    assert_eq!(group.members.len(), 2);
    let owned: Vec<i32> = group
        .members
        .iter()
        .flat_map(|m| m.assignment.topic_partitions.iter())
        .flat_map(|tp| {
            assert_eq!(tp.topic_name.0.as_str(), "orders");
            tp.partitions.clone()
        })
        .collect();
    assert_eq!(owned.len(), 2, "each partition once: {owned:?}");
    assert!(group.members.iter().all(|m| m.member_type == 1));
    assert_eq!(described.groups[1].error_code, 69, "GROUP_ID_NOT_FOUND");

    // Epochs from nowhere are fenced; unknown members are unknown.
    let future = consumer_beat(&broker, "a", a_now.member_epoch + 3, false, Some(&kept));
    assert_eq!(future.error_code, 110, "FENCED_MEMBER_EPOCH");
    assert_eq!(consumer_beat(&broker, "zed", 4, false, None).error_code, 25);
    // Both leave; then anyone may commit again.
    for member in ["a", "b"] {
        let left = consumer_beat(&broker, member, -1, false, None);
        assert_eq!((left.error_code, left.member_epoch), (0, -1));
    }
    assert_eq!(commit("", -1), 0);
}

#[test]
fn kip_848_regular_expressions_match_whole_names_and_pick_up_new_topics() {
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path());
    let mut request = ConsumerGroupHeartbeatRequest::default();
    request.group_id = GroupId(s("by-pattern"));
    request.member_id = s("m");
    request.rebalance_timeout_ms = 30_000;
    // `ord` alone would match nothing: the expression must match a whole name.
    request.subscribed_topic_regex = Some(s("ord|ord.*s|fresh-.*"));
    request.topic_partitions = Some(Vec::new());
    let joined: ConsumerGroupHeartbeatResponse =
        call(&broker, ApiKey::ConsumerGroupHeartbeat, 1, &request);
    assert_eq!(joined.error_code, 0, "{:?}", joined.error_message);
    let names = |r: &ConsumerGroupHeartbeatResponse| -> Vec<(String, usize)> {
        let mut found: Vec<(String, usize)> = r
            .assignment
            .iter()
            .flat_map(|a| &a.topic_partitions)
            .map(|tp| {
                let name = broker
                    .log()
                    .topic_name_by_id(tp.topic_id.as_bytes())
                    .unwrap();
                (name, tp.partitions.len())
            })
            .collect();
        found.sort();
        found
    };
    assert_eq!(names(&joined), [("orders".to_owned(), 2)]);
    broker
        .log()
        .create_topic(
            "fresh-events",
            TopicConfig {
                partitions: 3,
                ..TopicConfig::default()
            },
        )
        .unwrap();
    request.member_epoch = joined.member_epoch;
    request.subscribed_topic_regex = None;
    let beat: ConsumerGroupHeartbeatResponse =
        call(&broker, ApiKey::ConsumerGroupHeartbeat, 1, &request);
    assert_eq!(beat.error_code, 0, "{:?}", beat.error_message);
    assert!(beat.member_epoch > joined.member_epoch);
    assert_eq!(
        names(&beat),
        [("fresh-events".to_owned(), 3), ("orders".to_owned(), 2)]
    );
}

#[test]
fn kip_848_refuses_what_kafka_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path());
    // v1: the member brings its own id.
    let no_id = consumer_beat(&broker, "", 0, true, Some(&[]));
    assert_eq!(no_id.error_code, 42, "INVALID_REQUEST");
    let mut request = ConsumerGroupHeartbeatRequest::default();
    request.group_id = GroupId(s("kip848"));
    request.member_id = s("m");
    request.subscribed_topic_names = Some(vec![TopicName(s("orders"))]);
    request.topic_partitions = Some(vec![]);
    // A join must bring its rebalance timeout, an empty owned list and a subscription; only
    // -1 and -2 are negative epochs, -2 with an instance id (Kafka 4.4's checks; the join
    // ones replayed against it by the daemon test `consumer_protocol_requests_answer_on_logd_as_on_kafka`).
    let invalid = |change: &dyn Fn(&mut ConsumerGroupHeartbeatRequest)| {
        let mut bad = request.clone();
        change(&mut bad);
        let r: ConsumerGroupHeartbeatResponse =
            call(&broker, ApiKey::ConsumerGroupHeartbeat, 1, &bad);
        (r.error_code, r.error_message.map(|m| m.to_string()))
    };
    for (change, said) in [
        (
            &(|_: &mut ConsumerGroupHeartbeatRequest| {})
                as &dyn Fn(&mut ConsumerGroupHeartbeatRequest),
            "RebalanceTimeoutMs",
        ),
        (
            &|r| {
                r.rebalance_timeout_ms = 30_000;
                r.topic_partitions = None;
            },
            "TopicPartitions",
        ),
        (
            &|r| {
                r.rebalance_timeout_ms = 30_000;
                r.subscribed_topic_names = Some(vec![]);
            },
            "SubscribedTopicNames",
        ),
        (&|r| r.member_epoch = -2, "InstanceId"),
        (&|r| r.member_epoch = -3, "MemberEpoch"),
        (
            &|r| {
                r.rebalance_timeout_ms = 30_000;
                r.instance_id = Some(s(""));
            },
            "InstanceId",
        ),
    ] {
        let (code, message) = invalid(change);
        assert_eq!(code, 42, "INVALID_REQUEST: {said}");
        assert!(message.is_some_and(|m| m.starts_with(said)), "{said}");
    }
    request.rebalance_timeout_ms = 30_000;
    request.server_assignor = Some(s("sticky"));
    let r: ConsumerGroupHeartbeatResponse =
        call(&broker, ApiKey::ConsumerGroupHeartbeat, 1, &request);
    assert_eq!(r.error_code, 112, "UNSUPPORTED_ASSIGNOR");
    request.server_assignor = None;
    request.subscribed_topic_regex = Some(s("(ord"));
    let r: ConsumerGroupHeartbeatResponse =
        call(&broker, ApiKey::ConsumerGroupHeartbeat, 1, &request);
    assert_eq!(r.error_code, 128, "INVALID_REGULAR_EXPRESSION");
    // v0 leaves the id to the broker.
    request.subscribed_topic_regex = None;
    request.member_id = s("");
    let r: ConsumerGroupHeartbeatResponse =
        call(&broker, ApiKey::ConsumerGroupHeartbeat, 0, &request);
    assert_eq!(r.error_code, 0);
    assert!(r.member_id.is_some_and(|id| !id.is_empty()));
}

#[test]
fn the_newest_group_versions_name_the_protocol_and_batch_coordinator_keys() {
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path());
    // JoinGroup v9 (flexible, with a reason): the answer names the protocol type from v7, and
    // says "no protocol" with null while the member has none.
    let mut request = join_request("", None);
    request.reason = Some(s("starting"));
    let first: JoinGroupResponse = call(&broker, ApiKey::JoinGroup, 9, &request);
    assert_eq!(first.error_code, 79);
    assert_eq!(first.protocol_name, None);
    request.member_id = first.member_id.clone();
    let joined: JoinGroupResponse = call(&broker, ApiKey::JoinGroup, 9, &request);
    assert_eq!(joined.error_code, 0);
    assert_eq!(joined.protocol_type.as_deref(), Some("consumer"));
    assert_eq!(joined.protocol_name.as_deref(), Some("range"));
    // SyncGroup v5: the protocol must be the group's; the answer names it.
    let mut sync = SyncGroupRequest::default();
    sync.group_id = GroupId(s("g"));
    sync.generation_id = joined.generation_id;
    sync.member_id = joined.member_id.clone();
    sync.protocol_type = Some(s("consumer"));
    sync.protocol_name = Some(s("roundrobin"));
    let wrong: SyncGroupResponse = call(&broker, ApiKey::SyncGroup, 5, &sync);
    assert_eq!(wrong.error_code, 23, "INCONSISTENT_GROUP_PROTOCOL");
    sync.protocol_name = Some(s("range"));
    let mut assignment = SyncGroupRequestAssignment::default();
    assignment.member_id = joined.member_id.clone();
    assignment.assignment = Bytes::from_static(b"assigned");
    sync.assignments = vec![assignment];
    let synced: SyncGroupResponse = call(&broker, ApiKey::SyncGroup, 5, &sync);
    assert_eq!(synced.error_code, 0);
    assert_eq!(synced.protocol_name.as_deref(), Some("range"));
    assert_eq!(&synced.assignment[..], b"assigned");
    // Heartbeat v4 and LeaveGroup v5 (flexible, with a reason).
    let mut beat = HeartbeatRequest::default();
    beat.group_id = GroupId(s("g"));
    beat.generation_id = joined.generation_id;
    beat.member_id = joined.member_id.clone();
    let beaten: HeartbeatResponse = call(&broker, ApiKey::Heartbeat, 4, &beat);
    assert_eq!(beaten.error_code, 0);
    let mut member = MemberIdentity::default();
    member.member_id = joined.member_id.clone();
    member.reason = Some(s("shutting down"));
    let mut leave = LeaveGroupRequest::default();
    leave.group_id = GroupId(s("g"));
    leave.members = vec![member];
    let left: LeaveGroupResponse = call(&broker, ApiKey::LeaveGroup, 5, &leave);
    assert_eq!((left.error_code, left.members[0].error_code), (0, 0));
    // FindCoordinator v4+: a batch of keys, each answered.
    let mut find = FindCoordinatorRequest::default();
    find.key_type = 0;
    find.coordinator_keys = vec![s("g"), s("other")];
    let found: FindCoordinatorResponse = call(&broker, ApiKey::FindCoordinator, 6, &find);
    let keys: Vec<(&str, i32, i16)> = found
        .coordinators
        .iter()
        .map(|c| (&*c.key, c.node_id.0, c.error_code))
        .collect();
    assert_eq!(keys, [("g", 0, 0), ("other", 0, 0)]);
}

#[test]
fn offsets_of_several_groups_come_in_one_fetch_from_v8_and_commits_work_at_v9() {
    use kafka_protocol::messages::offset_fetch_request::{
        OffsetFetchRequestGroup, OffsetFetchRequestTopics,
    };
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path());
    // A commit from outside the group at v9 (flexible), with a leader epoch.
    let mut partition = OffsetCommitRequestPartition::default();
    partition.partition_index = 1;
    partition.committed_offset = 42;
    partition.committed_leader_epoch = 0;
    partition.committed_metadata = Some(s("v9"));
    let mut topic = OffsetCommitRequestTopic::default();
    topic.name = TopicName(s("orders"));
    topic.partitions = vec![partition];
    let mut request = OffsetCommitRequest::default();
    request.group_id = GroupId(s("g"));
    request.generation_id_or_member_epoch = -1;
    request.topics = vec![topic];
    let committed: OffsetCommitResponse = call(&broker, ApiKey::OffsetCommit, 9, &request);
    assert_eq!(committed.topics[0].partitions[0].error_code, 0);
    // v8: group g (one partition asked), and group "other" (all it has: nothing).
    let mut asked = OffsetFetchRequestTopics::default();
    asked.name = TopicName(s("orders"));
    asked.partition_indexes = vec![0, 1];
    let mut g = OffsetFetchRequestGroup::default();
    g.group_id = GroupId(s("g"));
    g.topics = Some(vec![asked]);
    let mut other = OffsetFetchRequestGroup::default();
    other.group_id = GroupId(s("other"));
    other.topics = None;
    let mut fetch = OffsetFetchRequest::default();
    fetch.groups = vec![g, other];
    for version in [8, 9] {
        let response: OffsetFetchResponse = call(&broker, ApiKey::OffsetFetch, version, &fetch);
        assert_eq!(response.groups.len(), 2);
        let partitions = &response.groups[0].topics[0].partitions;
        let found: Vec<(i32, i64, i32, &str)> = partitions
            .iter()
            .map(|p| {
                let metadata = p.metadata.as_deref().map_or("", |m| m);
                (
                    p.partition_index,
                    p.committed_offset,
                    p.committed_leader_epoch,
                    metadata,
                )
            })
            .collect();
        // Committed: this node's one leader epoch; not committed: -1 and -1.
        assert_eq!(found, [(0, -1, -1, ""), (1, 42, 0, "v9")], "v{version}");
        assert_eq!(response.groups[1].group_id.as_str(), "other");
        assert!(response.groups[1].topics.is_empty());
    }
    // DescribeLogDirs v4 adds the file system's size and free space.
    let dirs: DescribeLogDirsResponse = call(
        &broker,
        ApiKey::DescribeLogDirs,
        4,
        &DescribeLogDirsRequest::default(),
    );
    let result = &dirs.results[0];
    assert!(
        result.total_bytes > 0 && result.usable_bytes > 0,
        "{result:?}"
    );
    assert!(result.usable_bytes <= result.total_bytes);
}
