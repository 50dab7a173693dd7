//! Durable group state, as Kafka keeps group metadata in `__consumer_offsets`: every group's
//! last settled state (generation, protocol, leader, members with their subscriptions and
//! assignments) on a `logd_storage::StateLog` in `groups/` of the data directory. A settle
//! appends one record for its group, never a rewrite of every group, so its cost does not grow
//! with the number of groups. A restarted logd replays it, so members keep heartbeating and
//! committing under their ids and generation instead of rejoining.
//!
//! A group settles when its leader's assignment arrives (Stable), when it empties, and when a
//! static member's restart replaces its member id. States between settles (a rebalance in
//! progress) are not saved: after a restart the group resumes its last settled generation and
//! its members rebalance again if they were rebalancing. Data directories of logd before the
//! state log kept one `groups.json` rewritten at every settle; it is read once, its groups
//! logged durably, then removed.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use logd_storage::{StateLog, StateLogConfig, StateMachine, Storage};
use serde::{Deserialize, Serialize};

/// The legacy file in the data directory, migrated on open.
pub(crate) const GROUPS_FILE: &str = "groups.json";
/// The state log's directory in the data directory.
pub(crate) const GROUPS_DIR: &str = "groups";

/// A group as saved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SavedGroup {
    pub id: String,
    pub generation: i32,
    pub protocol_type: Option<String>,
    pub protocol: Option<String>,
    pub leader: Option<String>,
    pub next_seq: u64,
    pub members: Vec<SavedMember>,
}

/// A member as saved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SavedMember {
    pub id: String,
    pub instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    /// (protocol name, metadata bytes).
    pub protocols: Vec<(String, Vec<u8>)>,
    pub session_timeout_ms: i64,
    pub rebalance_timeout_ms: i64,
    pub seq: u64,
    pub assignment: Vec<u8>,
}

/// What the group log records.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum GroupRecord {
    /// A group's state at its latest settle.
    Settled(SavedGroup),
    /// A group deleted.
    Removed(String),
}

/// Every group's last settled state: what the log's records change.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct SettledGroups(BTreeMap<String, SavedGroup>);

impl StateMachine for SettledGroups {
    type Record = GroupRecord;

    fn apply(&mut self, record: GroupRecord) {
        match record {
            GroupRecord::Settled(group) => {
                self.0.insert(group.id.clone(), group);
            }
            GroupRecord::Removed(id) => {
                self.0.remove(&id);
            }
        }
    }
}

/// The legacy `groups.json`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LegacyFile {
    version: u32,
    groups: Vec<SavedGroup>,
}

/// Opens the group log in `dir` (the data directory), migrating a legacy `groups.json` into
/// it: its groups are logged durably before the file is removed, so a crash in between finds
/// both and removes the file again (a log with groups in it is never migrated into twice).
/// The error says what is wrong.
pub(crate) fn open(
    storage: Arc<dyn Storage>,
    dir: &Path,
    snapshot_after_bytes: u64,
) -> Result<(StateLog<SettledGroups>, Vec<SavedGroup>), String> {
    let log: StateLog<SettledGroups> = StateLog::open(
        storage.clone(),
        dir.join(GROUPS_DIR),
        StateLogConfig {
            name: "groups",
            snapshot_after_bytes,
        },
    )
    .map_err(|e| e.to_string())?;
    if let Some(legacy) = load_legacy(&*storage, dir)? {
        if log.read(|g| g.0.is_empty()) {
            for group in legacy {
                log.append(GroupRecord::Settled(group))
                    .map_err(|e| e.to_string())?;
            }
        }
        let path = dir.join(GROUPS_FILE);
        storage.remove_file(&path).map_err(|e| e.to_string())?;
        storage.sync_dir(dir).map_err(|e| e.to_string())?;
    }
    let groups = log.read(|g| g.0.values().cloned().collect());
    Ok((log, groups))
}

/// The legacy file's groups, if there is one.
fn load_legacy(storage: &dyn Storage, dir: &Path) -> Result<Option<Vec<SavedGroup>>, String> {
    let path = dir.join(GROUPS_FILE);
    let bytes = match logd_storage::read_file(storage, &path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let parsed: LegacyFile =
        serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    if parsed.version != 1 {
        return Err(format!(
            "{}: unknown version {}",
            path.display(),
            parsed.version
        ));
    }
    Ok(Some(parsed.groups))
}
