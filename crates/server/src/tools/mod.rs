//! The client subcommands: talk to a running logd (or any Kafka broker) over the Kafka
//! protocol through `logd_client::Client`.

pub(crate) mod acls;
pub(crate) mod consume;
pub(crate) mod dlq;
mod group_copy;
pub(crate) mod groups;
pub(crate) mod offset;
pub(crate) mod produce;
pub(crate) mod quotas;
mod share_groups;
pub(crate) mod topics;
pub(crate) mod transactions;
pub(crate) mod users;

use std::path::PathBuf;

use anyhow::Context;
use logd_client::{Client, ClientSecurity, PROPERTY_KEYS};

/// Where the broker is; shared by every client subcommand.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Bootstrap {
    /// Broker address, or several comma-separated (the first that answers is used).
    #[arg(
        long,
        global = true,
        alias = "bootstrap-server",
        env = "LOGD_BOOTSTRAP",
        default_value = "127.0.0.1:9092"
    )]
    pub bootstrap: String,
    /// Kafka client properties for a secured broker (`security.protocol`, `sasl.mechanism`,
    /// `sasl.username`, `sasl.password`, `ssl.ca.location`, `ssl.certificate.location`,
    /// `ssl.key.location`), as Kafka's tools read them; each key is also `LOGD_` + the key in
    /// upper case with `_` for `.` (`LOGD_SASL_PASSWORD`), which wins over the file.
    #[arg(long, global = true, env = "LOGD_COMMAND_CONFIG")]
    pub command_config: Option<PathBuf>,
}

impl Bootstrap {
    pub(crate) fn connect(&self) -> anyhow::Result<Client> {
        let security = self.security()?;
        Client::connect_with(&self.bootstrap, &security)
            .with_context(|| format!("cannot connect to {}", self.bootstrap))
    }

    /// The security settings from `--command-config` and the environment.
    pub(crate) fn security(&self) -> anyhow::Result<ClientSecurity> {
        let mut properties = match &self.command_config {
            Some(path) => ClientSecurity::parse_properties(
                &std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read {}", path.display()))?,
            ),
            None => Default::default(),
        };
        for key in PROPERTY_KEYS {
            let variable = format!("LOGD_{}", key.to_uppercase().replace('.', "_"));
            if let Ok(value) = std::env::var(&variable) {
                properties.insert((*key).to_owned(), value);
            }
        }
        Ok(ClientSecurity::from_properties(&properties)?)
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
