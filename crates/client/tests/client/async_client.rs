//! The async client on a tokio runtime against an in-process broker: a long-polling fetch on
//! one connection is woken by a produce on another, both driven by one thread; topics, offsets
//! and group commits work as through the blocking client.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

use logd::{Config, Log};
use logd_client::AsyncClient;
use logd_kafka::{Broker, BrokerConfig, ConnectionLimits, Listener, ListenerConfig};
use logd_storage::batch::{BatchBuilder, Compression, Record};

/// A broker over a fresh engine on a free port, served in process by `logd_kafka::serve` on a
/// runtime of its own; its address.
fn serve(dir: &std::path::Path) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let broker = Arc::new(Broker::new(
        Log::open(dir, Config::default()).unwrap(),
        BrokerConfig::default(),
    ));
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let port = listener.local_addr().unwrap().port();
            let listener = Listener {
                socket: tokio::net::TcpListener::from_std(listener).unwrap(),
                config: ListenerConfig::plaintext("127.0.0.1", port),
            };
            let forever = std::future::pending::<()>();
            logd_kafka::serve(broker, vec![listener], ConnectionLimits::default(), forever).await
        })
    });
    addr
}

fn batch(values: &[&str]) -> Vec<u8> {
    let mut builder = BatchBuilder::new(Compression::None);
    for v in values {
        builder.push(1_700_000_000_000, None, Some(v.as_bytes()), &[]);
    }
    builder.build(0).unwrap()
}

#[test]
fn a_long_poll_on_one_connection_is_woken_by_a_produce_on_another() {
    let dir = tempfile::tempdir().unwrap();
    let addr = serve(dir.path());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut admin = AsyncClient::connect(&addr).await.unwrap();
        admin.create_topic("events", 1, &[]).await.unwrap();
        assert_eq!(admin.partition_count("events", false).await.unwrap(), 1);

        let mut consumer = AsyncClient::connect(&addr).await.unwrap();
        let started = Instant::now();
        let waiting = tokio::spawn(async move {
            let fetched = consumer.fetch("events", 0, 0, 10_000).await.unwrap();
            (fetched, started.elapsed())
        });
        tokio::time::sleep(Duration::from_millis(200)).await;
        let mut producer = AsyncClient::connect(&addr).await.unwrap();
        let offset = producer
            .produce("events", 0, batch(&["a", "b"]))
            .await
            .unwrap();
        assert_eq!(offset, 0);
        let ((bytes, high_watermark), waited) = waiting.await.unwrap();
        assert_eq!(high_watermark, 2);
        let values: Vec<_> = Record::decode_all(&bytes, 1 << 20)
            .unwrap()
            .into_iter()
            .map(|r| r.value.unwrap())
            .collect();
        assert_eq!(values, ["a", "b"]);
        assert!(
            waited >= Duration::from_millis(200) && waited < Duration::from_secs(5),
            "parked until the produce, not the 10 s limit: {waited:?}"
        );

        let offsets = producer.offsets("events", 0).await.unwrap();
        assert_eq!((offsets.earliest, offsets.latest), (0, 2));
        // ListOffsets -3: the record with the largest timestamp.
        let mut stamped = BatchBuilder::new(Compression::None);
        // Near the broker's clock: Kafka 4 refuses records over an hour ahead of it.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        for ts in [now + 5, now + 9, now + 7] {
            stamped.push(ts, None, Some(b"t"), &[]);
        }
        producer
            .produce("events", 0, stamped.build(0).unwrap())
            .await
            .unwrap();
        assert_eq!(
            producer.list_offset("events", 0, -3).await.unwrap(),
            Some(3)
        );
        producer
            .commit_offsets("readers", &[("events".into(), 0, 2)])
            .await
            .unwrap();
        assert_eq!(
            producer.committed_offsets("readers").await.unwrap(),
            [("events".to_owned(), 0, 2)]
        );
        assert_eq!(producer.list_groups().await.unwrap(), ["readers"]);
        let missing = producer.partition_count("nope", false).await;
        assert!(missing.unwrap_err().to_string().contains("does not exist"));
    });
}

#[test]
fn a_bootstrap_list_is_tried_in_order_as_kafkas_bootstrap_servers() {
    let dir = tempfile::tempdir().unwrap();
    let addr = serve(dir.path());
    // A port nothing listens on: bound, then closed.
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let list = format!("{closed}, {addr}");
        let mut client = AsyncClient::connect(&list).await.unwrap();
        client.create_topic("listed", 2, &[]).await.unwrap();
        assert_eq!(client.partition_count("listed", false).await.unwrap(), 2);
        let none = AsyncClient::connect(&closed.to_string()).await.unwrap_err();
        assert!(none.to_string().contains("refused"), "{none}");
        assert!(AsyncClient::connect(" , ").await.is_err());
    });
}
