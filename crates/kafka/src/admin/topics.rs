//! Topic changes: create, delete, add partitions, with the ACLs Kafka checks for each
//! (CreateTopics: CREATE on the cluster or the topic; DeleteTopics: DELETE; CreatePartitions:
//! ALTER) and Kafka's refusals of a partition count that does not grow.

use logd::TopicConfig;
use logd_protocol::acl::{CLUSTER_NAME, Operation, ResourceType};
use logd_protocol::codes;

use super::{Admin, Caller, Refused};

/// A topic created (or, validating only, one that would be).
#[derive(Debug, Clone)]
pub struct NewTopic {
    /// Its configuration.
    pub config: TopicConfig,
    /// Its stable id; `None` when only validated.
    pub id: Option<[u8; 16]>,
}

impl Admin {
    /// Creates `name` with `config`; with `validate_only`, checks that it could be.
    pub fn create_topic(
        &self,
        caller: &Caller,
        name: &str,
        config: TopicConfig,
        validate_only: bool,
    ) -> Result<NewTopic, Refused> {
        self.may_create_topic(caller, name)?;
        if validate_only {
            logd::validate_topic_name(name)?;
            config.validate().map_err(|e| Refused::Invalid {
                code: codes::INVALID_CONFIG,
                message: e.to_string(),
            })?;
            return Ok(NewTopic { config, id: None });
        }
        let created = self.log.create_topic(name, config)?;
        Ok(NewTopic {
            config: created.config,
            id: Some(created.id),
        })
    }

    /// Whether `caller` may create `name`: CREATE on the cluster (asked quietly, since CREATE
    /// on the topic may still allow it), or on the topic.
    pub fn may_create_topic(&self, caller: &Caller, name: &str) -> Result<(), Refused> {
        if self.may_create_any_topic(caller) {
            return Ok(());
        }
        self.guard
            .check(caller, Operation::Create, ResourceType::Topic, name)
    }

    /// Whether `caller` may create any topic (CREATE on the cluster), asked quietly.
    pub fn may_create_any_topic(&self, caller: &Caller) -> bool {
        self.guard.allows(
            caller,
            Operation::Create,
            ResourceType::Cluster,
            CLUSTER_NAME,
        )
    }

    /// Deletes `name`, its data and every group's offsets on it.
    pub fn delete_topic(&self, caller: &Caller, name: &str) -> Result<(), Refused> {
        self.guard
            .check(caller, Operation::Delete, ResourceType::Topic, name)?;
        Ok(self.log.delete_topic(name)?)
    }

    /// Grows `name` to `count` partitions, each new one on the brokers `assignments` names
    /// when given (this node alone, on one node); refused as Kafka refuses a count that does
    /// not grow. With `validate_only`, checks without changing anything.
    pub fn add_partitions(
        &self,
        caller: &Caller,
        name: &str,
        count: i32,
        assignments: Option<&[Vec<i32>]>,
        validate_only: bool,
    ) -> Result<(), Refused> {
        self.guard
            .check(caller, Operation::Alter, ResourceType::Topic, name)?;
        let current = i64::from(self.log.partition_count(name)?);
        let wanted = i64::from(count);
        let invalid = |message: String| Refused::Invalid {
            code: codes::INVALID_PARTITIONS,
            message,
        };
        if wanted < current {
            return Err(invalid(format!(
                "Topic currently has {current} partitions, which is higher than the requested \
                 {wanted}."
            )));
        }
        if wanted == current {
            return Err(invalid(format!("Topic already has {current} partitions.")));
        }
        if let Some(assignments) = assignments {
            let node = self.node_id;
            let fits = assignments.len() as i64 == wanted - current
                && assignments.iter().all(|brokers| brokers[..] == [node]);
            if !fits {
                return Err(Refused::Invalid {
                    code: codes::INVALID_REPLICA_ASSIGNMENT,
                    message: format!(
                        "a single-node logd assigns each new partition to broker {node} alone"
                    ),
                });
            }
        }
        if validate_only {
            return Ok(());
        }
        Ok(self.log.add_partitions(name, wanted as u32)?)
    }
}
