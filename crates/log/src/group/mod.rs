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
mod persist;
mod state;

pub use assign::Assignor;
pub use coordinator::{Coordinator, GroupConfig};
pub use logd_protocol::consumer_protocol::{
    decode_assignment, decode_subscription, encode_assignment, encode_subscription,
};
pub(crate) use persist::GROUPS_DIR;
pub use state::{
    Group, GroupPhase, JoinRequest, JoinResponse, JoinStatus, MemberDescription, SyncStatus,
};

/// Why a group call was refused; each maps to one Kafka error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GroupError {
    /// The member id is not (or no longer) in the group (Kafka 25, UNKNOWN_MEMBER_ID).
    #[error("unknown member of the group")]
    UnknownMember,
    /// The call carries an old generation (Kafka 22, ILLEGAL_GENERATION).
    #[error("stale generation: the group has moved on")]
    IllegalGeneration,
    /// The group is rebalancing; rejoin (Kafka 27, REBALANCE_IN_PROGRESS).
    #[error("the group is rebalancing")]
    RebalanceInProgress,
    /// No protocol (assignor) that every member supports, or another protocol type (Kafka 23).
    #[error("no group protocol common to all members")]
    InconsistentProtocol,
    /// Session timeout outside the configured bounds (Kafka 26, INVALID_SESSION_TIMEOUT).
    #[error("session timeout outside the allowed range")]
    InvalidSessionTimeout,
    /// A static member id used by a member that is not its current holder (Kafka 82).
    #[error("static membership fenced by a newer member")]
    FencedInstance,
    /// The operation needs a group with no active members (Kafka 68, NON_EMPTY_GROUP).
    #[error("the group has active members")]
    NonEmptyGroup,
    /// The group's new state could not be saved (Kafka 15, COORDINATOR_NOT_AVAILABLE): the
    /// members rejoin.
    #[error("the group's state could not be saved")]
    CoordinatorNotAvailable,
    /// A blocking join or sync gave up waiting.
    #[error("timed out waiting for the group")]
    Timeout,
}

#[cfg(test)]
mod tests;
