//! [`Connection`]: one connection to one broker, one request at a time: TLS and the SASL login
//! when the client's `ClientSecurity` says so, then framed requests and their answers.
//! [`crate::AsyncClient`] holds one per broker it talks to.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, RequestHeader, ResponseHeader, SaslAuthenticateRequest, SaslAuthenticateResponse,
    SaslHandshakeRequest, SaslHandshakeResponse,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::client_security::{ClientSecurity, SaslLogin, server_name};
use crate::error::{Error, Result};
use logd_protocol::SaslMechanism;
use logd_protocol::codes;
use logd_protocol::scram::ScramClient;

/// What a client talks through: a TCP stream, or TLS over one.
trait Transport: AsyncRead + AsyncWrite + Unpin + Send {}

impl<T: AsyncRead + AsyncWrite + Unpin + Send> Transport for T {}

/// A connection to one broker: one request at a time.
pub(crate) struct Connection {
    stream: Box<dyn Transport>,
    correlation_id: i32,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("correlation_id", &self.correlation_id)
            .finish_non_exhaustive()
    }
}

/// Connecting gives up after this long.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// A request without an answer this long fails (fetches wait at most their `max_wait_ms`).
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

fn timed_out(what: &str) -> Error {
    Error::Io(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!("{what} timed out"),
    ))
}

impl Connection {
    /// Connects to `addr` as `security` says: TLS (checking the broker's certificate against
    /// the configured CA and the host in `addr`), then a SASL login.
    pub(crate) async fn connect(addr: &str, security: &ClientSecurity) -> Result<Connection> {
        let tcp = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr))
            .await
            .map_err(|_| timed_out("connecting"))??;
        tcp.set_nodelay(true)?;
        let stream: Box<dyn Transport> = if security.protocol.uses_tls() {
            let connector = tokio_rustls::TlsConnector::from(security.tls_config()?);
            let handshake = connector.connect(server_name(addr)?, tcp);
            let tls = tokio::time::timeout(CONNECT_TIMEOUT, handshake)
                .await
                .map_err(|_| timed_out("TLS handshake"))?
                .map_err(|e| Error::TlsHandshake(e.to_string()))?;
            Box::new(tls)
        } else {
            Box::new(tcp)
        };
        let mut client = Connection {
            stream,
            correlation_id: 0,
        };
        if let Some(login) = &security.sasl {
            client.login(login).await?;
        }
        Ok(client)
    }

    /// Logs in with SaslHandshake v1 and SaslAuthenticate; a SCRAM server must prove it
    /// knows the password too.
    async fn login(&mut self, login: &SaslLogin) -> Result<()> {
        let mut handshake = SaslHandshakeRequest::default();
        handshake.mechanism = StrBytes::from_static_str(login.mechanism.name());
        let response: SaslHandshakeResponse =
            self.call(ApiKey::SaslHandshake, 1, &handshake).await?;
        if response.error_code != 0 {
            let offered: Vec<&str> = response.mechanisms.iter().map(|m| m.as_str()).collect();
            return Err(Error::Login(format!(
                "{} not offered ({}); the broker offers {}",
                login.mechanism,
                sasl_code_name(response.error_code),
                offered.join(", ")
            )));
        }
        let refused = |e: logd_protocol::scram::Refused| Error::Login(e.to_string());
        match login.mechanism {
            SaslMechanism::Plain => {
                let token = format!("\0{}\0{}", login.username, login.password);
                self.authenticate(token.as_bytes()).await?;
            }
            SaslMechanism::Scram(m) => {
                let (mut scram, first) =
                    ScramClient::start(m, &login.username, login.password.as_bytes());
                let server_first = self.authenticate(&first).await?;
                let last = scram.finish(&server_first).map_err(refused)?;
                let server_final = self.authenticate(&last).await?;
                scram.verify(&server_final).map_err(refused)?;
            }
        }
        Ok(())
    }

    async fn authenticate(&mut self, token: &[u8]) -> Result<Bytes> {
        let mut request = SaslAuthenticateRequest::default();
        request.auth_bytes = Bytes::copy_from_slice(token);
        let response: SaslAuthenticateResponse =
            self.call(ApiKey::SaslAuthenticate, 2, &request).await?;
        if response.error_code != 0 {
            return Err(Error::Login(format!(
                "{}: {}",
                sasl_code_name(response.error_code),
                response.error_message.as_deref().unwrap_or("")
            )));
        }
        Ok(response.auth_bytes)
    }

    /// Sends `request` and reads its answer.
    pub(crate) async fn call<Req: Encodable, Resp: Decodable>(
        &mut self,
        key: ApiKey,
        version: i16,
        request: &Req,
    ) -> Result<Resp> {
        tokio::time::timeout(CALL_TIMEOUT, self.exchange(key, version, request))
            .await
            .map_err(|_| timed_out("request"))?
    }

    async fn exchange<Req: Encodable, Resp: Decodable>(
        &mut self,
        key: ApiKey,
        version: i16,
        request: &Req,
    ) -> Result<Resp> {
        let bad = crate::error::malformed(key as i16, version);
        let mut body = BytesMut::new();
        request.encode(&mut body, version).map_err(&bad)?;
        let headers = (
            key.request_header_version(version),
            key.response_header_version(version),
        );
        let mut response = self
            .exchange_raw(key as i16, version, headers, &body)
            .await?;
        Resp::decode(&mut response, version).map_err(bad)
    }

    /// Sends an encoded request `body` of API `api_key` (Kafka's or logd's own) with the
    /// given (request, response) header versions; the response's body.
    pub(crate) async fn call_raw(
        &mut self,
        api_key: i16,
        version: i16,
        headers: (i16, i16),
        body: &[u8],
    ) -> Result<Bytes> {
        tokio::time::timeout(
            CALL_TIMEOUT,
            self.exchange_raw(api_key, version, headers, body),
        )
        .await
        .map_err(|_| timed_out("request"))?
    }

    async fn exchange_raw(
        &mut self,
        api_key: i16,
        version: i16,
        (request_header, response_header): (i16, i16),
        body: &[u8],
    ) -> Result<Bytes> {
        self.correlation_id += 1;
        let mut header = RequestHeader::default();
        header.request_api_key = api_key;
        header.request_api_version = version;
        header.correlation_id = self.correlation_id;
        header.client_id = Some(StrBytes::from_static_str("logd-cli"));
        let bad = crate::error::malformed(api_key, version);
        let mut frame = BytesMut::new();
        header.encode(&mut frame, request_header).map_err(&bad)?;
        frame.extend_from_slice(body);
        self.stream
            .write_all(&(frame.len() as i32).to_be_bytes())
            .await?;
        self.stream.write_all(&frame).await?;
        let mut size = [0u8; 4];
        self.stream.read_exact(&mut size).await?;
        let size = i32::from_be_bytes(size);
        if !(4..=1 << 30).contains(&size) {
            return Err(Error::FrameSize {
                size: size.into(),
                max: 1 << 30,
            });
        }
        let mut response = vec![0u8; size as usize];
        self.stream.read_exact(&mut response).await?;
        let mut response = Bytes::from(response);
        ResponseHeader::decode(&mut response, response_header).map_err(bad)?;
        Ok(response)
    }
}

/// The name of a Kafka error code a login can end with.
fn sasl_code_name(code: i16) -> String {
    match code {
        codes::UNSUPPORTED_SASL_MECHANISM => "UNSUPPORTED_SASL_MECHANISM".into(),
        codes::ILLEGAL_SASL_STATE => "ILLEGAL_SASL_STATE".into(),
        codes::SASL_AUTHENTICATION_FAILED => "SASL_AUTHENTICATION_FAILED".into(),
        other => format!("Kafka error {other}"),
    }
}
