//! The real `logd` binary on a free loopback port, driven by unmodified Kafka clients
//! (librdkafka through the `rdkafka` crate, kafka-python and confluent-kafka from a virtual
//! environment the tests create under `target/`, the system's kcat for an old librdkafka) and
//! by malformed frames. Nothing needs installing by hand: see `python_env` and `librdkafka`.

mod acls;
mod admin_vs_kafka;
mod cli;
mod clients;
mod cluster_admin;
mod cluster_facade;
mod cluster_tools;
mod compaction;
mod conformance;
mod console;
mod console_access;
mod console_browser;
mod console_hosts;
mod console_login_browser;
mod console_scale;
mod consumer_protocol;
mod consumer_protocol_vs_kafka;
mod descriptors;
mod franz;
mod go_clients;
mod group_tools;
mod groups;
mod idempotence;
mod intake;
mod java_client;
mod java_clients;
#[path = "../../../../tests/support/kafka_cluster.rs"]
mod kafka_cluster;
mod kafka_cluster_tools;
mod kafka_connect;
mod kafka_streams;
mod kafka_tools;
mod librdkafka;
mod lifecycle;
mod malformed;
mod many_partitions;
mod memory;
mod metrics;
mod migration;
mod offsets_at_load;
mod old_librdkafka;
mod produce_errors;
#[path = "../../../../tests/support/provision.rs"]
mod provision;
mod proxy;
mod python_env;
mod quotas;
mod raw_wire;
mod retry;
mod sarama;
mod security;
mod share_groups;
mod share_groups_vs_kafka;
mod share_lifetime_rounds;
mod topic_configs;
mod transactions;
mod transactions_vs_kafka;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub use provision::{provisioning_lock, say, test_clients_dir};

/// Polls `done` every 100 ms; fails the test after `timeout`, naming `what` it waited for.
pub fn wait_until(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < timeout, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A running `logd serve`; killed when dropped.
pub struct Daemon {
    child: Child,
    /// `host:port` it listens on.
    pub addr: String,
    /// `host:port` of its HTTP listener (metrics, console), when started with
    /// `--metrics-listen` or `--http-listen`.
    pub metrics: Option<String>,
    /// `(name, host:port)` of each `--listener`, in the order given.
    pub listeners: Vec<(String, String)>,
}

impl Daemon {
    /// Starts `logd serve --listen 127.0.0.1:0` on `data_dir` and waits for its address line.
    pub fn start(data_dir: &Path, extra: &[&str]) -> Daemon {
        Daemon::start_with_env(data_dir, extra, &[])
    }

    /// As [`Daemon::start`], on a given address (a restart where clients stay connected).
    pub fn start_on(data_dir: &Path, listen: &str, extra: &[&str]) -> Daemon {
        Daemon::spawn(data_dir, listen, extra, &[])
    }

    /// As [`Daemon::start`], with extra environment variables.
    pub fn start_with_env(data_dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> Daemon {
        Daemon::spawn(data_dir, "127.0.0.1:0", extra, env)
    }

    /// As [`Daemon::start`], its log (at `info`) going to `log`.
    pub fn start_logging_to(data_dir: &Path, extra: &[&str], log: &Path) -> Daemon {
        let log = std::fs::File::create(log).expect("log file");
        Daemon::spawn_with(
            data_dir,
            "127.0.0.1:0",
            extra,
            &[("RUST_LOG", "info")],
            log.into(),
            None,
        )
    }

    /// As [`Daemon::start`], under an open-file limit (soft and hard) of `open_files`, its log
    /// (at `warn`) going to `log`.
    pub fn start_with_file_limit(
        data_dir: &Path,
        extra: &[&str],
        open_files: u64,
        log: &Path,
    ) -> Daemon {
        let log = std::fs::File::create(log).expect("log file");
        Daemon::spawn_with(
            data_dir,
            "127.0.0.1:0",
            extra,
            &[],
            log.into(),
            Some(open_files),
        )
    }

    fn spawn(data_dir: &Path, listen: &str, extra: &[&str], env: &[(&str, &str)]) -> Daemon {
        Daemon::spawn_with(data_dir, listen, extra, env, Stdio::inherit(), None)
    }

    fn spawn_with(
        data_dir: &Path,
        listen: &str,
        extra: &[&str],
        env: &[(&str, &str)],
        stderr: Stdio,
        open_files: Option<u64>,
    ) -> Daemon {
        // The HTTP listener's default address is one per machine: tests that do not ask for
        // it turn it off, so that daemons started side by side do not compete for it.
        let http = extra.contains(&"--metrics-listen") || extra.contains(&"--http-listen");
        let logd = env!("CARGO_BIN_EXE_logd");
        // util-linux's prlimit sets the limit and then runs logd in its place (one process).
        let mut command = match open_files {
            None => Command::new(logd),
            Some(limit) => {
                let mut prlimit = Command::new("prlimit");
                prlimit.arg(format!("--nofile={limit}:{limit}")).arg(logd);
                prlimit
            }
        };
        let mut child = command
            .args(["serve", "--listen", listen, "--data-dir"])
            .arg(data_dir)
            .args(extra)
            .args(if http {
                &[][..]
            } else {
                &["--http-listen", "none"][..]
            })
            .env("RUST_LOG", "warn")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("start logd");
        let mut line = String::new();
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        stdout.read_line(&mut line).expect("address line");
        // One more line per `--listener`: `logd listening on NAME=PROTOCOL://ADDR`.
        let listeners = (0..extra.iter().filter(|a| **a == "--listener").count())
            .map(|_| {
                let mut line = String::new();
                stdout.read_line(&mut line).expect("listener line");
                let (name, rest) = line
                    .trim()
                    .strip_prefix("logd listening on ")
                    .and_then(|l| l.split_once('='))
                    .unwrap_or_else(|| panic!("unexpected listener line {line:?}"));
                let addr = rest.split_once("://").expect("PROTOCOL://ADDR").1;
                (name.to_owned(), addr.to_owned())
            })
            .collect();
        let metrics = http.then(|| {
            let mut metrics_line = String::new();
            stdout.read_line(&mut metrics_line).expect("metrics line");
            metrics_line
                .trim()
                .strip_prefix("logd metrics on http://")
                .and_then(|rest| rest.strip_suffix("/metrics"))
                .unwrap_or_else(|| panic!("unexpected second line {metrics_line:?}"))
                .to_owned()
        });
        let addr = line
            .trim()
            .strip_prefix("logd listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_owned();
        Daemon {
            child,
            addr,
            metrics,
            listeners,
        }
    }

    /// The daemon's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM, then the exit status (0 for a clean shutdown).
    pub fn terminate(mut self) -> std::process::ExitStatus {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success());
        self.child.wait().expect("wait")
    }

    /// SIGKILL: no shutdown work at all.
    pub fn kill(mut self) {
        self.child.kill().expect("kill -9");
        self.child.wait().expect("wait");
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `program ARGS`, feeding it `stdin`, and collects its output.
fn run_with_stdin(program: &Path, args: &[&str], stdin: &str) -> Output {
    use std::io::Write;
    let mut command = Command::new(program);
    // Cargo puts the build's native library directories on LD_LIBRARY_PATH for tests, and
    // rdkafka-sys's holds a librdkafka.so.1 of its own (2.12, no OpenSSL): without this the
    // system kcat would load that instead of the system's librdkafka 2.0.2.
    command.env_remove("LD_LIBRARY_PATH");
    let mut child = command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", program.display()));
    let written = child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes());
    // A command that refuses its arguments may exit before it reads its stdin.
    if let Err(e) = written {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "write stdin: {e}");
    }
    child.wait_with_output().expect("wait")
}

/// Runs `logd ARGS` with `stdin`; returns (success, stdout, stderr).
pub fn logd(args: &[&str], stdin: &str) -> (bool, String, String) {
    let out = run_with_stdin(Path::new(env!("CARGO_BIN_EXE_logd")), args, stdin);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs a Python script with the daemon's address as argv[1]; panics with its stderr on failure.
pub fn python(script: &str, addr: &str) -> String {
    checked(
        python_script(script, &[addr]).output().expect("python3"),
        "python3",
    )
}

/// A command running `script` with `args` in the test clients' Python environment.
pub fn python_script(script: &str, args: &[&str]) -> Command {
    let mut command = Command::new(python_env::python3());
    command.arg("-c").arg(script).args(args);
    command
}

/// The system's kcat, when one is on PATH: the one old librdkafka the tests drive (Debian's
/// kcat 1.7.1 carries librdkafka 2.0.2, which probes broker features differently from the
/// librdkafka that `rdkafka` builds). Missing, the caller says so in the run's output, except
/// under CI (`CI` set), whose script installs it: there a missing kcat fails the test.
pub fn system_kcat() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("kcat"))
            .find(|candidate| candidate.is_file())
    });
    assert!(
        found.is_some() || std::env::var_os("CI").is_none(),
        "CI installs kcat (.ci/run), yet none is on PATH"
    );
    if found.is_none() {
        say(
            "logd tests: no kcat on PATH, so the old-librdkafka test covers nothing on this \
             machine (apt-get install kcat adds it); librdkafka is still covered through rdkafka",
        );
    }
    found
}

/// Debian's chromium, when it is installed: the browser the console's tests drive through
/// Playwright. Missing, the caller says so in the run's output, except under CI (`CI` set),
/// whose script installs it: there a missing browser fails the test.
pub fn system_chromium() -> Option<PathBuf> {
    let found = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|candidate| candidate.is_file());
    assert!(
        found.is_some() || std::env::var_os("CI").is_none(),
        "CI installs chromium (.ci/run), yet none is installed"
    );
    if found.is_none() {
        say(
            "logd tests: no chromium installed, so the console's browser test covers nothing on \
             this machine (apt-get install chromium adds it); its API tests still run",
        );
    }
    found
}

/// Runs `kcat` with `args`, feeding `stdin`.
pub fn kcat(kcat: &Path, args: &[&str], stdin: &str) -> String {
    checked(run_with_stdin(kcat, args, stdin), "kcat")
}

fn checked(output: Output, what: &str) -> String {
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("utf-8 output")
}

/// Frames `request` behind a header and a size prefix and writes it.
pub fn write_request(
    stream: &mut std::net::TcpStream,
    api_key: kafka_protocol::messages::ApiKey,
    version: i16,
    correlation_id: i32,
    request: &impl kafka_protocol::protocol::Encodable,
) {
    use kafka_protocol::protocol::Encodable;
    use std::io::Write;
    let mut header = kafka_protocol::messages::RequestHeader::default();
    header.request_api_key = api_key as i16;
    header.request_api_version = version;
    header.correlation_id = correlation_id;
    header.client_id = Some(kafka_protocol::protocol::StrBytes::from_static_str(
        "daemon-test",
    ));
    let mut body = bytes::BytesMut::new();
    header
        .encode(&mut body, api_key.request_header_version(version))
        .unwrap();
    request.encode(&mut body, version).unwrap();
    stream
        .write_all(&(body.len() as i32).to_be_bytes())
        .unwrap();
    stream.write_all(&body).unwrap();
}
