//! The `logd` binary: a Kafka-protocol broker over the logd engine. `logd` alone is
//! `logd serve`: a broker on 127.0.0.1:9092 with data in `./logd-data`, creating topics on
//! first use. One thread per connection; SIGINT/SIGTERM checkpoint every partition and exit 0.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};
use logd::{Config, Fsync, Log, TopicConfig};
use logd_kafka::{Broker, BrokerConfig};

mod dump;
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
    Serve(ServeArgs),
    /// Create, list, describe or delete topics on a running broker.
    Topics(tools::topics::TopicsArgs),
    /// Produce one record per stdin line.
    Produce(tools::produce::ProduceArgs),
    /// Print records from a chosen point; exits at the end of the log unless --follow.
    Consume(tools::consume::ConsumeArgs),
    /// Re-read a range of a topic to stdout or into another topic.
    Replay(tools::consume::ReplayArgs),
    /// Read a segment file offline, verifying every batch's CRC (like kafka-dump-log); exits 1
    /// if a batch is corrupt.
    Dump(dump::DumpArgs),
}

#[derive(Debug, Clone, clap::Args)]
struct ServeArgs {
    /// Address to listen on; port 0 picks a free one (printed on stdout).
    #[arg(long, env = "LOGD_LISTEN", default_value = "127.0.0.1:9092")]
    listen: SocketAddr,
    /// Address clients are told to connect to; defaults to the listening address.
    #[arg(long, env = "LOGD_ADVERTISED")]
    advertised: Option<SocketAddr>,
    /// Data directory.
    #[arg(long, env = "LOGD_DATA_DIR", default_value = "./logd-data")]
    data_dir: PathBuf,
    /// Partitions of topics created without a count (and of auto-created topics).
    #[arg(long, env = "LOGD_DEFAULT_PARTITIONS", default_value_t = 1)]
    default_partitions: u32,
    /// When appends reach the disk before they are acknowledged.
    #[arg(long, env = "LOGD_FSYNC", value_enum, default_value_t = FsyncArg::Always)]
    fsync: FsyncArg,
    /// Create topics on first produce or metadata request (Kafka `auto.create.topics.enable`).
    #[arg(long, env = "LOGD_AUTO_CREATE_TOPICS", default_value_t = true, action = clap::ArgAction::Set)]
    auto_create_topics: bool,
    /// Largest request frame accepted, in bytes (Kafka `socket.request.max.bytes`).
    #[arg(long, env = "LOGD_MAX_REQUEST_BYTES", default_value_t = 100 << 20)]
    max_request_bytes: usize,
    /// Most simultaneous client connections; more are closed at once.
    #[arg(long, env = "LOGD_MAX_CONNECTIONS", default_value_t = 1024)]
    max_connections: usize,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum FsyncArg {
    /// fdatasync before every acknowledgement (group commit).
    Always,
    /// fdatasync at most every second.
    Interval,
    /// leave it to the kernel and checkpoints.
    Never,
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let done = |r: anyhow::Result<()>| r.map(|()| ExitCode::SUCCESS);
    let result = match cli.command {
        Some(Command::Serve(args)) => done(serve(args)),
        Some(Command::Topics(args)) => done(tools::topics::run(&args)),
        Some(Command::Produce(args)) => done(tools::produce::run(&args)),
        Some(Command::Consume(args)) => done(tools::consume::consume(&args)),
        Some(Command::Replay(args)) => done(tools::consume::replay(&args)),
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

fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let fsync = match args.fsync {
        FsyncArg::Always => Fsync::Always,
        FsyncArg::Interval => Fsync::IntervalMs(1000),
        FsyncArg::Never => Fsync::Never,
    };
    let config = Config {
        default_topic: TopicConfig {
            partitions: args.default_partitions,
            fsync,
            ..TopicConfig::default()
        },
        auto_create_topics: args.auto_create_topics,
        ..Config::default()
    };
    let log = Log::open(&args.data_dir, config)
        .with_context(|| format!("cannot open data directory {}", args.data_dir.display()))?;
    let listener = TcpListener::bind(args.listen)
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let local = listener.local_addr()?;
    let advertised = args.advertised.unwrap_or(local);
    let broker = Arc::new(Broker::new(
        log,
        BrokerConfig {
            advertised_host: advertised.ip().to_string(),
            advertised_port: advertised.port(),
            max_request_bytes: args.max_request_bytes,
            ..BrokerConfig::default()
        },
    ));
    // Scripts and tests read the bound address from this line.
    println!("logd listening on {local}");
    tracing::info!(%local, %advertised, data_dir = %args.data_dir.display(), "serving");

    let stopping = Arc::new(AtomicBool::new(false));
    {
        let stopping = stopping.clone();
        ctrlc::set_handler(move || {
            stopping.store(true, Ordering::SeqCst);
            // Wake the accept loop.
            let _ = TcpStream::connect(local);
        })
        .context("cannot install the signal handler")?;
    }
    let connections = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming() {
        if stopping.load(Ordering::SeqCst) {
            break;
        }
        let stream = match stream {
            Ok(stream) => stream,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                continue;
            }
        };
        if connections.fetch_add(1, Ordering::SeqCst) >= args.max_connections {
            connections.fetch_sub(1, Ordering::SeqCst);
            tracing::warn!(
                max = args.max_connections,
                "connection limit reached; closing a new connection"
            );
            continue;
        }
        let (broker, connections) = (broker.clone(), connections.clone());
        std::thread::spawn(move || {
            let peer = stream
                .peer_addr()
                .map(|a| a.to_string())
                .unwrap_or_default();
            if let Err(e) = broker.serve_connection(stream) {
                tracing::info!(%peer, error = %e, "connection closed");
            }
            connections.fetch_sub(1, Ordering::SeqCst);
        });
    }
    tracing::info!("shutting down: checkpointing every partition");
    broker
        .log()
        .checkpoint_all()
        .context("checkpoint at shutdown")?;
    Ok(())
}
