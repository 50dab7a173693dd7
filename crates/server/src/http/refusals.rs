//! How the console answers a refusal: the HTTP status and message of an engine error or of a
//! refused admin operation (shared by every endpoint, so each says 403, 404 or 409 alike).

use axum::http::StatusCode;
use logd::groups::classic::GroupError;
use logd_kafka::admin::Refused;

use super::params::Failure;

/// The HTTP status and message of an engine refusal.
pub(super) fn engine_status(error: &logd::Error) -> Failure {
    let status = match error {
        logd::Error::UnknownTopic(_) => StatusCode::NOT_FOUND,
        logd::Error::TopicExists(_) | logd::Error::Group(GroupError::NonEmptyGroup) => {
            StatusCode::CONFLICT
        }
        logd::Error::InvalidTopicName { .. } | logd::Error::InvalidConfig(_) => {
            StatusCode::BAD_REQUEST
        }
        logd::Error::Storage(logd_storage::Error::BatchTooLarge { .. }) => {
            StatusCode::PAYLOAD_TOO_LARGE
        }
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    (status, error.to_string())
}

/// The HTTP status and message of a refused admin operation: 403 for the ACLs, 400 for a
/// request Kafka refuses, and the engine's refusals by kind.
pub(super) fn status_of(refused: &Refused) -> Failure {
    let status = match refused {
        Refused::Denied { .. } => StatusCode::FORBIDDEN,
        Refused::Engine(e) => return engine_status(e),
        _ => StatusCode::BAD_REQUEST,
    };
    (status, refused.to_string())
}
