//! [`GroupError`]: why a group call was refused, one Kafka error code each.

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
    /// A commit with a member epoch other than the member's, in a group of the consumer
    /// protocol (Kafka 113, STALE_MEMBER_EPOCH).
    #[error("the member's epoch is stale")]
    StaleMemberEpoch,
    /// A consumer-protocol member joining with a static instance id another present member
    /// holds (Kafka 111, UNRELEASED_INSTANCE_ID).
    #[error("the static instance id is held by another member")]
    UnreleasedInstanceId,
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
    /// The group id is held by a group of another type: a share group, or a share group's
    /// id claimed by a consumer group (Kafka 69, GROUP_ID_NOT_FOUND, "not a share group").
    #[error("the group id is held by a group of another type")]
    OtherGroupType,
    /// A blocking join or sync gave up waiting.
    #[error("timed out waiting for the group")]
    Timeout,
}
