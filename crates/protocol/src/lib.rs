//! `logd-protocol`: what both sides of logd's Kafka wire share, so a program that only talks to
//! a broker (`logd-client`) compiles no broker and no storage engine. Kafka's error codes and
//! their names in words, the SASL/SCRAM exchange both ends run, security protocols and SASL
//! mechanisms, Kafka's ACL model and client quotas, the consumer protocol (a group member's
//! subscription and assignment bytes), the codecs of logd's own DescribePartitionRanges and
//! DescribeSharePartitions, and the share-group API versions `kafka-protocol` does not model
//! yet.

pub mod acl;
#[cfg(feature = "code-names")]
mod code_names;
pub mod codes;
pub mod consumer_protocol;
mod error;
pub mod partition_ranges;
mod plain;
pub mod quota;
pub mod scram;
mod security;
pub mod share_partitions;
#[cfg(feature = "share-versions")]
pub mod share_versions;

#[cfg(feature = "code-names")]
pub use code_names::code_name;
pub use error::{Error, Result};
pub use security::{SaslMechanism, SecurityProtocol};
