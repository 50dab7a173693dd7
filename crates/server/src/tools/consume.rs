//! `logd consume` and `logd replay`: read a topic from a chosen point, to stdout (one value per
//! line, or JSON lines), or for `replay --into` appended to another topic with keys, headers and
//! timestamps kept.

use std::io::{IsTerminal, Write};

use clap::ValueEnum;
use logd_client::{Client, TopicWriter};
use logd_storage::Bytes;
use logd_storage::batch::Record;

use super::Bootstrap;
use super::offset::OffsetSpec;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum Format {
    /// The value of each record, one per line.
    Value,
    /// One JSON object per record: topic, partition, offset, timestamp, key, value, headers.
    Json,
}

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ConsumeArgs {
    /// Topic.
    #[arg(short, long)]
    topic: String,
    /// Only this partition (default: all).
    #[arg(short, long)]
    partition: Option<i32>,
    /// Where to start: beginning, end, N, -N (the last N), or @TIME (epoch ms or RFC 3339).
    #[arg(short, long, default_value = "beginning", allow_hyphen_values = true)]
    offset: OffsetSpec,
    /// Stop after this many records.
    #[arg(short = 'n', long)]
    count: Option<usize>,
    /// Keep waiting for new records instead of exiting at the end of the log.
    #[arg(short, long)]
    follow: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Value)]
    format: Format,
    #[command(flatten)]
    bootstrap: Bootstrap,
}

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ReplayArgs {
    /// Topic to replay.
    #[arg(short, long)]
    topic: String,
    /// Where to start: beginning, end, N, -N, or @TIME.
    #[arg(short, long, allow_hyphen_values = true)]
    offset: OffsetSpec,
    /// Only this partition (default: all).
    #[arg(short, long)]
    partition: Option<i32>,
    /// Stop before this offset (default: the end of the log when the replay starts).
    #[arg(long)]
    to: Option<i64>,
    /// Append the records to this topic instead of printing them.
    #[arg(long)]
    into: Option<String>,
    /// Output format when printing.
    #[arg(long, value_enum, default_value_t = Format::Value)]
    format: Format,
    #[command(flatten)]
    bootstrap: Bootstrap,
}

/// One partition being read: next offset and where to stop (`None`: follow forever).
struct Cursor {
    partition: i32,
    next: i64,
    stop: Option<i64>,
}

fn cursors(
    client: &mut Client,
    topic: &str,
    partition: Option<i32>,
    from: OffsetSpec,
    to: Option<i64>,
    follow: bool,
) -> anyhow::Result<Vec<Cursor>> {
    let partitions: Vec<i32> = match partition {
        Some(p) => vec![p],
        None => (0..client.partition_count(topic, false)? as i32).collect(),
    };
    partitions
        .into_iter()
        .map(|partition| {
            let next = from.resolve(client, topic, partition)?;
            let stop = match (to, follow) {
                (Some(to), _) => Some(to),
                (None, true) => None,
                (None, false) => Some(client.offsets(topic, partition)?.latest),
            };
            Ok(Cursor {
                partition,
                next,
                stop,
            })
        })
        .collect()
}

/// Reads every cursor up to its stop (or forever), handing records to `sink` until it has seen
/// `limit` records; returns how many it handed over.
fn read(
    client: &mut Client,
    topic: &str,
    mut cursors: Vec<Cursor>,
    limit: Option<usize>,
    mut sink: impl FnMut(i32, &Record) -> anyhow::Result<()>,
) -> anyhow::Result<usize> {
    let mut seen = 0;
    loop {
        let mut progressed = false;
        let mut open = false;
        for cursor in &mut cursors {
            if cursor.stop.is_some_and(|stop| cursor.next >= stop) {
                continue;
            }
            open = true;
            let wait = if cursor.stop.is_none() { 500 } else { 0 };
            let (bytes, _high_watermark) =
                client.fetch(topic, cursor.partition, cursor.next, wait)?;
            let mut records = Vec::new();
            Record::decode_each(&bytes, 64 << 20, |r| {
                records.push(r);
                true
            })?;
            for record in records {
                if record.offset < cursor.next
                    || cursor.stop.is_some_and(|stop| record.offset >= stop)
                {
                    continue;
                }
                if limit.is_some_and(|n| seen >= n) {
                    return Ok(seen);
                }
                sink(cursor.partition, &record)?;
                seen += 1;
                cursor.next = record.offset + 1;
                progressed = true;
            }
            // Every record taken: past the batches too, which a cleaning may have emptied.
            if let Some(after) = logd_storage::batch::offset_after(&bytes)
                && after > cursor.next
            {
                cursor.next = after;
                progressed = true;
            }
        }
        if !open || limit.is_some_and(|n| seen >= n) {
            return Ok(seen);
        }
        if !progressed && cursors.iter().all(|c| c.stop.is_some()) {
            // Bounded reads that cannot progress: the log ends before the stop offset.
            return Ok(seen);
        }
    }
}

fn text(bytes: Option<&Bytes>) -> serde_json::Value {
    match bytes {
        None => serde_json::Value::Null,
        Some(b) => serde_json::Value::String(String::from_utf8_lossy(b).into_owned()),
    }
}

fn print(
    out: &mut impl Write,
    format: Format,
    topic: &str,
    partition: i32,
    record: &Record,
) -> anyhow::Result<()> {
    match format {
        Format::Value => {
            out.write_all(record.value.as_deref().unwrap_or_default())?;
            out.write_all(b"\n")?;
        }
        Format::Json => {
            let headers: serde_json::Map<String, serde_json::Value> = record
                .headers
                .iter()
                .map(|h| {
                    (
                        String::from_utf8_lossy(&h.key).into_owned(),
                        text(h.value.as_ref()),
                    )
                })
                .collect();
            let line = serde_json::json!({
                "topic": topic,
                "partition": partition,
                "offset": record.offset,
                "timestamp": record.timestamp,
                "key": text(record.key.as_ref()),
                "value": text(record.value.as_ref()),
                "headers": headers,
            });
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}

pub(crate) fn consume(args: &ConsumeArgs) -> anyhow::Result<()> {
    let mut client = args.bootstrap.connect()?;
    let cursors = cursors(
        &mut client,
        &args.topic,
        args.partition,
        args.offset,
        None,
        args.follow,
    )?;
    let stdout = std::io::stdout();
    let mut out = std::io::LineWriter::new(stdout.lock());
    read(
        &mut client,
        &args.topic,
        cursors,
        args.count,
        |partition, record| print(&mut out, args.format, &args.topic, partition, record),
    )?;
    out.flush()?;
    Ok(())
}

pub(crate) fn replay(args: &ReplayArgs) -> anyhow::Result<()> {
    let mut client = args.bootstrap.connect()?;
    let cursors = cursors(
        &mut client,
        &args.topic,
        args.partition,
        args.offset,
        args.to,
        false,
    )?;
    let total: i64 = cursors
        .iter()
        .map(|c| c.stop.unwrap_or(c.next) - c.next)
        .sum();
    let ranges: Vec<String> = cursors
        .iter()
        .map(|c| format!("{}:{}..{}", c.partition, c.next, c.stop.unwrap_or(c.next)))
        .collect();
    let show_progress = std::io::stderr().is_terminal() && total > 0;
    let progress = |done: usize| {
        if show_progress && (done.is_multiple_of(1000) || done as i64 == total) {
            eprint!("\rreplayed {done}/{total}");
        }
    };
    let replayed = match &args.into {
        None => {
            let stdout = std::io::stdout();
            let mut out = std::io::LineWriter::new(stdout.lock());
            let mut done = 0;
            let n = read(
                &mut client,
                &args.topic,
                cursors,
                None,
                |partition, record| {
                    done += 1;
                    progress(done);
                    print(&mut out, args.format, &args.topic, partition, record)
                },
            )?;
            out.flush()?;
            n
        }
        Some(target) => {
            let mut client_out = args.bootstrap.connect()?;
            let mut writer = TopicWriter::new(&mut client_out, target)?;
            let partitions = writer.partitions() as i32;
            let mut done = 0;
            let n = read(
                &mut client,
                &args.topic,
                cursors,
                None,
                |partition, record| {
                    // Keyed records follow their key; keyless ones keep their partition number.
                    let to = record.key.is_none().then_some(partition % partitions);
                    let headers: Vec<(&[u8], Option<&[u8]>)> = record
                        .headers
                        .iter()
                        .map(|h| (h.key.as_ref(), h.value.as_deref()))
                        .collect();
                    writer.write(
                        to,
                        record.timestamp,
                        record.key.as_deref(),
                        record.value.as_deref(),
                        &headers,
                    )?;
                    done += 1;
                    progress(done);
                    Ok(())
                },
            )?;
            writer.finish()?;
            n
        }
    };
    if show_progress {
        eprintln!();
    }
    let destination = args
        .into
        .as_deref()
        .map_or_else(|| "stdout".to_owned(), |t| format!("topic {t}"));
    eprintln!(
        "replayed {replayed} records from {} (partition:from..to {}) into {destination}",
        args.topic,
        ranges.join(" ")
    );
    Ok(())
}
