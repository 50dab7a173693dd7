//! Commits offsets until killed: commit `n` stores offset `n` for partition `n % 4` of group
//! `g`, and `n` is printed once the commit returned (durably). The kill test reopens the store
//! and checks every printed commit is there.
//!
//! Usage: `logd-offsets-writer DIR FIRST`

use std::io::Write;
use std::process::ExitCode;

use logd_offsets::{OffsetCommit, OffsetStore, OffsetStoreConfig};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(dir), Some(Ok(first))) = (args.get(1), args.get(2).map(|n| n.parse::<i64>())) else {
        eprintln!("usage: logd-offsets-writer DIR FIRST");
        return ExitCode::from(2);
    };
    // Small snapshots so kills also land inside snapshot replacement.
    let config = OffsetStoreConfig {
        snapshot_after_bytes: 2048,
        ..OffsetStoreConfig::default()
    };
    let store = match OffsetStore::open(dir, config) {
        Ok(store) => store,
        Err(e) => {
            eprintln!("open {dir}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut out = std::io::stdout().lock();
    for n in first.. {
        let commit = OffsetCommit {
            topic: "orders".into(),
            partition: (n % 4) as i32,
            offset: n,
            metadata: format!("commit {n}"),
        };
        if let Err(e) = store.commit("g", &[commit], n) {
            eprintln!("commit: {e}");
            return ExitCode::FAILURE;
        }
        if writeln!(out, "{n}").and_then(|()| out.flush()).is_err() {
            return ExitCode::SUCCESS;
        }
    }
    ExitCode::SUCCESS
}
