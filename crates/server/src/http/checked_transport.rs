//! The engine as the transport of a console replay, appending only to topics the caller may
//! WRITE: the ACL check sits where the records are written, so no letter reaches a topic its
//! caller may not write to, whatever the replay selects and whenever the letter arrived.

use std::time::Duration;

use logd_kafka::acl::{Operation, ResourceType};
use logd_retry::{Embedded, Message, Ownership, Result, Transport};

use super::access::Caller;
use super::params::Failure;

pub(super) struct CheckedTransport<'a> {
    inner: Embedded,
    caller: &'a Caller,
    /// The first append the ACLs refused.
    pub(super) refused: Option<Failure>,
}

impl<'a> CheckedTransport<'a> {
    pub(super) fn new(inner: Embedded, caller: &'a Caller) -> CheckedTransport<'a> {
        CheckedTransport {
            inner,
            caller,
            refused: None,
        }
    }
}

impl Transport for CheckedTransport<'_> {
    fn now_ms(&self) -> i64 {
        self.inner.now_ms()
    }

    fn ensure_topic(
        &mut self,
        topic: &str,
        partitions: u32,
        retention_ms: Option<i64>,
    ) -> Result<()> {
        self.inner.ensure_topic(topic, partitions, retention_ms)
    }

    fn partition_count(&mut self, topic: &str) -> Result<u32> {
        self.inner.partition_count(topic)
    }

    fn partitions_if_exists(&mut self, topic: &str) -> Result<Option<u32>> {
        self.inner.partitions_if_exists(topic)
    }

    fn owned_partitions(
        &mut self,
        group: &str,
        topics: &[String],
        partitions: u32,
    ) -> Result<Ownership> {
        self.inner.owned_partitions(group, topics, partitions)
    }

    fn fetch(&mut self, topic: &str, partition: u32, offset: i64) -> Result<Vec<Message>> {
        self.inner.fetch(topic, partition, offset)
    }

    fn append(&mut self, topic: &str, partition: u32, batch: Vec<u8>) -> Result<i64> {
        if let Err(refused) = self
            .caller
            .require(Operation::Write, ResourceType::Topic, topic)
        {
            let error = logd_retry::Error::Transport(refused.1.clone());
            self.refused.get_or_insert(refused);
            return Err(error);
        }
        self.inner.append(topic, partition, batch)
    }

    fn init_producer_id(&mut self) -> Result<i64> {
        self.inner.init_producer_id()
    }

    fn committed(&mut self, group: &str, topic: &str, partition: u32) -> Result<Option<i64>> {
        self.inner.committed(group, topic, partition)
    }

    fn commit(&mut self, group: &str, topic: &str, partition: u32, offset: i64) -> Result<()> {
        self.inner.commit(group, topic, partition, offset)
    }

    fn marker(&mut self) -> u64 {
        self.inner.marker()
    }

    fn wait(&mut self, marker: u64, timeout: Duration) {
        self.inner.wait(marker, timeout)
    }
}
