//! The records of the offset log (`logd_storage::StateLog` frames them): their bincode
//! payloads are the durable format, so they change only with a format version.

use serde::{Deserialize, Serialize};

/// What one record of the offset log holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Entry {
    /// One commit call: all of its partitions, or none.
    Commit {
        group: String,
        offsets: Vec<StoredCommit>,
    },
    /// A group and all its offsets deleted.
    DeleteGroup { group: String },
    /// Some offsets of a group deleted.
    DeleteOffsets {
        group: String,
        partitions: Vec<(String, i32)>,
    },
}

/// One partition's commit as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct StoredCommit {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub metadata: String,
    pub commit_timestamp: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_delete_group_payload() {
        // enum variant 1 as u32 LE, string length 1 as u64 LE, "g".
        let payload = bincode::serialize(&Entry::DeleteGroup { group: "g".into() }).unwrap();
        assert_eq!(payload, [1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, b'g']);
    }
}
