//! A real Apache Kafka beside logd in the tests: three KRaft nodes on loopback, each a
//! controller and a broker, started from the pinned Maven jars (`kafka/pom.xml` beside this
//! file, resolved into `target/test-clients/kafka`) as `bin/kafka-server-start.sh` runs them,
//! with small heaps, ACLs on (Kafka's `StandardAuthorizer`, `User:ANONYMOUS` a super user, as
//! logd runs in the comparisons). Mounted with `provision.rs` beside it by the daemon tests and
//! by the scenario tests (the retry workers on a cluster): the first test of a test binary
//! that needs it starts it, and that binary's tests share it. A watchdog shell beside each node
//! kills it and removes its data once the test process is gone, so no JVM outlives a run,
//! however the run ends.

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};

use super::provision::{Pinned, provision, say};

/// Apache Kafka's broker, pinned.
const KAFKA: Pinned = Pinned {
    name: "kafka",
    pom: include_str!("kafka/pom.xml"),
    programs: None,
    sources: &[],
};

/// The cluster id every node is formatted with (any valid one; each run's data is fresh).
const CLUSTER_ID: &str = "bG9nZC10ZXN0cy1rYWZrYQ";
/// Nodes in the cluster.
const NODES: usize = 3;
/// How long one attempt may take to start the cluster on a busy 2-core machine.
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// A running Kafka cluster.
pub struct KafkaCluster {
    /// Every broker's `host:port`, comma-separated, for `bootstrap.servers`.
    pub bootstrap: String,
    /// The nodes' watchdog shells: they end with the test process, never before.
    _watchdogs: Vec<Child>,
}

/// The shared cluster, started on first use.
pub fn kafka_cluster() -> &'static KafkaCluster {
    static CLUSTER: OnceLock<KafkaCluster> = OnceLock::new();
    CLUSTER.get_or_init(start)
}

/// Loopback ports free now, below the kernel's ephemeral range: the other tests' brokers and
/// clients bind port 0, which the kernel picks from that range, so one of them cannot take a
/// node's port between this check and the node's bind (as it did once: a node's controller
/// port answered Kafka's VOTE as logd, with UNSUPPORTED_VERSION).
fn free_ports(count: usize, attempt: u32) -> Vec<u16> {
    let ephemeral_from: u16 = fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse().ok())
        .unwrap_or(32768);
    let low = 10_000u16;
    let span = u32::from(ephemeral_from.saturating_sub(low).max(1000));
    // Spread by process and attempt, so two test binaries at once start apart.
    let mut candidate = (std::process::id() * 7919 + attempt * 104_729) % span;
    let mut ports = Vec::new();
    for _ in 0..span {
        let port = low + candidate as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            ports.push(port);
            if ports.len() == count {
                return ports;
            }
        }
        candidate = (candidate + 1) % span;
    }
    panic!("no {count} free loopback ports between {low} and {ephemeral_from}")
}

fn properties(node: usize, brokers: &[u16], controllers: &[u16], dir: &Path) -> String {
    let voters: Vec<String> = controllers
        .iter()
        .enumerate()
        .map(|(i, port)| format!("{}@127.0.0.1:{port}", i + 1))
        .collect();
    format!(
        "process.roles=broker,controller\n\
         node.id={id}\n\
         controller.quorum.voters={voters}\n\
         listeners=PLAINTEXT://127.0.0.1:{broker},CONTROLLER://127.0.0.1:{controller}\n\
         advertised.listeners=PLAINTEXT://127.0.0.1:{broker}\n\
         controller.listener.names=CONTROLLER\n\
         inter.broker.listener.name=PLAINTEXT\n\
         listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n\
         log.dirs={logs}\n\
         authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n\
         super.users=User:ANONYMOUS\n\
         group.initial.rebalance.delay.ms=0\n\
         num.network.threads=2\n\
         num.io.threads=2\n\
         background.threads=2\n\
         log.cleaner.threads=1\n\
         log.cleaner.dedupe.buffer.size=8388608\n",
        id = node + 1,
        voters = voters.join(","),
        broker = brokers[node],
        controller = controllers[node],
        logs = dir.join(format!("node{}", node + 1)).display(),
    )
}

/// `java` on Kafka's jars, as the scripts run it, with a small heap.
fn kafka_java(jars: &Path) -> String {
    format!(
        "java -Xmx256m -Xss512k -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp '{}/*'",
        jars.display()
    )
}

/// The pinned Apache Kafka broker's jars (`lib/` under the returned directory), resolved on
/// first use.
fn kafka_jars() -> PathBuf {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| provision(&KAFKA)).clone()
}

/// Attempts at starting the cluster before the tests that need it fail: a node that cannot
/// bind its port or join the quorum ends its attempt, and the next one starts afresh.
const ATTEMPTS: u32 = 3;

fn start() -> KafkaCluster {
    let mut failures = Vec::new();
    for attempt in 1..=ATTEMPTS {
        match try_start(attempt) {
            Ok(cluster) => return cluster,
            Err(why) => {
                say(&format!(
                    "logd tests: the Kafka cluster's attempt {attempt} failed: {}",
                    why.lines().next().unwrap_or_default()
                ));
                failures.push(format!("attempt {attempt}: {why}"));
            }
        }
    }
    panic!(
        "the Kafka cluster did not start in {ATTEMPTS} attempts\n{}",
        failures.join("\n")
    )
}

/// One attempt in a directory of its own; on failure its nodes are stopped and their data
/// removed before the reason is returned.
fn try_start(attempt: u32) -> Result<KafkaCluster, String> {
    let jars = kafka_jars().join("lib");
    let dir: PathBuf =
        std::env::temp_dir().join(format!("logd-kafka-{}-{attempt}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    let ports = free_ports(2 * NODES, attempt);
    let (brokers, controllers) = ports.split_at(NODES);
    say(&format!(
        "logd tests: starting a {NODES}-node Apache Kafka cluster in {}",
        dir.display()
    ));
    let formats: Vec<_> = (0..NODES)
        .map(|node| {
            let props = dir.join(format!("node{}.properties", node + 1));
            fs::write(&props, properties(node, brokers, controllers, &dir)).unwrap();
            Command::new("sh")
                .arg("-c")
                .arg(format!(
                    "{} kafka.tools.StorageTool format -t {CLUSTER_ID} -c '{}'",
                    kafka_java(&jars),
                    props.display()
                ))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("sh")
        })
        .collect();
    let mut formatted = Ok(());
    for format in formats {
        let output = format.wait_with_output().unwrap();
        if !output.status.success() && formatted.is_ok() {
            formatted = Err(format!(
                "kafka-storage format failed:\n{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ));
        }
    }
    if let Err(why) = formatted {
        let _ = fs::remove_dir_all(&dir);
        return Err(why);
    }
    let test_process = std::process::id();
    let mut watchdogs = Vec::new();
    for node in 1..=NODES {
        // The node runs in the background of a shell that watches this process: when the
        // test process is gone (however it ended), or the attempt is given up (`stop`), the
        // node is killed and its data removed.
        let script = format!(
            "{java} kafka.Kafka '{dir}/node{node}.properties' > '{dir}/node{node}.log' 2>&1 &\n\
             kafka=$!\n\
             while kill -0 {test_process} 2>/dev/null && kill -0 $kafka 2>/dev/null \\\n\
               && [ ! -e '{dir}/stop' ]; do sleep 1; done\n\
             kill -9 $kafka 2>/dev/null\n\
             wait\n\
             rm -rf '{dir}/node{node}' '{dir}/node{node}.properties' '{dir}/node{node}.log'\n\
             rmdir '{dir}' 2>/dev/null\n",
            java = kafka_java(&jars),
            dir = dir.display(),
        );
        let watchdog = Command::new("sh")
            .arg("-c")
            .arg(script)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("sh");
        watchdogs.push(watchdog);
    }
    let bootstrap = brokers
        .iter()
        .map(|port| format!("127.0.0.1:{port}"))
        .collect::<Vec<_>>()
        .join(",");
    match wait_for_brokers(&bootstrap, &dir, &mut watchdogs) {
        Ok(()) => Ok(KafkaCluster {
            bootstrap,
            _watchdogs: watchdogs,
        }),
        Err(why) => {
            fs::write(dir.join("stop"), "").unwrap();
            for mut watchdog in watchdogs {
                let _ = watchdog.wait();
            }
            let _ = fs::remove_dir_all(&dir);
            Err(why)
        }
    }
}

/// Waits until every broker is in the cluster's metadata; a node that ended (its watchdog
/// with it) or the timeout fails the attempt, with the tail of each node's log.
fn wait_for_brokers(bootstrap: &str, dir: &Path, watchdogs: &mut [Child]) -> Result<(), String> {
    let start = Instant::now();
    let client: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("log_level", "0")
        .create()
        .expect("librdkafka client");
    loop {
        let brokers = client
            .fetch_metadata(None, Duration::from_secs(2))
            .map(|m| m.brokers().len())
            .unwrap_or(0);
        if brokers == NODES {
            say(&format!(
                "logd tests: Kafka cluster up in {:.1} s",
                start.elapsed().as_secs_f64()
            ));
            return Ok(());
        }
        let ended: Vec<usize> = watchdogs
            .iter_mut()
            .enumerate()
            .filter_map(|(n, w)| w.try_wait().ok().flatten().map(|_| n + 1))
            .collect();
        if !ended.is_empty() || start.elapsed() > START_TIMEOUT {
            let logs: String = (1..=NODES)
                .map(|n| {
                    let log =
                        fs::read_to_string(dir.join(format!("node{n}.log"))).unwrap_or_default();
                    let tail: Vec<&str> = log.lines().rev().take(30).collect();
                    format!(
                        "--- node {n}:\n{}\n",
                        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                    )
                })
                .collect();
            let why = if ended.is_empty() {
                format!("not up within {START_TIMEOUT:?}")
            } else {
                format!("nodes {ended:?} ended")
            };
            return Err(format!("{why} ({brokers} brokers up)\n{logs}"));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}
