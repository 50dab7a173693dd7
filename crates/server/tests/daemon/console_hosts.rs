//! The console against DNS rebinding, with a real daemon on loopback and no login (the
//! default): a request whose `Host` is another site's name is refused, whatever it asks, and a
//! change whose `Origin` is another site is refused, with nothing changed; a name given with
//! `--http-allowed-hosts` is served; `/metrics` and `/health` answer to any name.

use std::io::{Read, Write};

use super::Daemon;
use super::metrics::get;

/// Sends `method path` with the given `Host` and `Origin` headers; (status line, body).
fn send(
    http: &str,
    method: &str,
    path: &str,
    host: &str,
    origin: Option<&str>,
) -> (String, String) {
    let body = r#"{"name":"made","partitions":1}"#;
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(origin) = origin {
        head.push_str(&format!("Origin: {origin}\r\n"));
    }
    let mut stream = std::net::TcpStream::connect(http).unwrap();
    write!(stream, "{head}\r\n{body}").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_owned(), body.to_owned())
}

fn topics(http: &str) -> String {
    get(http, "/api/v1/topics").1
}

#[test]
fn the_console_answers_only_to_its_own_names() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(
        dir.path(),
        &[
            "--http-listen",
            "127.0.0.1:0",
            "--http-allowed-hosts",
            "console.example",
        ],
    );
    let http = daemon.metrics.clone().unwrap();
    let forbidden = "HTTP/1.1 403 Forbidden";

    // A rebound name: reads and changes alike are refused, naming the option.
    for (method, path) in [
        ("GET", "/"),
        ("GET", "/api/v1/topics"),
        ("POST", "/api/v1/topics"),
        ("POST", "/api/v1/login"),
    ] {
        let (status, body) = send(
            &http,
            method,
            path,
            "attacker.example",
            Some("http://attacker.example"),
        );
        assert_eq!(status, forbidden, "{method} {path}: {body}");
        assert!(body.contains("--http-allowed-hosts"), "{body}");
    }
    // The console's own address, but a change posted from another site's page.
    let (status, body) = send(
        &http,
        "POST",
        "/api/v1/topics",
        &http,
        Some("http://attacker.example"),
    );
    assert_eq!(status, forbidden, "{body}");
    assert!(
        !topics(&http).contains("made"),
        "nothing was created: {}",
        topics(&http)
    );

    // Scrapers reach metrics and health by any name.
    for path in ["/metrics", "/health"] {
        let (status, _) = send(&http, "GET", path, "metrics.internal.example", None);
        assert_eq!(status, "HTTP/1.1 200 OK", "{path}");
    }

    // The console's own pages, by address, by localhost and by an allowed name, are served.
    let port = http.rsplit_once(':').unwrap().1;
    let (status, _) = send(&http, "GET", "/", &format!("localhost:{port}"), None);
    assert_eq!(status, "HTTP/1.1 200 OK");
    let allowed = format!("console.example:{port}");
    let (status, body) = send(
        &http,
        "POST",
        "/api/v1/topics",
        &allowed,
        Some(&format!("http://{allowed}")),
    );
    assert!(status.starts_with("HTTP/1.1 20"), "{status}: {body}");
    assert!(topics(&http).contains("\"made\""), "{}", topics(&http));
}
