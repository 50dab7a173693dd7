//! `logd dlq list|show|replay`: dead letters as `logd-retry` writes them. The dead-letter
//! position is the group `logd-dlq-replay`'s commit on the dead-letter topic: `list` shows the
//! letters after it (all with `--all`), `replay` re-produces them to their original topic (or
//! `--to`), raising `logd.dlq.replay.count` so a letter that dies again is visibly a repeat,
//! and moves the position past every letter it scanned; `/metrics` reports the depth after it.

use std::io::Write;

use anyhow::{Context, bail};
use clap::Subcommand;
use logd_kafka::Remote;
use logd_retry::message::*;
use logd_retry::{IdempotentAppender, Message, OutRecord, Transport};

use super::Bootstrap;
use crate::metrics::DLQ_REPLAY_GROUP;
use logd_retry::Headers;

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct DlqArgs {
    #[command(subcommand)]
    command: DlqCommand,
    #[command(flatten)]
    bootstrap: Bootstrap,
}

#[derive(Debug, Clone, Subcommand)]
enum DlqCommand {
    /// List dead letters not yet replayed (all of them with --all).
    List {
        /// Dead-letter topic, e.g. `orders.dlq`.
        topic: String,
        /// Include letters already replayed.
        #[arg(long)]
        all: bool,
    },
    /// Print one dead letter: every header, then the value.
    Show {
        /// Dead-letter topic.
        topic: String,
        /// Its partition.
        #[arg(long, default_value_t = 0)]
        partition: u32,
        /// Its offset.
        #[arg(long)]
        offset: i64,
    },
    /// Produce dead letters back to their original topic (or --to) and move the dead-letter
    /// position past them.
    Replay(ReplayArgs),
}

#[derive(Debug, Clone, clap::Args)]
struct ReplayArgs {
    /// Dead-letter topic.
    topic: String,
    /// Produce to this topic instead of each letter's original one.
    #[arg(long)]
    to: Option<String>,
    /// Only letters with this reason (`permanent`, `max-attempts`).
    #[arg(long)]
    reason: Option<String>,
    /// Only letters whose error class is this.
    #[arg(long)]
    error_class: Option<String>,
    /// Only letters with this key.
    #[arg(long)]
    key: Option<String>,
    /// Rescan from the topic's start instead of the dead-letter position.
    #[arg(long)]
    from_beginning: bool,
    /// Print what would be replayed; change nothing.
    #[arg(long)]
    dry_run: bool,
}

impl ReplayArgs {
    fn matches(&self, letter: &Message) -> bool {
        let key = letter.key.as_deref().map(String::from_utf8_lossy);
        self.reason
            .as_deref()
            .is_none_or(|r| letter.header_str(DLQ_REASON) == Some(r))
            && self
                .error_class
                .as_deref()
                .is_none_or(|c| letter.header_str(DLQ_ERROR_CLASS) == Some(c))
            && self
                .key
                .as_deref()
                .is_none_or(|k| key.as_deref() == Some(k))
    }
}

pub(crate) fn run(args: &DlqArgs) -> anyhow::Result<()> {
    let mut dlq = Remote::new(args.bootstrap.connect()?);
    let mut out = std::io::stdout().lock();
    match &args.command {
        DlqCommand::List { topic, all } => {
            writeln!(
                out,
                "{:>9} {:>8}  {:<32} {:>8} {:<13} {:<20} MESSAGE",
                "PARTITION", "OFFSET", "ORIGIN", "ATTEMPTS", "REASON", "ERROR"
            )?;
            for letter in letters(&mut dlq, topic, !all)? {
                let origin = format!(
                    "{}/{}/{}",
                    letter.header_str(DLQ_ORIGINAL_TOPIC).unwrap_or("?"),
                    letter.header_str(DLQ_ORIGINAL_PARTITION).unwrap_or("?"),
                    letter.header_str(DLQ_ORIGINAL_OFFSET).unwrap_or("?"),
                );
                writeln!(
                    out,
                    "{:>9} {:>8}  {origin:<32} {:>8} {:<13} {:<20} {}",
                    letter.partition,
                    letter.offset,
                    letter.header_str(DLQ_ATTEMPTS).unwrap_or("-"),
                    letter.header_str(DLQ_REASON).unwrap_or("-"),
                    letter.header_str(DLQ_ERROR_CLASS).unwrap_or("-"),
                    letter.header_str(DLQ_ERROR_MESSAGE).unwrap_or("-"),
                )?;
            }
        }
        DlqCommand::Show {
            topic,
            partition,
            offset,
        } => {
            let letter = dlq
                .fetch(topic, *partition, *offset)?
                .into_iter()
                .find(|m| m.offset == *offset)
                .with_context(|| format!("no record at {topic}-{partition} offset {offset}"))?;
            writeln!(out, "offset: {}", letter.offset)?;
            writeln!(out, "timestamp: {}", letter.timestamp)?;
            let text = |b: &Option<logd_storage::Bytes>| {
                b.as_deref()
                    .map_or("(null)".into(), |v| String::from_utf8_lossy(v).into_owned())
            };
            writeln!(out, "key: {}", text(&letter.key))?;
            for (name, value) in &letter.headers {
                writeln!(out, "header {name}: {}", text(value))?;
            }
            writeln!(out, "value: {}", text(&letter.value))?;
        }
        DlqCommand::Replay(replay) => replay_letters(&mut dlq, replay, &mut out)?,
    }
    Ok(())
}

/// The letters of `topic`, from the dead-letter position if `pending_only`, else all.
fn letters(dlq: &mut Remote, topic: &str, pending_only: bool) -> anyhow::Result<Vec<Message>> {
    let mut all = Vec::new();
    for partition in 0..dlq.partition_count(topic)? {
        let mut at = if pending_only {
            dlq.committed(DLQ_REPLAY_GROUP, topic, partition)?
                .unwrap_or(0)
        } else {
            0
        };
        loop {
            let batch = dlq.fetch(topic, partition, at)?;
            let Some(last) = batch.last() else { break };
            at = last.offset + 1;
            all.extend(batch);
        }
    }
    Ok(all)
}

fn replay_letters(dlq: &mut Remote, args: &ReplayArgs, out: &mut impl Write) -> anyhow::Result<()> {
    let scanned = letters(dlq, &args.topic, !args.from_beginning)?;
    let mut replayed = 0;
    // Replays go out as one idempotent producer, like the worker's copies.
    let mut appender = IdempotentAppender::new();
    for letter in &scanned {
        if !args.matches(letter) {
            continue;
        }
        let Some(target) = args
            .to
            .clone()
            .or_else(|| letter.header_str(DLQ_ORIGINAL_TOPIC).map(str::to_owned))
        else {
            bail!(
                "{}-{} offset {} has no {DLQ_ORIGINAL_TOPIC} header: give --to",
                args.topic,
                letter.partition,
                letter.offset
            );
        };
        let partitions = dlq.partition_count(&target)?;
        let partition = letter
            .header_i64(DLQ_ORIGINAL_PARTITION)
            .map_or(letter.partition, |p| p as u32)
            % partitions;
        let count = letter.header_i64(DLQ_REPLAY_COUNT).unwrap_or(0) + 1;
        writeln!(
            out,
            "{} {}-{} offset {} -> {target}-{partition} (replay {count})",
            if args.dry_run {
                "would replay"
            } else {
                "replayed"
            },
            args.topic,
            letter.partition,
            letter.offset
        )?;
        if !args.dry_run {
            let mut record = OutRecord::copy_of(letter);
            record.headers.retain(|(k, _)| k != DLQ_REPLAY_COUNT);
            appender.send(
                dlq,
                &target,
                partition,
                &record.with(DLQ_REPLAY_COUNT, count),
            )?;
        }
        replayed += 1;
    }
    if args.dry_run {
        writeln!(
            out,
            "dry run: {replayed} of {} letter(s) would be replayed",
            scanned.len()
        )?;
        return Ok(());
    }
    // Past everything scanned, per partition: what the filter skipped counts as handled.
    let mut ends: std::collections::BTreeMap<u32, i64> = std::collections::BTreeMap::new();
    for letter in &scanned {
        ends.insert(letter.partition, letter.offset + 1);
    }
    for (partition, end) in ends {
        dlq.commit(DLQ_REPLAY_GROUP, &args.topic, partition, end)?;
    }
    writeln!(out, "replayed {replayed} of {} letter(s)", scanned.len())?;
    Ok(())
}
