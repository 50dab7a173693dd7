//! Where logins happen: TLS handshakes and SASL exchanges run on a runtime of their own, one
//! thread at a lower OS priority, and a connection moves to the main runtime once it is
//! authenticated. A burst of hundreds of new clients (key exchanges, signatures, SASL steps)
//! then takes what CPU the connected clients leave, instead of queueing ahead of their
//! requests on the main runtime's workers.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// Niceness of the login thread: under contention it gets about a tenth of what a normal
/// thread gets, and all of an idle core.
const LOGIN_NICENESS: i32 = 19;

/// Starts the login runtime's thread; its handle. `None` if the thread cannot be started
/// (logins then run on the main runtime).
pub(crate) fn start() -> Option<tokio::runtime::Handle> {
    let (sender, receiver) = std::sync::mpsc::channel();
    let started = std::thread::Builder::new()
        .name("logd-login".into())
        .spawn(move || {
            if !logd::lower_thread_priority(LOGIN_NICENESS) {
                tracing::debug!("login thread keeps normal priority");
            }
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(e) => {
                    tracing::warn!(error = %e, "no login runtime; logins share the main one");
                    return;
                }
            };
            let _ = sender.send(runtime.handle().clone());
            // Runs until the process ends: logins may be under way at any time.
            runtime.block_on(std::future::pending::<()>());
        });
    if let Err(e) = started {
        tracing::warn!(error = %e, "no login thread; logins share the main runtime");
        return None;
    }
    receiver.recv().ok()
}

/// A TCP stream that can move to another runtime: [`Movable::rebind`] re-registers it with the
/// reactor of the runtime it is called on.
#[derive(Debug)]
pub(crate) struct Movable(Option<TcpStream>);

impl Movable {
    pub(crate) fn new(stream: TcpStream) -> Movable {
        Movable(Some(stream))
    }

    fn stream(self: Pin<&mut Self>) -> io::Result<Pin<&mut TcpStream>> {
        match self.get_mut().0.as_mut() {
            Some(stream) => Ok(Pin::new(stream)),
            None => Err(io::Error::other("connection lost while moving runtimes")),
        }
    }
}

/// A stream whose socket can move to the runtime this is called on.
pub(crate) trait Rebind {
    /// Moves the socket to the current runtime's reactor.
    fn rebind(&mut self) -> io::Result<()>;
}

impl Rebind for Movable {
    fn rebind(&mut self) -> io::Result<()> {
        let stream = self
            .0
            .take()
            .ok_or_else(|| io::Error::other("connection lost while moving runtimes"))?;
        self.0 = Some(TcpStream::from_std(stream.into_std()?)?);
        Ok(())
    }
}

impl Rebind for tokio_rustls::server::TlsStream<Movable> {
    fn rebind(&mut self) -> io::Result<()> {
        self.get_mut().0.rebind()
    }
}

impl AsyncRead for Movable {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.stream() {
            Ok(stream) => stream.poll_read(cx, buf),
            Err(e) => Poll::Ready(Err(e)),
        }
    }
}

impl AsyncWrite for Movable {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.stream() {
            Ok(stream) => stream.poll_write(cx, buf),
            Err(e) => Poll::Ready(Err(e)),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.stream() {
            Ok(stream) => stream.poll_write_vectored(cx, bufs),
            Err(e) => Poll::Ready(Err(e)),
        }
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.stream() {
            Ok(stream) => stream.poll_flush(cx),
            Err(e) => Poll::Ready(Err(e)),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.stream() {
            Ok(stream) => stream.poll_shutdown(cx),
            Err(e) => Poll::Ready(Err(e)),
        }
    }
}
