//! [`serve`]: the broker's listeners on tokio, in the `mini-redis` shape: an accept loop, one
//! task per connection reading frames, and shutdown when a future completes. Connections cost
//! a task and a small buffer while idle, so thousands of them are cheap; the engine's blocking
//! calls (fsync waits, long-poll fetches, parked JoinGroup and SyncGroup) run on tokio's
//! blocking pool, so one slow partition or a parked join never stalls other connections. On
//! TLS and SASL listeners, accepting, the TLS handshake and the SASL login run on the login
//! runtime (`login.rs`), and the connection moves to the main runtime once authenticated.
//! Limits: at most `max_connections` at once and `max_connections_per_ip` from one address
//! (more are closed at once), and the request budget (`RequestBudget`) on intake. An accept that
//! fails (out of descriptors) pauses the listener, longer each time it fails again, instead of
//! retrying at once: the connections already open keep being served meanwhile.

use std::collections::HashMap;
use std::future::Future;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::auth::sasl::SaslOutcome;
use crate::auth::tls::certificate_principal;
use crate::auth::{Gate, Session};
use crate::broker::Broker;
use crate::codec::Frame;
use crate::error::{Error, Result};
use logd_protocol::SecurityProtocol;

use crate::listener::{Listener, ListenerConfig};
use crate::login::{Movable, Rebind};
use crate::occasional::Occasional;

/// How long a failed login waits before its connection is closed (Kafka's
/// `connection.failed.authentication.delay.ms`).
const FAILED_LOGIN_DELAY: std::time::Duration = std::time::Duration::from_millis(100);

/// The first pause after a failed accept; each failure in a row doubles it, up to
/// [`ACCEPT_PAUSE_MAX`]. Kernels report a full descriptor table on every accept until a
/// descriptor is freed, so retrying at once spins a core and floods the log.
const ACCEPT_PAUSE_MIN: std::time::Duration = std::time::Duration::from_millis(5);

/// The longest pause after failed accepts: short enough that a freed descriptor is used soon.
const ACCEPT_PAUSE_MAX: std::time::Duration = std::time::Duration::from_millis(250);

/// Request bodies are read this much at a time, into a buffer that grows as they arrive.
const READ_CHUNK: usize = 64 << 10;

/// How many connections the listener takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Most connections at once; more are closed at once.
    pub max_connections: usize,
    /// Most connections from one IP address (Kafka `max.connections.per.ip`).
    pub max_connections_per_ip: usize,
}

impl Default for ConnectionLimits {
    fn default() -> ConnectionLimits {
        ConnectionLimits {
            max_connections: 1024,
            max_connections_per_ip: usize::MAX,
        }
    }
}

/// The state a connection is in; leaving it (by drop) counts it out.
struct InState<'a>(&'a AtomicUsize);

impl<'a> InState<'a> {
    fn enter(counter: &'a AtomicUsize) -> InState<'a> {
        counter.fetch_add(1, Ordering::Relaxed);
        InState(counter)
    }
}

impl Drop for InState<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Open connections, in total and per client address.
#[derive(Debug, Default)]
struct Open {
    total: usize,
    per_ip: HashMap<IpAddr, usize>,
}

/// Warnings every listener's accept loop may repeat under load, logged at most once a second.
#[derive(Debug, Default)]
struct Warnings {
    refused: Occasional,
    accept_failed: Occasional,
}

/// Serves Kafka clients on every listener until `shutdown` completes; then stops accepting and
/// returns (open connections end with the runtime). The connection limits count all
/// listeners together.
pub async fn serve(
    broker: Arc<Broker>,
    listeners: Vec<Listener>,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()>,
) {
    let open: Arc<Mutex<Open>> = Arc::default();
    let warnings: Arc<Warnings> = Arc::default();
    let main = tokio::runtime::Handle::current();
    let logins = crate::login::start().unwrap_or_else(|| main.clone());
    let mut accepting = tokio::task::JoinSet::new();
    for listener in listeners {
        // A listener that logs clients in accepts on the login runtime too: a burst of new
        // connections then costs the main runtime nothing until they are authenticated.
        let on = match listener.config.protocol {
            SecurityProtocol::Plaintext => &main,
            _ => &logins,
        };
        let accepting_loop = accept(
            broker.clone(),
            listener,
            limits,
            (open.clone(), warnings.clone()),
            main.clone(),
        );
        accepting.spawn_on(accepting_loop, on);
    }
    shutdown.await;
    accepting.abort_all();
}

/// One listener's accept loop, on the runtime its connections log in on (the main one for
/// PLAINTEXT); authenticated connections are served on `main`.
async fn accept(
    broker: Arc<Broker>,
    listener: Listener,
    limits: ConnectionLimits,
    (open, warnings): (Arc<Mutex<Open>>, Arc<Warnings>),
    main: tokio::runtime::Handle,
) {
    let config = Arc::new(listener.config);
    // The socket was registered with the runtime that made it; accept on this one.
    let socket = match listener
        .socket
        .into_std()
        .and_then(tokio::net::TcpListener::from_std)
    {
        Ok(socket) => socket,
        Err(e) => {
            tracing::error!(listener = %config.name, error = %e, "cannot accept on this listener");
            return;
        }
    };
    let mut pause = ACCEPT_PAUSE_MIN;
    loop {
        let (stream, peer) = match socket.accept().await {
            Ok(accepted) => {
                pause = ACCEPT_PAUSE_MIN;
                accepted
            }
            Err(e) => {
                broker.observer.accept_failed();
                if let Some(count) = warnings.accept_failed.tick(Instant::now()) {
                    tracing::warn!(
                        listener = %config.name,
                        error = %e,
                        count,
                        "accept failed (count: since the last such line); pausing the listener"
                    );
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(ACCEPT_PAUSE_MAX);
                continue;
            }
        };
        let ip = peer.ip();
        let refused = {
            let mut open = open.lock();
            if open.total >= limits.max_connections {
                Some("max-connections")
            } else if open.per_ip.get(&ip).copied().unwrap_or(0) >= limits.max_connections_per_ip {
                Some("max-connections-per-ip")
            } else {
                open.total += 1;
                *open.per_ip.entry(ip).or_insert(0) += 1;
                None
            }
        };
        if let Some(reason) = refused {
            broker.observer.connection_refused(reason);
            if let Some(count) = warnings.refused.tick(Instant::now()) {
                tracing::warn!(
                    %peer,
                    reason,
                    count,
                    "connection limit reached; closing new connections (count: since the last \
                     such line)"
                );
            }
            continue;
        }
        broker.observer.connection_opened();
        let slot = Slot {
            open: open.clone(),
            ip,
            broker: broker.clone(),
            connection: NEXT_CONNECTION.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        };
        let (broker, config) = (broker.clone(), config.clone());
        if config.protocol == SecurityProtocol::Plaintext {
            tokio::spawn(async move {
                let session = Session::new(format!("/{ip}"), config.clone(), None, slot.connection);
                let _slot = slot;
                let served = match stream.set_nodelay(true) {
                    Ok(()) => connection(&broker, stream, session, false).await,
                    Err(e) => Err(e.into()),
                };
                if let Err(e) = served {
                    tracing::info!(%peer, listener = %config.name, error = %e, "connection closed");
                }
            });
        } else {
            let main = main.clone();
            tokio::spawn(async move {
                if let Err(e) = login(&broker, stream, ip, config.clone(), slot, main).await {
                    tracing::info!(%peer, listener = %config.name, error = %e, "connection closed");
                }
            });
        }
    }
}

/// Connections' numbers, from 1 (0 is a frame handed in without a connection).
static NEXT_CONNECTION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A connection's place in the limits: given back when the connection ends, on whichever
/// runtime that is, with what the broker tied to the connection (its share sessions).
struct Slot {
    open: Arc<Mutex<Open>>,
    ip: IpAddr,
    broker: Arc<Broker>,
    connection: u64,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.open.lock();
        open.total -= 1;
        if let Some(count) = open.per_ip.get_mut(&self.ip) {
            *count -= 1;
            if *count == 0 {
                open.per_ip.remove(&self.ip);
            }
        }
        drop(open);
        self.broker.connection_closed(self.connection);
        self.broker.observer.connection_closed();
    }
}

/// Logs a new connection in on the login runtime: its TLS handshake if its listener has TLS
/// (within the request timeout, so a stalled handshake holds nothing for long), then its SASL
/// exchange if the listener asks for one; then hands it to the main runtime to be served.
async fn login(
    broker: &Arc<Broker>,
    stream: TcpStream,
    ip: IpAddr,
    listener: Arc<ListenerConfig>,
    slot: Slot,
    main: tokio::runtime::Handle,
) -> Result<()> {
    stream.set_nodelay(true)?;
    let stream = Movable::new(stream);
    // Kafka shows a member's host as "/ip".
    let host = format!("/{ip}");
    let Some(tls) = listener.tls.clone() else {
        let session = Session::new(host, listener, None, slot.connection);
        if let Some((stream, session)) = connection(broker, stream, session, true).await? {
            hand_over(&main, broker.clone(), stream, session, slot);
        }
        return Ok(());
    };
    let handshake =
        tokio::time::timeout(broker.config.request_timeout, tls.acceptor().accept(stream));
    let stream = match handshake.await {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => {
            broker.observer.authentication_failed(&listener.name, "TLS");
            return Err(Error::TlsHandshake(e.to_string()));
        }
        Err(_) => {
            broker.observer.authentication_failed(&listener.name, "TLS");
            return Err(Error::TlsHandshake("timed out".into()));
        }
    };
    let principal = stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|chain| chain.first())
        .and_then(certificate_principal);
    if let Some(principal) = &principal {
        tracing::info!(%ip, listener = %listener.name, principal, "client certificate accepted");
    }
    let session = Session::new(host, listener, principal, slot.connection);
    if let Some((stream, session)) = connection(broker, stream, session, true).await? {
        hand_over(&main, broker.clone(), stream, session, slot);
    }
    Ok(())
}

/// Moves an authenticated connection to the main runtime and serves it there.
fn hand_over<S>(
    main: &tokio::runtime::Handle,
    broker: Arc<Broker>,
    mut stream: S,
    session: Session,
    slot: Slot,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + Rebind + 'static,
{
    main.spawn(async move {
        let _slot = slot;
        let served = match stream.rebind() {
            Ok(()) => connection(&broker, stream, session, false).await,
            Err(e) => Err(e.into()),
        };
        if let Err(e) = served {
            tracing::info!(error = %e, "connection closed");
        }
    });
}

/// Serves one connection until the client closes it or breaks the protocol; with
/// `until_authenticated`, only until its session is authenticated, returning the stream and
/// session then (`None`: the connection ended first).
async fn connection<S>(
    broker: &Arc<Broker>,
    mut stream: S,
    mut session: Session,
    until_authenticated: bool,
) -> Result<Option<(S, Session)>>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let config = &broker.config;
    let stats = &broker.stats;
    loop {
        if until_authenticated && session.is_authenticated() {
            return Ok(Some((stream, session)));
        }
        let idle = InState::enter(&stats.idle);
        let mut size = [0u8; 4];
        let read = tokio::time::timeout(config.idle_timeout, stream.read_exact(&mut size)).await;
        drop(idle);
        match read {
            Err(_) => return Ok(None), // idle too long
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
            Ok(Err(e)) => return Err(e.into()),
            Ok(Ok(_)) => {}
        }
        let size = i32::from_be_bytes(size);
        // Checked before anything is reserved or allocated: a hostile length must not become
        // a huge buffer, and one larger than the whole budget could never be read.
        let max = session.max_frame(config.max_request_bytes.min(broker.budget.max_request()));
        // A raw SASL token (v0 handshakes) may be shorter than a request header.
        let min = if session.expects_raw_token() { 0 } else { 8 };
        if size < min || size as usize > max {
            return Err(Error::FrameSize {
                size: size.into(),
                max,
            });
        }
        let reading = InState::enter(&stats.reading);
        // Waits for room in the shared budget; meanwhile the socket is not read.
        let reservation = broker.budget.reserve(size as usize).await;
        let body = read_body(&mut stream, size as usize, config.request_timeout).await?;
        drop(reading);
        let handling = InState::enter(&stats.handling);
        let mut throttle = std::time::Duration::ZERO;
        let response = match session.gate(&body) {
            Gate::Close => {
                tracing::info!(
                    host = %session.peer.caller.host(),
                    listener = %session.peer.listener.name,
                    "request before authentication (ILLEGAL_SASL_STATE); closing"
                );
                return Ok(None);
            }
            Gate::Sasl => {
                // The mechanism is gone from the session once a login fails; the log and the
                // failure count name it.
                let mechanism = session.mechanism();
                // A SCRAM step is a few HMACs and a handshake none: they run right here. A
                // PLAIN login recomputes PBKDF2 (thousands of hash rounds), on the blocking
                // pool, where it cannot hold up other connections.
                let outcome = if mechanism == Some("PLAIN") {
                    let store = broker.credentials.clone();
                    let (returned, outcome) = tokio::task::spawn_blocking(move || {
                        let outcome = session.sasl(Bytes::from(body), &store);
                        (session, outcome)
                    })
                    .await
                    .map_err(|e| Error::Io(std::io::Error::other(e)))?;
                    session = returned;
                    outcome
                } else {
                    session.sasl(Bytes::from(body), &broker.credentials)
                };
                match outcome? {
                    SaslOutcome::Continue(response) => Some(Frame::Whole(response)),
                    SaslOutcome::Authenticated { response, .. } => {
                        tracing::info!(
                            host = %session.peer.caller.host(),
                            listener = %session.peer.listener.name,
                            principal = %session.peer.caller.principal(),
                            "authenticated"
                        );
                        Some(Frame::Whole(response))
                    }
                    SaslOutcome::Close {
                        response,
                        failed_login,
                        reason,
                    } => {
                        drop((reservation, handling));
                        let refusal = Refusal {
                            response,
                            failed_login,
                            mechanism,
                            reason,
                        };
                        return refuse(broker, &mut stream, &session, refusal)
                            .await
                            .map(|()| None);
                    }
                }
            }
            Gate::Serve => {
                let body = Bytes::from(body);
                let answer = match broker.respond_without_waiting(&body, &session.peer) {
                    Some(answer) => answer?,
                    None => {
                        let (broker, peer) = (broker.clone(), session.peer.clone());
                        tokio::task::spawn_blocking(move || broker.respond(body, &peer))
                            .await
                            .map_err(|e| Error::Io(std::io::Error::other(e)))??
                    }
                };
                throttle = answer.throttle;
                answer.frame
            }
        };
        drop(reservation);
        drop(handling);
        let pieces = match response {
            None => {
                mute(throttle).await;
                continue;
            }
            Some(Frame::Whole(bytes)) => vec![bytes.freeze()],
            // A fetch: its record bytes go from the mapped segments to the socket.
            Some(Frame::Pieces(pieces)) => pieces,
        };
        let _writing = InState::enter(&stats.writing);
        let total: u64 = pieces.iter().map(|p| p.len() as u64).sum();
        stats.sending_bytes.fetch_add(total, Ordering::Relaxed);
        // Flushed: a TLS stream's last records may still sit in its buffer when the socket
        // took no more, and would wait there for the next response.
        let written = match write_pieces(&mut stream, pieces).await {
            Ok(()) => stream.flush().await,
            Err(e) => Err(e),
        };
        stats.sending_bytes.fetch_sub(total, Ordering::Relaxed);
        written?;
        mute(throttle).await;
    }
}

/// Reads nothing more from a connection whose client is over its quota until its wait is
/// over (Kafka mutes the channel after sending the response, KIP-219): a client that ignores
/// `throttle_time_ms` is held to it all the same.
async fn mute(wait: std::time::Duration) {
    if !wait.is_zero() {
        tokio::time::sleep(wait).await;
    }
}

/// A SASL step's refusal, with the mechanism that was in use.
struct Refusal {
    response: Option<BytesMut>,
    failed_login: bool,
    mechanism: Option<&'static str>,
    reason: String,
}

/// Ends a connection the SASL exchange refused: the answer (if any) goes out, and after a
/// failed login Kafka's delay passes first, so a password guesser gets one try per 100 ms
/// per connection. The connection then closes gracefully (see [`lingering_close`]), so the
/// client reads the refusal instead of a reset.
async fn refuse<S>(
    broker: &Broker,
    stream: &mut S,
    session: &Session,
    refusal: Refusal,
) -> Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let Refusal {
        response,
        failed_login,
        mechanism,
        reason,
    } = refusal;
    if failed_login {
        let mechanism = mechanism.unwrap_or("SASL");
        broker
            .observer
            .authentication_failed(&session.peer.listener.name, mechanism);
        tracing::warn!(
            host = %session.peer.caller.host(),
            listener = %session.peer.listener.name,
            mechanism,
            reason,
            "authentication failed"
        );
        tokio::time::sleep(FAILED_LOGIN_DELAY).await;
    } else {
        tracing::info!(host = %session.peer.caller.host(), listener = %session.peer.listener.name, reason, "SASL request refused; closing");
    }
    if let Some(response) = response {
        stream.write_all(&response).await?;
        stream.flush().await?;
    }
    lingering_close(stream).await;
    Ok(())
}

/// How long [`lingering_close`] reads what a closing client still sends.
const LINGER: std::time::Duration = std::time::Duration::from_secs(2);

/// Bytes [`lingering_close`] reads at most before giving up on a client that keeps sending.
const LINGER_BYTES: usize = 256 << 10;

/// Closes a connection the broker ends (after a refusal) so that the client reads the last
/// answer: the broker waits for the client to close first, reading and dropping what it still
/// sends, for at most [`LINGER`] and [`LINGER_BYTES`], then shuts its side down (TLS
/// `close_notify`, TCP FIN). Closing at once loses the answer in two ways: a socket closed with
/// unread input sends a reset, which can overtake the answer; and kafka-python drops what it
/// read when the same read loop meets the end of the stream, reporting "socket disconnected"
/// instead of Kafka's authentication error (seen in CI).
async fn lingering_close<S>(stream: &mut S)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let client_closes = async {
        let mut scratch = [0u8; 4096];
        let mut read = 0;
        while read < LINGER_BYTES {
            match stream.read(&mut scratch).await {
                Ok(0) | Err(_) => return,
                Ok(n) => read += n,
            }
        }
    };
    // Past the deadline the broker closes anyway.
    let _ = tokio::time::timeout(LINGER, client_closes).await;
    let _ = tokio::time::timeout(LINGER, stream.shutdown()).await;
}

/// Writes `pieces` in order with vectored writes: the small header pieces and the mapped record
/// slices leave in as few system calls (and packets) as the socket takes.
async fn write_pieces<S: AsyncWrite + Unpin>(
    stream: &mut S,
    mut pieces: Vec<Bytes>,
) -> std::io::Result<()> {
    use bytes::Buf;
    let mut first = 0;
    while first < pieces.len() {
        let slices: Vec<std::io::IoSlice<'_>> = pieces[first..]
            .iter()
            .take(64)
            .map(|p| std::io::IoSlice::new(p))
            .collect();
        let mut written = stream.write_vectored(&slices).await?;
        if written == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        while written > 0 {
            let piece = &mut pieces[first];
            let step = written.min(piece.len());
            piece.advance(step);
            written -= step;
            if piece.is_empty() {
                first += 1;
            }
        }
        while first < pieces.len() && pieces[first].is_empty() {
            first += 1;
        }
    }
    Ok(())
}

/// Reads a request body of `size` bytes, which must all arrive within `timeout` of its size (a
/// client trickling bytes is cut off then, however steadily it sends). The buffer grows as
/// bytes arrive, so an announced size that never comes costs nothing.
async fn read_body<S: AsyncRead + Unpin>(
    stream: &mut S,
    size: usize,
    timeout: std::time::Duration,
) -> Result<Vec<u8>> {
    let deadline = Instant::now() + timeout;
    let mut body = Vec::new();
    let mut chunk = vec![0u8; size.min(READ_CHUNK)];
    while body.len() < size {
        let want = (size - body.len()).min(chunk.len());
        let left = deadline.saturating_duration_since(Instant::now());
        let read = tokio::time::timeout(left, stream.read(&mut chunk[..want]))
            .await
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))??;
        if read == 0 {
            return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof).into());
        }
        body.extend_from_slice(&chunk[..read]);
    }
    Ok(body)
}
