//! Writes 10,000 keyed records to a partition log, closes it, reopens it (no recovery scan
//! after a clean close), then replays from an offset and from a timestamp.
//!
//! `cargo run --release -p logd-storage --example quickstart [DIR]` (default: a temp dir)

use std::process::ExitCode;
use std::time::Instant;

use logd_storage::batch::{BatchBuilder, Compression, Record};
use logd_storage::{LogConfig, Offset, PartitionLog, Result};

fn run(dir: &std::path::Path) -> Result<()> {
    let started = Instant::now();
    let log = PartitionLog::open(dir, LogConfig::default())?;
    let first_new = log.end_offset();
    for batch_no in 0..100i64 {
        let mut builder = BatchBuilder::new(Compression::None);
        for i in 0..100i64 {
            let n = batch_no * 100 + i;
            let key = format!("user-{}", n % 7);
            let value = format!("event {n}");
            builder.push(
                1_700_000_000_000 + n,
                Some(key.as_bytes()),
                Some(value.as_bytes()),
                &[(b"source", Some(b"quickstart"))],
            );
        }
        log.append(&mut builder.build(0)?)?;
    }
    println!(
        "appended 10000 records at offsets {first_new}..{} in {:?} (fsync = always, group commit)",
        log.end_offset(),
        started.elapsed()
    );
    log.close()?;

    let log = PartitionLog::open(dir, LogConfig::default())?;
    let report = log.recovery_report();
    println!(
        "reopened {}: log start {}, end {}, {} bytes scanned for recovery",
        dir.display(),
        log.log_start_offset(),
        log.end_offset(),
        report.scanned_bytes
    );

    let from = Offset(first_new.0 + 4_242);
    let bytes = log.read(from, 4096)?;
    let records = Record::decode_all(&bytes, 1 << 20)?;
    println!(
        "replay from offset {from}: {} bytes, whole batches, zero-copy",
        bytes.len()
    );
    for record in records.iter().filter(|r| r.offset >= from.0).take(3) {
        let key = String::from_utf8_lossy(record.key.as_deref().unwrap_or_default());
        let value = String::from_utf8_lossy(record.value.as_deref().unwrap_or_default());
        println!(
            "  offset {} ts {} key {key} value {value:?}",
            record.offset, record.timestamp
        );
    }

    let ts = 1_700_000_000_000 + 9_000;
    match log.offset_for_timestamp(ts)? {
        Some(offset) => println!("first record at or after timestamp {ts}: offset {offset}"),
        None => println!("no record at or after timestamp {ts}"),
    }
    log.close()
}

fn main() -> ExitCode {
    let temp;
    let dir = match std::env::args_os().nth(1) {
        Some(dir) => std::path::PathBuf::from(dir),
        None => {
            temp = tempfile::tempdir().expect("create a temp dir");
            temp.path().join("quickstart-0")
        }
    };
    match run(&dir) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("quickstart: {e}");
            ExitCode::FAILURE
        }
    }
}
