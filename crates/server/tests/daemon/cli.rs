//! The client subcommands against a running logd: topics, produce, consume from every kind of
//! offset, replay into another topic, and errors a person can act on.

use std::process::Command;

use super::{Daemon, logd};

fn ok(args: &[&str], stdin: &str) -> String {
    let (success, stdout, stderr) = logd(args, stdin);
    assert!(success, "logd {args:?} failed: {stderr}");
    stdout
}

#[test]
fn topics_produce_consume_and_replay_through_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &[]);
    let b = daemon.addr.as_str();
    assert_eq!(
        ok(
            &[
                "topics",
                "create",
                "orders",
                "--partitions",
                "3",
                "--bootstrap",
                b
            ],
            ""
        ),
        "created topic orders\n"
    );
    assert_eq!(
        ok(&["topics", "list", "--bootstrap-server", b], ""),
        "orders\n"
    );

    let lines: String = (0..30)
        .map(|i| format!("user-{}|order {i}\n", i % 4))
        .collect();
    let produced = ok(
        &[
            "produce",
            "-t",
            "orders",
            "-k",
            "|",
            "-H",
            "source=cli",
            "--bootstrap",
            b,
        ],
        &lines,
    );
    assert_eq!(produced, "30 records acknowledged\n");

    let described = ok(&["topics", "describe", "orders", "--bootstrap", b], "");
    let ends: i64 = described
        .lines()
        .skip(2)
        .map(|l| l.split('\t').nth(2).unwrap().parse::<i64>().unwrap())
        .sum();
    assert_eq!(ends, 30, "{described}");
    // Sizes: each partition's segment bytes, as the files on disk say.
    let sizes: Vec<i64> = described
        .lines()
        .skip(2)
        .map(|l| l.split('\t').nth(3).unwrap().parse::<i64>().unwrap())
        .collect();
    for (partition, size) in sizes.iter().enumerate() {
        let segments = dir.path().join(format!("topics/orders/{partition}"));
        let on_disk: u64 = std::fs::read_dir(&segments)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "log"))
            .map(|p| std::fs::metadata(p).unwrap().len())
            .sum();
        assert_eq!(*size as u64, on_disk, "partition {partition}: {described}");
    }
    assert!(sizes.iter().sum::<i64>() > 30 * 20, "{described}");

    // JSON lines carry everything; each key stays in one partition, in order.
    let json = ok(
        &[
            "consume",
            "-t",
            "orders",
            "--format",
            "json",
            "--bootstrap",
            b,
        ],
        "",
    );
    assert_eq!(json.lines().count(), 30);
    assert!(
        json.lines().all(
            |l| l.contains("\"headers\":{\"source\":\"cli\"}") && l.contains("\"key\":\"user-")
        )
    );
    let first_line = json
        .lines()
        .find(|l| l.contains("\"value\":\"order 0\""))
        .unwrap();
    let partition = first_line
        .split("\"partition\":")
        .nth(1)
        .unwrap()
        .split(',')
        .next()
        .unwrap()
        .to_owned();
    let user0: Vec<&str> = json
        .lines()
        .filter(|l| l.contains("\"key\":\"user-0\""))
        .collect();
    assert!(
        user0
            .iter()
            .all(|l| l.contains(&format!("\"partition\":{partition},")))
    );

    // Offsets: an offset N, the last N, a count, and a timestamp.
    let p = partition.as_str();
    let all = ok(&["consume", "-t", "orders", "-p", p, "--bootstrap", b], "");
    let from_one = ok(
        &[
            "consume",
            "-t",
            "orders",
            "-p",
            p,
            "-o",
            "1",
            "--bootstrap",
            b,
        ],
        "",
    );
    assert_eq!(
        from_one,
        all.lines()
            .skip(1)
            .map(|l| format!("{l}\n"))
            .collect::<String>()
    );
    let last_two = ok(
        &[
            "consume",
            "-t",
            "orders",
            "-p",
            p,
            "-o",
            "-2",
            "--bootstrap",
            b,
        ],
        "",
    );
    assert_eq!(last_two.lines().count(), 2);
    assert_eq!(
        ok(
            &["consume", "-t", "orders", "-n", "5", "--bootstrap", b],
            ""
        )
        .lines()
        .count(),
        5
    );
    let later = chrono_like_now_ms() + 60_000;
    assert_eq!(
        ok(
            &[
                "consume",
                "-t",
                "orders",
                "-o",
                &format!("@{later}"),
                "--bootstrap",
                b
            ],
            ""
        ),
        "",
        "nothing is that new"
    );
    assert_eq!(
        ok(
            &[
                "consume",
                "-t",
                "orders",
                "-o",
                "@2020-01-01T00:00:00Z",
                "--bootstrap",
                b
            ],
            ""
        )
        .lines()
        .count(),
        30
    );

    // Replay a range into another topic: keys, headers and timestamps kept.
    let (success, _, summary) = logd(
        &[
            "replay",
            "-t",
            "orders",
            "-p",
            p,
            "-o",
            "1",
            "--to",
            "3",
            "--into",
            "audit",
            "--bootstrap",
            b,
        ],
        "",
    );
    assert!(success, "{summary}");
    assert!(summary.contains("replayed 2 records"), "{summary}");
    let copied = ok(
        &[
            "consume",
            "-t",
            "audit",
            "--format",
            "json",
            "--bootstrap",
            b,
        ],
        "",
    );
    assert_eq!(copied.lines().count(), 2);
    assert!(
        copied
            .lines()
            .all(|l| l.contains("\"source\":\"cli\"") && l.contains("\"key\":\"user-"))
    );
    let replayed_values: Vec<String> = from_one.lines().take(2).map(str::to_owned).collect();
    for value in replayed_values {
        assert!(
            copied.contains(&format!("\"value\":\"{value}\"")),
            "{value} missing from {copied}"
        );
    }
    assert_eq!(
        ok(&["topics", "delete", "audit", "--bootstrap", b], ""),
        "deleted topic audit\n"
    );
}

fn chrono_like_now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[test]
fn errors_are_sentences_and_a_closed_pipe_is_not_one() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &[]);
    let b = daemon.addr.as_str();
    let (success, _, stderr) = logd(&["consume", "-t", "orders", "--bootstrap", b], "");
    assert!(!success);
    assert_eq!(stderr.trim(), "logd: topic orders does not exist");
    let (success, _, stderr) = logd(&["topics", "list", "--bootstrap", "127.0.0.1:1"], "");
    assert!(!success);
    assert!(
        stderr.starts_with("logd: cannot connect to 127.0.0.1:1"),
        "{stderr}"
    );
    let (success, _, stderr) = logd(&["consume", "-t", "x", "-o", "soon", "--bootstrap", b], "");
    assert!(!success && stderr.contains("bad offset"), "{stderr}");

    let lines: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
    ok(&["produce", "-t", "many", "--bootstrap", b], &lines);
    let piped = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "set -o pipefail; {} consume -t many --bootstrap {b} | head -3",
            env!("CARGO_BIN_EXE_logd")
        ))
        .output()
        .unwrap();
    assert!(
        piped.status.success(),
        "logd consume | head exits quietly: {}",
        String::from_utf8_lossy(&piped.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&piped.stdout),
        "line 0\nline 1\nline 2\n"
    );
    assert!(
        piped.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&piped.stderr)
    );
}

#[test]
fn a_config_file_sets_options_and_flags_and_environment_win() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("logd.toml");
    std::fs::write(
        &config,
        "default-partitions = 4\nmax-message-bytes = 2048\n",
    )
    .unwrap();
    // The environment beats the file for partitions; the file's message limit applies.
    let daemon = Daemon::start_with_env(
        &dir.path().join("data"),
        &["--config", config.to_str().unwrap()],
        &[("LOGD_DEFAULT_PARTITIONS", "3")],
    );
    let b = daemon.addr.as_str();
    ok(&["produce", "-t", "t", "--bootstrap", b], "small\n");
    assert!(
        ok(&["topics", "describe", "t", "--bootstrap", b], "").starts_with("topic t: 3 partitions")
    );
    let big = format!("{}\n", "x".repeat(4000));
    let (success, _, stderr) = logd(&["produce", "-t", "t", "--bootstrap", b], &big);
    assert!(
        !success && stderr.contains("too large"),
        "the file's max-message-bytes applies: {stderr}"
    );

    std::fs::write(&config, "no-such-option = 1\n").unwrap();
    let (success, _, stderr) = logd(&["serve", "--config", config.to_str().unwrap()], "");
    assert!(
        !success && stderr.contains("unknown option `no-such-option`"),
        "{stderr}"
    );
}
