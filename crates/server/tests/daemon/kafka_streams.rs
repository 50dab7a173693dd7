//! Kafka Streams 4.x against a real daemon: a word count whose `groupBy` goes through a
//! repartition topic and whose counts live in a store backed by a changelog, at-least-once.
//! It runs over half the input and closes; the second half is produced and the application
//! starts again with an empty state directory, so its store is restored from the changelog.
//! The final counts must be exact, the changelog compacted (as Streams creates it), and the
//! repartition topic purged behind the application (DeleteRecords), so it does not grow
//! without bound. And exactly-once v2: an instance SIGKILLed mid-transaction, the counts still
//! exact (a broker that does not tell read_committed readers of aborted transactions fails it).

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

/// Creates the input topic `text`, three partitions, with Kafka's own `kafka-topics`.
fn create_text_topic(bootstrap: &str) {
    let created = java(
        "org.apache.kafka.tools.TopicCommand",
        &[
            "--bootstrap-server",
            bootstrap,
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
}

#[test]
fn kafka_streams_counts_words_restores_its_store_and_purges_its_repartition_topic() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &[]);
    let b = daemon.addr.as_str();
    create_text_topic(b);

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

/// Exactly-once (v2): the same word count, its instance SIGKILLed while input flows in (so
/// with a transaction open, its changelog and output records written but not committed),
/// then a new instance, with a fresh state directory, to the end. At-least-once would count
/// what the killed instance processed without committing twice (its changelog and output are
/// written before the offsets); exactly-once aborts them with its transaction, the restore
/// reads the changelog read_committed, and a read_committed reader sees exact counts.
#[test]
fn kafka_streams_exactly_once_v2_counts_exactly_across_a_killed_instance() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &[]);
    let b = daemon.addr.as_str();
    create_text_topic(b);
    assert_eq!(word_count(&[b, "produce", "0", "1000"]), "produced 1000\n");
    let state = dir.path().join("state-1");
    let mut first = java("WordCount", &[b, "serve", state.to_str().unwrap(), "eos"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(first.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "progress");
    // Input keeps coming (one acknowledged send at a time) while the instance dies.
    let more = java("WordCount", &[b, "produce", "1000", "2000"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(3000));
    first.kill().unwrap();
    first.wait().unwrap();
    let produced = more.wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&produced.stdout), "produced 2000\n");
    let second = dir.path().join("state-2");
    assert_eq!(
        word_count(&[b, "run", second.to_str().unwrap(), "eos"]),
        "caught up\n"
    );
    let listed = java(
        "org.apache.kafka.tools.TransactionsCommand",
        &["--bootstrap-server", b, "list"],
    )
    .output()
    .unwrap();
    // Kafka's own `kafka-transactions.sh list`: both instances' transactional ids ended, none
    // left open or half-ended. The killed instance's ends aborted (by its timeout: the new
    // instance has an id of its own) when the kill caught a transaction open, and committed
    // when it fell between two (one CI run, its machine busy, killed it there); the new one's
    // committed.
    let listed = String::from_utf8_lossy(&listed.stdout);
    let states: Vec<&str> = listed
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(3))
        .collect();
    assert_eq!(states.len(), 2, "{listed}");
    assert!(
        states
            .iter()
            .all(|s| *s == "CompleteAbort" || *s == "CompleteCommit"),
        "{listed}"
    );
    assert!(states.contains(&"CompleteCommit"), "{listed}");
    // 3,000 lines: 3000 = 7 * 428 + 4, so w0..w3 count 429 and w4..w6 428.
    assert_eq!(
        word_count(&[b, "check", "eos"]).lines().next().unwrap(),
        "counts {all=3000, w0=429, w1=429, w2=429, w3=429, w4=428, w5=428, w6=428}"
    );
}
