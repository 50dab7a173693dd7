//! [`Refused`]: why an admin operation was not done, typed so each front door answers in its
//! own terms (a Kafka error code, an HTTP status) without re-deciding anything.

use logd_protocol::acl::{Operation, ResourceType};
use logd_protocol::codes;

use crate::engine_codes;

/// Why an operation was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Refused {
    /// The ACLs do not let the caller do it.
    #[error("{principal} may not {operation} {resource_type} {name}")]
    Denied {
        /// Who asked.
        principal: String,
        /// What it asked to do.
        operation: Operation,
        /// On what kind of resource.
        resource_type: ResourceType,
        /// On which.
        name: String,
    },
    /// A request Kafka refuses before the engine sees it, with Kafka's code and words.
    #[error("{message}")]
    Invalid {
        /// Kafka's error code.
        code: i16,
        /// Kafka's message.
        message: String,
    },
    /// The engine refused it (an unknown topic, a group with members, a bad config...).
    #[error(transparent)]
    Engine(#[from] logd::Error),
}

impl Refused {
    /// Kafka's error code for it.
    pub fn code(&self) -> i16 {
        match self {
            Refused::Denied { resource_type, .. } => match resource_type {
                ResourceType::Group => codes::GROUP_AUTHORIZATION_FAILED,
                ResourceType::Cluster => codes::CLUSTER_AUTHORIZATION_FAILED,
                ResourceType::TransactionalId => codes::TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                _ => codes::TOPIC_AUTHORIZATION_FAILED,
            },
            Refused::Invalid { code, .. } => *code,
            Refused::Engine(e) => engine_codes::for_engine_error(e),
        }
    }

    /// The message a Kafka answer carries: Kafka's own "Authorization failed." for an ACL
    /// refusal (a client is not told which rule), else the reason.
    pub fn kafka_message(&self) -> String {
        match self {
            Refused::Denied { .. } => "Authorization failed.".into(),
            other => other.to_string(),
        }
    }

    /// Kafka's code and message.
    pub(crate) fn kafka(&self) -> (i16, String) {
        (self.code(), self.kafka_message())
    }
}
