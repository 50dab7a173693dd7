//! Client quotas against a real daemon: set with Kafka's `kafka-configs` (and `logd quotas`),
//! described back by both and by the console, kept across a kill -9; and enforced: a librdkafka
//! producer and consumer over their byte rates are held within 10 % of them over 10 s, while
//! a client without a quota is not slowed.

use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::Message;
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::{ClientContext, Offset, TopicPartitionList};

use super::java_clients::java;
use super::metrics::{get, scrape};
use super::{Daemon, logd};

const CONFIGS: &str = "org.apache.kafka.tools.ConfigCommand";

/// Runs `kafka-configs` with `args`: whether it succeeded, and what it printed.
fn kafka_configs(bootstrap: &str, args: &[&str]) -> (bool, String) {
    let output = java(
        CONFIGS,
        &[&["--bootstrap-server", bootstrap], args].concat(),
    )
    .output()
    .expect("java");
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), printed)
}

fn quotas_listed(bootstrap: &str) -> String {
    let (ok, out, err) = logd(&["quotas", "list", "--bootstrap", bootstrap], "");
    assert!(ok, "{err}");
    out
}

#[test]
fn kafka_configs_and_logd_set_quotas_that_survive_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    // Describing users needs a super user on logd (see `logd users`).
    let daemon = Daemon::start(
        dir.path(),
        &[
            "--http-listen",
            "127.0.0.1:0",
            "--super-users",
            "User:ANONYMOUS",
        ],
    );
    let b = daemon.addr.as_str();
    let (ok, printed) = kafka_configs(
        b,
        &[
            "--alter",
            "--entity-type",
            "clients",
            "--entity-name",
            "slow",
            "--add-config",
            "producer_byte_rate=204800,consumer_byte_rate=409600",
        ],
    );
    assert!(ok, "{printed}");
    let (ok, printed) = kafka_configs(
        b,
        &[
            "--alter",
            "--entity-type",
            "users",
            "--entity-default",
            "--add-config",
            "request_percentage=150",
        ],
    );
    assert!(ok, "{printed}");
    let (ok, described) = kafka_configs(
        b,
        &[
            "--describe",
            "--entity-type",
            "clients",
            "--entity-name",
            "slow",
        ],
    );
    assert!(ok, "{described}");
    assert!(
        described.contains("Quota configs for client-id 'slow' are consumer_byte_rate=409600.0, producer_byte_rate=204800.0"),
        "{described}"
    );
    // Describing users asks DescribeClientQuotas and DescribeUserScramCredentials.
    let (ok, described) = kafka_configs(b, &["--describe", "--entity-type", "users"]);
    assert!(ok, "{described}");
    assert!(
        described.contains("the default user-principal are request_percentage=150.0"),
        "{described}"
    );
    // Kafka's checks, with its words, before anything is stored.
    let (ok, refused) = kafka_configs(
        b,
        &[
            "--alter",
            "--entity-type",
            "clients",
            "--entity-name",
            "slow",
            "--add-config",
            "producer_byte_rate=10.5",
        ],
    );
    assert!(!ok);
    assert!(
        refused.contains("producer_byte_rate cannot be a fractional value"),
        "{refused}"
    );

    // logd's own tool sets and removes them too.
    let (ok, _, err) = logd(
        &[
            "quotas",
            "set",
            "--bootstrap",
            b,
            "--user",
            "alice",
            "--client-id",
            "app",
            "producer_byte_rate=1000",
        ],
        "",
    );
    assert!(ok, "{err}");
    let (ok, _, err) = logd(
        &[
            "quotas",
            "set",
            "--bootstrap",
            b,
            "--client-default",
            "producer_byte_rate=1.5",
        ],
        "",
    );
    assert!(!ok && err.contains("cannot be a fractional value"), "{err}");
    let expected = "user=<default>\trequest_percentage=150\n\
                    user=alice,client-id=app\tproducer_byte_rate=1000\n\
                    client-id=slow\tconsumer_byte_rate=409600,producer_byte_rate=204800\n";
    assert_eq!(sorted(&quotas_listed(b)), sorted(expected));

    // The console shows them.
    let http = daemon.metrics.clone().unwrap();
    let (status, body) = get(&http, "/api/v1/quotas");
    assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
    let body: serde_json::Value = serde_json::from_str(&body).unwrap();
    let slow = body["quotas"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["entity"]["client-id"] == "slow")
        .unwrap_or_else(|| panic!("{body}"));
    assert_eq!(slow["values"]["producer_byte_rate"], 204800.0);
    assert!(slow["entity"].get("user").is_none(), "{slow}");
    let default_user = body["quotas"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["entity"].get("user") == Some(&serde_json::Value::Null))
        .unwrap_or_else(|| panic!("{body}"));
    assert_eq!(default_user["values"]["request_percentage"], 150.0);

    // Acknowledged changes survive kill -9.
    let (ok, _, err) = logd(
        &[
            "quotas",
            "remove",
            "--bootstrap",
            b,
            "--user",
            "alice",
            "--client-id",
            "app",
            "producer_byte_rate",
        ],
        "",
    );
    assert!(ok, "{err}");
    daemon.kill();
    let daemon = Daemon::start(dir.path(), &[]);
    let expected = "user=<default>\trequest_percentage=150\n\
                    client-id=slow\tconsumer_byte_rate=409600,producer_byte_rate=204800\n";
    assert_eq!(sorted(&quotas_listed(&daemon.addr)), sorted(expected));
}

fn sorted(lines: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = lines.lines().collect();
    lines.sort();
    lines
}

/// Each acknowledged record's time and size.
#[derive(Default)]
struct Acks(Mutex<Vec<(Instant, usize)>>);

impl ClientContext for Acks {}

impl ProducerContext for Acks {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        if let Ok(m) = result {
            let size = m.payload().map_or(0, <[u8]>::len);
            self.0.lock().push((Instant::now(), size));
        }
    }
}

/// Produces 1,000-byte records to `topic` as `client_id` as fast as the broker takes them for
/// `run`; each acknowledged record's time and size.
fn produce_flat_out(
    addr: &str,
    topic: &str,
    client_id: &str,
    run: Duration,
) -> Vec<(Instant, usize)> {
    let producer: ThreadedProducer<Acks> = ClientConfig::new()
        .set("bootstrap.servers", addr)
        .set("client.id", client_id)
        .set("acks", "1")
        .set("linger.ms", "5")
        // Small requests, so that one request is a small part of what 10 s allow.
        .set("batch.size", "32768")
        .set("queue.buffering.max.messages", "2000")
        .create_with_context(Acks::default())
        .expect("librdkafka producer");
    let value = vec![b'q'; 1000];
    let end = Instant::now() + run;
    while Instant::now() < end {
        match producer.send(BaseRecord::<(), [u8]>::to(topic).payload(&value)) {
            Ok(()) => {}
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                std::thread::sleep(Duration::from_millis(1));
            }
            Err((e, _)) => panic!("produce: {e}"),
        }
    }
    let acks = std::mem::take(&mut *producer.context().0.lock());
    // What is still queued is not waited for.
    producer.purge(rdkafka::producer::PurgeConfig::default().queue().inflight());
    acks
}

/// Bytes per second acknowledged between `from` and `from + span` after `start`.
fn rate(acks: &[(Instant, usize)], start: Instant, from: Duration, span: Duration) -> f64 {
    let bytes: usize = acks
        .iter()
        .filter(|(at, _)| (start + from..start + from + span).contains(at))
        .map(|(_, size)| size)
        .sum();
    bytes as f64 / span.as_secs_f64()
}

/// Asserts that the bytes acknowledged or read from 2 s to 12 s after `start` came at `quota`
/// per second, within 10 %.
fn held_to(acks: &[(Instant, usize)], start: Instant, quota: f64, what: &str) {
    let rate = rate(acks, start, Duration::from_secs(2), Duration::from_secs(10));
    super::say(&format!("quotas: {what} at {rate:.0} B/s against {quota}"));
    assert!(
        (rate / quota - 1.0).abs() < 0.10,
        "quoted {what}: {rate:.0} B/s against {quota}"
    );
}

/// Reads `topic` partition 0 from the start as `client_id` for `run`; each record's arrival
/// time and size.
fn consume_flat_out(
    addr: &str,
    topic: &str,
    client_id: &str,
    run: Duration,
) -> Vec<(Instant, usize)> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", addr)
        .set("client.id", client_id)
        .set("group.id", "quota-readers")
        .set("enable.auto.commit", "false")
        .create()
        .expect("librdkafka consumer");
    let mut assignment = TopicPartitionList::new();
    assignment
        .add_partition_offset(topic, 0, Offset::Beginning)
        .unwrap();
    consumer.assign(&assignment).unwrap();
    let mut arrived = Vec::new();
    let end = Instant::now() + run;
    while Instant::now() < end {
        if let Some(Ok(message)) = consumer.poll(Duration::from_millis(100)) {
            arrived.push((Instant::now(), message.payload().map_or(0, <[u8]>::len)));
        }
    }
    arrived
}

#[test]
fn clients_over_their_byte_rates_are_held_to_them_and_others_are_not() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &["--http-listen", "127.0.0.1:0"]);
    let b = daemon.addr.as_str();
    let quota = 256.0 * 1024.0;
    let (ok, _, err) = logd(
        &[
            "topics",
            "create",
            "q",
            "--partitions",
            "1",
            "--bootstrap",
            b,
        ],
        "",
    );
    assert!(ok, "{err}");
    for key in ["producer_byte_rate=262144", "consumer_byte_rate=262144"] {
        let (ok, _, err) = logd(
            &[
                "quotas",
                "set",
                "--bootstrap",
                b,
                "--client-id",
                "slow",
                key,
            ],
            "",
        );
        assert!(ok, "{err}");
    }

    // Unquoted first: it fills the topic for the consumers below.
    let start = Instant::now();
    let fast = produce_flat_out(b, "q", "fast", Duration::from_secs(3));
    let fast_rate = rate(&fast, start, Duration::ZERO, Duration::from_secs(3));
    assert!(
        fast_rate > 4.0 * quota,
        "unquoted producer: {fast_rate:.0} B/s"
    );

    // Over 10 s in its stride (after the first second's burst), within 10 % of its quota.
    let start = Instant::now();
    let slow = produce_flat_out(b, "q", "slow", Duration::from_secs(13));
    held_to(&slow, start, quota, "producer");
    let start = Instant::now();
    let read = consume_flat_out(b, "q", "slow", Duration::from_secs(13));
    held_to(&read, start, quota, "consumer");
    let start = Instant::now();
    let unquoted = consume_flat_out(b, "q", "reader", Duration::from_secs(2));
    let unquoted_rate = rate(&unquoted, start, Duration::ZERO, Duration::from_secs(2));
    assert!(
        unquoted_rate > 4.0 * quota,
        "unquoted consumer: {unquoted_rate:.0} B/s"
    );

    // The waits are counted per API.
    let metrics = scrape(daemon.metrics.as_deref().unwrap());
    for api in ["Produce", "Fetch"] {
        let waited = metrics
            .get(&format!(
                r#"logd_client_throttle_seconds_total{{api="{api}"}}"#
            ))
            .copied()
            .unwrap_or(0.0);
        assert!(waited > 5.0, "{api}: {waited} s of throttles counted");
    }
}
