//! A child process appends under `fsync = always` and prints each acknowledged append; it is
//! killed with SIGKILL at random moments, and after every kill the reopened log must hold
//! every acknowledged record, intact, with nothing malformed served.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use logd_storage::batch::Record;
use logd_storage::{LogConfig, Offset, PartitionLog, SplitMix64};

const CYCLES: u64 = 20;

/// Same rule as `bin/crash_writer.rs`.
fn expected_value(run: u64, append: u64, record: u64) -> Vec<u8> {
    let pad = ((append * 7 + record * 13) % 90) as usize;
    format!("r{run}-a{append}-{record}-{}", "x".repeat(pad)).into_bytes()
}

/// Recomputes what a stored value should be from the identity written into it.
fn well_formed(value: &[u8]) -> bool {
    let text = String::from_utf8_lossy(value);
    let mut parts = text.splitn(4, '-');
    let (Some(run), Some(append), Some(record)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let parse = |s: &str, prefix: &str| s.strip_prefix(prefix).and_then(|n| n.parse::<u64>().ok());
    match (
        parse(run, "r"),
        parse(append, "a"),
        record.parse::<u64>().ok(),
    ) {
        (Some(r), Some(a), Some(i)) => expected_value(r, a, i) == value,
        _ => false,
    }
}

#[test]
fn sigkill_at_random_moments_never_loses_an_acknowledged_append() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = SplitMix64::new(0x5eed);
    // Offset -> value of every acknowledged record, over all runs.
    let mut acked: BTreeMap<i64, Vec<u8>> = BTreeMap::new();
    for run in 0..CYCLES {
        let mut child = Command::new(env!("CARGO_BIN_EXE_logd-crash-writer"))
            .arg(dir.path())
            .arg(run.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        // Kill after a random number of acknowledgements: the child keeps appending while the
        // parent reads, so the kill lands at an arbitrary point of an append.
        let kill_after = 1 + rng.below(40);
        let mut seen = Vec::new();
        for line in lines.by_ref() {
            seen.push(line.unwrap());
            if seen.len() as u64 >= kill_after {
                break;
            }
        }
        child.kill().unwrap();
        child.wait().unwrap();
        // Lines the child completed before dying were acknowledged too.
        seen.extend(lines.map_while(Result::ok));
        assert!(
            !seen.is_empty(),
            "run {run}: the writer acknowledged nothing"
        );
        for line in &seen {
            let fields: Vec<u64> = line.split(' ').map(|f| f.parse().unwrap()).collect();
            let [base, count, r, append] = fields[..] else {
                panic!("malformed acknowledgement {line:?}");
            };
            assert_eq!(r, run);
            for record in 0..count {
                acked.insert((base + record) as i64, expected_value(run, append, record));
            }
        }

        let log = PartitionLog::open(dir.path(), LogConfig::default()).unwrap();
        let mut next = 0;
        let mut stored = BTreeMap::new();
        while next < log.high_watermark().0 {
            let bytes = log.read(Offset(next), 64 << 10).unwrap();
            for record in
                Record::decode_all(&bytes, 1 << 20).expect("served batches decode with valid CRCs")
            {
                let value = record.value.expect("writer values are never null").to_vec();
                assert!(
                    well_formed(&value),
                    "offset {} holds a malformed value",
                    record.offset
                );
                stored.insert(record.offset, value);
            }
            next = *stored.keys().next_back().unwrap() + 1;
        }
        assert_eq!(
            stored.len() as i64,
            log.end_offset().0,
            "offsets are contiguous from 0"
        );
        for (offset, value) in &acked {
            assert_eq!(
                stored.get(offset),
                Some(value),
                "run {run}: acknowledged offset {offset}"
            );
        }
    }
}
