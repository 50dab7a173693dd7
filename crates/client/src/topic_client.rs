//! [`AsyncClient`]'s topic administration: creation and deletion (CreateTopics, DeleteTopics,
//! sent to the controller); the changes of `logd topics alter` (against logd or Kafka): more
//! partitions (CreatePartitions) and config changes (IncrementalAlterConfigs), each refusal with
//! the broker's own words; and the topic's configs (DescribeConfigs) and, from a logd broker,
//! its partitions' cleaner ranges (logd's own DescribePartitionRanges) for `logd topics
//! describe`.

use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::{
    ApiKey, CreatePartitionsRequest, CreatePartitionsResponse, CreateTopicsRequest,
    CreateTopicsResponse, DeleteTopicsRequest, DeleteTopicsResponse, DescribeConfigsRequest,
    DescribeConfigsResponse, IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;
use logd_protocol::partition_ranges::{self, PartitionRanges, PartitionRangesRequest};

use crate::client::AsyncClient;
use crate::error::{Error, Result};
use crate::routing::{Retry, Route};
use logd_protocol::codes;

/// Versions sent: the first each Kafka 2.4+ broker serves with these semantics.
const CREATE_TOPICS: i16 = 3;
const DELETE_TOPICS: i16 = 1;
const CREATE_PARTITIONS: i16 = 1;
const INCREMENTAL_ALTER_CONFIGS: i16 = 0;
const DESCRIBE_CONFIGS: i16 = 1;
/// DescribeConfigs' source of a config set on the topic itself (Kafka's
/// `DYNAMIC_TOPIC_CONFIG`).
const SOURCE_TOPIC: i8 = 1;
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

/// One of a topic's configs as the broker describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicConfigEntry {
    /// Kafka's name (`cleanup.policy`).
    pub name: String,
    /// Its value (`None` for a sensitive or unset one).
    pub value: Option<String>,
    /// Set on the topic, rather than the broker's default.
    pub set_on_topic: bool,
}

impl AsyncClient {
    /// Creates a topic (`partitions` -1 takes the broker's default) and returns once the
    /// metadata shows it with its leaders ([`AsyncClient::await_topic`]).
    pub async fn create_topic(
        &mut self,
        topic: &str,
        partitions: i32,
        configs: &[(String, String)],
    ) -> Result<()> {
        let mut creatable = CreatableTopic::default();
        creatable.name = TopicName(text(topic));
        creatable.num_partitions = partitions;
        creatable.replication_factor = -1;
        creatable.configs = configs
            .iter()
            .map(|(k, v)| {
                let mut c = CreatableTopicConfig::default();
                c.name = StrBytes::from_string(k.clone());
                c.value = Some(StrBytes::from_string(v.clone()));
                c
            })
            .collect();
        let mut request = CreateTopicsRequest::default();
        request.topics = vec![creatable];
        request.timeout_ms = 30_000;
        let response: CreateTopicsResponse = self
            .wire
            .routed(
                Route::Controller,
                ApiKey::CreateTopics,
                CREATE_TOPICS,
                &request,
                |r: &CreateTopicsResponse| r.topics.first().map_or(0, |t| t.error_code),
            )
            .await?;
        let Some(result) = response.topics.first() else {
            return Err(Error::Kafka {
                what: format!("topic {topic}"),
                code: -1,
            });
        };
        if result.error_code == 0 {
            // A creator not allowed to describe what it created has nothing to wait for.
            return match self.await_topic(topic).await {
                Err(Error::Kafka { code, .. }) if code == codes::TOPIC_AUTHORIZATION_FAILED => {
                    Ok(())
                }
                waited => waited,
            };
        }
        // Where the code alone says little, the broker's own words (which limit was hit,
        // which config is wrong) go with it.
        let explained = [
            codes::KAFKA_STORAGE_ERROR,
            codes::UNKNOWN_SERVER_ERROR,
            codes::INVALID_CONFIG,
        ];
        let what = match result.error_message.as_deref() {
            Some(message) if !message.is_empty() && explained.contains(&result.error_code) => {
                format!("topic {topic} [broker: {message}]")
            }
            _ => format!("topic {topic}"),
        };
        Err(Error::Kafka {
            what,
            code: result.error_code,
        })
    }

    /// Waits until the metadata shows `topic` with a leader for each partition. A Kafka
    /// cluster answers CreateTopics once its controller has the topic, before every broker
    /// learns of it; a produce in between would hear the topic does not exist, so creation
    /// waits, for at most the client's retry time, as Kafka's admin users do with
    /// describeTopics. logd shows a topic at once: one metadata request.
    pub async fn await_topic(&mut self, topic: &str) -> Result<()> {
        let mut retry = Retry::new();
        loop {
            let response = self.wire.refresh(&[topic]).await?;
            let found = response
                .topics
                .iter()
                .find(|t| t.name.as_deref().is_some_and(|n| n.as_str() == topic));
            let code = match found {
                None => codes::UNKNOWN_TOPIC_OR_PARTITION,
                Some(t) if t.error_code != 0 => t.error_code,
                Some(t) if t.partitions.is_empty() => codes::UNKNOWN_TOPIC_OR_PARTITION,
                Some(t) => t
                    .partitions
                    .iter()
                    .find(|p| p.error_code != 0 || p.leader_id.0 < 0)
                    .map_or(0, |_| codes::LEADER_NOT_AVAILABLE),
            };
            let settling = matches!(
                code,
                codes::UNKNOWN_TOPIC_OR_PARTITION | codes::LEADER_NOT_AVAILABLE
            );
            if code == 0 || !settling || !retry.again().await {
                return match code {
                    0 => Ok(()),
                    code => Err(Error::Kafka {
                        what: format!("topic {topic}"),
                        code,
                    }),
                };
            }
        }
    }

    /// Deletes a topic.
    pub async fn delete_topic(&mut self, topic: &str) -> Result<()> {
        let mut request = DeleteTopicsRequest::default();
        request.topic_names = vec![TopicName(text(topic))];
        request.timeout_ms = 30_000;
        let response: DeleteTopicsResponse = self
            .wire
            .routed(
                Route::Controller,
                ApiKey::DeleteTopics,
                DELETE_TOPICS,
                &request,
                |r: &DeleteTopicsResponse| r.responses.first().map_or(0, |t| t.error_code),
            )
            .await?;
        match response.responses.first().map(|t| t.error_code) {
            Some(0) => Ok(()),
            code => Err(Error::Kafka {
                what: format!("topic {topic}"),
                code: code.unwrap_or(-1),
            }),
        }
    }

    /// Every config of `topic`, as the broker reports it (any broker answers).
    pub async fn topic_configs(&mut self, topic: &str) -> Result<Vec<TopicConfigEntry>> {
        let mut resource = DescribeConfigsResource::default();
        resource.resource_type = RESOURCE_TOPIC;
        resource.resource_name = text(topic);
        resource.configuration_keys = None;
        let mut request = DescribeConfigsRequest::default();
        request.resources = vec![resource];
        let response: DescribeConfigsResponse = self
            .wire
            .call(ApiKey::DescribeConfigs, DESCRIBE_CONFIGS, &request)
            .await?;
        let result = response.results.into_iter().next();
        topic_outcome(
            topic,
            result
                .as_ref()
                .map(|r| (r.error_code, r.error_message.as_ref())),
        )?;
        Ok(result
            .map(|r| r.configs)
            .unwrap_or_default()
            .into_iter()
            .map(|c| TopicConfigEntry {
                name: c.name.to_string(),
                value: c.value.map(|v| v.to_string()),
                set_on_topic: c.config_source == SOURCE_TOPIC,
            })
            .collect())
    }

    /// Each partition of `topic` divided as logd's cleaner sees it; `None` from a broker that
    /// does not serve logd's DescribePartitionRanges (a Kafka broker), which is never sent it.
    pub async fn partition_ranges(&mut self, topic: &str) -> Result<Option<Vec<PartitionRanges>>> {
        if !self.wire.serves_key(partition_ranges::API_KEY).await? {
            return Ok(None);
        }
        let malformed =
            crate::error::malformed(partition_ranges::API_KEY, partition_ranges::VERSION);
        let mut body = bytes::BytesMut::new();
        PartitionRangesRequest {
            topic: topic.to_owned(),
        }
        .encode(&mut body)
        .map_err(&malformed)?;
        let mut answer = self
            .wire
            .call_raw(
                partition_ranges::API_KEY,
                partition_ranges::VERSION,
                (
                    partition_ranges::REQUEST_HEADER_VERSION,
                    partition_ranges::RESPONSE_HEADER_VERSION,
                ),
                &body,
            )
            .await?;
        let response =
            partition_ranges::PartitionRangesResponse::decode(&mut answer).map_err(malformed)?;
        let message = response.error_message.map(StrBytes::from_string);
        topic_outcome(topic, Some((response.error_code, message.as_ref())))?;
        Ok(Some(response.partitions))
    }

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
            .wire
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
            .wire
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
