//! Metadata, v0 to v13 as Kafka 4.x serves it: the one broker at the address of the listener
//! the client came in on, and each topic asked for (every topic the principal may describe
//! when none is named) with its partitions led by this node at leader epoch 0 (v7+), its
//! stable id (v10+, and topics asked for by id from v10), and the operations the principal may
//! do (v8+, when asked). Auto-creation follows Kafka: implicit before v4, needs CREATE.
//! DescribeCluster (v0 to v2), the admin clients' view of the same: this node as the one broker
//! and the controller, the cluster id, and the cluster operations the principal may do.
//! DescribeLogDirs: the data directory, the size of each partition in it, and (v4) the file
//! system's size and free space.

use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{
    BrokerId, DescribeClusterRequest, DescribeClusterResponse, MetadataRequest, MetadataResponse,
    TopicName,
};
use kafka_protocol::messages::{DescribeLogDirsRequest, DescribeLogDirsResponse};
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use crate::acl::{CLUSTER_NAME, Operation, ResourceType};
use crate::admin::{Admin, Guard};
use crate::auth::Peer;
use crate::codes;
use crate::engine_codes;

/// The operations a topic has, for its authorized-operations bit field.
pub(super) const TOPIC_OPERATIONS: [Operation; 8] = [
    Operation::Read,
    Operation::Write,
    Operation::Create,
    Operation::Delete,
    Operation::Alter,
    Operation::Describe,
    Operation::DescribeConfigs,
    Operation::AlterConfigs,
];

/// The operations the cluster has, for its authorized-operations bit field.
const CLUSTER_OPERATIONS: [Operation; 7] = [
    Operation::Create,
    Operation::Alter,
    Operation::Describe,
    Operation::ClusterAction,
    Operation::DescribeConfigs,
    Operation::AlterConfigs,
    Operation::IdempotentWrite,
];

/// A topic the request names: by name, or (v10+) by id alone.
enum Wanted {
    Name(String),
    UnknownId(Uuid),
}

/// Metadata, DescribeCluster and DescribeLogDirs.
#[derive(Debug)]
pub(super) struct ClusterApi {
    pub(super) log: logd::Log,
    pub(super) guard: Guard,
    /// Metadata's auto-creation goes through it.
    pub(super) admin: Admin,
    pub(super) node_id: i32,
    pub(super) cluster_id: String,
}

impl ClusterApi {
    /// DescribeCluster. An admin asking for the controllers' endpoints (endpoint type 2) of a
    /// broker listener is answered UNSUPPORTED_ENDPOINT_TYPE, as Kafka's brokers answer it.
    pub(super) fn describe_cluster(
        &self,
        request: DescribeClusterRequest,
        peer: &Peer,
    ) -> DescribeClusterResponse {
        let mut response = DescribeClusterResponse::default();
        response.endpoint_type = 1;
        if request.endpoint_type == 2 {
            response.error_code = codes::UNSUPPORTED_ENDPOINT_TYPE;
            response.error_message = Some(StrBytes::from_static_str(
                "The request was sent to an endpoint of type BROKER, but we wanted an endpoint \
                 of type CONTROLLER",
            ));
            return response;
        }
        let mut broker = DescribeClusterBroker::default();
        broker.broker_id = BrokerId(self.node_id);
        broker.host = StrBytes::from_string(peer.listener.advertised_host.clone());
        broker.port = i32::from(peer.listener.advertised_port);
        response.brokers = vec![broker];
        response.cluster_id = StrBytes::from_string(self.cluster_id.clone());
        response.controller_id = BrokerId(self.node_id);
        response.cluster_authorized_operations = if request.include_cluster_authorized_operations {
            self.guard.authorized_operations(
                &peer.caller,
                ResourceType::Cluster,
                CLUSTER_NAME,
                &CLUSTER_OPERATIONS,
            )
        } else {
            i32::MIN
        };
        response
    }

    pub(super) fn metadata(
        &self,
        request: MetadataRequest,
        version: i16,
        peer: &Peer,
    ) -> MetadataResponse {
        let listener = &peer.listener;
        // Every topic the principal may describe (the others are left out, as Kafka does), or
        // the named ones.
        let every_topic = || {
            let mut all = self.log.list_topics();
            all.retain(|t| {
                self.guard
                    .allows(&peer.caller, Operation::Describe, ResourceType::Topic, t)
            });
            all.into_iter().map(Wanted::Name).collect()
        };
        let wanted: Vec<Wanted> = match request.topics {
            None => every_topic(),
            // In v0 an empty list means every topic.
            Some(topics) if topics.is_empty() && version == 0 => every_topic(),
            // A topic id, when one is given, names the topic whatever the name says: the Java
            // client sends an empty name beside the id, and Kafka goes by the id.
            Some(topics) => topics
                .into_iter()
                .map(|t| match t.name {
                    Some(name) if t.topic_id.is_nil() => Wanted::Name(name.0.to_string()),
                    _ => match self.log.topic_name_by_id(t.topic_id.as_bytes()) {
                        Some(name) => Wanted::Name(name),
                        None => Wanted::UnknownId(t.topic_id),
                    },
                })
                .collect(),
        };
        // Before v4 a metadata request asks for auto-creation implicitly, as in Kafka.
        let auto_create = version < 4 || request.allow_auto_topic_creation;
        let node = BrokerId(self.node_id);
        let mut broker = MetadataResponseBroker::default();
        broker.node_id = node;
        broker.host = StrBytes::from_string(listener.advertised_host.clone());
        broker.port = i32::from(listener.advertised_port);
        let mut response = MetadataResponse::default();
        response.brokers = vec![broker];
        if version >= 1 {
            response.controller_id = node;
        }
        if version >= 2 {
            response.cluster_id = Some(StrBytes::from_string(self.cluster_id.clone()));
        }
        if (8..=10).contains(&version) {
            response.cluster_authorized_operations =
                if request.include_cluster_authorized_operations {
                    self.guard.authorized_operations(
                        &peer.caller,
                        ResourceType::Cluster,
                        CLUSTER_NAME,
                        &CLUSTER_OPERATIONS,
                    )
                } else {
                    i32::MIN
                };
        }
        response.topics = wanted
            .into_iter()
            .map(|wanted| {
                let mut topic = match wanted {
                    Wanted::Name(name) => self.topic_metadata(&name, auto_create, version, peer),
                    Wanted::UnknownId(id) => {
                        let mut topic = MetadataResponseTopic::default();
                        topic.error_code = codes::UNKNOWN_TOPIC_ID;
                        topic.topic_id = id;
                        topic.name = None;
                        topic
                    }
                };
                if version >= 8 {
                    topic.topic_authorized_operations = match (&topic.name, topic.error_code) {
                        (Some(name), 0) if request.include_topic_authorized_operations => {
                            self.guard.authorized_operations(
                                &peer.caller,
                                ResourceType::Topic,
                                name,
                                &TOPIC_OPERATIONS,
                            )
                        }
                        _ => i32::MIN,
                    };
                }
                topic
            })
            .collect();
        response
    }

    /// One named topic: its partitions, or why not (not allowed to see it, unknown, or not
    /// allowed to create it).
    fn topic_metadata(
        &self,
        name: &str,
        auto_create: bool,
        version: i16,
        peer: &Peer,
    ) -> MetadataResponseTopic {
        let mut topic = MetadataResponseTopic::default();
        topic.name = Some(TopicName(StrBytes::from_string(name.to_owned())));
        if !self
            .guard
            .allowed(&peer.caller, Operation::Describe, ResourceType::Topic, name)
        {
            topic.error_code = codes::TOPIC_AUTHORIZATION_FAILED;
            return topic;
        }
        let known = self.log.partition_count(name).is_ok();
        // Auto-creation needs CREATE on the cluster or on the topic.
        if auto_create
            && !known
            && !self.admin.may_create_any_topic(&peer.caller)
            && !self
                .guard
                .allowed(&peer.caller, Operation::Create, ResourceType::Topic, name)
        {
            topic.error_code = codes::TOPIC_AUTHORIZATION_FAILED;
            return topic;
        }
        let exists = if auto_create && !known {
            self.log.ensure_topic(name)
        } else {
            Ok(known)
        };
        let described = exists.and_then(|exists| match exists {
            true => self.log.topic_id_and_partitions(name).map(Some),
            false => Ok(None),
        });
        let node = BrokerId(self.node_id);
        match described {
            Ok(Some((id, partitions))) => {
                if version >= 10 {
                    topic.topic_id = Uuid::from_bytes(id);
                }
                topic.partitions = (0..partitions as i32)
                    .map(|index| {
                        let mut p = MetadataResponsePartition::default();
                        p.partition_index = index;
                        p.leader_id = node;
                        // One node, never a new leader: its epoch is 0.
                        p.leader_epoch = 0;
                        p.replica_nodes = vec![node];
                        p.isr_nodes = vec![node];
                        p
                    })
                    .collect();
            }
            Ok(None) => topic.error_code = codes::UNKNOWN_TOPIC_OR_PARTITION,
            Err(e) => topic.error_code = engine_codes::for_engine_error(&e),
        }
        topic
    }

    /// One log directory (the data directory) with the size of each requested partition
    /// (every partition when `topics` is null); unknown topics and partitions are left out, as
    /// Kafka does. Needs DESCRIBE on the cluster: without it the answer is empty before v3
    /// (no error field) and the refusal's code from v3; v4 adds the file system's size and free
    /// space.
    pub(super) fn describe_log_dirs(
        &self,
        request: DescribeLogDirsRequest,
        version: i16,
        peer: &Peer,
    ) -> DescribeLogDirsResponse {
        if !self
            .guard
            .allowed_on_cluster(&peer.caller, Operation::Describe)
        {
            let mut refused = DescribeLogDirsResponse::default();
            if version >= 3 {
                refused.error_code = codes::CLUSTER_AUTHORIZATION_FAILED;
            }
            return refused;
        }
        let wanted: Vec<(String, Option<Vec<i32>>)> = match request.topics {
            None => self
                .log
                .list_topics()
                .into_iter()
                .map(|t| (t, None))
                .collect(),
            Some(topics) => topics
                .into_iter()
                .map(|t| (t.topic.to_string(), Some(t.partitions)))
                .collect(),
        };
        let mut result = DescribeLogDirsResult::default();
        result.log_dir = StrBytes::from_string(self.log.dir().display().to_string());
        for (name, partitions) in wanted {
            let Ok(count) = self.log.partition_count(&name) else {
                continue;
            };
            let indexes = partitions.unwrap_or_else(|| (0..count as i32).collect());
            let mut topic = DescribeLogDirsTopic::default();
            for index in indexes {
                let Ok(log) = self
                    .log
                    .partition(&name, u32::try_from(index).unwrap_or(u32::MAX))
                else {
                    continue;
                };
                let mut partition = DescribeLogDirsPartition::default();
                partition.partition_index = index;
                partition.partition_size = log.size_bytes() as i64;
                topic.partitions.push(partition);
            }
            topic.name = TopicName(StrBytes::from_string(name));
            result.topics.push(topic);
        }
        if version >= 4 {
            (result.total_bytes, result.usable_bytes) = logd_storage::disk_space(self.log.dir());
        }
        let mut response = DescribeLogDirsResponse::default();
        response.results = vec![result];
        response
    }
}
