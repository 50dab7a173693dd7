//! Scenarios for the embedded engine: keys and partitions, fan-out, at-least-once, groups
//! rebalancing, replay, wake-up latency.

mod compaction;
mod delivery;
mod embedded;
mod group_restart;
mod groups;
mod idempotence;
mod keys;
mod many_partitions;
mod power_cut;
mod rebalance;
mod replay;
mod stamping;
mod topics;

use std::path::Path;
use std::time::{Duration, Instant};

use logd::group::GroupConfig;
use logd::{Config, Log, TopicConfig};

/// An engine whose groups accept short session timeouts, so tests run in seconds.
pub(crate) fn open(dir: &Path) -> Log {
    let config = Config {
        groups: GroupConfig {
            min_session_timeout_ms: 50,
            ..GroupConfig::default()
        },
        ..Config::default()
    };
    Log::open(dir, config).unwrap()
}

pub(crate) fn topic(log: &Log, name: &str, partitions: u32) {
    log.create_topic(
        name,
        TopicConfig {
            partitions,
            ..TopicConfig::default()
        },
    )
    .unwrap();
}

/// Polls `condition` until it holds or `limit` passes.
pub(crate) fn eventually(limit: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if condition() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    condition()
}
