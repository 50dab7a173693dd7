//! `logd dump FILE`: reads a segment file offline and prints every batch (and with `--records`
//! every record), verifying each batch's CRC, like Kafka's `kafka-dump-log`. A corrupt or torn
//! batch is reported with its byte position and the exit code is 1.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::ValueEnum;
use logd_storage::batch::{BatchIter, BatchRef};

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct DumpArgs {
    /// A segment's `.log` file.
    file: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Print every record, not only batch headers.
    #[arg(long)]
    records: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Format {
    /// One line per batch (and record), for people.
    Text,
    /// One JSON object per line, for scripts.
    Json,
}

/// Dumps the file; exit code 1 if a batch is corrupt.
pub(crate) fn run(args: &DumpArgs) -> anyhow::Result<ExitCode> {
    let bytes = std::fs::read(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut corrupt = false;
    let mut position = 0;
    for item in BatchIter::new(&bytes, 0) {
        let (at, batch) = match item {
            Ok(found) => found,
            Err(e) => {
                report(&mut out, args.format, position, &e.to_string())?;
                corrupt = true;
                break;
            }
        };
        position = at + batch.bytes.len();
        if let Err(e) = batch.verify_crc(at) {
            report(&mut out, args.format, at, &e.to_string())?;
            corrupt = true;
            continue;
        }
        print_batch(&mut out, args, at, &batch)?;
    }
    Ok(if corrupt {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn print_batch(
    out: &mut impl Write,
    args: &DumpArgs,
    at: usize,
    batch: &BatchRef<'_>,
) -> anyhow::Result<()> {
    let h = &batch.header;
    let codec = h
        .compression()
        .map_or_else(|e| e.to_string(), |c| format!("{c:?}").to_lowercase());
    match args.format {
        Format::Text => writeln!(
            out,
            "position {at} base_offset {} last_offset {} count {} size {} compression {codec} max_timestamp {} crc valid",
            h.base_offset,
            h.last_offset(),
            h.record_count,
            batch.bytes.len(),
            h.max_timestamp
        )?,
        Format::Json => writeln!(
            out,
            r#"{{"position":{at},"base_offset":{},"last_offset":{},"count":{},"size":{},"compression":"{codec}","max_timestamp":{},"crc_valid":true}}"#,
            h.base_offset,
            h.last_offset(),
            h.record_count,
            batch.bytes.len(),
            h.max_timestamp
        )?,
    }
    if args.records {
        for record in batch.records(64 << 20)?.iter() {
            let record = record?;
            let text = |b: Option<&[u8]>| {
                b.map_or("null".to_owned(), |b| {
                    String::from_utf8_lossy(b).into_owned()
                })
            };
            match args.format {
                Format::Text => writeln!(
                    out,
                    "  offset {} timestamp {} key {} value {} headers {}",
                    record.offset,
                    record.timestamp,
                    text(record.key),
                    text(record.value),
                    record.headers.len()
                )?,
                Format::Json => writeln!(
                    out,
                    r#"{{"offset":{},"timestamp":{},"key":{:?},"value":{:?},"headers":{}}}"#,
                    record.offset,
                    record.timestamp,
                    text(record.key),
                    text(record.value),
                    record.headers.len()
                )?,
            }
        }
    }
    Ok(())
}

fn report(out: &mut impl Write, format: Format, at: usize, error: &str) -> anyhow::Result<()> {
    match format {
        Format::Text => writeln!(out, "position {at} CORRUPT: {error}")?,
        Format::Json => writeln!(
            out,
            r#"{{"position":{at},"corrupt":true,"error":{error:?}}}"#
        )?,
    }
    Ok(())
}
