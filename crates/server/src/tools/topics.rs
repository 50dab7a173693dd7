//! `logd topics create|list|describe|delete`.

use std::io::Write;

use anyhow::bail;
use clap::Subcommand;
use logd_protocol::partition_ranges::PartitionRanges;

use super::Bootstrap;

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct TopicsArgs {
    #[command(subcommand)]
    command: TopicsCommand,
    #[command(flatten)]
    bootstrap: Bootstrap,
}

#[derive(Debug, Clone, Subcommand)]
enum TopicsCommand {
    /// Create a topic.
    Create {
        /// Topic name.
        name: String,
        /// Partitions (default: the broker's).
        #[arg(long)]
        partitions: Option<i32>,
        /// Topic config, `key=value` (retention.ms, retention.bytes, segment.bytes, ...).
        #[arg(long = "config", value_name = "KEY=VALUE")]
        configs: Vec<String>,
    },
    /// List topics.
    List,
    /// Show a topic's partitions with their first and next offsets and size on disk, the
    /// configs set on it, and the idempotent producers each one tracks.
    Describe {
        /// Topic name.
        name: String,
    },
    /// Change a topic: more partitions, or configs (all or none of them change).
    Alter {
        /// Topic name.
        name: String,
        /// Grow the topic to this many partitions (never fewer: keys would move).
        #[arg(long)]
        partitions: Option<i32>,
        /// Set a config, `key=value` (retention.ms, retention.bytes, segment.bytes, ...).
        #[arg(long = "config", value_name = "KEY=VALUE")]
        configs: Vec<String>,
        /// Return a config to the broker's default.
        #[arg(long = "delete-config", value_name = "KEY")]
        delete_configs: Vec<String>,
    },
    /// Delete a topic and its data.
    Delete {
        /// Topic name.
        name: String,
    },
}

pub(crate) fn run(args: &TopicsArgs) -> anyhow::Result<()> {
    let mut client = args.bootstrap.connect()?;
    let mut out = std::io::stdout().lock();
    match &args.command {
        TopicsCommand::Create {
            name,
            partitions,
            configs,
        } => {
            client.create_topic(name, partitions.unwrap_or(-1), &key_values(configs)?)?;
            writeln!(out, "created topic {name}")?;
        }
        TopicsCommand::Alter {
            name,
            partitions,
            configs,
            delete_configs,
        } => {
            let set = key_values(configs)?;
            if partitions.is_none() && set.is_empty() && delete_configs.is_empty() {
                bail!("nothing to change: give --partitions, --config or --delete-config");
            }
            if let Some(count) = partitions {
                client.create_partitions(name, *count)?;
                writeln!(out, "topic {name} now has {count} partitions")?;
            }
            if !set.is_empty() || !delete_configs.is_empty() {
                client.alter_topic_configs(name, &set, delete_configs)?;
                writeln!(out, "topic {name}: configs altered")?;
            }
        }
        TopicsCommand::List => {
            let metadata = client.metadata(None, false)?;
            let mut names: Vec<String> = metadata
                .topics
                .iter()
                .filter_map(|t| t.name.as_ref().map(|n| n.0.to_string()))
                .collect();
            names.sort();
            for name in names {
                writeln!(out, "{name}")?;
            }
        }
        TopicsCommand::Describe { name } => {
            let partitions = client.partition_count(name, false)?;
            let sizes: std::collections::BTreeMap<i32, i64> =
                client.partition_sizes(name)?.into_iter().collect();
            writeln!(out, "topic {name}: {partitions} partitions")?;
            writeln!(out, "partition\tlog_start\tlog_end\tsize_bytes")?;
            let all: Vec<i32> = (0..partitions as i32).collect();
            for (p, offsets) in client.offsets_of(name, &all)? {
                let size = sizes.get(&p).map_or("-".to_owned(), i64::to_string);
                writeln!(out, "{p}\t{}\t{}\t{size}", offsets.earliest, offsets.latest)?;
            }
            // Some clusters' brokers do not describe configs (librdkafka's mock cluster among
            // them): the partitions above still stand.
            let configs = match client.topic_configs(name) {
                Ok(configs) => configs,
                Err(e) => {
                    writeln!(out, "configs: not available ({e})")?;
                    Vec::new()
                }
            };
            let set: Vec<String> = configs
                .iter()
                .filter(|c| c.set_on_topic)
                .map(|c| format!("{}={}", c.name, c.value.as_deref().unwrap_or("")))
                .collect();
            if !set.is_empty() {
                writeln!(out, "configs set on the topic: {}", set.join(" "))?;
            }
            let policy = configs.iter().find(|c| c.name == "cleanup.policy");
            if policy.is_some_and(|c| c.value.as_deref().is_some_and(|v| v.contains("compact"))) {
                // The first question every Kafka user asks of a compacted topic.
                writeln!(
                    out,
                    "compacted: the cleaner keeps each key's latest record in the sealed \
                     segments; the active segment (the last, still written to) is never cleaned"
                )?;
                write_cleaner_ranges(&mut out, client.partition_ranges(name))?;
            }
            let producers = client.producers(name)?;
            if !producers.is_empty() {
                writeln!(out, "active idempotent producers:")?;
                writeln!(
                    out,
                    "partition\tproducer_id\tepoch\tlast_sequence\tlast_timestamp"
                )?;
                for p in producers {
                    writeln!(
                        out,
                        "{}\t{}\t{}\t{}\t{}",
                        p.partition, p.producer_id, p.epoch, p.last_sequence, p.last_timestamp
                    )?;
                }
            }
        }
        TopicsCommand::Delete { name } => {
            client.delete_topic(name)?;
            writeln!(out, "deleted topic {name}")?;
        }
    }
    Ok(())
}

/// Each partition's offsets as the cleaner divides them (half-open ranges, `-` when empty),
/// or why they are not shown.
fn write_cleaner_ranges(
    out: &mut dyn std::io::Write,
    ranges: logd_client::Result<Option<Vec<PartitionRanges>>>,
) -> anyhow::Result<()> {
    let ranges = match ranges {
        Ok(Some(ranges)) => ranges,
        Ok(None) => {
            writeln!(
                out,
                "cleaner ranges: not available (a logd broker's own call)"
            )?;
            return Ok(());
        }
        Err(e) => {
            writeln!(out, "cleaner ranges: not available ({e})")?;
            return Ok(());
        }
    };
    let range = |from: i64, to: i64| match from < to {
        true => format!("{from}..{to}"),
        false => "-".to_owned(),
    };
    writeln!(
        out,
        "cleaner ranges: clean, cleanable now, too new to clean (min.compaction.lag.ms), \
         active segment (never cleaned)"
    )?;
    writeln!(out, "partition\tclean\tcleanable\ttoo_new\tactive")?;
    for r in ranges {
        writeln!(
            out,
            "{}\t{}\t{}\t{}\t{}",
            r.partition,
            range(r.log_start, r.cleaned_up_to),
            range(r.cleaned_up_to, r.cleanable_end),
            range(r.cleanable_end, r.active_start),
            range(r.active_start, r.log_end)
        )?;
    }
    Ok(())
}

/// `key=value` arguments as pairs.
fn key_values(configs: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    configs
        .iter()
        .map(|config| match config.split_once('=') {
            Some((key, value)) => Ok((key.to_owned(), value.to_owned())),
            None => bail!("config {config:?} is not key=value"),
        })
        .collect()
}
