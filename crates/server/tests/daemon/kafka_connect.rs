//! Kafka Connect 4.x in distributed mode against a real daemon (4.3.1, the newest release whose
//! FileStream connectors Maven Central serves; pinned in `java/connect/pom.xml`): the worker
//! creates its internal topics compacted (and checks them through DescribeConfigs, as Connect
//! does), joins its group, and runs a FileStreamSource into a topic and a FileStreamSink out of
//! it; stopped and started again, it resumes from its stored offsets, so every input line
//! reaches the output once, in order.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use super::java_clients::{connect, java};
use super::{Daemon, wait_until};

/// One HTTP request to the worker's REST API: the status code and the body.
fn http(addr: &str, method: &str, path: &str, body: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(addr).ok()?;
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, body.to_owned()))
}

/// A Connect worker process, stopped on drop.
struct Worker(Child);

impl Worker {
    fn start(properties: &Path, log: &Path) -> Worker {
        let log = std::fs::File::create(log).unwrap();
        let child = connect(
            "org.apache.kafka.connect.cli.ConnectDistributed",
            &[properties.to_str().unwrap()],
        )
        .stdout(Stdio::from(log.try_clone().unwrap()))
        .stderr(Stdio::from(log))
        .spawn()
        .expect("java");
        Worker(child)
    }

    /// SIGTERM, then waits for the worker to commit its offsets and exit.
    fn stop(mut self) {
        let status = std::process::Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        self.0.wait().unwrap();
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn kafka_connect_runs_a_file_pipeline_and_resumes_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(&dir.path().join("data"), &[]);
    let rest = {
        let free = TcpListener::bind("127.0.0.1:0").unwrap();
        free.local_addr().unwrap().to_string()
    };
    let input = dir.path().join("in.txt");
    let output = dir.path().join("out.txt");
    let sent: Vec<String> = (0..30).map(|i| format!("line {i}")).collect();
    std::fs::write(&input, sent[..20].join("\n") + "\n").unwrap();
    let properties = dir.path().join("worker.properties");
    std::fs::write(
        &properties,
        format!(
            "bootstrap.servers={}\n\
             group.id=connect-cluster\n\
             key.converter=org.apache.kafka.connect.storage.StringConverter\n\
             value.converter=org.apache.kafka.connect.storage.StringConverter\n\
             offset.storage.topic=connect-offsets\n\
             config.storage.topic=connect-configs\n\
             status.storage.topic=connect-status\n\
             offset.storage.replication.factor=1\n\
             config.storage.replication.factor=1\n\
             status.storage.replication.factor=1\n\
             offset.flush.interval.ms=500\n\
             session.timeout.ms=6000\n\
             heartbeat.interval.ms=1000\n\
             listeners=http://{rest}\n",
            daemon.addr
        ),
    )
    .unwrap();
    let ready = |what: &str| {
        wait_until(what, Duration::from_secs(90), || {
            http(&rest, "GET", "/connectors", "")
                .is_some_and(|(s, b)| s == 200 && b.starts_with('['))
        })
    };

    let worker = Worker::start(&properties, &dir.path().join("worker-1.log"));
    ready("the Connect worker serves its REST API");
    for (name, config) in [
        (
            "source",
            format!(
                r#"{{"connector.class":"org.apache.kafka.connect.file.FileStreamSourceConnector","tasks.max":"1","file":"{}","topic":"lines"}}"#,
                input.display()
            ),
        ),
        (
            "sink",
            format!(
                r#"{{"connector.class":"org.apache.kafka.connect.file.FileStreamSinkConnector","tasks.max":"1","file":"{}","topics":"lines"}}"#,
                output.display()
            ),
        ),
    ] {
        let (status, body) = http(
            &rest,
            "POST",
            "/connectors",
            &format!(r#"{{"name":"{name}","config":{config}}}"#),
        )
        .expect("the worker answers");
        assert_eq!(status, 201, "{name}: {body}");
    }
    wait_until(
        "the sink writes the first 20 lines",
        Duration::from_secs(60),
        || lines(&output).len() >= 20,
    );
    assert_eq!(lines(&output), sent[..20]);

    // The internal topics are compacted, as Connect creates them and checks them.
    for topic in ["connect-configs", "connect-offsets", "connect-status"] {
        let described = java(
            "org.apache.kafka.tools.ConfigCommand",
            &[
                "--bootstrap-server",
                &daemon.addr,
                "--entity-type",
                "topics",
                "--entity-name",
                topic,
                "--describe",
            ],
        )
        .output()
        .unwrap();
        let described = String::from_utf8_lossy(&described.stdout);
        assert!(
            described.contains("cleanup.policy=compact"),
            "{topic}: {described}"
        );
    }

    // Stopped, the file grows; started again, both connectors resume where they stopped.
    worker.stop();
    let mut more = std::fs::OpenOptions::new()
        .append(true)
        .open(&input)
        .unwrap();
    more.write_all((sent[20..].join("\n") + "\n").as_bytes())
        .unwrap();
    let _worker = Worker::start(&properties, &dir.path().join("worker-2.log"));
    wait_until(
        "the restarted sink writes the new lines",
        Duration::from_secs(90),
        || lines(&output).len() >= 30,
    );
    // Nothing more arrives: each line once.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(lines(&output), sent);
}
