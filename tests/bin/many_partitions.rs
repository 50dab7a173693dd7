//! Runs the engine with many partitions under a small open-file limit: sets its own soft
//! `RLIMIT_NOFILE`, creates the topics, appends one record to every partition, reads every
//! partition back, closes, reopens and reads again. Prints `OK PARTITIONS REOPEN_MS` or the
//! first error (exit 1).
//!
//! Usage: `logd-many-partitions DIR TOPICS PARTITIONS_PER_TOPIC NOFILE [MAX_OPEN_FILES]`

use std::process::ExitCode;
use std::time::Instant;

use logd::{Config, Fsync, Log, TopicConfig};
use logd_storage::Offset;
use logd_storage::batch::{BatchBuilder, Compression, Record};

/// Sets the soft open-file limit of this process.
#[allow(
    unsafe_code,
    reason = "setrlimit(2) is a system call libc exposes only as unsafe FFI"
)]
fn limit_open_files(soft: u64) -> std::io::Result<()> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes only into `limit`, which lives for the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    limit.rlim_cur = soft.min(limit.rlim_max);
    // SAFETY: setrlimit reads only `limit`, which lives for the call.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

fn run(args: &[String]) -> Result<(u32, u128), String> {
    let number = |i: usize| -> Result<u64, String> {
        args.get(i)
            .and_then(|a| a.parse().ok())
            .ok_or_else(|| format!("argument {i} must be a number"))
    };
    let dir = args
        .get(1)
        .ok_or("usage: DIR TOPICS PARTITIONS NOFILE [MAX_OPEN_FILES]")?;
    let (topics, partitions, nofile) = (number(2)?, number(3)? as u32, number(4)?);
    let max_open_files = args
        .get(5)
        .map(|_| number(5))
        .transpose()?
        .map(|n| n as usize);
    limit_open_files(nofile).map_err(|e| format!("setrlimit: {e}"))?;
    let config = Config {
        max_open_files,
        ..Config::default()
    };
    let topic = TopicConfig {
        partitions,
        fsync: Fsync::Never,
        ..TopicConfig::default()
    };
    let names: Vec<String> = (0..topics).map(|t| format!("tenant-{t}")).collect();
    {
        let log = Log::open(dir, config.clone()).map_err(|e| format!("open: {e}"))?;
        for name in &names {
            log.create_topic(name, topic.clone())
                .map_err(|e| format!("create {name}: {e}"))?;
            for p in 0..partitions {
                let mut builder = BatchBuilder::new(Compression::None);
                builder.push(0, None, Some(format!("{name}/{p}").as_bytes()), &[]);
                let mut batch = builder.build(0).map_err(|e| e.to_string())?;
                log.append(name, p, &mut batch)
                    .map_err(|e| format!("append {name}/{p}: {e}"))?;
            }
        }
        read_all(&log, &names, partitions)?;
    }
    let started = Instant::now();
    let log = Log::open(dir, config).map_err(|e| format!("reopen: {e}"))?;
    let reopen_ms = started.elapsed().as_millis();
    read_all(&log, &names, partitions)?;
    Ok((topics as u32 * partitions, reopen_ms))
}

/// Reads every partition's one record back.
fn read_all(log: &Log, names: &[String], partitions: u32) -> Result<(), String> {
    for name in names {
        for p in 0..partitions {
            let partition = log
                .partition(name, p)
                .map_err(|e| format!("partition {name}/{p}: {e}"))?;
            let bytes = partition
                .read(Offset(0), 1 << 20)
                .map_err(|e| format!("read {name}/{p}: {e}"))?;
            let records = Record::decode_all(&bytes, 1 << 20).map_err(|e| e.to_string())?;
            let expected = format!("{name}/{p}");
            if records.len() != 1 || records[0].value.as_deref() != Some(expected.as_bytes()) {
                return Err(format!("{name}/{p} holds {records:?}"));
            }
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    match run(&args) {
        Ok((partitions, reopen_ms)) => {
            println!("OK {partitions} {reopen_ms}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
