//! Kafka 4.4's group configs (`GroupConfig`): each name, type, default, the name of the broker
//! config it falls back to, and the checks Kafka makes of a value, with Kafka's messages, so
//! that an admin client gets on logd the answer it gets from Kafka. A value is stored as
//! Kafka shows it after parsing: trimmed, booleans in lower case, list items trimmed.
//!
//! Two kinds of bounds, checked in Kafka's order: the config's own (`Value must be at least
//! 1000`), then the broker's (`must be in the range 15000 to 60000 inclusive`, from
//! `group.share.min.record.lock.duration.ms` and its siblings, here at Kafka's defaults). With
//! those bounds a session timeout is always above its heartbeat interval, Kafka's last check.

/// A group config's type, as DescribeConfigs (v3+) reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupConfigType {
    /// `true` or `false`.
    Boolean,
    /// Text.
    String,
    /// A 32-bit integer.
    Int,
    /// A 64-bit integer.
    Long,
    /// Comma-separated text.
    List,
}

/// The broker's bound on an integer config, past the config's own minimum.
#[derive(Debug, Clone, Copy)]
enum Bound {
    None,
    Range(i64, i64),
    AtMost(i64),
    AtLeast(i64),
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Int {
        at_least: i64,
        bound: Bound,
    },
    Long {
        at_least: i64,
    },
    Boolean,
    List,
    /// Any text (Kafka checks none, e.g. of the dead-letter topic's name).
    Text,
    /// One of these, exactly.
    OneOf(&'static [&'static str]),
    /// `latest`, `earliest` or `by_duration:` and an ISO-8601 duration.
    AutoOffsetReset,
    /// A registered Streams task assignor (Kafka registers `sticky` only).
    StreamsAssignor,
}

/// One of Kafka's group configs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Def {
    pub name: &'static str,
    kind: Kind,
    pub default: &'static str,
    /// The broker config the group falls back to (DescribeConfigs' synonym).
    pub synonym: &'static str,
    /// Kafka hides internal configs from DescribeConfigs unless set on the group.
    pub internal: bool,
}

impl Def {
    pub fn config_type(&self) -> GroupConfigType {
        match self.kind {
            Kind::Int { .. } => GroupConfigType::Int,
            Kind::Long { .. } => GroupConfigType::Long,
            Kind::Boolean => GroupConfigType::Boolean,
            Kind::List => GroupConfigType::List,
            Kind::Text | Kind::OneOf(_) | Kind::AutoOffsetReset | Kind::StreamsAssignor => {
                GroupConfigType::String
            }
        }
    }

    /// The value as stored and shown, or Kafka's message for why it is refused.
    pub fn parse(&self, raw: &str) -> Result<String, String> {
        let name = self.name;
        let value = raw.trim();
        let invalid = |shown: &str, why: &str| {
            format!("Invalid value {shown} for configuration {name}: {why}")
        };
        match self.kind {
            Kind::Int { at_least, bound } => {
                let n: i32 = value
                    .parse()
                    .map_err(|_| invalid(raw, "Not a number of type INT"))?;
                let n = i64::from(n);
                if n < at_least {
                    return Err(invalid(
                        value,
                        &format!("Value must be at least {at_least}"),
                    ));
                }
                match bound {
                    Bound::Range(low, high) if n < low || n > high => Err(format!(
                        "{name} must be in the range {low} to {high} inclusive."
                    )),
                    Bound::AtMost(high) if n > high => {
                        Err(format!("{name} must be less than or equal to {high}"))
                    }
                    Bound::AtLeast(low) if n < low => {
                        Err(format!("{name} must be greater than or equal to {low}"))
                    }
                    _ => Ok(n.to_string()),
                }
            }
            Kind::Long { at_least } => {
                let n: i64 = value
                    .parse()
                    .map_err(|_| invalid(raw, "Not a number of type LONG"))?;
                if n < at_least {
                    return Err(invalid(
                        value,
                        &format!("Value must be at least {at_least}"),
                    ));
                }
                Ok(n.to_string())
            }
            Kind::Boolean => match value.to_ascii_lowercase().as_str() {
                b @ ("true" | "false") => Ok(b.to_owned()),
                _ => Err(invalid(raw, "Expected value to be either true or false")),
            },
            Kind::List => {
                let items: Vec<&str> = value.split(',').map(str::trim).collect();
                if value.is_empty() {
                    return Ok(String::new());
                }
                if items.iter().any(|item| item.is_empty()) {
                    return Err(format!("Configuration '{name}' values must not be empty."));
                }
                Ok(items.join(","))
            }
            Kind::Text => Ok(value.to_owned()),
            Kind::OneOf(allowed) if allowed.contains(&value) => Ok(value.to_owned()),
            Kind::OneOf(allowed) => Err(invalid(
                value,
                &format!("String must be one of: {}", allowed.join(", ")),
            )),
            Kind::AutoOffsetReset => match value {
                "latest" | "earliest" => Ok(value.to_owned()),
                _ if value
                    .strip_prefix("by_duration:")
                    .and_then(duration_ms)
                    .is_some() =>
                {
                    Ok(value.to_owned())
                }
                _ => Err(invalid(
                    value,
                    &format!(
                        "Invalid value `{value}` for configuration {name}. The value must be \
                         either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."
                    ),
                )),
            },
            Kind::StreamsAssignor if value == "sticky" => Ok(value.to_owned()),
            Kind::StreamsAssignor => Err(format!(
                "{name} '{value}' is not a registered task assignor. Registered assignors are: \
                 [sticky]."
            )),
        }
    }
}

/// An ISO-8601 duration as Java's `Duration.parse` reads it (`PnDTnHnMn.nS`, any letter case,
/// each number optionally signed), in milliseconds; `None` when malformed or negative, which
/// `share.auto.offset.reset` refuses.
pub(crate) fn duration_ms(text: &str) -> Option<u64> {
    let upper = text.to_ascii_uppercase();
    let (negative, rest) = match upper.as_bytes().first()? {
        b'-' => (true, &upper[1..]),
        b'+' => (false, &upper[1..]),
        _ => (false, &upper[..]),
    };
    let rest = rest.strip_prefix('P')?;
    let (days, time) = match rest.split_once('T') {
        Some((days, time)) if !time.is_empty() => (days, Some(time)),
        Some(_) => return None,
        None => (rest, None),
    };
    let mut total_ms: f64 = 0.0;
    let mut parts = 0;
    let mut take = |section: &str, units: &[(char, f64)]| -> Option<()> {
        let mut left = section;
        for &(unit, ms) in units {
            if let Some(at) = left.find(unit) {
                let number = &left[..at];
                let fraction_ok = unit == 'S';
                let valid = !number.is_empty()
                    && number
                        .trim_start_matches(['+', '-'])
                        .chars()
                        .all(|c| c.is_ascii_digit() || (fraction_ok && (c == '.' || c == ',')))
                    && number
                        .trim_start_matches(['+', '-'])
                        .starts_with(|c: char| c.is_ascii_digit());
                if !valid {
                    return None;
                }
                total_ms += number.replace(',', ".").parse::<f64>().ok()? * ms;
                parts += 1;
                left = &left[at + 1..];
            }
        }
        left.is_empty().then_some(())
    };
    take(days, &[('D', 86_400_000.0)])?;
    if let Some(time) = time {
        take(time, &[('H', 3_600_000.0), ('M', 60_000.0), ('S', 1_000.0)])?;
    }
    if parts == 0 {
        return None;
    }
    let total_ms = if negative { -total_ms } else { total_ms };
    (total_ms >= 0.0 && total_ms < u64::MAX as f64).then_some(total_ms as u64)
}

const fn int(
    name: &'static str,
    at_least: i64,
    bound: Bound,
    default: &'static str,
    synonym: &'static str,
) -> Def {
    Def {
        name,
        kind: Kind::Int { at_least, bound },
        default,
        synonym,
        internal: false,
    }
}

const fn other(
    name: &'static str,
    kind: Kind,
    default: &'static str,
    synonym: &'static str,
) -> Def {
    Def {
        name,
        kind,
        default,
        synonym,
        internal: false,
    }
}

const fn internal(def: Def) -> Def {
    Def {
        internal: true,
        ..def
    }
}

const SESSION: Bound = Bound::Range(45_000, 60_000);
const HEARTBEAT: Bound = Bound::Range(5_000, 15_000);
const ASSIGNMENT: Bound = Bound::Range(0, 15_000);

/// Every group config of Kafka 4.4, in Kafka's order, then logd's own.
pub(crate) const DEFS: &[Def] = &[
    int(
        "consumer.session.timeout.ms",
        1,
        SESSION,
        "45000",
        "group.consumer.session.timeout.ms",
    ),
    int(
        "consumer.heartbeat.interval.ms",
        1,
        HEARTBEAT,
        "5000",
        "group.consumer.heartbeat.interval.ms",
    ),
    int(
        "consumer.assignment.interval.ms",
        0,
        ASSIGNMENT,
        "1000",
        "group.consumer.assignment.interval.ms",
    ),
    internal(other(
        "consumer.assignor.offload.enable",
        Kind::Boolean,
        "true",
        "group.consumer.assignor.offload.enable",
    )),
    int(
        "share.session.timeout.ms",
        1,
        SESSION,
        "45000",
        "group.share.session.timeout.ms",
    ),
    int(
        "share.heartbeat.interval.ms",
        1,
        HEARTBEAT,
        "5000",
        "group.share.heartbeat.interval.ms",
    ),
    int(
        "share.record.lock.duration.ms",
        1000,
        Bound::Range(15_000, 60_000),
        "30000",
        "group.share.record.lock.duration.ms",
    ),
    int(
        "share.delivery.count.limit",
        2,
        Bound::Range(2, 10),
        "5",
        "group.share.delivery.count.limit",
    ),
    int(
        "share.partition.max.record.locks",
        100,
        Bound::Range(100, 4_000),
        "2000",
        "group.share.partition.max.record.locks",
    ),
    other(
        "share.auto.offset.reset",
        Kind::AutoOffsetReset,
        "latest",
        "share.auto.offset.reset",
    ),
    other(
        "share.isolation.level",
        Kind::OneOf(&["read_committed", "read_uncommitted"]),
        "read_uncommitted",
        "share.isolation.level",
    ),
    other(
        "share.renew.acknowledge.enable",
        Kind::Boolean,
        "true",
        "share.renew.acknowledge.enable",
    ),
    int(
        "share.assignment.interval.ms",
        0,
        ASSIGNMENT,
        "1000",
        "group.share.assignment.interval.ms",
    ),
    internal(other(
        "share.assignor.offload.enable",
        Kind::Boolean,
        "true",
        "group.share.assignor.offload.enable",
    )),
    int(
        "streams.session.timeout.ms",
        1,
        SESSION,
        "45000",
        "group.streams.session.timeout.ms",
    ),
    int(
        "streams.heartbeat.interval.ms",
        1,
        HEARTBEAT,
        "5000",
        "group.streams.heartbeat.interval.ms",
    ),
    int(
        "streams.num.standby.replicas",
        0,
        Bound::AtMost(2),
        "0",
        "group.streams.num.standby.replicas",
    ),
    int(
        "streams.initial.rebalance.delay.ms",
        0,
        Bound::None,
        "3000",
        "group.streams.initial.rebalance.delay.ms",
    ),
    int(
        "streams.assignment.interval.ms",
        0,
        ASSIGNMENT,
        "1000",
        "group.streams.assignment.interval.ms",
    ),
    internal(other(
        "streams.assignor.offload.enable",
        Kind::Boolean,
        "true",
        "group.streams.assignor.offload.enable",
    )),
    internal(int(
        "streams.task.offset.interval.ms",
        1,
        Bound::AtLeast(15_000),
        "60000",
        "group.streams.task.offset.interval.ms",
    )),
    internal(int(
        "streams.num.warmup.replicas",
        0,
        Bound::AtMost(20),
        "2",
        "group.streams.num.warmup.replicas",
    )),
    other(
        "streams.rack.aware.assignment.tags",
        Kind::List,
        "",
        "group.streams.rack.aware.assignment.tags",
    ),
    internal(other(
        "streams.acceptable.recovery.lag",
        Kind::Long { at_least: 0 },
        "10000",
        "group.streams.acceptable.recovery.lag",
    )),
    other(
        "streams.assignor.name",
        Kind::StreamsAssignor,
        "sticky",
        "group.streams.assignors",
    ),
    other(
        "errors.deadletterqueue.topic.name",
        Kind::Text,
        "",
        "errors.deadletterqueue.topic.name",
    ),
    other(
        "errors.deadletterqueue.copy.record.enable",
        Kind::Boolean,
        "false",
        "errors.deadletterqueue.copy.record.enable",
    ),
    // logd's own, named so they cannot clash with Kafka's, hidden as Kafka's internal configs
    // are until set: a share group's redelivery backoff (0: at once, as Kafka).
    internal(int(
        "logd.share.redelivery.backoff.ms",
        0,
        Bound::None,
        "0",
        "logd.share.redelivery.backoff.ms",
    )),
    internal(int(
        "logd.share.redelivery.backoff.max.ms",
        0,
        Bound::None,
        "60000",
        "logd.share.redelivery.backoff.max.ms",
    )),
    // How the backoff is spread (a retry policy's jitter): `added` (up to a quarter more),
    // `none`, `full` (uniform up to it), `equal` (uniform in its upper half).
    internal(other(
        "logd.share.redelivery.backoff.jitter",
        Kind::OneOf(&["added", "none", "full", "equal"]),
        "added",
        "logd.share.redelivery.backoff.jitter",
    )),
];

/// The definition of `name`, if Kafka (or logd) has such a group config.
pub(crate) fn def(name: &str) -> Option<&'static Def> {
    DEFS.iter().find(|d| d.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(name: &str, raw: &str) -> Result<String, String> {
        def(name).unwrap().parse(raw)
    }

    #[test]
    fn values_and_refusals_are_kafkas() {
        // Each answer as Apache Kafka 4.4 gave it to the Java admin.
        for (name, raw, expected) in [
            ("share.delivery.count.limit", " 3 ", Ok("3")),
            (
                "share.delivery.count.limit",
                "1",
                Err(
                    "Invalid value 1 for configuration share.delivery.count.limit: Value must be at least 2",
                ),
            ),
            (
                "share.delivery.count.limit",
                "11",
                Err("share.delivery.count.limit must be in the range 2 to 10 inclusive."),
            ),
            (
                "share.delivery.count.limit",
                "",
                Err(
                    "Invalid value  for configuration share.delivery.count.limit: Not a number of type INT",
                ),
            ),
            (
                "share.record.lock.duration.ms",
                "999",
                Err(
                    "Invalid value 999 for configuration share.record.lock.duration.ms: Value must be at least 1000",
                ),
            ),
            (
                "share.record.lock.duration.ms",
                "3700000",
                Err("share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive."),
            ),
            (
                "consumer.heartbeat.interval.ms",
                "abc",
                Err(
                    "Invalid value abc for configuration consumer.heartbeat.interval.ms: Not a number of type INT",
                ),
            ),
            (
                "consumer.heartbeat.interval.ms",
                "99999999999",
                Err(
                    "Invalid value 99999999999 for configuration consumer.heartbeat.interval.ms: Not a number of type INT",
                ),
            ),
            (
                "streams.num.standby.replicas",
                "3",
                Err("streams.num.standby.replicas must be less than or equal to 2"),
            ),
            (
                "streams.task.offset.interval.ms",
                "5",
                Err("streams.task.offset.interval.ms must be greater than or equal to 15000"),
            ),
            (
                "streams.acceptable.recovery.lag",
                "99999999999",
                Ok("99999999999"),
            ),
            (
                "streams.acceptable.recovery.lag",
                "-1",
                Err(
                    "Invalid value -1 for configuration streams.acceptable.recovery.lag: Value must be at least 0",
                ),
            ),
            ("share.auto.offset.reset", " latest", Ok("latest")),
            (
                "share.auto.offset.reset",
                "by_duration:PT1H",
                Ok("by_duration:PT1H"),
            ),
            (
                "share.auto.offset.reset",
                "by_duration:P1D",
                Ok("by_duration:P1D"),
            ),
            (
                "share.auto.offset.reset",
                "by_duration:PT0S",
                Ok("by_duration:PT0S"),
            ),
            (
                "share.auto.offset.reset",
                "EARLIEST",
                Err(
                    "Invalid value EARLIEST for configuration share.auto.offset.reset: Invalid value `EARLIEST` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.",
                ),
            ),
            (
                "share.auto.offset.reset",
                "by_duration:-PT1H",
                Err(
                    "Invalid value by_duration:-PT1H for configuration share.auto.offset.reset: Invalid value `by_duration:-PT1H` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.",
                ),
            ),
            (
                "share.isolation.level",
                " read_committed",
                Ok("read_committed"),
            ),
            (
                "share.isolation.level",
                "READ_COMMITTED",
                Err(
                    "Invalid value READ_COMMITTED for configuration share.isolation.level: String must be one of: read_committed, read_uncommitted",
                ),
            ),
            (
                "errors.deadletterqueue.copy.record.enable",
                "TRUE",
                Ok("true"),
            ),
            (
                "errors.deadletterqueue.copy.record.enable",
                "yes",
                Err(
                    "Invalid value yes for configuration errors.deadletterqueue.copy.record.enable: Expected value to be either true or false",
                ),
            ),
            (
                "errors.deadletterqueue.topic.name",
                "bad topic!",
                Ok("bad topic!"),
            ),
            ("streams.rack.aware.assignment.tags", " a , b ", Ok("a,b")),
            (
                "streams.rack.aware.assignment.tags",
                "a,,b",
                Err("Configuration 'streams.rack.aware.assignment.tags' values must not be empty."),
            ),
            (
                "streams.assignor.name",
                "foo",
                Err(
                    "streams.assignor.name 'foo' is not a registered task assignor. Registered assignors are: [sticky].",
                ),
            ),
        ] {
            assert_eq!(
                parse(name, raw),
                expected.map(str::to_owned).map_err(str::to_owned),
                "{name}={raw:?}"
            );
        }
    }

    #[test]
    fn every_default_passes_its_own_checks() {
        for d in DEFS {
            assert_eq!(d.parse(d.default).as_deref(), Ok(d.default), "{}", d.name);
        }
    }

    #[test]
    fn durations_read_as_java_reads_them() {
        for (text, ms) in [
            ("PT1H", Some(3_600_000)),
            ("P1D", Some(86_400_000)),
            ("P1DT2H3M4.5S", Some(93_784_500)),
            ("pt15m", Some(900_000)),
            ("PT0S", Some(0)),
            ("PT-1H", None),
            ("-PT1H", None),
            ("-PT-1H", Some(3_600_000)),
            ("P", None),
            ("PT", None),
            ("P1DT", None),
            ("PT1", None),
            ("PT1X", None),
            ("PT1M1H", None),
            ("1H", None),
            ("", None),
            ("PT.5S", None),
        ] {
            assert_eq!(duration_ms(text), ms, "{text}");
        }
    }
}
