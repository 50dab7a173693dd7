//! Three brokers in front of one `logd`: a test cluster for the calls librdkafka's mock cluster
//! does not answer (CreateTopics, DeleteTopics, CreatePartitions, ListGroups, DescribeGroups,
//! DeleteGroups). Each broker is a proxy that forwards to the daemon and answers as one broker
//! of a cluster would: Metadata names the three brokers, broker 2 as the controller, and
//! partition `p` of every topic led by broker `1 + p % 2`; FindCoordinator names broker 1 for
//! every group; ListGroups on brokers 2 and 3 lists nothing (their groups would be the ones
//! they coordinate). Broker 3 leads nothing and coordinates nothing: the bootstrap a test gives.
//!
//! A request that reaches a broker which would refuse it on a real cluster (a partition it
//! does not lead: NOT_LEADER_OR_FOLLOWER; a group it does not coordinate: NOT_COORDINATOR; a
//! topic change off the controller: NOT_CONTROLLER) is forwarded anyway and recorded as a
//! misroute, so a test can assert that the client sent none.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, BrokerId, FindCoordinatorResponse, ListGroupsResponse, MetadataResponse, RequestHeader,
    RequestKind, ResponseHeader,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use parking_lot::Mutex;

/// The broker every group's coordinator is.
pub const COORDINATOR: i32 = 1;
/// The controller: topic creation, deletion and new partitions go here.
pub const CONTROLLER: i32 = 2;
/// The broker that leads and coordinates nothing.
pub const BYSTANDER: i32 = 3;

/// The leader of partition `partition` of any topic.
fn leader(partition: i32) -> i32 {
    1 + partition % 2
}

/// The running façade; its brokers stop accepting when the test process ends.
pub struct Facade {
    /// `host:port` of brokers 1, 2 and 3.
    pub brokers: Vec<String>,
    misroutes: Arc<Mutex<Vec<String>>>,
}

struct Shared {
    upstream: String,
    ports: Vec<u16>,
    misroutes: Arc<Mutex<Vec<String>>>,
}

impl Facade {
    /// Three brokers in front of the Kafka listener at `upstream`.
    pub fn start(upstream: &str) -> Facade {
        let listeners: Vec<TcpListener> = (0..3)
            .map(|_| TcpListener::bind("127.0.0.1:0").expect("bind a broker"))
            .collect();
        let ports: Vec<u16> = listeners
            .iter()
            .map(|l| l.local_addr().unwrap().port())
            .collect();
        let misroutes = Arc::new(Mutex::new(Vec::new()));
        let shared = Arc::new(Shared {
            upstream: upstream.to_owned(),
            ports: ports.clone(),
            misroutes: misroutes.clone(),
        });
        for (index, listener) in listeners.into_iter().enumerate() {
            let shared = shared.clone();
            let node = index as i32 + 1;
            std::thread::spawn(move || {
                for client in listener.incoming().flatten() {
                    let shared = shared.clone();
                    std::thread::spawn(move || serve(node, client, &shared));
                }
            });
        }
        Facade {
            brokers: ports.iter().map(|p| format!("127.0.0.1:{p}")).collect(),
            misroutes,
        }
    }

    /// The address of broker `node` (1 to 3).
    pub fn broker(&self, node: i32) -> &str {
        &self.brokers[node as usize - 1]
    }

    /// The requests that reached a broker a real cluster's would have refused, so far.
    pub fn misroutes(&self) -> Vec<String> {
        self.misroutes.lock().clone()
    }
}

/// One client connection to broker `node`: each request is checked, forwarded, and its answer
/// rewritten as that broker's, one at a time.
fn serve(node: i32, mut client: TcpStream, shared: &Shared) {
    let Ok(mut upstream) = TcpStream::connect(&shared.upstream) else {
        return;
    };
    while let Some(request) = read_frame(&mut client) {
        let keyed = check(node, &request, shared);
        if write_frame(&mut upstream, &request).is_err() {
            break;
        }
        let Some(response) = read_frame(&mut upstream) else {
            break;
        };
        let response = match keyed {
            Some((api_key, version)) => rewrite(node, api_key, version, response, &shared.ports),
            None => response,
        };
        if write_frame(&mut client, &response).is_err() {
            break;
        }
    }
    let _ = client.shutdown(Shutdown::Both);
    let _ = upstream.shutdown(Shutdown::Both);
}

fn read_frame(stream: &mut TcpStream) -> Option<Bytes> {
    let mut size = [0u8; 4];
    stream.read_exact(&mut size).ok()?;
    let mut frame = vec![0u8; i32::from_be_bytes(size).max(0) as usize];
    stream.read_exact(&mut frame).ok()?;
    Some(Bytes::from(frame))
}

fn write_frame(stream: &mut TcpStream, frame: &[u8]) -> std::io::Result<()> {
    stream.write_all(&(frame.len() as i32).to_be_bytes())?;
    stream.write_all(frame)
}

/// Records a misroute if broker `node` would refuse `request`; its API key and version, unless
/// it is not a request this façade knows (forwarded as it is, its answer too).
fn check(node: i32, request: &Bytes, shared: &Shared) -> Option<(ApiKey, i16)> {
    let mut bytes = request.clone();
    let key = i16::from_be_bytes([*request.first()?, *request.get(1)?]);
    let version = i16::from_be_bytes([*request.get(2)?, *request.get(3)?]);
    let api_key = ApiKey::try_from(key).ok()?;
    RequestHeader::decode(&mut bytes, api_key.request_header_version(version)).ok()?;
    let Ok(body) = RequestKind::decode(api_key, &mut bytes, version) else {
        return Some((api_key, version));
    };
    let refusal = match body {
        RequestKind::Produce(r) => not_led(
            node,
            r.topic_data
                .iter()
                .flat_map(|t| t.partition_data.iter().map(|p| p.index)),
        ),
        RequestKind::Fetch(r) => not_led(
            node,
            r.topics
                .iter()
                .flat_map(|t| t.partitions.iter().map(|p| p.partition)),
        ),
        RequestKind::ListOffsets(r) => not_led(
            node,
            r.topics
                .iter()
                .flat_map(|t| t.partitions.iter().map(|p| p.partition_index)),
        ),
        RequestKind::OffsetForLeaderEpoch(r) => not_led(
            node,
            r.topics
                .iter()
                .flat_map(|t| t.partitions.iter().map(|p| p.partition)),
        ),
        RequestKind::OffsetCommit(_)
        | RequestKind::OffsetFetch(_)
        | RequestKind::JoinGroup(_)
        | RequestKind::Heartbeat(_)
        | RequestKind::LeaveGroup(_)
        | RequestKind::SyncGroup(_)
        | RequestKind::DescribeGroups(_)
        | RequestKind::DeleteGroups(_)
        | RequestKind::OffsetDelete(_) => {
            (node != COORDINATOR).then_some("NOT_COORDINATOR".to_owned())
        }
        RequestKind::CreateTopics(_)
        | RequestKind::DeleteTopics(_)
        | RequestKind::CreatePartitions(_) => {
            (node != CONTROLLER).then_some("NOT_CONTROLLER".to_owned())
        }
        _ => None,
    };
    if let Some(refusal) = refusal {
        shared.misroutes.lock().push(format!(
            "{api_key:?} v{version} to broker {node}: {refusal}"
        ));
    }
    Some((api_key, version))
}

/// Why broker `node` would refuse a request for `partitions`, if it would.
fn not_led(node: i32, partitions: impl Iterator<Item = i32>) -> Option<String> {
    let foreign: Vec<i32> = partitions.filter(|&p| leader(p) != node).collect();
    (!foreign.is_empty()).then(|| format!("NOT_LEADER_OR_FOLLOWER for partitions {foreign:?}"))
}

/// The daemon's answer as broker `node` of the cluster gives it.
fn rewrite(node: i32, api_key: ApiKey, version: i16, response: Bytes, ports: &[u16]) -> Bytes {
    let header_version = api_key.response_header_version(version);
    let mut bytes = response.clone();
    let Ok(header) = ResponseHeader::decode(&mut bytes, header_version) else {
        return response;
    };
    let mut out = BytesMut::new();
    header.encode(&mut out, header_version).unwrap();
    let host = StrBytes::from_static_str("127.0.0.1");
    let port = |node: i32| ports[node as usize - 1] as i32;
    match api_key {
        ApiKey::Metadata => {
            let mut metadata = MetadataResponse::decode(&mut bytes, version).unwrap();
            metadata.brokers = (1..=3)
                .map(|id| {
                    let mut broker =
                        kafka_protocol::messages::metadata_response::MetadataResponseBroker::default();
                    broker.node_id = BrokerId(id);
                    broker.host = host.clone();
                    broker.port = port(id);
                    broker
                })
                .collect();
            if version >= 1 {
                metadata.controller_id = BrokerId(CONTROLLER);
            }
            for topic in &mut metadata.topics {
                for partition in &mut topic.partitions {
                    let leader = BrokerId(leader(partition.partition_index));
                    partition.leader_id = leader;
                    partition.replica_nodes = vec![leader];
                    partition.isr_nodes = vec![leader];
                }
            }
            metadata.encode(&mut out, version).unwrap();
        }
        ApiKey::FindCoordinator => {
            let mut found = FindCoordinatorResponse::decode(&mut bytes, version).unwrap();
            if version < 4 {
                found.node_id = BrokerId(COORDINATOR);
                found.host = host.clone();
                found.port = port(COORDINATOR);
            }
            for coordinator in &mut found.coordinators {
                coordinator.node_id = BrokerId(COORDINATOR);
                coordinator.host = host.clone();
                coordinator.port = port(COORDINATOR);
            }
            found.encode(&mut out, version).unwrap();
        }
        ApiKey::ListGroups if node != COORDINATOR => {
            let mut listed = ListGroupsResponse::decode(&mut bytes, version).unwrap();
            listed.groups.clear();
            listed.encode(&mut out, version).unwrap();
        }
        _ => return response,
    }
    out.freeze()
}
