//! librdkafka driven from Rust through the `rdkafka` crate, which builds the librdkafka it
//! bundles: produce, consume from any start, list topics, and balanced group members, so the
//! daemon tests cover librdkafka without a system kcat.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::{ClientContext, TopicPartitionList};

pub use rdkafka::Offset;

/// How long any one helper waits for the broker before failing the test.
const PATIENCE: Duration = Duration::from_secs(30);

/// One consumed record, with its key and value as text.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Record {
    pub partition: i32,
    pub offset: i64,
    pub key: Option<String>,
    pub value: String,
}

/// Collects delivery reports: (partition, offset) or the error librdkafka gave up with.
#[derive(Default)]
struct Deliveries(Mutex<Vec<Result<(i32, i64), String>>>);

impl ClientContext for Deliveries {}

impl ProducerContext for Deliveries {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        self.0.lock().push(match result {
            Ok(m) => Ok((m.partition(), m.offset())),
            Err((e, _)) => Err(e.to_string()),
        });
    }
}

fn config(addr: &str) -> ClientConfig {
    let mut config = ClientConfig::new();
    config.set("bootstrap.servers", addr);
    config
}

/// Produces `lines` to `topic` with `acks=all` and `compression.codec` = `codec` (`none`,
/// `gzip`, `snappy`, `lz4`, `zstd`); a line `key:value` has a key, any other line none. Returns
/// each record's (partition, offset) once every one was acknowledged.
pub fn produce(addr: &str, topic: &str, codec: &str, lines: &[impl AsRef<str>]) -> Vec<(i32, i64)> {
    let producer: ThreadedProducer<Deliveries> = config(addr)
        .set("acks", "all")
        .set("compression.codec", codec)
        .set("linger.ms", "5")
        .create_with_context(Deliveries::default())
        .expect("librdkafka producer");
    for line in lines {
        let line = line.as_ref();
        let (key, value) = match line.split_once(':') {
            Some((key, value)) => (Some(key), value),
            None => (None, line),
        };
        let mut record = BaseRecord::<str, str>::to(topic).payload(value);
        if let Some(key) = key {
            record = record.key(key);
        }
        producer
            .send(record)
            .unwrap_or_else(|(e, _)| panic!("queue {line:?}: {e}"));
    }
    producer.flush(PATIENCE).expect("every record acknowledged");
    let reports = std::mem::take(&mut *producer.context().0.lock());
    reports
        .into_iter()
        .map(|r| r.unwrap_or_else(|e| panic!("delivery failed: {e}")))
        .collect()
}

/// The broker's topics and their partition counts, as librdkafka's metadata request sees them.
pub fn topics(addr: &str) -> Vec<(String, usize)> {
    let consumer: BaseConsumer = config(addr).create().expect("librdkafka client");
    let metadata = consumer.fetch_metadata(None, PATIENCE).expect("metadata");
    metadata
        .topics()
        .iter()
        .map(|t| (t.name().to_owned(), t.partitions().len()))
        .collect()
}

/// Reads every partition of `topic` from `start` up to its end (as kcat's `-C -o START -e`),
/// in the order librdkafka delivers them.
pub fn consume(addr: &str, topic: &str, start: Offset) -> Vec<Record> {
    // librdkafka wants a group even for assigned partitions; this reader never commits to it.
    let consumer: BaseConsumer = config(addr)
        .set("group.id", "logd-tests-reader")
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "true")
        .create()
        .expect("librdkafka consumer");
    let partitions = consumer
        .fetch_metadata(Some(topic), PATIENCE)
        .expect("metadata")
        .topics()[0]
        .partitions()
        .len() as i32;
    let mut assignment = TopicPartitionList::new();
    for partition in 0..partitions {
        assignment
            .add_partition_offset(topic, partition, start)
            .expect("offset");
    }
    consumer.assign(&assignment).expect("assign");
    read_until_end(&consumer, |at_end| at_end.len() == partitions as usize)
}

/// Polls until `done(partitions at their end)`; a record after an end reopens its partition.
fn read_until_end(consumer: &BaseConsumer, done: impl Fn(&BTreeSet<i32>) -> bool) -> Vec<Record> {
    let deadline = Instant::now() + PATIENCE;
    let mut at_end = BTreeSet::new();
    let mut records = Vec::new();
    while !done(&at_end) {
        assert!(
            Instant::now() < deadline,
            "never reached the end: {records:?}"
        );
        match consumer.poll(Duration::from_millis(100)) {
            None => {}
            Some(Err(KafkaError::PartitionEOF(partition))) => {
                at_end.insert(partition);
            }
            Some(Err(e)) => panic!("consume: {e}"),
            Some(Ok(m)) => {
                at_end.remove(&m.partition());
                records.push(Record {
                    partition: m.partition(),
                    offset: m.offset(),
                    key: m.key().map(|k| String::from_utf8_lossy(k).into_owned()),
                    value: String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned(),
                });
            }
        }
    }
    records
}

fn group_consumer(addr: &str, group: &str, topic: &str, session_timeout_ms: u32) -> BaseConsumer {
    let consumer: BaseConsumer = config(addr)
        .set("group.id", group)
        .set("auto.offset.reset", "earliest")
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "true")
        .set("session.timeout.ms", session_timeout_ms.to_string())
        .create()
        .expect("librdkafka group consumer");
    consumer.subscribe(&[topic]).expect("subscribe");
    consumer
}

/// A balanced consumer (`subscribe`, as kcat's `-G`) in `group`: reads what is past the
/// group's commits up to the end of every partition it was assigned, commits, and leaves.
pub fn consume_in_group(addr: &str, group: &str, topic: &str) -> Vec<Record> {
    let consumer = group_consumer(addr, group, topic, 45_000);
    let records = read_until_end(&consumer, |at_end| {
        let assigned: BTreeSet<i32> = consumer
            .assignment()
            .map(|list| list.elements().iter().map(|e| e.partition()).collect())
            .unwrap_or_default();
        !assigned.is_empty() && assigned.is_subset(at_end)
    });
    if !records.is_empty() {
        consumer
            .commit_consumer_state(CommitMode::Sync)
            .expect("commit");
    }
    records
}

/// A balanced consumer that stays in its group, polling on its own thread, until dropped
/// (which closes it: a LeaveGroup, as a gracefully stopped client sends).
pub struct Member {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Member {
    /// Joins `group` on `topic` with the given session timeout.
    pub fn join(addr: &str, group: &str, topic: &str, session_timeout_ms: u32) -> Member {
        let consumer = group_consumer(addr, group, topic, session_timeout_ms);
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            while !stopping.load(Ordering::Relaxed) {
                let _ = consumer.poll(Duration::from_millis(50));
            }
        });
        Member {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
