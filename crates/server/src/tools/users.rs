//! `logd users`: SCRAM users in a data directory's credentials file, managed offline (before
//! the first start, or beside a running broker, which sees the change at the next login). The
//! password comes from one line of stdin, never from the command line, where any process
//! listing would show it.

use std::io::BufRead;
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Subcommand;
use logd_kafka::auth::credentials::CredentialStore;
use logd_kafka::auth::scram::{
    DEFAULT_ITERATIONS, MAX_ITERATIONS, MIN_ITERATIONS, ScramCredential, ScramMechanism,
};

#[derive(Debug, clap::Args)]
pub(crate) struct UsersArgs {
    #[command(subcommand)]
    command: UsersCommand,
    /// The broker's data directory.
    #[arg(
        long,
        global = true,
        env = "LOGD_DATA_DIR",
        default_value = "./logd-data"
    )]
    data_dir: PathBuf,
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

pub(crate) fn run(args: &UsersArgs) -> anyhow::Result<()> {
    std::fs::create_dir_all(&args.data_dir)
        .with_context(|| format!("cannot create {}", args.data_dir.display()))?;
    let store = CredentialStore::open(&args.data_dir)?;
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
                let credential = ScramCredential::new(m, password.as_bytes(), *iterations);
                store.upsert(name, m, credential)?;
            }
            println!(
                "user {name}: credentials stored in {}",
                store.path().display()
            );
        }
        UsersCommand::List => {
            for (name, mechanisms) in store.current().list() {
                let mechanisms: Vec<String> = mechanisms
                    .iter()
                    .map(|(m, iterations)| format!("{}({iterations})", m.name()))
                    .collect();
                println!("{name}\t{}", mechanisms.join(","));
            }
        }
        UsersCommand::Delete { name, mechanism } => {
            let removed = match mechanism {
                None => store.delete(name, None)?,
                Some(_) => {
                    let m = mechanisms(mechanism.as_deref())?[0];
                    store.delete(name, Some(m))?
                }
            };
            if !removed {
                bail!("no such user or credential: {name}");
            }
            println!("user {name}: deleted");
        }
    }
    Ok(())
}
