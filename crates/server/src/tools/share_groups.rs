//! `logd groups describe` of a share group (KIP-932), as Kafka's `kafka-share-groups
//! --describe` shows one: its state and epoch, per partition where it reads from (the
//! share-partition start offset), the log end and the lag, and its members with their
//! assignments. From logd (its own DescribeSharePartitions) each partition also shows its
//! records in flight (between the start and the end of what was acquired) by state, and the lag
//! as Kafka counts it (records not yet acknowledged or archived); from a Kafka broker the lag
//! is the log end minus the start.

use std::collections::BTreeMap;
use std::io::Write;

use logd_client::{Client, ShareGroupInfo};
use logd_protocol::share_partitions::SharePartitionCounts;

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
    // logd answers each partition's records in flight by state and Kafka's lag; from a Kafka
    // broker the lag is the log end minus the start.
    let states: BTreeMap<(String, i32), SharePartitionCounts> = client
        .share_partitions(group)?
        .unwrap_or_default()
        .into_iter()
        .map(|p| ((p.topic.clone(), p.partition), p))
        .collect();
    write!(
        out,
        "{:<24} {:>9} {:>14} {:>14} {:>10}",
        "TOPIC", "PARTITION", "START-OFFSET", "LOG-END-OFFSET", "LAG"
    )?;
    if !states.is_empty() {
        write!(
            out,
            " {:>9} {:>9} {:>9} {:>12} {:>9}",
            "IN-FLIGHT", "AVAILABLE", "ACQUIRED", "ACKNOWLEDGED", "ARCHIVED"
        )?;
    }
    writeln!(out)?;
    let show = |v: Option<i64>| v.map_or("-".to_owned(), |v| v.to_string());
    for (topic, partition, start) in &starts {
        let key = (topic.clone(), *partition);
        let end = ends.get(&key).copied();
        let state = states.get(&key);
        let lag = match state {
            Some(s) => (s.lag >= 0).then_some(s.lag),
            None => end.map(|e| (e - start).max(0)),
        };
        write!(
            out,
            "{topic:<24} {partition:>9} {start:>14} {:>14} {:>10}",
            show(end),
            show(lag),
        )?;
        if let Some(s) = state {
            write!(
                out,
                " {:>9} {:>9} {:>9} {:>12} {:>9}",
                s.end_offset - s.start_offset,
                s.available,
                s.acquired,
                s.acknowledged,
                s.archived
            )?;
        }
        writeln!(out)?;
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
