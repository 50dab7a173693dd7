//! [`Client`]: [`AsyncClient`] for synchronous callers, such as logd's command-line tools and
//! the remote retry transport: each call runs the async one to completion on the client's own
//! single-threaded tokio runtime.

use std::collections::BTreeMap;

use bytes::Bytes;
use kafka_protocol::messages::MetadataResponse;
use tokio::runtime::Runtime;

use crate::client::AsyncClient;
use crate::client_security::ClientSecurity;
use crate::consumer_group_client::ConsumerGroupInfo;
use crate::error::Result;
use crate::group_client::GroupInfo;
use crate::quota_client::EntityQuotas;
use crate::records_client::{ActiveProducer, Fetched, PartitionOffsets};
use crate::share_group_client::ShareGroupInfo;
use crate::txn_client::TransactionInfo;
use crate::txn_producer::TransactionalProducer;
use crate::user_client::UserCredentials;
use logd_protocol::acl::{AclBinding, AclFilter};
use logd_protocol::quota::QuotaEntity;
use logd_protocol::scram::ScramMechanism;

/// A blocking connection to one broker.
#[derive(Debug)]
pub struct Client {
    runtime: Runtime,
    inner: AsyncClient,
}

impl Client {
    /// Connects to `addr` (e.g. `127.0.0.1:9092`) in clear text, without logging in.
    pub fn connect(addr: &str) -> Result<Client> {
        Client::connect_with(addr, &ClientSecurity::default())
    }

    /// Connects to `addr` over TLS and logs in, as `security` says.
    pub fn connect_with(addr: &str, security: &ClientSecurity) -> Result<Client> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        let inner = runtime.block_on(AsyncClient::connect_with(addr, security))?;
        Ok(Client { runtime, inner })
    }

    /// Topic names and partition counts (`None`: all topics); with `auto_create`, missing
    /// topics are created if the broker allows it (as producers ask).
    pub fn metadata(
        &mut self,
        topics: Option<&[&str]>,
        auto_create: bool,
    ) -> Result<MetadataResponse> {
        self.runtime
            .block_on(self.inner.metadata(topics, auto_create))
    }

    /// The number of partitions of `topic` (created first if `auto_create` and the broker
    /// allows it).
    pub fn partition_count(&mut self, topic: &str, auto_create: bool) -> Result<u32> {
        self.runtime
            .block_on(self.inner.partition_count(topic, auto_create))
    }

    /// Creates a topic (`partitions` -1 takes the broker's default) and returns once the
    /// metadata shows it with its leaders.
    pub fn create_topic(
        &mut self,
        topic: &str,
        partitions: i32,
        configs: &[(String, String)],
    ) -> Result<()> {
        self.runtime
            .block_on(self.inner.create_topic(topic, partitions, configs))
    }

    /// Waits until the cluster's metadata shows `topic` with a leader for each partition.
    pub fn await_topic(&mut self, topic: &str) -> Result<()> {
        self.runtime.block_on(self.inner.await_topic(topic))
    }

    /// Grows `topic` to `count` partitions.
    pub fn create_partitions(&mut self, topic: &str, count: i32) -> Result<()> {
        self.runtime
            .block_on(self.inner.create_partitions(topic, count))
    }

    /// Every config of `topic`, as the broker reports it.
    pub fn topic_configs(&mut self, topic: &str) -> Result<Vec<crate::TopicConfigEntry>> {
        self.runtime.block_on(self.inner.topic_configs(topic))
    }

    /// Each partition of `topic` divided as logd's cleaner sees it; `None` from a Kafka broker.
    pub fn partition_ranges(
        &mut self,
        topic: &str,
    ) -> Result<Option<Vec<logd_protocol::partition_ranges::PartitionRanges>>> {
        self.runtime.block_on(self.inner.partition_ranges(topic))
    }

    /// Sets configs of `topic` and returns others to the broker's default, all or none.
    pub fn alter_topic_configs(
        &mut self,
        topic: &str,
        set: &[(String, String)],
        reset: &[String],
    ) -> Result<()> {
        self.runtime
            .block_on(self.inner.alter_topic_configs(topic, set, reset))
    }

    /// Deletes a topic.
    pub fn delete_topic(&mut self, topic: &str) -> Result<()> {
        self.runtime.block_on(self.inner.delete_topic(topic))
    }

    /// The offset a ListOffsets `timestamp` (-2 earliest, -1 latest, else a time in ms) gives;
    /// `None` when no record is that new.
    pub fn list_offset(
        &mut self,
        topic: &str,
        partition: i32,
        timestamp: i64,
    ) -> Result<Option<i64>> {
        self.runtime
            .block_on(self.inner.list_offset(topic, partition, timestamp))
    }

    /// The size in bytes of each partition of `topic` (DescribeLogDirs), by partition.
    pub fn partition_sizes(&mut self, topic: &str) -> Result<Vec<(i32, i64)>> {
        self.runtime.block_on(self.inner.partition_sizes(topic))
    }

    /// A producer id for an idempotent producer, epoch 0 (InitProducerId).
    pub fn init_producer_id(&mut self) -> Result<i64> {
        self.runtime.block_on(self.inner.init_producer_id())
    }

    /// The idempotent producers every partition of `topic` tracks (DescribeProducers).
    pub fn producers(&mut self, topic: &str) -> Result<Vec<ActiveProducer>> {
        self.runtime.block_on(self.inner.producers(topic))
    }

    /// Earliest and latest offsets of a partition.
    pub fn offsets(&mut self, topic: &str, partition: i32) -> Result<PartitionOffsets> {
        self.runtime.block_on(self.inner.offsets(topic, partition))
    }

    /// Earliest and latest offsets of each of `partitions`, in two requests.
    pub fn offsets_of(
        &mut self,
        topic: &str,
        partitions: &[i32],
    ) -> Result<BTreeMap<i32, PartitionOffsets>> {
        self.runtime
            .block_on(self.inner.offsets_of(topic, partitions))
    }

    /// Appends record batches to a partition with acks = all; returns the base offset.
    pub fn produce(&mut self, topic: &str, partition: i32, batches: Vec<u8>) -> Result<i64> {
        self.runtime
            .block_on(self.inner.produce(topic, partition, batches))
    }

    /// Fetches whole batches from `offset`, waiting up to `max_wait_ms` for data; returns the
    /// batches' bytes and the partition's high watermark.
    pub fn fetch(
        &mut self,
        topic: &str,
        partition: i32,
        offset: i64,
        max_wait_ms: i32,
    ) -> Result<(Bytes, i64)> {
        self.runtime
            .block_on(self.inner.fetch(topic, partition, offset, max_wait_ms))
    }

    /// [`AsyncClient::fetch_isolated`]: a fetch at an isolation level.
    pub fn fetch_isolated(
        &mut self,
        topic: &str,
        partition: i32,
        offset: i64,
        max_wait_ms: i32,
        read_committed: bool,
    ) -> Result<Fetched> {
        self.runtime.block_on(self.inner.fetch_isolated(
            topic,
            partition,
            offset,
            max_wait_ms,
            read_committed,
        ))
    }

    /// [`AsyncClient::init_transactions`]: produce as transactional id `id`, fencing earlier
    /// instances.
    pub fn init_transactions(
        &mut self,
        id: &str,
        timeout_ms: i32,
    ) -> Result<TransactionalProducer> {
        self.runtime
            .block_on(self.inner.init_transactions(id, timeout_ms))
    }

    /// [`AsyncClient::send_in_transaction`]: a batch inside `producer`'s transaction.
    pub fn send_in_transaction(
        &mut self,
        producer: &mut TransactionalProducer,
        topic: &str,
        partition: i32,
        batch: Vec<u8>,
    ) -> Result<i64> {
        self.runtime.block_on(
            self.inner
                .send_in_transaction(producer, topic, partition, batch),
        )
    }

    /// [`AsyncClient::send_offsets_to_transaction`]: a group's offsets inside `producer`'s
    /// transaction.
    pub fn send_offsets_to_transaction(
        &mut self,
        producer: &mut TransactionalProducer,
        group: &str,
        offsets: &[(String, i32, i64)],
    ) -> Result<()> {
        self.runtime.block_on(
            self.inner
                .send_offsets_to_transaction(producer, group, offsets),
        )
    }

    /// [`AsyncClient::end_transaction`]: commits or aborts `producer`'s transaction.
    pub fn end_transaction(
        &mut self,
        producer: &mut TransactionalProducer,
        commit: bool,
    ) -> Result<()> {
        self.runtime
            .block_on(self.inner.end_transaction(producer, commit))
    }

    /// Every user with a credential, and each one's SCRAM mechanisms and iterations.
    pub fn describe_users(&mut self) -> Result<Vec<UserCredentials>> {
        self.runtime.block_on(self.inner.describe_users())
    }

    /// Every entity with a client quota, and its quotas.
    pub fn describe_quotas(&mut self) -> Result<Vec<EntityQuotas>> {
        self.runtime.block_on(self.inner.describe_quotas())
    }

    /// Sets (`Some`) or removes (`None`) each of `changes` on `entity`'s quotas.
    pub fn alter_quotas(
        &mut self,
        entity: &QuotaEntity,
        changes: &[(String, Option<f64>)],
    ) -> Result<()> {
        self.runtime
            .block_on(self.inner.alter_quotas(entity, changes))
    }

    /// The ACLs `filter` selects.
    pub fn describe_acls(&mut self, filter: &AclFilter) -> Result<Vec<AclBinding>> {
        self.runtime.block_on(self.inner.describe_acls(filter))
    }

    /// Creates `bindings`.
    pub fn create_acls(&mut self, bindings: &[AclBinding]) -> Result<()> {
        self.runtime.block_on(self.inner.create_acls(bindings))
    }

    /// Deletes what `filters` select; returns what was deleted.
    pub fn delete_acls(&mut self, filters: &[AclFilter]) -> Result<Vec<AclBinding>> {
        self.runtime.block_on(self.inner.delete_acls(filters))
    }

    /// Sets `user`'s `mechanism` credential to `password` (salted here, never sent).
    pub fn upsert_user(
        &mut self,
        user: &str,
        mechanism: ScramMechanism,
        password: &[u8],
        iterations: u32,
    ) -> Result<()> {
        self.runtime.block_on(
            self.inner
                .upsert_user(user, mechanism, password, iterations),
        )
    }

    /// Deletes `user`'s `mechanism` credential.
    pub fn delete_user(&mut self, user: &str, mechanism: ScramMechanism) -> Result<()> {
        self.runtime
            .block_on(self.inner.delete_user(user, mechanism))
    }

    /// Every group's id.
    pub fn list_groups(&mut self) -> Result<Vec<String>> {
        self.runtime.block_on(self.inner.list_groups())
    }

    /// Every transactional id the cluster knows, by id.
    pub fn list_transactions(&mut self) -> Result<Vec<TransactionInfo>> {
        self.runtime.block_on(self.inner.list_transactions())
    }

    /// A transactional id's state and open transaction.
    pub fn describe_transaction(&mut self, transactional_id: &str) -> Result<TransactionInfo> {
        self.runtime
            .block_on(self.inner.describe_transaction(transactional_id))
    }

    /// Aborts the transaction open in `topic`'s `partition` since `start_offset`; its
    /// producer id.
    pub fn abort_transaction(
        &mut self,
        topic: &str,
        partition: i32,
        start_offset: i64,
    ) -> Result<i64> {
        self.runtime
            .block_on(self.inner.abort_transaction(topic, partition, start_offset))
    }

    /// A group's state and members.
    pub fn describe_group(&mut self, group: &str) -> Result<GroupInfo> {
        self.runtime.block_on(self.inner.describe_group(group))
    }

    /// Consumer-protocol group `group` (KIP-848); `None` when it is not one.
    pub fn describe_consumer_group(&mut self, group: &str) -> Result<Option<ConsumerGroupInfo>> {
        self.runtime
            .block_on(self.inner.describe_consumer_group(group))
    }

    /// Share group `group`'s state and members; `None` when it is not a share group.
    pub fn describe_share_group(&mut self, group: &str) -> Result<Option<ShareGroupInfo>> {
        self.runtime
            .block_on(self.inner.describe_share_group(group))
    }

    /// Where share group `group` reads each partition it has read from, sorted.
    pub fn share_group_offsets(&mut self, group: &str) -> Result<Vec<(String, i32, i64)>> {
        self.runtime.block_on(self.inner.share_group_offsets(group))
    }

    /// Each share-partition of share group `group` with its records by state and its lag;
    /// `None` from a broker that is not logd.
    pub fn share_partitions(
        &mut self,
        group: &str,
    ) -> Result<Option<Vec<logd_protocol::share_partitions::SharePartitionCounts>>> {
        self.runtime.block_on(self.inner.share_partitions(group))
    }

    /// Sets where share group `group` reads each (topic, partition, offset) from.
    pub fn alter_share_group_offsets(
        &mut self,
        group: &str,
        offsets: &[(String, i32, i64)],
    ) -> Result<()> {
        self.runtime
            .block_on(self.inner.alter_share_group_offsets(group, offsets))
    }

    /// Every offset `group` has committed: (topic, partition, offset), sorted.
    pub fn committed_offsets(&mut self, group: &str) -> Result<Vec<(String, i32, i64)>> {
        self.runtime.block_on(self.inner.committed_offsets(group))
    }

    /// The offset `group` committed in `topic`'s `partition`, if any.
    pub fn committed_offset(
        &mut self,
        group: &str,
        topic: &str,
        partition: i32,
    ) -> Result<Option<i64>> {
        self.runtime
            .block_on(self.inner.committed_offset(group, topic, partition))
    }

    /// Commits `offsets` (topic, partition, next offset to read) for `group` from outside it;
    /// the broker refuses this while the group has members.
    pub fn commit_offsets(&mut self, group: &str, offsets: &[(String, i32, i64)]) -> Result<()> {
        self.runtime
            .block_on(self.inner.commit_offsets(group, offsets))
    }

    /// Deletes a group's offsets and state; refused while it has members.
    pub fn delete_group(&mut self, group: &str) -> Result<()> {
        self.runtime.block_on(self.inner.delete_group(group))
    }
}
