//! DescribeConfigs and IncrementalAlterConfigs on GROUP resources (type 32): Kafka 4.4's group
//! configs over the engine's ([`logd::Log::group_configs`]), with Kafka's checks and answers:
//! DESCRIBE_CONFIGS and ALTER_CONFIGS on the group (GROUP_AUTHORIZATION_FAILED), an empty group
//! id INVALID_REQUEST, sources `GROUP_CONFIG` (8) for a value set on the group and
//! `DEFAULT_CONFIG` otherwise, each value's synonym the broker config it falls back to.

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use logd::GroupConfigType;

use super::configs::{SOURCE_DEFAULT, text};
use crate::codes;
use crate::engine_codes;

/// Kafka's config source of a value set on the group (`DYNAMIC_GROUP_CONFIG`).
const SOURCE_GROUP: i8 = 8;

/// DescribeConfigs' type code (v3+).
fn type_code(config_type: GroupConfigType) -> i8 {
    match config_type {
        GroupConfigType::Boolean => 1,
        GroupConfigType::String => 2,
        GroupConfigType::Int => 3,
        GroupConfigType::Long => 5,
        GroupConfigType::List => 7,
    }
}

/// Group `result.resource_name`'s configs, those `wanted`, into `result`.
pub(super) fn describe(
    log: &logd::Log,
    result: &mut DescribeConfigsResult,
    version: i16,
    include_synonyms: bool,
    wanted: impl Fn(&str) -> bool,
) {
    if result.resource_name.is_empty() {
        result.error_code = codes::INVALID_REQUEST;
        result.error_message = Some(text("Group name must not be empty"));
        return;
    }
    result.configs = log
        .group_configs(&result.resource_name)
        .into_iter()
        .filter(|entry| wanted(entry.name))
        .map(|entry| {
            let source = if entry.set {
                SOURCE_GROUP
            } else {
                SOURCE_DEFAULT
            };
            let mut c = DescribeConfigsResourceResult::default();
            c.name = text(entry.name);
            c.value = Some(text(entry.value.clone()));
            c.config_source = source;
            if version >= 3 {
                c.config_type = type_code(entry.config_type);
            }
            if include_synonyms {
                let synonym = |name: &str, value: &str, source| {
                    let mut s = DescribeConfigsSynonym::default();
                    s.name = text(name);
                    s.value = Some(text(value));
                    s.source = source;
                    s
                };
                if entry.set {
                    c.synonyms
                        .push(synonym(entry.name, &entry.value, SOURCE_GROUP));
                }
                c.synonyms
                    .push(synonym(entry.synonym, entry.default, SOURCE_DEFAULT));
            }
            c
        })
        .collect();
}

/// Applies `changes` (`None`: back to the default) to group `group`, all or none.
pub(super) fn alter(
    log: &logd::Log,
    group: &str,
    changes: &[(&str, Option<&str>)],
    validate_only: bool,
) -> Result<(), (i16, String)> {
    if group.is_empty() {
        return Err((
            codes::INVALID_REQUEST,
            "Default group resources are not allowed.".into(),
        ));
    }
    log.alter_group_configs(group, changes, validate_only)
        .map_err(|e| {
            let message = match &e {
                logd::Error::InvalidGroupConfig(message) => message.clone(),
                other => other.to_string(),
            };
            (engine_codes::for_engine_error(&e), message)
        })
}
