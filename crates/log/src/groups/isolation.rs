//! Which consumer groups read committed records only, so that their lag is measured to the
//! last stable offset (what they can read) rather than to the high watermark. Kafka's protocol
//! does not say: a Fetch names no group and a JoinGroup no isolation level. So the broker notes
//! each client (client id and host, as group members are shown) it sees fetching
//! read_committed, embedded consumers note themselves, and a group reads committed while one
//! of its members is such a client, unless it committed past a partition's last stable offset,
//! which no read_committed consumer reaches. An empty group keeps what was last found (in
//! memory: after a restart, until its members are back, it is measured to the high watermark).
//!
//! Clients sharing a client id on one host are one client here (librdkafka's default id is
//! `rdkafka` for every client): a read_uncommitted group of such a client counts as
//! read_committed only while it has committed nothing past a stable offset, that is while its
//! lag differs between the two ends by at most the open transactions' records.

use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};

use parking_lot::Mutex;

use crate::engine::Log;
use crate::isolation::IsolationLevel;

/// Clients remembered at most; past it the memory starts again (an estimate, not a record).
const MAX_CLIENTS: usize = 65_536;

/// The clients seen reading committed, and each group's last known level.
#[derive(Debug, Default)]
pub(crate) struct GroupIsolation {
    /// Hashes of (client id, client host).
    clients: Mutex<HashSet<u64>>,
    groups: Mutex<HashMap<String, IsolationLevel>>,
}

fn client_key(client_id: &str, client_host: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    (client_id, client_host).hash(&mut hasher);
    hasher.finish()
}

impl Log {
    /// Notes that the client `client_id` at `client_host` (as group members show it) reads
    /// committed records only: its groups' lag is measured to the last stable offset.
    pub fn note_read_committed(&self, client_id: &str, client_host: &str) {
        let key = client_key(client_id, client_host);
        let mut clients = self.shared.group_isolation.clients.lock();
        if clients.len() >= MAX_CLIENTS && !clients.contains(&key) {
            clients.clear();
        }
        clients.insert(key);
    }

    /// Whether `group` reads committed records only: one of its members is a client seen
    /// reading so; for a group without members, what was last found.
    pub fn group_isolation(&self, group: &str) -> IsolationLevel {
        let mut members: Vec<(String, String)> = self
            .shared
            .coordinator
            .read_group(group, |g| g.members())
            .unwrap_or_default()
            .into_iter()
            .map(|m| (m.client_id, m.client_host))
            .collect();
        if let Some((_, consumers)) = self.consumer_group_members(group) {
            members.extend(consumers.into_iter().map(|m| (m.client_id, m.client_host)));
        }
        let known = &self.shared.group_isolation;
        if members.is_empty() {
            return known.groups.lock().get(group).copied().unwrap_or_default();
        }
        let seen = {
            let clients = known.clients.lock();
            members
                .iter()
                .any(|(id, host)| clients.contains(&client_key(id, host)))
        };
        let level = match seen && !self.committed_past_stable(group) {
            true => IsolationLevel::ReadCommitted,
            false => IsolationLevel::ReadUncommitted,
        };
        known.groups.lock().insert(group.to_owned(), level);
        level
    }

    /// Whether `group` committed past a partition's last stable offset.
    fn committed_past_stable(&self, group: &str) -> bool {
        self.shared
            .offsets
            .group_offsets(group)
            .into_iter()
            .any(|(topic, partition, committed)| {
                self.partition(&topic, partition as u32)
                    .is_ok_and(|log| committed.offset > log.last_stable_offset().0)
            })
    }
}
