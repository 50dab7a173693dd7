//! `logd groups describe` of a share group (KIP-932), as Kafka's `kafka-share-groups
//! --describe` shows one: its state and epoch, per partition where it reads from (the
//! share-partition start offset), the log end and the lag between them, and its members with
//! their assignments. Records in flight by state are in the console and `/metrics`, which
//! read the engine; no Kafka API carries them.

use std::collections::BTreeMap;
use std::io::Write;

use logd_client::{Client, ShareGroupInfo};

pub(crate) fn describe(
    client: &mut Client,
    group: &str,
    info: &ShareGroupInfo,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    writeln!(
        out,
        "share group {group}: state {}, epoch {}, {} member(s)",
        info.state,
        info.epoch,
        info.members.len()
    )?;
    let starts = client.share_group_offsets(group)?;
    let mut wanted: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for (topic, partition, _) in &starts {
        wanted.entry(topic).or_default().push(*partition);
    }
    let mut ends: BTreeMap<(String, i32), i64> = BTreeMap::new();
    for (topic, partitions) in wanted {
        for (partition, offsets) in client.offsets_of(topic, &partitions).unwrap_or_default() {
            ends.insert((topic.to_owned(), partition), offsets.latest);
        }
    }
    writeln!(
        out,
        "{:<24} {:>9} {:>14} {:>14} {:>10}",
        "TOPIC", "PARTITION", "START-OFFSET", "LOG-END-OFFSET", "LAG"
    )?;
    for (topic, partition, start) in &starts {
        let end = ends.get(&(topic.clone(), *partition)).copied();
        let show = |v: Option<i64>| v.map_or("-".to_owned(), |v| v.to_string());
        writeln!(
            out,
            "{topic:<24} {partition:>9} {start:>14} {:>14} {:>10}",
            show(end),
            show(end.map(|e| (e - start).max(0))),
        )?;
    }
    if !info.members.is_empty() {
        writeln!(
            out,
            "{:<40} {:<16} {:<16} ASSIGNMENT",
            "MEMBER-ID", "HOST", "CLIENT-ID"
        )?;
        for m in &info.members {
            let assigned: Vec<String> = m
                .partitions
                .iter()
                .map(|(t, p)| format!("{t}-{p}"))
                .collect();
            writeln!(
                out,
                "{:<40} {:<16} {:<16} {}",
                m.member_id,
                m.host,
                m.client_id,
                assigned.join(",")
            )?;
        }
    }
    Ok(())
}
