//! `logd transactions list|describe|abort`: transactions over the wire (ListTransactions,
//! DescribeTransactions, DescribeProducers with WriteTxnMarkers), against logd or a Kafka
//! cluster, as `kafka-transactions.sh` does them.

use clap::Subcommand;

use super::Bootstrap;

#[derive(Debug, clap::Args)]
pub(crate) struct TransactionsArgs {
    #[command(subcommand)]
    command: TransactionsCommand,
    #[command(flatten)]
    bootstrap: Bootstrap,
}

#[derive(Debug, Subcommand)]
enum TransactionsCommand {
    /// Every transactional id: id, producer id, state.
    List,
    /// One transactional id: its producer, epoch, state, timeout, how long its transaction has
    /// been open and the partitions in it.
    Describe {
        /// The transactional id.
        transactional_id: String,
    },
    /// Aborts a hanging transaction: the one open in a partition since an offset (its
    /// producer is gone; `describe-producers` in Kafka's tool, `logd topics describe` here,
    /// shows where it starts).
    Abort {
        /// The topic.
        #[arg(long)]
        topic: String,
        /// The partition.
        #[arg(long)]
        partition: i32,
        /// The offset its transaction starts at.
        #[arg(long)]
        start_offset: i64,
    },
}

pub(crate) fn run(args: &TransactionsArgs) -> anyhow::Result<()> {
    let mut client = args.bootstrap.connect()?;
    match &args.command {
        TransactionsCommand::List => {
            println!("TRANSACTIONAL-ID\tPRODUCER-ID\tSTATE");
            for t in client.list_transactions()? {
                println!("{}\t{}\t{}", t.transactional_id, t.producer_id, t.state);
            }
        }
        TransactionsCommand::Describe { transactional_id } => {
            let t = client.describe_transaction(transactional_id)?;
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64);
            let age = match t.start_ms {
                start if start >= 0 => format!("{} s", now.saturating_sub(start) / 1000),
                _ => "-".to_owned(),
            };
            let partitions: Vec<String> = t
                .partitions
                .iter()
                .map(|(topic, p)| format!("{topic}-{p}"))
                .collect();
            println!(
                "TRANSACTIONAL-ID\tPRODUCER-ID\tEPOCH\tSTATE\tTIMEOUT-MS\tOPEN-FOR\tPARTITIONS"
            );
            println!(
                "{}\t{}\t{}\t{}\t{}\t{}\t{}",
                t.transactional_id,
                t.producer_id,
                t.epoch,
                t.state,
                t.timeout_ms,
                age,
                partitions.join(",")
            );
        }
        TransactionsCommand::Abort {
            topic,
            partition,
            start_offset,
        } => {
            let producer = client.abort_transaction(topic, *partition, *start_offset)?;
            println!(
                "aborted producer {producer}'s transaction in {topic}-{partition} from offset {start_offset}"
            );
        }
    }
    Ok(())
}
