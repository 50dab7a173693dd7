//! Group state survives a restart, as Kafka keeps group metadata: members of a settled group
//! keep heartbeating and committing under their ids and generation after the engine reopens,
//! a group caught mid-rebalance resumes from its last settled generation, a damaged group
//! log is a clear error, and the `groups.json` of older versions is migrated.

use std::time::Duration;

use bytes::Bytes;
use logd::Error;
use logd::groups::classic::{GroupError, GroupPhase, JoinRequest, JoinStatus};

use super::open;

fn join_request(member_id: Option<&str>) -> JoinRequest {
    JoinRequest {
        member_id: member_id.map(str::to_owned),
        group_instance_id: None,
        client_id: "wire".into(),
        client_host: "/127.0.0.1".into(),
        require_known_member_id: false,
        protocol_type: "consumer".into(),
        protocols: vec![("range".into(), Bytes::from_static(b"orders"))],
        session_timeout_ms: 60_000,
        rebalance_timeout_ms: 2_000,
    }
}

/// Two members join group `g` (the second's join rebalances the first) and the leader
/// assigns; returns (leader, follower, generation).
fn settle_two_members(log: &logd::Log) -> (String, String, i32) {
    let coordinator = log.coordinator();
    let now = log.clock().now_ms();
    let joined = |s: JoinStatus| match s {
        JoinStatus::Joined(r) => r,
        other => panic!("{other:?}"),
    };
    let first = joined(log.join_classic("g", join_request(None), now).unwrap());
    let second = match log.join_classic("g", join_request(None), now).unwrap() {
        JoinStatus::Waiting { member_id } => member_id,
        other => panic!("{other:?}"),
    };
    let leader = joined(
        log.join_classic("g", join_request(Some(&first.member_id)), now)
            .unwrap(),
    );
    assert_eq!(leader.leader, first.member_id);
    let assignments = vec![
        (leader.member_id.clone(), Bytes::from_static(b"L")),
        (second.clone(), Bytes::from_static(b"F")),
    ];
    let wait = Duration::from_secs(5);
    coordinator
        .sync_and_wait(
            "g",
            &leader.member_id,
            leader.generation,
            Some(assignments),
            log.clock(),
            wait,
        )
        .unwrap();
    (leader.member_id, second, leader.generation)
}

#[test]
fn a_settled_group_keeps_its_members_generation_and_assignments_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (leader, follower, generation) = {
        let log = open(dir.path());
        settle_two_members(&log)
    };
    let log = open(dir.path());
    let description = log.describe_group("g").unwrap();
    assert_eq!(description.phase, Some(GroupPhase::Stable));
    assert_eq!(description.generation, generation);
    let coordinator = log.coordinator();
    let now = log.clock().now_ms();
    assert_eq!(coordinator.heartbeat("g", &leader, generation, now), Ok(()));
    assert_eq!(
        coordinator.heartbeat("g", &follower, generation, now),
        Ok(())
    );
    assert_eq!(
        coordinator.validate_commit("g", &follower, generation, now),
        Ok(())
    );
    let assignment = coordinator
        .sync_and_wait(
            "g",
            &follower,
            generation,
            None,
            log.clock(),
            Duration::from_secs(1),
        )
        .unwrap();
    assert_eq!(
        assignment,
        Bytes::from_static(b"F"),
        "its assignment came back too"
    );
    assert_eq!(
        coordinator.heartbeat("g", &leader, generation - 1, now),
        Err(GroupError::IllegalGeneration),
        "older generations stay fenced"
    );
}

#[test]
fn a_group_caught_mid_rebalance_restarts_from_its_last_settled_generation() {
    let dir = tempfile::tempdir().unwrap();
    let (leader, _, generation) = {
        let log = open(dir.path());
        let settled = settle_two_members(&log);
        // A third member starts a rebalance that never completes before the restart.
        let now = log.clock().now_ms();
        let status = log.join_classic("g", join_request(None), now).unwrap();
        assert!(matches!(status, JoinStatus::Waiting { .. }));
        settled
    };
    let log = open(dir.path());
    let description = log.describe_group("g").unwrap();
    assert_eq!(description.phase, Some(GroupPhase::Stable));
    assert_eq!(description.generation, generation);
    assert_eq!(description.members.len(), 2, "the newcomer never settled");
    let now = log.clock().now_ms();
    assert_eq!(
        log.coordinator().heartbeat("g", &leader, generation, now),
        Ok(())
    );
}

#[test]
fn an_emptied_group_is_saved_empty_and_a_deleted_one_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    {
        let log = open(dir.path());
        let (leader, follower, _) = settle_two_members(&log);
        let now = log.clock().now_ms();
        log.coordinator().leave("g", &leader, now).unwrap();
        log.coordinator().leave("g", &follower, now).unwrap();
    }
    {
        let log = open(dir.path());
        let description = log.describe_group("g").unwrap();
        assert_eq!(description.phase, Some(GroupPhase::Empty));
        assert!(description.members.is_empty());
        log.delete_group("g").unwrap();
    }
    let log = open(dir.path());
    assert_eq!(log.describe_group("g").unwrap().phase, None);
}

#[test]
fn a_damaged_group_log_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    {
        let log = open(dir.path());
        settle_two_members(&log);
        // A second settle, so the damaged record is not the log's last (a torn last record
        // is cut as never acknowledged).
        log.coordinator().tick_all(log.clock().now_ms() + 120_000);
    }
    let groups = dir.path().join("groups");
    let path = groups.join("groups-00000000000000000000.log");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[10] ^= 0xff;
    std::fs::write(&path, bytes).unwrap();
    let error = logd::Log::open(dir.path(), logd::Config::default()).unwrap_err();
    assert!(
        matches!(&error, Error::GroupState { path: p, .. } if *p == groups),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("groups-00000000000000000000.log"),
        "{error}"
    );
}

/// `groups.json` as logd wrote it before the group log: group `g` settled at generation 3
/// with one member.
const LEGACY_GROUPS: &str = r#"{"version":1,"groups":[{"id":"g","generation":3,
"protocol_type":"consumer","protocol":"range","leader":"m-1","next_seq":2,"members":[
{"id":"m-1","instance_id":null,"client_id":"wire","client_host":"/127.0.0.1",
"protocols":[["range",[111,114,100,101,114,115]]],"session_timeout_ms":60000,
"rebalance_timeout_ms":2000,"seq":1,"assignment":[76]}]}]}"#;

#[test]
fn a_legacy_groups_file_is_migrated_once_into_the_group_log() {
    let dir = tempfile::tempdir().unwrap();
    let legacy = dir.path().join("groups.json");
    std::fs::write(&legacy, LEGACY_GROUPS).unwrap();
    for _ in 0..2 {
        let log = open(dir.path());
        assert!(!legacy.exists(), "the legacy file is removed once migrated");
        let description = log.describe_group("g").unwrap();
        assert_eq!(description.phase, Some(GroupPhase::Stable));
        assert_eq!(description.generation, 3);
        assert_eq!(description.members.len(), 1);
        // The member goes on under its id and generation.
        let now = log.clock().now_ms();
        log.coordinator().heartbeat("g", "m-1", 3, now).unwrap();
    }
    // A crash after the groups were logged and before the file was removed: the file is
    // removed again, its groups not logged twice over newer state.
    {
        let log = open(dir.path());
        log.coordinator()
            .leave("g", "m-1", log.clock().now_ms())
            .unwrap();
    }
    std::fs::write(&legacy, LEGACY_GROUPS).unwrap();
    let log = open(dir.path());
    assert!(!legacy.exists());
    let description = log.describe_group("g").unwrap();
    assert!(description.members.is_empty(), "{description:?}");
}

#[test]
fn a_damaged_legacy_groups_file_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let legacy = dir.path().join("groups.json");
    std::fs::write(&legacy, &LEGACY_GROUPS[..LEGACY_GROUPS.len() / 2]).unwrap();
    let error = logd::Log::open(dir.path(), logd::Config::default()).unwrap_err();
    assert!(error.to_string().contains("groups.json"), "{error}");
    assert!(
        legacy.exists(),
        "a file that cannot be read is left for the operator"
    );
}
