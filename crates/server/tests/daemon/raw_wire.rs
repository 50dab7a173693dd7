//! Raw Kafka requests for the tests that compare logd's answers with a real Kafka's, request
//! by request: one connection, one request at a time, as `kafka-protocol` encodes it, the way
//! to a group's or transactional id's coordinator or a partition's leader, and the comparison
//! itself.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use bytes::{Buf, BytesMut};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    ApiKey, FindCoordinatorRequest, FindCoordinatorResponse, MetadataRequest, MetadataResponse,
    RequestHeader, ResponseHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

use super::Daemon;
use super::kafka_cluster::kafka_cluster;

/// FindCoordinator's key types.
pub const GROUP_KEY: i8 = 0;
pub const TRANSACTION_KEY: i8 = 1;

pub fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_owned())
}

/// One connection, one request at a time.
pub struct Raw {
    stream: TcpStream,
    correlation: i32,
}

impl Raw {
    pub fn connect(addr: &str) -> Raw {
        let stream = TcpStream::connect(addr).unwrap_or_else(|e| panic!("{addr}: {e}"));
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        Raw {
            stream,
            correlation: 0,
        }
    }

    /// Sends `request` as API `key` at `version` and decodes the whole answer.
    pub fn call<Req: Encodable, Resp: Decodable>(
        &mut self,
        key: ApiKey,
        version: i16,
        request: &Req,
    ) -> Resp {
        self.correlation += 1;
        let mut header = RequestHeader::default();
        header.request_api_key = key as i16;
        header.request_api_version = version;
        header.correlation_id = self.correlation;
        header.client_id = Some(s("vs-kafka"));
        let mut body = BytesMut::new();
        header
            .encode(&mut body, key.request_header_version(version))
            .unwrap();
        request.encode(&mut body, version).unwrap();
        let mut frame = (body.len() as i32).to_be_bytes().to_vec();
        frame.extend_from_slice(&body);
        self.stream.write_all(&frame).unwrap();
        let mut size = [0u8; 4];
        self.stream.read_exact(&mut size).unwrap();
        let mut answer = vec![0u8; i32::from_be_bytes(size) as usize];
        self.stream.read_exact(&mut answer).unwrap();
        let mut answer = bytes::Bytes::from(answer);
        let header =
            ResponseHeader::decode(&mut answer, key.response_header_version(version)).unwrap();
        assert_eq!(header.correlation_id, self.correlation);
        let response = Resp::decode(&mut answer, version).unwrap();
        assert!(
            !answer.has_remaining(),
            "{key:?} v{version}: bytes left over"
        );
        response
    }
}

/// A connection to the coordinator of `key` (of `key_type`) among `bootstrap`'s brokers
/// (FindCoordinator v2), found again, as clients do, while the cluster is still creating or
/// loading its internal topic: `probe` sends a harmless request there and returns its code,
/// and COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE or NOT_COORDINATOR mean wait.
pub fn coordinator(
    bootstrap: &str,
    key_type: i8,
    key: &str,
    probe: impl Fn(&mut Raw) -> i16,
) -> Raw {
    let mut first = Raw::connect(bootstrap.split(',').next().unwrap());
    let mut request = FindCoordinatorRequest::default();
    request.key = s(key);
    request.key_type = key_type;
    let started = Instant::now();
    loop {
        let found: FindCoordinatorResponse = first.call(ApiKey::FindCoordinator, 2, &request);
        let code = match found.error_code {
            0 => {
                let mut c = Raw::connect(&format!("{}:{}", found.host.as_str(), found.port));
                match probe(&mut c) {
                    code @ 14..=16 => code,
                    _ => return c,
                }
            }
            code => code,
        };
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no coordinator for {key}: code {code}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A connection to the leader of `topic`'s `partition` (Metadata v4 from the first broker).
pub fn leader(bootstrap: &str, topic: &str, partition: i32) -> Raw {
    let mut first = Raw::connect(bootstrap.split(',').next().unwrap());
    let mut t = MetadataRequestTopic::default();
    t.name = Some(TopicName(s(topic)));
    let mut request = MetadataRequest::default();
    request.topics = Some(vec![t]);
    let metadata: MetadataResponse = first.call(ApiKey::Metadata, 4, &request);
    let id = metadata.topics[0]
        .partitions
        .iter()
        .find(|p| p.partition_index == partition)
        .unwrap()
        .leader_id;
    let broker = metadata.brokers.iter().find(|b| b.node_id == id).unwrap();
    Raw::connect(&format!("{}:{}", broker.host.as_str(), broker.port))
}

/// Runs `script` (one line per request: what was asked, what came back) against a fresh logd
/// and against the shared Kafka cluster, asserts the lines are the same, and that Kafka's
/// include each of `reached` (the refusals the script means to compare).
pub fn same_answers_as_kafka(script: impl Fn(&str) -> Vec<String>, reached: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    // As the Kafka cluster runs: ACLs on, the anonymous user a super user.
    let daemon = Daemon::start(
        dir.path(),
        &["--authorizer", "acl", "--super-users", "User:ANONYMOUS"],
    );
    let on_logd = script(&daemon.addr);
    let on_kafka = script(&kafka_cluster().bootstrap);
    assert_eq!(on_logd, on_kafka, "logd (left) and Kafka (right)");
    for line in reached {
        assert!(on_kafka.iter().any(|l| l == line), "{line}: {on_kafka:#?}");
    }
}
