//! [`ShareKeeper`]: keeps what a [`ShareConsumer`] holds while its owner works, from another
//! thread. A handler that runs longer than the group's lock duration would otherwise lose its
//! records to another member (delivered twice, counted twice), and one that runs longer than
//! the session timeout would lose its membership. The keeper renews the records' locks (RENEW,
//! KIP-1222) and counts as hearing from the member, which wire clients do by heartbeating from
//! a background thread.
//!
//! [`ShareConsumer`]: super::ShareConsumer

use std::collections::BTreeMap;

use super::partition::AcknowledgeType;
use crate::engine::Log;
use crate::error::Result;

/// Renews a share consumer's held records and keeps it in its group; cheap to clone, `Send`.
#[derive(Debug, Clone)]
pub struct ShareKeeper {
    pub(super) log: Log,
    pub(super) group: String,
    pub(super) member: String,
}

impl ShareKeeper {
    /// Starts the lock of each of `records` (topic, partition, offset: delivered to the
    /// consumer and not yet acknowledged to the engine) again for the group's lock duration,
    /// and counts as a heartbeat of the member. A record the member no longer holds is
    /// [`crate::Error::InvalidRecordState`], after the others of its partition are renewed.
    pub fn renew(&self, records: &[(String, u32, i64)]) -> Result<()> {
        self.log
            .shared
            .share_groups
            .touch(&self.group, &self.member, self.log.clock().now_ms());
        let mut by_partition: BTreeMap<(&str, u32), Vec<i64>> = BTreeMap::new();
        for (topic, partition, offset) in records {
            by_partition
                .entry((topic.as_str(), *partition))
                .or_default()
                .push(*offset);
        }
        let mut first_error = None;
        for ((topic, partition), offsets) in by_partition {
            let batches: Vec<_> = offsets
                .iter()
                .map(|&o| (o, o, vec![AcknowledgeType::Renew]))
                .collect();
            let renewed = self.log.share_acknowledge(
                &self.group,
                &self.member,
                topic,
                partition,
                &batches,
                &BTreeMap::new(),
            );
            if let Err(e) = renewed {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}
