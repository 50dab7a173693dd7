//! What a group's callers send and get back: the join request and its answers, a sync's
//! answer, a member as described, and the group's phase. The state machine that produces
//! them is `state.rs`.

use bytes::Bytes;

/// The state of a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupPhase {
    /// No members.
    Empty,
    /// Waiting for members to (re)join.
    PreparingRebalance,
    /// Joined; waiting for the leader's assignment.
    CompletingRebalance,
    /// Every member has its assignment.
    Stable,
}

/// A join request, as JoinGroup carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinRequest {
    /// The member's id, `None` on its first join.
    pub member_id: Option<String>,
    /// Static membership id (KIP-345), if any.
    pub group_instance_id: Option<String>,
    /// The client's id, used to build a new member id.
    pub client_id: String,
    /// Where the client connects from, as `describe` shows it.
    pub client_host: String,
    /// KIP-394 (JoinGroup v4+): a dynamic member joining without an id gets one and must
    /// join again with it, so a client that dies mid-join leaves no member behind.
    pub require_known_member_id: bool,
    /// `"consumer"` for consumers.
    pub protocol_type: String,
    /// Supported protocols (assignor names) in order of preference, each with its metadata.
    pub protocols: Vec<(String, Bytes)>,
    /// Without a heartbeat for this long the member is removed.
    pub session_timeout_ms: i64,
    /// How long a rebalance waits for this member to rejoin.
    pub rebalance_timeout_ms: i64,
}

/// What a member learns when the join phase completes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinResponse {
    /// The new generation.
    pub generation: i32,
    /// The chosen protocol (assignor).
    pub protocol: String,
    /// The leader's member id.
    pub leader: String,
    /// This member's id.
    pub member_id: String,
    /// For the leader only: every member's id, instance id and metadata for the protocol.
    pub members: Vec<(String, Option<String>, Bytes)>,
}

/// Outcome of a join call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JoinStatus {
    /// The join phase completed for this member.
    Joined(JoinResponse),
    /// Other members have yet to rejoin; ask again with this member id.
    Waiting {
        /// The (possibly new) member id.
        member_id: String,
    },
    /// KIP-394: join again with this id (Kafka 79, MEMBER_ID_REQUIRED).
    MemberIdRequired {
        /// The id handed out.
        member_id: String,
    },
}

/// Outcome of a sync call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyncStatus {
    /// The member's assignment for this generation.
    Assigned(Bytes),
    /// The leader has not sent the assignment yet.
    Waiting,
}

/// One member as `describe` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberDescription {
    /// Member id.
    pub member_id: String,
    /// Static instance id.
    pub group_instance_id: Option<String>,
    /// Client id.
    pub client_id: String,
    /// Where the client connects from.
    pub client_host: String,
    /// Its metadata for the group's protocol (a consumer's subscription).
    pub metadata: Bytes,
    /// Its assignment in the current generation (empty before sync).
    pub assignment: Bytes,
}
