//! Bounded memory under hostile intake: 40 connections announce 30 MiB request frames and send
//! half of each, against a 64 MiB request budget. The broker holds at most the budget (plus a
//! constant) however many such clients come, where reading every announced frame at once took
//! 40 x 15 MiB; and a well-behaved client produces and consumes throughout. One address cannot
//! take more than `--max-connections-per-ip` connections, and `/metrics` counts the refusals.
//! And 40 consumers asking for 50 MiB fetches and reading nothing cost the broker almost no
//! memory: fetched records go from the mapped segments to the socket, not through a buffer.
//! Ten thousand connections, almost all idle, are admitted by the default `--max-connections`
//! under an open-file limit of 20,000, cost little memory and do not slow a healthy client; neither do a thousand connections trickling a byte at a time, which are closed at
//! their request timeout.

use std::io::Write;
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::Daemon;
use super::librdkafka::{self, Offset};
use super::metrics::scrape;

const BUDGET: u64 = 64 << 20;
const ANNOUNCED: usize = 30 << 20;

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

/// `connections` threads, each announcing a frame of `announced` bytes and sending half of it,
/// then holding its connection open until `stop`.
pub(super) fn half_sent_frames(
    addr: &str,
    connections: usize,
    announced: usize,
    stop: &Arc<AtomicBool>,
) -> Vec<std::thread::JoinHandle<()>> {
    (0..connections)
        .map(|_| {
            let (addr, stop) = (addr.to_owned(), stop.clone());
            std::thread::spawn(move || {
                let mut stream = TcpStream::connect(&addr).unwrap();
                stream
                    .set_write_timeout(Some(Duration::from_millis(200)))
                    .unwrap();
                let chunk = vec![0u8; 1 << 20];
                let _ = stream.write_all(&(announced as i32).to_be_bytes());
                // Half the frame; a connection the budget has not admitted is not read, so its
                // writes stall once the socket buffers are full.
                for _ in 0..(announced / 2) >> 20 {
                    if stop.load(Ordering::Relaxed) || stream.write_all(&chunk).is_err() {
                        break;
                    }
                }
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(20));
                }
            })
        })
        .collect()
}

#[test]
fn half_sent_huge_requests_hold_at_most_the_budget_and_others_are_served() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(
        dir.path(),
        &[
            "--max-inflight-request-bytes",
            &BUDGET.to_string(),
            "--max-request-bytes",
            &(40u64 << 20).to_string(),
        ],
    );
    librdkafka::produce(&daemon.addr, "warm", "none", &["up"]);
    let idle = rss_anon(daemon.pid());

    let stop = Arc::new(AtomicBool::new(false));
    let hostile = half_sent_frames(&daemon.addr, 40, ANNOUNCED, &stop);

    // Meanwhile a well-behaved client is served.
    let started = Instant::now();
    let lines: Vec<String> = (0..100).map(|i| format!("k{i}:v{i}")).collect();
    librdkafka::produce(&daemon.addr, "calm", "none", &lines);
    assert_eq!(
        librdkafka::consume(&daemon.addr, "calm", Offset::Beginning).len(),
        100
    );
    let served = started.elapsed();
    assert!(
        served < Duration::from_secs(10),
        "the well-behaved client waited {served:?}"
    );

    let mut peak = 0;
    let watch = Instant::now();
    while watch.elapsed() < Duration::from_secs(2) {
        peak = peak.max(rss_anon(daemon.pid()));
        std::thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, Ordering::Relaxed);
    for thread in hostile {
        thread.join().unwrap();
    }
    let grown = peak.saturating_sub(idle);
    super::say(&format!(
        "logd memory: 40 half-sent 30 MiB requests: anonymous memory +{} MiB (budget {} MiB), \
         a healthy client served in {:?}",
        grown >> 20,
        BUDGET >> 20,
        served
    ));
    assert!(
        grown <= BUDGET + (48 << 20),
        "anonymous memory grew by {} MiB with a {} MiB budget",
        grown >> 20,
        BUDGET >> 20
    );
}

#[test]
fn connections_past_the_per_ip_limit_are_closed_and_counted() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(
        dir.path(),
        &[
            "--max-connections-per-ip",
            "2",
            "--metrics-listen",
            "127.0.0.1:0",
        ],
    );
    let metrics = daemon.metrics.clone().unwrap();
    let held: Vec<TcpStream> = (0..2)
        .map(|_| TcpStream::connect(&daemon.addr).unwrap())
        .collect();
    super::wait_until(
        "both connections are counted",
        Duration::from_secs(10),
        || scrape(&metrics)["logd_active_connections"] == 2.0,
    );
    let mut third = TcpStream::connect(&daemon.addr).unwrap();
    third
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut buf = [0u8; 1];
    assert!(
        matches!(third.read(&mut buf), Ok(0) | Err(_)),
        "the third connection from this address is closed at once"
    );
    let counted =
        scrape(&metrics)[r#"logd_connections_refused_total{reason="max-connections-per-ip"}"#];
    assert_eq!(counted, 1.0);
    drop(held);
    // Slots free again once those clients leave.
    super::wait_until("the connections are gone", Duration::from_secs(10), || {
        scrape(&metrics)["logd_active_connections"] == 0.0
    });
    librdkafka::produce(&daemon.addr, "after", "none", &["served"]);
}

#[test]
fn unread_fifty_mib_fetches_cost_the_broker_almost_no_memory() {
    use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    use kafka_protocol::messages::{ApiKey, BrokerId, FetchRequest, TopicName};
    use kafka_protocol::protocol::StrBytes;
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(
        dir.path(),
        &["--fsync", "never", "--metrics-listen", "127.0.0.1:0"],
    );
    // 60 MiB of 48 KiB records.
    let value = "v".repeat(48 << 10);
    let lines: Vec<&str> = (0..1280).map(|_| value.as_str()).collect();
    librdkafka::produce(&daemon.addr, "big", "none", &lines);
    let idle = rss_anon(daemon.pid());

    let mut request = FetchRequest::default();
    request.replica_id = BrokerId(-1);
    request.max_wait_ms = 0;
    request.min_bytes = 1;
    request.max_bytes = 50 << 20;
    let mut partition = FetchPartition::default();
    partition.partition = 0;
    partition.fetch_offset = 0;
    partition.partition_max_bytes = 50 << 20;
    let mut topic = FetchTopic::default();
    topic.topic = TopicName(StrBytes::from_static_str("big"));
    topic.partitions = vec![partition];
    request.topics = vec![topic];
    let readers: Vec<TcpStream> = (0..40)
        .map(|i| {
            let mut stream = TcpStream::connect(&daemon.addr).unwrap();
            super::write_request(&mut stream, ApiKey::Fetch, 11, i, &request);
            stream
        })
        .collect();
    let mut peak = 0;
    let watch = Instant::now();
    while watch.elapsed() < Duration::from_secs(2) {
        peak = peak.max(rss_anon(daemon.pid()));
        std::thread::sleep(Duration::from_millis(50));
    }
    let grown = peak.saturating_sub(idle);
    super::say(&format!(
        "logd memory: 40 unread 50 MiB fetches: anonymous memory +{} MiB",
        grown >> 20
    ));
    // /metrics shows the stalled responses: 40 connections writing, about 2 GB on their way.
    let scraped = scrape(daemon.metrics.as_deref().unwrap());
    assert_eq!(scraped[r#"logd_connections{state="writing"}"#], 40.0);
    assert!(scraped["logd_response_bytes_in_flight_bytes"] > f64::from(40u32 << 20));
    assert!(
        grown <= 64 << 20,
        "40 unread 50 MiB fetches grew anonymous memory by {} MiB",
        grown >> 20
    );
    drop(readers);
}

/// The 99th percentile of `samples`.
fn p99(mut samples: Vec<Duration>) -> Duration {
    samples.sort_unstable();
    samples[samples.len() * 99 / 100]
}

/// A healthy client's produce and fetch latencies (200 of each, one record per produce).
fn healthy_client_p99(addr: &str, topic: &str) -> (Duration, Duration) {
    use logd_storage::batch::{BatchBuilder, Compression};
    let mut client = logd_client::Client::connect(addr).unwrap();
    client.create_topic(topic, 1, &[]).unwrap();
    let (mut produces, mut fetches) = (Vec::new(), Vec::new());
    for i in 0..200 {
        let mut builder = BatchBuilder::new(Compression::None);
        builder.push(i, None, Some(b"healthy"), &[]);
        let started = Instant::now();
        let offset = client.produce(topic, 0, builder.build(0).unwrap()).unwrap();
        produces.push(started.elapsed());
        let started = Instant::now();
        let (bytes, _) = client.fetch(topic, 0, offset, 0).unwrap();
        fetches.push(started.elapsed());
        assert!(!bytes.is_empty());
    }
    (p99(produces), p99(fetches))
}

#[test]
fn ten_thousand_connections_cost_little_memory_and_do_not_slow_a_healthy_client() {
    let dir = tempfile::tempdir().unwrap();
    // The default --max-connections, derived from a limit of 20,000 descriptors, admits them.
    let daemon = Daemon::start_with_file_limit(
        &dir.path().join("data"),
        &["--metrics-listen", "127.0.0.1:0"],
        20_000,
        &dir.path().join("logd.log"),
    );
    let metrics = daemon.metrics.clone().unwrap();
    let idle = rss_anon(daemon.pid());
    // Opened from a few threads: connecting is slow on this sandbox's loopback.
    let openers: Vec<_> = (0..9)
        .map(|_| {
            let addr = daemon.addr.clone();
            std::thread::spawn(move || {
                (0..1_110)
                    .map(|_| TcpStream::connect(&addr).unwrap())
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let connections: Vec<TcpStream> = openers
        .into_iter()
        .flat_map(|opener| opener.join().unwrap())
        .collect();
    super::wait_until(
        "every connection is served",
        Duration::from_secs(30),
        || scrape(&metrics)["logd_active_connections"] >= 9_990.0,
    );
    // Ten librdkafka clients produce and consume meanwhile, each on a topic of its own.
    let busy: Vec<_> = (0..10)
        .map(|i| {
            let addr = daemon.addr.clone();
            std::thread::spawn(move || {
                let topic = format!("busy{i}");
                let lines: Vec<String> = (0..200).map(|r| format!("k{r}:v{r}")).collect();
                librdkafka::produce(&addr, &topic, "none", &lines);
                librdkafka::consume(&addr, &topic, Offset::Beginning).len()
            })
        })
        .collect();
    let (produce, fetch) = healthy_client_p99(&daemon.addr, "healthy");
    for client in busy {
        assert_eq!(
            client.join().unwrap(),
            200,
            "each busy client read back what it wrote"
        );
    }
    let held = rss_anon(daemon.pid());
    super::say(&format!(
        "logd memory: 10,000 connections: anonymous memory {} MiB ({} MiB idle); \
         healthy client p99 produce {produce:?}, fetch {fetch:?}",
        held >> 20,
        idle >> 20
    ));
    assert!(
        produce < Duration::from_millis(100) && fetch < Duration::from_millis(100),
        "p99 produce {produce:?}, fetch {fetch:?} with 10,000 connections open"
    );
    assert!(
        held < 256 << 20,
        "10,000 connections: {} MiB of anonymous memory ({} MiB idle)",
        held >> 20,
        idle >> 20
    );
    assert_eq!(
        scrape(&metrics)
            .get(r#"logd_connections_refused_total{reason="max-connections"}"#)
            .copied()
            .unwrap_or(0.0),
        0.0,
        "nothing refused"
    );
    drop(connections);
}

#[test]
fn a_thousand_slowloris_connections_are_cut_off_and_do_not_slow_others() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &["--request-timeout-ms", "1000"]);
    let stop = Arc::new(AtomicBool::new(false));
    let trickling: Vec<_> = (0..1000)
        .map(|_| {
            let mut stream = TcpStream::connect(&daemon.addr).unwrap();
            // A 100-byte request, of which one byte comes at a time.
            stream.write_all(&100i32.to_be_bytes()).unwrap();
            stream
        })
        .collect();
    let trickle = {
        let mut streams: Vec<TcpStream> =
            trickling.iter().map(|s| s.try_clone().unwrap()).collect();
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                for stream in &mut streams {
                    let _ = stream.write_all(&[0]);
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        })
    };
    let (produce, fetch) = healthy_client_p99(&daemon.addr, "healthy");
    super::say(&format!(
        "logd memory: 1,000 slowloris connections: healthy client p99 produce {produce:?}, \
         fetch {fetch:?}"
    ));
    assert!(
        produce < Duration::from_millis(100) && fetch < Duration::from_millis(100),
        "p99 produce {produce:?}, fetch {fetch:?} beside 1,000 slow connections"
    );
    // Every trickling connection is closed once its request timeout passed.
    let started = Instant::now();
    for mut stream in trickling {
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut buf = [0u8; 1];
        assert!(
            matches!(stream.read(&mut buf), Ok(0) | Err(_)),
            "a trickling connection was still open"
        );
    }
    assert!(started.elapsed() < Duration::from_secs(10));
    stop.store(true, Ordering::Relaxed);
    trickle.join().unwrap();
}
