//! Durable consumer-protocol groups (KIP-848), as Kafka keeps their members, targets and
//! epochs in `__consumer_offsets`: a `logd_storage::StateLog` in `consumer-groups/` of the data
//! directory with one record per heartbeat, session expiry or deletion that changed a group,
//! carrying each member and target it changed and the group's epochs if they moved (a
//! heartbeat that changes nothing writes nothing), so a record's size is the change's, not
//! the group's.
//! The change is durable before the heartbeat is answered, so a restarted logd knows every
//! epoch and assignment a member was told: members keep heartbeating with their epochs
//! instead of rejoining, and no partition gets a second owner across the restart. The format
//! is in `docs/format.md`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use logd_storage::{StateLog, StateLogConfig, StateMachine, Storage};
use serde::{Deserialize, Serialize};

use crate::groups::consumer::{Assignment, ConsumerGroup, ConsumerMember, GroupMeta};

/// The state log's directory in the data directory.
pub(crate) const CONSUMER_GROUPS_DIR: &str = "consumer-groups";

/// Fold the log into a snapshot once it is this big.
const SNAPSHOT_AFTER_BYTES: u64 = 4 << 20;

/// A consumer-protocol group as saved: its protocol state and, per member, what the engine
/// keeps beside it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SavedGroup {
    pub group: ConsumerGroup,
    pub members: BTreeMap<String, SavedMember>,
}

impl SavedGroup {
    fn empty() -> SavedGroup {
        SavedGroup {
            group: ConsumerGroup::default(),
            members: BTreeMap::new(),
        }
    }

    fn apply(&mut self, change: GroupChange) {
        match change {
            GroupChange::Member(member_id, member) => {
                let (member, details) = member.map(|boxed| *boxed).unzip();
                match details {
                    Some(details) => self.members.insert(member_id.clone(), details),
                    None => self.members.remove(&member_id),
                };
                self.group.replay_member(member_id, member);
            }
            GroupChange::Target(member_id, target) => self.group.replay_target(member_id, target),
            GroupChange::Meta(meta) => self.group.replay_meta(meta),
        }
    }
}

/// A member's client and subscription as it gave them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SavedMember {
    pub client_id: String,
    pub client_host: String,
    /// The topic names it subscribed to.
    pub names: BTreeSet<String>,
    /// The regular expression it subscribed with, if any.
    pub regex: Option<String>,
}

/// What the log records. Variants are appended, never reordered: bincode names them by
/// index.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum ConsumerGroupRecord {
    /// A group's whole state is now this (what logs written before per-change records hold;
    /// read, no longer written).
    Saved(String, SavedGroup),
    /// A group deleted.
    Removed(String),
    /// What one heartbeat or expiry changed in a group, in one record so that a power cut
    /// keeps all of it or none.
    Changed(String, Vec<GroupChange>),
}

/// One change to a group.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum GroupChange {
    /// A member is now this, or gone (`None`).
    Member(String, Option<Box<(ConsumerMember, SavedMember)>>),
    /// A member's target is now this, or gone (`None`).
    Target(String, Option<Assignment>),
    /// The group's epochs and partition counts are now these.
    Meta(GroupMeta),
}

/// Every consumer-protocol group's last saved state.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct SavedGroups(BTreeMap<String, SavedGroup>);

impl StateMachine for SavedGroups {
    type Record = ConsumerGroupRecord;

    fn apply(&mut self, record: ConsumerGroupRecord) {
        match record {
            ConsumerGroupRecord::Saved(id, group) => {
                self.0.insert(id, group);
            }
            ConsumerGroupRecord::Removed(id) => {
                self.0.remove(&id);
            }
            ConsumerGroupRecord::Changed(id, changes) => {
                let saved = self.0.entry(id).or_insert_with(SavedGroup::empty);
                for change in changes {
                    saved.apply(change);
                }
            }
        }
    }
}

/// Opens the log in `dir` (the data directory) and returns it with every saved group.
pub(crate) fn open(
    storage: Arc<dyn Storage>,
    dir: &Path,
) -> logd_storage::Result<(StateLog<SavedGroups>, BTreeMap<String, SavedGroup>)> {
    let log: StateLog<SavedGroups> = StateLog::open(
        storage,
        dir.join(CONSUMER_GROUPS_DIR),
        StateLogConfig {
            name: "consumer-groups",
            snapshot_after_bytes: SNAPSHOT_AFTER_BYTES,
        },
    )?;
    let saved = log.read(|groups| groups.0.clone());
    Ok((log, saved))
}
