//! The client subcommands: talk to a running logd (or any Kafka broker) over the Kafka
//! protocol through `logd_kafka::Client`.

pub(crate) mod consume;
pub(crate) mod dlq;
pub(crate) mod groups;
pub(crate) mod offset;
pub(crate) mod produce;
pub(crate) mod topics;
pub(crate) mod users;

use anyhow::Context;
use logd_kafka::Client;

/// Where the broker is; shared by every client subcommand.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Bootstrap {
    /// Broker address.
    #[arg(
        long,
        global = true,
        alias = "bootstrap-server",
        env = "LOGD_BOOTSTRAP",
        default_value = "127.0.0.1:9092"
    )]
    pub bootstrap: String,
}

impl Bootstrap {
    pub(crate) fn connect(&self) -> anyhow::Result<Client> {
        Client::connect(&self.bootstrap)
            .with_context(|| format!("cannot connect to {}", self.bootstrap))
    }
}

/// True for an error caused by a closed stdout (`logd consume | head`), which ends quietly.
pub(crate) fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
