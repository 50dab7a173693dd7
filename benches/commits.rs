//! Offset commits from many consumers against a running `logd` (benches/commits.sh starts
//! it): CONSUMERS consumers, each its own group committing its own partition's offset with
//! OffsetCommit v8 (120 bytes of metadata, as consumer libraries write), spread over
//! CONNECTIONS connections that commit one consumer after another without a pause, for
//! SECONDS. Every 30 s, and at the end, it prints the commits/s since the last line and the
//! bytes of DATA_DIR/offsets: the offset store's disk use under load that never pauses.
//!
//! `cargo bench -p logd-benches --bench commits -- ADDR DATA_DIR CONSUMERS CONNECTIONS SECONDS`

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::{
    ApiKey, GroupId, OffsetCommitRequest, OffsetCommitResponse, RequestHeader, ResponseHeader,
    TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

const VERSION: i16 = 8;
const TOPIC: &str = "ledger";

fn commit_frame(group: &str, partition: i32, offset: i64, correlation: i32) -> Vec<u8> {
    let mut p = OffsetCommitRequestPartition::default();
    p.partition_index = partition;
    p.committed_offset = offset;
    p.committed_metadata = Some(StrBytes::from_string(format!("{offset:0>120}")));
    let mut topic = OffsetCommitRequestTopic::default();
    topic.name = TopicName(StrBytes::from_static_str(TOPIC));
    topic.partitions = vec![p];
    let mut request = OffsetCommitRequest::default();
    request.group_id = GroupId(StrBytes::from_string(group.to_owned()));
    request.generation_id_or_member_epoch = -1;
    request.topics = vec![topic];
    let mut header = RequestHeader::default();
    header.request_api_key = ApiKey::OffsetCommit as i16;
    header.request_api_version = VERSION;
    header.correlation_id = correlation;
    header.client_id = Some(StrBytes::from_static_str("commits-bench"));
    let mut body = BytesMut::new();
    header
        .encode(
            &mut body,
            ApiKey::OffsetCommit.request_header_version(VERSION),
        )
        .expect("header");
    request.encode(&mut body, VERSION).expect("request");
    let mut frame = (body.len() as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    frame
}

fn answer(stream: &mut TcpStream) -> OffsetCommitResponse {
    let mut size = [0u8; 4];
    stream.read_exact(&mut size).expect("a response");
    let mut body = vec![0u8; u32::from_be_bytes(size) as usize];
    stream.read_exact(&mut body).expect("a response");
    let mut body = Bytes::from(body);
    let version = ApiKey::OffsetCommit.response_header_version(VERSION);
    ResponseHeader::decode(&mut body, version).expect("header");
    let response = OffsetCommitResponse::decode(&mut body, VERSION).expect("answer");
    assert!(!body.has_remaining() || body.remaining() < 8);
    response
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let [addr, data, consumers, connections, seconds] = &args[..] else {
        eprintln!("usage: commits ADDR DATA_DIR CONSUMERS CONNECTIONS SECONDS");
        std::process::exit(2);
    };
    let consumers: usize = consumers.parse().expect("CONSUMERS");
    let connections: usize = connections.parse().expect("CONNECTIONS");
    let seconds: u64 = seconds.parse().expect("SECONDS");
    let offsets = Path::new(data).join("offsets");
    let stop = Arc::new(AtomicBool::new(false));
    let commits = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..connections)
        .map(|c| {
            let (stop, commits, addr) = (stop.clone(), commits.clone(), addr.clone());
            std::thread::spawn(move || {
                let mut stream = TcpStream::connect(&addr).expect("connect");
                stream.set_nodelay(true).expect("nodelay");
                let mine: Vec<usize> = (c..consumers).step_by(connections).collect();
                let mut offset = 0i64;
                let mut correlation = 0;
                while !stop.load(Ordering::Relaxed) {
                    offset += 1;
                    for &consumer in &mine {
                        correlation += 1;
                        let group = format!("consumer-{consumer:05}");
                        let frame =
                            commit_frame(&group, (consumer % 8) as i32, offset, correlation);
                        stream.write_all(&frame).expect("send");
                        let response = answer(&mut stream);
                        let code = response.topics[0].partitions[0].error_code;
                        assert_eq!(code, 0, "{group}");
                        commits.fetch_add(1, Ordering::Relaxed);
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                    }
                }
            })
        })
        .collect();
    let started = Instant::now();
    let (mut last_at, mut last_count, mut peak) = (started, 0, 0);
    while started.elapsed() < Duration::from_secs(seconds) {
        std::thread::sleep(Duration::from_secs(1));
        let bytes = dir_bytes(&offsets);
        peak = peak.max(bytes);
        if last_at.elapsed() >= Duration::from_secs(30) {
            let count = commits.load(Ordering::Relaxed);
            let rate = (count - last_count) as f64 / last_at.elapsed().as_secs_f64();
            println!(
                "{:>5.0} s: {rate:>7.0} commits/s, offsets/ {:.1} MB (peak {:.1} MB)",
                started.elapsed().as_secs_f64(),
                bytes as f64 / 1e6,
                peak as f64 / 1e6
            );
            (last_at, last_count) = (Instant::now(), count);
        }
    }
    stop.store(true, Ordering::Relaxed);
    for worker in workers {
        worker.join().expect("a worker");
    }
    let total = commits.load(Ordering::Relaxed);
    println!(
        "{consumers} consumers over {connections} connections: {total} commits in {:.0} s \
         ({:.0}/s), offsets/ {:.1} MB at the end, peak {:.1} MB",
        started.elapsed().as_secs_f64(),
        total as f64 / started.elapsed().as_secs_f64(),
        dir_bytes(&offsets) as f64 / 1e6,
        peak as f64 / 1e6
    );
}
