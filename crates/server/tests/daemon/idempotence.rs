//! Idempotent producers end to end: real clients produce tens of thousands of records to a
//! real logd through [`ChaosProxy`], which swallows Produce responses after the broker stored
//! the batch and cuts the connection, so the clients retry. With idempotence every partition
//! holds each record once, in order; the control run without it shows the duplicates the proxy
//! forces. Also across a SIGKILL of logd mid-run, and with the system's old kcat.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::process::Stdio;

use super::librdkafka::{self, Offset};
use super::metrics::scrape;
use super::proxy::{Chaos, ChaosProxy};
use super::{Daemon, kcat, python_script, system_kcat};

const RECORDS: usize = 20_000;

/// Produces argv[3] records `0..n` (keys spread over the partitions) with confluent-kafka
/// through argv[1], idempotent if argv[4] is 1; prints "progress" every 2,000 deliveries and,
/// at the end, how many deliveries failed.
const CONFLUENT_PRODUCER: &str = r#"
import sys
from confluent_kafka import Producer
addr, topic, n, idempotent = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
conf = {"bootstrap.servers": addr, "acks": "all", "enable.idempotence": idempotent,
        "linger.ms": 2, "batch.num.messages": 100, "max.in.flight.requests.per.connection": 5,
        "reconnect.backoff.ms": 10, "reconnect.backoff.max.ms": 200, "retry.backoff.ms": 10,
        "message.timeout.ms": 180000}
if not idempotent:
    conf["retries"] = 1000000
failed = []
delivered = [0]
def report(err, msg):
    if err is not None:
        failed.append(str(err))
        return
    delivered[0] += 1
    if delivered[0] % 2000 == 0:
        print("progress", delivered[0], flush=True)
p = Producer(conf)
for i in range(n):
    while True:
        try:
            p.produce(topic, key=str(i % 13), value=str(i), on_delivery=report)
            break
        except BufferError:
            p.poll(0.05)
    p.poll(0)
left = p.flush(180)
print("done", left, len(failed), failed[:3], flush=True)
"#;

/// The same with kafka-python (idempotent by default).
const KAFKA_PYTHON_PRODUCER: &str = r#"
import sys
from kafka import KafkaProducer
addr, topic, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
p = KafkaProducer(bootstrap_servers=addr, acks="all", enable_idempotence=True, linger_ms=2,
                  batch_size=4096, retries=1000000, reconnect_backoff_ms=10,
                  reconnect_backoff_max_ms=200, retry_backoff_ms=10,
                  max_in_flight_requests_per_connection=5, request_timeout_ms=30000)
futures = []
# Flushing every 250 records makes many Produce requests, so many responses can be lost.
for start in range(0, n, 250):
    futures += [p.send(topic, key=str(i % 13).encode(), value=str(i).encode())
                for i in range(start, min(n, start + 250))]
    p.flush(180)
failed = [f.exception for f in futures if f.failed()]
print("done", 0, len(failed), [str(e) for e in failed[:3]], flush=True)
"#;

/// A logd behind a chaos proxy: logd advertises the proxy, so every connection goes through it.
fn behind_proxy(data: &std::path::Path, chaos: Chaos) -> (Daemon, ChaosProxy) {
    let listener = ChaosProxy::bind();
    let proxy_addr = listener.local_addr().unwrap().to_string();
    let daemon = Daemon::start(
        data,
        &[
            "--advertised",
            &proxy_addr,
            "--default-partitions",
            "3",
            "--metrics-listen",
            "127.0.0.1:0",
        ],
    );
    let proxy = ChaosProxy::start(listener, &daemon.addr, chaos);
    (daemon, proxy)
}

/// A finished run of a producer script through the proxy.
struct ProxyRun {
    daemon: Daemon,
    dropped: u64,
    /// Per partition, the stored values in offset order.
    stored: BTreeMap<i32, Vec<usize>>,
}

/// Runs `script` (argv: the proxy's address, `topic`, [`RECORDS`], then `extra`) against a
/// logd behind a proxy with `chaos`; panics unless every delivery succeeded.
fn run_through_proxy(
    dir: &std::path::Path,
    chaos: Chaos,
    script: &str,
    topic: &str,
    extra: &[&str],
) -> ProxyRun {
    let (daemon, proxy) = behind_proxy(dir, chaos);
    let records = RECORDS.to_string();
    let mut args = vec![proxy.addr.as_str(), topic, records.as_str()];
    args.extend_from_slice(extra);
    let output = python_script(script, &args).output().expect("python3");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    assert!(
        output.status.success() && last.starts_with("done 0 0 "),
        "producer did not deliver everything: {last}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stored = stored(&daemon.addr, topic);
    ProxyRun {
        dropped: proxy.dropped(),
        daemon,
        stored,
    }
}

/// What the topic holds, read straight from logd: per partition, its values in offset order.
fn stored(addr: &str, topic: &str) -> BTreeMap<i32, Vec<usize>> {
    let mut partitions: BTreeMap<i32, Vec<usize>> = BTreeMap::new();
    for record in librdkafka::consume(addr, topic, Offset::Beginning) {
        partitions
            .entry(record.partition)
            .or_default()
            .push(record.value.parse().unwrap());
    }
    partitions
}

/// Duplicates (values stored more than once) and the values never stored.
fn duplicates_and_gaps(stored: &BTreeMap<i32, Vec<usize>>, n: usize) -> (usize, usize) {
    let mut seen = BTreeSet::new();
    let mut duplicates = 0;
    for &value in stored.values().flatten() {
        if !seen.insert(value) {
            duplicates += 1;
        }
    }
    (duplicates, n - seen.len())
}

/// Within each partition, values (sent in increasing order) are stored in increasing order.
fn assert_in_order(stored: &BTreeMap<i32, Vec<usize>>) {
    for (partition, values) in stored {
        assert!(
            values.windows(2).all(|w| w[0] < w[1]),
            "partition {partition} out of order"
        );
    }
}

#[test]
fn confluent_kafka_idempotent_producer_stores_every_record_once_through_lost_responses() {
    let dir = tempfile::tempdir().unwrap();
    let chaos = Chaos {
        per_mille: 40,
        max_drops: 25,
        seed: 11,
    };
    let run = run_through_proxy(dir.path(), chaos, CONFLUENT_PRODUCER, "idem", &["1"]);
    assert!(run.dropped >= 10, "only {} responses lost", run.dropped);
    assert_eq!(duplicates_and_gaps(&run.stored, RECORDS), (0, 0));
    assert_in_order(&run.stored);
    let addr = &run.daemon.addr;
    let (ok, described, _) = super::logd(&["topics", "describe", "idem", "--bootstrap", addr], "");
    assert!(
        ok && described.contains("active idempotent producers:"),
        "{described}"
    );
    // One producer in each of the 3 partitions; every lost response came back as a retry
    // the engine answered as a duplicate.
    let metrics = scrape(run.daemon.metrics.as_deref().unwrap());
    assert_eq!(metrics[r#"logd_idempotent_producers{topic="idem"}"#], 3.0);
    let duplicates = metrics[r#"logd_duplicates_dropped_total{topic="idem"}"#];
    assert!(duplicates >= 1.0, "{duplicates} duplicates counted");
}

/// The control run: the same proxy without idempotence stores retried batches twice, which
/// shows that the proxy really makes clients retry batches the broker already stored.
#[test]
fn without_idempotence_the_same_lost_responses_store_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let chaos = Chaos {
        per_mille: 40,
        max_drops: 25,
        seed: 11,
    };
    let run = run_through_proxy(dir.path(), chaos, CONFLUENT_PRODUCER, "plain", &["0"]);
    assert!(run.dropped >= 10);
    let (duplicates, gaps) = duplicates_and_gaps(&run.stored, RECORDS);
    assert_eq!(gaps, 0);
    assert!(duplicates > 0, "no duplicates: the proxy forced no retry");
}

#[test]
fn kafka_python_idempotent_producer_stores_every_record_once_through_lost_responses() {
    let dir = tempfile::tempdir().unwrap();
    // kafka-python sends one request per broker with every partition's batch in it: fewer
    // requests than librdkafka, so a larger share of their responses is lost.
    let chaos = Chaos {
        per_mille: 150,
        max_drops: 15,
        seed: 5,
    };
    let run = run_through_proxy(dir.path(), chaos, KAFKA_PYTHON_PRODUCER, "kp", &[]);
    assert!(run.dropped >= 5, "only {} responses lost", run.dropped);
    assert_eq!(duplicates_and_gaps(&run.stored, RECORDS), (0, 0));
    assert_in_order(&run.stored);
}

/// logd is SIGKILLed while the producer runs (fsync = always) and restarted on the same
/// address: its producer state comes back from snapshots and the log, so the batches the
/// producer retries after the restart are recognised.
#[test]
fn an_idempotent_producer_stores_every_record_once_across_a_sigkill_of_logd() {
    let dir = tempfile::tempdir().unwrap();
    let chaos = Chaos {
        per_mille: 20,
        max_drops: 10,
        seed: 3,
    };
    let listener = ChaosProxy::bind();
    let proxy_addr = listener.local_addr().unwrap().to_string();
    let extra = [
        "--advertised",
        proxy_addr.as_str(),
        "--default-partitions",
        "3",
    ];
    let daemon = Daemon::start(dir.path(), &extra);
    let listen = daemon.addr.clone();
    let proxy = ChaosProxy::start(listener, &listen, chaos);
    let mut producer = python_script(
        CONFLUENT_PRODUCER,
        &[&proxy.addr, "crash", &RECORDS.to_string(), "1"],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .expect("python3");
    let mut lines = BufReader::new(producer.stdout.take().unwrap()).lines();
    let mut daemon = Some(daemon);
    let mut last = String::new();
    for line in lines.by_ref() {
        last = line.unwrap();
        if last.starts_with("progress 6000")
            && let Some(running) = daemon.take()
        {
            running.kill();
            daemon = Some(Daemon::start_on(dir.path(), &listen, &extra));
        }
        if last.starts_with("done") {
            break;
        }
    }
    producer.wait().unwrap();
    assert!(last.starts_with("done 0 0 "), "{last}");
    let daemon = daemon.expect("restarted");
    let stored = stored(&daemon.addr, "crash");
    assert_eq!(duplicates_and_gaps(&stored, RECORDS), (0, 0));
    assert_in_order(&stored);
}

/// Debian's kcat (librdkafka 2.0.2) with idempotence on produces, and reads back, through logd.
#[test]
fn an_old_librdkafka_kcat_produces_idempotently() {
    let Some(kcat_path) = system_kcat() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &[]);
    let lines: String = (0..500).map(|i| format!("k{}:{i}\n", i % 5)).collect();
    kcat(
        &kcat_path,
        &[
            "-b",
            &daemon.addr,
            "-P",
            "-t",
            "old",
            "-K:",
            "-X",
            "enable.idempotence=true",
        ],
        &lines,
    );
    let stored = stored(&daemon.addr, "old");
    assert_eq!(duplicates_and_gaps(&stored, 500), (0, 0));
    let (ok, described, err) = super::logd(
        &["topics", "describe", "old", "--bootstrap", &daemon.addr],
        "",
    );
    assert!(
        ok && described.contains("active idempotent producers:"),
        "kcat wrote as an idempotent producer: {described}{err}"
    );
}
