//! Consumer groups through unmodified clients: confluent-kafka members that are killed or close
//! gracefully, eager and cooperative rebalancing, and a checker over everything every member
//! processed: no record lost, and a record is processed again only if its earlier processing
//! was never committed (at-least-once, nothing re-consumed beyond the last commit).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::{Daemon, librdkafka, python, python_script, wait_until};

/// One group member: processes each record (a line in its file), then commits it
/// synchronously, and logs its assignment after every change. SIGTERM closes it gracefully
/// (LeaveGroup); SIGKILL gives the broker nothing.
const WORKER: &str = r#"
import sys, time, signal
from confluent_kafka import Consumer, KafkaException
addr, group, name, strategy, out_path, delay, instance = sys.argv[1:8]
delay = float(delay)
out = open(out_path, "a", buffering=1)
stop = False
def on_term(*_):
    global stop
    stop = True
signal.signal(signal.SIGTERM, on_term)
c = Consumer({"bootstrap.servers": addr, "group.id": group, "client.id": name,
              "auto.offset.reset": "earliest", "enable.auto.commit": False,
              "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
              "partition.assignment.strategy": strategy,
              **({"group.instance.id": instance} if instance else {})})
owned = set()
def show():
    out.write("ASSIGN " + ",".join(str(p) for p in sorted(owned)) + "\n")
def on_assign(consumer, partitions):
    global owned
    if strategy == "cooperative-sticky":
        owned |= {tp.partition for tp in partitions}
    else:
        owned = {tp.partition for tp in partitions}
    show()
def on_revoke(consumer, partitions):
    owned.difference_update(tp.partition for tp in partitions)
    show()
c.subscribe(["work"], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
while not stop:
    m = c.poll(0.2)
    if m is None:
        continue
    if m.error():
        out.write(f"ERROR {m.error()}\n")
        continue
    out.write(f"REC {time.time():.6f} {m.partition()} {m.offset()} {m.value().decode()}\n")
    time.sleep(delay)
    try:
        c.commit(message=m, asynchronous=False)
        out.write(f"COMMIT {time.time():.6f} {m.partition()} {m.offset() + 1}\n")
    except KafkaException as e:
        out.write(f"COMMITFAIL {time.time():.6f} {m.partition()} {e}\n")
c.close()
out.write("CLOSED\n")
"#;

/// Produces records `r<start>` .. `r<start+count-1>` with keys spread over the partitions.
const PRODUCE: &str = r#"
import sys
from confluent_kafka import Producer
addr, start, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
p = Producer({"bootstrap.servers": addr, "acks": "all"})
for i in range(start, start + count):
    p.produce("work", key=f"k{i}", value=f"r{i}")
assert p.flush(30) == 0
"#;

fn produce(addr: &str, start: usize, count: usize) {
    let output = python_script(PRODUCE, &[addr, &start.to_string(), &count.to_string()])
        .output()
        .expect("python3");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

struct Worker {
    child: Child,
    out: PathBuf,
}

impl Worker {
    fn start(dir: &Path, addr: &str, name: &str, strategy: &str, delay: f64) -> Worker {
        Worker::start_static(dir, addr, name, strategy, delay, "")
    }

    /// A member with static instance id `instance` (none if empty).
    fn start_static(
        dir: &Path,
        addr: &str,
        name: &str,
        strategy: &str,
        delay: f64,
        instance: &str,
    ) -> Worker {
        let out = dir.join(format!("{name}.txt"));
        let child = python_script(WORKER, &[addr, "workers", name, strategy])
            .arg(&out)
            .arg(delay.to_string())
            .arg(instance)
            .stderr(Stdio::null())
            .spawn()
            .expect("python3");
        Worker { child, out }
    }

    fn lines(&self) -> Vec<String> {
        std::fs::read_to_string(&self.out)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// The partitions it owns now, per its last ASSIGN line.
    fn owned(&self) -> BTreeSet<u32> {
        self.lines()
            .iter()
            .rev()
            .find_map(|l| l.strip_prefix("ASSIGN "))
            .map(|list| list.split(',').filter_map(|p| p.parse().ok()).collect())
            .unwrap_or_default()
    }

    fn terminate(mut self) {
        let pid = self.child.id().to_string();
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill");
        let _ = self.child.wait();
    }

    fn kill(mut self) {
        self.child.kill().expect("kill -9");
        let _ = self.child.wait();
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One processing of a record.
struct Processing {
    at: f64,
    worker: usize,
    value: String,
    committed: bool,
}

/// Every processing of every (partition, offset), from all workers' files.
fn processings(files: &[Vec<String>]) -> BTreeMap<(u32, i64), Vec<Processing>> {
    let mut all: BTreeMap<(u32, i64), Vec<Processing>> = BTreeMap::new();
    for (worker, lines) in files.iter().enumerate() {
        let mut last: Option<(u32, i64)> = None;
        for line in lines {
            let fields: Vec<&str> = line.split(' ').collect();
            match fields[0] {
                "REC" => {
                    let key = (fields[2].parse().unwrap(), fields[3].parse().unwrap());
                    all.entry(key).or_default().push(Processing {
                        at: fields[1].parse().unwrap(),
                        worker,
                        value: fields[4].to_owned(),
                        committed: false,
                    });
                    last = Some(key);
                }
                "COMMIT" => {
                    let key = last.take().expect("a commit follows its record");
                    assert_eq!(fields[3].parse::<i64>().unwrap(), key.1 + 1);
                    if let Some(p) = all.get_mut(&key).and_then(|v| v.last_mut()) {
                        p.committed = true;
                    }
                }
                _ => {}
            }
        }
    }
    all
}

/// Checks that records `r0 .. r<total-1>` were all processed and that no record was processed
/// after a committed processing of it. Returns how many processings were repeats.
fn check(files: &[Vec<String>], total: usize) -> usize {
    let all = processings(files);
    let seen: BTreeSet<&str> = all
        .values()
        .flat_map(|v| v.iter().map(|p| p.value.as_str()))
        .collect();
    let missing: Vec<String> = (0..total)
        .map(|i| format!("r{i}"))
        .filter(|v| !seen.contains(v.as_str()))
        .collect();
    assert!(missing.is_empty(), "lost records: {missing:?}");
    let mut repeats = 0;
    for ((partition, offset), mut runs) in all {
        runs.sort_by(|a, b| a.at.total_cmp(&b.at));
        repeats += runs.len() - 1;
        let first_committed = runs.iter().position(|p| p.committed);
        if let Some(i) = first_committed {
            assert_eq!(
                i,
                runs.len() - 1,
                "{partition}/{offset} was processed again after worker {} committed it",
                runs[i].worker
            );
        }
    }
    repeats
}

/// Three members on six partitions each get two; `leave` takes the third away (killed or
/// closed) while records flow; the other two take over its partitions and everything is
/// processed. Returns the number of repeated processings.
fn three_members_lose_one(strategy: &str, leave: impl FnOnce(Worker)) -> usize {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(
        dir.path(),
        &[
            "--default-partitions",
            "6",
            "--group-initial-rebalance-delay-ms",
            "1000",
        ],
    );
    produce(&daemon.addr, 0, 300);
    let workers: Vec<Worker> = ["a", "b", "c"]
        .iter()
        .map(|name| Worker::start(dir.path(), &daemon.addr, name, strategy, 0.004))
        .collect();
    wait_until(
        "each member owns two partitions",
        Duration::from_secs(60),
        || {
            let owned: Vec<BTreeSet<u32>> = workers.iter().map(Worker::owned).collect();
            let union: BTreeSet<u32> = owned.iter().flatten().copied().collect();
            owned.iter().all(|o| o.len() == 2) && union.len() == 6
        },
    );
    let files = || workers.iter().map(Worker::lines).collect::<Vec<_>>();
    wait_until(
        "the first records are processed",
        Duration::from_secs(60),
        || processings(&files()).len() >= 300,
    );
    produce(&daemon.addr, 300, 600);
    // Let the third member get into the new records, then take it away mid-stream.
    let third_owned = workers[2].owned();
    wait_until("the third member is busy", Duration::from_secs(30), || {
        processings(&files()).len() >= 400
    });
    let mut workers = workers;
    let third = workers.pop().unwrap();
    let third_lines_at = third.out.clone();
    leave(third);
    let third_lines = std::fs::read_to_string(&third_lines_at)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect::<Vec<_>>();
    let all_files = || {
        let mut f: Vec<Vec<String>> = workers.iter().map(Worker::lines).collect();
        f.push(third_lines.clone());
        f
    };
    wait_until("everything is processed", Duration::from_secs(90), || {
        let all = processings(&all_files());
        all.values()
            .flatten()
            .map(|p| &p.value)
            .collect::<BTreeSet<_>>()
            .len()
            >= 900
    });
    let survivors: BTreeSet<u32> = workers.iter().flat_map(Worker::owned).collect();
    assert_eq!(survivors.len(), 6, "the survivors own every partition");
    assert!(
        third_owned.iter().all(|p| survivors.contains(p)),
        "its partitions {third_owned:?} moved to the others"
    );
    let repeats = check(&all_files(), 900);
    for worker in workers {
        worker.terminate();
    }
    repeats
}

#[test]
fn a_killed_member_is_expired_and_the_others_resume_from_its_last_commit() {
    let repeats = three_members_lose_one("range", Worker::kill);
    // Each commit is synchronous, so only a record in flight on each of its two partitions can
    // have been processed without its commit.
    assert!(repeats <= 2, "{repeats} repeats");
}

#[test]
fn a_member_that_closes_hands_over_its_partitions() {
    let repeats = three_members_lose_one("range", Worker::terminate);
    assert!(repeats <= 2, "{repeats} repeats");
}

#[test]
fn cooperative_sticky_members_survive_a_killed_member() {
    let repeats = three_members_lose_one("cooperative-sticky", Worker::kill);
    assert!(repeats <= 2, "{repeats} repeats");
}

#[test]
fn a_static_member_restarted_within_its_session_keeps_its_partitions_without_a_rebalance() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(
        dir.path(),
        &[
            "--default-partitions",
            "4",
            "--group-initial-rebalance-delay-ms",
            "1000",
        ],
    );
    produce(&daemon.addr, 0, 100);
    let start = |name: &str, instance: &str| {
        Worker::start_static(dir.path(), &daemon.addr, name, "range", 0.0, instance)
    };
    let a = start("a", "host-a");
    let b = start("b", "host-b");
    wait_until(
        "each static member owns two partitions",
        Duration::from_secs(60),
        || a.owned().len() == 2 && b.owned().len() == 2,
    );
    wait_until(
        "the first records are processed",
        Duration::from_secs(60),
        || processings(&[a.lines(), b.lines()]).len() >= 100,
    );
    let a_assignments = a.lines().iter().filter(|l| l.starts_with("ASSIGN")).count();
    let b_owned = b.owned();
    let b_lines = b.lines();
    b.kill();
    let b2 = start("b2", "host-b");
    wait_until(
        "the restarted member owns its partitions",
        Duration::from_secs(30),
        || !b2.owned().is_empty(),
    );
    assert_eq!(
        b2.owned(),
        b_owned,
        "the same partitions, not a new assignment"
    );
    produce(&daemon.addr, 100, 100);
    let files = || vec![a.lines(), b_lines.clone(), b2.lines()];
    wait_until("everything is processed", Duration::from_secs(60), || {
        processings(&files()).values().flatten().count() >= 200
    });
    assert_eq!(
        a.lines().iter().filter(|l| l.starts_with("ASSIGN")).count(),
        a_assignments,
        "the other member saw no rebalance"
    );
    check(&files(), 200);
}

/// kafka-python in group mode keeps consuming while logd restarts under it: after the restart
/// its member id is unknown, it rejoins, and resumes from its commits.
const KAFKA_PYTHON_GROUP: &str = r#"
import sys, time
from kafka import KafkaConsumer
addr, out_path, total = sys.argv[1], sys.argv[2], int(sys.argv[3])
out = open(out_path, "a", buffering=1)
c = KafkaConsumer(bootstrap_servers=addr, group_id="py", client_id="py",
                  auto_offset_reset="earliest", enable_auto_commit=False,
                  session_timeout_ms=6000, heartbeat_interval_ms=500,
                  reconnect_backoff_max_ms=500, request_timeout_ms=10000)
# kafka-python 3.0.12 drops a join that a metadata change started (not the broker) when poll()'s
# timeout ends between its JoinGroup and SyncGroup answers: the member then holds nothing and
# never fetches. Knowing the topic's partitions before the first join means no such second join,
# and a long poll timeout keeps any other join inside one poll.
assert c.partitions_for_topic("steady") == {0, 1}
c.subscribe(["steady"])
seen = set()
deadline = time.time() + 120
while len(seen) < total and time.time() < deadline:
    for tp, records in c.poll(timeout_ms=5000).items():
        for m in records:
            out.write(f"REC {time.time():.6f} {m.partition} {m.offset} {m.value.decode()}\n")
            seen.add(m.value)
            try:
                c.commit()
                out.write(f"COMMIT {time.time():.6f} {m.partition} {m.offset + 1}\n")
            except Exception as e:
                out.write(f"COMMITFAIL {time.time():.6f} {m.partition} {e!r}\n")
c.close()
"#;

#[test]
fn kafka_python_group_consumer_resumes_from_its_commits_across_a_logd_restart() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let daemon = Daemon::start(
        &data,
        &[
            "--default-partitions",
            "2",
            "--group-initial-rebalance-delay-ms",
            "0",
        ],
    );
    let addr = daemon.addr.clone();
    python(
        r#"
import sys
from kafka import KafkaProducer
p = KafkaProducer(bootstrap_servers=sys.argv[1])
for i in range(100):
    p.send("steady", key=f"k{i}".encode(), value=f"r{i}".encode())
p.flush()
"#,
        &addr,
    );
    let out = dir.path().join("py.txt");
    let mut consumer = python_script(KAFKA_PYTHON_GROUP, &[&addr])
        .arg(&out)
        .arg("200")
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3");
    let lines = || -> Vec<String> {
        std::fs::read_to_string(&out)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    };
    wait_until(
        "the first records are committed",
        Duration::from_secs(60),
        || lines().iter().filter(|l| l.starts_with("COMMIT ")).count() >= 100,
    );
    assert_eq!(daemon.terminate().code(), Some(0));
    let daemon = Daemon::start_on(
        &data,
        &addr,
        &[
            "--default-partitions",
            "2",
            "--group-initial-rebalance-delay-ms",
            "0",
        ],
    );
    python(
        r#"
import sys
from kafka import KafkaProducer
p = KafkaProducer(bootstrap_servers=sys.argv[1])
for i in range(100, 200):
    p.send("steady", key=f"k{i}".encode(), value=f"r{i}".encode())
p.flush()
"#,
        &daemon.addr,
    );
    let status = consumer.wait().expect("wait");
    let mut stderr = String::new();
    std::io::Read::read_to_string(consumer.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "{stderr}");
    let repeats = check(&[lines()], 200);
    assert_eq!(repeats, 0, "every record was committed before the restart");
}

/// librdkafka's balanced consumer commits and leaves; logd restarts between two of them, and
/// the second reads only what came after the first one's commits.
#[test]
fn librdkafka_balanced_consumer_resumes_from_its_commits_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let extra = [
        "--default-partitions",
        "3",
        "--group-initial-rebalance-delay-ms",
        "0",
    ];
    let produce = |addr: &str, range: std::ops::Range<usize>| {
        let lines: Vec<String> = range.map(|i| format!("k{i}:r{i}")).collect();
        librdkafka::produce(addr, "events", "none", &lines);
    };
    let consume = |addr: &str| -> Vec<String> {
        librdkafka::consume_in_group(addr, "kc", "events")
            .into_iter()
            .map(|r| r.value)
            .collect()
    };
    let daemon = Daemon::start(&data, &extra);
    produce(&daemon.addr, 0..90);
    let first = consume(&daemon.addr);
    assert_eq!(first.len(), 90);
    assert_eq!(daemon.terminate().code(), Some(0));
    let daemon = Daemon::start(&data, &extra);
    produce(&daemon.addr, 90..120);
    let second: BTreeSet<String> = consume(&daemon.addr).into_iter().collect();
    let expected: BTreeSet<String> = (90..120).map(|i| format!("r{i}")).collect();
    assert_eq!(second, expected, "only what came after the commit");
}
