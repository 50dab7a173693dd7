//! `logd groups copy-offsets GROUP --to TARGET`: a group's committed offsets carried to another
//! cluster (logd or Kafka) whose topics hold the same records at the same offsets (copied by
//! MirrorMaker 2 with `IdentityReplicationPolicy`, or by `logd replay --into` into empty
//! topics). MirrorMaker 2 translates a group's offsets only as precisely as the offset syncs it
//! kept, so a group that was behind resumes earlier than where it stopped (and one that
//! committed offset 0 gets no offset at all); this copy is exact, and checked: before
//! anything is committed, each partition's record just below the committed offset is read on
//! both clusters and must be the same (key, value, timestamp), and the group must have no
//! member on the target. Without `--execute` it prints the plan only.

use std::io::Write;

use anyhow::{Context, bail};
use logd_client::Client;
use logd_storage::batch::Record;

/// The record at `offset` of `topic`/`partition`, if the cluster holds it.
fn record_at(
    client: &mut Client,
    topic: &str,
    partition: i32,
    offset: i64,
) -> anyhow::Result<Option<Record>> {
    let (batches, _) = client
        .fetch(topic, partition, offset, 0)
        .with_context(|| format!("reading {topic}-{partition} at {offset}"))?;
    let records = Record::decode_all(&batches, 64 << 20)
        .with_context(|| format!("decoding {topic}-{partition} at {offset}"))?;
    Ok(records.into_iter().find(|r| r.offset == offset))
}

fn same(a: &Record, b: &Record) -> bool {
    (a.timestamp, &a.key, &a.value) == (b.timestamp, &b.key, &b.value)
}

fn text(bytes: Option<&[u8]>) -> String {
    bytes.map_or_else(
        || "null".into(),
        |b| String::from_utf8_lossy(b).into_owned(),
    )
}

/// Checks and (with `execute`) commits `group`'s offsets from `source` on `target`.
pub(crate) fn copy_offsets(
    source: &mut Client,
    target: &mut Client,
    group: &str,
    execute: bool,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let committed = source.committed_offsets(group)?;
    if committed.is_empty() {
        bail!("group {group} has no committed offset to copy");
    }
    let members = target.describe_group(group)?.members.len();
    if members > 0 {
        bail!("group {group} has {members} member(s) on the target: stop them first");
    }
    for (topic, partition, offset) in &committed {
        if *offset > 0 {
            let below = offset - 1;
            let theirs = record_at(source, topic, *partition, below)?;
            let ours = record_at(target, topic, *partition, below)?;
            match (theirs, ours) {
                (Some(theirs), Some(ours)) if same(&theirs, &ours) => {}
                (Some(theirs), Some(ours)) => bail!(
                    "{topic}-{partition} offset {below} differs: {}={} at {} on the source, \
                     {}={} at {} on the target (were the offsets kept by the copy?)",
                    text(theirs.key.as_deref()),
                    text(theirs.value.as_deref()),
                    theirs.timestamp,
                    text(ours.key.as_deref()),
                    text(ours.value.as_deref()),
                    ours.timestamp
                ),
                (Some(_), None) => bail!(
                    "{topic}-{partition}: the target does not hold offset {below} yet (is the \
                     copy still running?)"
                ),
                (None, _) => bail!(
                    "{topic}-{partition}: the source no longer holds offset {below} (deleted or \
                     compacted away), so the copy cannot be checked there"
                ),
            }
        }
        writeln!(out, "{topic}\t{partition}\t{offset}")?;
    }
    if execute {
        target.commit_offsets(group, &committed)?;
        writeln!(
            out,
            "committed {} offset(s) of group {group}",
            committed.len()
        )?;
    }
    Ok(())
}
