//! Authorization against a real `logd --authorizer acl` over SASL: ACLs managed with `logd acls`
//! and confluent-kafka's admin client, enforced on confluent-kafka's producer and consumer
//! (each refusal is the client's authorization error), a change applying to a connection
//! already open, ACLs surviving kill -9, refusals in `/metrics` and the log, and a retry worker
//! with the `retry-worker` preset, which reports a refused dead letter instead of losing it.

use std::path::Path;
use std::time::Duration;

use logd_client::{Client, ClientSecurity, Remote};
use logd_retry::{Failure, Message, Outcome, RetryConfig, RetryWorker, Transport};
use logd_storage::batch::{BatchBuilder, Compression};

use super::metrics::scrape;
use super::{Daemon, logd, python_script, wait_until};

const SASL: &str = "SASL";

/// `logd users create NAME` offline, with password `NAME-pw`.
fn create_user(data: &Path, name: &str) {
    let data = data.display().to_string();
    let (ok, out, err) = logd(
        &[
            "users",
            "create",
            name,
            "--data-dir",
            &data,
            "--mechanism",
            "SCRAM-SHA-256",
            "--iterations",
            "4096",
            "--password-stdin",
        ],
        &format!("{name}-pw\n"),
    );
    assert!(ok, "{out}{err}");
}

pub(super) struct Cluster {
    dir: tempfile::TempDir,
    daemon: Option<Daemon>,
}

impl Cluster {
    /// A daemon with a SASL_PLAINTEXT listener, ACLs on, `User:admin` a super user, and users
    /// admin, alice and billing.
    pub(super) fn start() -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        for user in ["admin", "alice", "billing"] {
            create_user(&dir.path().join("data"), user);
        }
        let mut cluster = Cluster { dir, daemon: None };
        cluster.restart();
        cluster
    }

    fn restart(&mut self) {
        let args = [
            "--listener",
            "SASL=SASL_PLAINTEXT://127.0.0.1:0",
            "--authorizer",
            "acl",
            "--super-users",
            "User:admin",
            "--metrics-listen",
            "127.0.0.1:0",
        ];
        self.daemon = Some(Daemon::start_logging_to(
            &self.dir.path().join("data"),
            &args,
            &self.dir.path().join("logd.log"),
        ));
    }

    pub(super) fn daemon(&self) -> &Daemon {
        self.daemon.as_ref().expect("running")
    }

    fn sasl(&self) -> String {
        let daemon = self.daemon();
        daemon
            .listeners
            .iter()
            .find(|(n, _)| n == SASL)
            .expect("SASL listener")
            .1
            .clone()
    }

    /// The Kafka client properties to log in as `user`.
    fn properties(&self, user: &str) -> String {
        format!(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n\
             sasl.username={user}\nsasl.password={user}-pw\n"
        )
    }

    /// A file with [`Cluster::properties`], for `--command-config`.
    fn properties_file(&self, user: &str) -> String {
        let file = self.dir.path().join(format!("{user}.properties"));
        std::fs::write(&file, self.properties(user)).unwrap();
        file.display().to_string()
    }

    /// `logd ARGS --bootstrap SASL --command-config USER`.
    pub(super) fn logd_as(&self, user: &str, args: &[&str]) -> (bool, String, String) {
        let sasl = self.sasl();
        let config = self.properties_file(user);
        let mut all = args.to_vec();
        all.extend(["--bootstrap", &sasl, "--command-config", &config]);
        logd(&all, "")
    }

    /// A Rust client logged in as `user`.
    fn client(&self, user: &str) -> Client {
        let security = ClientSecurity::from_properties(&ClientSecurity::parse_properties(
            &self.properties(user),
        ))
        .unwrap();
        Client::connect_with(&self.sasl(), &security).unwrap()
    }

    /// confluent-kafka settings to log in as `user`.
    fn librdkafka(&self, user: &str) -> serde_json::Value {
        serde_json::json!({
            "bootstrap.servers": self.sasl(),
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": user,
            "sasl.password": format!("{user}-pw"),
        })
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("logd.log")).unwrap()
    }
}

fn record(value: &str) -> Vec<u8> {
    let mut builder = BatchBuilder::new(Compression::None);
    builder.push(0, Some(value.as_bytes()), Some(value.as_bytes()), &[]);
    builder.build(0).unwrap()
}

fn kafka_code(result: Result<i64, logd_client::Error>) -> Option<i16> {
    match result {
        Ok(_) => None,
        Err(logd_client::Error::Kafka { code, .. }) => Some(code),
        Err(e) => panic!("not a Kafka refusal: {e}"),
    }
}

/// As alice: produce to `orders`, `readonly` and `secret`, then consume `orders` in group `billing`;
/// prints each outcome with librdkafka's error names.
const ALICE: &str = r#"
import sys, json
from confluent_kafka import Producer, Consumer, KafkaError
conf = json.loads(sys.argv[1])
outcomes = {}
def report(err, msg):
    outcomes[msg.topic()] = err.name() if err else "DELIVERED"
p = Producer(dict(conf, **{"message.timeout.ms": 10000}))
for topic in ["orders", "readonly", "secret"]:
    p.produce(topic, b"from alice", callback=report)
p.flush(15)
for topic in sorted(outcomes):
    print("PRODUCE", topic, outcomes[topic])
c = Consumer(dict(conf, **{"group.id": "billing", "auto.offset.reset": "earliest"}))
c.subscribe(["orders"])
seen = None
for _ in range(40):
    m = c.poll(0.5)
    if m is None:
        continue
    if m.error():
        seen = m.error().name()
        if m.error().code() != KafkaError._PARTITION_EOF:
            break
    else:
        seen = "CONSUMED " + m.value().decode()
        break
print("CONSUME", seen)
c.close()
"#;

/// As admin, with confluent-kafka's AdminClient: grant alice READ on group billing, list the
/// ACLs on group billing, and (with argv[2] = "delete") delete them again.
const ADMIN: &str = r#"
import sys, json
from confluent_kafka.admin import (AdminClient, AclBinding, AclBindingFilter, ResourceType,
    ResourcePatternType, AclOperation, AclPermissionType)
conf = json.loads(sys.argv[1])
a = AdminClient(conf)
if sys.argv[2] == "create":
    binding = AclBinding(ResourceType.GROUP, "billing", ResourcePatternType.LITERAL,
        "User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)
    for b, f in a.create_acls([binding]).items():
        f.result()
        print("CREATED", b.restype.name, b.name, b.principal, b.operation.name)
group_filter = AclBindingFilter(ResourceType.GROUP, "billing", ResourcePatternType.ANY,
    None, None, AclOperation.ANY, AclPermissionType.ANY)
for b in a.describe_acls(group_filter).result():
    print("LISTED", b.restype.name, b.name, b.principal, b.operation.name, b.permission_type.name)
if sys.argv[2] == "delete":
    for f in a.delete_acls([group_filter]).values():
        for b in f.result():
            print("DELETED", b.restype.name, b.name, b.principal, b.operation.name)
"#;

fn python(script: &str, args: &[&str]) -> String {
    let out = python_script(script, args).output().expect("python3");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "client failed:\n{stdout}\n{stderr}");
    stdout.into_owned()
}

#[test]
fn acls_from_logd_and_kafkas_admin_client_govern_confluent_kafkas_producer_and_consumer() {
    let cluster = Cluster::start();
    let (ok, out, err) = cluster.logd_as("admin", &["topics", "create", "orders"]);
    assert!(ok, "{out}{err}");
    for topic in ["readonly", "secret"] {
        let (ok, out, err) = cluster.logd_as("admin", &["topics", "create", topic]);
        assert!(ok, "{out}{err}");
    }
    // alice may read `readonly` (so see it) but not write it.
    let (ok, out, err) = cluster.logd_as(
        "admin",
        &[
            "acls",
            "add",
            "--allow-principal",
            "User:alice",
            "--operation",
            "READ",
            "--topic",
            "readonly",
        ],
    );
    assert!(ok, "{out}{err}");
    let (ok, out, err) = cluster.logd_as(
        "admin",
        &[
            "acls",
            "add",
            "--allow-principal",
            "User:alice",
            "--operation",
            "WRITE",
            "--operation",
            "READ",
            "--topic",
            "orders",
        ],
    );
    assert!(ok, "{out}{err}");
    let (ok, out, err) = cluster.logd_as("admin", &["acls", "list"]);
    assert!(ok, "{err}");
    assert!(
        out.contains(
            "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, \
             patternType=LITERAL)`:"
        ) && out.contains("(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)"),
        "{out}"
    );
    // alice may not manage ACLs.
    let (ok, _, err) = cluster.logd_as("alice", &["acls", "list"]);
    assert!(!ok && err.contains("CLUSTER_AUTHORIZATION_FAILED"), "{err}");

    let alice = cluster.librdkafka("alice").to_string();
    let out = python(ALICE, &[&alice]);
    assert!(out.contains("PRODUCE orders DELIVERED"), "{out}");
    // Refused by Produce itself, and by the metadata lookup before it.
    assert!(
        out.contains("PRODUCE readonly TOPIC_AUTHORIZATION_FAILED"),
        "{out}"
    );
    assert!(
        out.contains("PRODUCE secret TOPIC_AUTHORIZATION_FAILED"),
        "{out}"
    );
    assert!(out.contains("CONSUME GROUP_AUTHORIZATION_FAILED"), "{out}");

    // Kafka's admin client grants the group; now alice consumes.
    let admin = cluster.librdkafka("admin").to_string();
    let out = python(ADMIN, &[&admin, "create"]);
    assert!(
        out.contains("CREATED GROUP billing User:alice READ"),
        "{out}"
    );
    assert!(
        out.contains("LISTED GROUP billing User:alice READ ALLOW"),
        "{out}"
    );
    let out = python(ALICE, &[&alice]);
    assert!(out.contains("CONSUME CONSUMED from alice"), "{out}");
    let out = python(ADMIN, &[&admin, "delete"]);
    assert!(
        out.contains("DELETED GROUP billing User:alice READ"),
        "{out}"
    );
    let (_, listed, _) = cluster.logd_as("admin", &["acls", "list", "--group", "billing"]);
    assert!(!listed.contains("User:alice"), "{listed}");

    // Every refusal is counted, and logged once per connection and resource.
    let metrics = scrape(cluster.daemon().metrics.as_deref().unwrap());
    let denied = |op: &str, rt: &str| {
        metrics
            .get(&format!(
                r#"logd_authorization_denied_total{{operation="{op}",resource_type="{rt}"}}"#
            ))
            .copied()
            .unwrap_or(0.0)
    };
    // librdkafka asks for `secret`'s metadata first and gives up at its DESCRIBE refusal,
    // as it does against Kafka; the consumer at FindCoordinator's.
    assert!(denied("WRITE", "TOPIC") >= 1.0);
    assert!(denied("DESCRIBE", "TOPIC") >= 1.0);
    assert!(denied("DESCRIBE", "GROUP") >= 1.0);
    assert!(
        denied("DESCRIBE", "CLUSTER") >= 1.0,
        "alice's `logd acls list`"
    );
    let log = cluster.log();
    let refusals: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("request refused by the ACLs") && l.contains("resource=\"secret\""))
        .collect();
    assert!(!refusals.is_empty(), "{log}");
    assert!(
        refusals[0].contains("principal=User:alice") && refusals[0].contains("operation=DESCRIBE"),
        "{}",
        refusals[0]
    );
    // librdkafka asked about `secret` over and over on one connection: one line for it.
    let per_connection = refusals.len();
    assert!(
        (per_connection as f64) < denied("DESCRIBE", "TOPIC"),
        "{per_connection} lines for {} refusals",
        denied("DESCRIBE", "TOPIC")
    );
}

#[test]
fn an_acl_change_applies_to_an_open_connection_and_survives_kill_9() {
    let mut cluster = Cluster::start();
    let mut admin = cluster.client("admin");
    admin.create_topic("orders", 1, &[]).unwrap();
    let mut alice = cluster.client("alice");
    assert_eq!(
        kafka_code(alice.produce("orders", 0, record("a"))),
        Some(29)
    );
    let grant = [
        "acls",
        "add",
        "--allow-principal",
        "User:alice",
        "--operation",
        "WRITE",
        "--topic",
        "ord",
        "--resource-pattern-type",
        "prefixed",
    ];
    let (ok, out, err) = cluster.logd_as("admin", &grant);
    assert!(ok, "{out}{err}");
    // The same connection, its next request.
    assert_eq!(kafka_code(alice.produce("orders", 0, record("b"))), None);

    cluster.daemon.take().unwrap().kill();
    cluster.restart();
    let mut alice = cluster.client("alice");
    assert_eq!(kafka_code(alice.produce("orders", 0, record("c"))), None);
    let (ok, out, err) = cluster.logd_as(
        "admin",
        &[
            "acls",
            "remove",
            "--topic",
            "ord",
            "--resource-pattern-type",
            "prefixed",
            "--allow-principal",
            "User:alice",
        ],
    );
    assert!(ok, "{err}");
    assert!(
        out.contains("(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)"),
        "{out}"
    );
    assert_eq!(
        kafka_code(alice.produce("orders", 0, record("d"))),
        Some(29)
    );
}

fn retry_config(source: &str, group: &str) -> RetryConfig {
    RetryConfig {
        tiers: vec![Duration::from_millis(200)],
        ..RetryConfig::new(group, source)
    }
}

/// Runs a worker as `billing` until its stats say `done` (or 20 s pass); record `poison` goes
/// to the dead-letter topic, the others succeed. Returns the worker's end.
fn work(cluster: &Cluster, source: &str, group: &str, done: u64) -> logd_retry::Result<()> {
    let transport = Remote::new(cluster.client("billing"));
    let mut worker = RetryWorker::new(transport, retry_config(source, group), None)?;
    let started = std::time::Instant::now();
    worker.run(
        &mut |m: &Message, _| match m.value.as_deref() {
            Some(b"poison") => Outcome::Permanent(Failure::new("Poison", "cannot parse")),
            _ => Outcome::Success,
        },
        |stats| {
            stats.succeeded + stats.dead_lettered >= done
                || started.elapsed() > Duration::from_secs(20)
        },
        Duration::from_millis(50),
    )
}

#[test]
fn a_retry_worker_with_the_preset_works_and_without_dlq_write_reports_instead_of_losing() {
    let cluster = Cluster::start();
    let mut admin = cluster.client("admin");
    for source in ["orders", "payments"] {
        admin.create_topic(source, 1, &[]).unwrap();
        for value in ["ok-1", "poison", "ok-2"] {
            admin.produce(source, 0, record(value)).unwrap();
        }
    }
    let preset = |topic: &str, group: &str| {
        let (ok, out, err) = cluster.logd_as(
            "admin",
            &[
                "acls",
                "add",
                "--preset",
                "retry-worker",
                "--principal",
                "User:billing",
                "--topic",
                topic,
                "--group",
                group,
            ],
        );
        assert!(ok, "{out}{err}");
    };
    preset("orders", "billing");
    work(&cluster, "orders", "billing", 3).unwrap();
    let mut check = cluster.client("admin");
    let letters = Remote::new(cluster.client("admin"))
        .fetch("orders.dlq", 0, 0)
        .unwrap();
    assert_eq!(letters.len(), 1);
    assert_eq!(letters[0].value.as_deref(), Some(&b"poison"[..]));
    let committed = check.committed_offsets("billing").unwrap();
    assert!(
        committed.contains(&("orders".to_owned(), 0, 3)),
        "{committed:?}"
    );

    // Same preset for payments, but WRITE on its dead-letter topic denied.
    preset("payments", "pay");
    let (ok, out, err) = cluster.logd_as(
        "admin",
        &[
            "acls",
            "add",
            "--deny-principal",
            "User:billing",
            "--operation",
            "WRITE",
            "--topic",
            "payments.dlq",
        ],
    );
    assert!(ok, "{out}{err}");
    let err = work(&cluster, "payments", "pay", 3)
        .unwrap_err()
        .to_string();
    assert!(err.contains("TOPIC_AUTHORIZATION_FAILED"), "{err}");
    wait_until("the refusal is logged", Duration::from_secs(5), || {
        cluster.log().contains("resource=\"payments.dlq\"")
    });
    // ok-1 was handled and committed; the poison record was not lost: its offset is not
    // committed, so a worker with the grant fixed handles it again.
    let committed = check.committed_offsets("pay").unwrap();
    assert!(
        committed.contains(&("payments".to_owned(), 0, 1)),
        "{committed:?}"
    );
    assert!(
        Remote::new(cluster.client("admin"))
            .fetch("payments.dlq", 0, 0)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn bad_acl_arguments_are_refused_before_any_broker_is_called() {
    // Nothing listens on the bootstrap address: each error is about the arguments.
    let nowhere = ["--bootstrap", "127.0.0.1:1"];
    for (args, expected) in [
        (
            &[
                "acls",
                "add",
                "--topic",
                "t",
                "--allow-principal",
                "User:a",
                "--operation",
                "FLY",
            ][..],
            "--operation \"FLY\" is not a Kafka ACL operation",
        ),
        (
            &["acls", "add", "--topic", "t", "--operation", "READ"],
            "name a principal",
        ),
        (
            &["acls", "add", "--allow-principal", "User:a"],
            "name a resource",
        ),
        (
            &["acls", "add", "--topic", "", "--allow-principal", "User:a"],
            "resource name should not be empty",
        ),
        (
            &["acls", "add", "--topic", "t", "--allow-principal", "alice"],
            "could not parse principal",
        ),
        (
            &[
                "acls",
                "add",
                "--topic",
                "t",
                "--allow-principal",
                "User:a",
                "--resource-pattern-type",
                "match",
            ],
            "literal or prefixed",
        ),
        (
            &[
                "acls",
                "add",
                "--preset",
                "retry-worker",
                "--principal",
                "User:b",
                "--topic",
                "t",
            ],
            "needs --topic (the source) and --group",
        ),
        (
            &["acls", "remove", "--allow-principal", "User:a"],
            "name a resource",
        ),
    ] {
        let mut all = args.to_vec();
        all.extend(nowhere);
        let (ok, _, err) = logd(&all, "");
        assert!(!ok && err.contains(expected), "{args:?}: {err}");
    }
}
