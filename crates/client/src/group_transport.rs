//! [`GroupRemote`]: logd or a Kafka cluster as a `logd-retry` transport in which the worker is
//! a member of its consumer group, so several workers (threads or processes, anywhere) share
//! the source's partitions and take over from each other. Membership, rebalancing, the
//! generation a commit carries, and the commits themselves are librdkafka's (`rdkafka`, built
//! from its bundled source), as a Kafka consumer's are: the group protocol is what it has done
//! for a decade. Reads and the worker's appends stay on [`Client`]: librdkafka has no call
//! that sends an idempotent producer's pre-stamped batch, which the worker's hop journal
//! re-sends after a crash so the broker stores it once, and the worker reads a partition
//! from an offset it chooses, where librdkafka's consumer would fetch ahead of it. So the
//! librdkafka consumer fetches nothing (every assigned partition is paused as it is
//! assigned); it only heartbeats, rejoins, and commits.
//!
//! Exactly-once hops (`RetryConfig::transactional_id`) go through the client too, one
//! transactional producer per partition number: a member that takes a partition over starts
//! its producer, which fences the previous owner and aborts what it left open, before reading
//! the partition's commits (KIP-98's fencing by transactional id; the hop's TxnOffsetCommit
//! carries no generation).
//!
//! The librdkafka build has no TLS (no OpenSSL, which would need its own C build): the member
//! connects in clear text, with SASL PLAIN at most; other security settings are refused with
//! a message that says so.

use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use logd_protocol::SaslMechanism;
use logd_protocol::SecurityProtocol;
use logd_retry::{Error, Ownership, Result, Transport};
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::{ClientConfig, ClientContext, Offset, TopicPartitionList};

use crate::blocking::Client;
use crate::client_security::ClientSecurity;
use crate::retry_transport::Remote;

/// How long a member may go silent before the group moves its partitions (librdkafka's
/// `session.timeout.ms`): a SIGKILLed worker's partitions move after this.
const SESSION_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a commit or a committed-offset lookup may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// A broker or cluster as a retry transport with group membership.
pub struct GroupRemote {
    remote: Remote,
    settings: ClientConfig,
    member: Option<Member>,
}

impl std::fmt::Debug for GroupRemote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupRemote")
            .field("member", &self.member.as_ref().map(|m| &m.group))
            .finish_non_exhaustive()
    }
}

/// The librdkafka consumer that holds the membership.
struct Member {
    group: String,
    consumer: BaseConsumer<Rebalances>,
}

/// Counts rebalances (each a new generation as far as the worker cares: its partitions may
/// have moved and come back) and pauses what is assigned, so librdkafka fetches nothing.
struct Rebalances(AtomicI32);

impl ClientContext for Rebalances {}

impl ConsumerContext for Rebalances {
    fn post_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        if let Rebalance::Assign(assigned) = rebalance
            && let Err(e) = consumer.pause(assigned)
        {
            // Unpaused, librdkafka only fetches records nobody reads: costly, not wrong.
            tracing::warn!(error = %e, "could not pause the retry worker's assignment");
        }
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

impl GroupRemote {
    /// A transport over `client`, connected to `bootstrap` with `security`; the group
    /// membership starts when the worker first asks what it owns.
    pub fn new(
        client: Client,
        bootstrap: &str,
        security: &ClientSecurity,
    ) -> crate::Result<GroupRemote> {
        let mut settings = ClientConfig::new();
        settings
            .set("bootstrap.servers", bootstrap)
            .set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            // Co-partitioned topics (the source and its tiers have the same partition
            // count): the same partition numbers of each go to one member.
            .set("partition.assignment.strategy", "range")
            .set(
                "session.timeout.ms",
                SESSION_TIMEOUT.as_millis().to_string(),
            )
            .set("heartbeat.interval.ms", "1000")
            .set("client.id", "logd-retry-worker");
        match (&security.protocol, &security.sasl) {
            (SecurityProtocol::Plaintext, _) => {}
            (SecurityProtocol::SaslPlaintext, Some(login))
                if login.mechanism == SaslMechanism::Plain =>
            {
                settings
                    .set("security.protocol", "SASL_PLAINTEXT")
                    .set("sasl.mechanism", "PLAIN")
                    .set("sasl.username", &login.username)
                    .set("sasl.password", &login.password);
            }
            (protocol, _) => {
                return Err(crate::Error::ClientConfig(format!(
                    "{protocol}: the retry worker's group membership runs on a librdkafka \
                     built without TLS or SCRAM; use PLAINTEXT or SASL_PLAINTEXT with PLAIN, \
                     or the embedded transport"
                )));
            }
        }
        Ok(GroupRemote {
            remote: Remote::new(client),
            settings,
            member: None,
        })
    }

    /// The member of `group` reading `topics`, joining first if need be.
    fn member(&mut self, group: &str, topics: &[String]) -> Result<&Member> {
        let member = match self.member.take() {
            Some(member) if member.group == group => member,
            _ => {
                let consumer: BaseConsumer<Rebalances> = self
                    .settings
                    .clone()
                    .set("group.id", group)
                    .create_with_context(Rebalances(AtomicI32::new(0)))
                    .map_err(member_error)?;
                let names: Vec<&str> = topics.iter().map(String::as_str).collect();
                consumer.subscribe(&names).map_err(member_error)?;
                Member {
                    group: group.to_owned(),
                    consumer,
                }
            }
        };
        Ok(self.member.insert(member))
    }
}

fn member_error(e: KafkaError) -> Error {
    Error::Transport(format!("group membership: {e}"))
}

/// A commit the group refused because it went on without this member: the worker stops its
/// poll there and asks what it owns again.
fn commit_error(e: KafkaError) -> Error {
    match e.rdkafka_error_code() {
        Some(
            RDKafkaErrorCode::IllegalGeneration
            | RDKafkaErrorCode::UnknownMemberId
            | RDKafkaErrorCode::RebalanceInProgress
            | RDKafkaErrorCode::FencedInstanceId,
        ) => Error::Fenced(e.to_string()),
        _ => Error::Transport(format!("commit: {e}")),
    }
}

fn partition_list(topic: &str, partition: u32, offset: Option<i64>) -> Result<TopicPartitionList> {
    let mut list = TopicPartitionList::new();
    let offset = offset.map_or(Offset::Invalid, Offset::Offset);
    list.add_partition_offset(topic, partition as i32, offset)
        .map_err(|e| Error::Transport(e.to_string()))?;
    Ok(list)
}

impl Transport for GroupRemote {
    logd_retry::forward_transport!(remote =>
        now_ms, ensure_topic, partition_count, partitions_if_exists, fetch, append,
        init_producer_id, marker, wait, init_transactions, append_in_transaction,
        commit_transaction,
    );

    fn owned_partitions(
        &mut self,
        group: &str,
        topics: &[String],
        partitions: u32,
    ) -> Result<Ownership> {
        let member = self.member(group, topics)?;
        // Serves librdkafka's callbacks: joins, rebalances (pausing what it assigns) and
        // errors. Everything assigned is paused, so no record comes out of it.
        while let Some(event) = member.consumer.poll(Duration::ZERO) {
            if let Err(e) = event {
                tracing::warn!(error = %e, group, "retry worker's group membership");
            }
        }
        let source = topics.last().map(String::as_str);
        let assignment = member.consumer.assignment().map_err(member_error)?;
        Ok(Ownership {
            generation: member.consumer.context().0.load(Ordering::SeqCst),
            partitions: assignment
                .elements()
                .iter()
                .filter(|e| Some(e.topic()) == source)
                .map(|e| e.partition() as u32)
                .filter(|&p| p < partitions)
                .collect(),
        })
    }

    fn committed(&mut self, group: &str, topic: &str, partition: u32) -> Result<Option<i64>> {
        let Some(member) = self.member.as_ref().filter(|m| m.group == group) else {
            return self.remote.committed(group, topic, partition);
        };
        // What a failed hop's transaction left open is aborted first: its offsets are read
        // final, never half-way.
        self.remote.settle_transactions()?;
        let found = member
            .consumer
            .committed_offsets(partition_list(topic, partition, None)?, CALL_TIMEOUT)
            .map_err(member_error)?;
        Ok(found
            .find_partition(topic, partition as i32)
            .and_then(|e| match e.offset() {
                Offset::Offset(offset) => Some(offset),
                _ => None,
            }))
    }

    fn commit(&mut self, group: &str, topic: &str, partition: u32, offset: i64) -> Result<()> {
        let Some(member) = self.member.as_ref().filter(|m| m.group == group) else {
            return self.remote.commit(group, topic, partition, offset);
        };
        member
            .consumer
            .commit(
                &partition_list(topic, partition, Some(offset))?,
                CommitMode::Sync,
            )
            .map_err(commit_error)
    }
}
