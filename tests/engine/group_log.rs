//! A settle costs the same whatever the number of groups: it appends one record for its group
//! to the group log, where logd once rewrote every group's state.

use logd::{Config, Log, ManualClock};
use logd_storage::{SimFs, Storage};
use std::path::Path;
use std::sync::Arc;

/// Bytes of the group log's files.
fn group_log_bytes(fs: &SimFs) -> u64 {
    let dir = Path::new("/data/groups");
    fs.list_dir(dir)
        .unwrap()
        .iter()
        .map(|name| fs.open(&dir.join(name), false).unwrap().size().unwrap())
        .sum()
}

/// Bytes one more settle writes to the group log with `groups` settled groups.
fn bytes_of_one_settle(groups: usize) -> u64 {
    let fs = SimFs::new();
    let log = Log::open_with(
        Arc::new(fs.clone()),
        Arc::new(ManualClock::new(1_000)),
        "/data",
        Config::default(),
    )
    .unwrap();
    for g in 0..groups {
        super::settle_alone(&log, &format!("group-{g:06}")).unwrap();
    }
    let before = group_log_bytes(&fs);
    super::settle_alone(&log, "group-new000").unwrap();
    group_log_bytes(&fs) - before
}

#[test]
fn a_settle_writes_the_same_bytes_with_ten_or_ten_thousand_groups() {
    let few = bytes_of_one_settle(10);
    let many = bytes_of_one_settle(10_000);
    assert_eq!(few, many, "a settle's bytes grew with the number of groups");
    // One group's record: its member, subscription and assignment, not every group.
    assert!(few < 512, "{few} bytes for one settle");
}
