//! logd's broker in the process of a test or benchmark, for clients in other processes.

use std::path::Path;

/// logd's broker over a fresh engine on a free port, on a runtime of its own; its address.
pub fn serve_logd(dir: &Path) -> Result<String, String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let log = logd::Log::open(dir, logd::Config::default()).map_err(|e| e.to_string())?;
    let broker = std::sync::Arc::new(logd_kafka::Broker::new(
        log,
        logd_kafka::BrokerConfig::default(),
    ));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let socket = {
        let _entered = runtime.enter();
        tokio::net::TcpListener::from_std(listener).map_err(|e| e.to_string())?
    };
    std::thread::spawn(move || {
        runtime.block_on(async {
            let listener = logd_kafka::Listener {
                socket,
                config: logd_kafka::ListenerConfig::plaintext("127.0.0.1", addr.port()),
            };
            let limits = logd_kafka::ConnectionLimits::default();
            let forever = std::future::pending::<()>();
            logd_kafka::serve(broker, vec![listener], limits, forever).await
        })
    });
    Ok(addr.to_string())
}
