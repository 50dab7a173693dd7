//! `logd dlq list|show|replay`: a printer over `logd_retry::DeadLetters`. The dead-letter
//! position is the group `logd-dlq-replay`'s commit on the dead-letter topic: `list` shows the
//! letters after it (all with `--all`), `replay` re-produces them to their original topic (or
//! `--to`), raising `logd.dlq.replay.count` so a letter that dies again is visibly a repeat,
//! and moves the position past every letter it scanned; `/metrics` reports the depth after it.

use std::io::Write;

use anyhow::Context;
use clap::Subcommand;
use logd_client::Remote;
use logd_retry::message::*;
use logd_retry::{DeadLetters, Headers, LetterFilter, ReplayOptions};

use super::Bootstrap;

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
    /// Produce dead letters back to their original topic (or --to), recording each replay in
    /// the topic's replays topic (`TOPIC.replays`); letters the filters skip stay pending.
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
    /// Only this letter, as PARTITION/OFFSET (repeatable).
    #[arg(long = "letter", value_parser = parse_letter)]
    letters: Vec<(u32, i64)>,
    /// Rescan from the topic's start instead of the dead-letter position.
    #[arg(long)]
    from_beginning: bool,
    /// Print what would be replayed; change nothing.
    #[arg(long)]
    dry_run: bool,
}

impl ReplayArgs {
    /// The replay these arguments ask for, recorded as `by` (the SASL user, if any).
    fn options(&self, by: Option<String>) -> ReplayOptions {
        ReplayOptions {
            to: self.to.clone(),
            filter: LetterFilter {
                reason: self.reason.clone(),
                error_class: self.error_class.clone(),
                key: self.key.clone(),
                letters: (!self.letters.is_empty()).then(|| self.letters.iter().copied().collect()),
            },
            from_beginning: self.from_beginning,
            dry_run: self.dry_run,
            by,
        }
    }
}

/// `PARTITION/OFFSET`.
fn parse_letter(text: &str) -> Result<(u32, i64), String> {
    let bad = || format!("a letter is PARTITION/OFFSET (like 0/42), not {text:?}");
    let (partition, offset) = text.split_once('/').ok_or_else(bad)?;
    Ok((
        partition.trim().parse().map_err(|_| bad())?,
        offset.trim().parse().map_err(|_| bad())?,
    ))
}

pub(crate) fn run(args: &DlqArgs) -> anyhow::Result<()> {
    let mut remote = Remote::new(args.bootstrap.connect()?);
    let mut out = std::io::stdout().lock();
    match &args.command {
        DlqCommand::List { topic, all } => {
            writeln!(
                out,
                "{:>9} {:>8}  {:<32} {:>8} {:<13} {:<20} MESSAGE",
                "PARTITION", "OFFSET", "ORIGIN", "ATTEMPTS", "REASON", "ERROR"
            )?;
            for letter in DeadLetters::new(&mut remote, topic).list(!all)? {
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
            let letter = DeadLetters::new(&mut remote, topic)
                .show(*partition, *offset)?
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
        DlqCommand::Replay(replay) => {
            let by = args
                .bootstrap
                .security()?
                .sasl
                .map(|login| format!("User:{}", login.username));
            let report =
                DeadLetters::new(&mut remote, &replay.topic).replay(&replay.options(by))?;
            let verb = if replay.dry_run {
                "would replay"
            } else {
                "replayed"
            };
            for r in &report.replays {
                writeln!(
                    out,
                    "{verb} {}-{} offset {} -> {}-{} (replay {})",
                    replay.topic, r.partition, r.offset, r.target, r.target_partition, r.count
                )?;
            }
            let (done, scanned) = (report.replays.len(), report.scanned);
            if replay.dry_run {
                writeln!(
                    out,
                    "dry run: {done} of {scanned} letter(s) would be replayed"
                )?;
            } else {
                writeln!(out, "replayed {done} of {scanned} letter(s)")?;
            }
        }
    }
    Ok(())
}
