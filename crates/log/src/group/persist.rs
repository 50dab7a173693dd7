//! Durable group state, as Kafka keeps group metadata in `__consumer_offsets`: `groups.json`
//! in the data directory holds every group's last settled state (generation, protocol, leader,
//! members with their subscriptions and assignments). A restarted logd loads it, so members
//! keep heartbeating and committing under their ids and generation instead of rejoining.
//!
//! A group settles when its leader's assignment arrives (Stable), when it empties, and when a
//! static member's restart replaces its member id; the file is replaced atomically then
//! (temp, fsync, rename, fsync directory). States between settles (a rebalance in progress)
//! are not saved: after a restart the group resumes its last settled generation and its
//! members rebalance again if they were rebalancing.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use logd_storage::Storage;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

/// The file in the data directory.
pub(crate) const GROUPS_FILE: &str = "groups.json";

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

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    version: u32,
    groups: Vec<SavedGroup>,
}

const VERSION: u32 = 1;

/// Where group state is saved, and which snapshot was written last.
#[derive(Debug)]
pub(crate) struct GroupFile {
    storage: Arc<dyn Storage>,
    dir: PathBuf,
    /// Sequence number of the last snapshot written: an older snapshot that lost the race to
    /// the file is not written over a newer one.
    written: Mutex<u64>,
}

impl GroupFile {
    /// The group file in `dir`.
    pub(crate) fn new(storage: Arc<dyn Storage>, dir: &Path) -> GroupFile {
        GroupFile {
            storage,
            dir: dir.to_owned(),
            written: Mutex::new(0),
        }
    }

    /// Reads the saved groups (none if the file does not exist).
    pub(crate) fn load(&self) -> Result<Vec<SavedGroup>, String> {
        let path = self.dir.join(GROUPS_FILE);
        let file = match self.storage.open(&path, false) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e.to_string()),
        };
        let len = file.size().map_err(|e| e.to_string())?;
        let mut bytes = vec![0; usize::try_from(len).map_err(|e| e.to_string())?];
        file.read_exact_at(&mut bytes, 0)
            .map_err(|e| e.to_string())?;
        let parsed: File = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
        if parsed.version != VERSION {
            return Err(format!("unknown version {}", parsed.version));
        }
        Ok(parsed.groups)
    }

    /// Writes snapshot number `seq` unless a newer one was written already.
    pub(crate) fn save(&self, seq: u64, groups: Vec<SavedGroup>) -> logd_storage::Result<()> {
        let mut written = self.written.lock();
        if seq <= *written {
            return Ok(());
        }
        let bytes = serde_json::to_vec(&File {
            version: VERSION,
            groups,
        })
        .expect("plain data serializes");
        logd_storage::replace_file(&*self.storage, &self.dir, GROUPS_FILE, &bytes, true)?;
        *written = seq;
        Ok(())
    }
}
