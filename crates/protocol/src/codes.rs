//! The Kafka error codes logd answers with (the protocol guide's table), shared with logd's
//! client. Codes added since are taken from `kafka_protocol::ResponseError`, which names them
//! all.
#![allow(
    missing_docs,
    reason = "each code is named as Kafka's protocol guide names it; the guide says what it means"
)]

pub const UNKNOWN_SERVER_ERROR: i16 = -1;
pub const NONE: i16 = 0;
pub const OFFSET_OUT_OF_RANGE: i16 = 1;
pub const CORRUPT_MESSAGE: i16 = 2;
pub const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
pub const LEADER_NOT_AVAILABLE: i16 = 5;
pub const NOT_LEADER_OR_FOLLOWER: i16 = 6;
pub const REQUEST_TIMED_OUT: i16 = 7;
pub const MESSAGE_TOO_LARGE: i16 = 10;
pub const OFFSET_METADATA_TOO_LARGE: i16 = 12;
pub const COORDINATOR_LOAD_IN_PROGRESS: i16 = 14;
pub const COORDINATOR_NOT_AVAILABLE: i16 = 15;
pub const NOT_COORDINATOR: i16 = 16;
pub const INVALID_TOPIC_EXCEPTION: i16 = 17;
pub const NOT_ENOUGH_REPLICAS: i16 = 19;
pub const INVALID_REQUIRED_ACKS: i16 = 21;
pub const ILLEGAL_GENERATION: i16 = 22;
pub const INCONSISTENT_GROUP_PROTOCOL: i16 = 23;
pub const INVALID_GROUP_ID: i16 = 24;
pub const UNKNOWN_MEMBER_ID: i16 = 25;
pub const INVALID_SESSION_TIMEOUT: i16 = 26;
pub const REBALANCE_IN_PROGRESS: i16 = 27;
pub const TOPIC_AUTHORIZATION_FAILED: i16 = 29;
pub const GROUP_AUTHORIZATION_FAILED: i16 = 30;
pub const CLUSTER_AUTHORIZATION_FAILED: i16 = 31;
pub const INVALID_TIMESTAMP: i16 = 32;
pub const UNSUPPORTED_SASL_MECHANISM: i16 = 33;
pub const ILLEGAL_SASL_STATE: i16 = 34;
pub const UNSUPPORTED_VERSION: i16 = 35;
pub const TOPIC_ALREADY_EXISTS: i16 = 36;
pub const INVALID_PARTITIONS: i16 = 37;
pub const INVALID_REPLICATION_FACTOR: i16 = 38;
pub const INVALID_REPLICA_ASSIGNMENT: i16 = 39;
pub const INVALID_CONFIG: i16 = 40;
pub const NOT_CONTROLLER: i16 = 41;
pub const INVALID_REQUEST: i16 = 42;
pub const POLICY_VIOLATION: i16 = 44;
pub const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 = 53;
pub const SECURITY_DISABLED: i16 = 54;
pub const KAFKA_STORAGE_ERROR: i16 = 56;
pub const SASL_AUTHENTICATION_FAILED: i16 = 58;
pub const NON_EMPTY_GROUP: i16 = 68;
pub const UNKNOWN_LEADER_EPOCH: i16 = 75;
pub const RESOURCE_NOT_FOUND: i16 = 91;
pub const DUPLICATE_RESOURCE: i16 = 92;
pub const UNACCEPTABLE_CREDENTIAL: i16 = 93;
pub const GROUP_ID_NOT_FOUND: i16 = 69;
pub const MEMBER_ID_REQUIRED: i16 = 79;
pub const FENCED_INSTANCE_ID: i16 = 82;
pub const GROUP_SUBSCRIBED_TO_TOPIC: i16 = 86;
pub const INVALID_RECORD: i16 = 87;
pub const UNKNOWN_TOPIC_ID: i16 = 100;
pub const UNSUPPORTED_ENDPOINT_TYPE: i16 = 115;
