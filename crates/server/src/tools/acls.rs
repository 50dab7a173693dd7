//! `logd acls add|list|remove`: Kafka's ACLs over the wire (CreateAcls, DescribeAcls,
//! DeleteAcls), with `kafka-acls.sh`'s flags, against logd or a Kafka cluster. `--preset
//! retry-worker` grants in one command what a `logd-retry` worker needs.

use std::collections::BTreeMap;

use anyhow::{Context, bail};
use clap::{Subcommand, ValueEnum};
use logd_kafka::acl::{
    AclBinding, AclFilter, CLUSTER_NAME, Operation, PatternType, Permission, ResourceType,
};

use super::Bootstrap;

#[derive(Debug, clap::Args)]
pub(crate) struct AclsArgs {
    #[command(subcommand)]
    command: AclsCommand,
    #[command(flatten)]
    bootstrap: Bootstrap,
}

/// The resources a command is about, as `kafka-acls.sh` names them.
#[derive(Debug, Clone, clap::Args)]
struct Resources {
    /// A topic (repeatable); `*` means every topic.
    #[arg(long)]
    topic: Vec<String>,
    /// A consumer group (repeatable); `*` means every group.
    #[arg(long)]
    group: Vec<String>,
    /// The cluster (for CREATE, DESCRIBE, ALTER, IDEMPOTENT_WRITE, DESCRIBE_CONFIGS).
    #[arg(long)]
    cluster: bool,
    /// A transactional id (repeatable).
    #[arg(long)]
    transactional_id: Vec<String>,
    /// How the names match: `literal` or `prefixed` (add, and exactly that for list and
    /// remove), `any` (every pattern type, the exact name) or `match` (every ACL that applies
    /// to the name).
    #[arg(long, default_value = "literal")]
    resource_pattern_type: String,
}

/// Who, from where, doing what.
#[derive(Debug, Clone, clap::Args)]
struct Entries {
    /// A principal to allow (repeatable), `User:NAME` or `User:*`.
    #[arg(long)]
    allow_principal: Vec<String>,
    /// A principal to deny (repeatable); a DENY wins over every ALLOW.
    #[arg(long)]
    deny_principal: Vec<String>,
    /// The client address the entries apply to (repeatable; `*`, every address, when absent).
    #[arg(long, visible_aliases = ["allow-host", "deny-host"])]
    host: Vec<String>,
    /// An operation (repeatable): READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE,
    /// DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, ALL (add's default).
    #[arg(long)]
    operation: Vec<String>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Preset {
    /// What a `logd-retry` worker of `--group` over source `--topic` needs: READ on the
    /// source, READ, WRITE and CREATE on its retry tiers (`<topic>.retry.*`) and dead-letter
    /// topic (`<topic>.dlq`), READ on the group.
    RetryWorker,
}

#[derive(Debug, Subcommand)]
enum AclsCommand {
    /// Add ACLs: each principal, host and operation on each resource.
    Add {
        #[command(flatten)]
        resources: Resources,
        #[command(flatten)]
        entries: Entries,
        /// Grant a known set of ACLs to `--principal` instead.
        #[arg(long, value_enum)]
        preset: Option<Preset>,
        /// The principal a preset is for.
        #[arg(long, requires = "preset")]
        principal: Option<String>,
        /// Between the source and a tier's delay in retry topic names (the preset's;
        /// `RetryConfig::retry_infix`).
        #[arg(long, default_value = ".retry.", requires = "preset")]
        retry_infix: String,
        /// After the source in the dead-letter topic's name (the preset's;
        /// `RetryConfig::dlq_suffix`).
        #[arg(long, default_value = ".dlq", requires = "preset")]
        dlq_suffix: String,
    },
    /// List ACLs: all of them, or those of the resources and principal given.
    List {
        #[command(flatten)]
        resources: Resources,
        /// Only this principal's ACLs.
        #[arg(long)]
        principal: Option<String>,
    },
    /// Remove ACLs of the resources given: all of theirs, or only the principals, hosts and
    /// operations given.
    Remove {
        #[command(flatten)]
        resources: Resources,
        #[command(flatten)]
        entries: Entries,
    },
}

impl Resources {
    fn pattern_type(&self) -> anyhow::Result<PatternType> {
        PatternType::parse(&self.resource_pattern_type).with_context(|| {
            format!(
                "--resource-pattern-type {:?} is not literal, prefixed, any or match",
                self.resource_pattern_type
            )
        })
    }

    /// (type, name) of each resource named.
    fn list(&self) -> Vec<(ResourceType, String)> {
        let mut all = Vec::new();
        all.extend(self.topic.iter().map(|t| (ResourceType::Topic, t.clone())));
        all.extend(self.group.iter().map(|g| (ResourceType::Group, g.clone())));
        if self.cluster {
            all.push((ResourceType::Cluster, CLUSTER_NAME.to_owned()));
        }
        all.extend(
            self.transactional_id
                .iter()
                .map(|t| (ResourceType::TransactionalId, t.clone())),
        );
        all
    }
}

impl Entries {
    fn operations(&self, default: Operation) -> anyhow::Result<Vec<Operation>> {
        if self.operation.is_empty() {
            return Ok(vec![default]);
        }
        self.operation
            .iter()
            .map(|name| {
                Operation::parse(name)
                    .filter(|op| *op != Operation::Any)
                    .with_context(|| format!("--operation {name:?} is not a Kafka ACL operation"))
            })
            .collect()
    }

    fn principals(&self) -> Vec<(String, Permission)> {
        let allow = self
            .allow_principal
            .iter()
            .map(|p| (p.clone(), Permission::Allow));
        let deny = self
            .deny_principal
            .iter()
            .map(|p| (p.clone(), Permission::Deny));
        allow.chain(deny).collect()
    }
}

/// What the retry-worker preset grants `principal` for sources `topics` and groups `groups`.
fn retry_worker(
    principal: &str,
    topics: &[String],
    groups: &[String],
    retry_infix: &str,
    dlq_suffix: &str,
) -> Vec<AclBinding> {
    let allow = |resource_type, name: String, pattern_type, operation| AclBinding {
        resource_type,
        resource_name: name,
        pattern_type,
        principal: principal.to_owned(),
        host: "*".into(),
        operation,
        permission: Permission::Allow,
    };
    let mut acls = Vec::new();
    for topic in topics {
        acls.push(allow(
            ResourceType::Topic,
            topic.clone(),
            PatternType::Literal,
            Operation::Read,
        ));
        for operation in [Operation::Read, Operation::Write, Operation::Create] {
            acls.push(allow(
                ResourceType::Topic,
                format!("{topic}{retry_infix}"),
                PatternType::Prefixed,
                operation,
            ));
            acls.push(allow(
                ResourceType::Topic,
                format!("{topic}{dlq_suffix}"),
                PatternType::Literal,
                operation,
            ));
        }
    }
    for group in groups {
        acls.push(allow(
            ResourceType::Group,
            group.clone(),
            PatternType::Literal,
            Operation::Read,
        ));
    }
    acls
}

/// Prints bindings grouped by resource pattern, as `kafka-acls.sh` does.
fn print(heading: &str, bindings: &[AclBinding]) {
    let mut by_resource: BTreeMap<(ResourceType, &str, PatternType), Vec<&AclBinding>> =
        BTreeMap::new();
    for b in bindings {
        by_resource
            .entry((b.resource_type, &b.resource_name, b.pattern_type))
            .or_default()
            .push(b);
    }
    for ((resource_type, name, pattern_type), entries) in by_resource {
        println!(
            "{heading} `ResourcePattern(resourceType={resource_type}, name={name}, \
             patternType={pattern_type})`:"
        );
        for b in entries {
            println!(
                " \t(principal={}, host={}, operation={}, permissionType={})",
                b.principal, b.host, b.operation, b.permission
            );
        }
        println!();
    }
}

pub(crate) fn run(args: &AclsArgs) -> anyhow::Result<()> {
    // Every argument is checked before the broker is called.
    match &args.command {
        AclsCommand::Add {
            resources,
            entries,
            preset,
            principal,
            retry_infix,
            dlq_suffix,
        } => {
            let bindings = match preset {
                Some(Preset::RetryWorker) => {
                    let principal = principal
                        .as_deref()
                        .context("--preset retry-worker needs --principal")?;
                    if resources.topic.is_empty() || resources.group.is_empty() {
                        bail!("--preset retry-worker needs --topic (the source) and --group");
                    }
                    retry_worker(
                        principal,
                        &resources.topic,
                        &resources.group,
                        retry_infix,
                        dlq_suffix,
                    )
                }
                None => add_bindings(resources, entries)?,
            };
            for binding in &bindings {
                binding
                    .validate()
                    .with_context(|| format!("cannot add {binding}"))?;
            }
            let mut client = args.bootstrap.connect()?;
            print("Adding ACLs for resource", &bindings);
            client.create_acls(&bindings)?;
        }
        AclsCommand::List {
            resources,
            principal,
        } => {
            let named = resources.list();
            let mut filters = Vec::new();
            if named.is_empty() {
                filters.push(AclFilter {
                    principal: principal.clone(),
                    ..AclFilter::all()
                });
            }
            for (resource_type, name) in named {
                filters.push(AclFilter {
                    resource_type,
                    resource_name: Some(name),
                    pattern_type: resources.pattern_type()?,
                    principal: principal.clone(),
                    ..AclFilter::all()
                });
            }
            let mut client = args.bootstrap.connect()?;
            let mut listed = Vec::new();
            for filter in &filters {
                listed.extend(client.describe_acls(filter)?);
            }
            print("Current ACLs for resource", &listed);
        }
        AclsCommand::Remove { resources, entries } => {
            let filters = remove_filters(resources, entries)?;
            let removed = args.bootstrap.connect()?.delete_acls(&filters)?;
            if removed.is_empty() {
                println!("no ACL matched");
            }
            print("Removed ACLs for resource", &removed);
        }
    }
    Ok(())
}

/// Each allowed or denied principal, host and operation on each resource.
fn add_bindings(resources: &Resources, entries: &Entries) -> anyhow::Result<Vec<AclBinding>> {
    let pattern_type = resources.pattern_type()?;
    if !matches!(pattern_type, PatternType::Literal | PatternType::Prefixed) {
        bail!("add needs --resource-pattern-type literal or prefixed");
    }
    let named = resources.list();
    if named.is_empty() {
        bail!("name a resource: --topic, --group, --cluster or --transactional-id");
    }
    let principals = entries.principals();
    if principals.is_empty() {
        bail!("name a principal: --allow-principal or --deny-principal");
    }
    let hosts = match entries.host.is_empty() {
        true => vec!["*".to_owned()],
        false => entries.host.clone(),
    };
    let operations = entries.operations(Operation::All)?;
    let mut bindings = Vec::new();
    for (resource_type, name) in &named {
        for (principal, permission) in &principals {
            for host in &hosts {
                for operation in &operations {
                    bindings.push(AclBinding {
                        resource_type: *resource_type,
                        resource_name: name.clone(),
                        pattern_type,
                        principal: principal.clone(),
                        host: host.clone(),
                        operation: *operation,
                        permission: *permission,
                    });
                }
            }
        }
    }
    Ok(bindings)
}

/// The filters of a removal: per resource, all its ACLs or those of the entries given.
fn remove_filters(resources: &Resources, entries: &Entries) -> anyhow::Result<Vec<AclFilter>> {
    let named = resources.list();
    if named.is_empty() {
        bail!("name a resource: --topic, --group, --cluster or --transactional-id");
    }
    let pattern_type = resources.pattern_type()?;
    let principals: Vec<(Option<String>, Permission)> = match entries.principals() {
        p if p.is_empty() => vec![(None, Permission::Any)],
        p => p.into_iter().map(|(p, perm)| (Some(p), perm)).collect(),
    };
    let hosts: Vec<Option<String>> = match entries.host.is_empty() {
        true => vec![None],
        false => entries.host.iter().cloned().map(Some).collect(),
    };
    let operations = entries.operations(Operation::Any)?;
    let mut filters = Vec::new();
    for (resource_type, name) in &named {
        for (principal, permission) in &principals {
            for host in &hosts {
                for operation in &operations {
                    filters.push(AclFilter {
                        resource_type: *resource_type,
                        resource_name: Some(name.clone()),
                        pattern_type,
                        principal: principal.clone(),
                        host: host.clone(),
                        operation: *operation,
                        permission: *permission,
                    });
                }
            }
        }
    }
    Ok(filters)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_retry_worker_preset_covers_source_tiers_dlq_and_group() {
        let acls = retry_worker(
            "User:billing",
            &["orders".into()],
            &["billing".into()],
            ".retry.",
            ".dlq",
        );
        let names: Vec<String> = acls
            .iter()
            .map(|a| {
                format!(
                    "{} {} {} {}",
                    a.resource_type, a.resource_name, a.pattern_type, a.operation
                )
            })
            .collect();
        assert_eq!(
            names,
            [
                "TOPIC orders LITERAL READ",
                "TOPIC orders.retry. PREFIXED READ",
                "TOPIC orders.dlq LITERAL READ",
                "TOPIC orders.retry. PREFIXED WRITE",
                "TOPIC orders.dlq LITERAL WRITE",
                "TOPIC orders.retry. PREFIXED CREATE",
                "TOPIC orders.dlq LITERAL CREATE",
                "GROUP billing LITERAL READ",
            ]
        );
        assert!(
            acls.iter()
                .all(|a| a.principal == "User:billing" && a.validate().is_ok())
        );
    }
}
