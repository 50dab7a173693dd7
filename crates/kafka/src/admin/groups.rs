//! Group changes: delete a group, reset its offsets, with the ACLs Kafka checks for the same
//! work (DeleteGroups: DELETE on the group; a reset is the OffsetCommit that
//! `kafka-consumer-groups --reset-offsets` sends: READ on the group and on each topic).

use logd::{PlannedReset, ResetTarget};
use logd_protocol::acl::{Operation, ResourceType};
use logd_protocol::codes;

use super::{Admin, Caller, Refused};

impl Admin {
    /// Deletes `group`'s offsets and state; `false` when there was no such group. Refused
    /// while it has members.
    pub fn delete_group(&self, caller: &Caller, group: &str) -> Result<bool, Refused> {
        self.guard
            .check(caller, Operation::Delete, ResourceType::Group, group)?;
        Ok(self.log.delete_group(group)?)
    }

    /// Plans (and with `execute`, applies) moving `group`'s offsets on `topics` (every topic
    /// it has offsets on when `None`) to `target`. Refused while the group has members.
    pub fn reset_offsets(
        &self,
        caller: &Caller,
        group: &str,
        topics: Option<Vec<String>>,
        target: ResetTarget,
        execute: bool,
    ) -> Result<Vec<PlannedReset>, Refused> {
        self.guard
            .check(caller, Operation::Read, ResourceType::Group, group)?;
        let topics = topics.unwrap_or_else(|| self.committed_topics(group));
        for topic in &topics {
            self.guard
                .check(caller, Operation::Read, ResourceType::Topic, topic)?;
        }
        if topics.is_empty() {
            return Err(Refused::Invalid {
                code: codes::INVALID_REQUEST,
                message: format!(
                    "group {group} has no committed offsets: name the topics to reset"
                ),
            });
        }
        Ok(self.log.reset_offsets(group, &topics, target, execute)?)
    }

    /// The topics `group` has committed offsets on, sorted.
    fn committed_topics(&self, group: &str) -> Vec<String> {
        let mut topics: Vec<String> = self
            .log
            .offsets()
            .group_offsets(group)
            .into_iter()
            .map(|(topic, _, _)| topic)
            .collect();
        topics.sort();
        topics.dedup();
        topics
    }
}
