//! AlterUserScramCredentials and DescribeUserScramCredentials as Kafka answers them: upserts
//! that log in afterwards, and every refusal with its code (not a super user, an unknown
//! mechanism, iterations out of range, a user named twice, an unknown user).

use crate::common::{call, s};
use bytes::Bytes;
use kafka_protocol::messages::alter_user_scram_credentials_request::{
    ScramCredentialDeletion, ScramCredentialUpsertion,
};
use kafka_protocol::messages::describe_user_scram_credentials_request::UserName;
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse, ApiKey,
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse,
};
use logd::{Config, Log};
use logd_kafka::auth::scram::ScramMechanism;
use logd_kafka::{Broker, BrokerConfig};

fn broker(dir: &std::path::Path, super_users: &[&str]) -> Broker {
    Broker::new(
        Log::open(dir, Config::default()).unwrap(),
        BrokerConfig {
            super_users: super_users.iter().map(|u| u.to_string()).collect(),
            ..BrokerConfig::default()
        },
    )
}

fn upsert(name: &str, mechanism: i8, iterations: i32, password: &[u8]) -> ScramCredentialUpsertion {
    let mut u = ScramCredentialUpsertion::default();
    u.name = s(name);
    u.mechanism = mechanism;
    u.iterations = iterations;
    u.salt = Bytes::from_static(b"0123456789abcdef");
    if let Some(m) = ScramMechanism::from_kafka_type(mechanism) {
        u.salted_password =
            Bytes::from(m.salted_password(password, b"0123456789abcdef", iterations.max(1) as u32));
    } else {
        u.salted_password = Bytes::from_static(b"x");
    }
    u
}

fn alter(broker: &Broker, request: &AlterUserScramCredentialsRequest) -> Vec<(String, i16)> {
    let response: AlterUserScramCredentialsResponse =
        call(broker, ApiKey::AlterUserScramCredentials, 0, request);
    response
        .results
        .into_iter()
        .map(|r| (r.user.to_string(), r.error_code))
        .collect()
}

#[test]
fn upserts_log_in_and_bad_alterations_get_kafkas_codes() {
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path(), &["User:ANONYMOUS"]);
    let mut request = AlterUserScramCredentialsRequest::default();
    request.upsertions = vec![
        upsert("alice", 1, 4096, b"pw"),
        upsert("weak", 1, 1000, b"pw"),
        upsert("odd", 9, 4096, b"pw"),
        upsert("twice", 1, 4096, b"pw"),
    ];
    let mut deletion = ScramCredentialDeletion::default();
    deletion.name = s("twice");
    deletion.mechanism = 2;
    request.deletions = vec![deletion];
    let mut results = alter(&broker, &request);
    results.sort();
    assert_eq!(
        results,
        vec![
            ("alice".into(), 0),
            ("odd".into(), 33),   // UNSUPPORTED_SASL_MECHANISM
            ("twice".into(), 92), // DUPLICATE_RESOURCE
            ("twice".into(), 92),
            ("weak".into(), 93), // UNACCEPTABLE_CREDENTIAL
        ]
    );
    let stored = broker.credentials().current();
    let alice = stored.get("alice", ScramMechanism::Sha256).unwrap();
    assert!(alice.matches_password(ScramMechanism::Sha256, b"pw"));
    assert!(!stored.contains("weak") && !stored.contains("odd") && !stored.contains("twice"));

    let mut describe = DescribeUserScramCredentialsRequest::default();
    let mut name = UserName::default();
    name.name = s("alice");
    let mut unknown = UserName::default();
    unknown.name = s("nobody");
    describe.users = Some(vec![name, unknown]);
    let response: DescribeUserScramCredentialsResponse =
        call(&broker, ApiKey::DescribeUserScramCredentials, 0, &describe);
    assert_eq!(response.error_code, 0);
    assert_eq!(response.results[0].credential_infos[0].mechanism, 1);
    assert_eq!(response.results[0].credential_infos[0].iterations, 4096);
    assert_eq!(response.results[1].error_code, 91); // RESOURCE_NOT_FOUND

    // Deleting what is not there.
    let mut request = AlterUserScramCredentialsRequest::default();
    let mut deletion = ScramCredentialDeletion::default();
    deletion.name = s("alice");
    deletion.mechanism = 2;
    request.deletions = vec![deletion];
    assert_eq!(alter(&broker, &request), vec![("alice".into(), 91)]);
}

#[test]
fn only_super_users_may_manage_users() {
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path(), &["User:admin"]);
    let mut request = AlterUserScramCredentialsRequest::default();
    request.upsertions = vec![upsert("mallory", 1, 4096, b"pw")];
    assert_eq!(alter(&broker, &request), vec![("mallory".into(), 31)]);
    assert!(!broker.credentials().current().contains("mallory"));
    let response: DescribeUserScramCredentialsResponse = call(
        &broker,
        ApiKey::DescribeUserScramCredentials,
        0,
        &DescribeUserScramCredentialsRequest::default(),
    );
    assert_eq!(response.error_code, 31); // CLUSTER_AUTHORIZATION_FAILED
    assert!(response.results.is_empty());
}
