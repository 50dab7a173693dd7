//! The `logd` binary: a Kafka-protocol broker over the logd engine. `logd` alone is
//! `logd serve`: a broker on 127.0.0.1:9092 with data in `./logd-data`, creating topics on
//! first use. Connections are tasks on tokio (`logd_kafka::serve`); SIGINT/SIGTERM stop
//! accepting, checkpoint every partition and exit 0.

use std::io::Write;
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};
use logd::groups::classic::GroupConfig;
use logd::{Config, FsyncPolicy, Log, SystemClock, TopicConfig};
use logd_kafka::acl::{Authorizer, AuthorizerConfig};
use logd_kafka::auth::credentials::CredentialStore;
use logd_kafka::auth::tls::TlsServer;
use logd_kafka::quota::ClientQuotas;
use logd_kafka::{Broker, BrokerConfig, ConnectionLimits, Listener, SecurityProtocol};
use logd_storage::RealFs;
use metrics::Metrics;
use metrics::fsync::MeteredFs;

mod dump;
mod fd_limit;
mod http;
mod lag;
mod listen_backlog;
mod listeners;
mod metrics;
mod tools;

#[derive(Debug, Parser)]
#[command(
    name = "logd",
    version,
    about = "An append-only, partitioned log that speaks the Kafka protocol"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the broker (the default).
    Serve(Box<ServeArgs>),
    /// Create, list, describe or delete topics on a running broker.
    Topics(tools::topics::TopicsArgs),
    /// List, describe, delete consumer groups or reset their offsets on a running broker.
    Groups(tools::groups::GroupsArgs),
    /// List, show or replay dead letters (topics `logd-retry` writes, e.g. `orders.dlq`).
    Dlq(tools::dlq::DlqArgs),
    /// Produce one record per stdin line.
    Produce(tools::produce::ProduceArgs),
    /// Print records from a chosen point; exits at the end of the log unless --follow.
    Consume(tools::consume::ConsumeArgs),
    /// Re-read a range of a topic to stdout or into another topic.
    Replay(tools::consume::ReplayArgs),
    /// Create, list or delete users (SCRAM credentials) in a data directory.
    Users(tools::users::UsersArgs),
    /// Add, list or remove ACLs (Kafka's, over the wire; effective under `--authorizer acl`).
    Acls(tools::acls::AclsArgs),
    /// List, set or remove client quotas (Kafka's, over the wire: byte rates and request time
    /// per user and client id).
    Quotas(tools::quotas::QuotasArgs),
    /// List or describe transactions, or abort a hanging one, on a running broker.
    Transactions(tools::transactions::TransactionsArgs),
    /// Read a segment file offline, verifying every batch's CRC (like kafka-dump-log); exits 1
    /// if a batch is corrupt.
    Dump(dump::DumpArgs),
}

#[derive(Debug, Clone, clap::Args)]
struct ServeArgs {
    /// TOML file with any of these options (keys as the long flags, e.g. `data-dir`);
    /// flags win over `LOGD_*` variables, which win over the file.
    #[arg(long, env = "LOGD_CONFIG")]
    config: Option<PathBuf>,
    /// Address of a PLAINTEXT listener (short for `--listener PLAINTEXT=PLAINTEXT://ADDR`);
    /// port 0 picks a free one (printed on stdout). Without any listener: 127.0.0.1:9092.
    #[arg(long, env = "LOGD_LISTEN")]
    listen: Option<SocketAddr>,
    /// Address clients of `--listen` are told to connect to; defaults to the listening address.
    #[arg(long, env = "LOGD_ADVERTISED")]
    advertised: Option<SocketAddr>,
    /// A listener, Kafka style: `NAME=PROTOCOL://HOST:PORT` with PROTOCOL one of PLAINTEXT,
    /// SSL, SASL_PLAINTEXT, SASL_SSL (repeatable; comma-separated in LOGD_LISTENERS).
    #[arg(long = "listener", env = "LOGD_LISTENERS", value_delimiter = ',')]
    listeners: Vec<String>,
    /// Where clients of listener NAME are told to connect: `NAME=HOST:PORT` (repeatable).
    #[arg(
        long = "advertised-listener",
        env = "LOGD_ADVERTISED_LISTENERS",
        value_delimiter = ','
    )]
    advertised_listeners: Vec<String>,
    /// PEM certificate chain of SSL and SASL_SSL listeners (re-read on SIGHUP).
    #[arg(long, env = "LOGD_TLS_CERT")]
    tls_cert: Option<PathBuf>,
    /// PEM private key of the certificate (re-read on SIGHUP).
    #[arg(long, env = "LOGD_TLS_KEY")]
    tls_key: Option<PathBuf>,
    /// PEM CA certificates that client certificates must chain to.
    #[arg(long, env = "LOGD_TLS_CA")]
    tls_ca: Option<PathBuf>,
    /// Whether TLS clients must present a certificate; its subject becomes the principal.
    #[arg(long, env = "LOGD_TLS_CLIENT_AUTH", value_enum, default_value_t = ClientAuthArg::None)]
    tls_client_auth: ClientAuthArg,
    /// SASL mechanisms SASL listeners offer: SCRAM-SHA-256, SCRAM-SHA-512, PLAIN.
    #[arg(
        long,
        env = "LOGD_SASL_MECHANISMS",
        value_delimiter = ',',
        default_value = "SCRAM-SHA-256,SCRAM-SHA-512"
    )]
    sasl_mechanisms: Vec<String>,
    /// Offer PLAIN on SASL_PLAINTEXT listeners too (it sends the password in clear text).
    #[arg(long, env = "LOGD_ALLOW_PLAIN_WITHOUT_TLS", num_args = 0..=1, default_value_t = false, default_missing_value = "true", action = clap::ArgAction::Set)]
    allow_plain_without_tls: bool,
    /// Principals allowed everything (users, ACLs, and every API under `--authorizer acl`),
    /// Kafka `super.users` style: `User:admin;User:CN=ops,O=acme`.
    #[arg(long, env = "LOGD_SUPER_USERS", value_delimiter = ';')]
    super_users: Vec<String>,
    /// Check every request against the ACLs (`acl`, Kafka's StandardAuthorizer rules) or not
    /// (`none`: everyone may do everything, as Kafka without `authorizer.class.name`).
    #[arg(long, env = "LOGD_AUTHORIZER", value_enum, default_value_t = AuthorizerArg::None)]
    authorizer: AuthorizerArg,
    /// Under `--authorizer acl`, allow what no ACL names (Kafka
    /// `allow.everyone.if.no.acl.found`); a resource with any ACL is still only what they allow.
    #[arg(long, env = "LOGD_ALLOW_EVERYONE_IF_NO_ACL_FOUND", num_args = 0..=1, default_value_t = false, default_missing_value = "true", action = clap::ArgAction::Set)]
    allow_everyone_if_no_acl_found: bool,
    /// Let a listener on a non-loopback address serve clients that do not authenticate, and
    /// the HTTP listener (console, metrics) serve on one (protected mode refuses to start
    /// otherwise).
    #[arg(long, env = "LOGD_ALLOW_UNAUTHENTICATED", num_args = 0..=1, default_value_t = false, default_missing_value = "true", action = clap::ArgAction::Set)]
    allow_unauthenticated: bool,
    /// Data directory.
    #[arg(long, env = "LOGD_DATA_DIR", default_value = "./logd-data")]
    data_dir: PathBuf,
    /// Partitions of topics created without a count (and of auto-created topics).
    #[arg(long, env = "LOGD_DEFAULT_PARTITIONS", default_value_t = 1)]
    default_partitions: u32,
    /// When appends reach the disk, for topics created without a choice: `always` (fdatasync
    /// before every acknowledgement, group commit), `interval:<ms>` (at least every that many
    /// milliseconds; `interval` is every second), or `never` (left to the kernel and
    /// checkpoints).
    #[arg(long, env = "LOGD_FSYNC", default_value_t = FsyncPolicy::Always)]
    fsync: FsyncPolicy,
    /// Create topics on first produce or metadata request (Kafka `auto.create.topics.enable`).
    #[arg(long, env = "LOGD_AUTO_CREATE_TOPICS", default_value_t = true, action = clap::ArgAction::Set)]
    auto_create_topics: bool,
    /// The prefix a share group's dead-letter topic must have (Kafka
    /// `errors.deadletterqueue.topic.name.prefix`); empty allows any name.
    #[arg(long, env = "LOGD_DLQ_TOPIC_PREFIX", default_value = "dlq.")]
    dlq_topic_prefix: String,
    /// Create a share group's missing dead-letter topic on its first letter (Kafka
    /// `errors.deadletterqueue.auto.create.topics.enable`, off as there).
    #[arg(long, env = "LOGD_DLQ_AUTO_CREATE_TOPICS", default_value_t = false, action = clap::ArgAction::Set)]
    dlq_auto_create_topics: bool,
    /// Partition files (segments, indexes) kept open at most; others are closed, least
    /// recently used first, and reopened when needed (default: two fifths of the open-file
    /// limit).
    #[arg(long, env = "LOGD_MAX_OPEN_FILES")]
    max_open_files: Option<usize>,
    /// Largest request frame accepted, in bytes (Kafka `socket.request.max.bytes`).
    #[arg(long, env = "LOGD_MAX_REQUEST_BYTES", default_value_t = 100 << 20)]
    max_request_bytes: usize,
    /// Most simultaneous client connections; more are closed at once (default: what the
    /// open-file limit leaves after `--max-open-files` and a twentieth kept spare; 11,000
    /// under a limit of 20,000).
    #[arg(long, env = "LOGD_MAX_CONNECTIONS")]
    max_connections: Option<usize>,
    /// Most simultaneous connections from one IP address (Kafka `max.connections.per.ip`;
    /// unlimited by default, as Kafka); more are closed at once.
    #[arg(long, env = "LOGD_MAX_CONNECTIONS_PER_IP", default_value_t = usize::MAX)]
    max_connections_per_ip: usize,
    /// Once a request's size has arrived, its whole body must arrive within this many ms, or
    /// the connection is closed (a client trickling bytes cannot hold it); a TLS handshake
    /// must complete within it too.
    #[arg(long, env = "LOGD_REQUEST_TIMEOUT_MS", default_value_t = 30_000)]
    request_timeout_ms: u64,
    /// Bytes of request frames all connections may hold at once: a request that does not fit
    /// waits (its connection is not read) until earlier ones are answered.
    #[arg(long, env = "LOGD_MAX_INFLIGHT_REQUEST_BYTES", default_value_t = 256 << 20)]
    max_inflight_request_bytes: usize,
    /// Largest record batch a producer may send, in bytes (Kafka `message.max.bytes`).
    #[arg(long, env = "LOGD_MAX_MESSAGE_BYTES", default_value_t = (1 << 20) + 12)]
    max_message_bytes: usize,
    /// Default retention by time in ms for new topics (-1: keep forever).
    #[arg(long, env = "LOGD_RETENTION_MS", default_value_t = 7 * 24 * 3600 * 1000, allow_hyphen_values = true)]
    retention_ms: i64,
    /// Default retention by size in bytes per partition for new topics (-1: no limit).
    #[arg(long, env = "LOGD_RETENTION_BYTES", default_value_t = -1, allow_hyphen_values = true)]
    retention_bytes: i64,
    /// Default segment file size for new topics.
    #[arg(long, env = "LOGD_SEGMENT_BYTES", default_value_t = 1 << 30)]
    segment_bytes: u64,
    /// Serve the web console (`/`), its JSON API (`/api/v1/`), Prometheus metrics
    /// (`/metrics`) and a health check (`/health`) over HTTP on this address, or `none`. The
    /// console asks for a logd user's password when a Kafka listener authenticates; off
    /// loopback it needs `--allow-unauthenticated` without a login and
    /// `--allow-plain-without-tls` with one (it serves plain HTTP).
    #[arg(
        long,
        alias = "metrics-listen",
        env = "LOGD_HTTP_LISTEN",
        default_value = "127.0.0.1:9644",
        value_parser = parse_http_listen
    )]
    http_listen: HttpListen,
    /// Names the console and its API answer to besides IP addresses and `localhost` (a
    /// request for any other `Host` is refused, against DNS rebinding; `*` allows every name).
    /// `/metrics` and `/health` answer to any.
    #[arg(long, env = "LOGD_HTTP_ALLOWED_HOSTS", value_delimiter = ',')]
    http_allowed_hosts: Vec<String>,
    /// How often retention runs, in ms.
    #[arg(long, env = "LOGD_RETENTION_CHECK_MS", default_value_t = 60_000)]
    retention_check_ms: u64,
    /// How long the cleaner (compaction of `cleanup.policy=compact` topics) sleeps between
    /// rounds, in ms (Kafka `log.cleaner.backoff.ms`).
    #[arg(long, env = "LOGD_CLEANER_BACKOFF_MS", default_value_t = 15_000)]
    cleaner_backoff_ms: u64,
    /// The cleaner's key map budget in bytes; a partition with more keys is cleaned in
    /// several passes (Kafka `log.cleaner.dedupe.buffer.size`).
    #[arg(long, env = "LOGD_CLEANER_BUFFER_BYTES", default_value_t = 128 << 20)]
    cleaner_buffer_bytes: usize,
    /// The cleaner's I/O rate limit in bytes per second (read and written), so cleaning
    /// leaves the disk to produce and fetch (Kafka `log.cleaner.io.max.bytes.per.second`);
    /// unlimited when not given.
    #[arg(long, env = "LOGD_CLEANER_IO_MAX_BYTES_PER_SEC")]
    cleaner_io_max_bytes_per_sec: Option<u64>,
    /// How long the first rebalance of an empty consumer group waits for more members, in ms
    /// (Kafka `group.initial.rebalance.delay.ms`).
    #[arg(
        long,
        env = "LOGD_GROUP_INITIAL_REBALANCE_DELAY_MS",
        default_value_t = 3000
    )]
    group_initial_rebalance_delay_ms: i64,
    /// Smallest session timeout a consumer may ask for, in ms (Kafka
    /// `group.min.session.timeout.ms`).
    #[arg(
        long,
        env = "LOGD_GROUP_MIN_SESSION_TIMEOUT_MS",
        default_value_t = 6000
    )]
    group_min_session_timeout_ms: i64,
    /// Largest session timeout, in ms (Kafka `group.max.session.timeout.ms`).
    #[arg(
        long,
        env = "LOGD_GROUP_MAX_SESSION_TIMEOUT_MS",
        default_value_t = 1_800_000
    )]
    group_max_session_timeout_ms: i64,
    /// An idempotent producer's state in a partition is dropped once its last batch there is
    /// this old, in ms (Kafka `producer.id.expiration.ms`); checked with retention.
    #[arg(
        long,
        env = "LOGD_PRODUCER_ID_EXPIRATION_MS",
        default_value_t = logd::PRODUCER_ID_EXPIRATION_MS
    )]
    producer_id_expiration_ms: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ClientAuthArg {
    /// No client certificates asked for.
    None,
    /// Clients must present a certificate signed by `--tls-ca`.
    Required,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum AuthorizerArg {
    /// No authorization: every client may do everything.
    None,
    /// Kafka's ACLs, managed with `logd acls` or Kafka's admin clients.
    Acl,
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let cli = match parse_with_config_file() {
        Ok(cli) => cli,
        Err(e) => {
            eprintln!("logd: {e:#}");
            return ExitCode::from(2);
        }
    };
    let done = |r: anyhow::Result<()>| r.map(|()| ExitCode::SUCCESS);
    let result = match cli.command {
        Some(Command::Serve(args)) => done(serve(*args)),
        Some(Command::Topics(args)) => done(tools::topics::run(&args)),
        Some(Command::Groups(args)) => done(tools::groups::run(&args)),
        Some(Command::Dlq(args)) => done(tools::dlq::run(&args)),
        Some(Command::Produce(args)) => done(tools::produce::run(&args)),
        Some(Command::Consume(args)) => done(tools::consume::consume(&args)),
        Some(Command::Replay(args)) => done(tools::consume::replay(&args)),
        Some(Command::Users(args)) => done(tools::users::run(&args)),
        Some(Command::Acls(args)) => done(tools::acls::run(&args)),
        Some(Command::Quotas(args)) => done(tools::quotas::run(&args)),
        Some(Command::Transactions(args)) => done(tools::transactions::run(&args)),
        Some(Command::Dump(args)) => dump::run(&args),
        None => done(serve(cli.serve)),
    };
    result.unwrap_or_else(|e| {
        // `logd consume | head` closes stdout early: that is success, not an error.
        if tools::is_broken_pipe(&e) {
            return ExitCode::SUCCESS;
        }
        eprintln!("logd: {e:#}");
        ExitCode::FAILURE
    })
}

/// The name `--listen`'s listener goes by.
const LISTEN_NAME: &str = "PLAINTEXT";

/// The listeners the flags ask for, bound: `--listen` (if given, or if nothing else is) and
/// every `--listener`.
fn bind_listeners(
    args: &ServeArgs,
) -> anyhow::Result<(Vec<listeners::Bound>, Vec<Arc<TlsServer>>)> {
    let mut specs = Vec::new();
    let mut advertised = Vec::new();
    if args.listen.is_some() || args.listeners.is_empty() {
        let addr = args
            .listen
            .unwrap_or_else(|| "127.0.0.1:9092".parse().expect("valid address"));
        specs.push(listeners::ListenerSpec {
            name: LISTEN_NAME.into(),
            protocol: SecurityProtocol::Plaintext,
            addr,
        });
        if let Some(a) = args.advertised {
            advertised.push((LISTEN_NAME.to_owned(), a.ip().to_string(), a.port()));
        }
    }
    for spec in &args.listeners {
        specs.push(listeners::parse_listener(spec)?);
    }
    for spec in &args.advertised_listeners {
        advertised.push(listeners::parse_advertised(spec)?);
    }
    let security = listeners::Security {
        tls: listeners::tls_settings(
            args.tls_cert.clone(),
            args.tls_key.clone(),
            args.tls_ca.clone(),
            args.tls_client_auth == ClientAuthArg::Required,
        )?,
        sasl_mechanisms: listeners::parse_mechanisms(&args.sasl_mechanisms)?,
        allow_plain_without_tls: args.allow_plain_without_tls,
        allow_unauthenticated: args.allow_unauthenticated,
    };
    listeners::bind(&specs, &advertised, &security)
}

/// Completes at the first SIGINT or SIGTERM.
fn shutdown_signal() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt =
        signal(SignalKind::interrupt()).context("cannot install the SIGINT handler")?;
    let mut terminate =
        signal(SignalKind::terminate()).context("cannot install the SIGTERM handler")?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    })
}

/// Re-reads the TLS certificate and key on every SIGHUP; new connections get them, open ones
/// keep theirs, and a bad file leaves the old ones in force. Without TLS, SIGHUP is only
/// logged (it no longer ends the daemon, so a closed terminal does not stop it).
fn reload_tls_on_sighup(tls: Vec<Arc<TlsServer>>) -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut hangups = signal(SignalKind::hangup()).context("cannot install the SIGHUP handler")?;
    tokio::spawn(async move {
        while hangups.recv().await.is_some() {
            if tls.is_empty() {
                tracing::info!("SIGHUP: no TLS listener, nothing to reload");
            }
            for server in &tls {
                match server.reload() {
                    Ok(()) => tracing::info!("SIGHUP: TLS certificate and key reloaded"),
                    Err(e) => tracing::error!(
                        error = %e,
                        "SIGHUP: TLS reload failed; the old certificate stays"
                    ),
                }
            }
        }
    });
    Ok(())
}

/// Parses the command line; with `--config FILE`, every option the file sets and neither a flag
/// nor an environment variable did is added as a flag, and the line is parsed again, so file
/// values get the same parsing and checks as flags.
fn parse_with_config_file() -> anyhow::Result<Cli> {
    use clap::parser::ValueSource;
    use clap::{CommandFactory, FromArgMatches};
    let mut argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let matches = Cli::command().get_matches_from(&argv);
    let serve_matches = match matches.subcommand() {
        Some(("serve", sub)) => sub,
        Some(_) => return Ok(Cli::from_arg_matches(&matches)?),
        None => &matches,
    };
    let Some(path) = serve_matches.get_one::<PathBuf>("config") else {
        return Ok(Cli::from_arg_matches(&matches)?);
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read config file {}", path.display()))?;
    let table: toml::Table = text
        .parse()
        .with_context(|| format!("config file {} is not valid TOML", path.display()))?;
    for (key, value) in table {
        // The HTTP listener's old name, as config files written for earlier versions say it.
        let key = match key.as_str() {
            "metrics-listen" => "http-listen".to_owned(),
            _ => key,
        };
        let id = key.replace('-', "_");
        if id == "config" {
            anyhow::bail!(
                "config file {}: `config` cannot be set inside a config file",
                path.display()
            );
        }
        let source = serve_matches
            .try_get_raw(&id)
            .map_err(|_| anyhow::anyhow!("config file {}: unknown option `{key}`", path.display()))
            .map(|_| serve_matches.value_source(&id))?;
        if source != Some(ValueSource::DefaultValue) {
            continue;
        }
        // An array (`listener = [...]`) gives the flag once per element.
        let values = match value {
            toml::Value::Array(values) => values,
            value => vec![value],
        };
        for value in values {
            let value = match value {
                toml::Value::String(s) => s,
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Boolean(b) => b.to_string(),
                other => anyhow::bail!(
                    "config file {}: `{key}` must be a string, integer, boolean or an array of \
                     them, not {}",
                    path.display(),
                    other.type_str()
                ),
            };
            argv.push(format!("--{}", key.replace('_', "-")).into());
            argv.push(value.into());
        }
    }
    Ok(Cli::try_parse_from(argv)?)
}

fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let fsync = args.fsync;
    let soft_limit = match fd_limit::raise() {
        Ok((soft, hard)) => {
            tracing::info!(soft, hard, "open-file limit");
            Some(soft)
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the open-file limit");
            None
        }
    };
    // Partitions' files and connections share the descriptors; what neither is given takes
    // its share of the limit.
    let shares = soft_limit.map(|soft| fd_limit::shares(soft, args.max_open_files));
    let max_open_files = args.max_open_files.or(shares.map(|s| s.partition_files));
    let max_connections = args
        .max_connections
        .or(shares.map(|s| s.connections))
        .unwrap_or(1024);
    tracing::info!(max_open_files = ?max_open_files, max_connections, "partition files kept open and connections at most");
    let config = Config {
        default_topic: TopicConfig {
            partitions: args.default_partitions,
            fsync,
            retention_ms: (args.retention_ms >= 0).then_some(args.retention_ms),
            retention_bytes: u64::try_from(args.retention_bytes).ok(),
            segment_bytes: args.segment_bytes,
            max_batch_bytes: args.max_message_bytes,
            ..TopicConfig::default()
        },
        auto_create_topics: args.auto_create_topics,
        groups: GroupConfig {
            min_session_timeout_ms: args.group_min_session_timeout_ms,
            max_session_timeout_ms: args.group_max_session_timeout_ms,
            initial_rebalance_delay_ms: args.group_initial_rebalance_delay_ms.max(0),
        },
        producer_id_expiration_ms: args.producer_id_expiration_ms.max(0),
        // The engine's own housekeeping thread: interval fsyncs, retention, expiry.
        housekeeping: logd::Housekeeping {
            enabled: true,
            retention_check: Duration::from_millis(args.retention_check_ms.max(100)),
            cleaner_backoff: Duration::from_millis(args.cleaner_backoff_ms.max(10)),
            cleaner_buffer_bytes: args.cleaner_buffer_bytes,
            cleaner_io_max_bytes_per_sec: args.cleaner_io_max_bytes_per_sec,
        },
        max_open_files,
        dead_letter_topic_prefix: args.dlq_topic_prefix.clone(),
        auto_create_dead_letter_topics: args.dlq_auto_create_topics,
        ..Config::default()
    };
    let metrics = Arc::new(Metrics::new());
    let storage: Arc<dyn logd_storage::Storage> =
        Arc::new(MeteredFs::new(Arc::new(RealFs), metrics.fsync_histogram()));
    let log = Log::open_with(
        storage.clone(),
        Arc::new(SystemClock),
        &args.data_dir,
        config,
    )
    .with_context(|| format!("cannot open data directory {}", args.data_dir.display()))?;
    metrics.attach(log.clone());
    let credentials = CredentialStore::open_with(storage.clone(), &args.data_dir)
        .context("cannot read the users")?;
    let quotas = ClientQuotas::open_with(storage.clone(), &args.data_dir)
        .context("cannot read the client quotas")?;
    if !quotas.entries().is_empty() {
        tracing::info!(entities = quotas.entries().len(), "client quotas on");
    }
    let authorizer = match args.authorizer {
        AuthorizerArg::None => None,
        AuthorizerArg::Acl => {
            let authorizer = Authorizer::open_with(
                storage.clone(),
                &args.data_dir,
                AuthorizerConfig {
                    super_users: args.super_users.clone(),
                    allow_everyone_if_no_acl_found: args.allow_everyone_if_no_acl_found,
                },
            )
            .context("cannot read the ACLs")?;
            tracing::info!(
                acls = authorizer.len(),
                super_users = ?args.super_users,
                allow_everyone_if_no_acl_found = args.allow_everyone_if_no_acl_found,
                "authorization on"
            );
            if authorizer.is_empty() && args.super_users.is_empty() {
                tracing::warn!(
                    "authorization on with no ACLs and no super users: every request will be \
                     refused and nobody can add ACLs; name an administrator with --super-users"
                );
            }
            Some(Arc::new(authorizer))
        }
    };
    let (listeners, tls) = bind_listeners(&args)?;
    let broker = Broker::new(
        log,
        BrokerConfig {
            advertised_host: listeners[0].config.advertised_host.clone(),
            advertised_port: listeners[0].config.advertised_port,
            max_request_bytes: args.max_request_bytes,
            max_inflight_request_bytes: args.max_inflight_request_bytes,
            request_timeout: Duration::from_millis(args.request_timeout_ms.max(1)),
            super_users: args.super_users.clone(),
            ..BrokerConfig::default()
        },
    )
    .with_observer(metrics.clone())
    .with_credentials(Arc::new(credentials))
    .with_quotas(Arc::new(quotas));
    let broker = Arc::new(match authorizer {
        Some(authorizer) => broker.with_authorizer(authorizer),
        None => broker,
    });
    // With a Kafka listener that authenticates, the console asks for a login too.
    let console_login = listeners.iter().any(|l| {
        l.config.protocol.uses_sasl()
            || l.config
                .tls
                .as_ref()
                .is_some_and(|t| t.requires_client_certificates())
    });
    metrics.attach_broker(broker.budget(), broker.connection_stats());
    let http_listener = match args.http_listen {
        // Protected mode, as for the Kafka listeners: without a login the console shows every
        // topic's messages to whoever reaches it; with one, it takes passwords over plain
        // HTTP (no TLS of its own), as PLAIN without TLS would.
        HttpListen::On(addr)
            if !addr.ip().is_loopback() && !console_login && !args.allow_unauthenticated =>
        {
            anyhow::bail!(
                "protected mode: the console on {addr} (--http-listen) would show every \
                 topic's messages to anyone who can reach it (it asks for a login only when a \
                 Kafka listener authenticates). Bind it to 127.0.0.1, turn it off with \
                 --http-listen none, or pass --allow-unauthenticated if the network is trusted"
            );
        }
        HttpListen::On(addr)
            if !addr.ip().is_loopback() && console_login && !args.allow_plain_without_tls =>
        {
            anyhow::bail!(
                "protected mode: the console on {addr} (--http-listen) would take passwords in \
                 clear text over the network (it serves plain HTTP). Bind it to 127.0.0.1 \
                 (behind a TLS proxy), turn it off with --http-listen none, or pass \
                 --allow-plain-without-tls if the network is trusted"
            );
        }
        HttpListen::On(addr) => Some(TcpListener::bind(addr).with_context(|| {
            format!(
                "cannot serve the console and metrics on {addr} (--http-listen): \
                 choose another address or pass --http-listen none"
            )
        })?),
        HttpListen::Off => None,
    };
    // Scripts and tests read the bound addresses from these lines (a closed stdout is no
    // reason not to serve): `logd listening on ADDR` for `--listen`, with `NAME=PROTOCOL://`
    // before ADDR for the others.
    for listener in &listeners {
        let local = listener.socket.local_addr()?;
        let config = &listener.config;
        let line = if config.name == LISTEN_NAME && config.protocol == SecurityProtocol::Plaintext {
            format!("logd listening on {local}")
        } else {
            format!(
                "logd listening on {}={}://{local}",
                config.name, config.protocol
            )
        };
        let _ = writeln!(std::io::stdout(), "{line}");
        tracing::info!(listener = %config.name, protocol = %config.protocol, %local,
            advertised = %format!("{}:{}", config.advertised_host, config.advertised_port), "listening");
    }
    if let Some(listener) = http_listener {
        let local = listener.local_addr()?;
        // Scripts read the metrics address from the first of these lines.
        let _ = writeln!(std::io::stdout(), "logd metrics on http://{local}/metrics");
        let _ = writeln!(std::io::stdout(), "logd console on http://{local}/");
        tracing::info!(%local, "console and metrics over HTTP");
        let access = http::access::Access::new(
            console_login,
            broker.credentials().clone(),
            broker.admin().clone(),
        );
        let allowed_hosts = http::hosts::AllowedHosts::new(&args.http_allowed_hosts);
        http::spawn(
            listener,
            (broker.log().clone(), broker.quotas().clone()),
            metrics.clone(),
            access,
            allowed_hosts,
        )
        .context("cannot start the HTTP listener")?;
    }
    tracing::info!(data_dir = %args.data_dir.display(), "serving");

    // The listener runs on tokio: a task per connection, the engine's blocking calls on the
    // runtime's blocking pool. SIGINT and SIGTERM end it; SIGHUP reloads TLS certificates.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("logd-net")
        .build()
        .context("cannot start the network runtime")?;
    let limits = ConnectionLimits {
        max_connections,
        max_connections_per_ip: args.max_connections_per_ip,
    };
    runtime.block_on(async {
        let mut serving = Vec::new();
        for listener in listeners {
            listener.socket.set_nonblocking(true)?;
            serving.push(Listener {
                socket: tokio::net::TcpListener::from_std(listener.socket)?,
                config: listener.config,
            });
        }
        reload_tls_on_sighup(tls)?;
        let shutdown = shutdown_signal()?;
        logd_kafka::serve(broker.clone(), serving, limits, shutdown).await;
        anyhow::Ok(())
    })?;
    // Open connections end with the runtime; the checkpoint below makes everything appended so
    // far durable, and the process exits right after.
    runtime.shutdown_background();
    tracing::info!("shutting down: checkpointing every partition");
    broker
        .log()
        .checkpoint_all()
        .context("checkpoint at shutdown")?;
    Ok(())
}

/// Where the HTTP listener serves, if anywhere.
#[derive(Debug, Clone, Copy)]
enum HttpListen {
    On(SocketAddr),
    Off,
}

fn parse_http_listen(value: &str) -> Result<HttpListen, String> {
    match value {
        "none" => Ok(HttpListen::Off),
        addr => addr
            .parse()
            .map(HttpListen::On)
            .map_err(|e| format!("{e}: an address such as 127.0.0.1:9644, or none")),
    }
}
