//! The metrics listener: `GET /metrics` (Prometheus/OpenMetrics text) and `GET /health`, one
//! request per connection, on its own thread. Scrapers are few and local, so a small HTTP/1.1
//! responder does; a request line longer than a few KiB or slower than a few seconds is
//! dropped.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use super::Metrics;

const MAX_HEAD_BYTES: u64 = 8 << 10;

/// Serves `listener` forever on a new thread.
pub(crate) fn spawn(listener: TcpListener, metrics: Arc<Metrics>) {
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            if let Err(e) = answer(stream, &metrics) {
                tracing::debug!(error = %e, "metrics request failed");
            }
        }
    });
}

fn answer(stream: TcpStream, metrics: &Metrics) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.set_write_timeout(Some(Duration::from_secs(5)))?;
    let mut reader = BufReader::new((&stream).take(MAX_HEAD_BYTES));
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    // Drain the headers up to the blank line; the requests served have no body.
    let mut line = String::new();
    while reader.read_line(&mut line)? > 2 {
        line.clear();
    }
    let mut parts = request_line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = path.split('?').next().unwrap_or("");
    let (status, content_type, body) = match (method, path) {
        ("GET", "/metrics") => (
            "200 OK",
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            metrics.render(),
        ),
        ("GET", "/health") => ("200 OK", "text/plain; charset=utf-8", "ok\n".to_owned()),
        ("GET", _) => (
            "404 Not Found",
            "text/plain; charset=utf-8",
            "not found\n".to_owned(),
        ),
        _ => (
            "405 Method Not Allowed",
            "text/plain; charset=utf-8",
            "only GET\n".to_owned(),
        ),
    };
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()
}
