//! Fair intake under the default request budget (256 MiB): 40 connections announce 90 MiB
//! requests and send half of each, for longer than the budget's patience. Before small requests
//! had a reserve of their own, the two admitted and the one oldest waiting held intake: a new
//! client's ApiVersions waited for the hostile requests' timeout (30 s).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use logd_storage::batch::{BatchBuilder, Compression};

use super::Daemon;

const ANNOUNCED: usize = 90 << 20;

/// Sorted latencies' 99th percentile and maximum.
fn p99_and_max(mut samples: Vec<Duration>) -> (Duration, Duration) {
    samples.sort_unstable();
    (
        samples[samples.len() * 99 / 100],
        samples[samples.len() - 1],
    )
}

#[test]
fn half_sent_ninety_mib_requests_never_delay_a_healthy_client() {
    let dir = tempfile::tempdir().unwrap();
    // Without fsyncs, the latencies measured are intake's, not the disk's.
    let daemon = Daemon::start(dir.path(), &["--fsync", "never"]);
    let mut client = logd_client::Client::connect(&daemon.addr).unwrap();
    client.create_topic("calm", 1, &[]).unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let hostile = super::memory::half_sent_frames(&daemon.addr, 40, ANNOUNCED, &stop);

    // For five seconds (past the budget's one-second patience), a new client's first requests
    // (ApiVersions, Metadata), a produce and a fetch.
    let (mut first, mut produces, mut fetches) = (Vec::new(), Vec::new(), Vec::new());
    let started = Instant::now();
    let mut i = 0;
    while started.elapsed() < Duration::from_secs(5) {
        let asked = Instant::now();
        let mut fresh = logd_client::Client::connect(&daemon.addr).unwrap();
        fresh.partition_count("calm", false).unwrap();
        first.push(asked.elapsed());
        let mut builder = BatchBuilder::new(Compression::None);
        builder.push(i, None, Some(b"healthy"), &[]);
        let asked = Instant::now();
        let offset = client
            .produce("calm", 0, builder.build(0).unwrap())
            .unwrap();
        produces.push(asked.elapsed());
        let asked = Instant::now();
        let (bytes, _) = client.fetch("calm", 0, offset, 0).unwrap();
        fetches.push(asked.elapsed());
        assert!(!bytes.is_empty());
        i += 1;
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::Relaxed);
    for thread in hostile {
        thread.join().unwrap();
    }
    let (first, produce, fetch) = (
        p99_and_max(first),
        p99_and_max(produces),
        p99_and_max(fetches),
    );
    super::say(&format!(
        "logd intake: 40 half-sent 90 MiB requests; a healthy client's {i} rounds, p99/max: \
         new connection's first requests {first:?}, produce {produce:?}, fetch {fetch:?}"
    ));
    for (what, (p99, max)) in [
        ("first requests", first),
        ("produce", produce),
        ("fetch", fetch),
    ] {
        assert!(
            p99 < Duration::from_millis(100) && max < Duration::from_millis(500),
            "{what}: p99 {p99:?}, max {max:?}"
        );
    }
}
