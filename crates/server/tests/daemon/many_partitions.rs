//! A topic of 10,000 partitions through the daemon: `logd topics create`, `describe` and
//! `list`, `logd groups reset-offsets` and `describe`, `/metrics` with a lag series per
//! partition, and a librdkafka group consumer that is assigned all of them and commits, all
//! answer (each step's time is printed; `docs/benchmarks.md` has the release figures).

use std::time::Instant;

use super::metrics::scrape;
use super::{Daemon, logd, python};

const PARTITIONS: usize = 10_000;
const RECORDS: usize = 20_000;

/// Runs `logd ARGS` against `addr`; its stdout, after printing how long it took.
fn timed_logd(addr: &str, args: &[&str], stdin: &str) -> String {
    let started = Instant::now();
    let mut all = args.to_vec();
    all.extend(["--bootstrap", addr]);
    let (ok, out, stderr) = logd(&all, stdin);
    assert!(ok, "logd {args:?}: {stderr}");
    eprintln!("logd {} {}: {:?}", args[0], args[1], started.elapsed());
    out
}

/// Total lag in `logd groups describe` output.
fn described_lag(described: &str) -> (usize, i64) {
    let rows: Vec<i64> = described
        .lines()
        .skip(2)
        .map(|row| row.split_whitespace().nth(4).unwrap().parse().unwrap())
        .collect();
    (rows.len(), rows.iter().sum())
}

/// `(series, total)` of the group's `logd_consumer_lag` samples for topic `wide`.
fn scraped_lag(metrics: &str, group: &str) -> (usize, f64) {
    let started = Instant::now();
    let prefix = format!("logd_consumer_lag{{group=\"{group}\",topic=\"wide\",");
    let lags: Vec<f64> = scrape(metrics)
        .into_iter()
        .filter(|(name, _)| name.starts_with(&prefix))
        .map(|(_, lag)| lag)
        .collect();
    eprintln!("scrape /metrics: {:?}", started.elapsed());
    (lags.len(), lags.iter().sum())
}

#[test]
fn ten_thousand_partitions_answer_the_tools_metrics_and_a_group_consumer() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &["--metrics-listen", "127.0.0.1:0"]);
    let (addr, metrics) = (&daemon.addr, daemon.metrics.clone().unwrap());
    let count = PARTITIONS.to_string();
    timed_logd(
        addr,
        &["topics", "create", "wide", "--partitions", &count],
        "",
    );
    let lines: String = (0..RECORDS)
        .map(|i| format!("key-{i}:value-{i}\n"))
        .collect();
    let out = timed_logd(addr, &["produce", "--topic", "wide", "-k", ":"], &lines);
    assert!(
        out.contains(&format!("{RECORDS} records acknowledged")),
        "{out}"
    );

    let out = timed_logd(addr, &["topics", "list"], "");
    assert_eq!(out.lines().collect::<Vec<_>>(), ["wide"]);
    let out = timed_logd(addr, &["topics", "describe", "wide"], "");
    let ends: Vec<i64> = out
        .lines()
        .skip(2)
        .take_while(|row| !row.starts_with("active"))
        .map(|row| row.split('\t').nth(2).unwrap().parse().unwrap())
        .collect();
    assert_eq!(ends.len(), PARTITIONS);
    assert_eq!(ends.iter().sum::<i64>(), RECORDS as i64);
    assert!(
        ends.iter().filter(|&&end| end > 0).count() > PARTITIONS * 8 / 10,
        "keys spread over the partitions"
    );

    let args = [
        "groups",
        "reset-offsets",
        "g",
        "--topic",
        "wide",
        "--to-earliest",
        "--execute",
    ];
    let out = timed_logd(addr, &args, "");
    assert!(
        out.contains(&format!("committed {PARTITIONS} offset(s)")),
        "{out}"
    );
    let out = timed_logd(addr, &["groups", "describe", "g"], "");
    assert_eq!(described_lag(&out), (PARTITIONS, RECORDS as i64));
    assert_eq!(scraped_lag(&metrics, "g"), (PARTITIONS, RECORDS as f64));

    // A librdkafka group member is assigned every partition, reads every record and commits.
    let started = Instant::now();
    let out = python(
        r#"
import sys, time
from confluent_kafka import Consumer
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "g",
              "auto.offset.reset": "earliest", "enable.auto.commit": False})
c.subscribe(["wide"])
read, deadline = 0, time.time() + 120
while read < 20000 and time.time() < deadline:
    for m in c.consume(1000, timeout=1):
        if m.error():
            raise Exception(m.error())
        read += 1
c.commit(asynchronous=False)
print(read, len(c.assignment()))
c.close()
"#,
        addr,
    );
    eprintln!("group consumer: {:?}", started.elapsed());
    assert_eq!(out.trim(), format!("{RECORDS} {PARTITIONS}"));
    let out = timed_logd(addr, &["groups", "describe", "g"], "");
    assert_eq!(described_lag(&out), (PARTITIONS, 0));
    assert_eq!(scraped_lag(&metrics, "g"), (PARTITIONS, 0.0));
}
