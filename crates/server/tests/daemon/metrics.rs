//! `/metrics` scraped and parsed while a group's position moves: consumer lag and the age of
//! the oldest unconsumed record follow the committed offset; traffic counters, fsync timings,
//! connections and dead-letter depth report what happened; `/health` answers.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use super::{Daemon, logd, python, wait_until};

/// GETs `path`; (status line, body).
/// One request on a connection of its own: the status line and the body.
pub(super) fn request(addr: &str, method: &str, path: &str) -> (String, String) {
    let mut stream = TcpStream::connect(addr).expect("connect to the HTTP port");
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("HTTP response");
    (head.lines().next().unwrap().to_owned(), body.to_owned())
}

pub(super) fn get(addr: &str, path: &str) -> (String, String) {
    request(addr, "GET", path)
}

/// Every sample: `name{labels}` -> value.
pub(super) fn scrape(addr: &str) -> BTreeMap<String, f64> {
    let (status, body) = get(addr, "/metrics");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(
        body.ends_with("# EOF\n"),
        "OpenMetrics text ends with # EOF"
    );
    body.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let (name, value) = l.rsplit_once(' ').unwrap();
            (name.to_owned(), value.parse().unwrap())
        })
        .collect()
}

fn reset(addr: &str, group: &str, topic: &str, to: &str) {
    let (ok, _, stderr) = logd(
        &[
            "groups",
            "--bootstrap",
            addr,
            "reset-offsets",
            group,
            "--topic",
            topic,
            "--to-offset",
            to,
            "--execute",
        ],
        "",
    );
    assert!(ok, "{stderr}");
}

#[test]
fn lag_and_oldest_unconsumed_age_follow_the_committed_offset() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &["--metrics-listen", "127.0.0.1:0"]);
    let metrics = daemon.metrics.clone().unwrap();
    // Record i of `jobs` is (100 - i) seconds old; three dead letters.
    python(
        r#"
import sys, time
from kafka import KafkaProducer
p = KafkaProducer(bootstrap_servers=sys.argv[1])
now = int(time.time() * 1000)
for i in range(10):
    p.send("jobs", value=f"job-{i}".encode(), timestamp_ms=now - (100 - i) * 1000)
for i in range(3):
    p.send("jobs.dlq", value=f"dead-{i}".encode(), timestamp_ms=now - 50_000)
p.flush()
"#,
        &daemon.addr,
    );
    let lag = r#"logd_consumer_lag{group="g",topic="jobs",partition="0"}"#;
    let age = r#"logd_consumer_oldest_unconsumed_age_seconds{group="g"}"#;

    reset(&daemon.addr, "g", "jobs", "0");
    let at_start = scrape(&metrics);
    assert_eq!(at_start[lag], 10.0);
    assert!((100.0..130.0).contains(&at_start[age]), "{}", at_start[age]);

    reset(&daemon.addr, "g", "jobs", "5");
    let halfway = scrape(&metrics);
    assert_eq!(halfway[lag], 5.0);
    let moved = at_start[age] - halfway[age];
    assert!(
        (3.0..6.0).contains(&moved),
        "the oldest unconsumed record is 5 s newer: {moved}"
    );

    reset(&daemon.addr, "g", "jobs", "10");
    let caught_up = scrape(&metrics);
    assert_eq!(caught_up[lag], 0.0);
    assert_eq!(caught_up[age], 0.0);

    assert_eq!(
        caught_up[r#"logd_produced_records_total{topic="jobs"}"#],
        10.0
    );
    assert!(caught_up[r#"logd_produced_bytes_total{topic="jobs"}"#] > 0.0);
    assert!(
        caught_up["logd_fsync_latency_seconds_count"] > 0.0,
        "fsync = always"
    );

    // Dead-letter depth falls as letters are replayed, in any order, and as the replay group
    // commits past them.
    let depth = r#"logd_dead_letter_depth{topic="jobs.dlq"}"#;
    let dead_age = r#"logd_dead_letter_oldest_age_seconds{topic="jobs.dlq"}"#;
    assert_eq!(caught_up[depth], 3.0);
    assert!(caught_up[dead_age] >= 50.0);
    let (ok, _, stderr) = logd(
        &["topics", "--bootstrap", &daemon.addr, "create", "again"],
        "",
    );
    assert!(ok, "{stderr}");
    let (ok, out, stderr) = logd(
        &[
            "dlq",
            "--bootstrap",
            &daemon.addr,
            "replay",
            "jobs.dlq",
            "--to",
            "again",
            "--letter",
            "0/2",
        ],
        "",
    );
    assert!(ok && out.contains("replayed 1 of 3"), "{out}{stderr}");
    assert_eq!(scrape(&metrics)[depth], 2.0, "the two letters before it");
    reset(&daemon.addr, "logd-dlq-replay", "jobs.dlq", "1");
    assert_eq!(scrape(&metrics)[depth], 1.0);

    // Reading counts records out; an open connection is counted.
    let (ok, out, stderr) = logd(
        &[
            "consume",
            "--bootstrap",
            &daemon.addr,
            "--topic",
            "jobs",
            "-o",
            "beginning",
        ],
        "",
    );
    assert!(ok, "{stderr}");
    assert_eq!(out.lines().count(), 10);
    let _client = TcpStream::connect(&daemon.addr).unwrap();
    // `connect` returns once the kernel has the connection; the daemon counts it a moment
    // later, when its accept loop takes it.
    wait_until(
        "the open connection is counted",
        Duration::from_secs(10),
        || scrape(&metrics)["logd_active_connections"] >= 1.0,
    );
    let after = scrape(&metrics);
    assert_eq!(after[r#"logd_fetched_records_total{topic="jobs"}"#], 10.0);
    assert!(after["logd_active_connections"] >= 1.0);
    assert!(after[r#"logd_request_latency_seconds_count{api="Fetch"}"#] >= 1.0);

    assert_eq!(
        get(&metrics, "/health"),
        ("HTTP/1.1 200 OK".into(), "ok\n".into())
    );
    assert_eq!(get(&metrics, "/nope").0, "HTTP/1.1 404 Not Found");
}
