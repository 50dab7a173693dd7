//! The topic admin APIs: CreateTopics (v2-7: KIP-464's broker defaults from v4, the created
//! topic's partitions, replication and configs from v5, its id from v7), DeleteTopics (v1-6:
//! by id from v6), CreatePartitions, DescribeConfigs and IncrementalAlterConfigs. Each checks
//! its ACLs and translates into engine calls; the topic rules live in the engine.

use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult,
};
use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult,
};
use kafka_protocol::messages::incremental_alter_configs_request::AlterConfigsResource;
use kafka_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::{
    CreatePartitionsRequest, CreatePartitionsResponse, CreateTopicsRequest, CreateTopicsResponse,
    DeleteTopicsRequest, DeleteTopicsResponse, DescribeConfigsRequest, DescribeConfigsResponse,
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use logd::TopicConfig;
use uuid::Uuid;

use crate::acl::{Operation, ResourceType};
use crate::admin::{Admin, Guard};
use crate::auth::Peer;
use crate::codes;
use crate::engine_codes;
use crate::topic_configs::{set_topic_configs, topic_configs};

/// Kafka's resource types in DescribeConfigs.
const RESOURCE_TOPIC: i8 = 2;
const RESOURCE_BROKER: i8 = 4;
/// Config sources: set on the topic, or the broker's default.
const SOURCE_TOPIC: i8 = 1;
const SOURCE_DEFAULT: i8 = 5;
/// IncrementalAlterConfigs operations.
const OP_SET: i8 = 0;
const OP_DELETE: i8 = 1;
const OP_APPEND: i8 = 2;
const OP_SUBTRACT: i8 = 3;
fn text(s: impl Into<String>) -> StrBytes {
    StrBytes::from_string(s.into())
}

/// CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs and IncrementalAlterConfigs.
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

    pub(super) fn describe_configs(
        &self,
        request: DescribeConfigsRequest,
        version: i16,
        peer: &Peer,
    ) -> DescribeConfigsResponse {
        let mut response = DescribeConfigsResponse::default();
        for resource in request.resources {
            let mut result = DescribeConfigsResult::default();
            result.resource_type = resource.resource_type;
            result.resource_name = resource.resource_name.clone();
            let refused = match resource.resource_type {
                RESOURCE_TOPIC => (!self.guard.allowed(
                    &peer.caller,
                    Operation::DescribeConfigs,
                    ResourceType::Topic,
                    &resource.resource_name,
                ))
                .then_some(codes::TOPIC_AUTHORIZATION_FAILED),
                RESOURCE_BROKER => (!self
                    .guard
                    .allowed_on_cluster(&peer.caller, Operation::DescribeConfigs))
                .then_some(codes::CLUSTER_AUTHORIZATION_FAILED),
                _ => None,
            };
            if let Some(code) = refused {
                result.error_code = code;
                result.error_message = Some(StrBytes::from_static_str("Authorization failed."));
                response.results.push(result);
                continue;
            }
            let wanted = |name: &str| {
                resource
                    .configuration_keys
                    .as_ref()
                    .is_none_or(|keys| keys.iter().any(|k| &**k == name))
            };
            match resource.resource_type {
                RESOURCE_TOPIC => match self.log.describe_topic(&resource.resource_name) {
                    Ok(topic) => {
                        let default = self.log.default_topic_config();
                        result.configs = topic_configs(&topic.config, default)
                            .into_iter()
                            .filter(|entry| wanted(entry.name))
                            .map(|entry| {
                                let mut c = DescribeConfigsResourceResult::default();
                                c.name = StrBytes::from_static_str(entry.name);
                                c.value = Some(text(entry.value));
                                c.config_source = if entry.set {
                                    SOURCE_TOPIC
                                } else {
                                    SOURCE_DEFAULT
                                };
                                if version >= 3 {
                                    c.config_type = entry.kind;
                                }
                                c
                            })
                            .collect();
                    }
                    Err(e) => result.error_code = engine_codes::for_engine_error(&e),
                },
                // The broker has no dynamic configs to show; an empty answer is Kafka's for that.
                RESOURCE_BROKER => {}
                _ => result.error_code = codes::INVALID_REQUEST,
            }
            response.results.push(result);
        }
        response
    }

    /// IncrementalAlterConfigs: SET or DELETE (back to the broker's default) a topic's configs,
    /// all of a resource's changes or none; `validate_only` checks without changing anything.
    /// Broker resources have no dynamic configs on logd.
    pub(super) fn incremental_alter_configs(
        &self,
        request: IncrementalAlterConfigsRequest,
        peer: &Peer,
    ) -> IncrementalAlterConfigsResponse {
        let mut response = IncrementalAlterConfigsResponse::default();
        for resource in request.resources {
            let outcome = match resource.resource_type {
                RESOURCE_TOPIC
                    if !self.guard.allowed(
                        &peer.caller,
                        Operation::AlterConfigs,
                        ResourceType::Topic,
                        &resource.resource_name,
                    ) =>
                {
                    Err((
                        codes::TOPIC_AUTHORIZATION_FAILED,
                        "Authorization failed.".into(),
                    ))
                }
                RESOURCE_TOPIC => self.alter_topic(&resource, request.validate_only),
                RESOURCE_BROKER
                    if !self
                        .guard
                        .allowed_on_cluster(&peer.caller, Operation::AlterConfigs) =>
                {
                    Err((
                        codes::CLUSTER_AUTHORIZATION_FAILED,
                        "Authorization failed.".into(),
                    ))
                }
                RESOURCE_BROKER => Err((
                    codes::INVALID_CONFIG,
                    "logd has no dynamic broker configs: set them at start".into(),
                )),
                other => Err((
                    codes::INVALID_REQUEST,
                    format!("unexpected resource type {other}"),
                )),
            };
            let mut result = AlterConfigsResourceResponse::default();
            result.resource_type = resource.resource_type;
            result.resource_name = resource.resource_name;
            if let Err((code, message)) = outcome {
                result.error_code = code;
                result.error_message = Some(text(message));
            }
            response.responses.push(result);
        }
        response
    }

    fn alter_topic(
        &self,
        resource: &AlterConfigsResource,
        validate_only: bool,
    ) -> Result<(), (i16, String)> {
        let engine = |e: logd::Error| (engine_codes::for_engine_error(&e), e.to_string());
        let name = resource.resource_name.as_str();
        let mut config = self.log.describe_topic(name).map_err(engine)?.config;
        let default = self.log.default_topic_config();
        let mut seen = std::collections::HashSet::new();
        let mut changes = Vec::new();
        for change in &resource.configs {
            if !seen.insert(change.name.as_str()) {
                return Err((
                    codes::INVALID_REQUEST,
                    format!("config {} is changed twice", change.name.as_str()),
                ));
            }
            match change.config_operation {
                OP_SET => changes.push((
                    change.name.as_str(),
                    Some(change.value.as_deref().unwrap_or_default()),
                )),
                OP_DELETE => changes.push((change.name.as_str(), None)),
                OP_APPEND | OP_SUBTRACT => {
                    return Err((
                        codes::INVALID_CONFIG,
                        format!(
                            "{} is not a list config: APPEND and SUBTRACT do not apply",
                            change.name.as_str()
                        ),
                    ));
                }
                other => {
                    return Err((
                        codes::INVALID_REQUEST,
                        format!("unknown config operation {other}"),
                    ));
                }
            }
        }
        set_topic_configs(&mut config, default, changes)?;
        if validate_only {
            config
                .validate()
                .and_then(|()| config.log_config().validate().map_err(logd::Error::Storage))
                .map_err(|e| (codes::INVALID_CONFIG, e.to_string()))
        } else {
            self.log
                .alter_topic_config(name, config)
                .map(|_| tracing::info!(topic = name, "topic configs altered"))
                .map_err(|e| match e {
                    logd::Error::UnknownTopic(_) => engine(e),
                    other => (codes::INVALID_CONFIG, other.to_string()),
                })
        }
    }
}
