//! `logd groups list|describe|delete|reset-offsets|copy-offsets` (the last in `group_copy.rs`), as Kafka's `kafka-consumer-groups` does
//! them: describe shows state, members, assignments and per partition the committed offset,
//! log end and lag; reset-offsets plans (and with `--execute` commits) new positions, refused
//! while the group has members. A share group (KIP-932) is described by `share_groups.rs`, and
//! its reset moves where it reads from (AlterShareGroupOffsets) as `kafka-share-groups
//! --reset-offsets` does.

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::{Context, bail};
use clap::Subcommand;
use logd::ResetTarget;
use logd_client::{Client, GroupMember};
use logd_offsets::PartitionRange;

use super::Bootstrap;
use super::offset::parse_time;

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct GroupsArgs {
    #[command(subcommand)]
    command: GroupsCommand,
    #[command(flatten)]
    bootstrap: Bootstrap,
}

#[derive(Debug, Clone, Subcommand)]
enum GroupsCommand {
    /// List consumer groups.
    List,
    /// Show a group's state, members and per-partition committed offset, log end and lag.
    Describe {
        /// Group id.
        group: String,
    },
    /// Delete a group's committed offsets and state (refused while it has members).
    Delete {
        /// Group id.
        group: String,
    },
    /// Move a group's committed offsets; prints the plan, applies it with --execute.
    ResetOffsets(ResetArgs),
    /// Carry a group's committed offsets to another cluster whose topics hold the same records
    /// at the same offsets (after MirrorMaker 2 with IdentityReplicationPolicy), each checked
    /// on both sides; prints the plan, commits it with --execute.
    CopyOffsets {
        /// Group id.
        group: String,
        /// The other cluster's bootstrap address(es).
        #[arg(long, value_name = "BOOTSTRAP")]
        to: String,
        /// Commit the offsets (else only check and print them).
        #[arg(long)]
        execute: bool,
    },
}

#[derive(Debug, Clone, clap::Args)]
struct ResetArgs {
    /// Group id.
    group: String,
    /// Topic to reset (repeatable).
    #[arg(long = "topic", required_unless_present = "all_topics")]
    topics: Vec<String>,
    /// Every topic the group has committed offsets for.
    #[arg(long, conflicts_with = "topics")]
    all_topics: bool,
    #[command(flatten)]
    target: TargetArgs,
    /// Only print the plan (the default).
    #[arg(long, conflicts_with = "execute")]
    dry_run: bool,
    /// Commit the plan.
    #[arg(long)]
    execute: bool,
}

#[derive(Debug, Clone, clap::Args)]
#[group(required = true, multiple = false)]
struct TargetArgs {
    /// To the first offset still stored.
    #[arg(long)]
    to_earliest: bool,
    /// To the end: only new records will be read.
    #[arg(long)]
    to_latest: bool,
    /// To this offset (clamped to what the partition holds).
    #[arg(long, value_name = "OFFSET")]
    to_offset: Option<i64>,
    /// To the first record at or after this time (epoch ms or RFC 3339).
    #[arg(long, value_name = "TIME")]
    to_datetime: Option<String>,
    /// By this many records from the committed offset (negative goes back).
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    shift_by: Option<i64>,
}

impl TargetArgs {
    fn target(&self) -> anyhow::Result<ResetTarget> {
        Ok(if self.to_earliest {
            ResetTarget::Earliest
        } else if self.to_latest {
            ResetTarget::Latest
        } else if let Some(offset) = self.to_offset {
            ResetTarget::Offset(offset)
        } else if let Some(time) = &self.to_datetime {
            ResetTarget::Timestamp(parse_time(time).map_err(anyhow::Error::msg)?)
        } else if let Some(shift) = self.shift_by {
            ResetTarget::ShiftBy(shift)
        } else {
            bail!(
                "choose a target: --to-earliest, --to-latest, --to-offset, --to-datetime or --shift-by"
            )
        })
    }
}

pub(crate) fn run(args: &GroupsArgs) -> anyhow::Result<()> {
    let mut client = args.bootstrap.connect()?;
    let mut out = std::io::stdout().lock();
    match &args.command {
        GroupsCommand::List => {
            for group in client.list_groups()? {
                writeln!(out, "{group}")?;
            }
        }
        GroupsCommand::Describe { group } => describe(&mut client, group, &mut out)?,
        GroupsCommand::Delete { group } => {
            client.delete_group(group)?;
            writeln!(out, "deleted group {group}")?;
        }
        GroupsCommand::ResetOffsets(reset) => reset_offsets(&mut client, reset, &mut out)?,
        GroupsCommand::CopyOffsets { group, to, execute } => {
            let target = Bootstrap {
                bootstrap: to.clone(),
                command_config: args.bootstrap.command_config.clone(),
            };
            let mut target = target.connect()?;
            super::group_copy::copy_offsets(&mut client, &mut target, group, *execute, &mut out)?;
        }
    }
    Ok(())
}

fn describe(client: &mut Client, group: &str, out: &mut impl Write) -> anyhow::Result<()> {
    // A group of the consumer protocol (KIP-848) first, as Kafka's admin client asks: a
    // classic DescribeGroups does not see its members.
    if let Some(consumer) = client.describe_consumer_group(group)? {
        writeln!(
            out,
            "group {group}: state {}, protocol consumer (assignor {}), epoch {}, {} member(s)",
            consumer.state,
            consumer.assignor,
            consumer.epoch,
            consumer.members.len()
        )?;
        let committed = client.committed_offsets(group)?;
        return partitions(client, committed, &consumer.members, out);
    }
    let info = client.describe_group(group)?;
    let committed = client.committed_offsets(group)?;
    if info.state == "Dead" && committed.is_empty() {
        if let Some(share) = client.describe_share_group(group)? {
            return super::share_groups::describe(client, group, &share, out);
        }
        bail!("group {group} does not exist");
    }
    writeln!(
        out,
        "group {group}: state {}, protocol {}, {} member(s)",
        info.state,
        if info.protocol.is_empty() {
            "-"
        } else {
            &info.protocol
        },
        info.members.len()
    )?;
    partitions(client, committed, &info.members, out)
}

/// Every partition that is `committed` or assigned to one of `members`, with its owner and lag.
fn partitions(
    client: &mut Client,
    committed: Vec<(String, i32, i64)>,
    members: &[GroupMember],
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let mut rows: BTreeMap<(String, i32), (Option<i64>, Option<usize>)> = BTreeMap::new();
    for (topic, partition, offset) in committed {
        rows.entry((topic, partition)).or_default().0 = Some(offset);
    }
    for (i, member) in members.iter().enumerate() {
        for tp in &member.partitions {
            rows.entry((tp.0.clone(), tp.1 as i32)).or_default().1 = Some(i);
        }
    }
    writeln!(
        out,
        "{:<24} {:>9} {:>14} {:>14} {:>10}  {:<40} {:<16} CLIENT-ID",
        "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST"
    )?;
    // Each topic's log ends in one request; a topic that is gone shows "-".
    let mut wanted: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for (topic, partition) in rows.keys() {
        wanted.entry(topic).or_default().push(*partition);
    }
    let log_ends: BTreeMap<String, BTreeMap<i32, i64>> = wanted
        .into_iter()
        .map(|(topic, partitions)| {
            let ends = client.offsets_of(topic, &partitions).unwrap_or_default();
            let ends = ends.into_iter().map(|(p, o)| (p, o.latest)).collect();
            (topic.to_owned(), ends)
        })
        .collect();
    for ((topic, partition), (committed, owner)) in rows {
        let log_end = log_ends
            .get(&topic)
            .and_then(|ends| ends.get(&partition))
            .copied();
        let show = |v: Option<i64>| v.map_or("-".to_owned(), |v| v.to_string());
        let lag = match (committed, log_end) {
            (Some(c), Some(end)) => Some((end - c).max(0)),
            _ => None,
        };
        let member = owner.map(|i| &members[i]);
        writeln!(
            out,
            "{topic:<24} {partition:>9} {:>14} {:>14} {:>10}  {:<40} {:<16} {}",
            show(committed),
            show(log_end),
            show(lag),
            member.map_or("-", |m| m.member_id.as_str()),
            member.map_or("-", |m| m.host.as_str()),
            member.map_or("-", |m| m.client_id.as_str()),
        )?;
    }
    Ok(())
}

fn reset_offsets(
    client: &mut Client,
    args: &ResetArgs,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let group = &args.group;
    let target = args.target.target()?;
    let info = client.describe_group(group)?;
    let classic = client.committed_offsets(group)?;
    // A share group: where it reads from is what moves.
    let share = if info.state == "Dead" && classic.is_empty() {
        client.describe_share_group(group)?
    } else {
        None
    };
    let (members, state) = match &share {
        Some(share) => (share.members.len(), share.state.clone()),
        None => (info.members.len(), info.state.clone()),
    };
    if members > 0 {
        bail!(
            "group {group} has {members} active member(s) (state {state}): stop its consumers first"
        );
    }
    let current = match &share {
        Some(_) => client.share_group_offsets(group)?,
        None => classic,
    };
    let committed: BTreeMap<(String, i32), i64> =
        current.into_iter().map(|(t, p, o)| ((t, p), o)).collect();
    let topics: Vec<String> = if args.all_topics {
        let mut names: Vec<String> = committed.keys().map(|(t, _)| t.clone()).collect();
        names.dedup();
        names
    } else {
        args.topics.clone()
    };
    let mut plan = Vec::new();
    for topic in &topics {
        let partitions = client
            .partition_count(topic, false)
            .with_context(|| format!("topic {topic}"))?;
        let all: Vec<i32> = (0..partitions as i32).collect();
        for (partition, offsets) in client.offsets_of(topic, &all)? {
            let range = PartitionRange {
                log_start: offsets.earliest,
                log_end: offsets.latest,
            };
            let current = committed.get(&(topic.clone(), partition)).copied();
            let mut lookup_error = None;
            let planned = target.plan(topic, partition, current, range, |ts| {
                client
                    .list_offset(topic, partition, ts)
                    .map_err(|e| lookup_error = Some(e))
                    .ok()
                    .flatten()
            });
            if let Some(e) = lookup_error {
                return Err(e.into());
            }
            plan.push(planned);
        }
    }
    writeln!(
        out,
        "{:<24} {:>9} {:>14} {:>14}",
        "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET"
    )?;
    for p in &plan {
        let current = p.current.map_or("-".to_owned(), |c| c.to_string());
        let clamped = if p.clamped() {
            format!("  (asked {}, clamped to the partition)", p.requested)
        } else {
            String::new()
        };
        writeln!(
            out,
            "{:<24} {:>9} {current:>14} {:>14}{clamped}",
            p.topic, p.partition, p.target
        )?;
    }
    if args.execute {
        let commits: Vec<(String, i32, i64)> = plan
            .iter()
            .map(|p| (p.topic.clone(), p.partition, p.target))
            .collect();
        if share.is_some() {
            client.alter_share_group_offsets(group, &commits)?;
            writeln!(
                out,
                "set {} start offset(s) for share group {group}",
                commits.len()
            )?;
        } else {
            client.commit_offsets(group, &commits)?;
            writeln!(
                out,
                "committed {} offset(s) for group {group}",
                commits.len()
            )?;
        }
    } else {
        writeln!(out, "dry run: nothing changed (add --execute to apply)")?;
    }
    Ok(())
}
