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
        client_host: "/127.0.0.1".into(),
        require_known_member_id: false,
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
    assert!(g.protocol().is_some());
    g.leave(&a, 120).unwrap();
    assert_eq!(g.phase(), GroupPhase::Empty);
    // As on Kafka, an empty group has no protocol (DescribeGroups shows no assignor).
    assert_eq!(g.protocol(), None);
    assert_eq!(g.leave(&a, 130), Err(GroupError::UnknownMember));
}

#[test]
fn a_restarted_static_follower_gets_a_new_id_keeps_its_assignment_and_fences_the_old_id() {
    let mut g = Group::new("g");
    let leader = joined(g.join(request(None), 0).unwrap());
    assert!(matches!(
        g.sync(&leader.member_id, 1, Some(vec![]), 1),
        Ok(SyncStatus::Assigned(_))
    ));
    let mut with_instance = request(None);
    with_instance.group_instance_id = Some("host-1".into());
    let follower = waiting(g.join(with_instance.clone(), 10).unwrap());
    let leader_again = joined(g.join(request(Some(&leader.member_id)), 11).unwrap());
    let gen2 = leader_again.generation;
    let assignment = vec![
        (leader.member_id.clone(), Bytes::from_static(b"L")),
        (follower.clone(), Bytes::from_static(b"F")),
    ];
    g.sync(&leader.member_id, gen2, Some(assignment), 12)
        .unwrap();
    assert_eq!(g.phase(), GroupPhase::Stable);

    // The follower's process restarts: same instance id, no member id, same subscription.
    let restarted = joined(g.join(with_instance.clone(), 20).unwrap());
    assert_ne!(restarted.member_id, follower, "a new member id");
    assert_eq!(restarted.generation, gen2, "no rebalance");
    assert_eq!(g.phase(), GroupPhase::Stable);
    assert_eq!(
        g.sync(&restarted.member_id, gen2, None, 21),
        Ok(SyncStatus::Assigned(Bytes::from_static(b"F"))),
        "it keeps its assignment"
    );
    assert_eq!(
        g.heartbeat(&leader.member_id, gen2, 22),
        Ok(()),
        "the leader saw nothing"
    );
    // The old incarnation (a zombie) is fenced.
    with_instance.member_id = Some(follower);
    assert_eq!(
        g.join(with_instance.clone(), 23),
        Err(GroupError::FencedInstance)
    );
    // Leaving by instance id removes the current holder and the rest rebalance.
    assert_eq!(
        g.leave_instance("host-1", None, 30),
        Ok(restarted.member_id.clone())
    );
    assert_eq!(g.phase(), GroupPhase::PreparingRebalance);
    assert_eq!(
        g.leave_instance("host-1", None, 31),
        Err(GroupError::UnknownMember)
    );
}

#[test]
fn a_restarted_static_member_that_changes_the_assignor_rebalances() {
    let mut g = Group::new("g");
    let mut with_instance = request(None);
    with_instance.group_instance_id = Some("host-1".into());
    let first = joined(g.join(with_instance.clone(), 0).unwrap());
    g.sync(&first.member_id, 1, Some(vec![]), 1).unwrap();
    with_instance.protocols = vec![("roundrobin".into(), Bytes::from_static(b"t"))];
    let again = joined(g.join(with_instance, 10).unwrap());
    assert_eq!(
        again.generation, 2,
        "changed metadata starts a new generation"
    );
    assert_eq!(
        again.members.len(),
        1,
        "the lone member leads and assigns again"
    );
}

#[test]
fn kip_394_hands_out_an_id_and_admits_only_a_join_that_carries_it() {
    let mut g = Group::new("g");
    let mut first = request(None);
    first.require_known_member_id = true;
    let id = match g.join(first.clone(), 0).unwrap() {
        JoinStatus::MemberIdRequired { member_id } => member_id,
        other => panic!("expected MemberIdRequired, got {other:?}"),
    };
    assert!(id.starts_with("c-"), "built from the client id: {id}");
    assert_eq!(g.phase(), GroupPhase::Empty, "nobody joined yet");
    assert!(g.members().is_empty());
    let mut second = first.clone();
    second.member_id = Some(id.clone());
    assert_eq!(joined(g.join(second.clone(), 1).unwrap()).member_id, id);
    // A pending id that was never used expires with the session timeout.
    let stale = match g.join(first, 2).unwrap() {
        JoinStatus::MemberIdRequired { member_id } => member_id,
        other => panic!("expected MemberIdRequired, got {other:?}"),
    };
    g.tick(2 + 10_001);
    let mut late = second;
    late.member_id = Some(stale);
    assert_eq!(g.join(late, 10_004), Err(GroupError::UnknownMember));
}

#[test]
fn member_ids_differ_between_group_instances() {
    let a = joined(Group::new("g").join(request(None), 0).unwrap());
    let b = joined(Group::new("g").join(request(None), 0).unwrap());
    assert_ne!(
        a.member_id, b.member_id,
        "a restarted coordinator must not reuse ids"
    );
}

#[test]
fn the_initial_delay_gathers_a_burst_of_joiners_into_one_generation() {
    let mut g = Group::new("g").with_initial_delay(3_000);
    let a = waiting(g.join(request(None), 0).unwrap());
    let b = waiting(g.join(request(None), 1_000).unwrap());
    assert!(!g.tick(2_999), "still inside the delay");
    assert_eq!(g.phase(), GroupPhase::PreparingRebalance);
    // b extended the delay to 1_000 + 3_000.
    assert!(!g.tick(3_500));
    assert!(g.tick(4_000));
    assert_eq!(g.generation(), 1);
    assert!(matches!(g.poll_join(&a).unwrap(), JoinStatus::Joined(r) if r.members.len() == 2));
    assert!(matches!(g.poll_join(&b).unwrap(), JoinStatus::Joined(r) if r.members.is_empty()));
    // A later rebalance of a non-empty group does not wait.
    let c = g.join(request(None), 5_000).unwrap();
    assert!(matches!(c, JoinStatus::Waiting { .. }));
    g.join(request(Some(&a)), 5_001).unwrap();
    assert!(matches!(
        g.join(request(Some(&b)), 5_002).unwrap(),
        JoinStatus::Joined(_)
    ));
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
