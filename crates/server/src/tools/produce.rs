//! `logd produce`: one record per stdin line, keyed by the part before a separator and
//! partitioned as Kafka's Java client would (murmur2), batched per partition, acks = all.

use std::io::{BufRead, Write};

use anyhow::bail;
use logd::{Clock, SystemClock};
use logd_client::TopicWriter;

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

pub(crate) fn run(args: &ProduceArgs) -> anyhow::Result<()> {
    let mut headers = Vec::new();
    for header in &args.headers {
        let Some((key, value)) = header.split_once('=') else {
            bail!("header {header:?} is not key=value");
        };
        headers.push((key.as_bytes().to_vec(), value.as_bytes().to_vec()));
    }
    let mut client = args.bootstrap.connect()?;
    let mut writer = TopicWriter::new(&mut client, &args.topic)?;
    let header_refs: Vec<(&[u8], Option<&[u8]>)> = headers
        .iter()
        .map(|(k, v)| (k.as_slice(), Some(v.as_slice())))
        .collect();
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        let (key, value) = match &args.key_separator {
            Some(sep) => match line.split_once(sep.as_str()) {
                Some((k, v)) => (Some(k.as_bytes()), v.as_bytes()),
                None => (None, line.as_bytes()),
            },
            None => (None, line.as_bytes()),
        };
        writer.write(
            args.partition,
            SystemClock.now_ms(),
            key,
            Some(value),
            &header_refs,
        )?;
    }
    let acknowledged = writer.finish()?;
    writeln!(
        std::io::stdout().lock(),
        "{acknowledged} records acknowledged"
    )?;
    Ok(())
}
