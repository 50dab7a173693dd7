//! The console's search at scale: ten million records searched in steps that each report how
//! far they got, finding the three that hold the text wherever they are, while the broker's
//! anonymous memory stays flat (the records are walked from the mapped segments, never
//! gathered).

use logd_client::Client;
use logd_storage::batch::{BatchBuilder, Compression};
use serde_json::Value;

use super::Daemon;
use super::metrics::get;

const RECORDS: i64 = 10_000_000;
/// Records a produced batch holds (about 0.5 MiB of them, under the 1 MiB batch limit).
const PER_BATCH: i64 = 40_000;
/// What the broker's anonymous memory may grow by while searching.
const BOUND: u64 = 64 << 20;

/// The process's anonymous resident memory (heap and stacks), in bytes.
fn rss_anon(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("RssAnon:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kib << 10
}

#[test]
fn a_search_over_ten_million_records_reports_its_progress_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(
        dir.path(),
        &["--http-listen", "127.0.0.1:0", "--fsync", "interval"],
    );
    let http = daemon.metrics.clone().unwrap();
    let mut client = Client::connect(&daemon.addr).unwrap();
    client.create_topic("big", 1, &[]).unwrap();
    // The text is in three records: the first, one in the middle and the last.
    let needles = [0, RECORDS / 2, RECORDS - 1];
    for first in (0..RECORDS).step_by(PER_BATCH as usize) {
        let mut builder = BatchBuilder::new(Compression::None);
        for i in first..(first + PER_BATCH).min(RECORDS) {
            let value = if needles.contains(&i) {
                format!("needle {i}")
            } else {
                format!("r{i}")
            };
            builder.push(0, None, Some(value.as_bytes()), &[]);
        }
        client.produce("big", 0, builder.build(0).unwrap()).unwrap();
    }
    let idle = rss_anon(daemon.pid());

    let mut from = 0;
    let mut steps = 0;
    let mut scanned_total = 0;
    let mut found = Vec::new();
    let mut peak = idle;
    loop {
        let (status, body) = get(
            &http,
            &format!("/api/v1/topics/big/search?q=needle&in=value&from={from}"),
        );
        assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
        let step: Value = serde_json::from_str(&body).unwrap();
        peak = peak.max(rss_anon(daemon.pid()));
        let scanned = step["scanned"].as_i64().unwrap();
        let through = step["scanned_through"].as_i64().unwrap();
        assert!(
            scanned > 0 && scanned <= 1_000_000,
            "a step scans at most its budget: {step}"
        );
        assert_eq!(through, from + scanned, "the step says where it stopped");
        scanned_total += scanned;
        steps += 1;
        for hit in step["matches"].as_array().unwrap() {
            found.push(hit["offset"].as_i64().unwrap());
        }
        if step["done"] == true {
            assert_eq!(through, RECORDS);
            break;
        }
        assert!(steps < 100, "the search ends");
        from = through;
    }
    super::say(&format!(
        "logd console: a search of {RECORDS} records in {steps} steps; anonymous memory {} MiB \
         idle, {} MiB at its peak",
        idle >> 20,
        peak >> 20
    ));
    assert_eq!(scanned_total, RECORDS);
    assert_eq!(steps, 10, "a million records a step");
    assert_eq!(found, needles);
    assert!(
        peak <= idle + BOUND,
        "anonymous memory grew by {} MiB searching",
        (peak - idle) >> 20
    );
}
