//! KIP-848's consumer group protocol with confluent-kafka (`group.protocol=consumer`) against a
//! real logd: members as processes on a six-partition topic, one added and one SIGKILLed while
//! records flow. Every record is consumed, and no partition is ever owned by two members at
//! once (each member's ownership runs from its assign callback to its revoke callback, or to
//! its death; the broker gives a partition to its next owner only after the previous one
//! reported it revoked, or its session ran out). Members go on through a kill -9 of logd with
//! their ids, epochs and partitions. Kafka's `kafka-consumer-groups.sh`, `logd groups
//! describe`, the console's API and `/metrics` describe the group.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::{Daemon, python_script};

/// A member of group argv[3] on `jobs`: prints `assign NAME TIME P,P`, `revoke ...`,
/// `lost ...` from its callbacks and `rec NAME TIME PARTITION OFFSET` per record (committed
/// before the next).
const MEMBER: &str = r#"
import sys, time
from confluent_kafka import Consumer
b, name, group = sys.argv[1], sys.argv[2], sys.argv[3]
def event(kind, parts):
    print(kind, name, repr(time.time()), ",".join(str(p.partition) for p in parts), flush=True)
c = Consumer({"bootstrap.servers": b, "group.id": group, "group.protocol": "consumer",
              "auto.offset.reset": "earliest", "enable.auto.commit": False})
c.subscribe(["jobs"], on_assign=lambda c, ps: event("assign", ps),
            on_revoke=lambda c, ps: event("revoke", ps), on_lost=lambda c, ps: event("lost", ps))
while True:
    m = c.poll(0.2)
    if m is None or m.error():
        continue
    print("rec", name, repr(time.time()), m.partition(), m.offset(), flush=True)
    c.commit(message=m, asynchronous=False)
"#;

/// Produces records `FROM..TO` to `jobs`, keyed by number.
const PRODUCE: &str = r#"
import sys
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1]})
for i in range(int(sys.argv[2]), int(sys.argv[3])):
    p.produce("jobs", key=str(i), value=str(i))
assert p.flush(30) == 0
"#;

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// Creates `topic` with `partitions` through `logd topics create`.
fn create_topic(addr: &str, topic: &str, partitions: u32) {
    let partitions = partitions.to_string();
    let args = [
        "topics",
        "create",
        topic,
        "--partitions",
        &partitions,
        "--bootstrap",
        addr,
    ];
    let (ok, _, err) = super::logd(&args, "");
    assert!(ok, "{err}");
}

/// Starts confluent-kafka member `name` of group `k848`; its lines go to `events`.
fn member(addr: &str, name: &str, events: &Arc<Mutex<Vec<String>>>) -> Child {
    spawn_into(MEMBER, &[addr, name, "k848"], events)
}

/// Starts a member of group `group`, confluent-kafka's or Java's.
type Spawn = fn(&str, &str, &str, &Arc<Mutex<Vec<String>>>) -> Child;

fn python_member(addr: &str, name: &str, group: &str, events: &Arc<Mutex<Vec<String>>>) -> Child {
    spawn_into(MEMBER, &[addr, name, group], events)
}

fn java_member(addr: &str, name: &str, group: &str, events: &Arc<Mutex<Vec<String>>>) -> Child {
    let mut command = super::java_clients::java("GroupMember", &[addr, name, group]);
    read_lines(command.stdout(Stdio::piped()).spawn().unwrap(), events)
}

/// Runs `script` with `args`; its stdout lines go to `events` as they come.
fn spawn_into(script: &str, args: &[&str], events: &Arc<Mutex<Vec<String>>>) -> Child {
    let child = python_script(script, args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    read_lines(child, events)
}

/// `child`'s stdout lines go to `events` as they come.
fn read_lines(mut child: Child, events: &Arc<Mutex<Vec<String>>>) -> Child {
    let lines = BufReader::new(child.stdout.take().unwrap());
    let events = events.clone();
    std::thread::spawn(move || {
        for line in lines.lines().map_while(Result::ok) {
            events.lock().unwrap().push(line);
        }
    });
    child
}

fn produce(addr: &str, from: u32, to: u32) {
    let out = python_script(PRODUCE, &[addr, &from.to_string(), &to.to_string()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// What each member owns now, from its callbacks.
fn owned(events: &[String]) -> BTreeMap<String, BTreeSet<u32>> {
    let mut owned: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
    for line in events {
        let f: Vec<&str> = line.split(' ').collect();
        let parts = || {
            f.get(3)
                .into_iter()
                .flat_map(|p| p.split(','))
                .filter_map(|p| p.parse::<u32>().ok())
        };
        match f[0] {
            "assign" => owned.entry(f[1].to_owned()).or_default().extend(parts()),
            "revoke" | "lost" => {
                let mine = owned.entry(f[1].to_owned()).or_default();
                for p in parts() {
                    mine.remove(&p);
                }
            }
            _ => {}
        }
    }
    owned
}

#[test]
fn consumer_protocol_members_share_partitions_one_owner_at_a_time_through_a_kill() {
    members_share_partitions_through_a_kill(python_member, "k848");
}

#[test]
fn java_consumer_protocol_members_share_partitions_one_owner_at_a_time_through_a_kill() {
    members_share_partitions_through_a_kill(java_member, "java848");
}

/// Three members of `group` (two, then a third) on six partitions, one killed while records
/// flow: every record consumed, no partition owned by two at once, the group described.
fn members_share_partitions_through_a_kill(spawn: Spawn, group: &str) {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &["--metrics-listen", "127.0.0.1:0"]);
    let addr = daemon.addr.clone();
    create_topic(&addr, "jobs", 6);
    let events = Arc::new(Mutex::new(Vec::new()));
    let mut a = spawn(&addr, "a", group, &events);
    let mut b = spawn(&addr, "b", group, &events);
    wait_until(
        "a and b share the partitions",
        Duration::from_secs(60),
        || {
            let owned = owned(&events.lock().unwrap());
            ["a", "b"]
                .iter()
                .all(|m| owned.get(*m).is_some_and(|o| !o.is_empty()))
        },
    );
    produce(&addr, 0, 300);
    let mut c = spawn(&addr, "c", group, &events);
    wait_until("c owns partitions too", Duration::from_secs(60), || {
        owned(&events.lock().unwrap())
            .get("c")
            .is_some_and(|o| !o.is_empty())
    });
    b.kill().unwrap();
    b.wait().unwrap();
    let killed_at = now();
    produce(&addr, 300, 600);
    // b's partitions move once its session (45 s) is over.
    let consumed = |events: &[String]| -> BTreeSet<(u32, i64)> {
        events
            .iter()
            .filter(|l| l.starts_with("rec "))
            .map(|l| {
                let f: Vec<&str> = l.split(' ').collect();
                (f[3].parse().unwrap(), f[4].parse().unwrap())
            })
            .collect()
    };
    wait_until(
        "all 600 records are consumed",
        Duration::from_secs(120),
        || consumed(&events.lock().unwrap()).len() == 600,
    );
    // Kafka's own tool describes the group (ConsumerGroupDescribe): six partitions, each with
    // its owner, nothing left to read.
    let described = super::java_clients::java(
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
        &["--bootstrap-server", &addr, "--describe", "--group", group],
    )
    .output()
    .unwrap();
    let printed = String::from_utf8_lossy(&described.stdout);
    let rows: Vec<Vec<&str>> = printed
        .lines()
        .map(|l| l.split_whitespace().collect())
        .filter(|f: &Vec<&str>| f.first() == Some(&group) && f.get(1) == Some(&"jobs"))
        .collect();
    assert_eq!(
        rows.len(),
        6,
        "{printed}{}",
        String::from_utf8_lossy(&described.stderr)
    );
    assert!(
        rows.iter().all(|f| f[5] == "0" && f[6] != "-"),
        "every partition owned, none lagging: {printed}"
    );
    // The console's API and /metrics show the group: its two members, what each holds, and
    // its lag per partition.
    let http = daemon.metrics.as_deref().unwrap();
    let (_, body) = super::metrics::get(http, &format!("/api/v1/groups/{group}"));
    let described: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(described["state"], "Stable", "{described}");
    let held: usize = described["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["assignment"].as_array().unwrap().len())
        .sum();
    assert_eq!(
        (described["members"].as_array().unwrap().len(), held),
        (2, 6),
        "{described}"
    );
    let samples = super::metrics::scrape(http);
    for p in 0..6 {
        let lag = format!(r#"logd_consumer_lag{{group="{group}",topic="jobs",partition="{p}"}}"#);
        assert_eq!(samples.get(&lag), Some(&0.0), "{lag}");
    }
    for child in [&mut a, &mut c] {
        child.kill().unwrap();
        child.wait().unwrap();
    }

    // Ownership intervals per partition: from an assign to the member's revoke (or its death,
    // or the end of the run), never two at once.
    let events = events.lock().unwrap().clone();
    let end = now();
    let mut open: BTreeMap<(String, u32), f64> = BTreeMap::new();
    let mut intervals: BTreeMap<u32, Vec<(f64, f64, String)>> = BTreeMap::new();
    for line in &events {
        let f: Vec<&str> = line.split(' ').collect();
        if !matches!(f[0], "assign" | "revoke" | "lost") {
            continue;
        }
        let at: f64 = f[2].parse().unwrap();
        for p in f.get(3).into_iter().flat_map(|p| p.split(',')) {
            let Ok(p) = p.parse::<u32>() else { continue };
            let key = (f[1].to_owned(), p);
            match f[0] {
                "assign" => {
                    open.insert(key, at);
                }
                _ => {
                    if let Some(from) = open.remove(&key) {
                        intervals.entry(p).or_default().push((from, at, key.0));
                    }
                }
            }
        }
    }
    for ((member, p), from) in open {
        let until = if member == "b" { killed_at } else { end };
        intervals.entry(p).or_default().push((from, until, member));
    }
    for (p, mut spans) in intervals {
        spans.sort_by(|x, y| x.0.total_cmp(&y.0));
        for pair in spans.windows(2) {
            assert!(
                pair[0].1 <= pair[1].0,
                "partition {p} owned by {} until {} and by {} from {}",
                pair[0].2,
                pair[0].1,
                pair[1].2,
                pair[1].0
            );
        }
    }
    let members: BTreeSet<&str> = events
        .iter()
        .filter(|l| l.starts_with("rec "))
        .map(|l| l.split(' ').nth(1).unwrap())
        .collect();
    assert!(
        members.contains("a") && members.contains("c"),
        "{members:?}"
    );
}

/// The member ids of group `k848` as the console's API lists them.
fn member_ids(http: &str) -> BTreeSet<String> {
    let (_, body) = super::metrics::get(http, "/api/v1/groups/k848");
    let group: serde_json::Value = serde_json::from_str(&body).unwrap();
    group["members"]
        .as_array()
        .map(|members| {
            members
                .iter()
                .map(|m| m["member_id"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn records(events: &[String]) -> usize {
    events
        .iter()
        .filter(|l| l.starts_with("rec "))
        .map(|l| l.split(' ').skip(3).collect::<Vec<_>>())
        .collect::<BTreeSet<_>>()
        .len()
}

#[test]
fn consumer_protocol_members_keep_their_partitions_through_a_kill_9_of_logd() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--fsync", "always", "--metrics-listen", "127.0.0.1:0"];
    let daemon = Daemon::start(dir.path(), &args);
    let addr = daemon.addr.clone();
    create_topic(&addr, "jobs", 6);
    let events = Arc::new(Mutex::new(Vec::new()));
    let mut members = [member(&addr, "a", &events), member(&addr, "b", &events)];
    wait_until("a and b own three each", Duration::from_secs(60), || {
        let owned = owned(&events.lock().unwrap());
        ["a", "b"]
            .iter()
            .all(|m| owned.get(*m).is_some_and(|o| o.len() == 3))
    });
    produce(&addr, 0, 200);
    wait_until("200 records are consumed", Duration::from_secs(60), || {
        records(&events.lock().unwrap()) == 200
    });
    let before = member_ids(daemon.metrics.as_deref().unwrap());
    assert_eq!(before.len(), 2);
    let mark = events.lock().unwrap().len();

    daemon.kill();
    let daemon = Daemon::start_on(dir.path(), &addr, &args);
    produce(&addr, 200, 400);
    wait_until(
        "400 records are consumed after the restart",
        Duration::from_secs(60),
        || records(&events.lock().unwrap()) == 400,
    );
    // The restarted logd knew the members and their epochs: they went on heartbeating with
    // them, so nobody lost, revoked or was given a partition, and the ids are the same.
    let after: Vec<String> = events.lock().unwrap()[mark..]
        .iter()
        .filter(|l| !l.starts_with("rec "))
        .cloned()
        .collect();
    assert!(after.is_empty(), "the group rebalanced: {after:?}");
    assert_eq!(member_ids(daemon.metrics.as_deref().unwrap()), before);
    // `logd groups describe` asks ConsumerGroupDescribe: both members, each partition with
    // its owner, nothing left to read.
    let (ok, described, err) =
        super::logd(&["groups", "--bootstrap", &addr, "describe", "k848"], "");
    assert!(ok, "{err}");
    assert!(
        described.starts_with("group k848: state Stable, protocol consumer (assignor uniform)")
            && described.contains("2 member(s)"),
        "{described}"
    );
    let rows: Vec<Vec<&str>> = described
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|f| f.first() == Some(&"jobs"))
        .collect();
    assert_eq!(rows.len(), 6, "{described}");
    for row in rows {
        assert!(row[4] == "0" && before.contains(row[5]), "{described}");
    }
    for child in &mut members {
        child.kill().unwrap();
        child.wait().unwrap();
    }
}

/// A member of group `static848` subscribed to the pattern `^fresh-.*` with static instance id
/// argv[2]: prints `assign`/`revoke` lines and `rec TOPIC VALUE`; once the file argv[3] exists
/// (or after 180 s, so that a failed test leaves no process behind) prints `holding` with its
/// assignment and closes (a static member's close leaves for now, -2). A file and not a timer:
/// under load the joins alone can outlast any timer short enough for the test.
const PATTERN_MEMBER: &str = r#"
import os, sys, time
from confluent_kafka import Consumer
b, instance, stop = sys.argv[1], sys.argv[2], sys.argv[3]
def event(kind, parts):
    print(kind, ",".join(f"{p.topic}-{p.partition}" for p in parts), flush=True)
c = Consumer({"bootstrap.servers": b, "group.id": "static848", "group.protocol": "consumer",
              "group.instance.id": instance, "auto.offset.reset": "earliest",
              "topic.metadata.refresh.interval.ms": 1000})
c.subscribe(["^fresh-.*"], on_assign=lambda c, ps: event("assign", ps),
            on_revoke=lambda c, ps: event("revoke", ps))
end = time.time() + 180
while time.time() < end and not os.path.exists(stop):
    m = c.poll(0.2)
    if m is not None and not m.error():
        print("rec", m.topic(), m.value().decode(), flush=True)
print("holding", ",".join(f"{p.topic}-{p.partition}" for p in c.assignment()), flush=True)
c.close()
print("closed", flush=True)
"#;

#[test]
fn a_pattern_subscription_picks_up_a_new_topic_and_a_static_member_comes_back_to_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &[]);
    let addr = daemon.addr.clone();
    let create = |topic: &str| create_topic(&addr, topic, 2);
    create("fresh-a");
    create("stale-b");
    let stop = |instance: &str| dir.path().join(format!("{instance}.stop"));
    let start = |instance: &str, stop: &Path| {
        let events = Arc::new(Mutex::new(Vec::new()));
        let child = spawn_into(
            PATTERN_MEMBER,
            &[&addr, instance, stop.to_str().unwrap()],
            &events,
        );
        (child, events)
    };
    let (mut one, one_events) = start("one", &stop("one"));
    let (mut two, two_events) = start("two", &stop("two"));
    let held = |events: &Arc<Mutex<Vec<String>>>| -> BTreeSet<String> {
        let mut held = BTreeSet::new();
        for line in events.lock().unwrap().iter() {
            let (kind, parts) = line.split_once(' ').unwrap_or((line, ""));
            let parts = parts
                .split(',')
                .filter(|p| !p.is_empty())
                .map(str::to_owned);
            match kind {
                "assign" => held.extend(parts),
                "revoke" => {
                    for p in parts {
                        held.remove(&p);
                    }
                }
                _ => {}
            }
        }
        held
    };
    wait_until(
        "both members hold fresh-a partitions",
        Duration::from_secs(60),
        || held(&one_events).len() == 1 && held(&two_events).len() == 1,
    );
    let twos = held(&two_events);
    // A topic created now matches the pattern: it is assigned without anyone resubscribing;
    // stale-b never is.
    create("fresh-c");
    produce_to(&addr, "fresh-c", "new-topic-record");
    wait_until("fresh-c's record is read", Duration::from_secs(60), || {
        [&one_events, &two_events].iter().any(|e| {
            e.lock()
                .unwrap()
                .iter()
                .any(|l| l == "rec fresh-c new-topic-record")
        })
    });
    // The uniform assignor settles at two partitions each. Until then two may still hold one
    // that it is giving up, and which it rightly does not get back.
    wait_until(
        "the assignment over both topics settles",
        Duration::from_secs(60),
        || {
            let (one, two) = (held(&one_events), held(&two_events));
            one.len() == 2 && two.len() == 2 && one.is_disjoint(&two)
        },
    );
    // Two closes (away, static) and comes back within its session: it gets its own partitions
    // back, and one never gives up any of its own meanwhile.
    std::fs::write(stop("two"), "").unwrap();
    two.wait().unwrap();
    let ones = held(&one_events);
    let twos_all: BTreeSet<String> = two_events
        .lock()
        .unwrap()
        .iter()
        .find_map(|l| l.strip_prefix("holding "))
        .map(|held| {
            held.split(',')
                .filter(|p| !p.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .expect("two said what it held");
    assert!(twos_all.is_superset(&twos), "{twos_all:?} {twos:?}");
    let (mut again, again_events) = start("two", &stop("again"));
    let deadline = Instant::now() + Duration::from_secs(60);
    while held(&again_events) != twos_all {
        assert!(
            Instant::now() < deadline,
            "two is not back with {twos_all:?}: two again {:?}, two before {:?}, one {:?}",
            again_events.lock().unwrap(),
            two_events.lock().unwrap(),
            one_events.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(held(&one_events), ones, "one kept its own throughout");
    let all: Vec<String> = one_events.lock().unwrap().clone();
    assert!(
        !all.iter()
            .any(|l| l.starts_with("revoke") && l.contains("stale-b"))
            && !all.iter().any(|l| l.contains("stale-b")),
        "{all:?}"
    );
    for child in [&mut one, &mut again] {
        child.kill().unwrap();
        child.wait().unwrap();
    }
}

/// Produces one record with `value` to `topic`.
fn produce_to(addr: &str, topic: &str, value: &str) {
    let script = r#"
import sys
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1]})
p.produce(sys.argv[2], value=sys.argv[3])
assert p.flush(30) == 0
"#;
    let out = python_script(script, &[addr, topic, value])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Consumes `moving` in group `moving` with `group.protocol` argv[2] until argv[3] records came
/// (or 30 s), commits, closes; prints the values read.
const MOVER: &str = r#"
import sys, time
from confluent_kafka import Consumer
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "moving",
              "group.protocol": sys.argv[2], "auto.offset.reset": "earliest",
              "enable.auto.commit": False})
c.subscribe(["moving"])
got = []
end = time.time() + 30
while len(got) < int(sys.argv[3]) and time.time() < end:
    m = c.poll(0.2)
    if m is not None and not m.error():
        got.append(m.value().decode())
c.commit(asynchronous=False)
c.close()
print(" ".join(got))
"#;

#[test]
fn a_classic_group_moves_to_the_consumer_protocol_and_back_with_its_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &[]);
    let addr = daemon.addr.clone();
    create_topic(&addr, "moving", 3);
    let read = |protocol: &str, count: usize| -> BTreeSet<String> {
        let out = python_script(MOVER, &[&addr, protocol, &count.to_string()])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    };
    let values = |range: std::ops::Range<u32>| -> BTreeSet<String> {
        range.map(|i| i.to_string()).collect()
    };
    for (from, to, protocol) in [
        (0, 30, "classic"),
        (30, 60, "consumer"),
        (60, 90, "classic"),
    ] {
        for i in from..to {
            produce_to(&addr, "moving", &i.to_string());
        }
        assert_eq!(
            read(protocol, (to - from) as usize),
            values(from..to),
            "{protocol} members resume where the group's last commit left it"
        );
    }
}
