//! What Debian's librdkafka 2.0.2 (the system's, linked by small C programs in `c/` that the
//! tests build with `cc`) found wanting, each kept working: a static member that closes is
//! gone within its session timeout and a second, so its group can be deleted; a
//! cooperative-sticky consumer whose topic is deleted, and a pattern subscription while
//! topics come and go, never leave a new connection's ApiVersions unanswered; and librdkafka's
//! own statistics scenario (its `0053_stats`) reads every record it produced; and its
//! transaction scenarios (its `0103_transactions`, with the consume-transform-produce of the
//! `0098` kind) pass on logd as on Apache Kafka's cluster.
//!
//! The programs need librdkafka's headers (`apt-get install librdkafka-dev`); without them the
//! tests say so and cover nothing, except under CI, whose script installs them.

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::{Daemon, logd};

/// A C program of `c/` built against the system librdkafka, or `None` without its headers.
fn program(name: &str) -> Option<PathBuf> {
    static HEADERS: OnceLock<bool> = OnceLock::new();
    let headers = *HEADERS.get_or_init(|| {
        let found = Path::new("/usr/include/librdkafka/rdkafka.h").is_file();
        assert!(
            found || std::env::var_os("CI").is_none(),
            "CI installs librdkafka-dev (.ci/run), yet its headers are missing"
        );
        if !found {
            super::say(
                "logd tests: no librdkafka headers, so the librdkafka 2.0.2 tests cover nothing \
                 on this machine (apt-get install librdkafka-dev adds them)",
            );
        }
        found
    });
    if !headers {
        return None;
    }
    let dir = super::test_clients_dir("c");
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/daemon/c")
        .join(format!("{name}.c"));
    let text = fs::read(&source).unwrap();
    // Named by its source's hash, so a changed program is rebuilt; built under a temporary
    // name and renamed into place, so parallel test binaries never run a half-written one.
    let hash = text.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    });
    let binary = dir.join(format!("{name}-{hash:016x}"));
    static BUILDING: Mutex<()> = Mutex::new(());
    let _one_at_a_time = BUILDING.lock().unwrap();
    if binary.is_file() {
        return Some(binary);
    }
    let partial = dir.join(format!("{name}-{hash:016x}.{}", std::process::id()));
    let built = Command::new("cc")
        .arg("-O1")
        .arg("-o")
        .arg(&partial)
        .arg(&source)
        .arg("-lrdkafka")
        .output()
        .expect("cc (a C compiler) on PATH");
    assert!(
        built.status.success(),
        "cc {}: {}",
        source.display(),
        String::from_utf8_lossy(&built.stderr)
    );
    fs::rename(&partial, &binary).unwrap();
    Some(binary)
}

/// `program` with `args`, its environment cleared of the build's library path so that the
/// system librdkafka is the one loaded (the `rdkafka` crate's own sits on LD_LIBRARY_PATH).
fn run(program: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(program);
    command.args(args).env_remove("LD_LIBRARY_PATH");
    command
}

/// The slowest answer to ApiVersions on a new connection, asked every 100 ms for `how_long`.
fn slowest_api_versions(addr: &str, how_long: Duration) -> Duration {
    let mut slowest = Duration::ZERO;
    let end = Instant::now() + how_long;
    while Instant::now() < end {
        let asked = Instant::now();
        let mut stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(40)))
            .unwrap();
        // ApiVersions v0: key 18, version 0, correlation id 1, no client id.
        let body = [0, 18, 0, 0, 0, 0, 0, 1, 0xff, 0xff];
        stream
            .write_all(&(body.len() as i32).to_be_bytes())
            .unwrap();
        stream.write_all(&body).unwrap();
        let mut size = [0u8; 4];
        stream
            .read_exact(&mut size)
            .expect("an answer to ApiVersions");
        slowest = slowest.max(asked.elapsed());
        std::thread::sleep(Duration::from_millis(100));
    }
    slowest
}

/// Starts the consumer program; its stdout lines come through the returned reader.
fn consumer(
    program: &Path,
    addr: &str,
    group: &str,
    subscription: &str,
    seconds: u32,
    settings: &[&str],
) -> (Child, BufReader<std::process::ChildStdout>) {
    let seconds = seconds.to_string();
    let mut args = vec![addr, group, subscription, seconds.as_str()];
    args.extend_from_slice(settings);
    let mut child = run(program, &args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the consumer");
    let lines = BufReader::new(child.stdout.take().unwrap());
    (child, lines)
}

/// Reads lines until one starts with `prefix`; fails if the consumer ends first (it polls for
/// a bounded time).
fn wait_for(lines: &mut BufReader<std::process::ChildStdout>, prefix: &str) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            lines.read_line(&mut line).unwrap() > 0,
            "the consumer ended before printing {prefix}"
        );
        if line.starts_with(prefix) {
            return line.trim().to_owned();
        }
    }
}

#[test]
fn librdkafka_2_0_statistics_scenario_reads_every_record() {
    let Some(stats) = program("stats") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &[]);
    let (ok, _, err) = logd(
        &[
            "topics",
            "create",
            "stats",
            "--partitions",
            "2",
            "--bootstrap",
            &daemon.addr,
        ],
        "",
    );
    assert!(ok, "{err}");
    let output = run(&stats, &[&daemon.addr, "stats", "60"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "consumed 200 stats 1 1",
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// librdkafka's transaction scenarios (`c/transactions.c`) against `bootstrap`, topics named
/// after `prefix`: what the program printed, and its log and complaint.
fn transaction_scenarios(program: &Path, bootstrap: &str, prefix: &str) -> (String, String) {
    for (suffix, partitions) in [("basic", "4"), ("in", "4"), ("out", "4"), ("fenced", "1")] {
        let topic = format!("{prefix}-{suffix}");
        let create = [
            "topics",
            "create",
            &topic,
            "--partitions",
            partitions,
            "--bootstrap",
            bootstrap,
        ];
        let (ok, _, err) = logd(&create, "");
        assert!(ok, "{err}");
    }
    let mut child = run(program, &[bootstrap, prefix])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Bounded: a scenario that hangs fails here rather than stall the suite.
    let deadline = Instant::now() + Duration::from_secs(240);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let output = child.wait_with_output().unwrap();
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn librdkafka_2_0_transaction_scenarios_pass_on_logd_as_on_kafka() {
    let Some(program) = program("transactions") else {
        return;
    };
    let expected = "ok misuse\nok basic\nok pipeline 150\nok fenced\n";
    let (on_kafka, log) = transaction_scenarios(
        &program,
        &super::kafka_cluster::kafka_cluster().bootstrap,
        "rdk-txn",
    );
    assert_eq!(on_kafka, expected, "the scenarios on Kafka:\n{log}");
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &["--group-initial-rebalance-delay-ms", "0"]);
    let (on_logd, log) = transaction_scenarios(&program, &daemon.addr, "rdk-txn");
    assert_eq!(on_logd, expected, "the scenarios on logd:\n{log}");
}

#[test]
fn a_librdkafka_2_0_static_member_is_gone_within_its_session_timeout() {
    let Some(program) = program("consumer") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(
        dir.path(),
        &[
            "--group-min-session-timeout-ms",
            "1000",
            "--group-initial-rebalance-delay-ms",
            "0",
        ],
    );
    let b = daemon.addr.as_str();
    let (ok, _, err) = logd(&["topics", "create", "jobs", "--bootstrap", b], "");
    assert!(ok, "{err}");
    // A static member closes without leaving (KIP-345), so only its session ends it.
    let static_member = ["group.instance.id=worker-1", "session.timeout.ms=5000"];
    let (mut child, mut lines) = consumer(&program, b, "statics", "jobs", 6, &static_member);
    wait_for(&mut lines, "assigned 1");
    let (deleted, _, _) = logd(&["groups", "delete", "statics", "--bootstrap", b], "");
    assert!(!deleted, "a group with a live member is not deleted");
    wait_for(&mut lines, "closed");
    child.wait().unwrap();
    let closed = Instant::now();
    loop {
        // Deleted, or gone already: its last member's session ended and it had no offsets.
        let (deleted, _, err) = logd(&["groups", "delete", "statics", "--bootstrap", b], "");
        if deleted || err.contains("does not exist") {
            break;
        }
        assert!(
            closed.elapsed() < Duration::from_secs(6),
            "still a member {:?} after its consumer closed: {err}",
            closed.elapsed()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    super::say(&format!(
        "logd librdkafka 2.0.2: a closed static member (session 5 s) left its group after {:?}",
        closed.elapsed()
    ));
}

#[test]
fn deleting_a_cooperative_groups_topic_never_stalls_a_new_connection() {
    let Some(program) = program("consumer") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &[]);
    let b = daemon.addr.as_str();
    let topics = |args: &[&str]| {
        let mut all = vec!["topics"];
        all.extend_from_slice(args);
        all.extend(["--bootstrap", b]);
        let (ok, _, err) = logd(&all, "");
        assert!(ok, "{err}");
    };
    topics(&["create", "watched", "--partitions", "3"]);
    let cooperative = [
        "partition.assignment.strategy=cooperative-sticky",
        "topic.metadata.refresh.interval.ms=1000",
    ];
    let (mut by_name, mut named) = consumer(&program, b, "named", "watched", 20, &cooperative);
    wait_for(&mut named, "assigned 3");
    let (mut by_pattern, mut patterned) =
        consumer(&program, b, "patterns", "^watched.*", 20, &cooperative);
    wait_for(&mut patterned, "assigned 3");
    // Topics come and go under both while new connections ask for ApiVersions.
    let probe = {
        let addr = daemon.addr.clone();
        std::thread::spawn(move || slowest_api_versions(&addr, Duration::from_secs(12)))
    };
    topics(&["create", "watched-too", "--partitions", "2"]);
    std::thread::sleep(Duration::from_secs(2));
    topics(&["delete", "watched"]);
    std::thread::sleep(Duration::from_secs(2));
    topics(&["delete", "watched-too"]);
    topics(&["create", "watched-again"]);
    let slowest = probe.join().unwrap();
    assert_eq!(
        wait_for(&mut named, "revoked"),
        "revoked 3",
        "the deleted topic's partitions"
    );
    super::say(&format!(
        "logd librdkafka 2.0.2: slowest ApiVersions while a cooperative group's topics were \
         deleted: {slowest:?}"
    ));
    assert!(
        slowest < Duration::from_secs(1),
        "a new connection waited {slowest:?} for ApiVersions"
    );
    for child in [&mut by_name, &mut by_pattern] {
        let _ = child.kill();
        child.wait().unwrap();
    }
}
