//! The config APIs: DescribeConfigs (v1-4: every Kafka topic config with its value, source
//! and, from v3, type; the broker, which has no dynamic configs; a group's configs, in
//! `group_configs.rs`), IncrementalAlterConfigs (v0-1: SET and DELETE per config) and the
//! legacy AlterConfigs (v0-2: the configs given replace every config set on the topic or group,
//! the others go back to the default, as MirrorMaker 2 and older admin clients expect). One
//! mapping of topic config names (`topic_configs.rs`); the engine applies a change durably,
//! all of a resource's or none.

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult,
};
use kafka_protocol::messages::incremental_alter_configs_request::AlterConfigsResource;
use kafka_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::{
    AlterConfigsRequest, AlterConfigsResponse, DescribeConfigsRequest, DescribeConfigsResponse,
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, alter_configs_response,
};
use kafka_protocol::protocol::StrBytes;
use logd::TopicConfig;

use crate::acl::{Operation, ResourceType};
use crate::admin::Guard;
use crate::auth::Peer;
use crate::codes;
use crate::engine_codes;
use crate::topic_configs::{set_topic_configs, topic_configs};

/// Kafka's resource types in the config APIs.
const RESOURCE_TOPIC: i8 = 2;
const RESOURCE_BROKER: i8 = 4;
const RESOURCE_GROUP: i8 = 32;
/// Config sources: set on the topic, or the broker's default (CreateTopics' answer too).
pub(super) const SOURCE_TOPIC: i8 = 1;
pub(super) const SOURCE_DEFAULT: i8 = 5;
/// IncrementalAlterConfigs operations.
const OP_SET: i8 = 0;
const OP_DELETE: i8 = 1;
const OP_APPEND: i8 = 2;
const OP_SUBTRACT: i8 = 3;

pub(super) fn text(s: impl Into<String>) -> StrBytes {
    StrBytes::from_string(s.into())
}

/// DescribeConfigs, IncrementalAlterConfigs and AlterConfigs.
#[derive(Debug)]
pub(super) struct ConfigsApi {
    pub(super) log: logd::Log,
    pub(super) guard: Guard,
}

impl ConfigsApi {
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
                RESOURCE_GROUP => (!self.guard.allowed(
                    &peer.caller,
                    Operation::DescribeConfigs,
                    ResourceType::Group,
                    &resource.resource_name,
                ))
                .then_some(codes::GROUP_AUTHORIZATION_FAILED),
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
                RESOURCE_GROUP => super::group_configs::describe(
                    &self.log,
                    &mut result,
                    version,
                    request.include_synonyms,
                    wanted,
                ),
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
            let outcome = self.alter_resource(
                resource.resource_type,
                &resource.resource_name,
                peer,
                || {
                    let changes = incremental_changes(&resource)?;
                    match resource.resource_type {
                        RESOURCE_GROUP => super::group_configs::alter(
                            &self.log,
                            &resource.resource_name,
                            &changes,
                            request.validate_only,
                        ),
                        _ => self.alter_topic(
                            &resource.resource_name,
                            changes,
                            request.validate_only,
                        ),
                    }
                },
            );
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

    /// The legacy AlterConfigs: as [`ConfigsApi::incremental_alter_configs`], except that
    /// the configs given are the topic's whole set: every config not given goes back to the
    /// broker's default. The fsync policy (`flush.*`) still cannot change on an open topic.
    pub(super) fn alter_configs(
        &self,
        request: AlterConfigsRequest,
        peer: &Peer,
    ) -> AlterConfigsResponse {
        let mut response = AlterConfigsResponse::default();
        for resource in request.resources {
            let outcome = self.alter_resource(
                resource.resource_type,
                &resource.resource_name,
                peer,
                || self.replace_configs(&resource, request.validate_only),
            );
            let mut result = alter_configs_response::AlterConfigsResourceResponse::default();
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

    /// The checks both alter APIs make of a resource before `alter` changes a topic or a
    /// group: ALTER_CONFIGS on it (or on the cluster, for the broker, which has no dynamic
    /// configs on logd); any other resource type is INVALID_REQUEST.
    fn alter_resource(
        &self,
        resource_type: i8,
        name: &str,
        peer: &Peer,
        alter: impl FnOnce() -> Result<(), (i16, String)>,
    ) -> Result<(), (i16, String)> {
        let refused = |code| Err((code, "Authorization failed.".into()));
        match resource_type {
            RESOURCE_TOPIC
                if !self.guard.allowed(
                    &peer.caller,
                    Operation::AlterConfigs,
                    ResourceType::Topic,
                    name,
                ) =>
            {
                refused(codes::TOPIC_AUTHORIZATION_FAILED)
            }
            RESOURCE_TOPIC => alter(),
            RESOURCE_GROUP
                if !self.guard.allowed(
                    &peer.caller,
                    Operation::AlterConfigs,
                    ResourceType::Group,
                    name,
                ) =>
            {
                refused(codes::GROUP_AUTHORIZATION_FAILED)
            }
            RESOURCE_GROUP => alter(),
            RESOURCE_BROKER
                if !self
                    .guard
                    .allowed_on_cluster(&peer.caller, Operation::AlterConfigs) =>
            {
                refused(codes::CLUSTER_AUTHORIZATION_FAILED)
            }
            RESOURCE_BROKER => Err((
                codes::INVALID_CONFIG,
                "logd has no dynamic broker configs: set them at start".into(),
            )),
            other => Err((
                codes::INVALID_REQUEST,
                format!("unexpected resource type {other}"),
            )),
        }
    }

    /// The configs of `resource` as the topic's or group's whole set.
    fn replace_configs(
        &self,
        resource: &kafka_protocol::messages::alter_configs_request::AlterConfigsResource,
        validate_only: bool,
    ) -> Result<(), (i16, String)> {
        let name = resource.resource_name.as_str();
        let mut given = std::collections::BTreeMap::new();
        for config in &resource.configs {
            if given
                .insert(config.name.as_str(), config.value.as_deref())
                .is_some()
            {
                return Err(duplicate_keys());
            }
        }
        // Every config set and not given goes back to the default; the given ones are set (a
        // null value is the default too).
        if resource.resource_type == RESOURCE_GROUP {
            let configs = self.log.group_configs(name);
            let mut changes: Vec<(&str, Option<&str>)> = configs
                .iter()
                .filter(|entry| entry.set && !given.contains_key(entry.name))
                .map(|entry| (entry.name, None))
                .collect();
            changes.extend(given);
            return super::group_configs::alter(&self.log, name, &changes, validate_only);
        }
        let current = self.current_config(name)?;
        let default = self.log.default_topic_config();
        let mut changes: Vec<(&str, Option<&str>)> = topic_configs(&current, default)
            .into_iter()
            .filter(|entry| entry.set && !given.contains_key(entry.name))
            .map(|entry| (entry.name, None))
            .collect();
        changes.extend(given);
        self.change_topic(name, current, changes, validate_only)
    }

    fn alter_topic(
        &self,
        name: &str,
        changes: Vec<(&str, Option<&str>)>,
        validate_only: bool,
    ) -> Result<(), (i16, String)> {
        let current = self.current_config(name)?;
        self.change_topic(name, current, changes, validate_only)
    }

    /// Topic `name`'s config now.
    fn current_config(&self, name: &str) -> Result<TopicConfig, (i16, String)> {
        self.log
            .describe_topic(name)
            .map(|topic| topic.config)
            .map_err(|e| (engine_codes::for_engine_error(&e), e.to_string()))
    }

    /// Applies `changes` (Kafka names; `None`: the default) to topic `name`, whose config is
    /// `config`, all or none; with `validate_only`, only checks them.
    fn change_topic(
        &self,
        name: &str,
        mut config: TopicConfig,
        changes: Vec<(&str, Option<&str>)>,
        validate_only: bool,
    ) -> Result<(), (i16, String)> {
        let engine = |e: logd::Error| (engine_codes::for_engine_error(&e), e.to_string());
        let default = self.log.default_topic_config();
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

/// A config's change: a value to set, or `None` for back to the default.
type Change<'a> = (&'a str, Option<&'a str>);

/// Kafka's refusal of a request naming a config twice.
fn duplicate_keys() -> (i16, String) {
    (
        codes::INVALID_REQUEST,
        "Error due to duplicate config keys".into(),
    )
}

/// An IncrementalAlterConfigs resource's changes (`None`: back to the default), refused as
/// Kafka refuses them: a name twice, SET without a value, or APPEND and SUBTRACT, which apply
/// to list configs only (logd has none that may change so).
fn incremental_changes(resource: &AlterConfigsResource) -> Result<Vec<Change<'_>>, (i16, String)> {
    let mut seen = std::collections::HashSet::new();
    let mut changes = Vec::new();
    for change in &resource.configs {
        let name = change.name.as_str();
        if !seen.insert(name) {
            return Err(duplicate_keys());
        }
        match (change.config_operation, change.value.as_deref()) {
            (OP_SET, Some(value)) => changes.push((name, Some(value))),
            (OP_SET, None) => {
                return Err((
                    codes::INVALID_REQUEST,
                    format!("Null value not supported for : {name}"),
                ));
            }
            (OP_DELETE, _) => changes.push((name, None)),
            (op @ (OP_APPEND | OP_SUBTRACT), _) => {
                let op = if op == OP_APPEND {
                    "APPEND"
                } else {
                    "SUBTRACT"
                };
                return Err((
                    codes::INVALID_CONFIG,
                    format!("Can't {op} to key {name} because its type is not LIST."),
                ));
            }
            (other, _) => {
                return Err((
                    codes::INVALID_REQUEST,
                    format!("unknown config operation {other}"),
                ));
            }
        }
    }
    Ok(changes)
}
