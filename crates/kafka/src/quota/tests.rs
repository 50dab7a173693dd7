//! The quota lookup in Kafka's order, durable changes, and power cuts.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use logd_protocol::quota::{QuotaEntity, QuotaKey};
use logd_storage::{PowerCutStore, Storage};

use super::*;

fn entity(user: Option<Option<&str>>, client: Option<Option<&str>>) -> QuotaEntity {
    QuotaEntity {
        user: user.map(|u| u.map(str::to_owned)),
        client_id: client.map(|c| c.map(str::to_owned)),
    }
}

fn set(entity: QuotaEntity, key: QuotaKey, value: f64) -> QuotaChange {
    (entity, vec![(key, Some(value))])
}

#[test]
fn the_most_specific_entity_with_the_key_applies_in_kafkas_order() {
    let dir = tempfile::tempdir().unwrap();
    let quotas = ClientQuotas::open(dir.path()).unwrap();
    let produce = QuotaKey::ProducerByteRate;
    assert!(quotas.limit(produce, "User:alice", "app").is_none());
    // Each entity gets a bound naming its rank, least specific first.
    let ranked = [
        (entity(None, Some(None)), 8.0),
        (entity(None, Some(Some("app"))), 7.0),
        (entity(Some(None), None), 6.0),
        (entity(Some(None), Some(None)), 5.0),
        (entity(Some(None), Some(Some("app"))), 4.0),
        (entity(Some(Some("alice")), None), 3.0),
        (entity(Some(Some("alice")), Some(None)), 2.0),
        (entity(Some(Some("alice")), Some(Some("app"))), 1.0),
    ];
    for (entity, rank) in ranked.iter().cloned() {
        quotas.alter(&[set(entity, produce, rank)]).unwrap();
        let limit = quotas.limit(produce, "User:alice", "app").unwrap();
        assert_eq!(limit.bound, rank, "after adding rank {rank}");
    }
    // Which clients share a rate: the tags of the entity that applies.
    let tags = |principal: &str, client: &str| {
        let t = quotas.limit(produce, principal, client).unwrap().tags;
        (t.user, t.client_id)
    };
    assert_eq!(tags("User:alice", "app"), ("alice".into(), "app".into()));
    assert_eq!(
        tags("User:alice", "other"),
        ("alice".into(), "other".into())
    );
    // Bob has no entity of his own: the default user's client id "app" (rank 4).
    assert_eq!(quotas.limit(produce, "User:bob", "app").unwrap().bound, 4.0);
    // Another key has no quota anywhere.
    assert!(
        quotas
            .limit(QuotaKey::ConsumerByteRate, "User:alice", "app")
            .is_none()
    );
    // A user quota is shared by all its client ids; a client-id quota by all users.
    let fresh = tempfile::tempdir().unwrap();
    let q = ClientQuotas::open(fresh.path()).unwrap();
    q.alter(&[
        set(entity(Some(Some("carol")), None), produce, 10.0),
        set(entity(None, Some(Some("batch"))), produce, 20.0),
    ])
    .unwrap();
    let carol = q.limit(produce, "User:carol", "x").unwrap().tags;
    assert_eq!(
        (carol.user.as_str(), carol.client_id.as_str()),
        ("carol", "")
    );
    let batch = q.limit(produce, "User:dave", "batch").unwrap().tags;
    assert_eq!(
        (batch.user.as_str(), batch.client_id.as_str()),
        ("", "batch")
    );
    assert!(q.limit(produce, "User:dave", "x").is_none());
}

#[test]
fn clients_under_one_entity_share_its_rate() {
    let dir = tempfile::tempdir().unwrap();
    let quotas = ClientQuotas::open(dir.path()).unwrap();
    let key = QuotaKey::ProducerByteRate;
    quotas
        .alter(&[set(entity(Some(Some("alice")), None), key, 100.0)])
        .unwrap();
    let now = Instant::now();
    let one = quotas.limit(key, "User:alice", "one").unwrap();
    let two = quotas.limit(key, "User:alice", "two").unwrap();
    // One second of quota at once is free; then every byte from either client is owed.
    assert_eq!(quotas.record(&one, 100.0, now), Duration::ZERO);
    assert_eq!(quotas.record(&two, 50.0, now), Duration::from_millis(500));
    assert_eq!(quotas.owed(&one, now), Duration::from_millis(500));
    // Bob has no quota at all.
    assert!(quotas.limit(key, "User:bob", "one").is_none());
}

#[test]
fn changes_are_durable_and_removing_the_last_key_drops_the_entity() {
    let dir = tempfile::tempdir().unwrap();
    let quotas = ClientQuotas::open(dir.path()).unwrap();
    let alice = entity(Some(Some("alice")), None);
    quotas
        .alter(&[(
            alice.clone(),
            vec![
                (QuotaKey::ProducerByteRate, Some(1024.0)),
                (QuotaKey::ConsumerByteRate, Some(2048.0)),
            ],
        )])
        .unwrap();
    let reopened = ClientQuotas::open(dir.path()).unwrap();
    assert_eq!(reopened.entries(), quotas.entries());
    reopened
        .alter(&[(
            alice.clone(),
            vec![
                (QuotaKey::ProducerByteRate, None),
                (QuotaKey::ConsumerByteRate, None),
            ],
        )])
        .unwrap();
    assert!(reopened.entries().is_empty());
    assert!(ClientQuotas::open(dir.path()).unwrap().entries().is_empty());
}

/// Client quotas under the power-cut test: six changes of a producer byte rate on four users,
/// the last removing what the second set.
struct Store;

impl PowerCutStore for Store {
    type State = QuotaMap;
    type Store = ClientQuotas;

    fn open(&self, storage: Arc<dyn Storage>, dir: &Path) -> Result<ClientQuotas, String> {
        ClientQuotas::open_with(storage, dir).map_err(|e| e.to_string())
    }

    fn state(&self, store: &ClientQuotas) -> QuotaMap {
        (*store.entries()).clone()
    }

    fn change(&self, store: &mut ClientQuotas, step: u32, acked: &QuotaMap) -> (QuotaMap, bool) {
        let who = entity(Some(Some(&format!("u{}", step % 4))), None);
        let value = (step != 5).then_some(f64::from(1000 * (step + 1)));
        let mut next = acked.clone();
        match value {
            Some(v) => {
                next.insert(
                    who.clone(),
                    BTreeMap::from([(QuotaKey::ProducerByteRate, v)]),
                );
            }
            None => {
                next.remove(&who);
            }
        }
        let applied = store
            .alter(&[(who, vec![(QuotaKey::ProducerByteRate, value)])])
            .is_ok();
        (next, applied)
    }
}

#[test]
fn a_power_cut_at_any_operation_keeps_every_acknowledged_quota_change() {
    let states = logd_storage::check_every_power_cut(&Store);
    assert!(states > 100, "{states} crash states");
}
