//! [`AsyncClient`]'s topic changes, for `logd topics alter` (against logd or Kafka): more
//! partitions (CreatePartitions) and config changes (IncrementalAlterConfigs), each refusal with
//! the broker's own words.

use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::{
    ApiKey, CreatePartitionsRequest, CreatePartitionsResponse, IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use crate::client::AsyncClient;
use crate::error::{Error, Result};
use crate::routing::Route;

/// Versions sent: the first each Kafka 2.4+ broker serves with these semantics.
const CREATE_PARTITIONS: i16 = 1;
const INCREMENTAL_ALTER_CONFIGS: i16 = 0;
/// DescribeConfigs' and IncrementalAlterConfigs' resource type of a topic.
const RESOURCE_TOPIC: i8 = 2;

fn text(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_owned())
}

/// The broker's answer for `topic`, from its one result's code and message (`None` when the
/// response has no result at all).
fn topic_outcome(topic: &str, result: Option<(i16, Option<&StrBytes>)>) -> Result<()> {
    let (code, message) = match result {
        Some((0, _)) => return Ok(()),
        Some(refused) => refused,
        None => (-1, None),
    };
    let what = match message.filter(|m| !m.is_empty()) {
        Some(message) => format!("topic {topic} [broker: {}]", message.as_str()),
        None => format!("topic {topic}"),
    };
    Err(Error::Kafka { what, code })
}

impl AsyncClient {
    /// Grows `topic` to `count` partitions.
    pub async fn create_partitions(&mut self, topic: &str, count: i32) -> Result<()> {
        let mut entry = CreatePartitionsTopic::default();
        entry.name = TopicName(text(topic));
        entry.count = count;
        entry.assignments = None;
        let mut request = CreatePartitionsRequest::default();
        request.topics = vec![entry];
        request.timeout_ms = 30_000;
        let response: CreatePartitionsResponse = self
            .routed(
                Route::Controller,
                ApiKey::CreatePartitions,
                CREATE_PARTITIONS,
                &request,
                |r: &CreatePartitionsResponse| r.results.first().map_or(0, |t| t.error_code),
            )
            .await?;
        let result = response.results.first();
        topic_outcome(
            topic,
            result.map(|r| (r.error_code, r.error_message.as_ref())),
        )
    }

    /// Sets the configs in `set` and returns those in `reset` to the broker's default, all or
    /// none.
    pub async fn alter_topic_configs(
        &mut self,
        topic: &str,
        set: &[(String, String)],
        reset: &[String],
    ) -> Result<()> {
        let change = |name: &str, operation: i8, value: Option<&str>| {
            let mut config = AlterableConfig::default();
            config.name = text(name);
            config.config_operation = operation;
            config.value = value.map(text);
            config
        };
        let mut resource = AlterConfigsResource::default();
        resource.resource_type = RESOURCE_TOPIC;
        resource.resource_name = text(topic);
        resource.configs = set
            .iter()
            .map(|(k, v)| change(k, 0, Some(v)))
            .chain(reset.iter().map(|k| change(k, 1, None)))
            .collect();
        let mut request = IncrementalAlterConfigsRequest::default();
        request.resources = vec![resource];
        // Kafka answers this on any broker (it forwards to the controller), as logd does.
        let response: IncrementalAlterConfigsResponse = self
            .call(
                ApiKey::IncrementalAlterConfigs,
                INCREMENTAL_ALTER_CONFIGS,
                &request,
            )
            .await?;
        let result = response.responses.first();
        topic_outcome(
            topic,
            result.map(|r| (r.error_code, r.error_message.as_ref())),
        )
    }
}
