//! Appends to a partition log under `fsync = always` until killed, printing one line per
//! acknowledged append: `BASE_OFFSET COUNT RUN APPEND`. The process-crash test kills it with
//! SIGKILL and checks every printed append survived.
//!
//! Usage: `logd-crash-writer DIR RUN`

use std::io::Write;
use std::process::ExitCode;

use logd_storage::batch::{BatchBuilder, Compression};
use logd_storage::{LogConfig, PartitionLog};

/// The value of record `record` of append `append` in run `run`; the test recomputes it.
fn value(run: u64, append: u64, record: u64) -> Vec<u8> {
    let pad = ((append * 7 + record * 13) % 90) as usize;
    format!("r{run}-a{append}-{record}-{}", "x".repeat(pad)).into_bytes()
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(dir), Some(Ok(run))) = (args.get(1), args.get(2).map(|r| r.parse::<u64>())) else {
        eprintln!("usage: logd-crash-writer DIR RUN");
        return ExitCode::from(2);
    };
    let config = LogConfig {
        segment_bytes: 64 << 10,
        checkpoint_interval_bytes: 16 << 10,
        ..LogConfig::default()
    };
    let log = match PartitionLog::open(dir, config) {
        Ok(log) => log,
        Err(e) => {
            eprintln!("open {dir}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut out = std::io::stdout().lock();
    for append in 0.. {
        let count = 1 + append % 5;
        let mut builder = BatchBuilder::new(Compression::None);
        for record in 0..count {
            builder.push(append as i64, None, Some(&value(run, append, record)), &[]);
        }
        let mut batch = builder
            .build(0)
            .expect("uncompressed batches always encode");
        match log.append(&mut batch) {
            Ok(info) => {
                // The line is written only after append returned: it is the acknowledgement.
                if writeln!(out, "{} {count} {run} {append}", info.base_offset)
                    .and_then(|()| out.flush())
                    .is_err()
                {
                    return ExitCode::SUCCESS;
                }
            }
            Err(e) => {
                eprintln!("append: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
