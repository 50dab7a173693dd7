//! What a topic's configs do to the batches it stores, as Kafka's `LogValidator` does:
//! `compression.type` recompresses a batch of another codec (records, producer fields and
//! duplicate detection unchanged), `message.timestamp.type=LogAppendTime` stamps the engine
//! clock's time, and a wrong max timestamp is set rather than refused.

use logd::{CompressionType, TimestampType, TopicConfig};
use logd_storage::Offset;
use logd_storage::batch::{BatchBuilder, BatchRef, Compression};

use super::open;

/// The codec, max timestamp and values of every stored batch of `topic`'s partition 0.
fn stored(log: &logd::Log, topic: &str) -> Vec<(Compression, i64, Vec<Vec<u8>>)> {
    let bytes = log
        .partition(topic, 0)
        .unwrap()
        .read(Offset(0), 1 << 20)
        .unwrap();
    let mut out = Vec::new();
    let mut rest = &bytes[..];
    while !rest.is_empty() {
        let (batch, after) = BatchRef::parse(rest, 0).unwrap();
        batch.verify_crc(0).unwrap();
        let values = batch
            .records(1 << 20)
            .unwrap()
            .iter()
            .map(|r| r.unwrap().value.unwrap().to_vec())
            .collect();
        out.push((
            batch.header.compression().unwrap(),
            batch.header.max_timestamp,
            values,
        ));
        rest = after;
    }
    out
}

#[test]
fn a_topic_with_a_codec_stores_every_batch_in_it_and_still_recognises_retries() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    let config = TopicConfig {
        compression: CompressionType::Zstd,
        ..TopicConfig::default()
    };
    log.create_topic("zipped", config).unwrap();
    let producer = log.init_producer_id().unwrap();
    let now = log.clock().now_ms();
    let batch = |codec| {
        let mut builder = BatchBuilder::new(codec).producer(producer, 0, 0);
        builder.push(now, Some(b"k"), Some(b"first"), &[]);
        builder.push(now, Some(b"k"), Some(b"second"), &[]);
        builder.build(0).unwrap()
    };
    let appended = log
        .append("zipped", 0, &mut batch(Compression::Gzip))
        .unwrap();
    assert!(!appended.duplicate);
    // The producer's retry, in yet another codec, is still the same batch.
    let retried = log
        .append("zipped", 0, &mut batch(Compression::None))
        .unwrap();
    assert!(retried.duplicate);
    assert_eq!(retried.base_offset, appended.base_offset);
    let batches = stored(&log, "zipped");
    assert_eq!(batches.len(), 1);
    assert_eq!(batches[0].0, Compression::Zstd);
    assert_eq!(batches[0].2, vec![b"first".to_vec(), b"second".to_vec()]);
}

#[test]
fn log_append_time_stamps_the_engine_clocks_time() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    let config = TopicConfig {
        timestamp_type: TimestampType::LogAppendTime,
        ..TopicConfig::default()
    };
    log.create_topic("stamped", config).unwrap();
    let mut builder = BatchBuilder::new(Compression::Lz4);
    builder.push(5, None, Some(b"old"), &[]);
    let appended = log
        .append("stamped", 0, &mut builder.build(0).unwrap())
        .unwrap();
    let now = log.clock().now_ms();
    let stamp = appended.log_append_time.expect("stamped");
    assert!((now - 60_000..=now).contains(&stamp), "{stamp} vs {now}");
    assert_eq!(stored(&log, "stamped")[0].1, stamp);
}
