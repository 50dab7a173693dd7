//! Authorization: Kafka's ACL model, the [`Authorizer`] that decides with it, and their durable
//! store (Kafka's ACL APIs are served in `api/acls.rs`). The handlers ask the broker's
//! authorizer, through the admin layer's guard, before each engine call; with no authorizer configured every request
//! is allowed, as on a Kafka broker without `authorizer.class.name`.

mod authorizer;
mod store;

pub use authorizer::{Authorizer, AuthorizerConfig};
pub use logd_protocol::acl::{
    AclBinding, AclFilter, CLUSTER_NAME, InvalidAcl, Operation, PatternType, Permission,
    ResourceType, WILDCARD, WILDCARD_PRINCIPAL,
};
pub use store::{ACLS_FILE, decode as decode_file};
