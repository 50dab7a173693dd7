//! Topic configs under Kafka's names: every topic-level config Kafka 4.4 defines, read from a
//! [`TopicConfig`] (with its value, whether it was set on the topic, its type and Kafka's
//! default) and set on one from a name and value, with Kafka's validators. Those that mean
//! something on one node are honoured (see `docs/kafka-apis.md`); those about replication,
//! tiered storage or file handling are kept and reported as given but change nothing. Unknown
//! names are INVALID_CONFIG.

use std::time::Duration;

use logd::{CleanupPolicy, CompressionType, FsyncPolicy, TimestampType, TopicConfig};

use crate::codes;

/// Kafka's config types (DescribeConfigs v3+).
pub(crate) const TYPE_BOOLEAN: i8 = 1;
const TYPE_STRING: i8 = 2;
const TYPE_INT: i8 = 3;
const TYPE_LONG: i8 = 5;
const TYPE_DOUBLE: i8 = 6;
const TYPE_LIST: i8 = 7;

/// Kafka's "no bound" for its long configs.
const UNBOUNDED: i64 = i64::MAX;

/// One topic config as Kafka names it: name, value, whether it differs from the broker's
/// default for new topics, and its type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigEntry {
    /// Kafka's name (`retention.ms`).
    pub name: &'static str,
    /// The value as Kafka writes it (`-1` for none, `9223372036854775807` for no bound).
    pub value: String,
    /// Whether it differs from what a topic created now with no configs would have.
    pub set: bool,
    /// Kafka's config type code (DescribeConfigs' `config_type`).
    pub kind: i8,
}

/// What an inert config accepts (Kafka's validator for it).
#[derive(Clone, Copy)]
enum Accepts {
    Bool,
    /// A number in this inclusive range.
    Int(i64, i64),
    /// gzip's level: 1 to 9, or -1.
    GzipLevel,
    /// Kafka's `[partitionId]:[brokerId],...` or `*`, or empty.
    ThrottledReplicas,
}

/// The configs logd accepts and reports as given without their changing anything on one node:
/// (name, type, Kafka 4.4's default, what it accepts).
const INERT: &[(&str, i8, &str, Accepts)] = &[
    (
        "segment.jitter.ms",
        TYPE_LONG,
        "0",
        Accepts::Int(0, UNBOUNDED),
    ),
    (
        "segment.index.bytes",
        TYPE_INT,
        "10485760",
        Accepts::Int(4, i32::MAX as i64),
    ),
    (
        "index.interval.bytes",
        TYPE_INT,
        "4096",
        Accepts::Int(0, i32::MAX as i64),
    ),
    (
        "file.delete.delay.ms",
        TYPE_LONG,
        "60000",
        Accepts::Int(0, UNBOUNDED),
    ),
    (
        "max.decompressed.message.bytes",
        TYPE_INT,
        "2147483639",
        Accepts::Int(1, 2_147_483_639),
    ),
    (
        "unclean.leader.election.enable",
        TYPE_BOOLEAN,
        "false",
        Accepts::Bool,
    ),
    ("compression.gzip.level", TYPE_INT, "-1", Accepts::GzipLevel),
    ("compression.lz4.level", TYPE_INT, "9", Accepts::Int(1, 17)),
    (
        "compression.zstd.level",
        TYPE_INT,
        "3",
        Accepts::Int(-131_072, 22),
    ),
    ("preallocate", TYPE_BOOLEAN, "false", Accepts::Bool),
    (
        "leader.replication.throttled.replicas",
        TYPE_LIST,
        "",
        Accepts::ThrottledReplicas,
    ),
    (
        "follower.replication.throttled.replicas",
        TYPE_LIST,
        "",
        Accepts::ThrottledReplicas,
    ),
    (
        "remote.storage.enable",
        TYPE_BOOLEAN,
        "false",
        Accepts::Bool,
    ),
    (
        "local.retention.ms",
        TYPE_LONG,
        "-2",
        Accepts::Int(-2, UNBOUNDED),
    ),
    (
        "local.retention.bytes",
        TYPE_LONG,
        "-2",
        Accepts::Int(-2, UNBOUNDED),
    ),
    (
        "remote.log.copy.disable",
        TYPE_BOOLEAN,
        "false",
        Accepts::Bool,
    ),
    (
        "remote.copy.lag.ms",
        TYPE_LONG,
        "0",
        Accepts::Int(-1, UNBOUNDED),
    ),
    (
        "remote.copy.lag.bytes",
        TYPE_LONG,
        "-1",
        Accepts::Int(-1, UNBOUNDED),
    ),
    (
        "remote.log.delete.on.disable",
        TYPE_BOOLEAN,
        "false",
        Accepts::Bool,
    ),
    (
        "errors.deadletterqueue.group.enable",
        TYPE_BOOLEAN,
        "false",
        Accepts::Bool,
    ),
];

/// `flush.messages` and `flush.ms` as logd's fsync policy reads them: every append synced is
/// a flush per message; an interval is `flush.ms`; never is neither.
fn flush_pair(fsync: FsyncPolicy) -> (i64, i64) {
    match fsync {
        FsyncPolicy::Always => (1, UNBOUNDED),
        FsyncPolicy::Interval(_) => (
            UNBOUNDED,
            fsync.interval_ms().map_or(UNBOUNDED, |ms| ms as i64),
        ),
        FsyncPolicy::Never => (UNBOUNDED, UNBOUNDED),
    }
}

/// The fsync policy that keeps Kafka's promise for `flush.messages` and `flush.ms`: any bound
/// on messages syncs every append (logd has no count-based sync, and every append is the
/// stricter promise), a bound on time is an interval, neither is never.
fn fsync_for(messages: i64, ms: i64) -> FsyncPolicy {
    if messages < UNBOUNDED || ms == 0 {
        FsyncPolicy::Always
    } else if ms < UNBOUNDED {
        FsyncPolicy::Interval(Duration::from_millis(ms as u64))
    } else {
        FsyncPolicy::Never
    }
}

/// Every topic config of `config` under Kafka's names, `set` where it differs from `default`:
/// the one mapping of `TopicConfig` to Kafka's names, for DescribeConfigs, CreateTopics' answer
/// and the console.
pub fn topic_configs(config: &TopicConfig, default: &TopicConfig) -> Vec<ConfigEntry> {
    let ms = |v: Option<i64>| v.map_or("-1".to_owned(), |v| v.to_string());
    let bound = |v: Option<i64>| v.unwrap_or(UNBOUNDED).to_string();
    let entry = |name, value, set, kind| ConfigEntry {
        name,
        value,
        set,
        kind,
    };
    let (messages, flush_ms) = flush_pair(config.fsync);
    let (default_messages, default_flush_ms) = flush_pair(default.fsync);
    let mut entries = vec![
        entry(
            "cleanup.policy",
            config.cleanup_policy.as_str().into(),
            config.cleanup_policy != default.cleanup_policy,
            TYPE_LIST,
        ),
        entry(
            "compression.type",
            config.compression.as_str().into(),
            config.compression != default.compression,
            TYPE_STRING,
        ),
        entry(
            "min.cleanable.dirty.ratio",
            config.min_cleanable_dirty_ratio.to_string(),
            config.min_cleanable_dirty_ratio != default.min_cleanable_dirty_ratio,
            TYPE_DOUBLE,
        ),
        entry(
            "min.compaction.lag.ms",
            config.min_compaction_lag_ms.to_string(),
            config.min_compaction_lag_ms != default.min_compaction_lag_ms,
            TYPE_LONG,
        ),
        entry(
            "max.compaction.lag.ms",
            bound(config.max_compaction_lag_ms),
            config.max_compaction_lag_ms != default.max_compaction_lag_ms,
            TYPE_LONG,
        ),
        entry(
            "delete.retention.ms",
            config.delete_retention_ms.to_string(),
            config.delete_retention_ms != default.delete_retention_ms,
            TYPE_LONG,
        ),
        entry(
            "retention.ms",
            ms(config.retention_ms),
            config.retention_ms != default.retention_ms,
            TYPE_LONG,
        ),
        entry(
            "retention.bytes",
            config
                .retention_bytes
                .map_or("-1".to_owned(), |b| b.to_string()),
            config.retention_bytes != default.retention_bytes,
            TYPE_LONG,
        ),
        entry(
            "segment.bytes",
            config.segment_bytes.to_string(),
            config.segment_bytes != default.segment_bytes,
            TYPE_INT,
        ),
        entry(
            "segment.ms",
            ms(config.segment_ms),
            config.segment_ms != default.segment_ms,
            TYPE_LONG,
        ),
        entry(
            "max.message.bytes",
            config.max_batch_bytes.to_string(),
            config.max_batch_bytes != default.max_batch_bytes,
            TYPE_INT,
        ),
        entry(
            "message.timestamp.type",
            config.timestamp_type.as_str().into(),
            config.timestamp_type != default.timestamp_type,
            TYPE_STRING,
        ),
        entry(
            "message.timestamp.before.max.ms",
            bound(config.timestamp_before_max_ms),
            config.timestamp_before_max_ms != default.timestamp_before_max_ms,
            TYPE_LONG,
        ),
        entry(
            "message.timestamp.after.max.ms",
            bound(config.timestamp_after_max_ms),
            config.timestamp_after_max_ms != default.timestamp_after_max_ms,
            TYPE_LONG,
        ),
        entry(
            "min.insync.replicas",
            config.min_insync_replicas.to_string(),
            config.min_insync_replicas != default.min_insync_replicas,
            TYPE_INT,
        ),
        entry(
            "flush.messages",
            messages.to_string(),
            messages != default_messages,
            TYPE_LONG,
        ),
        entry(
            "flush.ms",
            flush_ms.to_string(),
            flush_ms != default_flush_ms,
            TYPE_LONG,
        ),
    ];
    for (name, kind, kafka_default, _) in INERT {
        let value = config.inert.get(*name);
        entries.push(entry(
            name,
            value.map_or_else(|| (*kafka_default).to_owned(), Clone::clone),
            value.is_some(),
            *kind,
        ));
    }
    entries
}

/// The value `name` has on a topic created with `default`, as [`topic_configs`] reports it
/// (what an IncrementalAlterConfigs DELETE goes back to).
pub(crate) fn default_value(default: &TopicConfig, name: &str) -> Option<String> {
    topic_configs(default, default)
        .into_iter()
        .find(|entry| entry.name == name)
        .map(|entry| entry.value)
}

/// Sets configs on `config` from Kafka names and values (`None`: the default's value), all or
/// none; `flush.messages` is applied before `flush.ms`, so the two together mean the same in
/// any order.
pub(crate) fn set_topic_configs<'a>(
    config: &mut TopicConfig,
    default: &TopicConfig,
    changes: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
) -> Result<(), (i16, String)> {
    let mut changes: Vec<(&str, Option<&str>)> = changes.into_iter().collect();
    changes.sort_by_key(|(name, _)| match *name {
        "flush.messages" => 1,
        "flush.ms" => 2,
        _ => 0,
    });
    for (name, value) in changes {
        match value {
            Some(value) => set_topic_config(config, name, value)?,
            None => {
                if INERT.iter().any(|(n, ..)| *n == name) {
                    config.inert.remove(name);
                } else {
                    let value = default_value(default, name).ok_or_else(|| unknown(name))?;
                    set_topic_config(config, name, &value)?;
                }
            }
        }
    }
    Ok(())
}

fn unknown(name: &str) -> (i16, String) {
    (
        codes::INVALID_CONFIG,
        format!("unsupported topic config {name}"),
    )
}

/// Sets one topic config from its Kafka name and value, or says why it cannot be.
fn set_topic_config(
    config: &mut TopicConfig,
    name: &str,
    value: &str,
) -> Result<(), (i16, String)> {
    let bad = || {
        (
            codes::INVALID_CONFIG,
            format!("invalid value {value:?} for {name}"),
        )
    };
    let number = || value.trim().parse::<i64>().map_err(|_| bad());
    let at_least = |min: i64| number().and_then(|n| if n >= min { Ok(n) } else { Err(bad()) });
    match name {
        "retention.ms" => config.retention_ms = Some(number()?).filter(|ms| *ms >= 0),
        "retention.bytes" => {
            config.retention_bytes = Some(number()?).filter(|b| *b >= 0).map(|b| b as u64)
        }
        "segment.bytes" => config.segment_bytes = number()?.try_into().map_err(|_| bad())?,
        "segment.ms" => config.segment_ms = Some(number()?),
        "max.message.bytes" => config.max_batch_bytes = number()?.try_into().map_err(|_| bad())?,
        "cleanup.policy" => config.cleanup_policy = CleanupPolicy::parse(value).ok_or_else(bad)?,
        "min.cleanable.dirty.ratio" => {
            config.min_cleanable_dirty_ratio = value
                .parse::<f64>()
                .ok()
                .filter(|r| (0.0..=1.0).contains(r))
                .ok_or_else(bad)?
        }
        "min.compaction.lag.ms" => config.min_compaction_lag_ms = at_least(0)?,
        "max.compaction.lag.ms" => {
            config.max_compaction_lag_ms = Some(at_least(1)?).filter(|ms| *ms != UNBOUNDED)
        }
        "delete.retention.ms" => config.delete_retention_ms = at_least(0)?,
        "message.timestamp.type" => {
            config.timestamp_type = TimestampType::parse(value).ok_or_else(bad)?
        }
        "message.timestamp.before.max.ms" => {
            config.timestamp_before_max_ms = Some(at_least(0)?).filter(|ms| *ms != UNBOUNDED)
        }
        "message.timestamp.after.max.ms" => {
            config.timestamp_after_max_ms = Some(at_least(0)?).filter(|ms| *ms != UNBOUNDED)
        }
        "min.insync.replicas" => {
            config.min_insync_replicas = at_least(1)?.try_into().map_err(|_| bad())?
        }
        "flush.messages" => {
            let (_, ms) = flush_pair(config.fsync);
            config.fsync = fsync_for(at_least(1)?, ms);
        }
        "flush.ms" => {
            let (messages, _) = flush_pair(config.fsync);
            config.fsync = fsync_for(messages, at_least(0)?);
        }
        "compression.type" => config.compression = CompressionType::parse(value).ok_or_else(bad)?,
        other => {
            let (name, _, _, accepts) = INERT
                .iter()
                .find(|(n, ..)| *n == other)
                .ok_or_else(|| unknown(other))?;
            let fine = match accepts {
                Accepts::Bool => {
                    matches!(value.trim().to_ascii_lowercase().as_str(), "true" | "false")
                }
                Accepts::Int(min, max) => number().is_ok_and(|n| (*min..=*max).contains(&n)),
                Accepts::GzipLevel => number().is_ok_and(|n| n == -1 || (1..=9).contains(&n)),
                Accepts::ThrottledReplicas => {
                    let value = value.trim();
                    value.is_empty()
                        || value == "*"
                        || value.split(',').all(|pair| {
                            pair.trim().split_once(':').is_some_and(|(p, b)| {
                                p.trim().parse::<u32>().is_ok() && b.trim().parse::<u32>().is_ok()
                            })
                        })
                }
            };
            if !fine {
                return Err(bad());
            }
            config.inert.insert((*name).into(), value.trim().into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(config: &mut TopicConfig, pairs: &[(&str, &str)]) -> Result<(), (i16, String)> {
        let default = TopicConfig::default();
        set_topic_configs(config, &default, pairs.iter().map(|(n, v)| (*n, Some(*v))))
    }

    #[test]
    fn every_kafka_topic_config_is_reported_once() {
        let configs = topic_configs(&TopicConfig::default(), &TopicConfig::default());
        let mut names: Vec<&str> = configs.iter().map(|c| c.name).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(names.len(), before, "no name twice");
        // Kafka 4.4's LogConfig.configNames(), less its one internal config.
        assert_eq!(names.len(), 37);
        assert!(
            configs.iter().all(|c| !c.set),
            "nothing set on a default topic"
        );
    }

    #[test]
    fn inert_configs_are_kept_as_given_and_validated_as_kafka_does() {
        let mut config = TopicConfig::default();
        set(
            &mut config,
            &[("preallocate", "true"), ("local.retention.ms", "-2")],
        )
        .unwrap();
        let reported = topic_configs(&config, &TopicConfig::default());
        let preallocate = reported.iter().find(|c| c.name == "preallocate").unwrap();
        assert_eq!(
            (preallocate.value.as_str(), preallocate.set),
            ("true", true)
        );
        for (name, value) in [
            ("preallocate", "yes"),
            ("local.retention.ms", "-3"),
            ("compression.gzip.level", "0"),
            ("compression.type", "brotli"),
            ("leader.replication.throttled.replicas", "0:x"),
            ("message.format.version", "3.0"),
        ] {
            let refused = set(&mut TopicConfig::default(), &[(name, value)]).unwrap_err();
            assert_eq!(refused.0, codes::INVALID_CONFIG, "{name}={value}");
        }
    }

    #[test]
    fn flush_configs_map_onto_the_fsync_policy_in_any_order() {
        for pairs in [
            [
                ("flush.ms", "1000"),
                ("flush.messages", "9223372036854775807"),
            ],
            [
                ("flush.messages", "9223372036854775807"),
                ("flush.ms", "1000"),
            ],
        ] {
            let mut config = TopicConfig::default();
            set(&mut config, &pairs).unwrap();
            assert_eq!(config.fsync, FsyncPolicy::Interval(Duration::from_secs(1)));
        }
        let mut config = TopicConfig {
            fsync: FsyncPolicy::Never,
            ..TopicConfig::default()
        };
        set(&mut config, &[("flush.messages", "1")]).unwrap();
        assert_eq!(config.fsync, FsyncPolicy::Always);
        set(&mut config, &[("flush.messages", "9223372036854775807")]).unwrap();
        assert_eq!(config.fsync, FsyncPolicy::Never);
    }
}
