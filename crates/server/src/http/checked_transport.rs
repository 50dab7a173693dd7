//! The engine as the transport of a console replay, appending only to topics the caller may
//! WRITE: the ACL check sits where the records are written, so no letter reaches a topic its
//! caller may not write to, whatever the replay selects and whenever the letter arrived.

use logd_kafka::acl::{Operation, ResourceType};
use logd_retry::{Embedded, Result, Transport};

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
    logd_retry::forward_transport!(inner =>
        now_ms, ensure_topic, partition_count, partitions_if_exists, owned_partitions, fetch,
        init_producer_id, committed, commit, marker, wait,
    );

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
}
