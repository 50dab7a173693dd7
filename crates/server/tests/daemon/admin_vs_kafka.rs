//! Kafka's Java Admin against logd and against a real Apache Kafka cluster, call by call: the
//! same program (`java/src/AdminCalls.java`: topics, configs, partitions, records and their
//! offsets, deletion of records, producers, a classic group and its offsets, the cluster and
//! its log directories, ACLs, SCRAM users, client quotas) prints one line per call on each, and
//! the lines must be the same, but for the differences listed here with their reasons.

use super::Daemon;
use super::java_clients::java;
use super::kafka_cluster::kafka_cluster;

/// What the program printed against `bootstrap`, one line per call.
fn admin_calls(bootstrap: &str, prefix: &str) -> Vec<String> {
    let output = java("AdminCalls", &[bootstrap, prefix])
        .output()
        .expect("java");
    let printed = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "AdminCalls against {bootstrap}:\n{printed}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    printed.lines().map(str::to_owned).collect()
}

/// Calls whose answers differ on purpose, each with why; any other difference fails the test.
const KNOWN_DIFFERENCES: &[(&str, &str)] = &[
    (
        "describeFeatures",
        "logd finalizes no feature levels, so clients use what every broker offers (the \
         classic group protocol, transactions version 1 once served); Kafka reports its KRaft \
         metadata version and the features it enabled (group.version, transaction.version, ...)",
    ),
    (
        "describeMetadataQuorum",
        "logd has no KRaft quorum: DescribeQuorum is not served, so the call fails \
         (UnsupportedVersionException) where Kafka describes its controllers",
    ),
];

#[test]
fn every_admin_call_answers_on_logd_as_on_kafka() {
    let dir = tempfile::tempdir().unwrap();
    // As the Kafka cluster runs: ACLs on, the anonymous user a super user.
    let daemon = Daemon::start(
        dir.path(),
        &["--authorizer", "acl", "--super-users", "User:ANONYMOUS"],
    );
    let on_logd = admin_calls(&daemon.addr, "calls");
    let on_kafka = admin_calls(&kafka_cluster().bootstrap, "calls");
    assert_eq!(
        on_logd.len(),
        on_kafka.len(),
        "logd:\n{on_logd:#?}\nKafka:\n{on_kafka:#?}"
    );
    let mut compared = 0;
    for (logd, kafka) in on_logd.iter().zip(&on_kafka) {
        let call = kafka.split(": ").next().unwrap();
        if let Some((_, why)) = KNOWN_DIFFERENCES.iter().find(|(c, _)| *c == call) {
            assert_ne!(logd, kafka, "{call} now answers as on Kafka: {why}");
            continue;
        }
        assert_eq!(logd, kafka, "the same call on logd and on Kafka");
        compared += 1;
    }
    assert!(compared >= 40, "only {compared} calls compared");
}
