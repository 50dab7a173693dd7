//! Produce requests that must be refused get Kafka's error codes, store nothing, and keep the
//! connection: a corrupt CRC, an unsupported magic, an oversized batch, invalid acks, an unknown
//! partition. With acks = 0 no response is sent at all.

use std::io::Read;
use std::net::TcpStream;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, ProduceRequest, ProduceResponse, ResponseHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, StrBytes};
use logd_storage::batch::{BatchBuilder, Compression};

use super::{Daemon, librdkafka, write_request};

const VERSION: i16 = 7;

fn batch(values: &[&[u8]]) -> Vec<u8> {
    let mut builder = BatchBuilder::new(Compression::None);
    for v in values {
        builder.push(1_700_000_000_000, None, Some(v), &[]);
    }
    builder.build(0).unwrap()
}

fn send(stream: &mut TcpStream, correlation_id: i32, partition: i32, acks: i16, records: Vec<u8>) {
    let mut data = PartitionProduceData::default();
    data.index = partition;
    data.records = Some(Bytes::from(records));
    let mut topic = TopicProduceData::default();
    topic.name = TopicName(StrBytes::from_static_str("errs"));
    topic.partition_data = vec![data];
    let mut request = ProduceRequest::default();
    request.acks = acks;
    request.timeout_ms = 5000;
    request.topic_data = vec![topic];
    write_request(stream, ApiKey::Produce, VERSION, correlation_id, &request);
}

/// Reads one size-prefixed response and decodes its header.
fn read_response(stream: &mut TcpStream, api_key: ApiKey, version: i16) -> (ResponseHeader, Bytes) {
    let mut size = [0u8; 4];
    stream.read_exact(&mut size).unwrap();
    let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
    stream.read_exact(&mut body).unwrap();
    let mut body = Bytes::from(body);
    let header =
        ResponseHeader::decode(&mut body, api_key.response_header_version(version)).unwrap();
    (header, body)
}

/// Reads one response: (correlation id, error code, base offset).
fn receive(stream: &mut TcpStream) -> (i32, i16, i64) {
    let (header, mut body) = read_response(stream, ApiKey::Produce, VERSION);
    let response = ProduceResponse::decode(&mut body, VERSION).unwrap();
    let partition = &response.responses[0].partition_responses[0];
    (
        header.correlation_id,
        partition.error_code,
        partition.base_offset,
    )
}

/// One record from idempotent producer `id`/`epoch` at `sequence`.
fn idempotent(id: i64, epoch: i16, sequence: i32, value: &[u8]) -> Vec<u8> {
    let mut builder = BatchBuilder::new(Compression::None).producer(id, epoch, sequence);
    builder.push(1_700_000_000_000, None, Some(value), &[]);
    builder.build(0).unwrap()
}

/// InitProducerId v1 on `stream`: the producer id.
fn init_producer_id(stream: &mut TcpStream, correlation_id: i32) -> i64 {
    use kafka_protocol::messages::{InitProducerIdRequest, InitProducerIdResponse};
    let mut request = InitProducerIdRequest::default();
    // Null, as idempotent producers send it (the codec's default is "", which Kafka's
    // coordinator refuses as an empty transactional id).
    request.transactional_id = None;
    request.transaction_timeout_ms = 60_000;
    write_request(stream, ApiKey::InitProducerId, 1, correlation_id, &request);
    let (header, mut body) = read_response(stream, ApiKey::InitProducerId, 1);
    assert_eq!(header.correlation_id, correlation_id);
    let response = InitProducerIdResponse::decode(&mut body, 1).unwrap();
    assert_eq!(response.error_code, 0);
    response.producer_id.0
}

#[test]
fn refused_batches_get_kafka_error_codes_and_store_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &[]);
    let mut stream = TcpStream::connect(&daemon.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();

    send(&mut stream, 1, 0, -1, batch(&[b"first"]));
    assert_eq!(
        receive(&mut stream),
        (1, 0, 0),
        "a good batch is stored at offset 0"
    );

    let mut corrupt = batch(&[b"bad crc"]);
    let last = corrupt.len() - 1;
    corrupt[last] ^= 0x01;
    send(&mut stream, 2, 0, -1, corrupt);
    assert_eq!(receive(&mut stream).1, 2, "CORRUPT_MESSAGE");

    let mut old_magic = batch(&[b"magic 1"]);
    old_magic[16] = 1;
    send(&mut stream, 3, 0, -1, old_magic);
    assert_eq!(
        receive(&mut stream).1,
        2,
        "CORRUPT_MESSAGE, as Kafka answers another magic"
    );

    let big = vec![b'x'; 2 << 20];
    send(&mut stream, 4, 0, -1, batch(&[&big]));
    assert_eq!(receive(&mut stream).1, 10, "MESSAGE_TOO_LARGE");

    send(&mut stream, 5, 0, 5, batch(&[b"acks 5"]));
    assert_eq!(receive(&mut stream).1, 21, "INVALID_REQUIRED_ACKS");

    send(&mut stream, 6, 9, -1, batch(&[b"no such partition"]));
    assert_eq!(receive(&mut stream).1, 3, "UNKNOWN_TOPIC_OR_PARTITION");

    // acks = 0: stored, but no response; the next response belongs to the next request.
    send(&mut stream, 7, 0, 0, batch(&[b"fire and forget"]));
    send(&mut stream, 8, 0, 1, batch(&[b"last"]));
    assert_eq!(
        receive(&mut stream),
        (8, 0, 2),
        "no response for acks=0, and its record took offset 1"
    );

    // Idempotent producers' bad input, on the same connection.
    let id = init_producer_id(&mut stream, 9);
    send(&mut stream, 10, 0, -1, idempotent(id, 0, 0, b"idem"));
    assert_eq!(receive(&mut stream), (10, 0, 3));
    send(&mut stream, 11, 0, -1, idempotent(id, 0, 0, b"idem"));
    assert_eq!(
        receive(&mut stream),
        (11, 0, 3),
        "a retry: the original offset"
    );
    send(&mut stream, 12, 0, -1, idempotent(id, 0, 5, b"gap"));
    assert_eq!(receive(&mut stream).1, 45, "OUT_OF_ORDER_SEQUENCE_NUMBER");
    send(&mut stream, 13, 0, -1, idempotent(id, -1, 1, b"no epoch"));
    assert_eq!(receive(&mut stream).1, 87, "INVALID_RECORD");
    send(&mut stream, 14, 0, -1, idempotent(id, 0, -1, b"negative"));
    assert_eq!(receive(&mut stream).1, 87, "INVALID_RECORD");
    send(
        &mut stream,
        15,
        0,
        -1,
        idempotent(id + 1_000_000, 0, 0, b"forged"),
    );
    assert_eq!(receive(&mut stream).1, 59, "UNKNOWN_PRODUCER_ID");
    send(&mut stream, 16, 0, -1, batch(&[b"after"]));
    assert_eq!(
        receive(&mut stream),
        (16, 0, 4),
        "the connection is served on"
    );

    let stored: String = librdkafka::consume(&daemon.addr, "errs", librdkafka::Offset::Beginning)
        .iter()
        .map(|r| format!("{} {}\n", r.offset, r.value))
        .collect();
    assert_eq!(
        stored, "0 first\n1 fire and forget\n2 last\n3 idem\n4 after\n",
        "refused batches left nothing behind"
    );
}

/// One Fetch of `partition` from `offset` with the given byte limits: (error code, records).
fn fetch(
    stream: &mut TcpStream,
    offset: i64,
    partition_max_bytes: i32,
    max_bytes: i32,
) -> (i16, Bytes) {
    use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    use kafka_protocol::messages::{BrokerId, FetchRequest, FetchResponse};
    const FETCH: i16 = 11;
    let mut partition = FetchPartition::default();
    partition.fetch_offset = offset;
    partition.partition_max_bytes = partition_max_bytes;
    let mut topic = FetchTopic::default();
    topic.topic = TopicName(StrBytes::from_static_str("errs"));
    topic.partitions = vec![partition];
    let mut request = FetchRequest::default();
    request.replica_id = BrokerId(-1);
    request.max_bytes = max_bytes;
    request.topics = vec![topic];
    write_request(stream, ApiKey::Fetch, FETCH, 99, &request);
    let (_, mut body) = read_response(stream, ApiKey::Fetch, FETCH);
    let response = FetchResponse::decode(&mut body, FETCH).unwrap();
    let data = &response.responses[0].partitions[0];
    (data.error_code, data.records.clone().unwrap_or_default())
}

fn batches_in(records: &Bytes) -> usize {
    logd_storage::batch::BatchIter::new(records, 0).count()
}

#[test]
fn a_fetch_returns_batches_up_to_its_limits_and_at_least_one() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &[]);
    let mut stream = TcpStream::connect(&daemon.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    for i in 0..5 {
        send(
            &mut stream,
            i,
            0,
            -1,
            batch(&[format!("record {i}").as_bytes()]),
        );
        assert_eq!(receive(&mut stream).1, 0);
    }
    let (code, records) = fetch(&mut stream, 0, 1 << 20, 50 << 20);
    assert_eq!(
        (code, batches_in(&records)),
        (0, 5),
        "every batch fits the limits"
    );
    let (_, records) = fetch(&mut stream, 1, 1 << 20, 50 << 20);
    assert_eq!(batches_in(&records), 4, "from the batch holding the offset");
    let (_, records) = fetch(&mut stream, 0, 1, 1);
    assert_eq!(
        batches_in(&records),
        1,
        "one batch even over both limits (KIP-74)"
    );
    let (code, _) = fetch(&mut stream, 9, 1 << 20, 50 << 20);
    assert_eq!(code, 1, "OFFSET_OUT_OF_RANGE beyond the end");
}
