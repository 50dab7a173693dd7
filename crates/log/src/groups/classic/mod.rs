//! Consumer groups: the classic protocol's state machine ([`Group`]), the assignors the engine
//! runs for embedded consumers, and the [`Coordinator`] that holds every group and lets
//! in-process members wait for each other.
//!
//! The state machine knows no transport and no clock: every call takes `now` in milliseconds.
//! Embedded consumers and the Kafka layer drive the same code; in Kafka's classic protocol the
//! group leader computes the assignment and the coordinator only relays it, so assignments are
//! opaque bytes here. Embedded members write them in Kafka's consumer protocol, so they can
//! share a group with Kafka clients.

mod assign;
mod coordinator;
mod error;
mod messages;
mod persist;
mod state;

pub use assign::Assignor;
pub use coordinator::{Coordinator, GroupConfig};
pub use error::GroupError;
pub use logd_protocol::consumer_protocol::{
    decode_assignment, decode_subscription, encode_assignment, encode_subscription,
};
pub use messages::{
    GroupPhase, JoinRequest, JoinResponse, JoinStatus, MemberDescription, SyncStatus,
};
pub(crate) use persist::GROUPS_DIR;
pub use state::Group;

#[cfg(test)]
mod tests;
