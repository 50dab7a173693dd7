//! Bad frames: a negative or oversized size, an unknown API, an unsupported version, a body
//! that does not parse. Each gets Kafka's answer (a closed connection, or ApiVersions' error
//! 35), and the daemon serves well-behaved clients afterwards.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use super::{Daemon, librdkafka};

fn connect(addr: &str) -> TcpStream {
    let stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
}

/// True if the server closed the connection (read returns 0 or a reset).
fn closed(mut stream: TcpStream) -> bool {
    let mut buf = [0u8; 64];
    matches!(stream.read(&mut buf), Ok(0) | Err(_))
}

fn frame(api_key: i16, version: i16, body: &[u8]) -> Vec<u8> {
    let mut payload = Vec::new();
    payload.extend_from_slice(&api_key.to_be_bytes());
    payload.extend_from_slice(&version.to_be_bytes());
    payload.extend_from_slice(&7i32.to_be_bytes()); // correlation id
    payload.extend_from_slice(&(-1i16).to_be_bytes()); // null client id
    payload.extend_from_slice(body);
    let mut out = (payload.len() as i32).to_be_bytes().to_vec();
    out.extend_from_slice(&payload);
    out
}

#[test]
fn malformed_frames_are_answered_or_cut_off_and_service_continues() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &["--max-request-bytes", "4096"]);
    let addr = daemon.addr.as_str();

    let mut negative = connect(addr);
    negative.write_all(&(-5i32).to_be_bytes()).unwrap();
    assert!(closed(negative), "a negative size closes the connection");

    let mut oversized = connect(addr);
    oversized.write_all(&(1i32 << 20).to_be_bytes()).unwrap();
    assert!(
        closed(oversized),
        "a frame over max_request_bytes closes before anything is read"
    );

    let mut unknown = connect(addr);
    unknown.write_all(&frame(999, 0, &[])).unwrap();
    assert!(closed(unknown), "an unknown API key closes the connection");

    let mut garbage = connect(addr);
    // Metadata v1 whose topic array claims 2^31-1 entries but carries none.
    garbage
        .write_all(&frame(3, 1, &i32::MAX.to_be_bytes()))
        .unwrap();
    assert!(closed(garbage), "an unparsable body closes the connection");

    // ApiVersions at an unsupported version: a v0 answer with UNSUPPORTED_VERSION (35).
    let mut too_new = connect(addr);
    too_new.write_all(&frame(18, 99, &[])).unwrap();
    let mut size = [0u8; 4];
    too_new.read_exact(&mut size).unwrap();
    let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
    too_new.read_exact(&mut body).unwrap();
    assert_eq!(
        i32::from_be_bytes(body[0..4].try_into().unwrap()),
        7,
        "correlation id echoed"
    );
    assert_eq!(
        i16::from_be_bytes(body[4..6].try_into().unwrap()),
        35,
        "UNSUPPORTED_VERSION"
    );

    // Everyone else is still served.
    librdkafka::produce(addr, "after", "none", &["still here"]);
    let read = librdkafka::consume(addr, "after", librdkafka::Offset::Beginning);
    assert_eq!(
        read.iter().map(|r| r.value.as_str()).collect::<Vec<_>>(),
        ["still here"]
    );
}
