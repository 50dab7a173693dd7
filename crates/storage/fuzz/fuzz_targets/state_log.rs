//! Arbitrary bytes as a state log's current log file, and as its snapshot: opening gives a
//! state or an error, never a panic, and never an allocation from a length the bytes cannot
//! back (run with `-malloc_limit_mb`); a log that opens takes records again.
#![no_main]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use logd_storage::{SimFs, StateLog, StateLogConfig, StateMachine, Storage};
use serde::{Deserialize, Serialize};

#[derive(Default, Serialize, Deserialize)]
struct Map(BTreeMap<String, Vec<u8>>);

impl StateMachine for Map {
    type Record = (String, Option<Vec<u8>>);

    fn apply(&mut self, (key, value): Self::Record) {
        match value {
            Some(v) => self.0.insert(key, v),
            None => self.0.remove(&key),
        };
    }
}

fn open(fs: &SimFs) -> logd_storage::Result<StateLog<Map>> {
    let config = StateLogConfig {
        name: "fuzz",
        snapshot_after_bytes: 1 << 20,
    };
    StateLog::open(Arc::new(fs.clone()), "/s", config)
}

fuzz_target!(|data: &[u8]| {
    for name in ["/s/fuzz-00000000000000000000.log", "/s/fuzz.snapshot"] {
        let fs = SimFs::new();
        fs.create_dir_all(Path::new("/s")).unwrap();
        fs.open(Path::new(name), true)
            .unwrap()
            .write_all_at(data, 0)
            .unwrap();
        if let Ok(log) = open(&fs) {
            log.append(("k".into(), Some(b"v".to_vec()))).unwrap();
        }
    }
});
