//! KIP-848's answers on logd and on a real Apache Kafka cluster, request by request: the same
//! ConsumerGroupHeartbeat, OffsetCommit, OffsetFetch, ConsumerGroupDescribe and ListGroups
//! requests, sent raw to the group's coordinator (found with FindCoordinator, as clients do),
//! with the refusals a client can run into (a bad subscription, a stale, fenced or unknown
//! member, an instance id held by another member, an admin's fetch beside a member's), must
//! get the same codes and the same member counts. The codes were first taken from Kafka's
//! source; this replays them against Kafka itself.

use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::{
    ApiKey, ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, GroupId, ListGroupsRequest,
    ListGroupsResponse, OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest,
    OffsetFetchResponse, TopicName,
};

use super::raw_wire::{GROUP_KEY, Raw, coordinator, s, same_answers_as_kafka};

/// A heartbeat of `member` at `epoch`, joining with an empty owned list when `epoch` is 0.
fn beat(group: &str, member: &str, epoch: i32) -> ConsumerGroupHeartbeatRequest {
    let mut request = ConsumerGroupHeartbeatRequest::default();
    request.group_id = GroupId(s(group));
    request.member_id = s(member);
    request.member_epoch = epoch;
    if epoch == 0 {
        request.rebalance_timeout_ms = 30_000;
        request.topic_partitions = Some(vec![]);
    }
    request
}

fn commit(group: &str, topic: &str, member: &str, epoch: i32) -> OffsetCommitRequest {
    let mut partition = OffsetCommitRequestPartition::default();
    partition.partition_index = 0;
    partition.committed_offset = 0;
    let mut t = OffsetCommitRequestTopic::default();
    t.name = TopicName(s(topic));
    t.partitions = vec![partition];
    let mut request = OffsetCommitRequest::default();
    request.group_id = GroupId(s(group));
    request.member_id = s(member);
    request.generation_id_or_member_epoch = epoch;
    request.topics = vec![t];
    request
}

fn fetch(group: &str, topic: &str, member: Option<&str>, epoch: i32) -> OffsetFetchRequest {
    let mut t = OffsetFetchRequestTopics::default();
    t.name = TopicName(s(topic));
    t.partition_indexes = vec![0];
    let mut g = OffsetFetchRequestGroup::default();
    g.group_id = GroupId(s(group));
    g.member_id = member.map(s);
    g.member_epoch = epoch;
    g.topics = Some(vec![t]);
    let mut request = OffsetFetchRequest::default();
    request.groups = vec![g];
    request
}

/// ConsumerGroupDescribe of `group`: its code and member count.
fn describe(c: &mut Raw, group: &str) -> (i16, usize) {
    let mut request = ConsumerGroupDescribeRequest::default();
    request.group_ids = vec![GroupId(s(group))];
    let described: ConsumerGroupDescribeResponse =
        c.call(ApiKey::ConsumerGroupDescribe, 0, &request);
    let g = &described.groups[0];
    (g.error_code, g.members.len())
}

/// The script against `bootstrap`: one line per request, naming what was asked and what came
/// back (codes; the member count where one is described).
fn answers(bootstrap: &str, topic: &str, group: &str) -> Vec<String> {
    logd_client::Client::connect(bootstrap)
        .unwrap()
        .create_topic(topic, 3, &[])
        .unwrap();
    let mut c = coordinator(bootstrap, GROUP_KEY, group, |c| describe(c, group).0);
    let mut lines = Vec::new();
    let mut say = |step: &str, what: String| lines.push(format!("{step}: {what}"));
    let hb =
        |c: &mut Raw, request: &ConsumerGroupHeartbeatRequest| -> ConsumerGroupHeartbeatResponse {
            c.call(ApiKey::ConsumerGroupHeartbeat, 1, request)
        };

    let mut join = beat(group, "member-a", 0);
    join.subscribed_topic_names = Some(vec![TopicName(s(topic))]);
    let joined = hb(&mut c, &join);
    say(
        "join",
        format!("{} epoch>0 {}", joined.error_code, joined.member_epoch > 0),
    );
    let epoch = joined.member_epoch;

    let mut request = join.clone();
    request.member_id = s("");
    say(
        "join without a member id",
        hb(&mut c, &request).error_code.to_string(),
    );
    let mut request = join.clone();
    request.member_id = s("member-b");
    request.subscribed_topic_names = None;
    say(
        "join without a subscription",
        hb(&mut c, &request).error_code.to_string(),
    );
    let mut request = join.clone();
    request.member_id = s("member-b");
    request.topic_partitions = None;
    say(
        "join without an owned list",
        hb(&mut c, &request).error_code.to_string(),
    );
    let mut request = join.clone();
    request.member_id = s("member-b");
    request.rebalance_timeout_ms = -1;
    say(
        "join without a rebalance timeout",
        hb(&mut c, &request).error_code.to_string(),
    );
    let mut request = join.clone();
    request.member_id = s("member-b");
    request.server_assignor = Some(s("sticky"));
    say(
        "join naming an unknown assignor",
        hb(&mut c, &request).error_code.to_string(),
    );
    let mut request = join.clone();
    request.member_id = s("member-b");
    request.subscribed_topic_names = None;
    request.subscribed_topic_regex = Some(s("(vs"));
    say(
        "join with a broken pattern",
        hb(&mut c, &request).error_code.to_string(),
    );
    let mut request = join.clone();
    request.group_id = GroupId(s(""));
    say(
        "join an empty group id",
        hb(&mut c, &request).error_code.to_string(),
    );

    let fenced = hb(&mut c, &beat(group, "member-a", epoch + 5));
    say(
        "heartbeat ahead of the member's epoch",
        fenced.error_code.to_string(),
    );
    let unknown = hb(&mut c, &beat(group, "member-z", 3));
    say(
        "heartbeat of an unknown member",
        unknown.error_code.to_string(),
    );
    let current = hb(&mut c, &beat(group, "member-a", epoch));
    say(
        "heartbeat at the member's epoch",
        current.error_code.to_string(),
    );

    let mut statics = join.clone();
    statics.member_id = s("member-s1");
    statics.instance_id = Some(s("instance-1"));
    say("static join", hb(&mut c, &statics).error_code.to_string());
    statics.member_id = s("member-s2");
    say(
        "second member with the instance id",
        hb(&mut c, &statics).error_code.to_string(),
    );

    let commit_at = |c: &mut Raw, member: &str, at: i32| -> i16 {
        let r: OffsetCommitResponse =
            c.call(ApiKey::OffsetCommit, 9, &commit(group, topic, member, at));
        r.topics[0].partitions[0].error_code
    };
    say(
        "commit at the member's epoch",
        commit_at(&mut c, "member-a", epoch).to_string(),
    );
    say(
        "commit at an older epoch",
        commit_at(&mut c, "member-a", epoch - 1).to_string(),
    );
    say(
        "commit at a newer epoch",
        commit_at(&mut c, "member-a", epoch + 1).to_string(),
    );
    say(
        "commit of an unknown member",
        commit_at(&mut c, "member-z", epoch).to_string(),
    );
    say(
        "commit with no member",
        commit_at(&mut c, "", -1).to_string(),
    );

    let fetch_as = |c: &mut Raw, member: Option<&str>, at: i32| -> String {
        let r: OffsetFetchResponse =
            c.call(ApiKey::OffsetFetch, 9, &fetch(group, topic, member, at));
        let g = &r.groups[0];
        let offset = g
            .topics
            .first()
            .and_then(|t| t.partitions.first())
            .map_or(-2, |p| p.committed_offset);
        format!("{} offset {offset}", g.error_code)
    };
    say(
        "fetch at the member's epoch",
        fetch_as(&mut c, Some("member-a"), epoch),
    );
    say(
        "fetch at an older epoch",
        fetch_as(&mut c, Some("member-a"), epoch - 1),
    );
    say(
        "fetch of an unknown member",
        fetch_as(&mut c, Some("member-z"), epoch),
    );
    say("fetch by an admin", fetch_as(&mut c, None, -1));

    // Each group at its own coordinator: on Kafka a group id that does not exist may belong to
    // another broker's shard.
    let none = format!("{group}-none");
    for (name, id) in [("the group", group), ("no such group", none.as_str())] {
        let mut at = coordinator(bootstrap, GROUP_KEY, id, |c| describe(c, id).0);
        let (code, members) = describe(&mut at, id);
        say(
            &format!("describe {name}"),
            format!("{code} members {members}"),
        );
    }
    let mut list = ListGroupsRequest::default();
    list.types_filter = vec![s("consumer")];
    let listed: ListGroupsResponse = c.call(ApiKey::ListGroups, 5, &list);
    let ours = listed
        .groups
        .iter()
        .find(|g| g.group_id.as_str() == group)
        .map(|g| g.group_type.as_str().to_owned());
    say(
        "list consumer groups",
        format!("{} ours {ours:?}", listed.error_code),
    );

    let left = hb(&mut c, &beat(group, "member-a", -1));
    say(
        "leave",
        format!("{} epoch {}", left.error_code, left.member_epoch),
    );
    let after = hb(&mut c, &beat(group, "member-a", epoch));
    say("heartbeat after leaving", after.error_code.to_string());
    let mut static_leave = beat(group, "member-s1", -2);
    static_leave.instance_id = Some(s("instance-1"));
    let r = hb(&mut c, &static_leave);
    say(
        "static member leaves for now",
        format!("{} epoch {}", r.error_code, r.member_epoch),
    );
    lines
}

#[test]
fn consumer_protocol_requests_answer_on_logd_as_on_kafka() {
    same_answers_as_kafka(
        |b| answers(b, "kip848-vs", "kip848-vs"),
        &[
            "join naming an unknown assignor: 112",
            "heartbeat of an unknown member: 25",
        ],
    );
}
