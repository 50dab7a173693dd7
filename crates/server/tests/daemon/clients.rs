//! Unmodified Kafka clients produce and consume through a real `logd`: every acknowledged
//! record comes back with its key, value, headers, timestamp and per-partition order, in every
//! compression codec the clients offer.

use std::collections::BTreeMap;

use std::process::Command;

use super::librdkafka::{self, Offset};
use super::{Daemon, kcat, python, system_kcat};

const KAFKA_PYTHON: &str = r#"
import sys
from kafka import KafkaProducer, KafkaConsumer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
b = sys.argv[1]
admin = KafkaAdminClient(bootstrap_servers=b, request_timeout_ms=10000)
admin.create_topics([NewTopic("orders", num_partitions=3, replication_factor=1)])
print("T", ",".join(sorted(admin.list_topics())), sep="\t")
n = 0
for codec in [None, "gzip", "snappy", "lz4", "zstd"]:
    # kafka-python enables idempotence by default: InitProducerId is exercised too.
    p = KafkaProducer(bootstrap_servers=b, acks="all", compression_type=codec, linger_ms=5)
    futures = []
    for i in range(40):
        key = f"key-{i % 7}"
        value = f"{codec}-{i}-" + "x" * (i * 13 % 200)
        futures.append((key, value, p.send("orders", key=key.encode(), value=value.encode(),
                                           headers=[("codec", str(codec).encode()), ("i", str(i).encode())],
                                           timestamp_ms=1700000000000 + n)))
        n += 1
    for key, value, f in futures:
        m = f.get(timeout=10)
        print("S", key, value, m.partition, m.offset, m.timestamp, sep="\t")
    p.close()
c = KafkaConsumer(bootstrap_servers=b, enable_auto_commit=False, consumer_timeout_ms=5000)
tps = [TopicPartition("orders", i) for i in range(3)]
c.assign(tps)
c.seek_to_beginning(*tps)
for m in c:
    headers = ";".join(f"{k}={v.decode()}" for k, v in m.headers)
    print("G", m.key.decode(), m.value.decode(), m.partition, m.offset, m.timestamp, headers, sep="\t")
at = c.offsets_for_times({tps[0]: 1700000000000 + 100})[tps[0]]
print("F", at.offset, at.timestamp, sep="\t")
admin.delete_topics(["orders"])
print("D", ",".join(sorted(admin.list_topics())), sep="\t")
"#;

/// The script's lines of kind `tag`, split on tabs (without the tag).
fn rows<'a>(output: &'a str, tag: &str) -> Vec<Vec<&'a str>> {
    output
        .lines()
        .filter_map(|l| l.strip_prefix(tag)?.strip_prefix('\t'))
        .map(|l| l.split('\t').collect())
        .collect()
}

#[test]
fn kafka_python_round_trips_every_codec_with_keys_headers_and_timestamps() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &[]);
    let output = python(KAFKA_PYTHON, &daemon.addr);
    assert_eq!(rows(&output, "T"), vec![vec!["orders"]]);
    let sent = rows(&output, "S");
    let got = rows(&output, "G");
    assert_eq!(sent.len(), 200);
    assert_eq!(got.len(), 200, "every acknowledged record comes back");
    // By (partition, offset): key, value, timestamp, headers.
    let stored: BTreeMap<(&str, &str), &Vec<&str>> =
        got.iter().map(|r| ((r[2], r[3]), r)).collect();
    let mut partition_of_key = BTreeMap::new();
    for s in &sent {
        let (key, value, partition, offset, ts) = (s[0], s[1], s[2], s[3], s[4]);
        let r = stored[&(partition, offset)];
        assert_eq!(
            (r[0], r[1], r[4]),
            (key, value, ts),
            "record at {partition}@{offset}"
        );
        let i = value.split('-').nth(1).unwrap();
        let codec = value.split('-').next().unwrap();
        assert_eq!(
            r[5],
            format!("codec={codec};i={i}"),
            "headers kept in order"
        );
        assert_eq!(
            *partition_of_key.entry(key).or_insert(partition),
            partition,
            "same key, same partition"
        );
    }
    // Per partition, offsets come back in order with no gaps.
    for p in ["0", "1", "2"] {
        let offsets: Vec<i64> = got
            .iter()
            .filter(|r| r[2] == p)
            .map(|r| r[3].parse().unwrap())
            .collect();
        assert_eq!(offsets, (0..offsets.len() as i64).collect::<Vec<_>>());
    }
    let for_time = rows(&output, "F");
    assert_ne!(
        for_time[0][0], "-1",
        "offsets_for_times found a record: {output}"
    );
    assert_eq!(rows(&output, "D"), vec![vec![""]], "the topic was deleted");
}

/// A value that every codec shrinks (librdkafka sends a batch uncompressed when compression
/// would not make it smaller).
fn compressible(codec: &str) -> String {
    format!("{codec}{}", ".".repeat(300))
}

/// librdkafka as the `rdkafka` crate builds it: keyed and keyless records in every codec, the
/// topic listing, and reads from the beginning, an offset, the last N and the end. The segment
/// shows that each codec really went over the wire.
#[test]
fn librdkafka_lists_produces_and_consumes_from_any_offset_in_every_codec() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &[]);
    let b = daemon.addr.as_str();
    librdkafka::produce(b, "kc", "none", &["a:1", "b:2", "a:3"]);
    let codecs = ["gzip", "snappy", "lz4", "zstd"];
    for codec in codecs {
        librdkafka::produce(b, "kc", codec, &[compressible(codec)]);
    }
    assert!(
        librdkafka::topics(b).contains(&("kc".to_owned(), 1)),
        "{:?}",
        librdkafka::topics(b)
    );
    let offsets_keys_values = |start| -> Vec<String> {
        librdkafka::consume(b, "kc", start)
            .into_iter()
            .map(|r| format!("{} {}={}", r.offset, r.key.unwrap_or_default(), r.value))
            .collect()
    };
    let mut expected = vec!["0 a=1".to_owned(), "1 b=2".into(), "2 a=3".into()];
    expected.extend(
        (3..)
            .zip(codecs)
            .map(|(o, c)| format!("{o} ={}", compressible(c))),
    );
    assert_eq!(offsets_keys_values(Offset::Beginning), expected);
    assert_eq!(offsets_keys_values(Offset::Offset(2)), expected[2..]);
    assert_eq!(offsets_keys_values(Offset::OffsetTail(2)), expected[5..]);
    assert_eq!(offsets_keys_values(Offset::End), Vec::<String>::new());

    assert!(daemon.terminate().success());
    let dump = Command::new(env!("CARGO_BIN_EXE_logd"))
        .arg("dump")
        .arg(dir.path().join("topics/kc/0/00000000000000000000.log"))
        .output()
        .unwrap();
    let dump = String::from_utf8(dump.stdout).unwrap();
    for codec in codecs {
        assert!(
            dump.contains(&format!("compression {codec} ")),
            "a {codec} batch is stored: {dump}"
        );
    }
}

/// The one old librdkafka: the system's kcat (Debian's carries librdkafka 2.0.2), which probes
/// broker features its own way. Without a kcat on PATH it says so (see `system_kcat`).
#[test]
fn an_old_librdkafka_kcat_lists_produces_and_consumes_from_any_offset_in_every_codec() {
    let Some(kcat_path) = system_kcat() else {
        return;
    };
    let kcat = |args: &[&str], stdin: &str| kcat(&kcat_path, args, stdin);
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &[]);
    let b = daemon.addr.as_str();
    kcat(&["-b", b, "-P", "-t", "kc", "-K:"], "a:1\nb:2\na:3\n");
    for codec in ["gzip", "snappy", "lz4", "zstd"] {
        kcat(
            &["-b", b, "-P", "-t", "kc", "-z", codec],
            &format!("{codec}\n"),
        );
    }
    let listing = kcat(&["-b", b, "-L"], "");
    assert!(
        listing.contains("topic \"kc\" with 1 partitions"),
        "{listing}"
    );
    let all = kcat(
        &[
            "-b",
            b,
            "-C",
            "-t",
            "kc",
            "-o",
            "beginning",
            "-e",
            "-f",
            "%o %k=%s\n",
        ],
        "",
    );
    assert_eq!(
        all,
        "0 a=1\n1 b=2\n2 a=3\n3 =gzip\n4 =snappy\n5 =lz4\n6 =zstd\n"
    );
    let from_two = kcat(
        &["-b", b, "-C", "-t", "kc", "-o", "2", "-e", "-f", "%o\n"],
        "",
    );
    assert_eq!(from_two, "2\n3\n4\n5\n6\n");
    let last_two = kcat(
        &["-b", b, "-C", "-t", "kc", "-o", "-2", "-e", "-f", "%o\n"],
        "",
    );
    assert_eq!(last_two, "5\n6\n");
    let at_end = kcat(
        &["-b", b, "-C", "-t", "kc", "-o", "end", "-e", "-f", "%o\n"],
        "",
    );
    assert_eq!(at_end, "");
}

const CONFLUENT_KAFKA: &str = r#"
import sys, time
from confluent_kafka import Producer, Consumer, TopicPartition, OFFSET_BEGINNING
from confluent_kafka.admin import AdminClient, NewTopic
b = sys.argv[1]
admin = AdminClient({"bootstrap.servers": b})
for f in admin.create_topics([NewTopic("ck", num_partitions=2, replication_factor=1)]).values():
    f.result(10)
listed = sorted(admin.list_topics(timeout=10).topics)
acked = []
p = Producer({"bootstrap.servers": b, "acks": "all"})
for i in range(30):
    p.produce("ck", key=f"k{i % 5}", value=f"v{i}", headers=[("h", str(i).encode())],
              on_delivery=lambda err, m: acked.append((m.partition(), m.offset(), m.value().decode())) if err is None else None)
assert p.flush(10) == 0
c = Consumer({"bootstrap.servers": b, "group.id": "reader", "enable.auto.commit": False})
c.assign([TopicPartition("ck", 0, OFFSET_BEGINNING), TopicPartition("ck", 1, OFFSET_BEGINNING)])
got = []
deadline = time.time() + 20
while len(got) < 30 and time.time() < deadline:
    m = c.poll(0.5)
    if m is None or m.error():
        continue
    got.append((m.partition(), m.offset(), m.value().decode()))
c.close()
for f in admin.delete_topics(["ck"]).values():
    f.result(10)
print(listed, sorted(acked) == sorted(got), len(acked), len(got), sorted(admin.list_topics(timeout=10).topics))
"#;

#[test]
fn confluent_kafka_admin_producer_and_consumer_work() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &[]);
    let output = python(CONFLUENT_KAFKA, &daemon.addr);
    assert_eq!(output.trim(), "['ck'] True 30 30 []");
}

const DESCRIBE_CONFIGS: &str = r#"
import sys
from confluent_kafka.admin import AdminClient, NewTopic, ConfigResource
admin = AdminClient({"bootstrap.servers": sys.argv[1]})
for f in admin.create_topics([NewTopic("cfg", num_partitions=1, replication_factor=1,
                                       config={"retention.ms": "3600000"})]).values():
    f.result(10)
for f in admin.describe_configs([ConfigResource("topic", "cfg")]).values():
    configs = f.result(10)
    r = configs["retention.ms"]
    s = configs["segment.bytes"]
    # Kafka's config sources: 1 = set on the topic, 5 = the broker's default.
    print(r.value, r.source, s.source)
"#;

#[test]
fn confluent_kafka_describes_topic_configs() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &[]);
    assert_eq!(python(DESCRIBE_CONFIGS, &daemon.addr).trim(), "3600000 1 5");
}
