//! The Nth write or fsync fails: the log is poisoned, refuses further writes, and once reopened
//! (after a restart, or after a power cut) holds every acknowledged record.

use std::path::Path;
use std::sync::Arc;

use super::*;
use crate::{CrashMode, Error, FaultKind, SimFs};

const EIO: i32 = 5;
const ENOSPC: i32 = 28;

/// Opens a log, arms the fault, and appends until it fires.
fn run_until_failure(
    fs: &SimFs,
    kind: FaultKind,
    nth: u64,
    errno: i32,
) -> (Vec<(i64, Vec<u8>)>, PartitionLog, Error) {
    let log = PartitionLog::open_with(Arc::new(fs.clone()), "/p", small_config()).unwrap();
    fs.fail_nth(kind, nth, errno);
    let mut acked = Vec::new();
    for i in 0..500 {
        let value = format!("value-{i}").into_bytes();
        match log.append(&mut batch_of(std::slice::from_ref(&value), i)) {
            Ok(info) => acked.push((info.base_offset.0, value)),
            Err(e) => return (acked, log, e),
        }
    }
    panic!("the injected fault never fired");
}

fn assert_all_present(fs: SimFs, acked: &[(i64, Vec<u8>)]) {
    let log = PartitionLog::open_with(Arc::new(fs), Path::new("/p"), small_config()).unwrap();
    let records = read_all(&log, 0).unwrap();
    for (offset, value) in acked {
        assert_eq!(
            records.get(offset).map(|r| &r.1),
            Some(value),
            "acked offset {offset}"
        );
    }
}

#[test]
fn a_failed_write_or_fsync_poisons_and_loses_nothing_acknowledged() {
    for kind in [FaultKind::Write, FaultKind::Sync] {
        for errno in [EIO, ENOSPC] {
            for nth in [0, 1, 7, 40, 95] {
                let fs = SimFs::new();
                let (acked, log, err) = run_until_failure(&fs, kind, nth, errno);
                assert!(
                    matches!(&err, Error::Io { source, .. } if source.raw_os_error() == Some(errno)),
                    "{kind:?} #{nth}: {err}"
                );
                assert!(log.is_poisoned());
                let refused = log
                    .append(&mut batch_of(&[b"late".to_vec()], 0))
                    .unwrap_err();
                assert!(matches!(refused, Error::Poisoned { .. }), "{refused}");
                assert!(log.roll().is_err() && log.apply_retention(0).is_err());
                let image = fs.crash_image(CrashMode::DropUnsynced, nth);
                drop(log);
                // A restart (page cache intact) and a power cut both keep every ack.
                assert_all_present(fs, &acked);
                assert_all_present(image, &acked);
            }
        }
    }
}
