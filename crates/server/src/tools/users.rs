//! `logd users`: SCRAM users, managed offline in a data directory's credentials file (before
//! the first start, or beside a running broker, which sees the change at the next login) or,
//! with `--bootstrap`, online through Kafka's AlterUserScramCredentials and
//! DescribeUserScramCredentials (as a super user; works against Kafka too). The password comes
//! from one line of stdin, never from the command line, where any process listing would show
//! it.

use std::io::BufRead;
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Subcommand;
use logd_client::UserCredentials;
use logd_kafka::auth::credentials::{CREDENTIALS_FILE, CredentialStore};
use logd_kafka::auth::scram::{
    DEFAULT_ITERATIONS, MAX_ITERATIONS, MIN_ITERATIONS, ScramCredential, ScramMechanism,
};

#[derive(Debug, clap::Args)]
pub(crate) struct UsersArgs {
    #[command(subcommand)]
    command: UsersCommand,
    /// The broker's data directory (offline management).
    #[arg(
        long,
        global = true,
        env = "LOGD_DATA_DIR",
        default_value = "./logd-data"
    )]
    data_dir: PathBuf,
    /// Manage the users of this running broker (logd or Kafka) instead of a data directory.
    #[arg(long, global = true, alias = "bootstrap-server")]
    bootstrap: Option<String>,
    /// Kafka client properties to log in with (see `logd topics --help`).
    #[arg(long, global = true, env = "LOGD_COMMAND_CONFIG")]
    command_config: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
enum UsersCommand {
    /// Create a user, or set a new password (SCRAM-SHA-256 and SCRAM-SHA-512 unless
    /// --mechanism picks one).
    Create {
        /// The user's name.
        name: String,
        /// Only this mechanism: SCRAM-SHA-256 or SCRAM-SHA-512.
        #[arg(long)]
        mechanism: Option<String>,
        /// PBKDF2 iterations (4096 to 16384).
        #[arg(long, default_value_t = DEFAULT_ITERATIONS)]
        iterations: u32,
        /// Read the password from the first line of stdin (required: passwords are never
        /// arguments).
        #[arg(long)]
        password_stdin: bool,
    },
    /// List users and their mechanisms.
    List,
    /// Delete a user (or only one mechanism's credential).
    Delete {
        /// The user's name.
        name: String,
        /// Only this mechanism's credential.
        #[arg(long)]
        mechanism: Option<String>,
    },
}

fn mechanisms(name: Option<&str>) -> anyhow::Result<Vec<ScramMechanism>> {
    match name {
        None => Ok(ScramMechanism::ALL.to_vec()),
        Some(name) => Ok(vec![ScramMechanism::from_name(name).with_context(
            || format!("mechanism {name:?} is not SCRAM-SHA-256 or SCRAM-SHA-512"),
        )?]),
    }
}

/// Where the users are: a data directory, or a broker.
enum Users {
    Offline(CredentialStore),
    Online(Box<logd_client::Client>),
}

impl Users {
    fn upsert(
        &mut self,
        name: &str,
        m: ScramMechanism,
        password: &str,
        iterations: u32,
    ) -> anyhow::Result<()> {
        match self {
            Users::Offline(store) => store.upsert(
                name,
                m,
                ScramCredential::new(m, password.as_bytes(), iterations),
            )?,
            Users::Online(client) => {
                client.upsert_user(name, m, password.as_bytes(), iterations)?
            }
        }
        Ok(())
    }

    /// Deletes the credentials; false when there were none.
    fn delete(&mut self, name: &str, mechanisms: &[ScramMechanism]) -> anyhow::Result<bool> {
        match self {
            Users::Offline(store) if mechanisms.len() == ScramMechanism::ALL.len() => {
                Ok(store.delete(name, None)?)
            }
            Users::Offline(store) => Ok(store.delete(name, Some(mechanisms[0]))?),
            Users::Online(client) => {
                let existing = client
                    .describe_users()?
                    .into_iter()
                    .find(|(user, _)| user == name)
                    .map(|(_, held)| held)
                    .unwrap_or_default();
                let mut removed = false;
                for (m, _) in existing.iter().filter(|(m, _)| mechanisms.contains(m)) {
                    client.delete_user(name, *m)?;
                    removed = true;
                }
                Ok(removed)
            }
        }
    }

    fn list(&mut self) -> anyhow::Result<Vec<UserCredentials>> {
        Ok(match self {
            Users::Offline(store) => store
                .current()
                .list()
                .into_iter()
                .map(|(name, held)| {
                    let held = held
                        .into_iter()
                        .map(|(m, i)| (m, i32::try_from(i).unwrap_or(i32::MAX)))
                        .collect();
                    (name, held)
                })
                .collect(),
            Users::Online(client) => client.describe_users()?,
        })
    }
}

pub(crate) fn run(args: &UsersArgs) -> anyhow::Result<()> {
    let mut users = match &args.bootstrap {
        Some(bootstrap) => Users::Online(
            super::Bootstrap {
                bootstrap: bootstrap.clone(),
                command_config: args.command_config.clone(),
            }
            .connect()
            .map(Box::new)?,
        ),
        None => Users::Offline(open_store(args)?),
    };
    let place = match &args.bootstrap {
        Some(bootstrap) => format!("the broker at {bootstrap}"),
        None => args.data_dir.join(CREDENTIALS_FILE).display().to_string(),
    };
    match &args.command {
        UsersCommand::Create {
            name,
            mechanism,
            iterations,
            password_stdin,
        } => {
            if !password_stdin {
                bail!("give the password on stdin with --password-stdin (never as an argument)");
            }
            if !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(iterations) {
                bail!("--iterations must be {MIN_ITERATIONS} to {MAX_ITERATIONS}");
            }
            let mut password = String::new();
            std::io::stdin()
                .lock()
                .read_line(&mut password)
                .context("cannot read the password from stdin")?;
            let password = password.trim_end_matches(['\n', '\r']);
            if password.is_empty() {
                bail!("empty password on stdin");
            }
            for m in mechanisms(mechanism.as_deref())? {
                users.upsert(name, m, password, *iterations)?;
            }
            println!("user {name}: credentials stored in {place}");
        }
        UsersCommand::List => {
            for (name, mechanisms) in users.list()? {
                let mechanisms: Vec<String> = mechanisms
                    .iter()
                    .map(|(m, iterations)| format!("{}({iterations})", m.name()))
                    .collect();
                println!("{name}\t{}", mechanisms.join(","));
            }
        }
        UsersCommand::Delete { name, mechanism } => {
            if !users.delete(name, &mechanisms(mechanism.as_deref())?)? {
                bail!("no such user or credential: {name}");
            }
            println!("user {name}: deleted");
        }
    }
    Ok(())
}

fn open_store(args: &UsersArgs) -> anyhow::Result<CredentialStore> {
    std::fs::create_dir_all(&args.data_dir)
        .with_context(|| format!("cannot create {}", args.data_dir.display()))?;
    Ok(CredentialStore::open(&args.data_dir)?)
}
