//! The daemon's Prometheus metrics, served by `--metrics-listen` (see [`http`]): traffic per
//! topic and request latency (as a [`BrokerObserver`]), fsync latency (through
//! [`fsync::MeteredFs`]), active connections, and, computed at each scrape from the engine,
//! consumer lag per group and partition, the age of each group's oldest unconsumed record,
//! dead-letter topic depth and age, idempotent producers tracked and duplicates dropped per
//! topic, and transactions (`transactions.rs`).
//!
//! A dead-letter topic is one whose name ends in [`DLQ_SUFFIX`]; its depth is its pending
//! letters: the records after the dead-letter position (what the group [`DLQ_REPLAY_GROUP`]
//! has committed there, every retained record if nothing) but those its replays topic records
//! as replayed, so replaying dead letters lowers it.

pub(crate) mod fsync;
mod transactions;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use kafka_protocol::messages::ApiKey;
use logd::Log;
use logd_kafka::{BrokerObserver, ConnectionStats, RequestBudget};
use logd_storage::Offset;
use parking_lot::Mutex;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

use crate::lag::partition_lag;

/// Topics with this suffix are dead-letter topics.
pub(crate) const DLQ_SUFFIX: &str = ".dlq";
/// The group whose commits on a dead-letter topic mark what was replayed.
pub(crate) const DLQ_REPLAY_GROUP: &str = logd_retry::REPLAY_GROUP;

type Labels = Vec<(&'static str, String)>;
/// A gauge of a fraction or of seconds (a float).
type FloatGauge = Gauge<f64, AtomicU64>;

fn latency_histogram() -> Histogram {
    // 50 µs to about 26 s: fsyncs at the bottom, parked group requests at the top.
    Histogram::new(exponential_buckets(0.000_05, 2.0, 20))
}

/// Every metric, and what is needed to compute the scraped ones.
#[derive(Debug)]
pub(crate) struct Metrics {
    registry: Registry,
    records_in: Family<Labels, Counter>,
    bytes_in: Family<Labels, Counter>,
    records_out: Family<Labels, Counter>,
    bytes_out: Family<Labels, Counter>,
    request_latency: Family<Labels, Histogram, fn() -> Histogram>,
    fsync_latency: Histogram,
    connections: Gauge,
    share_sessions: Gauge,
    share_members: Family<Labels, Gauge>,
    consumer_lag: Family<Labels, Gauge>,
    share_records: Family<Labels, Gauge>,
    share_lag: Family<Labels, Gauge>,
    share_redelivered: Family<Labels, Counter>,
    share_archived: Family<Labels, Counter>,
    share_dead_lettered: Family<Labels, Counter>,
    oldest_unconsumed: Family<Labels, FloatGauge>,
    dlq_depth: Family<Labels, Gauge>,
    dlq_oldest: Family<Labels, FloatGauge>,
    producers: Family<Labels, Gauge>,
    duplicates: Family<Labels, Counter>,
    transactions: Family<Labels, Gauge>,
    oldest_transaction: FloatGauge,
    stable_offset_lag: Family<Labels, Gauge>,
    cleaner_failures: Counter,
    cleaner_records_removed: Counter,
    cleaner_bytes_freed: Counter,
    cleaner_uncleanable: Gauge,
    cleaner_dirty_ratio: Family<Labels, FloatGauge>,
    cleaner_last_cleaned: Family<Labels, FloatGauge>,
    cleaner_reclaimed: Family<Labels, Gauge>,
    refused: Family<Labels, Counter>,
    accept_failures: Counter,
    normalized: Family<Labels, Counter>,
    authentication_failures: Family<Labels, Counter>,
    authorization_denied: Family<Labels, Counter>,
    throttle_seconds: Family<Labels, Counter<f64, AtomicU64>>,
    budget_in_use: Gauge,
    budget_waiting: Gauge,
    connection_states: Family<Labels, Gauge>,
    sending: Gauge,
    log: OnceLock<Log>,
    budget: OnceLock<Arc<RequestBudget>>,
    connections_now: OnceLock<Arc<ConnectionStats>>,
    /// Scrapes recompute the engine-derived families; one at a time.
    rendering: Mutex<()>,
    /// Records produced and fetched over every topic since start, for the console's rates.
    produced_total: AtomicU64,
    fetched_total: AtomicU64,
}

impl Metrics {
    /// Registers every metric.
    pub(crate) fn new() -> Metrics {
        let mut registry = Registry::with_prefix("logd");
        let metrics = Metrics {
            records_in: Family::default(),
            bytes_in: Family::default(),
            records_out: Family::default(),
            bytes_out: Family::default(),
            request_latency: Family::new_with_constructor(latency_histogram),
            fsync_latency: latency_histogram(),
            connections: Gauge::default(),
            share_sessions: Gauge::default(),
            share_members: Family::default(),
            consumer_lag: Family::default(),
            share_records: Family::default(),
            share_lag: Family::default(),
            share_redelivered: Family::default(),
            share_archived: Family::default(),
            share_dead_lettered: Family::default(),
            oldest_unconsumed: Family::default(),
            dlq_depth: Family::default(),
            dlq_oldest: Family::default(),
            producers: Family::default(),
            transactions: Family::default(),
            oldest_transaction: FloatGauge::default(),
            stable_offset_lag: Family::default(),
            duplicates: Family::default(),
            cleaner_failures: Counter::default(),
            cleaner_records_removed: Counter::default(),
            cleaner_bytes_freed: Counter::default(),
            cleaner_uncleanable: Gauge::default(),
            cleaner_dirty_ratio: Family::default(),
            cleaner_last_cleaned: Family::default(),
            cleaner_reclaimed: Family::default(),
            refused: Family::default(),
            accept_failures: Counter::default(),
            normalized: Family::default(),
            authentication_failures: Family::default(),
            authorization_denied: Family::default(),
            throttle_seconds: Family::default(),
            budget_in_use: Gauge::default(),
            budget_waiting: Gauge::default(),
            connection_states: Family::default(),
            sending: Gauge::default(),
            log: OnceLock::new(),
            budget: OnceLock::new(),
            connections_now: OnceLock::new(),
            rendering: Mutex::new(()),
            produced_total: AtomicU64::new(0),
            fetched_total: AtomicU64::new(0),
            registry: Registry::default(),
        };
        let m = &metrics;
        registry.register(
            "produced_records",
            "Records produced, per topic",
            m.records_in.clone(),
        );
        registry.register_with_unit(
            "produced",
            "Bytes of record batches produced, per topic",
            Unit::Bytes,
            m.bytes_in.clone(),
        );
        registry.register(
            "fetched_records",
            "Records fetched, per topic",
            m.records_out.clone(),
        );
        registry.register_with_unit(
            "fetched",
            "Bytes of record batches fetched, per topic",
            Unit::Bytes,
            m.bytes_out.clone(),
        );
        registry.register_with_unit(
            "request_latency",
            "Time from a request's arrival to its answer, per API (fetch long-polls included)",
            Unit::Seconds,
            m.request_latency.clone(),
        );
        registry.register_with_unit(
            "fsync_latency",
            "Time of each fdatasync or directory fsync",
            Unit::Seconds,
            m.fsync_latency.clone(),
        );
        registry.register(
            "active_connections",
            "Client connections open now",
            m.connections.clone(),
        );
        registry.register(
            "consumer_lag",
            "Records between a group's committed offset and the partition's end",
            m.consumer_lag.clone(),
        );
        registry.register(
            "share_records",
            "Records of a share group's partition between its start and end, by state (available, acquired, acknowledged, archived)",
            m.share_records.clone(),
        );
        registry.register(
            "share_sessions",
            "Share sessions open now (KIP-932; at most 2,000, each ending at epoch -1 or when its connection closes)",
            m.share_sessions.clone(),
        );
        registry.register(
            "share_members",
            "Members of a share group now (each removed after share.session.timeout.ms without a heartbeat)",
            m.share_members.clone(),
        );
        registry.register(
            "share_lag",
            "Records from a share group's start offset on a partition to its end not yet acknowledged or archived (Kafka's share lag, KIP-1226)",
            m.share_lag.clone(),
        );
        registry.register(
            "share_redelivered",
            "Records a share group handed out again (each delivery after the first) since logd started",
            m.share_redelivered.clone(),
        );
        registry.register(
            "share_archived",
            "Records a share group archived unaccepted since logd started, by reason (rejected, delivery_limit)",
            m.share_archived.clone(),
        );
        registry.register(
            "share_dead_lettered",
            "Dead letters a share group wrote to its dead-letter topic since logd started",
            m.share_dead_lettered.clone(),
        );
        registry.register_with_unit(
            "consumer_oldest_unconsumed_age",
            "Age of the oldest record a group has not committed past (0 when caught up)",
            Unit::Seconds,
            m.oldest_unconsumed.clone(),
        );
        registry.register(
            "dead_letter_depth",
            "Dead letters not yet replayed, per dead-letter topic",
            m.dlq_depth.clone(),
        );
        registry.register_with_unit(
            "dead_letter_oldest_age",
            "Age of the oldest dead letter not yet replayed (0 when none)",
            Unit::Seconds,
            m.dlq_oldest.clone(),
        );
        registry.register(
            "connections_refused",
            "Connections closed at once, per reason (max-connections, max-connections-per-ip)",
            m.refused.clone(),
        );
        registry.register(
            "batches_normalized",
            "Produced batches whose stated max timestamp did not match their records, set as \
             Kafka sets it instead of being refused, per topic",
            m.normalized.clone(),
        );
        registry.register(
            "accept_failures",
            "Accepts of a new connection that failed (most often for want of file descriptors); \
             each pauses the listener",
            m.accept_failures.clone(),
        );
        registry.register(
            "authentication_failures",
            "Failed logins per listener and mechanism (a SASL mechanism, or TLS for a failed \
             handshake)",
            m.authentication_failures.clone(),
        );
        registry.register(
            "authorization_denied",
            "Requests (or parts of them) the ACLs refused, per operation and resource type",
            m.authorization_denied.clone(),
        );
        registry.register_with_unit(
            "client_throttle",
            "Time clients over a quota were told to wait (their connections muted meanwhile), \
             per API of the request that went over",
            Unit::Seconds,
            m.throttle_seconds.clone(),
        );
        registry.register_with_unit(
            "request_budget_in_use",
            "Bytes of request frames reserved now against --max-inflight-request-bytes",
            Unit::Bytes,
            m.budget_in_use.clone(),
        );
        registry.register(
            "connections",
            "Client connections per state: idle, reading (a request, or waiting for budget), \
             handling, writing",
            m.connection_states.clone(),
        );
        registry.register_with_unit(
            "response_bytes_in_flight",
            "Bytes of responses being written to clients now",
            Unit::Bytes,
            m.sending.clone(),
        );
        registry.register(
            "requests_waiting_for_budget",
            "Requests whose connection waits for room in the request budget",
            m.budget_waiting.clone(),
        );
        registry.register(
            "transactions",
            "Transactional ids by the state of their transaction (Kafka's names: Empty, Ongoing, PrepareCommit, ...)",
            m.transactions.clone(),
        );
        registry.register_with_unit(
            "transaction_oldest_open_age",
            "How long the oldest open transaction has been open (0 with none)",
            Unit::Seconds,
            m.oldest_transaction.clone(),
        );
        registry.register(
            "last_stable_offset_lag",
            "Records between a partition's last stable offset and its high watermark: what read_committed readers wait for (partitions with an open transaction only)",
            m.stable_offset_lag.clone(),
        );
        registry.register(
            "idempotent_producers",
            "Idempotent producers with state in the topic's partitions",
            m.producers.clone(),
        );
        registry.register(
            "cleaner_failures",
            "Cleaning passes of compacted partitions that failed (each such partition is retried after a backoff)",
            m.cleaner_failures.clone(),
        );
        registry.register(
            "cleaner_records_removed",
            "Records the cleaner dropped from compacted topics (superseded by a later record of their key)",
            m.cleaner_records_removed.clone(),
        );
        registry.register_with_unit(
            "cleaner_freed",
            "Bytes the cleaner's rewritten segments shrank by",
            Unit::Bytes,
            m.cleaner_bytes_freed.clone(),
        );
        registry.register(
            "cleaner_uncleanable_partitions",
            "Compacted partitions whose last cleaning failed, waiting out a backoff",
            m.cleaner_uncleanable.clone(),
        );
        registry.register(
            "cleaner_dirty_ratio",
            "Per compacted partition: the share of its cleanable bytes not yet cleaned, at the cleaner's last round",
            m.cleaner_dirty_ratio.clone(),
        );
        registry.register(
            "cleaner_last_cleaned_timestamp_seconds",
            "Per compacted partition: when its last cleaning pass ended well (Unix time; absent before one did)",
            m.cleaner_last_cleaned.clone(),
        );
        registry.register_with_unit(
            "cleaner_reclaimed",
            "Per compacted partition: bytes its cleanings freed since logd started",
            Unit::Bytes,
            m.cleaner_reclaimed.clone(),
        );
        registry.register(
            "duplicates_dropped",
            "Retried batches of idempotent producers answered as duplicates, not stored again",
            m.duplicates.clone(),
        );
        Metrics {
            registry,
            ..metrics
        }
    }

    /// The histogram fsyncs are timed into (for [`fsync::MeteredFs`]).
    pub(crate) fn fsync_histogram(&self) -> Histogram {
        self.fsync_latency.clone()
    }

    /// The engine the scraped metrics are computed from, once it is open.
    pub(crate) fn attach(&self, log: Log) {
        let _ = self.log.set(log);
    }

    /// The broker's request budget and connection states, reported at each scrape.
    pub(crate) fn attach_broker(&self, budget: Arc<RequestBudget>, stats: Arc<ConnectionStats>) {
        let _ = self.budget.set(budget);
        let _ = self.connections_now.set(stats);
    }

    /// The exposition text.
    /// Records produced and fetched over the wire since start, over every topic.
    pub(crate) fn traffic(&self) -> (u64, u64) {
        (
            self.produced_total.load(Ordering::Relaxed),
            self.fetched_total.load(Ordering::Relaxed),
        )
    }

    pub(crate) fn render(&self) -> String {
        let _one_at_a_time = self.rendering.lock();
        if let Some(budget) = self.budget.get() {
            self.budget_in_use.set(budget.in_use() as i64);
            self.budget_waiting.set(budget.waiting() as i64);
        }
        if let Some(stats) = self.connections_now.get() {
            for (state, count) in [
                ("idle", &stats.idle),
                ("reading", &stats.reading),
                ("handling", &stats.handling),
                ("writing", &stats.writing),
            ] {
                self.connection_states
                    .get_or_create(&vec![("state", state.to_owned())])
                    .set(count.load(Ordering::Relaxed) as i64);
            }
            self.sending
                .set(stats.sending_bytes.load(Ordering::Relaxed) as i64);
        }
        if let Some(log) = self.log.get() {
            self.refresh_groups(log);
            self.refresh_share_groups(log);
            self.refresh_dead_letters(log);
            self.refresh_producers(log);
            self.refresh_transactions(log);
            self.refresh_cleaner(log);
        }
        let mut out = String::new();
        encode(&mut out, &self.registry).expect("writing to a String does not fail");
        out
    }

    fn refresh_groups(&self, log: &Log) {
        self.consumer_lag.clear();
        self.oldest_unconsumed.clear();
        let now = log.clock().now_ms();
        for group in log.list_groups() {
            let mut oldest: Option<i64> = None;
            let isolation = log.group_isolation(&group);
            for (topic, partition, committed) in log.offsets().group_offsets(&group) {
                let Some(lag) = partition_lag(log, isolation, &topic, partition, committed.offset)
                else {
                    continue;
                };
                self.consumer_lag
                    .get_or_create(&vec![
                        ("group", group.clone()),
                        ("topic", topic.clone()),
                        ("partition", partition.to_string()),
                    ])
                    .set(lag.records);
                if let Some(ts) = lag.oldest_unconsumed {
                    oldest = Some(oldest.map_or(ts, |o: i64| o.min(ts)));
                }
            }
            self.oldest_unconsumed
                .get_or_create(&vec![("group", group)])
                .set(age_seconds(now, oldest));
        }
    }

    fn refresh_share_groups(&self, log: &Log) {
        self.share_records.clear();
        self.share_lag.clear();
        self.share_members.clear();
        for group in log.share_group_ids() {
            let members = log.share_group_members(&group).map_or(0, |(_, m)| m.len());
            self.share_members
                .get_or_create(&vec![("group", group.clone())])
                .set(members as i64);
            // The engine counts since it opened; the counters catch up to it.
            let counts = log.share_counters(&group);
            let group_labels = |reason: Option<&str>| {
                let mut labels = vec![("group", group.clone())];
                if let Some(reason) = reason {
                    labels.push(("reason", reason.to_owned()));
                }
                labels
            };
            // One family guard at a time: a family's guard held while it adds a series
            // would wait for itself.
            for (family, reason, total) in [
                (&self.share_redelivered, None, counts.redelivered),
                (&self.share_archived, Some("rejected"), counts.rejected),
                (
                    &self.share_archived,
                    Some("delivery_limit"),
                    counts.at_delivery_limit,
                ),
                (&self.share_dead_lettered, None, counts.dead_lettered),
            ] {
                let counter = family.get_or_create(&group_labels(reason));
                counter.inc_by(total.saturating_sub(counter.get()));
            }
            for p in log.share_partitions(&group) {
                let labels = |extra: Option<&str>| {
                    let mut labels = vec![
                        ("group", group.clone()),
                        ("topic", p.topic.clone()),
                        ("partition", p.partition.to_string()),
                    ];
                    if let Some(state) = extra {
                        labels.push(("state", state.to_owned()));
                    }
                    labels
                };
                for (state, count) in ["available", "acquired", "acknowledged", "archived"]
                    .iter()
                    .zip(p.counts)
                {
                    self.share_records
                        .get_or_create(&labels(Some(state)))
                        .set(count as i64);
                }
                if let Ok(log) = log.partition(&p.topic, p.partition)
                    && let Some(lag) = p.lag(log.high_watermark().0)
                {
                    self.share_lag.get_or_create(&labels(None)).set(lag);
                }
            }
        }
    }

    fn refresh_dead_letters(&self, log: &Log) {
        self.dlq_depth.clear();
        self.dlq_oldest.clear();
        let now = log.clock().now_ms();
        for topic in log.list_topics() {
            if !topic.ends_with(DLQ_SUFFIX) {
                continue;
            }
            let (mut depth, mut oldest) = (0, None);
            // Letters replayed out of order, after the position: no longer pending.
            let replayed_places: std::collections::BTreeSet<(u32, i64)> =
                logd_retry::DeadLetters::new(&mut logd_retry::Embedded::new(log.clone()), &topic)
                    .replays()
                    .unwrap_or_default()
                    .into_iter()
                    .map(|r| (r.partition, r.offset))
                    .collect();
            for partition in 0..log.partition_count(&topic).unwrap_or(0) {
                let Ok(p) = log.partition(&topic, partition) else {
                    continue;
                };
                let start = p.log_start_offset().0;
                let replayed = log
                    .offsets()
                    .fetch(DLQ_REPLAY_GROUP, &topic, partition as i32)
                    .map_or(start, |c| c.offset.max(start));
                let end = p.high_watermark().0;
                let out_of_order = replayed_places
                    .range((partition, replayed)..(partition, end))
                    .count() as i64;
                depth += (end - replayed - out_of_order).max(0);
                if replayed < end
                    && let Ok(Some(ts)) = p.timestamp_of(Offset(replayed))
                {
                    oldest = Some(oldest.map_or(ts, |o: i64| o.min(ts)));
                }
            }
            let labels = vec![("topic", topic)];
            self.dlq_depth.get_or_create(&labels).set(depth);
            self.dlq_oldest
                .get_or_create(&labels)
                .set(age_seconds(now, oldest));
        }
    }
}

impl Metrics {
    fn refresh_producers(&self, log: &Log) {
        self.producers.clear();
        for topic in log.list_topics() {
            let Ok(described) = log.describe_topic(&topic) else {
                continue;
            };
            let labels = topic_labels(&topic);
            let tracked: usize = described.partitions.iter().map(|p| p.producers.len()).sum();
            self.producers.get_or_create(&labels).set(tracked as i64);
            // The engine counts since it opened; the counter catches up to it.
            let counter = self.duplicates.get_or_create(&labels);
            counter.inc_by(described.duplicates_dropped.saturating_sub(counter.get()));
        }
    }
}

impl Metrics {
    fn refresh_cleaner(&self, log: &Log) {
        let stats = log.cleaner_stats();
        // The engine counts since it opened; the counters catch up to it.
        for (counter, total) in [
            (&self.cleaner_failures, stats.failures),
            (&self.cleaner_records_removed, stats.records_removed),
            (&self.cleaner_bytes_freed, stats.bytes_freed),
        ] {
            counter.inc_by(total.saturating_sub(counter.get()));
        }
        self.cleaner_uncleanable
            .set(stats.uncleanable_partitions as i64);
        self.cleaner_dirty_ratio.clear();
        self.cleaner_last_cleaned.clear();
        self.cleaner_reclaimed.clear();
        for p in log.cleaner_partitions() {
            let labels = vec![("topic", p.topic), ("partition", p.partition.to_string())];
            self.cleaner_dirty_ratio
                .get_or_create(&labels)
                .set(p.dirty_ratio);
            if let Some(ms) = p.last_cleaned_ms {
                self.cleaner_last_cleaned
                    .get_or_create(&labels)
                    .set(ms as f64 / 1000.0);
            }
            self.cleaner_reclaimed
                .get_or_create(&labels)
                .set(p.bytes_reclaimed as i64);
        }
    }
}

fn age_seconds(now_ms: i64, oldest_ms: Option<i64>) -> f64 {
    oldest_ms.map_or(0.0, |ts| (now_ms - ts).max(0) as f64 / 1000.0)
}

fn topic_labels(topic: &str) -> Labels {
    vec![("topic", topic.to_owned())]
}

impl BrokerObserver for Metrics {
    fn connection_opened(&self) {
        self.connections.inc();
    }

    fn connection_closed(&self) {
        self.connections.dec();
    }

    fn share_sessions(&self, open: usize) {
        self.share_sessions.set(open as i64);
    }

    fn connection_refused(&self, reason: &str) {
        self.refused
            .get_or_create(&vec![("reason", reason.to_owned())])
            .inc();
    }

    fn batches_normalized(&self, topic: &str, batches: u64) {
        self.normalized
            .get_or_create(&topic_labels(topic))
            .inc_by(batches);
    }

    fn accept_failed(&self) {
        self.accept_failures.inc();
    }

    fn authentication_failed(&self, listener: &str, mechanism: &str) {
        self.authentication_failures
            .get_or_create(&vec![
                ("listener", listener.to_owned()),
                ("mechanism", mechanism.to_owned()),
            ])
            .inc();
    }

    fn authorization_denied(&self, operation: &str, resource_type: &str) {
        self.authorization_denied
            .get_or_create(&vec![
                ("operation", operation.to_owned()),
                ("resource_type", resource_type.to_owned()),
            ])
            .inc();
    }

    fn produced(&self, topic: &str, records: u64, bytes: u64) {
        self.produced_total.fetch_add(records, Ordering::Relaxed);
        let labels = topic_labels(topic);
        self.records_in.get_or_create(&labels).inc_by(records);
        self.bytes_in.get_or_create(&labels).inc_by(bytes);
    }

    fn fetched(&self, topic: &str, records: u64, bytes: u64) {
        self.fetched_total.fetch_add(records, Ordering::Relaxed);
        let labels = topic_labels(topic);
        self.records_out.get_or_create(&labels).inc_by(records);
        self.bytes_out.get_or_create(&labels).inc_by(bytes);
    }

    fn throttled(&self, api: ApiKey, wait: Duration) {
        self.throttle_seconds
            .get_or_create(&vec![("api", format!("{api:?}"))])
            .inc_by(wait.as_secs_f64());
    }

    fn request_served(&self, api: ApiKey, elapsed: Duration) {
        self.request_latency
            .get_or_create(&vec![("api", format!("{api:?}"))])
            .observe(elapsed.as_secs_f64());
    }
}
