//! Kafka's own command-line tools (kafka-tools 4.4, pinned in `java/pom.xml`) against a real
//! daemon, run as the `bin/kafka-*.sh` scripts run them: `java -cp` with the tool's main class.
//! Each step asserts what the tool printed (topics, configs, records, offsets, groups, SCRAM
//! users, ACLs),
//! not only that it ran; tools that need what one logd node does not serve (the KRaft quorum,
//! partition reassignment) fail at once with the reason.

use std::io::Write;
use std::process::Stdio;

use super::Daemon;
use super::java_clients::java;

/// What one tool run printed: whether it exited 0, its stdout and its stderr.
struct Run {
    ok: bool,
    out: String,
    err: String,
}

/// Runs the tool whose main class is `main` with `args`, feeding it `stdin`.
fn tool(main: &str, args: &[&str], stdin: &str) -> Run {
    let mut child = java(main, args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("java");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    Run {
        ok: output.status.success(),
        out: String::from_utf8_lossy(&output.stdout).into_owned(),
        err: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// As [`tool`], failing the test unless the tool succeeded; its stdout.
fn ok(main: &str, args: &[&str], stdin: &str) -> String {
    let run = tool(main, args, stdin);
    assert!(run.ok, "{main} {args:?}\n{}\n{}", run.out, run.err);
    run.out
}

const TOPICS: &str = "org.apache.kafka.tools.TopicCommand";
const CONFIGS: &str = "org.apache.kafka.tools.ConfigCommand";
const PRODUCER: &str = "org.apache.kafka.tools.ConsoleProducer";
const CONSUMER: &str = "org.apache.kafka.tools.consumer.ConsoleConsumer";
const GROUPS: &str = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand";
const GET_OFFSETS: &str = "org.apache.kafka.tools.GetOffsetShell";
const DELETE_RECORDS: &str = "org.apache.kafka.tools.DeleteRecordsCommand";
const LOG_DIRS: &str = "org.apache.kafka.tools.LogDirsCommand";
const ACLS: &str = "org.apache.kafka.tools.AclCommand";
const PRODUCER_PERF: &str = "org.apache.kafka.tools.ProducerPerformance";
const CONSUMER_PERF: &str = "org.apache.kafka.tools.ConsumerPerformance";

/// The offsets `kafka-get-offsets` prints (`topic:partition:offset` lines), by partition.
fn offsets(printed: &str) -> Vec<i64> {
    printed
        .lines()
        .filter_map(|line| line.rsplit(':').next()?.parse().ok())
        .collect()
}

#[test]
fn kafkas_tools_manage_topics_configs_records_groups_and_acls() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(
        dir.path(),
        &["--authorizer", "acl", "--allow-everyone-if-no-acl-found"],
    );
    let b = daemon.addr.as_str();

    // kafka-topics: create, list, describe, grow.
    let created = ok(
        TOPICS,
        &[
            "--bootstrap-server",
            b,
            "--create",
            "--topic",
            "orders",
            "--partitions",
            "3",
        ],
        "",
    );
    assert_eq!(created.trim(), "Created topic orders.");
    ok(
        TOPICS,
        &[
            "--bootstrap-server",
            b,
            "--alter",
            "--topic",
            "orders",
            "--partitions",
            "4",
        ],
        "",
    );
    assert_eq!(
        ok(TOPICS, &["--bootstrap-server", b, "--list"], "").trim(),
        "orders"
    );
    let described = ok(
        TOPICS,
        &["--bootstrap-server", b, "--describe", "--topic", "orders"],
        "",
    );
    assert!(
        described.contains("PartitionCount: 4\tReplicationFactor: 1"),
        "{described}"
    );
    assert_eq!(
        described
            .matches("\tLeader: 0\tReplicas: 0\tIsr: 0")
            .count(),
        4,
        "{described}"
    );

    // kafka-configs: a topic config set and described.
    let altered = ok(
        CONFIGS,
        &[
            "--bootstrap-server",
            b,
            "--entity-type",
            "topics",
            "--entity-name",
            "orders",
            "--alter",
            "--add-config",
            "retention.ms=3600000",
        ],
        "",
    );
    assert_eq!(
        altered.trim(),
        "Completed updating config for topic orders."
    );
    let configs = ok(
        CONFIGS,
        &[
            "--bootstrap-server",
            b,
            "--entity-type",
            "topics",
            "--entity-name",
            "orders",
            "--describe",
        ],
        "",
    );
    assert!(configs.contains("retention.ms=3600000"), "{configs}");

    // kafka-console-producer and -consumer: 40 keyed records in, the same 40 out in a group.
    let lines: String = (0..40).map(|i| format!("k{i}:v{i}\n")).collect();
    ok(
        PRODUCER,
        &[
            "--bootstrap-server",
            b,
            "--topic",
            "orders",
            "--reader-property",
            "parse.key=true",
            "--reader-property",
            "key.separator=:",
        ],
        &lines,
    );
    let consumed = ok(
        CONSUMER,
        &[
            "--bootstrap-server",
            b,
            "--topic",
            "orders",
            "--group",
            "cg",
            "--from-beginning",
            "--max-messages",
            "40",
            "--formatter-property",
            "print.key=true",
        ],
        "",
    );
    let mut got: Vec<&str> = consumed.lines().collect();
    got.sort_unstable();
    let mut sent: Vec<String> = (0..40).map(|i| format!("k{i}\tv{i}")).collect();
    sent.sort_unstable();
    assert_eq!(got, sent);

    // kafka-get-offsets: the ends add up to what was sent.
    let ends = offsets(&ok(
        GET_OFFSETS,
        &["--bootstrap-server", b, "--topic", "orders"],
        "",
    ));
    assert_eq!((ends.len(), ends.iter().sum::<i64>()), (4, 40));
    let fullest = (0..4).max_by_key(|&p| ends[p]).unwrap();

    // kafka-consumer-groups: the group, its committed offsets (no lag), a reset, a delete.
    let groups = ok(GROUPS, &["--bootstrap-server", b, "--list"], "");
    assert_eq!(groups.trim(), "cg");
    let described = ok(
        GROUPS,
        &["--bootstrap-server", b, "--describe", "--group", "cg"],
        "",
    );
    let rows: Vec<Vec<&str>> = described
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|cols| cols.first() == Some(&"cg"))
        .collect();
    assert_eq!(rows.len(), 4, "{described}");
    for cols in &rows {
        // GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG ...
        assert_eq!(cols[3], cols[4], "{described}");
        assert_eq!(cols[5], "0", "{described}");
    }

    // kafka-delete-records: the fullest partition loses its first record.
    std::fs::write(
        dir.path().join("delete.json"),
        format!(r#"{{"partitions":[{{"topic":"orders","partition":{fullest},"offset":1}}],"version":1}}"#),
    )
    .unwrap();
    let deleted = ok(
        DELETE_RECORDS,
        &[
            "--bootstrap-server",
            b,
            "--offset-json-file",
            dir.path().join("delete.json").to_str().unwrap(),
        ],
        "",
    );
    assert!(
        deleted.contains(&format!("partition: orders-{fullest}\tlow_watermark: 1")),
        "{deleted}"
    );
    let starts = offsets(&ok(
        GET_OFFSETS,
        &["--bootstrap-server", b, "--topic", "orders", "--time", "-2"],
        "",
    ));
    assert_eq!(starts[fullest], 1);
    let reset = ok(
        GROUPS,
        &[
            "--bootstrap-server",
            b,
            "--reset-offsets",
            "--group",
            "cg",
            "--topic",
            "orders",
            "--to-earliest",
            "--execute",
        ],
        "",
    );
    let new_offsets: Vec<i64> = reset
        .lines()
        .filter_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            (cols.first() == Some(&"cg")).then(|| cols[3].parse().unwrap())
        })
        .collect();
    assert_eq!(new_offsets.iter().sum::<i64>(), 1, "{reset}");
    let removed = ok(
        GROUPS,
        &["--bootstrap-server", b, "--delete", "--group", "cg"],
        "",
    );
    assert!(removed.contains("Deletion of requested consumer groups ('cg') was successful."));
    assert_eq!(
        ok(GROUPS, &["--bootstrap-server", b, "--list"], "").trim(),
        ""
    );

    // kafka-log-dirs: the data directory with each partition.
    let dirs = ok(
        LOG_DIRS,
        &[
            "--bootstrap-server",
            b,
            "--describe",
            "--topic-list",
            "orders",
        ],
        "",
    );
    for p in 0..4 {
        assert!(
            dirs.contains(&format!(r#""partition":"orders-{p}""#)),
            "{dirs}"
        );
    }

    // kafka-configs on users: a SCRAM credential set over the wire (AlterUserScramCredentials),
    // as `logd users` then lists it; two mechanisms of one user in one request are refused
    // with Kafka's words, as a KRaft Kafka refuses them.
    let users = |config: &str, op: &str| {
        tool(
            CONFIGS,
            &[
                "--bootstrap-server",
                b,
                "--entity-type",
                "users",
                "--entity-name",
                "alice",
                "--alter",
                op,
                config,
            ],
            "",
        )
    };
    let added = users(
        "SCRAM-SHA-256=[iterations=8192,password=alice-secret]",
        "--add-config",
    );
    assert!(added.ok, "{}\n{}", added.out, added.err);
    assert_eq!(
        added.out.trim(),
        "Completed updating config for user alice."
    );
    let (listed_ok, listed, _) = super::logd(&["users", "list", "--bootstrap", b], "");
    assert!(listed_ok);
    assert_eq!(listed, "alice\tSCRAM-SHA-256(8192)\n");
    let twice = users(
        "SCRAM-SHA-256=[password=a-secret],SCRAM-SHA-512=[password=a-secret]",
        "--add-config",
    );
    assert!(!twice.ok);
    assert!(
        format!("{}{}", twice.out, twice.err)
            .contains("A user credential cannot be altered twice in the same request"),
        "{}\n{}",
        twice.out,
        twice.err
    );
    let missing = users("SCRAM-SHA-512", "--delete-config");
    assert!(!missing.ok);
    assert!(
        format!("{}{}", missing.out, missing.err)
            .contains("Attempt to delete a user credential that does not exist"),
        "{}",
        missing.err
    );

    // kafka-acls: add, list, remove.
    let acl = [
        "--bootstrap-server",
        b,
        "--allow-principal",
        "User:alice",
        "--operation",
        "Read",
        "--topic",
        "orders",
    ];
    ok(ACLS, &[&acl[..], &["--add"]].concat(), "");
    let listed = ok(ACLS, &["--bootstrap-server", b, "--list"], "");
    assert!(
        listed.contains("(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"),
        "{listed}"
    );
    ok(ACLS, &[&acl[..], &["--remove", "--force"]].concat(), "");
    assert_eq!(
        ok(ACLS, &["--bootstrap-server", b, "--list"], "").trim(),
        ""
    );
}

#[test]
fn kafkas_perf_tools_run_and_unserved_tools_fail_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &[]);
    let b = daemon.addr.as_str();
    let produced = ok(
        PRODUCER_PERF,
        &[
            "--topic",
            "perf",
            "--num-records",
            "5000",
            "--record-size",
            "100",
            "--throughput",
            "-1",
            "--command-property",
            &format!("bootstrap.servers={b}"),
        ],
        "",
    );
    assert!(produced.contains("5000 records sent"), "{produced}");
    let consumed = ok(
        CONSUMER_PERF,
        &[
            "--bootstrap-server",
            b,
            "--topic",
            "perf",
            "--num-records",
            "5000",
        ],
        "",
    );
    // The CSV line: start, end, MB, MB/s, records, ...
    let row = consumed.lines().last().unwrap();
    assert_eq!(row.split(", ").nth(4), Some("5000"), "{consumed}");

    for (main, args, unserved) in [
        (
            "org.apache.kafka.tools.MetadataQuorumCommand",
            vec!["--bootstrap-server", b, "describe", "--status"],
            "DESCRIBE_QUORUM",
        ),
        (
            "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
            vec!["--bootstrap-server", b, "--list"],
            "LIST_PARTITION_REASSIGNMENTS",
        ),
    ] {
        let started = std::time::Instant::now();
        let run = tool(main, &args, "");
        assert!(!run.ok, "{main} succeeded: {}", run.out);
        // Some tools print the reason on stdout, some on stderr.
        let printed = format!("{}{}", run.out, run.err);
        assert!(
            printed.contains(&format!("The node does not support {unserved}")),
            "{main}: {printed}"
        );
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "{main} hung"
        );
    }
}
