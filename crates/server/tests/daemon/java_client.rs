//! Kafka's Java client 4.x against a real daemon, for the first time: its admin creates and
//! describes a topic and alters a config, its producer sends with its defaults (idempotent,
//! acks=all), a classic consumer group reads everything once, commits and resumes with only
//! the new records (with the classic protocol, and with KIP-848's), and the admin reads the
//! group's offsets and deletes it. Its admin deletes
//! records (DeleteRecords), and the new start survives a kill -9.

use super::Daemon;
use super::java_clients::java;

#[test]
fn the_java_client_produces_consumes_in_a_group_and_administers() {
    java_clients_run("classic");
}

/// The same run with the group's consumers on KIP-848's protocol (`group.protocol=consumer`).
#[test]
fn the_java_client_consumes_in_a_consumer_protocol_group() {
    java_clients_run("consumer");
}

fn java_clients_run(protocol: &str) {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &[]);
    let output = java("JavaClients", &[&daemon.addr, protocol])
        .output()
        .expect("java");
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "topic orders 3 partitions\n\
         retention.ms 3600000 DYNAMIC_TOPIC_CONFIG\n\
         cluster 1 node, controller 0\n\
         produced 100\n\
         consumed 100 distinct 100\n\
         produced 50\n\
         resumed 50 all new true\n\
         group offsets 150\n\
         groups left 0\n"
    );
}

#[test]
fn the_java_admin_deletes_records_and_the_start_survives_a_kill() {
    let dir = tempfile::tempdir().unwrap();
    let run = |daemon: &Daemon, step: &str| {
        let output = java("DeleteRecords", &[&daemon.addr, step])
            .output()
            .expect("java");
        assert!(
            output.status.success(),
            "{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let daemon = Daemon::start(dir.path(), &["--fsync", "always"]);
    assert_eq!(
        run(&daemon, "delete"),
        "low watermark 40\n\
         past the end OffsetOutOfRangeException\n\
         earliest 40\n\
         first read 40 v40\n"
    );
    daemon.kill();
    let daemon = Daemon::start(dir.path(), &["--fsync", "always"]);
    assert_eq!(run(&daemon, "check"), "earliest 40\nfirst read 40 v40\n");
}
