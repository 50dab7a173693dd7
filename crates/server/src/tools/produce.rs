//! `logd produce`: one record per stdin line, keyed by the part before a separator and
//! partitioned as Kafka's Java client would (murmur2), batched per partition, acks = all.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};

use anyhow::bail;
use logd::{Clock, SystemClock};
use logd_partition::{KeyHash, Partitioner, Sticky};
use logd_storage::batch::{BatchBuilder, Compression};

use super::Bootstrap;

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ProduceArgs {
    /// Topic (created if the broker auto-creates topics).
    #[arg(short, long)]
    topic: String,
    /// Partition for every record, instead of partitioning by key.
    #[arg(short, long)]
    partition: Option<i32>,
    /// Split each line at the first occurrence of this separator into key and value.
    #[arg(short = 'k', long = "key-separator", value_name = "SEPARATOR")]
    key_separator: Option<String>,
    /// Header added to every record, `key=value`.
    #[arg(short = 'H', long = "header", value_name = "KEY=VALUE")]
    headers: Vec<String>,
    #[command(flatten)]
    bootstrap: Bootstrap,
}

/// Records sent per produce request and partition.
const BATCH_RECORDS: usize = 1000;

pub(crate) fn run(args: &ProduceArgs) -> anyhow::Result<()> {
    let mut headers = Vec::new();
    for header in &args.headers {
        let Some((key, value)) = header.split_once('=') else {
            bail!("header {header:?} is not key=value");
        };
        headers.push((key.as_bytes().to_vec(), value.as_bytes().to_vec()));
    }
    let mut client = args.bootstrap.connect()?;
    let partitions = client.partition_count(&args.topic, true)?;
    let partitioner = KeyHash::new(Sticky::default());
    let mut pending: BTreeMap<i32, BatchBuilder> = BTreeMap::new();
    let mut acknowledged = 0usize;
    let mut flush = |client: &mut logd_client::Client,
                     partition: i32,
                     batch: BatchBuilder|
     -> anyhow::Result<()> {
        let records = batch.len();
        client.produce(&args.topic, partition, batch.build(0)?)?;
        acknowledged += records;
        Ok(())
    };
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        let (key, value) = match &args.key_separator {
            Some(sep) => match line.split_once(sep.as_str()) {
                Some((k, v)) => (Some(k.as_bytes()), v.as_bytes()),
                None => (None, line.as_bytes()),
            },
            None => (None, line.as_bytes()),
        };
        let partition = match args.partition {
            Some(p) => p,
            None => partitioner.partition(key, partitions) as i32,
        };
        let header_refs: Vec<(&[u8], Option<&[u8]>)> = headers
            .iter()
            .map(|(k, v)| (k.as_slice(), Some(v.as_slice())))
            .collect();
        let batch = pending
            .entry(partition)
            .or_insert_with(|| BatchBuilder::new(Compression::None));
        batch.push(SystemClock.now_ms(), key, Some(value), &header_refs);
        if batch.len() >= BATCH_RECORDS {
            let full = pending.remove(&partition).expect("just filled");
            partitioner.batch_complete(partition as u32, partitions);
            flush(&mut client, partition, full)?;
        }
    }
    for (partition, batch) in std::mem::take(&mut pending) {
        flush(&mut client, partition, batch)?;
    }
    writeln!(
        std::io::stdout().lock(),
        "{acknowledged} records acknowledged"
    )?;
    Ok(())
}
