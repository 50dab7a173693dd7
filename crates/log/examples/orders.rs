//! The embedded engine end to end: produce keyed records, consume them in a group, crash
//! before committing (the records come back), resume, then replay from an offset.
//!
//! `cargo run --release -p logd --example orders [DIR]` (default: a temp dir)

use std::process::ExitCode;
use std::time::Duration;

use logd::{
    AutoOffsetReset, Config, Consumer, ConsumerConfig, Log, Producer, ProducerConfig,
    ProducerRecord, ResetTarget, TopicConfig,
};

fn billing(log: &Log) -> logd::Result<Consumer> {
    let mut consumer = Consumer::new(
        log,
        ConsumerConfig {
            group_id: Some("billing".into()),
            auto_offset_reset: AutoOffsetReset::Earliest,
            // Kafka's minimum: a crashed member holds the group's next rebalance this long.
            session_timeout: Duration::from_secs(6),
            ..ConsumerConfig::default()
        },
    );
    consumer.subscribe(vec!["orders".into()])?;
    Ok(consumer)
}

fn run(dir: &std::path::Path) -> logd::Result<()> {
    let log = Log::open(dir, Config::default())?;
    if !log.list_topics().contains(&"orders".to_owned()) {
        log.create_topic(
            "orders",
            TopicConfig {
                partitions: 3,
                ..TopicConfig::default()
            },
        )?;
    }

    let producer = Producer::new(&log, ProducerConfig::default());
    let mut deliveries = Vec::new();
    for i in 0..30 {
        let customer = format!("customer-{}", i % 5);
        deliveries.push(
            producer.send(ProducerRecord::new("orders", &format!("order {i}")).key(&customer))?,
        );
    }
    for delivery in deliveries {
        delivery.wait()?;
    }
    println!("produced 30 orders for 5 customers; each customer's orders share a partition");

    // A consumer processes a batch, then "crashes" before committing.
    let mut consumer = billing(&log)?;
    let first = consumer.poll(Duration::from_secs(5))?;
    println!(
        "billing got {} orders, crashed before committing",
        first.len()
    );
    // A crashed process never leaves its group; a dropped `Consumer` would (at once), so the
    // crash is simulated by forgetting it.
    std::mem::forget(consumer);

    // The group resumes from its last commit once the crashed member's session (6 s) has
    // expired: those orders come again (at-least-once).
    println!("restarting; the group waits for the crashed member's 6 s session to expire");
    let mut consumer = billing(&log)?;
    let mut total = 0;
    loop {
        let records = consumer.poll(Duration::from_millis(200))?;
        if records.is_empty() {
            break;
        }
        total += records.len();
        consumer.commit()?; // after the work is done
    }
    println!("after restart billing processed {total} orders and committed");
    consumer.close();
    for line in log.describe_group("billing")?.offsets {
        println!(
            "  {}-{}: committed {} of {} (lag {})",
            line.topic, line.partition, line.committed, line.log_end, line.lag
        );
    }

    // Replay partition 0 from offset 2: a reset (shown as a dry run first), then consume.
    let plan = log.reset_offsets(
        "billing",
        &["orders".to_owned()],
        ResetTarget::Offset(2),
        false,
    )?;
    println!(
        "dry run: {}",
        plan.iter()
            .map(|p| format!(
                "{}-{} {:?} -> {}",
                p.topic, p.partition, p.current, p.target
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    log.reset_offsets(
        "billing",
        &["orders".to_owned()],
        ResetTarget::Offset(2),
        true,
    )?;
    let mut replayer = billing(&log)?;
    let replayed = replayer.poll(Duration::from_secs(5))?;
    if let Some(first) = replayed.first() {
        println!(
            "replay starts at {}-{} offset {}",
            first.topic, first.partition, first.offset
        );
    }
    replayer.close();
    Ok(())
}

fn main() -> ExitCode {
    let temp;
    let dir = match std::env::args_os().nth(1) {
        Some(dir) => std::path::PathBuf::from(dir),
        None => {
            temp = tempfile::tempdir().expect("create a temp dir");
            temp.path().to_owned()
        }
    };
    match run(&dir) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("orders: {e}");
            ExitCode::FAILURE
        }
    }
}
