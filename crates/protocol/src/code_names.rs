//! Kafka's error codes in words, for the person running a tool: what a code says about the
//! thing asked for ("does not exist"), Kafka's own name for it (`NOT_LEADER_OR_FOLLOWER`), and
//! what the errors of a multi-broker cluster mean.

use kafka_protocol::ResponseError;

use crate::codes;

/// What a Kafka error code says about the thing asked for, as a predicate ("does not exist").
pub fn code_name(code: i16) -> String {
    match code {
        codes::OFFSET_OUT_OF_RANGE => "is out of range".into(),
        codes::CORRUPT_MESSAGE => "was refused as corrupt".into(),
        codes::UNKNOWN_TOPIC_OR_PARTITION => "does not exist".into(),
        codes::MESSAGE_TOO_LARGE => "was refused as too large".into(),
        codes::INVALID_TOPIC_EXCEPTION => "is not a valid topic name".into(),
        codes::TOPIC_ALREADY_EXISTS => "already exists".into(),
        codes::INVALID_PARTITIONS => "has an invalid partition count".into(),
        codes::INVALID_CONFIG => "has an invalid topic config".into(),
        codes::KAFKA_STORAGE_ERROR => "failed with a storage error on the broker".into(),
        codes::NON_EMPTY_GROUP => "has active members (stop its consumers first)".into(),
        codes::GROUP_ID_NOT_FOUND => "does not exist".into(),
        codes::UNKNOWN_MEMBER_ID => "was refused: the group has active members".into(),
        codes::OFFSET_METADATA_TOO_LARGE => "has commit metadata that is too large".into(),
        codes::TOPIC_AUTHORIZATION_FAILED => {
            "was refused: TOPIC_AUTHORIZATION_FAILED (no ACL grants it: see `logd acls`)".into()
        }
        codes::GROUP_AUTHORIZATION_FAILED => {
            "was refused: GROUP_AUTHORIZATION_FAILED (no ACL grants it: see `logd acls`)".into()
        }
        codes::CLUSTER_AUTHORIZATION_FAILED => {
            "was refused: CLUSTER_AUTHORIZATION_FAILED (a super user or an ACL on the cluster may)"
                .into()
        }
        codes::SECURITY_DISABLED => {
            "was refused: SECURITY_DISABLED (the broker has no authorizer: --authorizer acl)".into()
        }
        codes::INVALID_REQUEST => "was refused as invalid".into(),
        codes::RESOURCE_NOT_FOUND => "does not exist".into(),
        codes::UNACCEPTABLE_CREDENTIAL => {
            "was refused: UNACCEPTABLE_CREDENTIAL (iterations 4096 to 16384)".into()
        }
        codes::UNSUPPORTED_SASL_MECHANISM => "names an unknown SCRAM mechanism".into(),
        codes::DUPLICATE_RESOURCE => "is named twice in one request".into(),
        other => {
            let name = kafka_name(other);
            match meaning(other) {
                Some(meaning) => format!("failed with {name} (Kafka error {other}): {meaning}"),
                None => format!("failed with {name} (Kafka error {other})"),
            }
        }
    }
}

/// Kafka's own name of an error code, as its documentation and logs spell it
/// (`NOT_LEADER_OR_FOLLOWER`), from `kafka_protocol`'s table of every code.
fn kafka_name(code: i16) -> String {
    match ResponseError::try_from_code(code) {
        Some(ResponseError::Unknown(_)) | None => "an unknown error".into(),
        Some(error) => {
            let camel = error.to_string();
            let mut name = String::with_capacity(camel.len() + 8);
            for (i, c) in camel.chars().enumerate() {
                if c.is_ascii_uppercase() && i > 0 {
                    name.push('_');
                }
                name.push(c.to_ascii_uppercase());
            }
            name
        }
    }
}

/// What the errors a multi-broker cluster answers with mean to the person running a tool.
fn meaning(code: i16) -> Option<&'static str> {
    Some(match code {
        codes::NOT_LEADER_OR_FOLLOWER => {
            "the broker asked does not lead that partition (leadership moved); try again"
        }
        codes::LEADER_NOT_AVAILABLE => {
            "the partition has no leader right now (a broker is down or an election runs)"
        }
        codes::REQUEST_TIMED_OUT => "the broker did not answer in time",
        codes::COORDINATOR_LOAD_IN_PROGRESS => {
            "the group's coordinator is still loading it; try again"
        }
        codes::COORDINATOR_NOT_AVAILABLE => "the group's coordinator is not available; try again",
        codes::NOT_COORDINATOR => {
            "the broker asked is not the group's coordinator (it moved); try again"
        }
        codes::REBALANCE_IN_PROGRESS => "the group is rebalancing; try again when it settles",
        codes::ILLEGAL_GENERATION => {
            "the commit came from an older generation of the group (a member that was replaced)"
        }
        codes::UNSUPPORTED_VERSION => "the broker does not support that request's version",
        codes::UNKNOWN_SERVER_ERROR => "the broker failed unexpectedly: see its log",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_named_as_kafka_names_them_with_what_they_mean() {
        assert!(code_name(codes::NOT_COORDINATOR).starts_with("failed with NOT_COORDINATOR ("));
        assert!(code_name(codes::REBALANCE_IN_PROGRESS).contains("the group is rebalancing"));
        assert_eq!(
            code_name(codes::UNKNOWN_TOPIC_OR_PARTITION),
            "does not exist"
        );
        // A code without a sentence of ours still gets Kafka's name.
        assert_eq!(
            code_name(ResponseError::InvalidTxnState.code()),
            "failed with INVALID_TXN_STATE (Kafka error 48)"
        );
        assert_eq!(
            code_name(999),
            "failed with an unknown error (Kafka error 999)"
        );
    }
}
