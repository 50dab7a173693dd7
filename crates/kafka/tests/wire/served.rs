//! A broker served over real connections in process, for the tests that need what only a
//! connection shows (each version's framing, a muted connection).

use std::net::TcpListener;
use std::sync::Arc;

use logd_kafka::{Broker, ConnectionLimits, Listener, ListenerConfig};

/// Serves `broker` on a loopback port on a thread of its own; its address.
pub fn serve(broker: Arc<Broker>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap().to_string();
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
