//! Transactions end to end with confluent-kafka (librdkafka) against a real logd: commit and
//! abort as read_committed and read_uncommitted consumers see them, fencing by a second
//! instance, a producer killed mid-transaction (its records never visible to read_committed,
//! the stable offset freed by the transaction timeout), and consume-transform-produce with
//! `send_offsets_to_transaction` under `kill -9` of the application and of logd, its output
//! checked record by record: each input exactly once.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::{Daemon, python, python_script};

/// Commits 10, aborts 5, commits 1; then a second instance with the same transactional id
/// fences the first, whose next commit fails fatally. Prints what each isolation level reads.
const COMMIT_ABORT_FENCE: &str = r#"
import sys, time
from confluent_kafka import Producer, Consumer, TopicPartition, OFFSET_BEGINNING, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic
b = sys.argv[1]
admin = AdminClient({"bootstrap.servers": b})
for f in admin.create_topics([NewTopic("tx", num_partitions=2, replication_factor=1)]).values():
    f.result(10)
p = Producer({"bootstrap.servers": b, "transactional.id": "app-1"})
p.init_transactions(10)
p.begin_transaction()
for i in range(10):
    p.produce("tx", key=f"k{i}", value=f"c{i}")
p.commit_transaction(10)
p.begin_transaction()
for i in range(5):
    p.produce("tx", key=f"k{i}", value=f"a{i}")
p.flush(10)
p.abort_transaction(10)
p.begin_transaction()
p.produce("tx", key="k0", value="c-last")
p.commit_transaction(10)
# A second instance fences the first, which has a transaction open.
p.begin_transaction()
p.produce("tx", key="k1", value="zombie")
p.flush(10)
second = Producer({"bootstrap.servers": b, "transactional.id": "app-1"})
second.init_transactions(10)
try:
    p.commit_transaction(10)
    fenced = "not fenced"
except KafkaException as e:
    fenced = "fatal" if e.args[0].fatal() else "not fatal: " + str(e)
second.begin_transaction()
second.produce("tx", key="k2", value="second")
second.commit_transaction(10)
def read(level):
    c = Consumer({"bootstrap.servers": b, "group.id": "r-" + level, "isolation.level": level,
                  "enable.auto.commit": False})
    c.assign([TopicPartition("tx", 0, OFFSET_BEGINNING), TopicPartition("tx", 1, OFFSET_BEGINNING)])
    got = []
    deadline = time.time() + 6
    while time.time() < deadline:
        m = c.poll(0.3)
        if m is None or m.error():
            continue
        got.append(m.value().decode())
    c.close()
    return " ".join(sorted(got))
print(fenced)
print(read("read_committed"))
print(read("read_uncommitted"))
"#;

#[test]
fn confluent_kafka_commits_aborts_and_is_fenced_as_on_kafka() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &[]);
    let out = python(COMMIT_ABORT_FENCE, &daemon.addr);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "fatal", "the fenced instance's commit");
    assert_eq!(lines[1], "c-last c0 c1 c2 c3 c4 c5 c6 c7 c8 c9 second");
    assert_eq!(
        lines[2],
        "a0 a1 a2 a3 a4 c-last c0 c1 c2 c3 c4 c5 c6 c7 c8 c9 second zombie"
    );
}

/// Opens a transaction (timeout argv[2] ms), produces five records, flushes, says "ready"
/// and waits to be killed.
const DIES_MID_TRANSACTION: &str = r#"
import sys, time
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "transactional.id": "doomed",
              "transaction.timeout.ms": int(sys.argv[2])})
p.init_transactions(10)
p.begin_transaction()
for i in range(5):
    p.produce("held", value=f"dead{i}")
p.flush(10)
print("ready", flush=True)
time.sleep(600)
"#;

/// Creates topic `held` and leaves in it a transaction of five records, open under
/// `timeout_ms` ("6000" or longer), by a producer SIGKILLed once they were acknowledged.
fn hanging_transaction(bootstrap: &str, timeout_ms: &str) {
    super::logd(
        &[
            "topics",
            "create",
            "held",
            "--partitions",
            "1",
            "--bootstrap",
            bootstrap,
        ],
        "",
    );
    let mut doomed = python_script(DIES_MID_TRANSACTION, &[bootstrap, timeout_ms])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(doomed.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready");
    doomed.kill().unwrap();
    doomed.wait().unwrap();
}

/// Produces "after" (idempotent, not transactional), then reads read_committed until it sees
/// it, printing each value and the seconds it took.
const READS_PAST_IT: &str = r#"
import sys, time
from confluent_kafka import Producer, Consumer, TopicPartition, OFFSET_BEGINNING
b = sys.argv[1]
p = Producer({"bootstrap.servers": b})
p.produce("held", value="after")
p.flush(10)
start = time.time()
c = Consumer({"bootstrap.servers": b, "group.id": "r", "isolation.level": "read_committed",
              "enable.auto.commit": False})
c.assign([TopicPartition("held", 0, OFFSET_BEGINNING)])
got = []
while time.time() - start < 40 and "after" not in got:
    m = c.poll(0.2)
    if m is not None and not m.error():
        got.append(m.value().decode())
print(" ".join(got), round(time.time() - start))
"#;

#[test]
fn a_producer_killed_mid_transaction_is_never_read_and_its_timeout_frees_the_stable_offset() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &[]);
    hanging_transaction(&daemon.addr, "6000");
    let out = python(READS_PAST_IT, &daemon.addr);
    let (values, seconds) = out.trim().rsplit_once(' ').unwrap();
    assert_eq!(
        values, "after",
        "the dead transaction's records are never read"
    );
    let seconds: u64 = seconds.parse().unwrap();
    assert!(
        (2..=20).contains(&seconds),
        "held back until the 6 s timeout aborted it, then read: {seconds} s"
    );
}

/// Two consumer groups on `held`, `rc` read_committed and `ru` read_uncommitted: each reads
/// what it can for 6 s, committing after each record, prints what it read and stays a member.
const TWO_GROUPS: &str = r#"
import sys, time
from confluent_kafka import Consumer
b = sys.argv[1]
groups = {}
for group, level in [("rc", "read_committed"), ("ru", "read_uncommitted")]:
    c = Consumer({"bootstrap.servers": b, "group.id": group, "isolation.level": level,
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.subscribe(["held"])
    groups[group] = (c, [])
start = time.time()
while time.time() - start < 6:
    for c, got in groups.values():
        m = c.poll(0.1)
        if m is not None and not m.error():
            got.append(m.value().decode())
            c.commit(message=m, asynchronous=False)
for group, (c, got) in groups.items():
    print(group, " ".join(got), flush=True)
time.sleep(600)
"#;

#[test]
fn a_read_committed_groups_lag_ends_at_the_last_stable_offset() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &["--metrics-listen", "127.0.0.1:0"]);
    let create = ["topics", "create", "held", "--partitions", "1"];
    let (ok, _, err) = super::logd(&[&create[..], &["--bootstrap", &daemon.addr]].concat(), "");
    assert!(ok, "{err}");
    let (ok, _, err) = super::logd(
        &["produce", "--topic", "held", "--bootstrap", &daemon.addr],
        "before\n",
    );
    assert!(ok, "{err}");
    // Five records of an open transaction after it, its producer dead, its timeout a minute.
    hanging_transaction(&daemon.addr, "60000");
    let mut groups = python_script(TWO_GROUPS, &[&daemon.addr])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(groups.stdout.take().unwrap());
    let mut read = BTreeMap::new();
    for _ in 0..2 {
        let mut line = String::new();
        lines.read_line(&mut line).unwrap();
        let (group, values) = line.trim().split_once(' ').unwrap_or((line.trim(), ""));
        read.insert(group.to_owned(), values.to_owned());
    }
    assert_eq!(read["rc"], "before");
    assert_eq!(read["ru"], "before dead0 dead1 dead2 dead3 dead4");
    // Both read all they can: rc's lag is 0 to the stable offset (5 to the high watermark).
    let metrics = daemon.metrics.as_deref().unwrap();
    let samples = super::metrics::scrape(metrics);
    for group in ["rc", "ru"] {
        let lag = format!(r#"logd_consumer_lag{{group="{group}",topic="held",partition="0"}}"#);
        assert_eq!(samples.get(&lag), Some(&0.0), "{group}: {samples:?}");
    }
    let (_, rc) = super::metrics::get(metrics, "/api/v1/groups/rc");
    let (_, ru) = super::metrics::get(metrics, "/api/v1/groups/ru");
    groups.kill().unwrap();
    groups.wait().unwrap();
    let rc: serde_json::Value = serde_json::from_str(&rc).unwrap();
    let ru: serde_json::Value = serde_json::from_str(&ru).unwrap();
    assert_eq!(rc["isolation"], "read_committed", "{rc}");
    assert_eq!(rc["offsets"][0]["log_end"], 1, "{rc}");
    assert_eq!(rc["offsets"][0]["lag"], 0, "{rc}");
    assert_eq!(ru["isolation"], "read_uncommitted", "{ru}");
    assert_eq!(ru["offsets"][0]["log_end"], 6, "{ru}");
}

/// The application: consumes `in` read_committed in group `xf`, and per poll of up to five
/// records, in one transaction, produces each value prefixed `out-` to `out` and sends the
/// consumed offsets. Any error ends it with status 1 (the harness starts it again, as a
/// supervisor would); it ends with 0 after 8 s without input.
const TRANSFORM: &str = r#"
import sys, time
from confluent_kafka import Producer, Consumer, TopicPartition
b = sys.argv[1]
c = Consumer({"bootstrap.servers": b, "group.id": "xf", "isolation.level": "read_committed",
              "enable.auto.commit": False, "auto.offset.reset": "earliest",
              "session.timeout.ms": 6000})
p = Producer({"bootstrap.servers": b, "transactional.id": "xf-app", "transaction.timeout.ms": 10000})
p.init_transactions(30)
c.subscribe(["in"])
idle = time.time()
while time.time() - idle < 8:
    msgs = [m for m in c.consume(num_messages=5, timeout=0.5) if not m.error()]
    if not msgs:
        continue
    idle = time.time()
    p.begin_transaction()
    for m in msgs:
        p.produce("out", key=m.key(), value=b"out-" + m.value())
    p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 30)
    p.commit_transaction(30)
    print("committed", len(msgs), flush=True)
    time.sleep(0.05)
"#;

/// Produces argv[2] records `in-<i>` to `in`.
const FILL: &str = r#"
import sys
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "acks": "all"})
for i in range(int(sys.argv[2])):
    p.produce("in", key=str(i), value=f"in-{i}")
assert p.flush(30) == 0
"#;

/// Reads `out` read_committed from the start until idle: every value with its count.
const READ_OUT: &str = r#"
import sys, time
from confluent_kafka import Consumer, TopicPartition, OFFSET_BEGINNING
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "check",
              "isolation.level": "read_committed", "enable.auto.commit": False})
c.assign([TopicPartition("out", p, OFFSET_BEGINNING) for p in range(3)])
got = []
last = time.time()
while time.time() - last < 4:
    m = c.poll(0.2)
    if m is not None and not m.error():
        got.append(m.value().decode())
        last = time.time()
print(" ".join(got))
"#;

const INPUT: usize = 300;

/// Starts the application; each transaction it commits adds one to `commits`.
fn start_app(addr: &str, commits: &Arc<AtomicUsize>) -> Child {
    let mut app = python_script(TRANSFORM, &[addr])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = BufReader::new(app.stdout.take().unwrap());
    let commits = commits.clone();
    std::thread::spawn(move || {
        for line in out.lines().map_while(Result::ok) {
            if line.starts_with("committed") {
                commits.fetch_add(1, Ordering::SeqCst);
            }
        }
    });
    app
}

/// A supervisor's view of the application: started again whenever it gives up, and killed and
/// started again when it is alive but has committed nothing for `STUCK` (a liveness probe).
/// The probe is for librdkafka, not logd: after its transaction coordinator's connection
/// drops, `send_offsets_to_transaction` can wait forever past its timeout (librdkafka issues
/// 5456 and 5511, open against 2.14-2.16), as it would after a Kafka broker restart.
struct Supervised {
    app: Child,
    commits: Arc<AtomicUsize>,
    progress: (usize, Instant),
}

const STUCK: Duration = Duration::from_secs(20);

impl Supervised {
    /// Looks once; true when the application finished (exited 0).
    fn check(&mut self, addr: &str) -> bool {
        let now = self.commits.load(Ordering::SeqCst);
        if now != self.progress.0 {
            self.progress = (now, Instant::now());
        }
        match self.app.try_wait().unwrap() {
            Some(status) if status.success() => return true,
            Some(_) => self.restart(addr),
            None if self.progress.1.elapsed() > STUCK => {
                self.app.kill().unwrap();
                self.app.wait().unwrap();
                self.restart(addr);
            }
            None => {}
        }
        false
    }

    fn restart(&mut self, addr: &str) {
        self.app = start_app(addr, &self.commits);
        self.progress.1 = Instant::now();
    }

    /// Waits until the application committed `more` transactions after `seen`.
    fn wait_for_commits(&mut self, addr: &str, seen: usize, more: usize) -> usize {
        super::wait_until("the application commits", Duration::from_secs(120), || {
            self.check(addr);
            self.commits.load(Ordering::SeqCst) >= seen + more
        });
        self.commits.load(Ordering::SeqCst)
    }
}

#[test]
fn consume_transform_produce_is_exactly_once_across_kill_9_of_the_app_and_of_logd() {
    let dir = tempfile::tempdir().unwrap();
    let mut daemon = Some(Daemon::start(dir.path(), &["--fsync", "always"]));
    let addr = daemon.as_ref().unwrap().addr.clone();
    for topic in ["in", "out"] {
        let (ok, _, err) = super::logd(
            &[
                "topics",
                "create",
                topic,
                "--partitions",
                "3",
                "--bootstrap",
                &addr,
            ],
            "",
        );
        assert!(ok, "{err}");
    }
    let filled = python_script(FILL, &[&addr, &INPUT.to_string()])
        .status()
        .unwrap();
    assert!(filled.success());
    let commits = Arc::new(AtomicUsize::new(0));
    let mut app = Supervised {
        app: start_app(&addr, &commits),
        commits: commits.clone(),
        progress: (0, Instant::now()),
    };
    let start = Instant::now();
    // Kill the application twice and logd once, each after a few committed transactions,
    // restarting each.
    let mut seen = 0;
    for round in 0..3 {
        seen = app.wait_for_commits(&addr, seen, 4);
        if round == 1 {
            daemon.take().unwrap().kill();
            daemon = Some(Daemon::start_on(dir.path(), &addr, &["--fsync", "always"]));
        } else {
            app.app.kill().unwrap();
            app.app.wait().unwrap();
            app.restart(&addr);
        }
    }
    // Let it finish.
    while !app.check(&addr) {
        assert!(
            start.elapsed() < Duration::from_secs(300),
            "the application never finished"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = python(READ_OUT, &addr);
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for value in out.split_whitespace() {
        *counts.entry(value).or_default() += 1;
    }
    let twice: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "written more than once: {twice:?}");
    let missing: Vec<usize> = (0..INPUT)
        .filter(|i| !counts.contains_key(format!("out-in-{i}").as_str()))
        .collect();
    assert!(missing.is_empty(), "never written: {missing:?}");
    assert_eq!(counts.len(), INPUT);
    // Not all in the first few transactions: the kills landed mid-stream.
    assert!(
        commits.load(Ordering::SeqCst) >= 12,
        "{commits:?} transactions"
    );
}

/// `kafka-transactions.sh abort` and `logd transactions abort` of `held`'s transaction.
const ABORT_HELD: [&str; 7] = [
    "abort",
    "--topic",
    "held",
    "--partition",
    "0",
    "--start-offset",
    "0",
];

/// A read_committed reader gets past the aborted transaction at once, not after its timeout.
fn read_past_it_at_once(bootstrap: &str) {
    let out = python(READS_PAST_IT, bootstrap);
    let (values, seconds) = out.trim().rsplit_once(' ').unwrap();
    assert_eq!(values, "after");
    let seconds: u64 = seconds.parse().unwrap();
    assert!(seconds < 5, "read past it at once: {seconds} s");
}

/// Kafka's `kafka-transactions.sh` (its TransactionsCommand, kafka-tools 4.4) on a producer
/// killed mid-transaction with a ten-minute timeout: `list` and `describe` show it Ongoing
/// with its partition, `describe-producers` its open transaction's start, and `abort` (which
/// sends WriteTxnMarkers) ends it at once, so a read_committed reader gets past it without
/// waiting for the timeout. `/metrics` shows the open transaction and the partition's
/// last-stable-offset lag, and no lag once it is aborted.
#[test]
fn kafkas_transactions_tool_lists_describes_and_aborts_a_hanging_transaction() {
    use super::java_clients::java;
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &["--metrics-listen", "127.0.0.1:0"]);
    let b = daemon.addr.as_str();
    let http = daemon.metrics.clone().unwrap();
    hanging_transaction(b, "600000");
    let tool = |args: &[&str]| {
        let mut all = vec!["--bootstrap-server", b];
        all.extend_from_slice(args);
        let out = java("org.apache.kafka.tools.TransactionsCommand", &all)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let listed = tool(&["list"]);
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with("doomed") && l.contains("Ongoing")),
        "{listed}"
    );
    let described = tool(&["describe", "--transactional-id", "doomed"]);
    assert!(
        described.contains("Ongoing") && described.contains("held-0"),
        "{described}"
    );
    let producers = tool(&["describe-producers", "--topic", "held", "--partition", "0"]);
    // Columns: ProducerId ProducerEpoch LatestCoordinatorEpoch LastSequence LastTimestamp
    // CurrentTransactionStartOffset.
    let start: Vec<&str> = producers
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(5))
        .collect();
    assert_eq!(start, ["0"], "{producers}");
    let metrics = super::metrics::scrape(&http);
    assert_eq!(
        metrics.get("logd_transactions{state=\"Ongoing\"}"),
        Some(&1.0)
    );
    let lag = "logd_last_stable_offset_lag{topic=\"held\",partition=\"0\"}";
    assert_eq!(metrics.get(lag), Some(&5.0), "its five records");
    assert!(metrics["logd_transaction_oldest_open_age_seconds"] > 0.0);
    // The console's view of the same.
    let (status, body) = super::metrics::get(&http, "/api/v1/transactions");
    assert_eq!(status, "HTTP/1.1 200 OK");
    let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
    let t = &answer["transactions"][0];
    assert_eq!(
        (t["transactional_id"].as_str(), t["state"].as_str()),
        (Some("doomed"), Some("Ongoing"))
    );
    assert_eq!(t["partitions"][0]["topic"], "held");
    assert_eq!(answer["unstable_partitions"][0]["lag"], 5);
    tool(&ABORT_HELD);
    assert_eq!(super::metrics::scrape(&http).get(lag), None);
    read_past_it_at_once(b);
}

/// `logd transactions` on the same kind of hanging transaction: `list` and `describe` show it,
/// `abort` at a wrong offset is refused and at its start ends it, so a read_committed reader
/// gets past it at once.
#[test]
fn logds_transactions_tool_lists_describes_and_aborts_a_hanging_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &[]);
    let b = daemon.addr.as_str();
    hanging_transaction(b, "600000");
    let logd = |args: &[&str]| {
        let mut all = vec!["transactions"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--bootstrap", b]);
        super::logd(&all, "")
    };
    let (ok, listed, err) = logd(&["list"]);
    assert!(ok, "{err}");
    let rows: Vec<Vec<&str>> = listed
        .lines()
        .skip(1)
        .map(|l| l.split('\t').collect())
        .collect();
    assert_eq!(rows.len(), 1, "{listed}");
    assert_eq!((rows[0][0], rows[0][2]), ("doomed", "Ongoing"));
    let (ok, described, err) = logd(&["describe", "doomed"]);
    assert!(ok, "{err}");
    let row: Vec<&str> = described.lines().nth(1).unwrap().split('\t').collect();
    assert_eq!(
        (row[0], row[2], row[3], row[4]),
        ("doomed", "0", "Ongoing", "600000")
    );
    assert_eq!(row[6], "held-0");
    let (ok, _, err) = logd(&[
        "abort",
        "--topic",
        "held",
        "--partition",
        "0",
        "--start-offset",
        "3",
    ]);
    assert!(
        !ok && err.contains("no transaction in held-0 starts at offset 3"),
        "{err}"
    );
    let (ok, aborted, err) = logd(&ABORT_HELD);
    assert!(ok, "{err}");
    assert!(aborted.contains("held-0 from offset 0"), "{aborted}");
    read_past_it_at_once(b);
}
