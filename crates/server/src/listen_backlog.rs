//! The accept queue of logd's Kafka listeners: as deep as the kernel allows
//! (`net.core.somaxconn`, 4,096 by default since Linux 5.4), where Rust's standard library asks
//! for 128. Connections beyond the queue have their SYNs dropped and wait a second for the
//! retransmit: a burst of clients connecting at once (200 logins, or every client of a
//! restarted broker reconnecting) would otherwise trickle in over seconds.

use std::io;
use std::net::TcpListener;
use std::os::fd::AsRawFd;

/// The accept queue asked for; the kernel caps it at `net.core.somaxconn`.
const BACKLOG: i32 = 4096;

/// Deepens the accept queue of a listening socket.
#[allow(unsafe_code)]
pub(crate) fn deepen(listener: &TcpListener) -> io::Result<()> {
    // SAFETY: the descriptor is `listener`'s, open for the whole call; `listen` on a socket
    // that already listens only changes its queue length.
    if unsafe { libc::listen(listener.as_raw_fd(), BACKLOG) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::net::TcpStream;
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_burst_of_connections_beyond_the_standard_queue_all_land_at_once() {
        // Nothing accepts: every connection must fit in the queue, or its SYN is dropped and
        // its connect outlasts the timeout (the retransmit comes after a second).
        let somaxconn: usize = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(128);
        let burst = somaxconn.min(400);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        deepen(&listener).unwrap();
        let addr = listener.local_addr().unwrap();
        let connected: Vec<TcpStream> = (0..burst)
            .map_while(|_| TcpStream::connect_timeout(&addr, Duration::from_millis(500)).ok())
            .collect();
        assert_eq!(connected.len(), burst, "of {burst} (somaxconn {somaxconn})");
    }
}
