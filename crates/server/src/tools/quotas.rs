//! `logd quotas list|set|remove`: Kafka's client quotas over the wire (DescribeClientQuotas,
//! AlterClientQuotas), against logd or a Kafka cluster, for a user, a client id, or a user's
//! client id, each one name or the default (as `kafka-configs --entity-type users|clients`).

use anyhow::{Context, bail};
use clap::Subcommand;
use logd_kafka::quota::{QuotaEntity, QuotaKey};

use super::Bootstrap;

#[derive(Debug, clap::Args)]
pub(crate) struct QuotasArgs {
    #[command(subcommand)]
    command: QuotasCommand,
    #[command(flatten)]
    bootstrap: Bootstrap,
}

/// Whom a quota applies to.
#[derive(Debug, Clone, clap::Args)]
struct Entity {
    /// A user (the principal's name without `User:`).
    #[arg(long, conflicts_with = "user_default")]
    user: Option<String>,
    /// The default for every user without a quota of its own.
    #[arg(long)]
    user_default: bool,
    /// A client id.
    #[arg(long, conflicts_with = "client_default")]
    client_id: Option<String>,
    /// The default for every client id without a quota of its own.
    #[arg(long)]
    client_default: bool,
}

impl Entity {
    fn entity(&self) -> anyhow::Result<QuotaEntity> {
        let part = |name: &Option<String>, default: bool| match (name, default) {
            (Some(name), _) => Some(Some(name.clone())),
            (None, true) => Some(None),
            (None, false) => None,
        };
        let entity = QuotaEntity {
            user: part(&self.user, self.user_default),
            client_id: part(&self.client_id, self.client_default),
        };
        if entity.user.is_none() && entity.client_id.is_none() {
            bail!("name the entity: --user, --user-default, --client-id or --client-default");
        }
        Ok(entity)
    }
}

#[derive(Debug, Subcommand)]
enum QuotasCommand {
    /// Every entity with a quota, one per line: the entity, then its quotas by name.
    List,
    /// Set quotas: `producer_byte_rate=BYTES`, `consumer_byte_rate=BYTES`,
    /// `request_percentage=PERCENT`.
    Set {
        #[command(flatten)]
        entity: Entity,
        /// KEY=VALUE (repeatable).
        #[arg(required = true)]
        quotas: Vec<String>,
    },
    /// Remove quotas by key.
    Remove {
        #[command(flatten)]
        entity: Entity,
        /// A key (repeatable).
        #[arg(required = true)]
        keys: Vec<String>,
    },
}

pub(crate) fn run(args: &QuotasArgs) -> anyhow::Result<()> {
    // Every argument is checked before the broker is called.
    let changes = match &args.command {
        QuotasCommand::List => None,
        QuotasCommand::Set { entity, quotas } => {
            let mut changes = Vec::new();
            for quota in quotas {
                let (key, value) = quota
                    .split_once('=')
                    .with_context(|| format!("{quota:?} is not KEY=VALUE"))?;
                let value: f64 = value
                    .parse()
                    .with_context(|| format!("{quota:?}: {value:?} is not a number"))?;
                QuotaKey::check(key, value).map_err(anyhow::Error::msg)?;
                changes.push((key.to_owned(), Some(value)));
            }
            Some((entity.entity()?, changes))
        }
        QuotasCommand::Remove { entity, keys } => {
            let changes = keys.iter().map(|k| (k.clone(), None)).collect();
            Some((entity.entity()?, changes))
        }
    };
    let mut client = args.bootstrap.connect()?;
    match changes {
        None => {
            for (entity, mut values) in client.describe_quotas()? {
                values.sort_by(|a, b| a.0.cmp(&b.0));
                let values: Vec<String> = values.iter().map(|(k, v)| format!("{k}={v}")).collect();
                println!("{entity}\t{}", values.join(","));
            }
        }
        Some((entity, changes)) => client.alter_quotas(&entity, &changes)?,
    }
    Ok(())
}
