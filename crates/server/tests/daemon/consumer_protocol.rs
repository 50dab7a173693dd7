//! KIP-848's consumer group protocol with confluent-kafka (`group.protocol=consumer`) against a
//! real logd: members as processes on a six-partition topic, one added and one SIGKILLed while
//! records flow. Every record is consumed, and no partition is ever owned by two members at
//! once (each member's ownership runs from its assign callback to its revoke callback, or to
//! its death; the broker gives a partition to its next owner only after the previous one
//! reported it revoked, or its session ran out).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::{Daemon, python_script};

/// A member of group `k848` on `jobs`: prints `assign NAME TIME P,P`, `revoke ...`,
/// `lost ...` from its callbacks and `rec NAME TIME PARTITION OFFSET` per record (committed
/// before the next).
const MEMBER: &str = r#"
import sys, time
from confluent_kafka import Consumer
b, name = sys.argv[1], sys.argv[2]
def event(kind, parts):
    print(kind, name, repr(time.time()), ",".join(str(p.partition) for p in parts), flush=True)
c = Consumer({"bootstrap.servers": b, "group.id": "k848", "group.protocol": "consumer",
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

/// Starts member `name`; its lines go to `events`.
fn member(addr: &str, name: &str, events: &Arc<Mutex<Vec<String>>>) -> Child {
    let mut child = python_script(MEMBER, &[addr, name])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
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
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &[]);
    let addr = daemon.addr.clone();
    let create = [
        "topics",
        "create",
        "jobs",
        "--partitions",
        "6",
        "--bootstrap",
        &addr,
    ];
    let (ok, _, err) = super::logd(&create, "");
    assert!(ok, "{err}");
    let events = Arc::new(Mutex::new(Vec::new()));
    let mut a = member(&addr, "a", &events);
    let mut b = member(&addr, "b", &events);
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
    let mut c = member(&addr, "c", &events);
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
