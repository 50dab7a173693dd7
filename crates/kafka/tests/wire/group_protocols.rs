//! One protocol per group id, whichever way a member joins: a classic JoinGroup on the wire,
//! an embedded `Consumer`, a KIP-848 heartbeat or a share-group heartbeat. The engine decides,
//! so the wire and the embedded consumer get the same answer for the same group.

use std::time::Duration;

use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::*;
use logd::groups::classic::GroupError;
use logd::groups::protocol::GroupProtocol;
use logd::{Config, Consumer, ConsumerConfig, Log, TopicConfig};
use logd_kafka::{Broker, BrokerConfig};

use crate::common::{call, s};

const INCONSISTENT_GROUP_PROTOCOL: i16 = 23;
const GROUP_ID_NOT_FOUND: i16 = 69;

fn broker(dir: &std::path::Path) -> Broker {
    let log = Log::open(dir, Config::default()).unwrap();
    let one = TopicConfig {
        partitions: 1,
        ..TopicConfig::default()
    };
    log.create_topic("orders", one).unwrap();
    Broker::new(log, BrokerConfig::default())
}

/// A classic JoinGroup (v9) of a new member of `group`.
fn wire_join(broker: &Broker, group: &str) -> i16 {
    let mut protocol = JoinGroupRequestProtocol::default();
    protocol.name = s("range");
    let mut request = JoinGroupRequest::default();
    request.group_id = GroupId(s(group));
    request.member_id = s("");
    request.session_timeout_ms = 10_000;
    request.rebalance_timeout_ms = 1_000;
    request.protocol_type = s("consumer");
    request.protocols = vec![protocol];
    let r: JoinGroupResponse = call(broker, ApiKey::JoinGroup, 9, &request);
    r.error_code
}

/// A KIP-848 ConsumerGroupHeartbeat (v1) of `member` in `group` at `epoch`.
fn consumer_beat(broker: &Broker, group: &str, member: &str, epoch: i32) -> i16 {
    let mut request = ConsumerGroupHeartbeatRequest::default();
    request.group_id = GroupId(s(group));
    request.member_id = s(member);
    request.member_epoch = epoch;
    request.rebalance_timeout_ms = 30_000;
    if epoch == 0 {
        request.subscribed_topic_names = Some(vec![TopicName(s("orders"))]);
        request.topic_partitions = Some(vec![]);
    }
    let r: ConsumerGroupHeartbeatResponse =
        call(broker, ApiKey::ConsumerGroupHeartbeat, 1, &request);
    r.error_code
}

/// A ShareGroupHeartbeat (v1) of `member` in `group` at `epoch`.
fn share_beat(broker: &Broker, group: &str, member: &str, epoch: i32) -> i16 {
    let mut request = ShareGroupHeartbeatRequest::default();
    request.group_id = GroupId(s(group));
    request.member_id = s(member);
    request.member_epoch = epoch;
    if epoch == 0 {
        request.subscribed_topic_names = Some(vec![TopicName(s("orders"))]);
    }
    let r: ShareGroupHeartbeatResponse = call(broker, ApiKey::ShareGroupHeartbeat, 1, &request);
    r.error_code
}

/// An embedded consumer of `group` that subscribes and polls once (which joins).
fn embedded(log: &Log, group: &str) -> (Consumer, logd::Result<()>) {
    let mut consumer = Consumer::new(
        log,
        ConsumerConfig {
            group_id: Some(group.into()),
            ..ConsumerConfig::default()
        },
    );
    consumer.subscribe(vec!["orders".into()]).unwrap();
    let polled = consumer.poll(Duration::from_millis(200)).map(|_| ());
    (consumer, polled)
}

fn refused_with(polled: logd::Result<()>) -> GroupError {
    match polled {
        Err(logd::Error::Group(e)) => e,
        other => panic!("expected a group refusal, got {other:?}"),
    }
}

#[test]
fn a_kip_848_group_refuses_classic_members_on_the_wire_and_embedded_alike() {
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path());
    let log = broker.log();
    assert_eq!(consumer_beat(&broker, "kip848", "a", 0), 0);
    assert_eq!(log.group_protocol("kip848"), Some(GroupProtocol::Consumer));

    assert_eq!(wire_join(&broker, "kip848"), INCONSISTENT_GROUP_PROTOCOL);
    let (_refused, polled) = embedded(log, "kip848");
    assert_eq!(refused_with(polled), GroupError::InconsistentProtocol);
    assert_eq!(share_beat(&broker, "kip848", "s", 0), GROUP_ID_NOT_FOUND);

    // Once its last member leaves, the id is free: the embedded consumer joins it.
    assert_eq!(consumer_beat(&broker, "kip848", "a", -1), 0);
    assert_eq!(log.group_protocol("kip848"), None);
    let (_member, polled) = embedded(log, "kip848");
    polled.unwrap();
    assert_eq!(log.group_protocol("kip848"), Some(GroupProtocol::Classic));
    // And now the classic member holds it against KIP-848 and share joins.
    assert_eq!(
        consumer_beat(&broker, "kip848", "b", 0),
        INCONSISTENT_GROUP_PROTOCOL
    );
    assert_eq!(share_beat(&broker, "kip848", "s", 0), GROUP_ID_NOT_FOUND);
}

#[test]
fn a_share_group_and_the_other_protocols_refuse_each_other_as_kafka_does() {
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path());
    let log = broker.log();
    assert_eq!(share_beat(&broker, "queue", "s", 0), 0);
    assert_eq!(log.group_protocol("queue"), Some(GroupProtocol::Share));

    assert_eq!(wire_join(&broker, "queue"), GROUP_ID_NOT_FOUND);
    let (_refused, polled) = embedded(log, "queue");
    assert_eq!(refused_with(polled), GroupError::OtherGroupType);
    assert_eq!(consumer_beat(&broker, "queue", "a", 0), GROUP_ID_NOT_FOUND);
    // A second share member joins the share group as before.
    assert_eq!(share_beat(&broker, "queue", "t", 0), 0);
}
