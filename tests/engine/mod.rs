//! Scenarios for the embedded engine: keys and partitions, fan-out, at-least-once, groups
//! rebalancing, replay, wake-up latency.

mod compaction;
mod consumer_group_restart;
mod delete_records;
mod delivery;
mod embedded;
mod group_log;
mod group_restart;
mod groups;
mod idempotence;
mod isolation_lag;
mod keys;
mod many_partitions;
mod power_cut;
mod rebalance;
mod replay;
mod stamping;
mod topics;

use std::path::Path;
use std::time::{Duration, Instant};

use bytes::Bytes;
use logd::groups::classic::{GroupConfig, JoinRequest, JoinStatus};
use logd::{Config, Log, TopicConfig};

/// An engine whose groups accept short session timeouts, so tests run in seconds.
pub(crate) fn open(dir: &Path) -> Log {
    let config = Config {
        groups: GroupConfig {
            min_session_timeout_ms: 50,
            ..GroupConfig::default()
        },
        ..Config::default()
    };
    Log::open(dir, config).unwrap()
}

pub(crate) fn topic(log: &Log, name: &str, partitions: u32) {
    log.create_topic(
        name,
        TopicConfig {
            partitions,
            ..TopicConfig::default()
        },
    )
    .unwrap();
}

/// Polls `condition` until it holds or `limit` passes.
pub(crate) fn eventually(limit: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if condition() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    condition()
}

/// One new member joins group `id` and, as its leader, assigns: the group settles. Returns
/// the member and generation, or `None` if the engine refused.
pub(crate) fn settle_alone(log: &Log, id: &str) -> Option<(String, i32)> {
    let request = JoinRequest {
        member_id: None,
        group_instance_id: None,
        client_id: "settle".into(),
        client_host: "/127.0.0.1".into(),
        require_known_member_id: false,
        protocol_type: "consumer".into(),
        protocols: vec![("range".into(), Bytes::from_static(b"orders"))],
        session_timeout_ms: 60_000,
        rebalance_timeout_ms: 60_000,
    };
    let coordinator = log.coordinator();
    let JoinStatus::Joined(joined) = log.join_classic(id, request, log.clock().now_ms()).ok()?
    else {
        return None;
    };
    let assignment = vec![(joined.member_id.clone(), Bytes::from_static(b"all"))];
    coordinator
        .sync_and_wait(
            id,
            &joined.member_id,
            joined.generation,
            Some(assignment),
            log.clock(),
            Duration::from_secs(1),
        )
        .ok()?;
    Some((joined.member_id, joined.generation))
}
