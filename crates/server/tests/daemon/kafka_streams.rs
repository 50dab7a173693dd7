//! Kafka Streams 4.x against a real daemon: a word count whose `groupBy` goes through a
//! repartition topic and whose counts live in a store backed by a changelog, at-least-once.
//! It runs over half the input and closes; the second half is produced and the application
//! starts again with an empty state directory, so its store is restored from the changelog.
//! The final counts must be exact, the changelog compacted (as Streams creates it), and the
//! repartition topic purged behind the application (DeleteRecords), so it does not grow
//! without bound.

use super::Daemon;
use super::java_clients::java;

/// Runs a step of the WordCount program; its stdout.
fn word_count(args: &[&str]) -> String {
    let output = java("WordCount", args).output().expect("java");
    assert!(
        output.status.success(),
        "WordCount {args:?}\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn kafka_streams_counts_words_restores_its_store_and_purges_its_repartition_topic() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &[]);
    let b = daemon.addr.as_str();
    let created = java(
        "org.apache.kafka.tools.TopicCommand",
        &[
            "--bootstrap-server",
            b,
            "--create",
            "--topic",
            "text",
            "--partitions",
            "3",
        ],
    )
    .output()
    .unwrap();
    assert!(created.status.success());

    assert_eq!(word_count(&[b, "produce", "0", "50"]), "produced 50\n");
    let first_state = dir.path().join("state-1");
    assert_eq!(
        word_count(&[b, "run", first_state.to_str().unwrap()]),
        "caught up\n"
    );
    assert_eq!(word_count(&[b, "produce", "50", "50"]), "produced 50\n");
    // A new state directory: the store comes back from the changelog alone.
    let second_state = dir.path().join("state-2");
    assert_eq!(
        word_count(&[b, "run", second_state.to_str().unwrap()]),
        "caught up\n"
    );
    // Line i holds "w(i % 7)" and "all": 100 lines give w0 and w1 15, the others 14.
    assert_eq!(
        word_count(&[b, "check"]),
        "counts {all=100, w0=15, w1=15, w2=14, w3=14, w4=14, w5=14, w6=14}\n\
         changelog true cleanup.policy compact\n\
         repartition purged true all true\n"
    );
}
