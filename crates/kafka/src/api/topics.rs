//! The topic admin APIs: CreateTopics (v2-7: KIP-464's broker defaults from v4, the created
//! topic's partitions, replication and configs from v5, its id from v7), DeleteTopics (v1-6:
//! by id from v6) and CreatePartitions (the config APIs are `configs.rs`). Each checks its
//! ACLs and translates into engine calls; the topic rules live in the engine.

use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult,
};
use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{
    CreatePartitionsRequest, CreatePartitionsResponse, CreateTopicsRequest, CreateTopicsResponse,
    DeleteTopicsRequest, DeleteTopicsResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use logd::TopicConfig;
use uuid::Uuid;

use super::configs::{SOURCE_DEFAULT, SOURCE_TOPIC};
use crate::acl::{Operation, ResourceType};
use crate::admin::{Admin, Guard};
use crate::auth::Peer;
use crate::codes;
use crate::topic_configs::{set_topic_configs, topic_configs};

fn text(s: impl Into<String>) -> StrBytes {
    StrBytes::from_string(s.into())
}

/// CreateTopics, DeleteTopics and CreatePartitions.
#[derive(Debug)]
pub(super) struct TopicsApi {
    pub(super) log: logd::Log,
    pub(super) guard: Guard,
    /// Creations, deletions and growth go through it, as the console's do.
    pub(super) admin: Admin,
    /// The only broker a replica may be assigned to.
    pub(super) node_id: i32,
}

impl TopicsApi {
    pub(super) fn create_topics(
        &self,
        request: CreateTopicsRequest,
        version: i16,
        peer: &Peer,
    ) -> CreateTopicsResponse {
        let mut response = CreateTopicsResponse::default();
        for topic in request.topics {
            let mut result = CreatableTopicResult::default();
            result.name = topic.name.clone();
            let name = topic.name.0.to_string();
            // The ACLs before the request's own errors, as Kafka: a caller who may not create
            // the topic learns nothing of what else is wrong with it.
            let outcome = self
                .admin
                .may_create_topic(&peer.caller, &name)
                .map_err(|refused| refused.kafka())
                .and_then(|()| self.topic_config(&topic))
                .and_then(|config| {
                    self.admin
                        .create_topic(&peer.caller, &name, config, request.validate_only)
                        .map_err(|refused| refused.kafka())
                });
            match outcome {
                Ok(created) => {
                    if version >= 5 {
                        self.describe_created(&mut result, &created.config, peer);
                    }
                    if version >= 7 {
                        result.topic_id = created.id.map_or(Uuid::nil(), Uuid::from_bytes);
                    }
                }
                Err((code, message)) => {
                    result.error_code = code;
                    result.error_message = Some(text(message));
                    if version >= 5 {
                        result.num_partitions = -1;
                        result.replication_factor = -1;
                        result.configs = None;
                    }
                }
            }
            response.topics.push(result);
        }
        response
    }

    /// A created topic's partitions, replication and configs (CreateTopics v5+); the configs
    /// only with DESCRIBE_CONFIGS on it, as Kafka.
    fn describe_created(
        &self,
        result: &mut CreatableTopicResult,
        config: &TopicConfig,
        peer: &Peer,
    ) {
        result.num_partitions = i32::try_from(config.partitions).unwrap_or(i32::MAX);
        result.replication_factor = 1;
        if !self.guard.allows(
            &peer.caller,
            Operation::DescribeConfigs,
            ResourceType::Topic,
            &result.name.0,
        ) {
            result.topic_config_error_code = codes::TOPIC_AUTHORIZATION_FAILED;
            result.configs = None;
            return;
        }
        let default = self.log.default_topic_config();
        result.configs = Some(
            topic_configs(config, default)
                .into_iter()
                .map(|entry| {
                    let mut c = CreatableTopicConfigs::default();
                    c.name = StrBytes::from_static_str(entry.name);
                    c.value = Some(text(entry.value));
                    c.config_source = if entry.set {
                        SOURCE_TOPIC
                    } else {
                        SOURCE_DEFAULT
                    };
                    c
                })
                .collect(),
        );
    }

    /// The topic config a CreateTopics entry asks for, or the error code and message. A count
    /// or replication factor of -1 takes the broker's default (KIP-464; Kafka's clients send it
    /// from v4 on, and Kafka's broker, like logd, takes it at any version).
    fn topic_config(&self, topic: &CreatableTopic) -> Result<TopicConfig, (i16, String)> {
        let mut config = self.log.default_topic_config().clone();
        if !topic.assignments.is_empty() {
            config.partitions = self.assigned_partitions(topic)?;
            return self.with_configs(config, topic);
        }
        match topic.num_partitions {
            -1 => {}
            n if n > 0 => config.partitions = n as u32,
            n => {
                return Err((
                    codes::INVALID_PARTITIONS,
                    format!("partition count {n} must be positive"),
                ));
            }
        }
        if !matches!(topic.replication_factor, -1 | 1) {
            return Err((
                codes::INVALID_REPLICATION_FACTOR,
                format!(
                    "replication factor {} on a single-node logd",
                    topic.replication_factor
                ),
            ));
        }
        self.with_configs(config, topic)
    }

    /// `config` with the configs a CreateTopics entry sets.
    fn with_configs(
        &self,
        mut config: TopicConfig,
        topic: &CreatableTopic,
    ) -> Result<TopicConfig, (i16, String)> {
        let changes = topic
            .configs
            .iter()
            .map(|entry| (entry.name.as_str(), entry.value.as_deref()));
        set_topic_configs(&mut config, self.log.default_topic_config(), changes)?;
        Ok(config)
    }

    /// The partition count of a manual replica assignment, checked as Kafka's controller
    /// checks one (same codes and messages): the count and replication factor left at -1,
    /// partitions numbered 0 to n-1 once each, each on logd's node alone.
    fn assigned_partitions(&self, topic: &CreatableTopic) -> Result<u32, (i16, String)> {
        if topic.replication_factor != -1 {
            return Err((
                codes::INVALID_REPLICATION_FACTOR,
                "A manual partition assignment was specified, but replication factor was not \
                 set to -1."
                    .into(),
            ));
        }
        if topic.num_partitions != -1 {
            return Err((
                codes::INVALID_PARTITIONS,
                "A manual partition assignment was specified, but numPartitions was not set to \
                 -1."
                .into(),
            ));
        }
        let invalid = |message: String| (codes::INVALID_REPLICA_ASSIGNMENT, message);
        let node = self.node_id;
        let mut partitions = std::collections::BTreeSet::new();
        for assignment in &topic.assignments {
            if !partitions.insert(assignment.partition_index) {
                return Err(invalid(format!(
                    "Found multiple manual partition assignments for partition {}",
                    assignment.partition_index
                )));
            }
            let brokers: Vec<i32> = assignment.broker_ids.iter().map(|b| b.0).collect();
            match brokers[..] {
                [] => {
                    return Err(invalid(
                        "The manual partition assignment includes an empty replica list.".into(),
                    ));
                }
                [only] if only == node => {}
                _ => {
                    let other = brokers
                        .iter()
                        .find(|b| **b != node)
                        .copied()
                        .unwrap_or(node);
                    return Err(invalid(if other == node {
                        format!(
                            "The manual partition assignment includes the broker {node} more \
                             than once."
                        )
                    } else {
                        format!(
                            "The manual partition assignment includes broker {other}, but no \
                             such broker is registered."
                        )
                    }));
                }
            }
        }
        let count = partitions.len();
        if partitions.iter().copied().ne(0..count as i32) {
            return Err(invalid(
                "partitions should be a consecutive 0-based integer sequence".into(),
            ));
        }
        Ok(count as u32)
    }

    /// DeleteTopics: by name (v1-5) or by name or topic id (v6).
    pub(super) fn delete_topics(
        &self,
        request: DeleteTopicsRequest,
        version: i16,
        peer: &Peer,
    ) -> DeleteTopicsResponse {
        let wanted: Vec<(Option<String>, Uuid)> = if version >= 6 {
            request
                .topics
                .into_iter()
                .map(|t| (t.name.map(|n| n.0.to_string()), t.topic_id))
                .collect()
        } else {
            request
                .topic_names
                .into_iter()
                .map(|n| (Some(n.0.to_string()), Uuid::nil()))
                .collect()
        };
        let mut response = DeleteTopicsResponse::default();
        for (name, id) in wanted {
            let mut result = DeletableTopicResult::default();
            let name = name.or_else(|| self.log.topic_name_by_id(id.as_bytes()));
            let outcome = match &name {
                None => Err(codes::UNKNOWN_TOPIC_ID),
                Some(name) => self
                    .admin
                    .delete_topic(&peer.caller, name)
                    .map_err(|refused| refused.code()),
            };
            if let Err(code) = outcome {
                result.error_code = code;
            }
            if version >= 6 {
                result.topic_id = id;
            }
            result.name = name.map(|n| TopicName(text(n)));
            response.responses.push(result);
        }
        response
    }

    /// CreatePartitions: grows topics (ALTER on each), never shrinks; `validate_only` checks
    /// without changing anything.
    pub(super) fn create_partitions(
        &self,
        request: CreatePartitionsRequest,
        peer: &Peer,
    ) -> CreatePartitionsResponse {
        let mut response = CreatePartitionsResponse::default();
        let mut seen = std::collections::HashSet::new();
        let duplicated: std::collections::HashSet<String> = request
            .topics
            .iter()
            .filter(|t| !seen.insert(t.name.0.to_string()))
            .map(|t| t.name.0.to_string())
            .collect();
        for topic in request.topics {
            let name = topic.name.0.to_string();
            let outcome = if duplicated.contains(&name) {
                Err((codes::INVALID_REQUEST, "Duplicate topic in request.".into()))
            } else {
                let assignments: Option<Vec<Vec<i32>>> = topic.assignments.as_ref().map(|a| {
                    a.iter()
                        .map(|a| a.broker_ids.iter().map(|b| b.0).collect())
                        .collect()
                });
                self.admin
                    .add_partitions(
                        &peer.caller,
                        &name,
                        topic.count,
                        assignments.as_deref(),
                        request.validate_only,
                    )
                    .map_err(|refused| refused.kafka())
            };
            let mut result = CreatePartitionsTopicResult::default();
            result.name = topic.name;
            if let Err((code, message)) = outcome {
                result.error_code = code;
                result.error_message = Some(text(message));
            }
            response.results.push(result);
        }
        response
    }
}
