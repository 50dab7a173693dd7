//! Durable consumer-protocol groups (KIP-848), as Kafka keeps their members, targets and
//! epochs in `__consumer_offsets`: a `logd_storage::StateLog` in `consumer-groups/` of the data
//! directory with one record, the group's whole saved state, after every change a heartbeat,
//! a session expiry or a deletion makes (a heartbeat that changes nothing writes nothing).
//! The change is durable before the heartbeat is answered, so a restarted logd knows every
//! epoch and assignment a member was told: members keep heartbeating with their epochs
//! instead of rejoining, and no partition gets a second owner across the restart. The format
//! is in `docs/format.md`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use logd_storage::{StateLog, StateLogConfig, StateMachine, Storage};
use serde::{Deserialize, Serialize};

use crate::groups::consumer::ConsumerGroup;

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

/// What the log records.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum ConsumerGroupRecord {
    /// A group's state is now this.
    Saved(String, SavedGroup),
    /// A group deleted.
    Removed(String),
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
