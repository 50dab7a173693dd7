use bytes::Bytes;

use super::*;

fn request(member: Option<&str>) -> JoinRequest {
    JoinRequest {
        member_id: member.map(str::to_owned),
        group_instance_id: None,
        client_id: "c".into(),
        protocol_type: "consumer".into(),
        protocols: vec![("range".into(), Bytes::from_static(b"t"))],
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 30_000,
    }
}

fn joined(status: JoinStatus) -> JoinResponse {
    match status {
        JoinStatus::Joined(r) => r,
        other => panic!("expected Joined, got {other:?}"),
    }
}

fn waiting(status: JoinStatus) -> String {
    match status {
        JoinStatus::Waiting { member_id } => member_id,
        other => panic!("expected Waiting, got {other:?}"),
    }
}

/// Two members through a full join and sync; returns (group, leader id, follower id).
fn stable_pair() -> (Group, String, String) {
    let mut g = Group::new("g");
    let first = joined(g.join(request(None), 0).unwrap());
    assert_eq!(
        (first.generation, first.leader.as_str()),
        (1, first.member_id.as_str())
    );
    let a = first.member_id;
    g.sync(
        &a,
        1,
        Some(vec![(a.clone(), Bytes::from_static(b"all"))]),
        0,
    )
    .unwrap();
    assert_eq!(g.phase(), GroupPhase::Stable);

    let b = waiting(g.join(request(None), 10).unwrap());
    assert_eq!(g.phase(), GroupPhase::PreparingRebalance);
    assert_eq!(
        g.heartbeat(&a, 1, 20),
        Err(GroupError::RebalanceInProgress),
        "a must rejoin"
    );
    let for_a = joined(g.join(request(Some(&a)), 30).unwrap());
    assert_eq!(for_a.generation, 2);
    assert_eq!(for_a.leader, a, "the leader stays the leader");
    assert_eq!(for_a.members.len(), 2, "the leader sees every member");
    let for_b = joined(g.poll_join(&b).unwrap());
    assert!(for_b.members.is_empty(), "followers see no member list");
    (g, a, b)
}

#[test]
fn join_then_sync_relays_the_leaders_assignment() {
    let (mut g, a, b) = stable_pair();
    assert_eq!(g.sync(&b, 2, None, 40).unwrap(), SyncStatus::Waiting);
    let assignments = vec![
        (a.clone(), Bytes::from_static(b"p0")),
        (b.clone(), Bytes::from_static(b"p1")),
    ];
    assert_eq!(
        g.sync(&a, 2, Some(assignments), 50).unwrap(),
        SyncStatus::Assigned(Bytes::from_static(b"p0"))
    );
    assert_eq!(
        g.sync(&b, 2, None, 60).unwrap(),
        SyncStatus::Assigned(Bytes::from_static(b"p1"))
    );
    assert_eq!(g.phase(), GroupPhase::Stable);
    assert_eq!(g.heartbeat(&b, 2, 70), Ok(()));
    assert_eq!(g.heartbeat(&b, 1, 70), Err(GroupError::IllegalGeneration));
    assert_eq!(g.heartbeat("nobody", 2, 70), Err(GroupError::UnknownMember));
}

#[test]
fn commits_follow_kafkas_rules() {
    let (mut g, a, b) = stable_pair();
    // CompletingRebalance: the assignment is not known yet.
    assert_eq!(
        g.validate_commit(&a, 2),
        Err(GroupError::RebalanceInProgress)
    );
    g.sync(&a, 2, Some(vec![]), 0).unwrap();
    assert_eq!(g.validate_commit(&a, 2), Ok(()));
    assert_eq!(
        g.validate_commit(&b, 1),
        Err(GroupError::IllegalGeneration),
        "stale generation"
    );
    assert_eq!(
        g.validate_commit("", -1),
        Err(GroupError::UnknownMember),
        "no member-less commits while active"
    );
    // PreparingRebalance: the current generation may still commit (commit on revoke).
    waiting(g.join(request(None), 100).unwrap());
    assert_eq!(g.validate_commit(&a, 2), Ok(()));
    let mut empty = Group::new("e");
    assert_eq!(empty.validate_commit("", -1), Ok(()));
    assert!(!empty.tick(0), "nothing to expire in an empty group");
}

#[test]
fn a_silent_member_is_expired_after_its_session_timeout() {
    let (mut g, a, b) = stable_pair();
    g.sync(&a, 2, Some(vec![]), 1_000).unwrap();
    g.heartbeat(&a, 2, 9_000).unwrap();
    assert!(
        !g.tick(10_000),
        "b's last contact was at 30 ms: not yet 10 s"
    );
    assert!(g.tick(10_031), "b expires");
    assert_eq!(g.phase(), GroupPhase::PreparingRebalance);
    let response = joined(g.join(request(Some(&a)), 10_040).unwrap());
    assert_eq!(response.generation, 3);
    assert_eq!(g.members().len(), 1);
    assert_eq!(g.heartbeat(&b, 3, 10_050), Err(GroupError::UnknownMember));
}

#[test]
fn a_member_that_does_not_rejoin_in_time_is_dropped() {
    let (mut g, a, b) = stable_pair();
    g.sync(&a, 2, Some(vec![]), 100).unwrap();
    let c = waiting(g.join(request(None), 200).unwrap());
    waiting(g.join(request(Some(&a)), 300).unwrap());
    // b keeps heartbeating (told to rejoin each time) but never rejoins: the rebalance
    // timeout (30 s) decides.
    for t in (1_000..30_000).step_by(5_000) {
        assert_eq!(g.heartbeat(&b, 2, t), Err(GroupError::RebalanceInProgress));
        assert!(!g.tick(t + 1));
    }
    assert!(g.tick(30_201));
    let response = joined(g.poll_join(&c).unwrap());
    assert_eq!(response.generation, 3);
    assert_eq!(g.members().len(), 2);
    assert_eq!(g.poll_join(&b), Err(GroupError::UnknownMember));
}

#[test]
fn a_silent_member_does_not_hold_a_rebalance_past_its_session() {
    let (mut g, a, b) = stable_pair();
    g.sync(&a, 2, Some(vec![]), 100).unwrap();
    // c joins; a rejoins at once; b has crashed and says nothing.
    let c = waiting(g.join(request(None), 200).unwrap());
    waiting(g.join(request(Some(&a)), 300).unwrap());
    assert!(
        !g.tick(10_000),
        "b was last seen at 30 ms; its 10 s session is not over"
    );
    // Joined members wait on the group and do not expire meanwhile.
    assert!(
        g.tick(10_031),
        "b expires with its session, well before the 30 s rebalance timeout"
    );
    assert!(matches!(g.poll_join(&c).unwrap(), JoinStatus::Joined(r) if r.generation == 3));
    assert_eq!(g.poll_join(&b), Err(GroupError::UnknownMember));
}

#[test]
fn leaving_rebalances_the_rest_and_the_last_one_empties_the_group() {
    let (mut g, a, b) = stable_pair();
    g.leave(&b, 100).unwrap();
    assert_eq!(g.phase(), GroupPhase::PreparingRebalance);
    let response = joined(g.join(request(Some(&a)), 110).unwrap());
    assert_eq!(response.generation, 3);
    g.leave(&a, 120).unwrap();
    assert_eq!(g.phase(), GroupPhase::Empty);
    assert_eq!(g.leave(&a, 130), Err(GroupError::UnknownMember));
}

#[test]
fn static_members_keep_their_id_and_fence_impostors() {
    let mut g = Group::new("g");
    let mut with_instance = request(None);
    with_instance.group_instance_id = Some("host-1".into());
    let first = joined(g.join(with_instance.clone(), 0).unwrap());
    let again = joined(g.join(with_instance.clone(), 10).unwrap());
    assert_eq!(
        again.member_id, first.member_id,
        "a restart with the same instance id keeps the member"
    );
    with_instance.member_id = Some("someone-else".into());
    assert_eq!(g.join(with_instance, 20), Err(GroupError::FencedInstance));
}

#[test]
fn members_must_share_a_protocol_and_type() {
    let mut g = Group::new("g");
    joined(g.join(request(None), 0).unwrap());
    let mut other = request(None);
    other.protocols = vec![("cooperative-sticky".into(), Bytes::new())];
    assert_eq!(g.join(other, 1), Err(GroupError::InconsistentProtocol));
    let mut connect = request(None);
    connect.protocol_type = "connect".into();
    assert_eq!(g.join(connect, 2), Err(GroupError::InconsistentProtocol));
    assert_eq!(
        g.join(request(Some("ghost")), 3),
        Err(GroupError::UnknownMember)
    );
}

#[test]
fn the_protocol_with_most_first_choices_wins() {
    let mut g = Group::new("g");
    let a = joined(
        g.join(request_with(None, &["roundrobin", "range"]), 0)
            .unwrap(),
    );
    assert_eq!(a.protocol, "roundrobin", "alone, its first choice");
    let b = waiting(
        g.join(request_with(None, &["range", "roundrobin"]), 1)
            .unwrap(),
    );
    let c = waiting(
        g.join(request_with(None, &["range", "roundrobin"]), 2)
            .unwrap(),
    );
    // a rejoins last: everyone is in, the phase completes.
    let response = joined(
        g.join(request_with(Some(a.member_id), &["roundrobin", "range"]), 3)
            .unwrap(),
    );
    assert_eq!(response.generation, 2);
    assert_eq!(
        response.protocol, "range",
        "two of three members prefer range"
    );
    assert!(matches!(g.poll_join(&b).unwrap(), JoinStatus::Joined(_)));
    assert!(matches!(g.poll_join(&c).unwrap(), JoinStatus::Joined(_)));
}

fn request_with(member: Option<String>, protocols: &[&str]) -> JoinRequest {
    JoinRequest {
        member_id: member,
        protocols: protocols
            .iter()
            .map(|p| (p.to_string(), Bytes::new()))
            .collect(),
        ..request(None)
    }
}
