//! Authentication on the wire against an in-process broker with a SASL_PLAINTEXT listener (all
//! three mechanisms offered) and a SASL_SSL listener: SCRAM-SHA-256/512 and PLAIN logins, the
//! v0 raw-token path, and every refusal the issue lists, each with the code Kafka answers and
//! the connection closed, while other clients are served on.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use base64::Engine;
use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, BrokerId, FetchRequest, FetchResponse,
    MetadataRequest, MetadataResponse, RequestHeader, ResponseHeader, SaslAuthenticateRequest,
    SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use logd::{Config, Log};
use logd_kafka::auth::SaslMechanism;
use logd_kafka::auth::credentials::CredentialStore;
use logd_kafka::auth::scram::{ScramClient, ScramCredential, ScramMechanism};
use logd_kafka::auth::tls::{TlsServer, TlsSettings};
use logd_kafka::{
    Broker, BrokerConfig, BrokerObserver, ConnectionLimits, Listener, ListenerConfig,
    SecurityProtocol,
};
use logd_storage::batch::{BatchBuilder, Compression};

const SASL_AUTHENTICATION_FAILED: i16 = 58;
const ILLEGAL_SASL_STATE: i16 = 34;
const UNSUPPORTED_SASL_MECHANISM: i16 = 33;

#[derive(Debug, Default)]
struct Failures(AtomicU64);

impl BrokerObserver for Failures {
    fn authentication_failed(&self, listener: &str, _mechanism: &str) {
        assert!(listener == "INTERNAL" || listener == "EXTERNAL");
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

struct Server {
    sasl: String,
    tls: String,
    ca: rcgen::Certificate,
    failures: Arc<Failures>,
    _dir: tempfile::TempDir,
}

/// A broker with users `alice` (password `wonderland`, both SCRAM mechanisms), `a,b=c`
/// (`escaped`), and `weak` (a credential of 1,000 iterations written behind the store's back).
fn server() -> Server {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let store = CredentialStore::open(&data).unwrap();
    for m in ScramMechanism::ALL {
        store
            .upsert("alice", m, ScramCredential::new(m, b"wonderland", 4096))
            .unwrap();
    }
    store
        .upsert(
            "a,b=c",
            ScramMechanism::Sha256,
            ScramCredential::new(ScramMechanism::Sha256, b"escaped", 4096),
        )
        .unwrap();
    let mut weak = ScramCredential::new(ScramMechanism::Sha256, b"weak", 4096);
    weak.iterations = 1000;
    let file = store.path();
    let text = std::fs::read_to_string(&file).unwrap();
    let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut alice = json["users"]["alice"]["SCRAM-SHA-256"].clone();
    alice["iterations"] = 1000.into();
    json["users"]["weak"] = serde_json::json!({ "SCRAM-SHA-256": alice });
    std::fs::write(&file, serde_json::to_vec(&json).unwrap()).unwrap();

    let (ca, issuer) = certificate_authority();
    let mut params = rcgen::CertificateParams::new(vec!["localhost".into()]).unwrap();
    params
        .subject_alt_names
        .push(rcgen::SanType::IpAddress("127.0.0.1".parse().unwrap()));
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &issuer).unwrap();
    std::fs::write(dir.path().join("cert.pem"), cert.pem()).unwrap();
    std::fs::write(dir.path().join("key.pem"), key.serialize_pem()).unwrap();
    let tls = Arc::new(
        TlsServer::load(TlsSettings {
            cert: dir.path().join("cert.pem"),
            key: dir.path().join("key.pem"),
            ca: None,
            client_auth: false,
        })
        .unwrap(),
    );

    let failures = Arc::new(Failures::default());
    let broker = Arc::new(
        Broker::new(
            big_topic(&data),
            BrokerConfig {
                request_timeout: Duration::from_secs(1),
                ..BrokerConfig::default()
            },
        )
        .with_observer(failures.clone())
        .with_credentials(Arc::new(store)),
    );
    let bind = || {
        let socket = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        socket.set_nonblocking(true).unwrap();
        socket
    };
    let (sasl_socket, tls_socket) = (bind(), bind());
    let (sasl, tls_addr) = (
        sasl_socket.local_addr().unwrap(),
        tls_socket.local_addr().unwrap(),
    );
    let all = vec![
        SaslMechanism::Scram(ScramMechanism::Sha256),
        SaslMechanism::Scram(ScramMechanism::Sha512),
        SaslMechanism::Plain,
    ];
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let listeners = vec![
                Listener {
                    socket: tokio::net::TcpListener::from_std(sasl_socket).unwrap(),
                    config: ListenerConfig {
                        name: "INTERNAL".into(),
                        protocol: SecurityProtocol::SaslPlaintext,
                        advertised_host: "internal.example".into(),
                        advertised_port: 1111,
                        sasl_mechanisms: all.clone(),
                        tls: None,
                    },
                },
                Listener {
                    socket: tokio::net::TcpListener::from_std(tls_socket).unwrap(),
                    config: ListenerConfig {
                        name: "EXTERNAL".into(),
                        protocol: SecurityProtocol::SaslSsl,
                        advertised_host: "external.example".into(),
                        advertised_port: 2222,
                        sasl_mechanisms: all,
                        tls: Some(tls),
                    },
                },
            ];
            logd_kafka::serve(
                broker,
                listeners,
                ConnectionLimits::default(),
                std::future::pending(),
            )
            .await
        })
    });
    Server {
        sasl: sasl.to_string(),
        tls: tls_addr.to_string(),
        ca,
        failures,
        _dir: dir,
    }
}

/// The engine, with topic `big`: in partition 0 `BIG_BATCHES` batches of one 1,000 KiB record
/// each, in partition 1 one small record.
fn big_topic(data: &Path) -> Log {
    let log = Log::open(data, Config::default()).unwrap();
    let two = logd::TopicConfig {
        partitions: 2,
        ..logd::TopicConfig::default()
    };
    log.create_topic("big", two).unwrap();
    let batch = |value: &[u8]| {
        let mut builder = BatchBuilder::new(Compression::None);
        builder.push(0, None, Some(value), &[]);
        builder.build(0).unwrap()
    };
    for i in 0..BIG_BATCHES {
        log.append("big", 0, &mut batch(&vec![i as u8; 1000 << 10]))
            .unwrap();
    }
    log.append("big", 1, &mut batch(b"small")).unwrap();
    log
}

const BIG_BATCHES: usize = 8;

fn certificate_authority() -> (rcgen::Certificate, rcgen::Issuer<'static, rcgen::KeyPair>) {
    let mut params = rcgen::CertificateParams::new(Vec::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "logd test CA");
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    (cert, rcgen::Issuer::new(params, key))
}

/// A blocking client connection speaking raw frames.
struct Conn<S> {
    stream: S,
    correlation: i32,
}

/// The TCP socket under a connection, plain or TLS.
trait Socket {
    fn tcp(&self) -> &TcpStream;
}

impl Socket for TcpStream {
    fn tcp(&self) -> &TcpStream {
        self
    }
}

impl Socket for rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    fn tcp(&self) -> &TcpStream {
        &self.sock
    }
}

impl<S: Read + Write + Socket> Conn<S> {
    /// After a refusal it answered, the broker leaves the connection open until the client
    /// closes its side (so no client loses the answer to an early close), then closes it.
    fn assert_closed_once_the_client_closes(&mut self) {
        self.stream
            .tcp()
            .set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        let mut byte = [0u8; 1];
        let early = self.stream.read(&mut byte);
        assert!(
            early.as_ref().is_err_and(|e| matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            )),
            "the broker closed first or sent more: {early:?}"
        );
        self.stream
            .tcp()
            .set_read_timeout(Some(Duration::from_secs(1)))
            .unwrap();
        self.stream
            .tcp()
            .shutdown(std::net::Shutdown::Write)
            .unwrap();
        self.assert_closed();
    }
}

fn connect(addr: &str) -> Conn<TcpStream> {
    let stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    Conn {
        stream,
        correlation: 0,
    }
}

impl<S: Read + Write> Conn<S> {
    fn send<Req: Encodable>(&mut self, key: ApiKey, version: i16, request: &Req) {
        self.correlation += 1;
        let mut header = RequestHeader::default();
        header.request_api_key = key as i16;
        header.request_api_version = version;
        header.correlation_id = self.correlation;
        header.client_id = Some(StrBytes::from_static_str("sasl-test"));
        let mut body = BytesMut::new();
        header
            .encode(&mut body, key.request_header_version(version))
            .unwrap();
        request.encode(&mut body, version).unwrap();
        self.send_raw(&body);
    }

    /// Writes a frame. A broker that closes the connection midway (a frame too large) may
    /// make the write fail; the test then sees the close in its next read.
    fn send_raw(&mut self, body: &[u8]) {
        let mut frame = (body.len() as i32).to_be_bytes().to_vec();
        frame.extend_from_slice(body);
        if let Err(e) = self.stream.write_all(&frame) {
            assert!(
                matches!(
                    e.kind(),
                    std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe
                ),
                "write: {e}"
            );
        }
    }

    /// The next frame's body, or `None` when the broker closed the connection.
    fn recv_raw(&mut self) -> Option<Bytes> {
        let mut size = [0u8; 4];
        match self.stream.read_exact(&mut size) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return None,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return None,
            Err(e) => panic!("read: {e}"),
        }
        let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
        self.stream.read_exact(&mut body).unwrap();
        Some(Bytes::from(body))
    }

    fn recv<Resp: Decodable>(&mut self, key: ApiKey, version: i16) -> Resp {
        let mut body = self
            .recv_raw()
            .expect("a response, not a closed connection");
        let header =
            ResponseHeader::decode(&mut body, key.response_header_version(version)).unwrap();
        assert_eq!(header.correlation_id, self.correlation);
        Resp::decode(&mut body, version).unwrap()
    }

    fn call<Req: Encodable, Resp: Decodable>(&mut self, key: ApiKey, v: i16, req: &Req) -> Resp {
        self.send(key, v, req);
        self.recv(key, v)
    }

    fn handshake(&mut self, mechanism: &str) -> SaslHandshakeResponse {
        let mut request = SaslHandshakeRequest::default();
        request.mechanism = StrBytes::from_string(mechanism.into());
        self.call(ApiKey::SaslHandshake, 1, &request)
    }

    fn authenticate(&mut self, token: &[u8]) -> SaslAuthenticateResponse {
        let mut request = SaslAuthenticateRequest::default();
        request.auth_bytes = Bytes::copy_from_slice(token);
        self.call(ApiKey::SaslAuthenticate, 2, &request)
    }

    /// A full SCRAM login; the client's final message is returned for replay tests.
    fn scram(&mut self, m: ScramMechanism, user: &str, password: &str) -> (i16, Vec<u8>) {
        assert_eq!(self.handshake(m.name()).error_code, 0);
        let (mut client, first) = ScramClient::start(m, user, password.as_bytes());
        let server_first = self.authenticate(&first);
        assert_eq!(server_first.error_code, 0);
        let last = client.finish(&server_first.auth_bytes).unwrap();
        let done = self.authenticate(&last);
        if done.error_code == 0 {
            client.verify(&done.auth_bytes).unwrap();
        }
        (done.error_code, last)
    }

    fn metadata(&mut self) -> MetadataResponse {
        self.call(ApiKey::Metadata, 4, &MetadataRequest::default())
    }

    /// The broker closes the connection (within the read timeout) without another frame.
    fn assert_closed(&mut self) {
        assert_eq!(self.rest(), b"", "bytes before the close");
    }

    /// Everything the broker still sends before it closes the connection.
    fn rest(&mut self) -> Vec<u8> {
        let mut rest = Vec::new();
        let mut chunk = [0u8; 256];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(0) => return rest,
                Ok(n) => rest.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return rest,
                Err(e) => panic!("connection still open: {e}"),
            }
        }
    }
}

fn failed_login<S: Read + Write + Socket>(
    conn: &mut Conn<S>,
    response: SaslAuthenticateResponse,
) -> String {
    assert_eq!(response.error_code, SASL_AUTHENTICATION_FAILED);
    conn.assert_closed_once_the_client_closes();
    response.error_message.unwrap().to_string()
}

#[test]
fn scram_logins_on_both_mechanisms_then_requests_are_served_with_this_listeners_address() {
    let server = server();
    for m in ScramMechanism::ALL {
        let mut conn = connect(&server.sasl);
        let versions: ApiVersionsResponse =
            conn.call(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default());
        for key in [ApiKey::SaslHandshake, ApiKey::SaslAuthenticate] {
            assert!(versions.api_keys.iter().any(|k| k.api_key == key as i16));
        }
        assert_eq!(conn.scram(m, "alice", "wonderland").0, 0);
        let metadata = conn.metadata();
        assert_eq!(metadata.brokers[0].host.as_str(), "internal.example");
        assert_eq!(metadata.brokers[0].port, 1111);
    }
    // Escaped names: `a,b=c` travels as `a=2Cb=3Dc`.
    let mut conn = connect(&server.sasl);
    assert_eq!(conn.scram(ScramMechanism::Sha256, "a,b=c", "escaped").0, 0);
    conn.metadata();
    assert_eq!(server.failures.0.load(Ordering::SeqCst), 0);
}

#[test]
fn scram_refusals_answer_58_say_nothing_about_the_user_and_close() {
    let server = server();
    let m = ScramMechanism::Sha256;
    // Wrong password: the proof is wrong.
    let mut conn = connect(&server.sasl);
    let started = Instant::now();
    let (code, _) = conn.scram(m, "alice", "Wonderland");
    assert_eq!(code, SASL_AUTHENTICATION_FAILED);
    assert!(
        started.elapsed() >= Duration::from_millis(100),
        "Kafka's delay before the refusal"
    );
    // A client that neither closes nor sends is closed after the broker's linger (2 s).
    let refused = Instant::now();
    conn.assert_closed();
    let lingered = refused.elapsed();
    assert!(
        lingered >= Duration::from_millis(1500) && lingered < Duration::from_secs(5),
        "{lingered:?}"
    );
    // An unknown user gets a salt and iterations like anyone, and the same refusal.
    let mut conn = connect(&server.sasl);
    assert_eq!(conn.scram(m, "mallory", "x").0, SASL_AUTHENTICATION_FAILED);
    conn.assert_closed_once_the_client_closes();
    // Iterations below 4,096 in a stored credential: logd's own client would stop at the
    // server-first message, so the final message is written by hand.
    let mut conn = connect(&server.sasl);
    assert_eq!(conn.handshake(m.name()).error_code, 0);
    let server_first = conn.authenticate(b"n,,n=weak,r=abcdef").auth_bytes;
    let server_first = String::from_utf8(server_first.to_vec()).unwrap();
    assert!(server_first.ends_with(",i=1000"), "{server_first}");
    let nonce = server_first.split(',').next().unwrap();
    let proof = base64::engine::general_purpose::STANDARD.encode([0u8; 32]);
    let response = conn.authenticate(format!("c=biws,{nonce},p={proof}").as_bytes());
    failed_login(&mut conn, response);

    // A client-final message replayed on another connection: the server's nonce differs.
    let mut first = connect(&server.sasl);
    let (code, recorded) = first.scram(m, "alice", "wonderland");
    assert_eq!(code, 0);
    let mut replay = connect(&server.sasl);
    assert_eq!(replay.handshake(m.name()).error_code, 0);
    let (_, client_first) = ScramClient::start(m, "alice", b"wonderland");
    assert_eq!(replay.authenticate(&client_first).error_code, 0);
    let response = replay.authenticate(&recorded);
    let replayed = failed_login(&mut replay, response);

    // A nonce that does not end with the server's.
    let mut conn = connect(&server.sasl);
    assert_eq!(conn.handshake(m.name()).error_code, 0);
    let (mut client, client_first) = ScramClient::start(m, "alice", b"wonderland");
    let server_first = conn.authenticate(&client_first);
    let last = client.finish(&server_first.auth_bytes).unwrap();
    let text = String::from_utf8(last).unwrap();
    let (before, after) = text.split_once(",p=").unwrap();
    let forged = format!("{}X,p={after}", before);
    let response = conn.authenticate(forged.as_bytes());
    let wrong_nonce = failed_login(&mut conn, response);

    // A channel-binding flag that was never offered.
    let mut conn = connect(&server.sasl);
    assert_eq!(conn.handshake(m.name()).error_code, 0);
    let response = conn.authenticate(b"p=tls-unique,,n=alice,r=abcdef");
    let binding = failed_login(&mut conn, response);

    // Each failure reads the same: nothing about which part was wrong or who exists.
    assert_eq!(replayed, wrong_nonce);
    assert_eq!(replayed, binding);
    assert!(
        !replayed.contains("alice") && !replayed.contains("user"),
        "{replayed}"
    );
    assert!(server.failures.0.load(Ordering::SeqCst) >= 6);
}

#[test]
fn plain_checks_the_password() {
    let server = server();
    let mut conn = connect(&server.sasl);
    assert_eq!(conn.handshake("PLAIN").error_code, 0);
    assert_eq!(conn.authenticate(b"\0alice\0wonderland").error_code, 0);
    conn.metadata();
    for token in [
        &b"\0alice\0wonderlanD"[..],
        b"\0alice\0",
        b"\0mallory\0wonderland",
        b"bob\0alice\0wonderland",
        b"\0weak\0wonderland",
    ] {
        let mut conn = connect(&server.sasl);
        assert_eq!(conn.handshake("PLAIN").error_code, 0);
        let response = conn.authenticate(token);
        failed_login(&mut conn, response);
    }
}

#[test]
fn requests_out_of_turn_are_refused() {
    let server = server();
    // Any request but ApiVersions and SASL before authentication: closed without an answer.
    let mut conn = connect(&server.sasl);
    conn.send(ApiKey::Metadata, 4, &MetadataRequest::default());
    conn.assert_closed();
    // SaslAuthenticate without a handshake.
    let mut conn = connect(&server.sasl);
    let response = conn.authenticate(b"n,,n=alice,r=abc");
    assert_eq!(response.error_code, ILLEGAL_SASL_STATE);
    conn.assert_closed_once_the_client_closes();
    // A second SaslHandshake after success.
    let mut conn = connect(&server.sasl);
    assert_eq!(
        conn.scram(ScramMechanism::Sha512, "alice", "wonderland").0,
        0
    );
    assert_eq!(
        conn.handshake("SCRAM-SHA-512").error_code,
        ILLEGAL_SASL_STATE
    );
    conn.assert_closed_once_the_client_closes();
    // An unknown mechanism: 33 with the enabled list.
    let mut conn = connect(&server.sasl);
    let response = conn.handshake("GSSAPI");
    assert_eq!(response.error_code, UNSUPPORTED_SASL_MECHANISM);
    let offered: Vec<&str> = response.mechanisms.iter().map(|m| m.as_str()).collect();
    assert_eq!(offered, ["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"]);
    conn.assert_closed_once_the_client_closes();
    // A 1 MiB token: more than an unauthenticated client may send.
    let mut conn = connect(&server.sasl);
    assert_eq!(conn.handshake("SCRAM-SHA-256").error_code, 0);
    let mut request = SaslAuthenticateRequest::default();
    request.auth_bytes = Bytes::from(vec![b'n'; 1 << 20]);
    conn.send(ApiKey::SaslAuthenticate, 2, &request);
    conn.assert_closed();
    // Through all of it, a logged-in client is served.
    let mut good = connect(&server.sasl);
    assert_eq!(
        good.scram(ScramMechanism::Sha256, "alice", "wonderland").0,
        0
    );
    good.metadata();
}

#[test]
fn v0_handshake_carries_raw_tokens() {
    let server = server();
    let mut conn = connect(&server.sasl);
    let mut request = SaslHandshakeRequest::default();
    request.mechanism = StrBytes::from_static_str("SCRAM-SHA-256");
    let response: SaslHandshakeResponse = conn.call(ApiKey::SaslHandshake, 0, &request);
    assert_eq!(response.error_code, 0);
    let (mut client, first) = ScramClient::start(ScramMechanism::Sha256, "alice", b"wonderland");
    conn.send_raw(&first);
    let server_first = conn.recv_raw().unwrap();
    conn.send_raw(&client.finish(&server_first).unwrap());
    let server_final = conn.recv_raw().unwrap();
    client.verify(&server_final).unwrap();
    conn.metadata();
    // A wrong raw token: closed, there is no frame to carry an error in.
    let mut conn = connect(&server.sasl);
    let response: SaslHandshakeResponse = conn.call(ApiKey::SaslHandshake, 0, &request);
    assert_eq!(response.error_code, 0);
    conn.send_raw(b"garbage");
    conn.assert_closed_once_the_client_closes();
}

fn tls_client(ca: &rcgen::Certificate) -> Arc<rustls::ClientConfig> {
    tls_client_with(ca, rustls::DEFAULT_VERSIONS)
}

fn tls_client_with(
    ca: &rcgen::Certificate,
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.der().clone()).unwrap();
    Arc::new(
        rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_protocol_versions(versions)
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth(),
    )
}

fn connect_tls(
    addr: &str,
    config: Arc<rustls::ClientConfig>,
) -> Conn<rustls::StreamOwned<rustls::ClientConnection, TcpStream>> {
    let tcp = connect(addr).stream;
    let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
    let tls = rustls::ClientConnection::new(config, name).unwrap();
    Conn {
        stream: rustls::StreamOwned::new(tls, tcp),
        correlation: 0,
    }
}

#[test]
fn a_large_fetch_over_tls_reaches_a_slow_reader_whole() {
    let server = server();
    let mut conn = connect_tls(&server.tls, tls_client(&server.ca));
    assert_eq!(
        conn.scram(ScramMechanism::Sha256, "alice", "wonderland").0,
        0
    );
    // The big partition, then a small one: the response ends with a few small pieces written
    // right after the socket last refused bytes.
    let partition = |index| {
        let mut partition = FetchPartition::default();
        partition.partition = index;
        partition.partition_max_bytes = 64 << 20;
        partition
    };
    let mut topic = FetchTopic::default();
    topic.topic = TopicName(StrBytes::from_static_str("big"));
    topic.partitions = vec![partition(0), partition(1)];
    let mut request = FetchRequest::default();
    request.replica_id = BrokerId(-1);
    request.max_bytes = 64 << 20;
    request.min_bytes = 1;
    request.topics = vec![topic];
    conn.send(ApiKey::Fetch, 11, &request);
    // Read slowly, so that the socket's buffers stay full and the broker's writes keep
    // meeting a socket that takes nothing more: the end of the response must still come
    // without another request from this client (the TLS layer's last records are flushed).
    let mut frame = Vec::new();
    let mut chunk = vec![0u8; 64 << 10];
    let whole = |frame: &[u8]| {
        frame.len() >= 4
            && frame.len() >= 4 + i32::from_be_bytes(frame[..4].try_into().unwrap()) as usize
    };
    while !whole(&frame) {
        std::thread::sleep(Duration::from_millis(2));
        let read = conn
            .stream
            .read(&mut chunk)
            .expect("the rest of the response");
        assert_ne!(read, 0, "closed");
        frame.extend_from_slice(&chunk[..read]);
    }
    let mut body = Bytes::from(frame).split_off(4);
    let header = ResponseHeader::decode(&mut body, 0).unwrap();
    assert_eq!(header.correlation_id, conn.correlation);
    let response = FetchResponse::decode(&mut body, 11).unwrap();
    let small = response.responses[0].partitions[1].records.as_ref();
    assert!(small.is_some_and(|r| !r.is_empty()), "{small:?}");
    let records = response.responses[0].partitions[0]
        .records
        .as_ref()
        .unwrap();
    assert!(
        records.len() > BIG_BATCHES * (1000 << 10),
        "{} bytes of records",
        records.len()
    );
}

#[test]
fn sasl_over_tls_and_bad_tls_input() {
    let server = server();
    let mut conn = connect_tls(&server.tls, tls_client(&server.ca));
    assert_eq!(
        conn.scram(ScramMechanism::Sha512, "alice", "wonderland").0,
        0
    );
    let metadata = conn.metadata();
    assert_eq!(metadata.brokers[0].host.as_str(), "external.example");

    // TLS 1.2 and 1.3 are both served.
    for version in [&rustls::version::TLS12, &rustls::version::TLS13] {
        let mut conn = connect_tls(&server.tls, tls_client_with(&server.ca, &[version]));
        assert_eq!(
            conn.scram(ScramMechanism::Sha256, "alice", "wonderland").0,
            0
        );
        assert_eq!(
            conn.stream.conn.protocol_version(),
            Some(version.version),
            "negotiated version"
        );
        conn.metadata();
    }

    // A client trusting another CA refuses the server.
    let (other_ca, _) = certificate_authority();
    let mut wrong = connect_tls(&server.tls, tls_client(&other_ca));
    let mut byte = [0u8; 1];
    let err = wrong.stream.read(&mut byte).unwrap_err();
    assert!(
        err.to_string().contains("invalid peer certificate"),
        "{err}"
    );

    // A plaintext client on the TLS port: closed.
    // (rustls may say why in a TLS alert record first: content type 21.)
    let mut plain = connect(&server.tls);
    plain.send(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default());
    let rest = plain.rest();
    assert!(rest.is_empty() || rest[0] == 21, "{rest:?}");
    // Garbage where a ClientHello should be: closed.
    let mut garbage = connect(&server.tls);
    garbage
        .stream
        .write_all(&[0x16, 0x03, 0x01, 0x00, 0x05, 1, 2, 3, 4, 5])
        .unwrap();
    let rest = garbage.rest();
    assert!(rest.is_empty() || rest[0] == 21, "{rest:?}");
    // A TLS client on the plaintext port: its ClientHello reads as a frame far too large.
    let mut crossed = connect_tls(&server.sasl, tls_client(&server.ca));
    let err = crossed
        .stream
        .write_all(b"x")
        .and_then(|()| crossed.stream.flush());
    let mut byte = [0u8; 1];
    assert!(err.is_err() || crossed.stream.read(&mut byte).is_err());
    // A handshake that stalls is closed after the request timeout (1 s here).
    let mut stalled = connect(&server.tls);
    stalled.stream.write_all(&[0x16, 0x03]).unwrap();
    let started = Instant::now();
    stalled.assert_closed();
    assert!(started.elapsed() < Duration::from_secs(5));

    // Everyone else is still served.
    let mut again = connect_tls(&server.tls, tls_client(&server.ca));
    assert_eq!(
        again.scram(ScramMechanism::Sha256, "alice", "wonderland").0,
        0
    );
    again.metadata();
}

#[test]
fn a_user_created_while_serving_can_log_in_at_once() {
    let server = server();
    let dir: &Path = server._dir.path();
    let store = CredentialStore::open(&dir.join("data")).unwrap();
    let mut conn = connect(&server.sasl);
    assert_eq!(
        conn.scram(ScramMechanism::Sha256, "late", "pw").0,
        SASL_AUTHENTICATION_FAILED
    );
    store
        .upsert(
            "late",
            ScramMechanism::Sha256,
            ScramCredential::new(ScramMechanism::Sha256, b"pw", 4096),
        )
        .unwrap();
    let mut conn = connect(&server.sasl);
    assert_eq!(conn.scram(ScramMechanism::Sha256, "late", "pw").0, 0);
    assert!(store.delete("late", None).unwrap());
    let mut conn = connect(&server.sasl);
    assert_eq!(
        conn.scram(ScramMechanism::Sha256, "late", "pw").0,
        SASL_AUTHENTICATION_FAILED
    );
}
