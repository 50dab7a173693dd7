//! Helpers shared by the wire-level test modules: one request through
//! `Broker::handle_frame`, as a client would send it, and its decoded response.

use bytes::{Buf, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use logd_kafka::Broker;

/// A `StrBytes` of `text`.
pub fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_owned())
}

/// Sends `request` as API `key` at `version` and decodes the response.
pub fn call<Req: Encodable, Resp: Decodable>(
    broker: &Broker,
    key: ApiKey,
    version: i16,
    request: &Req,
) -> Resp {
    let mut header = RequestHeader::default();
    header.request_api_key = key as i16;
    header.request_api_version = version;
    header.correlation_id = 7;
    header.client_id = Some(s("tester"));
    let mut frame = BytesMut::new();
    header
        .encode(&mut frame, key.request_header_version(version))
        .unwrap();
    request.encode(&mut frame, version).unwrap();
    let response = broker
        .handle_frame(frame.freeze(), "/10.0.0.9")
        .unwrap()
        .expect("a response");
    let mut response = response.freeze();
    response.advance(4);
    let header =
        ResponseHeader::decode(&mut response, key.response_header_version(version)).unwrap();
    assert_eq!(header.correlation_id, 7);
    Resp::decode(&mut response, version).unwrap()
}
