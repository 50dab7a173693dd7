//! The broker out of file descriptors: under an open-file limit of 128, 300 clients connect.
//! Accepts then fail with "Too many open files" until a descriptor is freed; the listener must
//! pause instead of retrying at once (which spun a core and wrote millions of log lines), keep
//! serving the connections it has, log the condition about once a second, count it in
//! `/metrics`, and accept again once clients leave.

use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use logd_storage::batch::{BatchBuilder, Compression};

use super::Daemon;
use super::metrics::scrape;

/// CPU seconds (user and system) the process `pid` has used.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    // utime and stime are fields 14 and 15 of the whole line, in clock ticks (100 a second).
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    ticks as f64 / 100.0
}

/// One record produced and read back through `client`.
fn round_trip(client: &mut logd_client::Client, i: i64) {
    let mut builder = BatchBuilder::new(Compression::None);
    builder.push(i, None, Some(b"still served"), &[]);
    let offset = client
        .produce("held", 0, builder.build(0).unwrap())
        .unwrap();
    let (bytes, _) = client.fetch("held", 0, offset, 0).unwrap();
    assert!(!bytes.is_empty());
}

#[test]
fn out_of_descriptors_the_listener_pauses_and_open_connections_are_served() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("logd.log");
    let daemon = Daemon::start_with_file_limit(
        &dir.path().join("data"),
        &[
            "--max-connections",
            "1000",
            "--metrics-listen",
            "127.0.0.1:0",
        ],
        128,
        &log,
    );
    let metrics = daemon.metrics.clone().unwrap();
    let mut client = logd_client::Client::connect(&daemon.addr).unwrap();
    client.create_topic("held", 1, &[]).unwrap();
    round_trip(&mut client, 0);

    // 300 clients: the first hundred or so are accepted; the rest wait in the kernel's queue
    // while every accept fails.
    let addr: SocketAddr = daemon.addr.parse().unwrap();
    let crowd: Vec<TcpStream> = (0..300)
        .filter_map(|_| TcpStream::connect_timeout(&addr, Duration::from_millis(200)).ok())
        .collect();
    let cpu_before = cpu_seconds(daemon.pid());
    let started = Instant::now();
    let mut served = 0;
    while started.elapsed() < Duration::from_secs(4) {
        round_trip(&mut client, served);
        served += 1;
        std::thread::sleep(Duration::from_millis(20));
    }
    let elapsed = started.elapsed().as_secs_f64();
    let cpu = (cpu_seconds(daemon.pid()) - cpu_before) / elapsed;
    let lines = std::fs::read_to_string(&log).unwrap();
    let accept_lines = lines
        .lines()
        .filter(|l| l.contains("accept failed"))
        .count();
    super::say(&format!(
        "logd out of descriptors: {} clients connected, {cpu:.3} of a core over {elapsed:.1} s, \
         {accept_lines} accept-failure lines, {served} round trips of a held connection",
        crowd.len()
    ));
    assert!(crowd.len() > 128, "more clients than descriptors connected");
    assert!(
        lines.contains("Too many open files"),
        "the condition is logged: {lines}"
    );
    assert!(
        cpu < 0.25,
        "the broker used {cpu:.2} of a core while out of descriptors"
    );
    assert!(
        accept_lines <= 8,
        "{accept_lines} lines about failed accepts in {elapsed:.1} s:\n{lines}"
    );

    // Once clients leave, the listener accepts again: a new client and a scrape are served.
    drop(crowd);
    super::wait_until("a new client is accepted", Duration::from_secs(10), || {
        logd_client::Client::connect(&daemon.addr)
            .and_then(|mut c| c.create_topic("after", 1, &[]))
            .is_ok()
    });
    let failures = scrape(&metrics)["logd_accept_failures_total"];
    assert!(failures >= 1.0, "accept failures counted: {failures}");
}
